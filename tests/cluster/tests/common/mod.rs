//! Helpers shared by the kube-rs fidelity tests.
#![allow(dead_code)]

pub mod kueue;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client, Config};
use serde_json::{Value, json};
use tfjob_testcluster::TestCluster;

/// A kube-rs client built the ordinary way from the cluster's kubeconfig file.
pub async fn client(c: &TestCluster) -> Client {
    let kc = Kubeconfig::read_from(c.kubeconfig()).expect("read kubeconfig");
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    Client::try_from(cfg).expect("client")
}

pub fn tfjob_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kubeflow.org", "v1", "TFJob"),
        "tfjobs",
    )
}

pub fn tfjobs(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &tfjob_resource())
}

pub fn replica(replicas: i64, restart: &str, image: &str) -> Value {
    json!({
        "replicas": replicas,
        "restartPolicy": restart,
        "template": {"spec": {"containers": [{"name": "tensorflow", "image": image}]}}
    })
}

/// A TFJob with PS and Worker replica specs.
pub fn tfjob(name: &str, ps: i64, workers: i64, restart: &str) -> DynamicObject {
    let mut specs = serde_json::Map::new();
    if ps > 0 {
        specs.insert(
            "PS".into(),
            replica(ps, restart, "tensorflow/tensorflow:2.13.0"),
        );
    }
    if workers > 0 {
        specs.insert(
            "Worker".into(),
            replica(workers, restart, "tensorflow/tensorflow:2.13.0"),
        );
    }
    from_json(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": specs}
    }))
}

pub fn from_json(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("dynamic object")
}

/// The Status a kube-rs call failed with.
pub fn api_err<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> Box<kube::core::Status> {
    match r {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

pub fn condition_types(job: &Value) -> Vec<String> {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["type"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Waits (async) until `f` returns Some; `secs` is how long the state normally takes at most.
pub async fn eventually<T>(secs: u64, f: impl FnMut() -> Option<T>) -> T {
    until(&format!("a state expected within {secs}s"), f).await
}

/// Polls `f` until it returns Some, and returns that. The bound is only a safety net against a
/// hang, never the verdict: on a loaded 2-core CI machine a 5 s bound failed a correct test, so
/// the net is SAFETY_NET_SECS for every wait.
pub async fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(SAFETY_NET_SECS);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < end,
            "never happened within {SAFETY_NET_SECS}s: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// `until` for a state read with async calls (through a client).
pub async fn until_async<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut f: impl FnMut() -> F,
) -> T {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(SAFETY_NET_SECS);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            std::time::Instant::now() < end,
            "never happened within {SAFETY_NET_SECS}s: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Reads `read` until `ready` holds on what it read, and returns that reading; on the safety
/// net's end it panics with the last reading. This is how a test reads state a stand-in
/// controller writes *after* the state the test waited for (an event recorded after a status
/// write, a second object's status after the first's): one read right after the wait can come
/// between the two writes under load, so the read itself must be a bounded poll.
pub async fn read_until<T: std::fmt::Debug>(
    what: &str,
    mut read: impl FnMut() -> T,
    ready: impl Fn(&T) -> bool,
) -> T {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(SAFETY_NET_SECS);
    loop {
        let v = read();
        if ready(&v) {
            return v;
        }
        assert!(
            std::time::Instant::now() < end,
            "never happened within {SAFETY_NET_SECS}s: {what}; last read: {v:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The least time a wait polls before calling a state unreachable.
const SAFETY_NET_SECS: u64 = 120;

/// One Event of the default namespace, as the tests compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterEvent {
    /// `type`: Normal or Warning.
    pub kind: String,
    pub reason: String,
    pub message: String,
    pub count: i64,
}

impl ClusterEvent {
    /// (type, reason, message).
    pub fn trm(&self) -> (&str, &str, &str) {
        (&self.kind, &self.reason, &self.message)
    }

    /// (reason, message).
    pub fn rm(&self) -> (&str, &str) {
        (&self.reason, &self.message)
    }
}

/// The Events whose involvedObject is `name` in the default namespace, as stored now.
pub fn events(c: &TestCluster, name: &str) -> Vec<ClusterEvent> {
    c.list("events", Some("default"))
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == name)
        .map(|e| ClusterEvent {
            kind: e["type"].as_str().unwrap_or("").to_string(),
            reason: e["reason"].as_str().unwrap_or("").to_string(),
            message: e["message"].as_str().unwrap_or("").to_string(),
            count: e["count"].as_i64().unwrap_or(0),
        })
        .collect()
}

/// The events of `name` once every reason in `reasons` is among them: the stand-ins record
/// their events after the status writes the tests wait for (as client-go's recorder does,
/// asynchronously, after the controller's update), so a single read could miss them.
pub async fn events_with(c: &TestCluster, name: &str, reasons: &[&str]) -> Vec<ClusterEvent> {
    read_until(
        &format!("events {reasons:?} on {name}"),
        || events(c, name),
        |ev| reasons.iter().all(|r| ev.iter().any(|e| e.reason == *r)),
    )
    .await
}
