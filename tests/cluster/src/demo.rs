//! The article's story told end to end against a simulated cluster: `tfjob-testcluster demo`.
//!
//! The demo is a list of [`Step`]s ([`steps`]); each runs the real `kubectl-tfjob` binary as a
//! user would type it, prints the command and its output, and checks its exit code and the lines
//! the story depends on, so the demo fails loudly when the story breaks. Steps may first act on
//! the cluster through the test cluster's API (add GPU nodes, let a pod reach a state) — said so
//! in the printed narration, never presented as a plugin command.
//!
//! A step for a new command is one more entry in [`steps`].

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{ContainerBehaviour, ContainerMatch, NodeSpec, Scenario, TestCluster};

/// The demo key piped into `secret create`: obviously not a real credential.
pub const DEMO_KEY: &str = "sk-demo-0000-not-a-real-key";

/// The article's job, as flags (README "Quick start" uses the same).
const ARTICLE_FLAGS: &[&str] = &[
    "--name",
    "tf-dist-train",
    "--image",
    "tensorflow/tensorflow:2.13.0-gpu",
    "--ps",
    "1",
    "--workers",
    "3",
    "--gpus",
    "1",
    "--cpu",
    "4",
    "--memory",
    "8Gi",
];
const ARTICLE_COMMAND: &[&str] = &[
    "--",
    "python",
    "-m",
    "trainer.task",
    "--batch_size=32",
    "--training_steps=1000",
];

/// How long a cluster-side precondition may take before the demo gives up (the simulated
/// components act within milliseconds; this only bounds a broken story).
const SETTLE: Duration = Duration::from_secs(30);

type Hook = Box<dyn Fn(&TestCluster) -> Result<(), String>>;

/// One `kubectl tfjob …` invocation and what it must show.
pub struct Invocation {
    args: Vec<String>,
    stdin: Option<String>,
    code: i32,
    expect: Vec<String>,
    show_lines: Option<usize>,
}

/// One step of the story: narration, an optional action on the cluster, an optional command.
pub struct Step {
    say: String,
    before: Option<Hook>,
    run: Option<Invocation>,
}

impl Step {
    fn new(say: &str) -> Self {
        Step {
            say: say.into(),
            before: None,
            run: None,
        }
    }
    fn before(mut self, hook: impl Fn(&TestCluster) -> Result<(), String> + 'static) -> Self {
        self.before = Some(Box::new(hook));
        self
    }
    fn run(mut self, inv: Invocation) -> Self {
        self.run = Some(inv);
        self
    }
    /// Whether the step runs a plugin command (some only act on the cluster).
    pub fn has_command(&self) -> bool {
        self.run.is_some()
    }
}

/// `kubectl tfjob ARGS…`, expected to exit 0.
fn tfjob(args: &[&str]) -> Invocation {
    Invocation {
        args: args.iter().map(|s| s.to_string()).collect(),
        stdin: None,
        code: 0,
        expect: vec![],
        show_lines: None,
    }
}

impl Invocation {
    fn code(mut self, code: i32) -> Self {
        self.code = code;
        self
    }
    /// Text the output (stdout + stderr) must contain.
    fn expect(mut self, text: &str) -> Self {
        self.expect.push(text.into());
        self
    }
    fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.into());
        self
    }
    /// Print only the first `n` lines (long manifests); the checks still see everything.
    fn show(mut self, n: usize) -> Self {
        self.show_lines = Some(n);
        self
    }
}

fn with(base: &[&str], more: &[&str]) -> Vec<String> {
    base.iter().chain(more).map(|s| s.to_string()).collect()
}

fn article(cmd: &str, extra: &[&str]) -> Invocation {
    let mut inv = tfjob(&[cmd]);
    inv.args.extend(with(ARTICLE_FLAGS, extra));
    inv.args.extend(with(ARTICLE_COMMAND, &[]));
    inv
}

/// The simulated cluster the story starts on: the training-operator running, one CPU node and
/// one node with a single GPU — too few for three one-GPU workers. The model gateway the pods
/// reach answers the demo key, so `probe` sees a working gateway (`gatewayKey` in a scenario).
pub fn scenario() -> Scenario {
    Scenario::default()
        .with_gateway_key(DEMO_KEY)
        .with_nodes(vec![
            NodeSpec::new("cpu-1", "8", "32Gi", 0),
            NodeSpec::new("gpu-1", "16", "64Gi", 1),
        ])
        .with_behaviour(ContainerBehaviour {
            matches: ContainerMatch {
                pod_name: Some("tf-dist-train-*".into()),
                ..Default::default()
            },
            log: Some(
                "INFO trainer.task: TF_CONFIG read, cluster of 1 ps + 3 workers\n\
                 INFO trainer.task: step 100, loss 0.412\n"
                    .into(),
            ),
            ..Default::default()
        })
}

