//! End-to-end tests: the real `kubectl-tfjob` binary against the project's test cluster
//! (tfjob-testcluster), over real HTTP, through a kubeconfig as users have it.
//!
//! One test binary for all of them, so the suite links once. Every byte the binary prints goes
//! through [`Run`], which fails the test if the test API key (or its base64) ever appears.

mod bounded;
mod check;
mod client;
mod day2;
mod deadline;
mod diagnose;
mod evidence;
mod health;
mod help;
mod hostile;
mod interrupted;
mod jobset;
mod mcp;
mod one_story;
mod printers;
mod probe;
mod queue;
mod redact;
mod refused;
mod render;
mod resources;
mod secret;
mod shape;
mod shells;
mod submit;
mod submit_wait;
mod tls;
mod top;
mod validate;
mod verdict;
mod version;
mod wait;
mod wait_many;
mod wording;
mod writes;

use std::io::Write;
use std::process::{Command, Stdio};

use tfjob_testcluster::{Scenario, TestCluster};

/// The key used throughout the suite; it must never be printed, at any verbosity.
pub const TEST_KEY: &str = "sk-e2e-test-key-0123-4567-89ab";

/// base64 of [`TEST_KEY`] (what a Secret's `data` would hold).
pub fn test_key_b64() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(TEST_KEY)
}

/// `body` written to `job.yaml` in a fresh temporary directory; keep the guard while the path
/// is used.
pub fn manifest_file(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, body).unwrap();
    (dir, path)
}

/// The outcome of one run of the binary.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// Asserts the exit code (the same check as [`Run::expect_code`], read as a spec line).
    #[track_caller]
    pub fn exit(&self, code: i32) -> &Self {
        self.expect_code(code)
    }

    /// Asserts that stdout holds `text`, showing stdout when it does not.
    #[track_caller]
    pub fn stdout_has(&self, text: &str) -> &Self {
        assert!(self.stdout.contains(text), "{}", self.stdout);
        self
    }

    /// Asserts that stderr holds `text`, showing stderr when it does not.
    #[track_caller]
    pub fn stderr_has(&self, text: &str) -> &Self {
        assert!(self.stderr.contains(text), "{}", self.stderr);
        self
    }

    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\n--- stdout:\n{}\n--- stderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// A command line for the binary, pointed at a test cluster.
pub struct Cli {
    cmd: Command,
    stdin: Option<String>,
    /// The namespace the command line names (`-n`), which every hint must carry on.
    namespace: Option<String>,
}

impl Cli {
    pub fn new(cluster: Option<&TestCluster>, args: &[&str]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"));
        cmd.env_remove("KUBECONFIG")
            .env_remove("RUST_LOG")
            .env_remove("KUBECTL_TFJOB_RETRY_DEADLINE")
            .env("HOME", std::env::temp_dir().join("kubectl-tfjob-e2e-home"));
        if let Some(c) = cluster {
            cmd.arg("--kubeconfig").arg(c.kubeconfig());
        }
        cmd.args(args);
        let namespace = args.iter().enumerate().find_map(|(i, a)| match *a {
            "-n" | "--namespace" => args.get(i + 1).map(|n| n.to_string()),
            a => a.strip_prefix("--namespace=").map(String::from),
        });
        Cli {
            cmd,
            stdin: None,
            namespace,
        }
    }

