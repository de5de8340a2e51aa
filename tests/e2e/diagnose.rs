//! `diagnose` end to end (issue 59: tests by command): the report's layers and its JSON, a
//! healthy and a broken job, and whether it is training (issue 49: progress per replica, read
//! from the log lines it already reads). The cases every verb must tell alike are
//! [`crate::one_story`]'s; a diagnosis as part of another verb stays with that verb.

use serde_json::json;
use tfjob_testcluster::{Scenario, TestCluster};

use crate::wait::submitted;
use crate::{args, cluster, tfjob};

fn running_job(c: &TestCluster, name: &str, workers: i64) {
    c.insert(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}));
    crate::until_workers_run(c, name, workers);
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

#[test]
fn diagnose_reports_healthy_and_broken_jobs_in_text_and_json() {
    // Healthy includes a gateway that takes the pods' key: diagnose looks inside the pods.
    let c = submitted(&format!("gatewayKey: {}", crate::TEST_KEY));
    tfjob(
        &c,
        &args("wait tf-dist-train --for all-running --timeout 30s"),
    )
    .expect_code(0);
    let run = tfjob(&c, &args("diagnose tf-dist-train"));
    run.exit(0);
    run.stdout_has("[ok]   CRD");
    run.stdout_has("4/4 pods, 4/4 services");

    let c = submitted("missingImages: ['tensorflow/tensorflow:2.13.0-gpu']");
    assert!(c.wait_for(std::time::Duration::from_secs(10), |c| {
        c.list("pods", Some("default")).iter().any(|p| {
            p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
        })
    }));
    let run = tfjob(&c, &args("diagnose tf-dist-train -o json"));
    run.exit(4);
    let diagnosis: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let runtime = diagnosis["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["layer"] == "runtime")
        .unwrap();
    assert_eq!(runtime["verdict"], "fail");
    assert!(
        runtime
            .to_string()
            .contains("tensorflow/tensorflow:2.13.0-gpu"),
        "{runtime}"
    );

    let run = tfjob(&c, &args("diagnose nope"));
    run.exit(3);
    run.stderr_has("kubectl get tfjobs -n default");
}

/// `diagnose`: every row names its layer, and `-o json` speaks camelCase with pod counts as
/// numbers, as `check -o json` and kubectl do.
#[test]
fn diagnose_names_every_rows_layer_and_its_json_is_camel_case() {
    let c = cluster("");
    // A job the operator failed: the controller row is ok, the job's failure is another row.
    c.insert(
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "tensorflow",
                "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}),
    );
    let mut pods = 0;
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        pods = c.list("pods", Some("default")).len();
        pods == 2
    }));
    c.exit_container("default", "bad-worker-0", "tensorflow", 1);
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        c.get("tfjobs", Some("default"), "bad").is_some_and(|j| {
            j["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|x| x["type"] == "Failed" && x["status"] == "True")
            })
        })
    }));
    let run = tfjob(&c, &["diagnose", "bad"]);
    for line in run.stdout.lines().filter(|l| l.starts_with('[')) {
        let label = line[7..].split_whitespace().next().unwrap_or("");
        assert!(
            [
                "CRD",
                "Controller",
                "Queue",
                "Objects",
                "Scheduling",
                "Runtime"
            ]
            .contains(&label),
            "a row without its layer: {line:?}\n{}",
            run.stdout
        );
    }
    let run = tfjob(&c, &["diagnose", "bad", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    out.push(k.clone());
                    keys(x, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    keys(&v, &mut all);
    assert!(
        all.iter().all(|k| !k.contains('_')),
        "snake_case keys: {all:?}"
    );
    assert!(all.iter().any(|k| k == "nextStep"), "{all:?}");
    assert!(v["pods"].is_object(), "{}", v["pods"]);
    let total: u64 = v["pods"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(total, 2, "{}", v["pods"]);
}
