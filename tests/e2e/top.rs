//! `top` through the real binary against the test cluster's metrics.k8s.io (metrics.rs there:
//! a container uses a quarter of its CPU request and half of its memory request). Crafted states
//! (operator installed, reconciling nothing) so nothing changes while the test reads.

use serde_json::{Value, json};

use crate::{cluster, tfjob};

fn job(name: &str, ns: &str, team: &str) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": name, "namespace": ns, "labels": {"team": team}},
           "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "OnFailure",
               "template": {"spec": {"containers": [
                   {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}})
}

fn pod(job: &str, ns: &str, rtype: &str, index: u32, phase: &str, node: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0",
        "resources": {"requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
                      "limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}}}]});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{job}-{rtype}-{index}"), "namespace": ns, "labels": {
            "training.kubeflow.org/job-name": job, "training.kubeflow.org/operator-name": "tfjob-controller",
            "training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": index.to_string()}},
        "spec": spec, "status": {"phase": phase}})
}

fn setup(scenario: &str) -> tfjob_testcluster::TestCluster {
    let c = cluster(&format!(
        "operator: installed\nnamespaces: [default, team-b]\n{scenario}"
    ));
    c.insert(job("train", "default", "nlp"));
    c.insert(pod(
        "train",
        "default",
        "worker",
        0,
        "Running",
        Some("node-1"),
    ));
    // Finished (metrics-server has no sample of it) and not Pending, so nothing schedules it.
    c.insert(pod(
        "train",
        "default",
        "worker",
        1,
        "Succeeded",
        Some("node-3"),
    ));
    c.insert(job("other", "team-b", "vision"));
    c.insert(pod(
        "other",
        "team-b",
        "worker",
        0,
        "Running",
        Some("node-2"),
    ));
    c
}

fn cells(line: &str) -> Vec<&str> {
    line.split("   ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn top_prints_requests_limits_and_usage_as_kubectl_top_does() {
    let c = setup("");
    let run = tfjob(&c, &["top", "train"]);
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        cells(lines[0]),
        [
            "NAME",
            "REPLICA",
            "NODE",
            "GPUS",
            "CPU(cores)",
            "CPU REQUESTS",
            "CPU LIMITS",
            "MEMORY(bytes)",
            "MEMORY REQUESTS",
            "MEMORY LIMITS"
        ],
        "{}",
        run.stdout
    );
    // Usage of the running replica: 2 CPU / 4 = 500m, 4Gi / 2 = 2048Mi (kubectl top's units);
    // the finished one has no sample, and the job's row sums what there is.
    assert_eq!(
        cells(lines[1]),
        [
            "train", "*", "2", "500m", "4000m", "8000m", "2048Mi", "8192Mi", "16384Mi"
        ],
        "{}",
        run.stdout
    );
    assert_eq!(
        cells(lines[2]),
        [
            "train", "worker-0", "node-1", "1", "500m", "2000m", "4000m", "2048Mi", "4096Mi",
            "8192Mi"
        ]
    );
    assert_eq!(
        cells(lines[3]),
        [
            "train",
            "worker-1",
            "node-3",
            "1",
            "<unknown>",
            "2000m",
            "4000m",
            "<unknown>",
            "4096Mi",
            "8192Mi"
        ]
    );
    assert_eq!(lines.len(), 4);
    // kubectl's printer ends every cell with a tab, so the last column is padded as well.
    assert!(lines[0].ends_with("MEMORY LIMITS   "), "{:?}", lines[0]);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    // The reads: the job, its pods, their metrics.
    assert!(
        c.requests().iter().any(|r| r
            .path
            .starts_with("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods")),
        "PodMetrics are read from the metrics API"
    );
}

#[test]
fn top_all_namespaces_selector_and_json() {
    let c = setup("");
    let run = tfjob(&c, &["top", "-A"]);
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(cells(lines[0])[0], "NAMESPACE");
    assert_eq!(cells(lines[1])[..3], ["default", "train", "*"]);
    assert_eq!(cells(lines[4])[..4], ["team-b", "other", "*", "1"]);

    let run = tfjob(&c, &["top", "-A", "-l", "team=vision", "-o", "json"]);
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["metricsAvailable"], true);
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{}", run.stdout);
    assert_eq!(items[0]["name"], "other");
    let r = &items[0]["replicas"][0];
    assert_eq!(r["node"], "node-2");
    assert_eq!(r["gpus"], 1);
    assert_eq!(r["requests"]["cpuMillicores"], 2000);
    assert_eq!(r["limits"]["memoryBytes"], 8u64 * 1024 * 1024 * 1024);
    assert_eq!(r["usage"]["cpuMillicores"], 500);
    assert_eq!(r["usage"]["memoryBytes"], 2u64 * 1024 * 1024 * 1024);
}

#[test]
fn top_without_a_metrics_api_says_unknown_once_and_succeeds() {
    let c = setup("metricsApi: false\n");
    let run = tfjob(&c, &["top", "train"]);
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        cells(lines[2]),
        [
            "train",
            "worker-0",
            "node-1",
            "1",
            "<unknown>",
            "2000m",
            "4000m",
            "<unknown>",
            "4096Mi",
            "8192Mi"
        ],
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stderr.matches("metrics API not available").count(),
        1,
        "{}",
        run.stderr
    );
    let run = tfjob(&c, &["top", "train", "-o", "json"]);
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["metricsAvailable"], false);
    assert_eq!(v["items"][0]["replicas"][0]["usage"], Value::Null);
}

#[test]
fn top_of_a_missing_job_is_not_found() {
    let c = setup("");
    let run = tfjob(&c, &["top", "nope"]);
    run.expect_code(3);
    assert!(run.stderr.contains("\"nope\" not found"), "{}", run.stderr);
    let run = tfjob(&c, &["top", "-n", "kubeflow"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("No resources found in kubeflow namespace."),
        "{}",
        run.stderr
    );
}
