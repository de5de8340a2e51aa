//! A generated hostile-input run against the offline commands (`validate`, `render`,
//! `templates`): a fixed seed, a few hundred cases, each run as the real binary.
//!
//! For every case: no abort or signal (a panic is exit 101, an abort 134, a stack overflow 139),
//! an exit code of 0 or 2 (bad input is never 1), and a peak RSS of the child at most 256 MB
//! (read from `wait4`'s rusage of that child alone). The wall limit per child is only a safety
//! net so a hang cannot stall CI; a case that hits it fails as a hang, whatever its exit code.
//!
//! Then a sample of what `validate` accepted is sent with `submit --dry-run=server` to the test
//! cluster, whose admission runs the CRD's structural schema and the operator's webhook: what
//! validate accepts, the cluster must accept.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::submit::SECRET;
use crate::{cluster, tfjob};

const SEED: u64 = 0x7f4a_7c15_9e37_79b9;
pub const MAX_RSS_KB: i64 = 256 * 1024;
/// Safety net only (see the module doc).
const WALL_LIMIT: Duration = Duration::from_secs(120);

/// xorshift64*: a fixed, dependency-free sequence so a failing case is reproducible by index.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T: ?Sized>(&mut self, items: &'a [&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}

const BASE: &str = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: hostile
  labels:
    team: a
  annotations:
    note: x
spec:
  runPolicy:
    backoffLimit: 3
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.13.0
            command: [python, train.py]
            resources:
              limits:
                cpu: \"1\"
                memory: 1Gi
";

/// Scalars that YAML 1.1, JSON, Kubernetes quantities or names treat oddly.
const SCALARS: &[&str] = &[
    "1e3",
    "1E3",
    "0x1F",
    "0o17",
    "010",
    "0b101",
    ".inf",
    "-.inf",
    ".nan",
    "~",
    "null",
    "yes",
    "No",
    "on",
    "{a: b}",
    "[1, 2]",
    "[]",
    "{}",
    "\"\\0\"",
    "\"\\x1b[31m\"",
    "!!binary aGk=",
    "!!str 5",
    "!!int x",
    "!custom x",
    "!!python/object:os.system x",
    "&a x",
    "*undefined",
    "-1",
    "-0",
    "99999999999999999999",
    "1_000",
    "2.0",
    "2.5",
    "\"🦀\"",
    "'a\tb'",
    "'\u{202e}x'",
    "=",
    "<<",
    "? x",
    "@x",
    "`x`",
    "%x",
    "\"unterminated",
    "'",
    "\"a\\u0000b\"",
    "1Gi1",
    "1e400",
    "0.0000001",
    "1Ei",
    "9Ei",
    "+1",
    "- x",
    "|\n  block",
    ">-\n  folded",
    "'UPPER'",
    "a b",
    "tensorflow/tensorflow:",
    "UPPER/img:1",
    "img@sha256:abc",
    "img:tag;rm",
    "\"img\\nx\"",
    "2001-12-14",
    "12:30:00",
    "0:0:1",
    "\"\\uD800\"",
];

/// One run of the binary: what it was given and what came back.
struct Case {
    label: String,
    args: Vec<String>,
    /// Written to a file whose path replaces `{FILE}` in `args`.
    file: Option<Vec<u8>>,
    /// True when the input is certainly invalid (exit 2 is the only right answer).
    must_reject: bool,
}

impl Case {
    fn validate(label: impl Into<String>, body: Vec<u8>, must_reject: bool) -> Case {
        Case {
            label: label.into(),
            args: vec!["validate".into(), "-f".into(), "{FILE}".into()],
            file: Some(body),
            must_reject,
        }
    }
    fn render(label: impl Into<String>, args: &[String], must_reject: bool) -> Case {
        let mut a = vec!["render".to_string()];
        a.extend_from_slice(args);
        Case {
            label: label.into(),
            args: a,
            file: None,
            must_reject,
        }
    }
}

pub struct Outcome {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub max_rss_kb: i64,
    pub hung: bool,
    pub stderr: String,
}

