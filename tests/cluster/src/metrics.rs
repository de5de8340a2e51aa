//! A small `metrics.k8s.io/v1beta1` (metrics-server's resource metrics API), read-only: the
//! group in discovery and PodMetrics for running pods, list (with `labelSelector`) and get.
//!
//! As metrics-server answers (sigs.k8s.io/metrics-server pkg/api/pod.go): only pods with a
//! sample are listed (pending pods are absent, a get of one is NotFound), each container's
//! usage is CPU in nanocores (`…n`) and memory in `…Ki`, labels are the pod's. The values are
//! deterministic so tests can assert them: a container uses a quarter of its CPU request
//! (5m without one) and half of its memory request (16Mi without one). `metricsApi: false`
//! makes the group unknown, as on a cluster without metrics-server.

use serde_json::{Value, json};

use crate::selectors::LabelSelector;
use crate::status::{self, ApiError};
use crate::store::Store;
use crate::util::{now_rfc3339, value_quantity_milli};

pub const GROUP: &str = "metrics.k8s.io";
pub const VERSION: &str = "v1beta1";

/// `APIResourceList` of the group version.
pub fn resource_list() -> Value {
    json!({
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}
        ]
    })
}

/// One container's usage: (nanocores, KiB).
fn usage(container: &Value) -> (i128, i128) {
    let req = |r: &str| {
        container
            .pointer(&format!("/resources/requests/{r}"))
            .and_then(value_quantity_milli)
    };
    // parse_quantity_milli gives thousandths: "500m" is 500, "1Gi" is 1073741824000.
    let millicores = req("cpu").map(|m| m / 4).unwrap_or(5);
    let bytes = req("memory")
        .map(|m| m / 1000 / 2)
        .unwrap_or(16 * 1024 * 1024);
    (millicores * 1_000_000, bytes / 1024)
}

fn pod_metrics(pod: &Value) -> Option<Value> {
    if pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return None;
    }
    let containers: Vec<Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let (n, ki) = usage(c);
            json!({"name": c["name"], "usage": {"cpu": format!("{n}n"), "memory": format!("{ki}Ki")}})
        })
        .collect();
    let now = now_rfc3339();
    let mut meta = json!({
        "name": pod["metadata"]["name"], "namespace": pod["metadata"]["namespace"],
        "creationTimestamp": now,
    });
    if let Some(l) = pod.pointer("/metadata/labels") {
        meta["labels"] = l.clone();
    }
    Some(json!({
        "kind": "PodMetrics", "apiVersion": format!("{GROUP}/{VERSION}"), "metadata": meta,
        "timestamp": now, "window": "15s", "containers": containers,
    }))
}

/// GET of `pods` (list when `name` is None), `nodes` answering an empty list.
pub fn serve(
    store: &Store,
    resource: &str,
    namespace: Option<&str>,
    name: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Value, ApiError> {
    let sel = LabelSelector::parse(label_selector.unwrap_or("")).map_err(status::bad_request)?;
    match (resource, name) {
        ("pods", Some(n)) => {
            let pod = store.get("pods", namespace.unwrap_or("default"), n);
            pod.as_ref()
                .and_then(pod_metrics)
                .ok_or_else(|| status::not_found("pods", GROUP, n))
        }
        ("pods", None) => {
            let (pods, _) = store.list_filtered("pods", namespace, |p| sel.matches(p));
            let items: Vec<Value> = pods.iter().filter_map(pod_metrics).collect();
            Ok(
                json!({"kind": "PodMetricsList", "apiVersion": format!("{GROUP}/{VERSION}"),
                      "metadata": {}, "items": items}),
            )
        }
        ("nodes", None) => Ok(
            json!({"kind": "NodeMetricsList", "apiVersion": format!("{GROUP}/{VERSION}"), "metadata": {}, "items": []}),
        ),
        _ => Err(status::unknown_resource()),
    }
}