/// The story, in order. Every step asserts its exit code; a command that is not part of the
/// plugin yet has no step (the report of the change that adds one says so).
pub fn steps() -> Vec<Step> {
    vec![
        Step::new(
            "Store the model-gateway key once per namespace. It comes from stdin (here a demo key), \
             so it never lands in argv, shell history or a file.",
        )
        .run(
            tfjob(&["secret", "create", "--from-stdin"])
                .stdin(&format!("{DEMO_KEY}\n"))
                .expect("taotoken-secret"),
        ),
        Step::new(
            "Render the article's job offline: 1 parameter server and 3 workers with one GPU each. \
             The key reaches every tensorflow container as a secretKeyRef, never as a literal.",
        )
        .run(
            article("render", &[])
                .expect("kind: TFJob")
                .expect("nvidia.com/gpu")
                .expect("secretKeyRef")
                .show(40),
        ),
        Step::new(
            "Submit it and wait. This cluster has a single GPU (node gpu-1) for three one-GPU \
             workers: the pre-flight models kube-scheduler, sees the job can never run here as it \
             is, and refuses before anything is created (exit 4).",
        )
        .run(
            article("submit", &["--wait"])
                .code(4)
                .expect("nvidia.com/gpu")
                .expect("never"),
        ),
        Step::new(
            "The cluster gains two nodes with 2 GPUs each (through the test cluster's API, as a \
             node pool scaling up would).",
        )
        .before(|c| {
            c.add_node(&NodeSpec::new("gpu-2", "16", "64Gi", 2));
            c.add_node(&NodeSpec::new("gpu-3", "16", "64Gi", 2));
            Ok(())
        }),
        Step::new(
            "Submit again and follow it until every replica runs (not just the operator's Running \
             condition, which a single running worker already sets).",
        )
        .run(
            article("submit", &["--wait", "--timeout", "60s"])
                .expect("condition met (all replicas Running)"),
        ),
        Step::new("Every TFJob in the namespace, with running/desired replicas per role.")
            .run(tfjob(&["list"]).expect("tf-dist-train").expect("Worker 3/3")),
        Step::new("What every replica prints, each line prefixed with its replica.").run(
            tfjob(&["logs", "tf-dist-train"])
                .expect("[worker-0]")
                .expect("[ps-0]")
                .expect("step 100"),
        ),
        Step::new("One job in full: conditions, replicas, services, gateway env (Secret refs only).")
            .run(
                tfjob(&["get", "tf-dist-train"])
                    .expect("tf-dist-train")
                    .expect("taotoken-secret"),
            ),
        Step::new(
            "Look inside the running pods, as the training process sees them: its TF_CONFIG, \
             every peer reached by its Service name on port 2222, and the gateway answering the \
             pod's own key (only a fingerprint of it leaves the pod).",
        )
        .run(
            tfjob(&["probe", "tf-dist-train"])
                .expect("ok: 4/4 replicas")
                .show(20),
        ),
        Step::new(
            "A second job reads the key `token`, which the Secret does not have: submit refuses \
             it before writing anything.",
        )
        .run(
            tfjob(&[
                "submit",
                "--name",
                "tf-eval",
                "--image",
                "tensorflow/tensorflow:2.13.0",
                "--ps",
                "0",
                "--workers",
                "1",
                "--api-secret-key",
                "token",
            ])
            .code(3)
            .expect("token"),
        ),
        Step::new(
            "A teammate creates that job with plain `kubectl apply`, which does not look inside \
             Secrets (done here through the test cluster's API). Its worker cannot start; \
             diagnose says why.",
        )
        .before(|c| {
            c.insert(eval_job());
            settle(c, "tf-eval-worker-0 in CreateContainerConfigError", |c| {
                waiting_reason(c, "tf-eval-worker-0").as_deref()
                    == Some("CreateContainerConfigError")
            })
        })
        .run(
            tfjob(&["diagnose", "tf-eval"])
                .code(4)
                .expect("token")
                .expect("taotoken-secret"),
        ),
        Step::new(
            "Clean up the broken job; it returns once the job and its pods are gone. tf-dist-train \
             keeps running (with `demo --keep`, try `kubectl tfjob probe tf-dist-train`).",
        )
        .run(tfjob(&["delete", "tf-eval"]).expect("tfjob.kubeflow.org \"tf-eval\" deleted")),
    ]
}

/// tf-eval as `kubectl apply` would create it: one worker whose key comes from a key the
/// Secret lacks.
fn eval_job() -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "tf-eval", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {
            "replicas": 1, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [{
                "name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0",
                "env": [{"name": "TAOTOKEN_API_KEY",
                         "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "token"}}}]
            }]}}
        }}}
    })
}

