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
