//! Issue 40 item 9, the smaller holes: each the real binary against the test cluster.

use serde_json::json;

use crate::{cluster, tfjob};

fn job(name: &str, created: &str, started: &str) -> serde_json::Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}},
        "status": {"startTime": started, "conditions": [{"type": "Created", "status": "True",
            "reason": "TFJobCreated", "message": "created",
            "lastTransitionTime": "2026-12-01T10:00:00Z"}]}})
}

/// One job with an unparsable time does not take the others' rows with it: it is listed with
/// `<invalid>` where the time goes, as kubectl shows a time it cannot use, and a warning.
#[test]
fn one_job_with_an_unparsable_time_is_listed_among_the_others() {
    let c = cluster("operator: installed\n");
    c.insert(job("good", "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z"));
    c.insert(job("bad-start", "2026-12-01T10:00:00Z", "yesterday"));
    c.insert(job("bad-created", "not-a-time", "2026-12-01T10:00:01Z"));
    for wide in [false, true] {
        let mut args = vec!["list"];
        if wide {
            args.extend(["-o", "wide"]);
        }
        let run = tfjob(&c, &args);
        run.expect_code(0);
        for name in ["good", "bad-start", "bad-created"] {
            assert!(run.stdout.contains(name), "{name} missing: {}", run.stdout);
        }
        let bad = run
            .stdout
            .lines()
            .find(|l| l.starts_with("bad-created"))
            .unwrap();
        assert!(bad.contains("<invalid>"), "{bad}");
        assert!(
            run.stderr.contains("bad-start"),
            "no warning: {}",
            run.stderr
        );
    }
}
