//! The placement pre-flight end to end: `check`, `submit`'s gate, and `wait`/`diagnose` on
//! Unschedulable pods, against the test cluster's scheduler (which implements the same filters).

use std::time::Duration;

use crate::submit::{SECRET, article_args, submit_args};
use crate::{cluster, tfjob};

/// One node with one GPU: the article's 3 one-GPU workers can never run there at once.
const ONE_GPU: &str = r#"
nodes: [{name: node-a, cpu: "16", memory: 64Gi, gpu: 1}]
"#;

fn check_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    article_args("check", extra)
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

#[test]
fn submit_wait_refuses_the_article_job_on_a_one_gpu_cluster_before_any_write() {
    let c = cluster(&format!("{ONE_GPU}objects:{SECRET}"));
    let run = tfjob(&c, &submit_args(&["--wait", "--timeout", "5m"]));
    run.expect_code(4);
    assert!(run.stderr.contains("nvidia.com/gpu"), "{}", run.stderr);
    assert!(run.stderr.contains("Nothing was created"), "{}", run.stderr);
    assert!(
        run.stderr.contains("--skip-capacity-check"),
        "{}",
        run.stderr
    );
    assert!(c.writes().is_empty(), "the refusal wrote: {:?}", c.writes());
    // Not even a server dry run of the job was sent.
    assert!(
        !c.requests()
            .iter()
            .any(|r| r.resource == "tfjobs" && r.verb == "create"),
        "a create (even a dry run) was sent"
    );
}