fn run(case: &Case, dir: &Path, index: usize) -> Outcome {
    let path: PathBuf = dir.join(format!("case-{index}.yaml"));
    if let Some(body) = &case.file {
        std::fs::write(&path, body).unwrap();
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"));
    cmd.env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", dir)
        .args(
            case.args
                .iter()
                .map(|a| a.replace("{FILE}", path.to_str().unwrap())),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    measured(cmd, &dir.join(format!("case-{index}.err")), |_| {})
}

/// Runs `cmd` (stderr to `stderr_path`) and reports how it ended and its peak RSS.
/// `with_child` gets the running child first (to read its stdout, say); the wall limit is only
/// a safety net against a hang.
///
/// The peak: `wait4`'s `ru_maxrss` is the child's own only when it exceeds this test process's
/// peak, because exec records the high-water mark of the (v)forked parent's memory in the child
/// (fs/exec.c `exec_mmap` → `setmax_mm_hiwater_rss`); below that it is the high-water mark the
/// child's `/proc/PID/status` (VmHWM) showed while it ran, a lower bound read every 5 ms.
pub fn measured(
    mut cmd: Command,
    stderr_path: &Path,
    with_child: impl FnOnce(&mut std::process::Child),
) -> Outcome {
    cmd.stderr(File::create(stderr_path).unwrap());
    let mut child = cmd.spawn().expect("the binary starts");
    let pid = child.id() as libc::pid_t;
    let (done, wait_done) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let mut hwm = 0;
        loop {
            // The PID cannot be reused before the main thread reaps it.
            if let Some(kb) = vm_hwm_kb(&format!("/proc/{pid}/status")) {
                hwm = hwm.max(kb);
            }
            match wait_done.recv_timeout(Duration::from_millis(5)) {
                Ok(()) => return (false, hwm),
                Err(_) if started.elapsed() > WALL_LIMIT => {
                    // SAFETY: `pid` is our unreaped child (the main thread is in wait4 on it).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    let _ = wait_done.recv();
                    return (true, hwm);
                }
                Err(_) => {}
            }
        }
    });
    with_child(&mut child);
    let mut status = 0;
    // SAFETY: plain syscall on our own child; `rusage` is plain data.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4 on {stderr_path:?}");
    let _ = done.send(());
    let (hung, polled) = watchdog.join().unwrap();
    // The child is reaped: dropping the handle must not wait again (std's Drop does not).
    drop(child);
    let ours = vm_hwm_kb("/proc/self/status").unwrap_or(i64::MAX);
    let max_rss_kb = if usage.ru_maxrss > ours {
        usage.ru_maxrss
    } else {
        polled
    };
    let mut stderr = String::new();
    File::open(stderr_path)
        .unwrap()
        .take(4096)
        .read_to_string(&mut stderr)
        .ok();
    Outcome {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        max_rss_kb,
        hung,
        stderr,
    }
}

/// `VmHWM` (peak resident set, kB) from a `/proc/PID/status`; None once the process is gone.
fn vm_hwm_kb(path: &str) -> Option<i64> {
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn mutate_scalar(rng: &mut Rng) -> (String, String) {
    let lines: Vec<&str> = BASE.lines().collect();
    let candidates: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let l = lines[i];
            l.contains(": ") && !l.trim_end().ends_with(':')
        })
        .collect();
    let i = candidates[rng.below(candidates.len())];
    let scalar = rng.pick(SCALARS);
    let (key, _) = lines[i].split_once(": ").unwrap();
    let mut out: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    // Multi-line scalars are indented under their key.
    let indent = " ".repeat(key.len() - key.trim_start().len() + 2);
    out[i] = format!("{key}: {}", scalar.replace('\n', &format!("\n{indent}")));
    (format!("{}={scalar:?}", key.trim()), out.join("\n") + "\n")
}

fn billion_laughs(levels: usize, width: usize) -> String {
    let mut s = String::from("a0: &a0 [\"lol\"]\n");
    for l in 1..levels {
        let refs = vec![format!("*a{}", l - 1); width].join(", ");
        s.push_str(&format!("a{l}: &a{l} [{refs}]\n"));
    }
    s
}

