//! The simulated scheduler's filters and the pod admission plugins, through the API:
//! kube-scheduler's FailedScheduling wording, ResourceQuota's 403, LimitRange defaulting and
//! the operator's FailedCreatePod event.

mod common;

use common::*;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use tfjob_testcluster::{NodeSpec, Scenario, Taint, TestCluster};

fn gpu_taint() -> Taint {
    Taint {
        key: "nvidia.com/gpu".into(),
        value: "present".into(),
        effect: "NoSchedule".into(),
    }
}

fn pod(name: &str, resources: Value) -> Pod {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busy:1", "resources": resources}]}}))
    .unwrap()
}

fn scheduled_condition(c: &TestCluster, name: &str) -> Option<Value> {
    c.get("pods", Some("default"), name)?["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|cd| cd["type"] == "PodScheduled")
        .cloned()
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_scheduling_counts_each_nodes_first_failing_filter() {
    let mut cordoned = NodeSpec::new("node-0", "8", "8Gi", 0);
    cordoned.unschedulable = true;
    let mut nodes = vec![cordoned];
    for i in 1..4 {
        let mut n = NodeSpec::new(&format!("node-{i}"), "8", "8Gi", 1);
        n.taints.push(gpu_taint());
        nodes.push(n);
    }
    let c = TestCluster::start(Scenario::default().with_nodes(nodes));
    let pods: Api<Pod> = Api::namespaced(client(&c).await, "default");
    pods.create(&PostParams::default(), &pod("p", json!({})))
        .await
        .unwrap();
    let cond = eventually(10, || {
        scheduled_condition(&c, "p").filter(|cd| cd["status"] == "False")
    })
    .await;
    assert_eq!(cond["reason"], "Unschedulable");
    assert_eq!(
        cond["message"],
        "0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_scheduling_for_resources_and_affinity() {
    let mut a = NodeSpec::new("node-a", "2", "8Gi", 1);
    a.labels.insert("pool".into(), "gpu".into());
    let b = NodeSpec::new("node-b", "8", "8Gi", 0);
    let c = TestCluster::start(Scenario::default().with_nodes(vec![a, b]));
    let pods: Api<Pod> = Api::namespaced(client(&c).await, "default");
    let mut p = pod(
        "big",
        json!({"limits": {"cpu": "4", "nvidia.com/gpu": "2"}}),
    );
    p.spec.as_mut().unwrap().affinity = serde_json::from_value(json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]}}}))
    .unwrap();
    pods.create(&PostParams::default(), &p).await.unwrap();
    let cond = eventually(10, || {
        scheduled_condition(&c, "big").filter(|cd| cd["status"] == "False")
    })
    .await;
    assert_eq!(
        cond["message"],
        "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_quota_refuses_with_403_and_the_real_message() {
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "gpu-quota", "namespace": "default"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "1", "limits.cpu": "8"}}});
    let c = TestCluster::start(Scenario::default().with_object(quota));
    let pods: Api<Pod> = Api::namespaced(client(&c).await, "default");
    let gpu = json!({"limits": {"cpu": "1", "nvidia.com/gpu": "1"}});
    pods.create(&PostParams::default(), &pod("a", gpu.clone()))
        .await
        .unwrap();
    let err = api_err(pods.create(&PostParams::default(), &pod("b", gpu)).await);
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "pods \"b\" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1"
    );
    let err = api_err(
        pods.create(&PostParams::default(), &pod("c", json!({})))
            .await,
    );
    assert_eq!(
        err.message,
        "pods \"c\" is forbidden: failed quota: gpu-quota: must specify limits.cpu"
    );
    // The quota controller's part: status.used follows the admitted pod.
    let q = eventually(10, || {
        c.get("resourcequotas", Some("default"), "gpu-quota")
            .filter(|q| q["status"]["used"]["requests.nvidia.com/gpu"] == "1")
    })
    .await;
    assert_eq!(q["status"]["used"]["limits.cpu"], "1");
}

#[tokio::test(flavor = "multi_thread")]
async fn limit_range_defaults_and_maximum_on_pod_create() {
    let lr = json!({"apiVersion": "v1", "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "defaultRequest": {"cpu": "250m"}}]}});
    let c = TestCluster::start(Scenario::default().with_object(lr));
    let pods: Api<Pod> = Api::namespaced(client(&c).await, "default");
    let created = pods
        .create(&PostParams::default(), &pod("d", json!({})))
        .await
        .unwrap();
    let r = created.spec.unwrap().containers[0]
        .resources
        .clone()
        .unwrap();
    // default ← max (2), defaultRequest as given.
    assert_eq!(r.limits.unwrap()["cpu"].0, "2");
    assert_eq!(r.requests.unwrap()["cpu"].0, "250m");
    let err = api_err(
        pods.create(
            &PostParams::default(),
            &pod("e", json!({"limits": {"cpu": "4"}})),
        )
        .await,
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "pods \"e\" is forbidden: [maximum cpu usage per Container is 2, but limit is 4]"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_records_failed_create_pod_when_quota_refuses() {
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "pods-quota", "namespace": "default"}, "spec": {"hard": {"pods": "2"}}});
    let c = TestCluster::start(Scenario::default().with_object(quota));
    tfjobs(&client(&c).await, "default")
        .create(&PostParams::default(), &tfjob("q", 0, 3, "Never"))
        .await
        .unwrap();
    let msg = eventually(10, || {
        c.list("events", Some("default")).into_iter().find_map(|e| {
            (e["reason"] == "FailedCreatePod" && e["involvedObject"]["name"] == "q")
                .then(|| e["message"].as_str().unwrap_or("").to_string())
        })
    })
    .await;
    assert_eq!(
        msg,
        "Error creating: pods \"q-worker-2\" is forbidden: exceeded quota: pods-quota, requested: pods=1, used: pods=2, limited: pods=2"
    );
    assert!(c.get("pods", Some("default"), "q-worker-2").is_none());
}