    pub fn stdin(mut self, input: &str) -> Self {
        self.stdin = Some(input.to_string());
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub fn run(self) -> Run {
        self.run_with_stdout(Stdio::piped())
    }

    /// Starts it with stdout and stderr piped, for a test that acts while it runs.
    pub fn spawn(mut self) -> std::process::Child {
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kubectl-tfjob")
    }

    /// Runs with a stdout whose reader is already gone, as after `| head -1` exited: every
    /// write to it fails with EPIPE, deterministically.
    pub fn run_with_closed_stdout(self) -> Run {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        self.run_with_stdout(Stdio::from(writer))
    }

    fn run_with_stdout(mut self, stdout: Stdio) -> Run {
        self.cmd
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(stdout)
            .stderr(Stdio::piped());
        let mut child = self.cmd.spawn().expect("spawn kubectl-tfjob");
        if let Some(input) = self.stdin.take() {
            let mut pipe = child.stdin.take().unwrap();
            // The binary may refuse the input and exit before reading all of it (a key over its
            // limit): the pipe then breaks, and its exit code is what the test judges.
            if let Err(e) = pipe.write_all(input.as_bytes()) {
                assert_eq!(
                    e.kind(),
                    std::io::ErrorKind::BrokenPipe,
                    "writing stdin: {e}"
                );
            }
        }
        let out = child.wait_with_output().expect("run kubectl-tfjob");
        let run = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        let all = run.all();
        assert!(!all.contains(TEST_KEY), "the API key leaked:\n{all}");
        assert!(
            !all.contains(&test_key_b64()),
            "the API key (base64) leaked:\n{all}"
        );
        assert!(!all.contains("panicked"), "the binary panicked:\n{all}");
        // Every hint is pasteable (issue 61 item 2): each `kubectl tfjob …` the binary
        // suggests, in any test, parses with the CLI's own parser.
        for hint in hints(&all) {
            if let Err(e) = parse_hint(&hint) {
                panic!("a hint that does not parse: `{hint}`: {e}\n--- output:\n{all}");
            }
            if let Some(ns) = self.namespace.as_deref().filter(|ns| *ns != "default")
                && !carries_namespace(&hint, ns)
            {
                panic!("a hint that drops -n {ns}: `{hint}`\n--- output:\n{all}");
            }
        }
        run
    }
}

/// The `kubectl tfjob …` commands an output suggests: each one quoted in backticks (help
/// prose such as `kubectl tfjob <TAB>` names a key, not a command).
pub fn hints(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("`kubectl tfjob ") {
        let tail = &rest[i + 1..];
        let Some(end) = tail.find('`') else { break };
        if !tail[..end].contains('<') {
            out.push(tail[..end].to_string());
        }
        rest = &tail[end + 1..];
    }
    out
}

/// Whether a suggested command runs where the user's did: a verb that reads or writes jobs
/// carries the namespace (or `-A`); the others (`version`, `templates`, …) need none.
pub fn carries_namespace(hint: &str, ns: &str) -> bool {
    let words = shell_words(hint).unwrap_or_default();
    let namespaced = [
        "submit", "check", "wait", "diagnose", "probe", "logs", "list", "get", "top", "delete",
        "suspend", "resume", "restart", "export", "secret",
    ];
    if !words
        .get(2)
        .is_some_and(|v| namespaced.contains(&v.as_str()))
    {
        return true;
    }
    words.iter().enumerate().any(|(i, w)| {
        ((w == "-n" || w == "--namespace") && words.get(i + 1).is_some_and(|n| n == ns))
            || w == &format!("--namespace={ns}")
            || w == "-A"
            || w == "--all-namespaces"
    })
}

/// Parses a suggested command line as a POSIX shell splits it (single and double quotes,
/// backslashes) with the CLI's own parser; placeholders in capitals (NAME, DIR) parse as any
/// word would.
pub fn parse_hint(hint: &str) -> Result<(), String> {
    let words = shell_words(hint)?;
    let args = words.iter().skip(2); // `kubectl tfjob`
    let argv: Vec<String> = std::iter::once("kubectl-tfjob".to_string())
        .chain(args.cloned())
        .collect();
    kubectl_tfjob::commands::Cli::try_parse_with_order(&argv)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("an unclosed single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => word.extend(chars.next()),
                        Some(c) => word.push(c),
                        None => return Err("an unclosed double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// TFJob `name` in `default` with one worker, and that worker's pod owned by it, stored
/// directly: under an operator that is only installed (it reconciles nothing) the pod stays
/// until the test deletes it. Returns the job's uid.
pub fn job_with_its_pod(c: &TestCluster, name: &str) -> serde_json::Value {
    c.insert(
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}),
    );
    let uid = c.get("tfjobs", Some("default"), name).unwrap()["metadata"]["uid"].clone();
    c.insert(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{name}-worker-0"), "namespace": "default", "labels": {
            "training.kubeflow.org/job-name": name,
            "training.kubeflow.org/operator-name": "tfjob-controller"},
            "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "name": name, "uid": uid, "controller": true}]},
        "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}));
    uid
}

/// Waits (bounded, not timed) until TFJob `name` in `default` has its Failed condition.
pub fn until_failed(c: &TestCluster, name: &str) {
    let failed = c.wait_for(std::time::Duration::from_secs(30), |c| {
        c.get("tfjobs", Some("default"), name).is_some_and(|j| {
            j["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|x| x["type"] == "Failed" && x["status"] == "True")
            })
        })
    });
    assert!(failed, "TFJob {name} never failed");
}

/// Waits (bounded, not timed) until the workers `0..workers` of job `name` in `default` run.
pub fn until_workers_run(c: &TestCluster, name: &str, workers: i64) {
    let ran = c.wait_for(std::time::Duration::from_secs(30), |c| {
        (0..workers).all(|i| {
            c.get("pods", Some("default"), &format!("{name}-worker-{i}"))
                .is_some_and(|p| {
                    p["status"]["containerStatuses"][0]["state"]["running"].is_object()
                })
        })
    });
    assert!(ran, "the workers never ran");
}

/// The article's job stored directly (as `kubectl create -f` would, past every pre-flight),
/// after `edit` changed it.
pub fn stored(c: &TestCluster, edit: impl FnOnce(&mut serde_json::Value)) {
    let render = crate::Cli::new(None, &{
        let mut a = vec!["render"];
        a.extend_from_slice(crate::submit::ARTICLE);
        a
    })
    .run();
    render.expect_code(0);
    let mut job: serde_json::Value = serde_saphyr::from_str(&render.stdout).unwrap();
    job["metadata"]["namespace"] = "default".into();
    edit(&mut job);
    c.insert(job);
}

/// A command line as typed, split on whitespace: `args("wait tf-dist-train --for running")`.
/// An argument that holds a space is written as a slice instead.
pub fn args(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Shorthand: run the binary against a cluster.
pub fn tfjob(cluster: &TestCluster, args: &[&str]) -> Run {
    Cli::new(Some(cluster), args).run()
}

/// Starts a cluster from a YAML scenario (empty string = defaults).
/// Gateway keys as people paste them: a file's last newline, quotes, a backslash, spaces,
/// non-ASCII. No output may carry one in any form ([`key_runs`]).
pub const HOSTILE_KEYS: &[&str] = &[
    "sk-e2e-newline-key-0123-4567\n",
    "sk-e2e-\"quoted\\back slash-é-0123456789\n",
    "sk e2e spaced\tkey ü 89abcdef01234567",
];

/// The forms of `key` that must not come out: itself trimmed, and its runs between the
/// characters a printer escapes (what is left of it whatever the escaping).
pub fn key_runs(key: &str) -> Vec<String> {
    let trimmed = key.trim();
    let mut runs: Vec<String> = trimmed
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .filter(|r| r.len() >= 8)
        .map(str::to_string)
        .collect();
    runs.push(trimmed.to_string());
    runs
}

pub fn cluster(yaml: &str) -> TestCluster {
    let mut scenario = if yaml.trim().is_empty() {
        Scenario::default()
    } else {
        Scenario::from_yaml(yaml).expect("scenario parses")
    };
    // The gateway outside the cluster takes the key the tests store, as a user's does: `wait`
    // checks it from inside the pods before "condition met". A test of another gateway says
    // its own `gatewayKey`.
    if scenario.gateway_key.is_none() {
        scenario.gateway_key = Some(TEST_KEY.to_string());
    }
    TestCluster::start(scenario)
}

#[test]
fn test_key_base64_is_right() {
    assert_eq!(test_key_b64(), "c2stZTJlLXRlc3Qta2V5LTAxMjMtNDU2Ny04OWFi");
}
