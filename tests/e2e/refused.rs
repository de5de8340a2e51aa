//! Issue 22 items 3 and 4, the wait/diagnose side: pods the API server refuses to the operator
//! (its `FailedCreatePod` events on the TFJob, kubeflow/common
//! `pkg/controller.v1/control/pod_control.go` `createPods`) are the controller-layer failure,
//! said by `wait` and `diagnose` alike: a missing ServiceAccount is an object missing (exit 3,
//! how to create it), any other refusal a job that will not run (exit 4).

use crate::submit::{SECRET, submit_args};
use crate::{cluster, stored, tfjob};

#[test]
fn a_missing_service_account_is_named_first_by_wait_and_diagnose_and_the_pods_follow_it() {
    let c = cluster(&format!("objects:{SECRET}"));
    // Created on purpose before its ServiceAccount.
    tfjob(
        &c,
        &submit_args(&[
            "--service-account",
            "trainer",
            "--allow-missing-refs",
            "--skip-capacity-check",
        ]),
    )
    .expect_code(0);
    let run = tfjob(&c, &["wait", "tf-dist-train", "--timeout", "60s"]);
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("the operator cannot create pod tf-dist-train-"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "error looking up service account default/trainer: serviceaccount \"trainer\" not found"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("kubectl create serviceaccount trainer -n default"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("capacity"), "{}", run.stderr);
    // One bounded read of the job's own refusals, by field selector.
    let reads: Vec<String> = c
        .requests()
        .iter()
        .filter(|r| r.resource == "events")
        .map(|r| r.query.clone())
        .collect();
    assert!(!reads.is_empty());
    for q in &reads {
        assert!(
            q.contains("involvedObject.uid")
                && q.contains("FailedCreatePod")
                && q.contains("limit="),
            "{q}"
        );
    }

    let run = tfjob(&c, &["diagnose", "tf-dist-train"]);
    run.expect_code(3);
    let controller = run
        .stdout
        .lines()
        .position(|l| l.starts_with("[FAIL]") && l.contains("the operator cannot create pods"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        run.stdout
            .contains("kubectl create serviceaccount trainer -n default"),
        "{}",
        run.stdout
    );
    // The first failure: nothing before it fails, in the Controller layer.
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[..controller].iter().all(|l| !l.starts_with("[FAIL]")),
        "{}",
        run.stdout
    );
    assert!(
        lines[..controller]
            .iter()
            .rev()
            .find(|l| l.starts_with('['))
            .is_some_and(|l| l.contains("Controller")),
        "{}",
        run.stdout
    );

    // The operator retries its creates: once the account exists, the job runs.
    c.insert(serde_json::json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "trainer", "namespace": "default"}
    }));
    tfjob(&c, &["wait", "tf-dist-train", "--timeout", "60s"]).expect_code(0);
}