fn settle(c: &TestCluster, what: &str, f: impl Fn(&TestCluster) -> bool) -> Result<(), String> {
    if c.wait_for(SETTLE, f) {
        Ok(())
    } else {
        Err(format!("the cluster did not reach: {what}"))
    }
}

fn waiting_reason(c: &TestCluster, pod: &str) -> Option<String> {
    let p = c.get("pods", Some("default"), pod)?;
    p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
        .as_str()
        .map(String::from)
}

/// How a user would type an argument in a POSIX shell.
fn shell_word(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The command line as printed: `$ [echo … |] kubectl tfjob ARGS…`.
pub fn command_line(inv: &Invocation) -> String {
    let mut line = String::from("$ ");
    if let Some(input) = &inv.stdin {
        line += &format!("echo {} | ", shell_word(input.trim_end()));
    }
    line += "kubectl tfjob";
    for a in &inv.args {
        line.push(' ');
        line += &shell_word(a);
    }
    line
}

/// Why the demo stopped.
#[derive(Debug)]
pub struct DemoError(pub String);

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Runs `steps` against `cluster` with the plugin binary at `plugin`, writing the transcript to
/// `out`. Stops at the first step that does not hold.
pub fn run_steps(
    cluster: &TestCluster,
    plugin: &Path,
    steps: Vec<Step>,
    out: &mut dyn Write,
) -> Result<(), DemoError> {
    let io = |e: std::io::Error| DemoError(format!("writing the transcript: {e}"));
    for (i, step) in steps.into_iter().enumerate() {
        writeln!(out, "\n# {}. {}", i + 1, step.say).map_err(io)?;
        if let Some(hook) = &step.before {
            hook(cluster).map_err(|e| DemoError(format!("step {}: {e}", i + 1)))?;
        }
        let Some(inv) = step.run else { continue };
        writeln!(out, "{}", command_line(&inv)).map_err(io)?;
        out.flush().map_err(io)?;
        let (code, output) = invoke(cluster, plugin, &inv)
            .map_err(|e| DemoError(format!("step {}: running {}: {e}", i + 1, plugin.display())))?;
        let lines: Vec<&str> = output.lines().collect();
        let shown = inv.show_lines.unwrap_or(usize::MAX).min(lines.len());
        for l in &lines[..shown] {
            writeln!(out, "{l}").map_err(io)?;
        }
        if shown < lines.len() {
            writeln!(out, "… ({} more lines)", lines.len() - shown).map_err(io)?;
        }
        let missing: Vec<&String> = inv
            .expect
            .iter()
            .filter(|t| !output.contains(t.as_str()))
            .collect();
        if code != inv.code || !missing.is_empty() {
            return Err(DemoError(format!(
                "step {} broke the story: `{}` exited {code} (expected {}){}",
                i + 1,
                command_line(&inv).trim_start_matches("$ "),
                inv.code,
                if missing.is_empty() {
                    String::new()
                } else {
                    format!("; output lacks {missing:?}")
                }
            )));
        }
        writeln!(out, "[exit {code}]").map_err(io)?;
    }
    Ok(())
}

/// Runs the plugin with stdout and stderr on one pipe, so the transcript keeps their order.
fn invoke(
    cluster: &TestCluster,
    plugin: &Path,
    inv: &Invocation,
) -> std::io::Result<(i32, String)> {
    let (mut reader, writer) = std::io::pipe()?;
    let mut child = Command::new(plugin)
        .args(&inv.args)
        .env("KUBECONFIG", cluster.kubeconfig())
        .env_remove("KUBECTL_TFJOB")
        .stdin(if inv.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .spawn()?;
    if let (Some(text), Some(mut stdin)) = (&inv.stdin, child.stdin.take()) {
        stdin.write_all(text.as_bytes())?;
    }
    // The Command holds the pipe's write ends until it is dropped (end of the statement above),
    // so EOF comes when the child exits.
    let mut output = String::new();
    reader.read_to_string(&mut output)?;
    let status = child.wait()?;
    Ok((status.code().unwrap_or(-1), output))
}

/// Starts the demo cluster and runs the whole story; returns the cluster, still running.
pub fn run(plugin: &Path, out: &mut dyn Write) -> Result<TestCluster, DemoError> {
    let cluster = TestCluster::start(scenario());
    let _ = writeln!(
        out,
        "# A simulated Kubernetes cluster (training-operator v1.9.4, scheduler, kubelet) is \
         serving at {}.\n# Every command below is the real kubectl-tfjob binary ({}).",
        cluster.url(),
        plugin.display()
    );
    run_steps(&cluster, plugin, steps(), out)?;
    Ok(cluster)
}
