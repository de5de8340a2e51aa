//! Issue 40 item 8: a write interrupted while its request is in flight. The outcome is unknown,
//! so the command says so, naming the object (kind namespace/name) and the command that tells
//! which way it went. The real binary against the test cluster; the signal is sent once the
//! cluster has the request (it sits in a latency fault), never after a sleep.

use std::process::{Command, Stdio};
use std::time::Duration;

use tfjob_testcluster::{Fault, FaultMatch, TestCluster};

use crate::{cluster, tfjob};

/// Starts `args` against `c`, waits until the cluster has received a `verb` on tfjobs (held
/// by a latency fault; the first `skip` of them, server dry runs, pass), sends `signal`, and
/// returns (exit code, stderr).
fn interrupt_during(
    c: &TestCluster,
    verb: &str,
    skip: u32,
    args: &[&str],
    signal: i32,
) -> (i32, String) {
    c.set_faults(vec![Fault {
        matches: FaultMatch {
            verb: Some(verb.into()),
            resource: Some("tfjobs".into()),
            ..Default::default()
        },
        latency_ms: Some(120_000),
        times: 0,
        skip,
        ..Default::default()
    }]);
    c.clear_requests();
    let child = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", std::env::temp_dir().join("kubectl-tfjob-e2e-home"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let arrived = c.wait_for(Duration::from_secs(60), |c| {
        c.arrived()
            .iter()
            .any(|r| r.verb == verb && r.resource == "tfjobs" && !r.dry_run)
    });
    // SAFETY: a plain syscall on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    let out = child.wait_with_output().unwrap();
    assert!(arrived, "the {verb} never reached the cluster");
    c.set_faults(vec![]);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The check command carries the connection flags (--kubeconfig …) before `-n NS`.
fn assert_unknown_named(code: i32, stderr: &str, object: &str, check: (&str, &str)) {
    assert_eq!(code, 130, "{stderr}");
    assert!(stderr.contains(object), "no object named: {stderr}");
    let hint = stderr
        .split_once("check with `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(cmd, _)| cmd)
        .unwrap_or_else(|| panic!("no command to check: {stderr}"));
    assert!(
        hint.starts_with(check.0) && hint.contains(check.1),
        "the wrong command: {hint}"
    );
    assert!(
        stderr.contains("may or may not have been applied"),
        "the outcome is not said to be unknown: {stderr}"
    );
    assert!(
        !stderr.contains("a request in flight"),
        "the generic message: {stderr}"
    );
}

#[test]
fn an_interrupted_create_delete_or_patch_names_the_object_and_how_to_check_it() {
    let c = cluster(&format!("objects:{}", crate::submit::SECRET));
    // A create (submit), interrupted with SIGINT.
    let submit = crate::submit::submit_args(&["-n", "default"]);
    let (code, err) = interrupt_during(&c, "create", 1, &submit, libc::SIGINT);
    assert_unknown_named(
        code,
        &err,
        "TFJob default/tf-dist-train",
        ("kubectl get tfjob tf-dist-train ", " -n default"),
    );
    // The create was held, not refused: let it land for the next writes.
    tfjob(&c, &crate::submit::submit_args(&[])).expect_code(0);

    // A patch (suspend), interrupted with SIGTERM.
    let (code, err) = interrupt_during(
        &c,
        "patch",
        0,
        &["suspend", "tf-dist-train", "-n", "default"],
        libc::SIGTERM,
    );
    assert_unknown_named(
        code,
        &err,
        "TFJob default/tf-dist-train",
        ("kubectl get tfjob tf-dist-train ", " -n default"),
    );

    // A delete, interrupted with SIGINT.
    let (code, err) = interrupt_during(
        &c,
        "delete",
        0,
        &["delete", "tf-dist-train", "-n", "default"],
        libc::SIGINT,
    );
    assert_unknown_named(
        code,
        &err,
        "TFJob default/tf-dist-train",
        ("kubectl get tfjob tf-dist-train ", " -n default"),
    );
}

/// Issue 60 item 6: Ctrl-C while `restart` waits for the pods leaves the job suspended; the
/// message says so and gives the command that resumes it (as its --timeout path does). The
/// signal is sent once restart said it is waiting for the pods, never after a sleep.
#[test]
fn an_interrupted_restart_says_the_job_stays_suspended_and_how_to_resume_it() {
    use std::io::{BufRead, BufReader};
    use tfjob_testcluster::{OperatorMode, Scenario};
    let c = TestCluster::start(Scenario::default().with_operator(OperatorMode::Installed));
    c.insert(
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "held", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}),
    );
    let uid = c.get("tfjobs", Some("default"), "held").unwrap()["metadata"]["uid"].clone();
    // Its pod; the operator (Installed) never deletes it, so restart keeps waiting.
    c.insert(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "held-worker-0", "namespace": "default", "labels": {
            "training.kubeflow.org/job-name": "held",
            "training.kubeflow.org/operator-name": "tfjob-controller"},
            "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "name": "held", "uid": uid, "controller": true}]},
        "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}));
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", std::env::temp_dir().join("kubectl-tfjob-e2e-home"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(["restart", "held", "-n", "default"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("to be deleted") {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        said.push_str(&line);
    }
    assert!(
        said.contains("waiting for 1 pod(s) of tfjob held"),
        "{said}"
    );
    // SAFETY: a plain syscall on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{said}{rest}");
    assert!(
        rest.contains("the job stays suspended until `kubectl tfjob resume held")
            && rest.contains("-n default`"),
        "{said}{rest}"
    );
    let stored = c.get("tfjobs", Some("default"), "held").unwrap();
    assert_eq!(stored["spec"]["runPolicy"]["suspend"], true, "{stored}");
}
