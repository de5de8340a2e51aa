//! Standalone test cluster:
//!   `tfjob-testcluster --kubeconfig PATH [--scenario FILE] [--port N]` serves until Ctrl-C;
//!   `tfjob-testcluster demo [--keep]` tells the article's story with the real `kubectl-tfjob`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use tfjob_testcluster::{Scenario, TestCluster, demo};

const USAGE: &str =
    "usage: tfjob-testcluster --kubeconfig PATH [--scenario FILE.yaml|json] [--port N]
       tfjob-testcluster demo [--keep]

demo: starts a simulated cluster on 127.0.0.1 and runs the real kubectl-tfjob through the
article's story, each command printed before its output; exits non-zero if a step does not
hold. --keep leaves the cluster running afterwards and prints the KUBECONFIG to use.
The plugin is $KUBECTL_TFJOB, else kubectl-tfjob next to this binary, else built with cargo.";

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("demo") {
        std::process::exit(run_demo(&args[1..]));
    }
    serve(args)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn serve(args: Vec<String>) {
    let mut args = args.into_iter();
    let (mut kubeconfig, mut scenario, mut port) = (None, None, 0u16);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--kubeconfig" => kubeconfig = args.next().map(PathBuf::from),
            "--scenario" => scenario = args.next(),
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            _ => usage(),
        }
    }
    let Some(kubeconfig) = kubeconfig else {
        usage()
    };
    let scenario = match scenario {
        Some(path) => {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                eprintln!("cannot read {path}: {e}");
                std::process::exit(2)
            });
            // Big generated scenarios (bench/run.sh: 150,000 pods) load much faster as JSON.
            let parsed = if path.ends_with(".json") {
                Scenario::from_json(&text)
            } else {
                Scenario::from_yaml(&text)
            };
            parsed.unwrap_or_else(|e| {
                eprintln!("invalid scenario {path}: {e}");
                std::process::exit(2)
            })
        }
        None => Scenario::default(),
    };
    runtime().block_on(async {
        let cluster = TestCluster::start_async_on(scenario, port, Some(kubeconfig.clone())).await;
        println!("{}", cluster.url());
        eprintln!(
            "tfjob-testcluster serving at {} (kubeconfig {}); Ctrl-C to stop",
            cluster.url(),
            kubeconfig.display()
        );
        Signals::new().stopped().await;
    })
}

/// SIGINT (Ctrl-C) and SIGTERM, listened to from creation on (within a runtime).
struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Returns on the first of the two.
    async fn stopped(&mut self) {
        async fn one(s: Option<&mut tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = one(self.int.as_mut()) => {}
            _ = one(self.term.as_mut()) => {}
        }
    }
}

fn run_demo(args: &[String]) -> i32 {
    let mut keep = false;
    for a in args {
        match a.as_str() {
            "--keep" => keep = true,
            _ => usage(),
        }
    }
    let plugin = match find_plugin() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("demo: {e}");
            return 1;
        }
    };
    let mut out = std::io::stdout();
    let cluster = match demo::run(&plugin, &mut out) {
        Ok(c) => c,
        Err(e) => {
            // Not eprintln!: a closed stderr (`… 2>&1 | head`) must not turn into a panic.
            let _ = writeln!(std::io::stderr(), "\ndemo FAILED: {e}");
            return 1;
        }
    };
    let dir = cluster
        .kubeconfig()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if keep {
        let rt = runtime();
        // Listening before the KUBECONFIG line is printed: a signal right after it is heard.
        let mut signals = rt.block_on(async { Signals::new() });
        println!(
            "\n# The cluster keeps running (Ctrl-C stops it). In another shell:\n\
             export KUBECONFIG={}\n\
             # then `kubectl tfjob …` with {} on your PATH as kubectl-tfjob, or plain kubectl \
             (kubectl get tfjobs,pods).",
            cluster.kubeconfig().display(),
            plugin.display()
        );
        // Ctrl-C, or the SIGTERM a supervisor (or `timeout`) sends: either way the cluster
        // stops and its temporary folder goes (issue 48 item 10: SIGTERM left it behind).
        rt.block_on(signals.stopped());
    }
    drop(cluster);
    // The kubeconfig lived in the cluster's temporary directory: nothing may be left behind.
    if dir.exists() {
        eprintln!("demo FAILED: {} was not removed", dir.display());
        return 1;
    }
    // Not println!: a reader gone by now (a closed pipe) must not turn into a panic.
    let _ = writeln!(
        std::io::stdout(),
        "\n# Cluster stopped; its temporary directory is gone. The story holds."
    );
    0
}

/// `$KUBECTL_TFJOB`, else `kubectl-tfjob` next to this executable (same cargo target dir and
/// profile), else built there with cargo.
fn find_plugin() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("KUBECTL_TFJOB") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("KUBECTL_TFJOB={} is not a file", p.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let dir = exe.parent().ok_or("this executable has no directory")?;
    let candidate = dir.join(format!("kubectl-tfjob{}", std::env::consts::EXE_SUFFIX));
    if candidate.is_file() {
        return Ok(candidate);
    }
    // target/<profile>/tfjob-testcluster: build the plugin into the same target dir and profile.
    let release = dir.file_name().is_some_and(|n| n == "release");
    let target_dir = dir
        .parent()
        .ok_or("this executable is not in a cargo target dir")?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.arg("build")
        .args(release.then_some("--release"))
        .args(["--bin", "kubectl-tfjob", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir);
    eprintln!(
        "demo: {} not found; building it: cargo build{} --bin kubectl-tfjob",
        candidate.display(),
        if release { " --release" } else { "" }
    );
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run cargo to build kubectl-tfjob: {e}"))?;
    if !status.success() || !candidate.is_file() {
        return Err(format!(
            "building kubectl-tfjob failed; build it (cargo build{} --bin kubectl-tfjob) or set KUBECTL_TFJOB",
            if release { " --release" } else { "" }
        ));
    }
    Ok(candidate)
}