fn cases() -> Vec<Case> {
    let mut rng = Rng(SEED);
    let mut cases = Vec::new();

    // Odd scalars in every field of a valid manifest.
    for _ in 0..120 {
        let (what, body) = mutate_scalar(&mut rng);
        cases.push(Case::validate(
            format!("scalar {what}"),
            body.into_bytes(),
            false,
        ));
    }
    // Whole-file transformations of the valid manifest.
    type Transform = fn(&str) -> Vec<u8>;
    let transforms: &[(&str, Transform, bool)] = &[
        (
            "utf-8 BOM",
            |b| [b"\xef\xbb\xbf".as_slice(), b.as_bytes()].concat(),
            false,
        ),
        ("CRLF", |b| b.replace('\n', "\r\n").into_bytes(), false),
        ("CR only", |b| b.replace('\n', "\r").into_bytes(), false),
        (
            "tab indentation",
            |b| b.replace("  ", "\t").into_bytes(),
            true,
        ),
        (
            "NUL inside",
            |b| b.replacen("hostile", "host\0ile", 1).into_bytes(),
            true,
        ),
        (
            "UTF-16 LE BOM",
            |b| {
                let mut v = vec![0xff, 0xfe];
                v.extend(b.encode_utf16().flat_map(|u| u.to_le_bytes()));
                v
            },
            false,
        ),
        (
            "latin-1 byte",
            |b| {
                b.replacen("note: x", "note: \u{e9}", 1)
                    .replace('\u{e9}', "\u{fffd}")
                    .into_bytes()
            },
            false,
        ),
        (
            "invalid UTF-8",
            |b| [b.as_bytes(), b"\xff\xfe\xc3\x28"].concat(),
            true,
        ),
        (
            "junk second document",
            |b| format!("{b}---\n}}{{ junk: [\n").into_bytes(),
            true,
        ),
        (
            "empty documents around",
            |b| format!("---\n---\n{b}---\n...\n---\n").into_bytes(),
            false,
        ),
        (
            "document end marker then text",
            |b| format!("{b}...\nnot yaml: [\n").into_bytes(),
            true,
        ),
        (
            "directive",
            |b| format!("%YAML 1.2\n%TAG ! tag:x,2000:\n---\n{b}").into_bytes(),
            false,
        ),
        (
            "bad directive",
            |b| format!("%YAML 9.9\n---\n{b}").into_bytes(),
            true,
        ),
        (
            "duplicate document",
            |b| format!("{b}---\n{b}").into_bytes(),
            false,
        ),
        ("truncated", |b| b.as_bytes()[..b.len() / 2].to_vec(), true),
        (
            "flow style",
            |_| {
                b"{apiVersion: kubeflow.org/v1, kind: TFJob, metadata: {name: f}, spec: {tfReplicaSpecs: {Worker: {replicas: 1, template: {spec: {containers: [{name: tensorflow, image: \"busybox:1\"}]}}}}}}".to_vec()
            },
            false,
        ),
        (
            "merge key",
            |b| {
                b.replace(
                    "  labels:\n    team: a",
                    "  labels: &l\n    team: a\n  annotations2: {<<: *l}",
                )
                .into_bytes()
            },
            false,
        ),
        (
            "anchor on root, alias in spec",
            |b| {
                b.replace("    note: x", "    note: &n x\n    other: *n")
                    .into_bytes()
            },
            false,
        ),
        (
            "JSON",
            |_| {
                br#"{"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"j"},"spec":{"tfReplicaSpecs":{"Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"tensorflow","image":"busybox:1"}]}}}}}}"#.to_vec()
            },
            false,
        ),
        (
            "JSON with trailing comma",
            |_| br#"{"apiVersion":"kubeflow.org/v1","kind":"TFJob",}"#.to_vec(),
            true,
        ),
        (
            "List wrapper",
            |b| {
                format!(
                    "apiVersion: v1\nkind: List\nitems:\n- {}",
                    b.replace('\n', "\n  ")
                )
                .into_bytes()
            },
            false,
        ),
        ("empty file", |_| Vec::new(), true),
        ("only comments", |_| b"# nothing\n# here\n".to_vec(), true),
        ("a bare scalar", |_| b"hello\n".to_vec(), true),
        ("a sequence at the top", |_| b"- a\n- b\n".to_vec(), true),
    ];
    for (name, f, reject) in transforms {
        cases.push(Case::validate(*name, f(BASE), *reject));
    }
    // Alias expansion ("billion laughs") at several shapes, all far past any real manifest.
    for (levels, width) in [(9, 10), (12, 8), (30, 2), (6, 64), (20, 4)] {
        cases.push(Case::validate(
            format!("billion laughs {levels}x{width}"),
            billion_laughs(levels, width).into_bytes(),
            true,
        ));
    }
    // A key that is an alias of a huge mapping, and an anchor used as a key many times.
    cases.push(Case::validate(
        "alias keys",
        format!("{}z: {{*a8: 1, *a7: 2}}\n", billion_laughs(9, 10)).into_bytes(),
        true,
    ));
    // One 1 MiB string aliased 2,000 times: few nodes, ~2 GB expanded (issue 47 item 4).
    cases.push(Case::validate(
        "one long string aliased 2,000 times",
        format!(
            "a: &s {}\nb: [{}]\n",
            "x".repeat(1024 * 1024),
            "*s, ".repeat(2_000)
        )
        .into_bytes(),
        true,
    ));
    // Deep nesting, flow and block, just under and far past the depth limit.
    for depth in [60, 65, 1_000, 100_000] {
        cases.push(Case::validate(
            format!("flow sequence depth {depth}"),
            format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth)).into_bytes(),
            true,
        ));
        cases.push(Case::validate(
            format!("flow mapping depth {depth}"),
            format!("{}x{}\n", "{a: ".repeat(depth), "}".repeat(depth)).into_bytes(),
            true,
        ));
        let mut block = String::new();
        for d in 0..depth.min(3_000) {
            block.push_str(&" ".repeat(d));
            block.push_str("a:\n");
        }
        cases.push(Case::validate(
            format!("block mapping depth {}", depth.min(3_000)),
            block.into_bytes(),
            true,
        ));
    }
    // Huge scalars and many small things, just under and over the 3 MiB manifest limit.
    let mib = 1024 * 1024;
    for (label, size) in [("2.9 MiB", 29 * mib / 10), ("3 MiB + 1", 3 * mib + 1)] {
        let long = "a".repeat(size - BASE.len());
        cases.push(Case::validate(
            format!("annotation of {label}"),
            BASE.replace("note: x", &format!("note: {long}"))
                .into_bytes(),
            true,
        ));
    }
    cases.push(Case::validate(
        "2 MiB key",
        format!("{}: 1\n", "k".repeat(2 * mib)).into_bytes(),
        true,
    ));
    cases.push(Case::validate(
        "10,000 empty documents",
        "---\n".repeat(10_000).into_bytes(),
        true,
    ));
    cases.push(Case::validate(
        "300 jobs",
        (0..300)
            .map(|i| BASE.replace("name: hostile", &format!("name: h{i}")))
            .collect::<Vec<_>>()
            .join("---\n")
            .into_bytes(),
        false,
    ));
    cases.push(Case::validate(
        "30,000 unknown top-level keys",
        format!(
            "{}{}",
            BASE,
            (0..30_000)
                .map(|i| format!("l{i}: v\n"))
                .collect::<String>()
        )
        .into_bytes(),
        true,
    ));
    // Random bytes and random printable soup.
    for n in 0..40 {
        let len = 1 + rng.below(4096);
        let body: Vec<u8> = if n % 2 == 0 {
            (0..len).map(|_| rng.next() as u8).collect()
        } else {
            let alphabet = b"ab:-[]{}&*!|>'\"#%@` \n\t?,.01";
            (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect()
        };
        cases.push(Case::validate(format!("random bytes #{n}"), body, false));
    }

    // render: odd --set forms.
    let sets: &[&str] = &[
        "a[99999999]=1",
        "worker.replicas[2147483648]=1",
        "a[-1]=1",
        "a.b.c\\.d=1",
        "a={1,2,3}",
        "=x",
        "a",
        "a=",
        "a..b=1",
        ".a=1",
        "a.=1",
        "a[0]b=1",
        "a[x]=1",
        "a[]=1",
        "a]=1",
        "worker.replicas=1e3",
        "worker.replicas=0x10",
        "worker.replicas=-1",
        "worker.replicas=99999999999999999999",
        "worker.replicas=null",
        "image=\u{1b}[31m",
        "name=UPPER",
        "name=a_b",
        "name=",
        "a=b,c=d,e",
        "a=\\,",
        "labels.x=y\nz",
        "worker.replicas=1,worker.replicas=2",
    ];
    // (argv cannot carry NUL: no shell can pass one, so those forms are not cases.)
    for s in sets {
        cases.push(Case::render(
            format!("--set {s:?}"),
            &["--set".into(), s.to_string()],
            false,
        ));
        cases.push(Case::render(
            format!("--set-string {s:?}"),
            &["--set-string".into(), s.to_string()],
            false,
        ));
    }
    cases.push(Case::render(
        "--set 10,000 dotted segments",
        &["--set".into(), format!("{}=1", vec!["a"; 10_000].join("."))],
        true,
    ));
    cases.push(Case::render(
        "--set 10,000 nested indexes",
        &["--set".into(), format!("a{}=1", "[0]".repeat(10_000))],
        true,
    ));
    // render: odd flag values.
    let flags: &[(&str, &[&str])] = &[
        (
            "--name",
            &[
                "",
                "UPPER",
                "a_b",
                "-a",
                "a.b",
                "a\nb",
                "a-name-that-is-exactly-sixty-four-characters-long-which-is-too-lon",
            ],
        ),
        (
            "--image",
            &[
                "",
                " ",
                "a b",
                "a\nb",
                "UPPER/x:1",
                "x:",
                "x@sha256:1",
                "x;rm -rf",
                "\u{1b}[2J",
                "x:tag:tag",
                "localhost:5000/a:1",
                "a//b",
                "a/b/",
                "_a",
            ],
        ),
        (
            "--cpu",
            &[
                "0",
                "-1",
                "1e308",
                "1e-400",
                "NaN",
                "1.5.5",
                "1Ei",
                "9Ei",
                "0.0000001",
                "1m",
                "1u",
                "abc",
                "",
                "1 ",
                "+1",
                "1e3",
                "0x10",
                "1k",
            ],
        ),
        (
            "--memory",
            &[
                "0", "-1Gi", "1Gii", "1e19", "1Ei", "8Ei", "1.5Gi", "1gi", "Gi", "",
            ],
        ),
        (
            "--gpus",
            &["-1", "0", "99999999999", "1.5", "x", "2147483648"],
        ),
        ("--workers", &["-1", "0", "2147483647", "x", "1e3"]),
        ("--chief", &["2", "-1", "1"]),
        (
            "--env",
            &[
                "A=B=C",
                "=x",
                "A",
                "1A=x",
                "A B=x",
                "A=\u{1b}",
                "TAOTOKEN_API_KEY=sk-x",
            ],
        ),
        (
            "--label",
            &[
                "a=b",
                "a",
                "=b",
                "a=b c",
                "UPPER/x=y",
                "a/b/c=d",
                "a=-b",
                "k=v",
            ],
        ),
        ("--annotation", &["a=b", "a", "=b", "kubernetes.io/x=y"]),
        (
            "--toleration",
            &[
                "k=v:Explode",
                "k:NoSchedule",
                ":NoSchedule",
                "k=v",
                "k=v:",
                "=v:NoSchedule",
            ],
        ),
        (
            "--pvc",
            &["c:/p", "c", ":/p", "c:rel", "C:/p", "c:/p:rw", "c:/p:ro:x"],
        ),
        ("--empty-dir", &["/p", "/p:1Gi", "/p:x", "rel", "/p:-1Gi"]),
        ("--restart-policy", &["Always", "always", "Explode", ""]),
        ("--backoff-limit", &["-1", "x", "2147483648"]),
        ("--active-deadline-seconds", &["-5", "0", "x"]),
        (
            "--api-base-url",
            &[
                "not a url",
                "javascript:alert(1)",
                "http://a\nb",
                "ftp://x",
                "https://",
                "https://x/api",
            ],
        ),
        ("--api-secret", &["t-bad_name!", "UPPER", "", "a.b"]),
        ("--api-secret-key", &["../x", "a b", ""]),
        ("--node-selector", &["a=b", "a", "=b", "a=b=c"]),
        ("--service-account", &["UPPER", "a_b", "ok"]),
    ];
    for (flag, values) in flags {
        for v in *values {
            cases.push(Case::render(
                format!("{flag} {v:?}"),
                &[format!("{flag}={v}")],
                false,
            ));
        }
    }
    cases.push(Case::render(
        "unknown flag",
        &["--no-such-flag".into()],
        true,
    ));
    cases.push(Case::render(
        "--label 100 kB value",
        &[format!("--label=a={}", "v".repeat(100_000))],
        true,
    ));

    // render -t: odd template syntax and hostile loops.
    let templates: &[(&str, bool)] = &[
        ("{% if %}", true),
        ("{{", true),
        (
            "{% for x in range(100000) %}{% for y in range(100000) %}{% endfor %}{% endfor %}",
            true,
        ),
        (
            "{% macro m(s, n) %}{{ m(s ~ s, n - 1) if n else s }}{% endmacro %}{{ m('ab', 40) }}",
            true,
        ),
        ("{% macro r() %}{{ r() }}{% endmacro %}{{ r() }}", true),
        ("{{ '%2000000000s' | format('x') }}", true),
        ("{{ 'x' | indent(2000000000) }}", true),
        ("{{ 'a' * 1000000000 }}", true),
        // A list repeated by reference is cheap; joined or printed it is every copy (issue 24).
        ("{{ ([(\"x\"*60000)] * 60000)|join(\"\")|length }}", true),
        (
            "{{ ([(\"x\"*60000)] * 60000)|join(\",\", attribute=\"a\")|length }}",
            true,
        ),
        ("{{ ([(\"x\"*60000)] * 60000)|string|length }}", true),
        ("{{ ([(\"x\"*60000)] * 60000)|tojson|length }}", true),
        ("{{ ([(\"x\"*60000)] * 60000)|pprint|length }}", true),
        ("{{ [(\"x\"*60000)] * 60000 }}", true),
        ("{{ ([\"\"] * 100000000)|join(\"xx\")|length }}", true),
        (
            "{{ (\"x\"*1000000)|replace(\"x\", \"y\"*1000)|length }}",
            true,
        ),
        ("{{ (\"x\"*90000000) ~ (\"x\"*90000000) }}", true),
        // Issue 24, item 2: every filter or operator that can build a large value, each checked
        // before (or charged while) it builds. minijinja 3 has no `center`: an unknown filter.
        ("{{ 'x'|center(2000000000) }}", true),
        ("{{ (\"x\n\"*15000000)|lines|length }}", true),
        ("{{ (\"x \"*15000000)|split|length }}", true),
        ("{{ (\"x,\"*15000000)|split(\",\")|list|length }}", true),
        ("{{ ([(\"x\"*60000)] * 60000)|sum(start=\"\") }}", true),
        ("{{ ([[1]*1000] * 60000)|sum(start=[])|length }}", true),
        ("{{ ([\"x\"] * 3000000)|sum(start=\"\")|length }}", true),
        (
            "{{ (\"%s\"*1000000)|format(*([(\"x\"*60000)]*1000000)) }}",
            true,
        ),
        ("{{ [1] * 100000000 }}", true),
        ("{{ ([1] * 100000000) + ([1] * 100000000) }}", true),
        ("{{ (\"x\"*60000000)[::-1]|length }}", true),
        ("{{ (\"x\"*25000000)[::-1][::-1]|length }}", true),
        ("{{ ([[1]]*1000)|tojson(indent=100000)|length }}", true),
        ("{{ [1, [2, [3]]]|tojson(indent=2000000000)|length }}", true),
        ("{{ ([1] * 100000000)|list|length }}", true),
        ("{{ ([1] * 100000000)|batch(3)|list|length }}", true),
        ("{{ ([1] * 100000000)|slice(3)|list|length }}", true),
        ("{{ [1,2]|batch(100000000, \"x\")|list|length }}", true),
        ("{{ ([1] * 100000000)|unique|list|length }}", true),
        (
            "{{ ([1] * 100000000)|zip([1]*100000000)|list|length }}",
            true,
        ),
        ("{{ ([1] * 100000000)|reverse|list|length }}", true),
        ("{{ ([1] * 100000000)|sort|length }}", true),
        ("{{ dict(a=(\"x\"*60000))|items|list|length }}", true),
        ("{{ ([(\"x\"*60000)] * 60000)|dictsort }}", true),
        (
            "{{ (\"x\"*60000)|replace(\"\", \"y\"*60000)|length }}",
            true,
        ),
        ("{{ (\"x\"*30000000)|title|length }}", true),
        (
            "{{ (\"x\"*30000000) ~ (\"x\"*30000000) ~ (\"x\"*30000000) }}",
            true,
        ),
        ("{{ (\"\\n\"*3000000)|indent(1, true, true)|length }}", true),
        ("{% include 'nope' %}", true),
        ("{% extends 'nope' %}", true),
        ("{% import 'tfjob.j2' as t %}{{ t.metadata }}", true),
        ("{{ values.__class__ }}", true),
        ("{{ 1 / 0 }}", true),
        ("{{ undefined_thing.attr.attr }}", true),
        (
            "{% set x = [1] %}{% for i in range(30) %}{% set x = x + x %}{% endfor %}{{ x|length }}",
            true,
        ),
        (
            "apiVersion: kubeflow.org/v1\nkind: TFJob\n{{ '\\t' }}bad: [",
            true,
        ),
        ("{#- description: unterminated comment", true),
        ("{{ values | tojson }}", true),
        ("\u{0}\u{1}\u{2}", true),
        ("{% raw %}{{ x }}", true),
    ];
    for (i, (src, reject)) in templates.iter().enumerate() {
        cases.push(Case {
            label: format!("template #{i} {src:?}"),
            args: vec!["render".into(), "-t".into(), "{FILE}".into()],
            file: Some(src.as_bytes().to_vec()),
            must_reject: *reject,
        });
    }
    for name in [
        "nope",
        "../etc/passwd",
        "",
        "worker.yaml.j2",
        "WORKER",
        "tfjob.j2",
    ] {
        cases.push(Case {
            label: format!("templates show {name:?}"),
            args: vec!["templates".into(), "show".into(), name.into()],
            file: None,
            must_reject: false,
        });
        cases.push(Case::render(
            format!("-t {name:?}"),
            &["-t".into(), name.into()],
            false,
        ));
    }
    cases
}

