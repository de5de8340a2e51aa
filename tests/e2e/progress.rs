//! Is it training? (issue 49) Progress per replica, read by `diagnose` from the log lines it
//! already reads, through the real binary against the test cluster's kubelet logs.

use serde_json::json;
use tfjob_testcluster::{Scenario, TestCluster};

use crate::tfjob;

fn running_job(c: &TestCluster, name: &str, workers: i64) {
    c.insert(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}));
    assert!(
        c.wait_for(std::time::Duration::from_secs(30), |c| {
            (0..workers).all(|i| {
                c.get("pods", Some("default"), &format!("{name}-worker-{i}"))
                    .is_some_and(|p| {
                        p["status"]["containerStatuses"][0]["state"]["running"].is_object()
                    })
            })
        }),
        "the workers never ran"
    );
}

#[test]
fn diagnose_shows_each_replicas_step_loss_and_epoch_from_its_log() {
    let c = TestCluster::start(Scenario::default());
    running_job(&c, "prog", 3);
    // Keras on worker-0, the Estimator on worker-1, a custom loop on worker-2.
    c.append_log(
        "default",
        "prog-worker-0",
        "tensorflow",
        "Epoch 2/10\n120/500 [====>.....] - ETA: 9s - loss: 0.4123",
    );
    c.append_log(
        "default",
        "prog-worker-1",
        "tensorflow",
        "INFO:tensorflow:global_step/sec: 12.5\nINFO:tensorflow:loss = 0.123, step = 225 (10.0 sec)",
    );
    c.append_log(
        "default",
        "prog-worker-2",
        "tensorflow",
        "step: 300/1000 epoch 2/4 loss=0.3",
    );
    let run = tfjob(&c, &["diagnose", "prog"]);
    let text = &run.stdout;
    assert!(text.contains("\nProgress:\n"), "{text}");
    assert!(
        text.contains("  Worker-0: step 620/5,000, epoch 2/10, loss 0.4123\n"),
        "{text}"
    );
    assert!(
        text.contains("  Worker-1: step 225 (12.5/s), loss 0.123\n"),
        "{text}"
    );
    assert!(
        text.contains("  Worker-2: step 300/1,000, epoch 2/4, loss 0.3\n"),
        "{text}"
    );
    // Nothing has stalled: the lines are seconds old.
    assert!(!text.contains("no step for"), "{text}");

    // list -o wide: where the first worker is, one cell per job.
    let list = tfjob(&c, &["list", "-o", "wide"]);
    list.expect_code(0);
    assert!(
        list.stdout
            .lines()
            .next()
            .unwrap_or_default()
            .contains("NODES    PROGRESS"),
        "{}",
        list.stdout
    );
    assert!(
        list.stdout.contains("Worker-0 step 620/5,000"),
        "{}",
        list.stdout
    );
    // get says the same (issue 49), one line per worker.
    let get = tfjob(&c, &["get", "prog"]);
    get.expect_code(0);
    assert!(
        get.stdout.contains(
            "Progress:   Worker-0 step 620/5,000, epoch 2/10, loss 0.4123\n            Worker-1 step 225 (12.5/s), loss 0.123\n            Worker-2 step 300/1,000, epoch 2/4, loss 0.3\n"
        ),
        "{}",
        get.stdout
    );

    let run = tfjob(&c, &["diagnose", "prog", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["progress"].as_array().map(Vec::len), Some(3), "{v:#}");

    // The user's own shape, and a pattern that names no step is refused before any request.
    c.append_log("default", "prog-worker-2", "tensorflow", "it=7 of 9");
    let run = tfjob(
        &c,
        &[
            "diagnose",
            "prog",
            "--progress-pattern",
            r"it=(?P<step>\d+) of (?P<total>\d+)",
        ],
    );
    assert!(
        run.stdout.contains("  Worker-2: step 7/9\n"),
        "{}",
        run.stdout
    );
    let run = tfjob(&c, &["diagnose", "prog", "--progress-pattern", r"it=(\d+)"]);
    run.expect_code(2);
    run.stderr_has("has no group named step");
}

/// Issue 48 item 10: `diagnose -o yaml`, as kubectl users reach for it: the same report as
/// `-o json`, in YAML.
#[test]
fn diagnose_prints_its_report_as_yaml_too() {
    let c = TestCluster::start(Scenario::default());
    running_job(&c, "yml", 1);
    let run = tfjob(&c, &["diagnose", "yml", "-o", "yaml"]);
    run.expect_code(0);
    let v: serde_json::Value = serde_saphyr::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not YAML ({e}):\n{}", run.stdout));
    assert_eq!(v["job"], "yml", "{v:#}");
    assert_eq!(v["namespace"], "default", "{v:#}");
    assert!(
        v["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "{v:#}"
    );
}
