//! A real control plane for tests: etcd and kube-apiserver 1.36, found as controller-runtime's
//! envtest finds them (`KUBEBUILDER_ASSETS`, the folder `setup-envtest` prints), started once per
//! test process on free loopback ports, and killed with it (PR_SET_PDEATHSIG from a thread that
//! never ends, so no server outlives a crashed or interrupted run).
//!
//! The API server runs as a cluster does by default (RBAC, the default admission plugins, strict
//! field validation on by clients), with an audit log at Metadata level so that a test counts the
//! writes a command made, and two users: `admin` (system:masters) and `viewer` (no rights).

use std::io::BufRead;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The binaries a tier needs, from `KUBEBUILDER_ASSETS`.
pub struct Assets {
    pub dir: PathBuf,
}

impl Assets {
    /// The assets folder, or why the real tiers are skipped (one line).
    pub fn find(need: &[&str]) -> Result<Assets, String> {
        let Some(dir) = std::env::var_os("KUBEBUILDER_ASSETS").filter(|d| !d.is_empty()) else {
            return Err("KUBEBUILDER_ASSETS is not set (a folder with etcd, kube-apiserver and kubectl 1.36; .ci/run installs them from ../shared/cluster)".into());
        };
        let dir = PathBuf::from(dir);
        for b in need {
            if !dir.join(b).is_file() {
                return Err(format!("KUBEBUILDER_ASSETS={} has no {b}", dir.display()));
            }
        }
        Ok(Assets { dir })
    }

    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// The upstream reference files (the TFJob CRD), from `../shared/reference` beside the checkout
/// or `TFJOB_REFERENCE_DIR`.
pub fn reference(file: &str) -> Result<PathBuf, String> {
    let dir = std::env::var_os("TFJOB_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference"));
    let path = dir.join(file);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing (the upstream CRD; set TFJOB_REFERENCE_DIR)",
            path.display()
        ))
    }
}

pub const ADMIN_TOKEN: &str = "real-tier-admin-token";
pub const VIEWER_TOKEN: &str = "real-tier-viewer-token";

/// One running control plane (etcd + kube-apiserver) with the TFJob CRD installed.
pub struct ControlPlane {
    pub dir: PathBuf,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    audit: PathBuf,
}

static PLANE: OnceLock<Result<ControlPlane, String>> = OnceLock::new();

/// The process's control plane, started on first use; `Err` says in one line why there is none.
pub fn plane() -> Result<&'static ControlPlane, String> {
    PLANE
        .get_or_init(|| {
            let assets = Assets::find(&["etcd", "kube-apiserver", "kubectl"])?;
            let crd = reference("kubeflow.org_tfjobs.yaml")?;
            // With the binaries there, a control plane that does not start fails the tier:
            // only their absence is a skip.
            let plane = ControlPlane::start(assets).unwrap_or_else(|e| panic!("{e}"));
            plane.install_crd(&crd).unwrap_or_else(|e| panic!("{e}"));
            Ok(plane)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs `$body` with the control plane, or prints the one skip line and returns.
#[macro_export]
macro_rules! with_plane {
    ($p:ident => $body:block) => {
        match $crate::harness::plane() {
            Ok($p) => $body,
            Err(why) => {
                eprintln!("skipped (real API tier): {why}");
                return;
            }
        }
    };
}

/// Whether a child of this process has exited (reaped here; it was spawned by [`spawn_tied`]).
fn exited(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on our own child with WNOHANG only reads its state.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) == pid as libc::pid_t }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Spawns `cmd` from a thread that never ends, with SIGKILL as its parent-death signal: the
/// server dies with the test process however that ends.
fn spawn_tied(mut cmd: Command) -> std::io::Result<u32> {
    static KEEPER: OnceLock<
        std::sync::mpsc::Sender<(Command, std::sync::mpsc::Sender<std::io::Result<u32>>)>,
    > = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<(Command, std::sync::mpsc::Sender<_>)>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
                unsafe {
                    cmd.pre_exec(|| {
                        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
                let _ = reply.send(cmd.spawn().map(|c| {
                    let id = c.id();
                    std::mem::forget(c);
                    id
                }));
            }
            // The sender lives in a static: this loop never ends, and neither does the thread.
        });
        tx
    });
    let (tx, rx) = std::sync::mpsc::channel();
    cmd.stdin(Stdio::null());
    keeper.send((cmd, tx)).expect("keeper thread");
    rx.recv().expect("keeper reply")
}