#[test]
fn a_pod_the_api_server_refuses_ends_wait_and_diagnose_with_4_naming_the_replica() {
    // The CRD's schema leaves pod fields to the Pod's validation: the TFJob is stored, each
    // worker pod is refused (`Unsupported value` for imagePullPolicy). The refusal is the
    // scenario's, in kube-apiserver's words (validation.go `validatePullPolicy`); tests/real
    // has the real server refuse the same pods.
    let c = cluster(&format!(
        "refusals:
- name: tf-dist-train-worker-
  causes:
  - field: spec.containers[0].imagePullPolicy
    message: 'Unsupported value: \"IfNotPresnt\": supported values: \"Always\", \"IfNotPresent\", \"Never\"'
objects:{SECRET}"
    ));
    stored(&c, |job| {
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["imagePullPolicy"] =
            "IfNotPresnt".into();
    });
    let run = tfjob(
        &c,
        &[
            "wait",
            "tf-dist-train",
            "--for",
            "succeeded",
            "--timeout",
            "60s",
        ],
    );
    run.expect_code(4);
    assert!(
        run.stderr
            .contains("the operator cannot create pod tf-dist-train-worker-"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("IfNotPresnt"), "{}", run.stderr);
    assert!(run.stderr.contains("will not run"), "{}", run.stderr);
    assert!(!run.stderr.contains("timed out"), "{}", run.stderr);

    let run = tfjob(&c, &["diagnose", "tf-dist-train", "-o", "json"]);
    run.expect_code(4);
    let d: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let first = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["verdict"] == "fail")
        .unwrap();
    assert_eq!(first["layer"], "controller", "{d:#}");
    assert!(
        first["summary"].as_str().unwrap().contains("IfNotPresnt"),
        "{first}"
    );
    assert!(
        first["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.as_str().unwrap().contains("-worker-")),
        "{first}"
    );
}

/// Item 4: a job created anyway (`--allow-missing-refs`) whose pods wait for a claim, a
/// ConfigMap volume or a Secret volume that does not exist: `wait` and `diagnose` name that
/// object first, with how to create it (exit 3, an object missing), not capacity.
#[test]
fn pods_waiting_for_a_missing_object_are_told_the_object_and_how_to_create_it() {
    for (flags, kind, name, fix) in [
        (
            ["--pvc", "datasets:/data"],
            "PersistentVolumeClaim",
            "datasets",
            "a PersistentVolumeClaim named datasets",
        ),
        (
            ["--config-map", "train-config:/etc/train"],
            "ConfigMap",
            "train-config",
            "kubectl create configmap train-config -n default",
        ),
        (
            ["--secret-volume", "certs:/etc/certs"],
            "Secret",
            "certs",
            "kubectl create secret generic certs -n default",
        ),
    ] {
        let c = cluster(&format!("objects:{SECRET}"));
        let mut args = flags.to_vec();
        args.extend(["--allow-missing-refs", "--skip-capacity-check"]);
        tfjob(&c, &submit_args(&args)).expect_code(0);
        let run = tfjob(&c, &["wait", "tf-dist-train", "--timeout", "60s"]);
        run.expect_code(3);
        let said = format!("{kind} default/{name} is missing");
        assert!(run.stderr.contains(&said), "{kind}: {}", run.stderr);
        assert!(run.stderr.contains(fix), "{kind}: {}", run.stderr);
        assert!(!run.stderr.contains("capacity"), "{kind}: {}", run.stderr);
        assert!(!run.stderr.contains("timed out"), "{kind}: {}", run.stderr);

        let run = tfjob(&c, &["diagnose", "tf-dist-train", "-o", "json"]);
        run.expect_code(3);
        let d: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let first = d["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["verdict"] == "fail")
            .unwrap();
        assert_eq!(first["layer"], "objects", "{kind}: {d:#}");
        assert!(
            first["summary"].as_str().unwrap().contains(&said),
            "{kind}: {first}"
        );
        assert!(
            first["nextStep"].as_str().unwrap().contains(fix),
            "{kind}: {first}"
        );
    }
}

/// Item 6 for `diagnose`: the verdict first. On a cluster whose kubelets cannot serve logs (the
/// API server answers 500), a failed job is reported with each log read once, and the
/// kubelet's failure said as such; `--timeout` bounds the whole command.
#[test]
fn diagnose_reports_a_failed_job_when_no_log_can_be_read_and_keeps_to_its_timeout() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 100\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--restart-policy", "Never"])).expect_code(0);
    // Settled for good: the operator marks the job Failed (nothing restarts the pod).
    assert!(c.wait_for(std::time::Duration::from_secs(60), |c| {
        c.get("tfjobs", Some("default"), "tf-dist-train")
            .and_then(|j| j["status"]["conditions"].as_array().cloned())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Failed" && c["status"] == "True")
            })
    }));
    c.set_faults(vec![tfjob_testcluster::Fault::kubelet_logs_unavailable()]);
    c.clear_requests();
    let run = tfjob(&c, &["diagnose", "tf-dist-train", "--timeout", "30s"]);
    run.expect_code(4);
    assert!(
        run.stdout
            .contains("the kubelet could not serve the log of pod tf-dist-train-worker-1"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("job Failed"), "{}", run.stdout);
    // One attempt per excerpt: never retried.
    let log_reads = c
        .requests()
        .iter()
        .filter(|r| r.subresource == "log")
        .count();
    assert!(
        (1..=3).contains(&log_reads),
        "{log_reads} log reads:\n{}",
        run.stdout
    );

    // A read that does not answer: the deadline, not the read, ends the command.
    c.set_faults(vec![
        tfjob_testcluster::Fault::on("list", "events")
            .latency_ms(60_000)
            .times(0),
    ]);
    let run = tfjob(&c, &["diagnose", "tf-dist-train", "--timeout", "3s"]);
    run.expect_code(5);
    assert!(
        run.stderr
            .contains("timed out after 3s diagnosing TFJob default/tf-dist-train"),
        "{}",
        run.stderr
    );
}
