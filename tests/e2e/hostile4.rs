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

/// The namespace deleted under `wait --all`: said once, no diagnosis per job, exit 4 as for a
/// deleted job.
#[test]
fn a_namespace_deleted_mid_wait_is_said_once() {
    let c = cluster("");
    c.insert(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"},
        "status": {"phase": "Active"}}),
    );
    let n = 25;
    for i in 0..n {
        let mut j = job(
            &format!("tf-{i:02}"),
            "2026-12-01T10:00:00Z",
            "2026-12-01T10:00:01Z",
        );
        j["metadata"]["namespace"] = "team".into();
        j.as_object_mut().unwrap().remove("status");
        c.insert(j);
    }
    c.clear_requests();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .env("HOME", std::env::temp_dir().join("kubectl-tfjob-e2e-home"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args([
            "wait",
            "--all",
            "-n",
            "team",
            "--for",
            "succeeded",
            "--timeout",
            "2m",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Every job's wait has its watch open.
    let watching = c.wait_for(std::time::Duration::from_secs(60), |c| {
        c.arrived()
            .iter()
            .filter(|r| r.verb == "watch" && r.resource == "tfjobs")
            .count()
            >= n
    });
    c.delete("namespaces", None, "team");
    let out = child.wait_with_output().unwrap();
    assert!(watching, "the waits never started");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(
        stderr
            .matches("namespace team was deleted while waiting")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("its 25 TFJobs went with it"), "{stderr}");
    assert!(!stderr.contains("Diagnosis"), "{stderr}");
    // Besides the jobs' progress lines (as many as their pods made progress before the
    // namespace went, which depends on the machine's load), the deletion is a line or two.
    let other = stderr
        .lines()
        .filter(|l| !l.starts_with("tfjob/") && !l.trim().is_empty())
        .count();
    assert!(other <= 3, "{other} lines besides progress:\n{stderr}");
}

/// `--local-queue ''` (and `--queue ''`) was dropped without a word: the job went to no queue.
#[test]
fn an_empty_queue_name_is_refused_naming_the_flag() {
    for flag in ["--local-queue", "--queue"] {
        for value in ["", " "] {
            // Before the article's flags: they end with `-- COMMAND`.
            let mut a = vec!["render", flag, value];
            a.extend_from_slice(crate::submit::ARTICLE);
            let run = crate::Cli::new(None, &a).run();
            run.expect_code(2);
            assert!(
                run.stderr.contains(flag),
                "{flag} {value:?}: {}",
                run.stderr
            );
            assert!(run.stderr.contains("cannot be empty"), "{}", run.stderr);
            assert!(run.stdout.is_empty(), "{}", run.stdout);
        }
    }
}
