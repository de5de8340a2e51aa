//! `submit --wait`: waiting for capacity an autoscaler brings, and what a failed wait leaves
//! behind (the job, and how to delete it).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tfjob_testcluster::NodeSpec;

use crate::submit::{SECRET, submit_args};
use crate::{args, cluster, tfjob};

/// `submit … --wait` running as a child, its stderr lines sent on as they come.
fn spawn_with_stderr_lines(
    c: &tfjob_testcluster::TestCluster,
    argv: &[&str],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(argv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

#[test]
fn skip_capacity_check_waits_for_capacity_and_succeeds_when_a_node_is_added() {
    // 4 GPUs, 5 one-GPU workers: the pre-flight says never; the user says nodes will come.
    let c = cluster(&format!(
        "nodes: [{{name: node-a, cpu: '32', memory: 128Gi, gpu: 4}}]\nobjects:{SECRET}"
    ));
    let (child, lines) = spawn_with_stderr_lines(
        &c,
        &args(
            "submit --name tf-grow --image tensorflow/tensorflow:2.13.0-gpu --workers 5 --gpus 1 \
             --cpu 1 --memory 1Gi --skip-capacity-check --wait --settle 0 --timeout 2m \
             -- python train.py",
        ),
    );
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{e}: no 'waiting for capacity' line in {seen:#?}"));
        // The progress line, which says what the wait waits for now.
        let said = line.starts_with("tfjob/tf-grow: ") && line.contains("waiting for capacity (");
        seen.push(line);
        if said {
            break;
        }
    }
    assert!(
        seen.iter()
            .any(|l| l.contains("--skip-capacity-check") && l.contains("nvidia.com/gpu")),
        "{seen:#?}"
    );
    assert!(
        c.get("tfjobs", Some("default"), "tf-grow").is_some(),
        "the job was created"
    );
    // A node pool scales up.
    c.add_node(&NodeSpec {
        name: "node-b".into(),
        ..NodeSpec::default()
    });
    let out = child.wait_with_output().unwrap();
    let rest: Vec<String> = lines.try_iter().collect();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{seen:#?}\n{rest:#?}");
    assert!(stdout.contains("condition met"), "{stdout}");
    assert!(
        !seen.iter().chain(&rest).any(|l| l.contains("can never")),
        "{seen:#?}\n{rest:#?}"
    );
}

#[test]
fn without_the_flag_or_an_autoscaler_the_wait_still_ends_as_never() {
    // The same job created past the pre-flight, then waited on: nothing says nodes will come.
    let c = cluster(&format!(
        "nodes: [{{name: node-a, cpu: '32', memory: 128Gi, gpu: 1}}]\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 60s"));
    run.exit(4);
    run.stderr_has("can never be scheduled");
}

/// A job whose PS crash-loops, created past every pre-flight.
fn crash_looping() -> tfjob_testcluster::TestCluster {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: ps}}\n  exitCode: 1\n  runMs: 50\n  crashLoop: true\n  log: 'ValueError: bad flag'\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    c
}

#[test]
fn a_failed_wait_says_the_job_is_still_there_and_how_to_delete_it() {
    let c = crash_looping();
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for succeeded --timeout 60s"),
    );
    run.exit(4);
    run.stderr_has("crash-looping");
    let delete = format!(
        "The job is still there (its pods keep what they requested): `kubectl tfjob delete tf-dist-train -n default --kubeconfig {}`",
        c.kubeconfig().display()
    );
    run.stderr_has(&delete);
    // Said once, as the last thing (the error's end).
    assert_eq!(run.stderr.matches("The job is still there").count(), 1);
    assert!(run.stderr.trim_end().ends_with(&delete), "{}", run.stderr);
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
}

#[test]
fn delete_on_failure_deletes_the_job_after_a_failed_wait() {
    let c = crash_looping();
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for succeeded --delete-on-failure --timeout 60s"),
    );
    run.exit(4);
    run.stderr_has("TFJob default/tf-dist-train was deleted (--delete-on-failure).");
    assert!(
        !run.stderr.contains("The job is still there"),
        "{}",
        run.stderr
    );
    assert!(
        c.wait_for(Duration::from_secs(10), |c| c
            .get("tfjobs", Some("default"), "tf-dist-train")
            .is_none()),
        "the job is still there"
    );
    // A healthy job is never deleted by the flag.
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--delete-on-failure"]),
    );
    run.exit(0);
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
}

/// Issue 61 item 4: "condition met" means the job can train. Once every replica runs, `submit
/// --wait` execs into one replica of each role and runs probe's checks; all pass here, and it
/// says what it checked.
#[test]
fn submit_wait_checks_inside_the_pods_before_condition_met() {
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "60s"]),
    );
    run.exit(0);
    run.stdout_has("condition met");
    run.stderr_has(
        "checked inside PS-0, Worker-0 (one replica of each role): TF_CONFIG as the operator set it, every peer reached, and the gateway takes the pod's key",
    );
    assert!(!run.stderr.contains("not checked"), "{}", run.stderr);
    let execs = c
        .requests()
        .into_iter()
        .filter(|r| r.subresource == "exec")
        .count();
    assert!(execs >= 2, "{execs} execs");
}

/// Checks that cannot run (exec forbidden) are said, with the command that runs them later:
/// unknown, not a failure and not a pass. `--no-probe` skips them and says so.
#[test]
fn checks_that_cannot_run_are_said_and_no_probe_skips_them() {
    let c = cluster(&format!(
        "rbac: {{deny: [{{verb: create, resource: pods}}]}}\nobjects:{SECRET}"
    ));
    let run = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "60s"]),
    );
    run.exit(0);
    run.stdout_has("condition met");
    run.stderr_has("note: not checked inside the pods (TF_CONFIG, the peers, the gateway)");
    run.stderr_has("create pods/exec");
    run.stderr_has("`kubectl tfjob probe tf-dist-train");

    let c = cluster(&format!("gatewayKey: sk-another\nobjects:{SECRET}"));
    let run = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "60s", "--no-probe"]),
    );
    run.exit(0);
    run.stderr_has("(--no-probe)");
    assert!(
        c.requests().iter().all(|r| r.subresource != "exec"),
        "--no-probe exec'd into a pod"
    );
    // `wait` on the same job runs the checks: the key is rejected, exit 4, nothing deleted.
    let wait = tfjob(
        &c,
        &args("wait tf-dist-train --settle 0 --timeout 30s --delete-on-failure"),
    );
    wait.exit(4);
    wait.stderr_has("401");
    wait.stderr_has("The job was not deleted");
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
}

/// Issue 61 item 6: an eviction showed only as `Worker 1/2` then `2/2`. The kubelet's act is
/// named once, as diagnose names it, and the replacement that runs ends the wait with 0.
#[test]
fn an_eviction_during_submit_wait_is_named_once() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  disruption: evicted\n  runMs: 200\nobjects:{SECRET}"
    ));
    let run = tfjob(
        &c,
        &submit_args(&[
            "--skip-capacity-check",
            "--restart-policy",
            "OnFailure",
            "--wait",
            "--timeout",
            "60s",
        ]),
    );
    run.exit(0);
    let named: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("Worker-1: Evicted by the kubelet"))
        .collect();
    assert_eq!(named.len(), 1, "{}", run.stderr);
    // Its first sentence: why, without the thresholds that follow.
    assert!(
        named[0].ends_with("The node was low on resource: memory"),
        "{}",
        named[0]
    );
}