impl ControlPlane {
    fn start(assets: Assets) -> Result<ControlPlane, String> {
        let dir = std::env::temp_dir().join(format!("kubectl-tfjob-real-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("certs")).map_err(|e| e.to_string())?;
        let key = dir.join("sa.key");
        let made = Command::new("openssl")
            .args([
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
            ])
            .arg(&key)
            .status();
        if !made.is_ok_and(|s| s.success()) {
            return Err("openssl is needed to make the service-account key".into());
        }
        std::fs::write(
            dir.join("tokens.csv"),
            format!("{ADMIN_TOKEN},admin,uid-admin,\"system:masters\"\n{VIEWER_TOKEN},viewer,uid-viewer\n"),
        )
        .map_err(|e| e.to_string())?;
        std::fs::write(
            dir.join("audit.yaml"),
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
        )
        .map_err(|e| e.to_string())?;
        let (etcd_port, peer_port, port) = (free_port(), free_port(), free_port());
        let log = |name: &str| {
            std::fs::File::create(dir.join(format!("{name}.log")))
                .map(Stdio::from)
                .map_err(|e| e.to_string())
        };
        let mut etcd = Command::new(assets.bin("etcd"));
        // The etcd kept in ../shared/cluster is a small build: only the basic flags.
        etcd.args(["--name", "real"])
            .arg("--data-dir")
            .arg(dir.join("etcd"))
            .arg(format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"))
            .arg(format!(
                "--advertise-client-urls=http://127.0.0.1:{etcd_port}"
            ))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
            .stdout(log("etcd")?)
            .stderr(log("etcd.err")?);
        let etcd = spawn_tied(etcd).map_err(|e| format!("cannot start etcd: {e}"))?;
        let mut api = Command::new(assets.bin("kube-apiserver"));
        api.arg(format!("--etcd-servers=http://127.0.0.1:{etcd_port}"))
            .args(["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1"])
            .arg(format!("--secure-port={port}"))
            .arg(format!("--cert-dir={}", dir.join("certs").display()))
            .arg("--service-account-issuer=https://kubernetes.default.svc.cluster.local")
            .arg(format!("--service-account-key-file={}", key.display()))
            .arg(format!(
                "--service-account-signing-key-file={}",
                key.display()
            ))
            .args([
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=RBAC",
            ])
            .args(["--allow-privileged=true", "--endpoint-reconciler-type=none"])
            .arg(format!(
                "--token-auth-file={}",
                dir.join("tokens.csv").display()
            ))
            .arg(format!(
                "--audit-policy-file={}",
                dir.join("audit.yaml").display()
            ))
            .arg(format!(
                "--audit-log-path={}",
                dir.join("audit.log").display()
            ))
            .args(["--audit-log-format=json", "--audit-log-mode=blocking"])
            .stdout(log("kube-apiserver")?)
            .stderr(log("kube-apiserver.err")?);
        let api = spawn_tied(api).map_err(|e| format!("cannot start kube-apiserver: {e}"))?;
        let plane = ControlPlane {
            kubeconfig: dir.join("admin.kubeconfig"),
            kubectl: assets.bin("kubectl"),
            audit: dir.join("audit.log"),
            dir,
        };
        plane.write_kubeconfig("admin", ADMIN_TOKEN, port)?;
        plane.write_kubeconfig("viewer", VIEWER_TOKEN, port)?;
        // Polled with a generous bound: a busy 2-core machine takes 5–15 s.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let ready = plane.kubectl(&["get", "--raw", "/readyz"]);
            if ready.code == 0 {
                return Ok(plane);
            }
            for (pid, name) in [(etcd, "etcd"), (api, "kube-apiserver")] {
                if exited(pid) {
                    let log = std::fs::read_to_string(plane.dir.join(format!("{name}.err.log")))
                        .unwrap_or_default();
                    let tail: Vec<&str> = log.lines().rev().take(5).collect();
                    return Err(format!("{name} exited: {}", tail.join(" | ")));
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "kube-apiserver not ready after 120 s: {} (logs in {})",
                    ready.stderr.trim(),
                    plane.dir.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// A cluster that is already up (the real node's, from `../shared/cluster/realnode/up.sh`):
    /// its admin kubeconfig, kubectl and audit log.
    pub fn existing(dir: &Path) -> ControlPlane {
        ControlPlane {
            kubeconfig: dir.join("kubeconfig"),
            kubectl: dir.join("bin/kubectl"),
            audit: dir.join("run/logs/audit.log"),
            dir: dir.to_path_buf(),
        }
    }

    fn write_kubeconfig(&self, user: &str, token: &str, port: u16) -> Result<(), String> {
        // insecure-skip-tls-verify: the server's certificate is the one it makes itself in
        // --cert-dir, which exists only once it has started.
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: https://127.0.0.1:{}\n    insecure-skip-tls-verify: true\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- name: real\n  context:\n    cluster: real\n    user: {user}\n    namespace: default\ncurrent-context: real\n",
            port
        );
        std::fs::write(self.dir.join(format!("{user}.kubeconfig")), text).map_err(|e| e.to_string())
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.kubeconfig.clone()
    }

    pub fn install_crd(&self, crd: &Path) -> Result<(), String> {
        let crd = crd.to_str().ok_or("CRD path is not UTF-8")?;
        let applied = self.kubectl(&["apply", "--server-side", "-f", crd]);
        if applied.code != 0 {
            return Err(format!("cannot install the TFJob CRD: {}", applied.stderr));
        }
        // `kubectl wait` fails at once while the CRD has no conditions yet: poll until the
        // resource is served.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let served = self.kubectl(&["get", "--raw", "/apis/kubeflow.org/v1/tfjobs"]);
            if served.code == 0 {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("TFJob CRD not served: {}", served.stderr));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }

    /// Runs the real kubectl 1.36 as admin.
    pub fn kubectl(&self, args: &[&str]) -> Out {
        self.kubectl_in(args, None)
    }

    pub fn kubectl_in(&self, args: &[&str], stdin: Option<&str>) -> Out {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(self.kubeconfig()).args(args);
        run(cmd, stdin)
    }

    /// A fresh namespace for one test (cluster-scoped objects are the test's to serialise).
    pub fn namespace(&self, name: &str) -> String {
        // The process id too: a long-lived cluster (the real node's) keeps earlier runs' names.
        let ns = format!(
            "{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let made = self.kubectl(&["create", "namespace", &ns]);
        assert_eq!(made.code, 0, "create namespace {ns}: {}", made.stderr);
        // The ServiceAccount controller does not run here: the default one is made by hand, as
        // pods (and their dry runs) need it.
        let sa = self.kubectl(&["-n", &ns, "create", "serviceaccount", "default"]);
        assert!(
            sa.code == 0 || sa.stderr.contains("already exists"),
            "{}",
            sa.stderr
        );
        ns
    }

    /// The writes (create/update/patch/delete, not dry runs) that `user_agent_prefix` made in
    /// `namespace`, from the audit log: `(verb, resource, name)`.
    pub fn writes(
        &self,
        user_agent_prefix: &str,
        namespace: &str,
    ) -> Vec<(String, String, String)> {
        self.audited(user_agent_prefix, namespace, false)
    }

    /// The dry-run writes `user_agent_prefix` sent in `namespace`: what reached admission
    /// without being stored.
    pub fn dry_runs(
        &self,
        user_agent_prefix: &str,
        namespace: &str,
    ) -> Vec<(String, String, String)> {
        self.audited(user_agent_prefix, namespace, true)
    }

    fn audited(
        &self,
        user_agent_prefix: &str,
        namespace: &str,
        dry_run: bool,
    ) -> Vec<(String, String, String)> {
        let Ok(file) = std::fs::File::open(&self.audit) else {
            return vec![];
        };
        std::io::BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
            .filter(|e| e["stage"] == "ResponseComplete")
            .filter(|e| {
                e["userAgent"]
                    .as_str()
                    .is_some_and(|u| u.starts_with(user_agent_prefix))
            })
            .filter(|e| e["objectRef"]["namespace"] == namespace)
            .filter(|e| {
                matches!(
                    e["verb"].as_str(),
                    Some("create" | "update" | "patch" | "delete" | "deletecollection")
                )
            })
            .filter(|e| {
                e["requestURI"]
                    .as_str()
                    .is_some_and(|u| u.contains("dryRun=All"))
                    == dry_run
            })
            .map(|e| {
                let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                (
                    s(&e["verb"]),
                    s(&e["objectRef"]["resource"]),
                    s(&e["objectRef"]["name"]),
                )
            })
            .collect()
    }
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One finished process.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

pub fn run(mut cmd: Command, stdin: Option<&str>) -> Out {
    use std::io::Write as _;
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    if let Some(input) = stdin {
        let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    }
    let out = child.wait_with_output().expect("wait");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The plugin binary against the real control plane, as admin.
pub fn tfjob(plane: &ControlPlane, args: &[&str]) -> Out {
    tfjob_as(&plane.kubeconfig(), args, None)
}

pub fn tfjob_as(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"));
    cmd.env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", std::env::temp_dir().join("kubectl-tfjob-real-home"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args);
    let out = run(cmd, stdin);
    assert!(
        !out.all().contains("panicked"),
        "the binary panicked:\n{}",
        out.all()
    );
    out
}
