//! Shared by the Kueue suites: a cluster with Kueue managing TFJobs, its queue objects,
//! a queued job, and readers for Workloads and conditions (events and waits are in `common`).

use kube::core::DynamicObject;
use serde_json::{Value, json};
use tfjob_testcluster::{KueueConfig, NodeSpec, Scenario, TestCluster};

use super::{client, from_json};

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

pub fn suspended(c: &TestCluster, job: &str) -> bool {
    c.get("tfjobs", Some("default"), job)
        .is_some_and(|j| j["spec"]["runPolicy"]["suspend"] == json!(true))
}

pub async fn api_get(c: &TestCluster, path: &str) -> Value {
    let cl = client(c).await;
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    cl.request::<Value>(req).await.unwrap()
}
