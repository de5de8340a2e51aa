//! The aggregated `visibility.kueue.x-k8s.io/v1beta2` API (`apis/visibility/v1beta2/types.go`,
//! gate `VisibilityOnDemand`): `PendingWorkloadsSummary` for a ClusterQueue or a LocalQueue,
//! both pending heaps (active and inadmissible) in queue order, positions counted from 0;
//! `limit` (default 1000, at most 100000) and `offset` (default 0).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::is_true;
use crate::state::Shared;

/// The group.
pub const GROUP: &str = "visibility.kueue.x-k8s.io";
/// The version.
pub const VERSION: &str = "v1beta2";

fn meta<'a>(o: &'a Value, k: &str) -> &'a str {
    o["metadata"][k].as_str().unwrap_or("")
}

/// Pending Workloads per ClusterQueue, in queue order (priority, creation, UID).
fn pending_by_cq(sh: &Shared) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for w in sh.store.list("workloads", None).0 {
        if is_true(&w, "QuotaReserved")
            || is_true(&w, "Finished")
            || w["spec"]["active"] == json!(false)
        {
            continue;
        }
        let Some(lq) = sh.store.get(
            "localqueues",
            meta(&w, "namespace"),
            w["spec"]["queueName"].as_str().unwrap_or(""),
        ) else {
            continue;
        };
        let cq = lq["spec"]["clusterQueue"]
            .as_str()
            .unwrap_or("")
            .to_string();
        out.entry(cq).or_default().push(w);
    }
    for ws in out.values_mut() {
        ws.sort_by_key(super::order_key);
    }
    out
}

/// The APIResourceList of the group version.
pub fn resource_list() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{GROUP}/{VERSION}"), "resources": [
        {"name": "clusterqueues", "singularName": "clusterqueue", "namespaced": false, "kind": "ClusterQueue", "verbs": ["get"]},
        {"name": "clusterqueues/pendingworkloads", "singularName": "", "namespaced": false, "kind": "PendingWorkloadsSummary", "verbs": ["get"]},
        {"name": "localqueues", "singularName": "localqueue", "namespaced": true, "kind": "LocalQueue", "verbs": ["get"]},
        {"name": "localqueues/pendingworkloads", "singularName": "", "namespaced": true, "kind": "PendingWorkloadsSummary", "verbs": ["get"]}
    ]})
}

/// `GET .../clusterqueues/<cq>/pendingworkloads` (namespace None) or
/// `.../namespaces/<ns>/localqueues/<lq>/pendingworkloads`.
pub fn pending_workloads(
    sh: &Shared,
    namespace: Option<&str>,
    queue: &str,
    limit: usize,
    offset: usize,
) -> Value {
    let by_cq = pending_by_cq(sh);
    let cq = match namespace {
        None => queue.to_string(),
        Some(ns) => sh
            .store
            .get("localqueues", ns, queue)
            .and_then(|l| l["spec"]["clusterQueue"].as_str().map(String::from))
            .unwrap_or_default(),
    };
    let mut items = Vec::new();
    let mut per_lq: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (pos, w) in by_cq.get(&cq).into_iter().flatten().enumerate() {
        let ns = meta(w, "namespace").to_string();
        let lq = w["spec"]["queueName"].as_str().unwrap_or("").to_string();
        let lq_pos = per_lq.entry((ns.clone(), lq.clone())).or_default();
        let this_lq = *lq_pos;
        *lq_pos += 1;
        if let Some(want) = namespace
            && (want != ns || lq != queue)
        {
            continue;
        }
        items.push(json!({
            "metadata": {"name": meta(w, "name"), "namespace": ns, "creationTimestamp": w["metadata"]["creationTimestamp"], "ownerReferences": w["metadata"]["ownerReferences"]},
            "priority": w["spec"]["priority"].as_i64().unwrap_or(0),
            "localQueueName": lq,
            "positionInClusterQueue": pos,
            "positionInLocalQueue": this_lq,
        }));
    }
    let items: Vec<Value> = items
        .into_iter()
        .skip(offset)
        .take(limit.min(100_000))
        .collect();
    json!({"kind": "PendingWorkloadsSummary", "apiVersion": format!("{GROUP}/{VERSION}"), "metadata": {}, "items": items})
}
