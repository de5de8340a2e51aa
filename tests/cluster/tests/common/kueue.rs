//! Shared by the Kueue suites: a cluster with Kueue managing TFJobs, its queue objects,
//! a queued job, and readers for Workloads, conditions and events.

use std::time::{Duration, Instant};

use kube::core::DynamicObject;
use serde_json::{Value, json};
use tfjob_testcluster::{KueueConfig, NodeSpec, Scenario, TestCluster};

use super::{client, from_json};

/// Polls until `f` holds; the 20 s limit is a net against a hang, never the verdict.
pub async fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub fn gpu_node(name: &str) -> NodeSpec {
    let mut n = NodeSpec::new(name, "32", "128Gi", 4);
    n.labels.insert("gpu".into(), "a100".into());
    n
}

pub fn flavor() -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "a100"},
        "spec": {"nodeLabels": {"gpu": "a100"}, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}})
}

pub fn cluster_queue(name: &str, gpus: i64, extra: Value) -> Value {
    let mut cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{"name": "a100", "resources": [
                {"name": "cpu", "nominalQuota": 64}, {"name": "memory", "nominalQuota": "256Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]}]}});
    for (k, v) in extra.as_object().into_iter().flatten() {
        cq["spec"][k] = v.clone();
    }
    cq
}

pub fn local_queue(ns: &str, name: &str, cq: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}})
}

pub fn kueue_cluster(objects: Vec<Value>) -> TestCluster {
    let mut sc = Scenario::default()
        .with_kueue(KueueConfig::with_tfjob())
        .with_nodes(vec![gpu_node("node-1"), gpu_node("node-2")]);
    for o in objects {
        sc = sc.with_object(o);
    }
    TestCluster::start(sc)
}

pub fn queued_job(name: &str, queue: &str, workers: i64, gpus: i64) -> DynamicObject {
    let worker = json!({"replicas": workers, "restartPolicy": "Never", "template": {"spec": {"containers": [{
        "name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu",
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"nvidia.com/gpu": gpus}}}]}}});
    let mut labels = json!({});
    if !queue.is_empty() {
        labels["kueue.x-k8s.io/queue-name"] = json!(queue);
    }
    from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"tfReplicaSpecs": {"Worker": worker}}}))
}

pub fn workload_of(c: &TestCluster, job: &str) -> Option<Value> {
    let name = c.workload_name_for("default", job)?;
    c.get("workloads", Some("default"), &name)
}

pub fn cond<'a>(o: &'a Value, t: &str) -> Option<&'a Value> {
    o["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
}

pub fn cond_is(o: &Value, t: &str, status: &str) -> bool {
    cond(o, t).is_some_and(|c| c["status"] == status)
}

pub fn events(c: &TestCluster, name: &str) -> Vec<(String, String)> {
    c.list("events", Some("default"))
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == name)
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The events of `name` once every reason in `reasons` is among them: a stand-in records its
/// events after the status write a test waits for, so one read right after could miss them.
pub async fn events_with(c: &TestCluster, name: &str, reasons: &[&str]) -> Vec<(String, String)> {
    until(&format!("events {reasons:?} on {name}"), || {
        let ev = events(c, name);
        reasons
            .iter()
            .all(|r| ev.iter().any(|(got, _)| got == r))
            .then_some(ev)
    })
    .await
}

pub fn suspended(c: &TestCluster, job: &str) -> bool {
    c.get("tfjobs", Some("default"), job)
        .is_some_and(|j| j["spec"]["runPolicy"]["suspend"] == json!(true))
}

pub async fn api_get(c: &TestCluster, path: &str) -> Value {
    let cl = client(c).await;
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    cl.request::<Value>(req).await.unwrap()
}