#[test]
fn hostile_inputs_end_cleanly_bounded_and_with_the_right_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let cases = cases();
    let mut failures = Vec::new();
    let mut codes = std::collections::BTreeMap::<String, usize>::new();
    let mut max_rss = (0, String::new());
    let mut accepted = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let started = std::time::Instant::now();
        let o = run(case, dir.path(), i);
        // Information only (never a verdict): which cases dominate the run's time.
        if started.elapsed() > Duration::from_secs(2) {
            eprintln!("slow: #{i} {} took {:?}", case.label, started.elapsed());
        }
        let key = match (o.code, o.signal) {
            (Some(c), _) => format!("exit {c}"),
            (_, Some(s)) => format!("signal {s}"),
            _ => "other".into(),
        };
        *codes.entry(key.clone()).or_default() += 1;
        if o.max_rss_kb > max_rss.0 {
            max_rss = (o.max_rss_kb, case.label.clone());
        }
        let first = o.stderr.lines().next().unwrap_or_default();
        let verdict = if o.hung {
            Some("hung (killed by the safety net)".to_string())
        } else if o.max_rss_kb > MAX_RSS_KB {
            Some(format!("peak RSS {} MB", o.max_rss_kb / 1024))
        } else if !matches!(o.code, Some(0) | Some(2)) {
            Some(format!("{key} (expected 0 or 2)"))
        } else if case.must_reject && o.code != Some(2) {
            Some(format!("{key} (expected 2)"))
        } else if o.code == Some(2) && o.stderr.trim().is_empty() {
            Some("exit 2 without a message".into())
        } else {
            None
        };
        if let Some(v) = verdict {
            failures.push(format!("#{i} {}: {v}: {first}", case.label));
        }
        if o.code == Some(0) && case.args[0] == "validate" {
            accepted.push(i);
        }
    }
    eprintln!(
        "hostile run: {} cases, exit codes {codes:?}, max RSS {} MB ({})",
        cases.len(),
        max_rss.0 / 1024,
        max_rss.1
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // Everything validate accepted that is a single job, sent to the cluster's admission.
    let c = cluster(&format!("objects:{SECRET}"));
    let mut checked = 0;
    for &i in &accepted {
        let path = dir.path().join(format!("case-{i}.yaml"));
        let body = std::fs::read(&path).unwrap();
        // One object per submit: multi-document files are validate's business only.
        if body.windows(4).filter(|w| w == b"---\n").count() > 0 || body.len() > 100_000 {
            continue;
        }
        let run = tfjob(
            &c,
            &["submit", "--dry-run=server", "-f", path.to_str().unwrap()],
        );
        checked += 1;
        if run.code != 0 {
            failures.push(format!(
                "#{i} {}: validate accepted, the cluster refused (exit {}): {}",
                cases[i].label, run.code, run.stderr
            ));
        }
    }
    eprintln!("cross-checked {checked} accepted manifests with submit --dry-run=server");
    assert!(
        checked >= 10,
        "only {checked} accepted manifests were cross-checked"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
