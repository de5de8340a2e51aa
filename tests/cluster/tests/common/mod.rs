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

/// Waits (async) until `f` returns Some.
pub async fn eventually<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    // `secs` is how long the condition normally takes at most; the limit is only a safety net
    // against a hang, never the verdict. On a loaded 2-core CI machine a 5 s bound failed a
    // correct test, so the net is at least SAFETY_NET_SECS.
    let limit = secs.max(SAFETY_NET_SECS);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(limit);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if std::time::Instant::now() > end {
            panic!("condition not reached within {limit}s (expected within {secs}s)");
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The least time `eventually` waits before calling a condition unreachable.
const SAFETY_NET_SECS: u64 = 120;
