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
    // By default the columns of what is used, kubectl top's; `-o wide` adds the rest.
    let narrow = tfjob(&c, &["top", "train"]);
    narrow.expect_code(0);
    assert_eq!(
        cells(narrow.stdout.lines().next().unwrap()),
        [
            "NAME",
            "REPLICA",
            "NODE",
            "GPU REQUESTS",
            "GPU(%)",
            "CPU(cores)",
            "MEMORY(bytes)",
            "PROGRESS"
        ],
        "{}",
        narrow.stdout
    );
    let widest = narrow
        .stdout
        .lines()
        .map(|l| l.chars().count())
        .max()
        .unwrap();
    assert!(widest <= 120, "{widest} columns:\n{}", narrow.stdout);
    let run = tfjob(&c, &["top", "train", "-o", "wide"]);
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        cells(lines[0]),
        [
            "NAME",
            "REPLICA",
            "NODE",
            "GPU REQUESTS",
            "GPU(%)",
            "GPU MEMORY",
            "CPU(cores)",
            "CPU REQUESTS",
            "CPU LIMITS",
            "MEMORY(bytes)",
            "MEMORY REQUESTS",
            "MEMORY LIMITS",
            "PROGRESS"
        ],
        "{}",
        run.stdout
    );
    // Usage of the running replica: 2 CPU / 4 = 500m, 4Gi / 2 = 2048Mi (kubectl top's units);
    // the finished one has no sample, and the job's row sums what there is.
    assert_eq!(
        cells(lines[1]),
        [
            "train",
            "*",
            "2",
            "<unknown>",
            "<unknown>",
            "500m",
            "4000m",
            "8000m",
            "2048Mi",
            "8192Mi",
            "16384Mi"
        ],
        "{}",
        run.stdout
    );
    assert_eq!(
        cells(lines[2]),
        [
            "train",
            "worker-0",
            "node-1",
            "1",
            "<unknown>",
            "<unknown>",
            "500m",
            "2000m",
            "4000m",
            "2048Mi",
            "4096Mi",
            "8192Mi",
            "-"
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
            "<unknown>",
            "<unknown>",
            "2000m",
            "4000m",
            "<unknown>",
            "4096Mi",
            "8192Mi",
            "-"
        ]
    );
    assert_eq!(lines.len(), 4);
    // kubectl's printer ends every cell with a tab, so the last column is padded as well.
    assert!(lines[0].ends_with("PROGRESS   "), "{:?}", lines[0]);
    // GPU use is not on this cluster (no Prometheus, a finished pod): said once per reason.
    assert!(
        run.stderr
            .contains("note: GPU use of train/worker-1 is unknown: its pod is not running.\n"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 2, "{}", run.stderr);
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
    let run = tfjob(&c, &["top", "-A", "-o", "wide"]);
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
    let run = tfjob(&c, &["top", "train", "-o", "wide"]);
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
            "<unknown>",
            "<unknown>",
            "2000m",
            "4000m",
            "<unknown>",
            "4096Mi",
            "8192Mi",
            "-"
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

/// A job run by the test cluster's operator: 2 workers holding 2 GPUs each, both running.
fn gpu_job(scenario: &str) -> tfjob_testcluster::TestCluster {
    let c = cluster(scenario);
    c.insert(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "bert", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [{"name": "tensorflow",
                "image": "tensorflow/tensorflow:2.13.0-gpu",
                "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}}}}}));
    assert!(
        c.wait_for(std::time::Duration::from_secs(30), |c| {
            (0..2).all(|i| {
                c.get("pods", Some("default"), &format!("bert-worker-{i}"))
                    .is_some_and(|p| {
                        p["status"]["containerStatuses"][0]["state"]["running"].is_object()
                    })
            })
        }),
        "the workers never ran"
    );
    c
}

fn replica(v: &Value, i: usize) -> &Value {
    &v["items"][0]["replicas"][i]
}

#[test]
fn top_reads_gpu_use_from_dcgm_through_prometheus_and_progress_from_the_logs() {
    let c = gpu_job(
        "prometheus: {}\ngpuUse:\n\
         - {pod: bert-worker-0, utilization: 87, memoryUsedMiB: 30000, memoryTotalMiB: 40960}\n\
         - {pod: bert-worker-1, utilization: 3, memoryUsedMiB: 500, memoryTotalMiB: 40960}\n",
    );
    c.append_log(
        "default",
        "bert-worker-0",
        "tensorflow",
        "Epoch 2/10\n120/500 [====>.....] - ETA: 9s - loss: 0.4123",
    );
    c.append_log("default", "bert-worker-1", "tensorflow", "step 7");
    let run = tfjob(&c, &["top", "bert", "-o", "wide"]);
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        cells(lines[0])[..6],
        [
            "NAME",
            "REPLICA",
            "NODE",
            "GPU REQUESTS",
            "GPU(%)",
            "GPU MEMORY"
        ],
        "{}",
        run.stdout
    );
    assert!(
        lines[0].contains("MEMORY LIMITS   PROGRESS"),
        "{}",
        run.stdout
    );
    // The job: 4 GPUs, (87 + 87 + 3 + 3) / 4 = 45 %, memory summed over the GPUs.
    assert_eq!(cells(lines[1])[..5], ["bert", "*", "4", "45%", "61000Mi"]);
    let w0 = cells(lines[2]);
    assert_eq!(w0[..2], ["bert", "worker-0"]);
    assert_eq!(w0[3..6], ["2", "87%", "60000Mi"], "{}", run.stdout);
    assert_eq!(w0.last(), Some(&"step 620/5,000"), "{}", run.stdout);
    let w1 = cells(lines[3]);
    assert_eq!(w1[3..6], ["2", "3%", "1000Mi"], "{}", run.stdout);
    assert_eq!(w1.last(), Some(&"step 7"), "{}", run.stdout);
    assert!(!run.stderr.contains("GPU use"), "{}", run.stderr);
    // Found by its label, read through the API server's service proxy, one query for both.
    let proxied: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/proxy/"))
        .collect();
    assert_eq!(proxied.len(), 1, "one query for every pod");
    assert_eq!(
        proxied[0].path,
        "/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy/api/v1/query"
    );
    assert!(
        c.requests()
            .iter()
            .any(|r| r.path == "/api/v1/services" && r.query.contains("operated-prometheus")),
        "the Service is found by prometheus-operator's label"
    );

    let run = tfjob(&c, &["top", "bert", "-o", "json"]);
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    let g = &replica(&v, 0)["gpuUse"];
    assert_eq!(
        g["source"],
        "DCGM via Prometheus monitoring/prometheus-operated:web"
    );
    assert_eq!(g["devices"], 2);
    assert_eq!(g["utilizationPercent"], 87.0);
    assert_eq!(g["memoryUsedBytes"], 60000u64 * 1024 * 1024);
    assert_eq!(g["memoryTotalBytes"], 81920u64 * 1024 * 1024);
    assert_eq!(replica(&v, 0)["progress"], "step 620/5,000");
    assert_eq!(v["items"][0]["gpuUse"]["devices"], 4);
}

#[test]
fn top_attributes_dcgm_series_under_either_labelling_and_takes_a_named_prometheus() {
    // honor_labels on, a Service no label finds: named with --prometheus.
    let c = gpu_job(
        "prometheus: {namespace: obs, name: prom, labels: {}, portName: http, port: 80, \
         honorLabels: true}\nnamespaces: [default, obs]\n\
         gpuUse: [{pod: bert, utilization: 50, memoryUsedMiB: 1024, memoryTotalMiB: 16384}]\n",
    );
    let run = tfjob(&c, &["top", "bert", "-o", "wide"]);
    run.expect_code(0);
    assert_eq!(cells(run.stdout.lines().nth(1).unwrap())[3], "<unknown>");
    assert!(
        !c.requests().iter().any(|r| r.path.contains("/proxy/")),
        "nothing proxied without a Service found"
    );
    assert!(
        run.stderr.contains(
            "note: GPU use of bert/worker-0, -1 is unknown: no Prometheus Service found \
             (labelled operated-prometheus=true or app.kubernetes.io/name=prometheus; \
             --prometheus NAMESPACE/SERVICE[:PORT] names one), and nvidia-smi is not in the \
             pod's image."
        ),
        "{}",
        run.stderr
    );
    let run = tfjob(
        &c,
        &["top", "bert", "--prometheus", "obs/prom:http", "-o", "wide"],
    );
    run.expect_code(0);
    assert_eq!(
        cells(run.stdout.lines().nth(1).unwrap())[3..5],
        ["50%", "4096Mi"],
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    let run = tfjob(&c, &["top", "bert", "--prometheus", "obs", "-o", "wide"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("expected NAMESPACE/SERVICE[:PORT]"),
        "{}",
        run.stderr
    );
}

#[test]
fn top_falls_back_to_nvidia_smi_in_the_pods() {
    let c = gpu_job(
        "imageTools: [{image: '-gpu', tools: [sh, python3, nvidia-smi]}]\n\
         gpuUse: [{pod: bert-worker-1, utilization: 64, memoryUsedMiB: 2048, memoryTotalMiB: 16384}]\n",
    );
    let run = tfjob(&c, &["top", "bert", "-o", "json"]);
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    let g = &replica(&v, 1)["gpuUse"];
    assert_eq!(g["source"], "nvidia-smi");
    assert_eq!(g["devices"], 2);
    assert_eq!(g["utilizationPercent"], 64.0);
    assert_eq!(g["memoryTotalBytes"], 32768u64 * 1024 * 1024);
    // worker-0 matched no gpuUse entry: an idle GPU, read all the same.
    assert_eq!(replica(&v, 0)["gpuUse"]["utilizationPercent"], 0.0);
    // One exec per GPU replica, and it names no secret: only nvidia-smi's own words.
    let execs: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/exec"))
        .collect();
    assert_eq!(execs.len(), 2);
    assert!(
        execs.iter().all(|r| r.query.contains("command=nvidia-smi")),
        "{:?}",
        execs.iter().map(|r| &r.query).collect::<Vec<_>>()
    );
}

#[test]
fn top_says_why_gpu_use_is_unknown_and_still_answers() {
    // A Prometheus whose pods do not run, an image without nvidia-smi.
    let c = gpu_job("prometheus: {running: false}\n");
    let run = tfjob(&c, &["top", "bert", "-o", "wide"]);
    run.expect_code(0);
    assert!(
        run.stderr.contains(
            "note: GPU use of bert/worker-0, -1 is unknown: monitoring/prometheus-operated:web \
             did not answer: HTTP 503: no endpoints available for service \
             \"prometheus-operated\", and nvidia-smi is not in the pod's image."
        ),
        "{}",
        run.stderr
    );
    // The proxy refused by RBAC.
    let c = gpu_job(
        "prometheus: {}\nrbac: {deny: [{verb: get, resource: services/proxy}]}\n\
         imageTools: [{image: '-gpu', tools: [sh]}]\n",
    );
    let run = tfjob(&c, &["top", "bert", "-o", "json"]);
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    let why = replica(&v, 0)["gpuUseUnknown"].as_str().unwrap_or_default();
    assert!(
        why.starts_with(
            "reading monitoring/prometheus-operated:web through the API server's service proxy \
             is forbidden (it needs get on services/proxy)"
        ),
        "{why}"
    );
    assert_eq!(replica(&v, 0)["gpuUse"], Value::Null);
}

/// Issue 60 item 5: a second Service with prometheus-operator's label, in another team's
/// namespace, is an ambiguity said (both named, and the flag that chooses), not a silent
/// choice of the first by name; no Prometheus is asked until one is named.
#[test]
fn two_prometheus_services_are_an_ambiguity_said_not_a_silent_choice() {
    let c = gpu_job(
        "prometheus: {}\ngpuUse:\n\
         - {pod: bert-worker-0, utilization: 87, memoryUsedMiB: 30000, memoryTotalMiB: 40960}\n\
         - {pod: bert-worker-1, utilization: 3, memoryUsedMiB: 500, memoryTotalMiB: 40960}\n",
    );
    c.insert(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "prometheus-operated", "namespace": "another-team",
                     "labels": {"operated-prometheus": "true"}},
        "spec": {"clusterIP": "None", "ports": [{"name": "web", "port": 9090}]}}));
    c.clear_requests();
    let run = tfjob(&c, &["top", "bert", "-o", "wide"]);
    run.expect_code(0);
    run.stderr_has(
        "2 Prometheus Services carry operated-prometheus=true (another-team/prometheus-operated:web, \
         monitoring/prometheus-operated:web)",
    );
    run.stderr_has("name one with --prometheus NAMESPACE/SERVICE[:PORT]");
    assert!(
        !c.requests().iter().any(|r| r.path.contains("/proxy/")),
        "a Prometheus was asked"
    );
    // Named, it is asked, and the figures say where they came from.
    let run = tfjob(
        &c,
        &[
            "top",
            "bert",
            "-o",
            "json",
            "--prometheus",
            "monitoring/prometheus-operated:web",
        ],
    );
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(
        replica(&v, 0)["gpuUse"]["source"],
        "DCGM via Prometheus monitoring/prometheus-operated:web"
    );
}