#[test]
fn with_enough_gpus_the_article_job_is_created() {
    let c = cluster(&format!(
        "nodes: [{{name: a, cpu: '16', memory: 64Gi, gpu: 1}}, {{name: b, cpu: '16', memory: 64Gi, gpu: 1}}, {{name: c, cpu: '16', memory: 64Gi, gpu: 1}}]\nobjects:{SECRET}"
    ));
    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(0);
    assert_eq!(
        run.stdout.trim(),
        "tfjob.kubeflow.org/tf-dist-train created"
    );
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn skip_capacity_check_creates_it_anyway() {
    let c = cluster(&format!("{ONE_GPU}objects:{SECRET}"));
    let run = tfjob(&c, &submit_args(&["--skip-capacity-check"]));
    run.expect_code(0);
    assert_eq!(
        c.writes()
            .iter()
            .filter(|r| r.verb == "create" && r.resource == "tfjobs")
            .count(),
        1
    );
}

#[test]
fn an_autoscaler_downgrades_never_to_a_warning() {
    let c = cluster(&format!(
        "{ONE_GPU}namespaces: [default, kubeflow, kube-system]\nobjects:{SECRET}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {{name: cluster-autoscaler-status, namespace: kube-system}}
    data: {{status: 'Cluster-wide: Health: Healthy'}}
"
    ));
    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(0);
    assert!(run.stderr.contains("nodes may be added"), "{}", run.stderr);
    assert!(run.stderr.contains("nvidia.com/gpu"), "{}", run.stderr);
}

/// Issue 47 item 11: a status ConfigMap an uninstalled autoscaler left behind (dated 2019,
/// Unhealthy, no node groups) is no autoscaler: the job is refused before any write.
#[test]
fn a_status_config_map_left_behind_in_2019_is_no_autoscaler() {
    let c = cluster(&format!(
        "{ONE_GPU}namespaces: [default, kubeflow, kube-system]\nobjects:{SECRET}
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cluster-autoscaler-status
      namespace: kube-system
      annotations: {{cluster-autoscaler.kubernetes.io/last-updated: '2019-05-22 12:59:38.41 +0000 UTC'}}
    data: {{status: \"Cluster-autoscaler status at 2019-05-22 12:59:38.41 +0000 UTC:\\nCluster-wide:\\n  Health: Unhealthy (ready=0 unready=3)\\n\\nNodeGroups:\\n\"}}
"
    ));
    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(4);
    run.stderr_has("can never run on this cluster as it is");
    run.stderr_has("kube-system/cluster-autoscaler-status exists, but its status was last updated 2019-05-22 12:59:38.41 +0000 UTC");
    run.stderr_has("so no cluster-autoscaler is running. Nothing was created.");
    assert!(!run.stderr.contains("nodes may be added"), "{}", run.stderr);
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    let check = tfjob(&c, &check_args(&[]));
    check.expect_code(4);
}

#[test]
fn server_dry_run_shows_the_verdict() {
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(&c, &submit_args(&["--dry-run=server"]));
    run.expect_code(0);
    assert!(run.stderr.contains("pre-flight: fits"), "{}", run.stderr);
    assert!(c.writes().is_empty(), "{:?}", c.writes());
}

#[test]
fn check_json_on_a_one_gpu_cluster_is_never_with_every_pod_and_no_write() {
    let c = cluster(&format!("{ONE_GPU}objects:{SECRET}"));
    let run = tfjob(&c, &check_args(&["-o", "json"]));
    run.expect_code(4);
    let r = json(&run.stdout);
    assert_eq!(r["placement"]["verdict"], "never");
    assert!(
        r["placement"]["reason"]
            .as_str()
            .unwrap()
            .contains("nvidia.com/gpu"),
        "{r:#}"
    );
    let pods = r["placement"]["pods"].as_array().unwrap();
    let names: Vec<&str> = pods.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "tf-dist-train-ps-0",
            "tf-dist-train-worker-0",
            "tf-dist-train-worker-1",
            "tf-dist-train-worker-2"
        ]
    );
    for p in pods {
        for key in ["replicaType", "index", "node", "verdict", "reason"] {
            assert!(p.get(key).is_some(), "pod without {key}: {p}");
        }
    }
    assert_eq!(r["readiness"], serde_json::json!([]));
    assert!(r["quota"].is_array() && r["references"].is_array());
    assert!(c.writes().is_empty(), "{:?}", c.writes());
}

#[test]
fn check_text_on_a_fitting_cluster_reports_each_layer_and_exits_0() {
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(&c, &check_args(&[]));
    run.expect_code(0);
    for section in [
        "Readiness\n  [OK]",
        "Placement: fits",
        "Quota and admission",
        "References",
        "Verdict: fits",
    ] {
        assert!(run.stdout.contains(section), "{section:?}:\n{}", run.stdout);
    }
    assert!(c.writes().is_empty(), "{:?}", c.writes());
}

#[test]
fn check_exits_3_when_the_cluster_is_not_ready_and_still_reports() {
    // No Secret for the gateway key: submit would stop with exit 3.
    let c = cluster("");
    let run = tfjob(&c, &check_args(&["-o", "json"]));
    run.expect_code(3);
    let r = json(&run.stdout);
    assert_eq!(r["readiness"][0]["severity"], "error");
    assert!(
        r["readiness"][0]["message"]
            .as_str()
            .unwrap()
            .contains("taotoken-secret"),
        "{r:#}"
    );
    // Issue 22: the Secret is needed only for the env this tool adds; the hint says so.
    assert!(
        r["readiness"][0]["hint"]
            .as_str()
            .unwrap()
            .contains("--no-api-env"),
        "{r:#}"
    );
    assert_eq!(r["placement"]["verdict"], "fits");
}

#[test]
fn without_permission_to_list_nodes_the_verdict_is_unknown_and_nothing_blocks() {
    let deny = "rbac: {deny: [{verb: list, resource: nodes}]}\n";
    let c = cluster(&format!("{ONE_GPU}{deny}objects:{SECRET}"));
    let run = tfjob(&c, &check_args(&["-o", "json"]));
    run.expect_code(0);
    let r = json(&run.stdout);
    assert_eq!(r["placement"]["verdict"], "unknown");
    assert!(run.stderr.contains("list nodes"), "{}", run.stderr);

    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(0);
    assert!(run.stderr.contains("list nodes"), "{}", run.stderr);
}

#[test]
fn a_job_held_back_by_running_pods_waits_with_a_warning_and_is_created() {
    let c = cluster(&format!(
        "{ONE_GPU}objects:{SECRET}
  - apiVersion: v1
    kind: Pod
    metadata: {{name: holder, namespace: default}}
    spec:
      nodeName: node-a
      containers: [{{name: main, image: busybox, resources: {{limits: {{nvidia.com/gpu: '1'}}}}}}]
"
    ));
    let one_worker = [
        "--name",
        "small",
        "--image",
        "tensorflow/tensorflow:2.13.0-gpu",
        "--workers",
        "1",
        "--gpus",
        "1",
        "--",
        "python",
        "t.py",
    ];
    let mut args = vec!["check"];
    args.extend_from_slice(&one_worker);
    let run = tfjob(&c, &args);
    run.expect_code(0);
    assert!(run.stdout.contains("Placement: waits"), "{}", run.stdout);
    assert!(run.stderr.contains("warning:"), "{}", run.stderr);
    assert!(run.stderr.contains("nvidia.com/gpu"), "{}", run.stderr);

    let mut args = vec!["submit"];
    args.extend_from_slice(&one_worker);
    let run = tfjob(&c, &args);
    run.expect_code(0);
    assert!(
        run.stderr.contains("would wait for capacity"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout.trim(), "tfjob.kubeflow.org/small created");
}

/// A job created anyway (here straight into the store) whose workers are Unschedulable: `wait`
/// asks the model and fails fast with its reason; `diagnose` carries the same verdict.
#[test]
fn wait_and_diagnose_use_the_model_on_unschedulable_pods() {
    let c = cluster(&format!("{ONE_GPU}objects:{SECRET}"));
    let run = tfjob(&c, &submit_args(&["--skip-capacity-check"]));
    run.expect_code(0);
    let scheduled_out = c.wait_for(Duration::from_secs(30), |c| {
        c.list("pods", Some("default")).iter().any(|p| {
            p["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["reason"] == "Unschedulable"))
        })
    });
    assert!(
        scheduled_out,
        "the test cluster never marked a pod Unschedulable"
    );

    let run = tfjob(
        &c,
        &[
            "wait",
            "tf-dist-train",
            "--for",
            "all-running",
            "--timeout",
            "5m",
        ],
    );
    run.expect_code(4);
    assert!(
        run.stderr
            .contains("can never be scheduled on this cluster"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nvidia.com/gpu"), "{}", run.stderr);

    let run = tfjob(&c, &["diagnose", "tf-dist-train"]);
    assert!(
        run.stdout
            .contains("the job can never run on this cluster as it is"),
        "{}",
        run.stdout
    );
}

/// Issue 22 item 4: every object whose absence leaves the pods stuck is judged alike — a
/// missing ServiceAccount (admission refuses the pods), PVC (Pending), ConfigMap volume or
/// Secret volume (FailedMount). `submit` refuses before the first write, `check` reports them
/// as readiness errors; `--allow-missing-refs` is the override for objects made later.
#[test]
fn missing_objects_the_pods_need_stop_submit_and_check_until_allowed() {
    let c = cluster(&format!("objects:{SECRET}"));
    let refs = [
        "--service-account",
        "trainer",
        "--pvc",
        "datasets:/data",
        "--config-map",
        "train-config:/etc/train",
        "--secret-volume",
        "certs:/etc/certs",
    ];
    let run = tfjob(&c, &submit_args(&refs));
    run.expect_code(3);
    for (kind, name, fix) in [
        (
            "ServiceAccount",
            "trainer",
            "kubectl create serviceaccount trainer -n default",
        ),
        (
            "PersistentVolumeClaim",
            "datasets",
            "a PersistentVolumeClaim named datasets",
        ),
        (
            "ConfigMap",
            "train-config",
            "kubectl create configmap train-config -n default",
        ),
        (
            "Secret",
            "certs",
            "kubectl create secret generic certs -n default",
        ),
    ] {
        assert!(
            run.stderr.contains(&format!("{kind} default/{name}")),
            "{kind}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(fix), "{fix}: {}", run.stderr);
    }
    assert!(
        run.stderr.contains("--allow-missing-refs"),
        "{}",
        run.stderr
    );
    assert!(c.writes().is_empty(), "writes: {:?}", c.writes());

    let mut args = refs.to_vec();
    args.extend(["-o", "json"]);
    let run = tfjob(&c, &check_args(&args));
    run.expect_code(3);
    let r = json(&run.stdout);
    let errors: Vec<&str> = r["readiness"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(
        errors
            .iter()
            .any(|m| m.contains("PersistentVolumeClaim default/datasets")),
        "{errors:?}"
    );
    assert_ne!(r["placement"]["verdict"], "waits", "{r:#}");

    // Created after the job on purpose: warnings only, and the job is created.
    let mut args = refs.to_vec();
    args.push("--allow-missing-refs");
    tfjob(&c, &check_args(&args)).expect_code(0);
    let run = tfjob(&c, &submit_args(&args));
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("warning: ServiceAccount default/trainer"),
        "{}",
        run.stderr
    );
    assert_eq!(c.list("tfjobs", Some("default")).len(), 1);
}

#[test]
fn a_node_selector_no_node_matches_names_the_selector_not_capacity() {
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(&c, &check_args(&["--node-selector", "pool=gpu"]));
    run.expect_code(4);
    assert!(
        run.stderr
            .contains("No node matches nodeSelector pool=gpu (PS, Worker)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("kubectl label node NODE pool=gpu"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("add capacity"), "{}", run.stderr);
    // The job created anyway: wait asks the same model and gives the same hint.
    tfjob(
        &c,
        &submit_args(&["--node-selector", "pool=gpu", "--skip-capacity-check"]),
    )
    .expect_code(0);
    let run = tfjob(&c, &["wait", "tf-dist-train", "--timeout", "2m"]);
    run.expect_code(4);
    assert!(
        run.stderr.contains("No node matches nodeSelector pool=gpu"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("add capacity"), "{}", run.stderr);
}

/// Issue 47 item 10: quantities too large for i128 milli-units were dropped as "nothing" and
/// the job fitted everywhere. `cpu: 1e36`, and a RuntimeClass overhead of
/// `99999999999999999999Ei` (the API server caps it at 2^63-1), are more than any node has:
/// never, with the scheduler's words, and nothing written.
#[test]
fn a_quantity_beyond_i128_is_more_than_any_node_not_nothing() {
    let c = cluster(
        "nodes: [{name: a, cpu: '4', memory: 16Gi, gpu: 0}]\n\
         objects:\n- {apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: huge}, handler: runc, overhead: {podFixed: {cpu: '99999999999999999999Ei'}}}\n",
    );
    let job = |cpu: &str, class: &str| {
        format!(
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: big\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n        spec:\n{class}          containers:\n          - name: tensorflow\n            image: tensorflow/tensorflow:2.13.0\n            resources: {{requests: {{cpu: '{cpu}'}}}}\n"
        )
    };
    for (cpu, class) in [("1e36", ""), ("1", "          runtimeClassName: huge\n")] {
        let (_dir, path) = crate::manifest_file(&job(cpu, class));
        let run = tfjob(&c, &["check", "-f", path.to_str().unwrap(), "-o", "json"]);
        run.expect_code(4);
        let r = json(&run.stdout);
        assert_eq!(r["placement"]["verdict"], "never", "{cpu} {class}: {r:#}");
        let reason = r["placement"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("Insufficient cpu"),
            "{cpu} {class}: {reason}"
        );
    }
    // The same job with a real request fits: the refusal is the quantity's.
    let (_dir, path) = crate::manifest_file(&job("1", ""));
    tfjob(&c, &["check", "-f", path.to_str().unwrap()]).expect_code(0);
    assert!(c.writes().is_empty(), "{:?}", c.writes());
}

/// Issue 61 item 3: `submit --dry-run=server` of a job the placement model says can never
/// run reaches the API server, as `kubectl create --dry-run=server` does: the admission answer
/// is the result, and the placement verdict a warning. Nothing is stored.
#[test]
fn a_server_dry_run_of_a_job_that_never_fits_reaches_the_server_with_a_warning() {
    let c = cluster(&format!("{ONE_GPU}objects:{SECRET}"));
    c.clear_requests();
    let run = tfjob(&c, &submit_args(&["--dry-run=server"]));
    run.expect_code(0);
    run.stdout_has("created (server dry run)");
    run.stderr_has("warning: ");
    run.stderr_has("can never run on this cluster as it is");
    run.stderr_has("the server dry run goes on");
    assert!(
        c.requests()
            .iter()
            .any(|r| r.verb == "create" && r.resource == "tfjobs" && r.dry_run),
        "the dry run never reached the server"
    );
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    // Without --dry-run it is refused as before.
    tfjob(&c, &submit_args(&[])).expect_code(4);
}
