//! `wait` for several jobs (names, `-l`, `--all`) through the real binary: each job reported on
//! stdout, the first failing job's exit code, kubectl's errors for no match and mixed targets.

use serde_json::{Value, json};

use crate::{cluster, tfjob};

fn job(name: &str, team: &str, restart: &str) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": name, "namespace": "default", "labels": {"team": team}},
           "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": restart,
               "template": {"spec": {"containers": [
                   {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}})
}

fn sorted_lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort();
    v
}

#[test]
fn wait_follows_every_job_and_fails_with_the_first_failures_code() {
    // `bad` exits 1 under restartPolicy Never: the operator marks it Failed.
    let c = cluster(
        "succeedAfterMs: 300\ncontainerBehaviour:\n- match: {podName: \"bad-worker-0\"}\n  exitCode: 1\n  runMs: 100\n",
    );
    c.insert(job("good-1", "nlp", "OnFailure"));
    c.insert(job("good-2", "nlp", "OnFailure"));
    c.insert(job("bad", "nlp", "Never"));
    c.insert(job("other", "vision", "OnFailure"));

    let run = tfjob(
        &c,
        &[
            "wait",
            "good-1",
            "tfjob/good-2",
            "--for",
            "finished",
            "--timeout",
            "60s",
        ],
    );
    run.expect_code(0);
    assert_eq!(
        sorted_lines(&run.stdout),
        [
            "tfjob.kubeflow.org/good-1 condition met (Succeeded)",
            "tfjob.kubeflow.org/good-2 condition met (Succeeded)"
        ],
        "{}",
        run.stderr
    );

    // The selector takes bad, good-1 and good-2 (not other): the good ones are reported, bad
    // fails the command with the failed job's code.
    let run = tfjob(
        &c,
        &[
            "wait",
            "-l",
            "team=nlp",
            "--for",
            "finished",
            "--timeout",
            "60s",
        ],
    );
    run.expect_code(4);
    assert_eq!(
        sorted_lines(&run.stdout)
            .iter()
            .filter(|l| l.contains("condition met"))
            .count(),
        2,
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("other"), "{}", run.stdout);
    assert!(run.stderr.contains("bad"), "{}", run.stderr);

    let run = tfjob(
        &c,
        &["wait", "--all", "--for", "finished", "--timeout", "60s"],
    );
    run.expect_code(4);
    assert!(
        run.stdout
            .contains("tfjob.kubeflow.org/other condition met"),
        "{}",
        run.stdout
    );

    let run = tfjob(&c, &["wait", "-l", "team=none", "--timeout", "5s"]);
    run.expect_code(3);
    assert!(
        run.stderr.contains("no matching resources found"),
        "{}",
        run.stderr
    );
    let run = tfjob(&c, &["wait", "good-1", "-l", "team=nlp"]);
    run.expect_code(2);
    let run = tfjob(&c, &["wait"]);
    run.expect_code(2);
    // A missing job among several is reported like a missing single job (exit 3).
    let run = tfjob(
        &c,
        &[
            "wait",
            "good-1",
            "nope",
            "--for",
            "finished",
            "--timeout",
            "60s",
        ],
    );
    run.expect_code(3);
    assert!(
        run.stdout.contains("good-1 condition met"),
        "{}",
        run.stdout
    );
}
