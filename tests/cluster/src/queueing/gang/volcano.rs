//! A Volcano v1.15 scheduler session for the operator's PodGroups
//! (`pkg/scheduler/framework/session.go` `getPodGroupPhase`, actions enqueue + allocate):
//! - enqueue (`actions/enqueue/enqueue.go`): a Pending group with minResources enters Inqueue
//!   when its Queue's `capability` (proportion/capacity plugin: "queue resource quota
//!   insufficient: insufficient <res>") and the cluster's idle resources × 1.2 minus what
//!   Inqueue groups reserve (overcommit plugin: "resource in cluster is overused: overused
//!   <res>") allow; a denial is a Normal `Unschedulable` event on the PodGroup. A group
//!   whose queue does not exist is skipped.
//! - allocate: the group's pods are bound only when at least minMember of them fit the nodes
//!   together (gang plugin); otherwise the group gets `Unschedulable=True/NotEnoughResources`
//!   with the gang message (`plugins/gang/gang.go`, `api/job_info.go` FitError) and its pods
//!   `PodScheduled=False` with a FailedScheduling event from `volcano`.
//! - every session, a Warning `Unschedulable` "<pending>/<all> tasks in gang unschedulable: …"
//!   for groups still Pending, Inqueue or Unknown (`cache.go` `RecordJobStatusEvent`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{bind, group_pods, node_usage, unschedulable};
use crate::scheduler::Res;
use crate::state::Shared;
use crate::util::{now_rfc3339, value_quantity_milli};

const SCHEDULER: &str = "volcano";
const GROUP_ANNOTATION: &str = "scheduling.k8s.io/group-name";

fn res(v: &Value) -> Res {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Some((k.clone(), value_quantity_milli(q)?)))
        .collect()
}

fn meta<'a>(o: &'a Value, k: &str) -> &'a str {
    o["metadata"][k].as_str().unwrap_or("")
}

fn phase(pg: &Value) -> &str {
    pg["status"]["phase"].as_str().unwrap_or("")
}

fn terminal(p: &Value) -> bool {
    matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
}

/// Writes phase, counts and (optionally) a condition, when they change.
fn write(
    sh: &Shared,
    pg: &Value,
    phase: &str,
    counts: (i64, i64, i64),
    cond: Option<(&str, &str, &str)>,
) {
    let (ns, name) = (meta(pg, "namespace"), meta(pg, "name"));
    let (phase, uid) = (phase.to_string(), meta(pg, "uid").to_string());
    let cond = cond.map(|(t, r, m)| (t.to_string(), r.to_string(), m.to_string()));
    let _ = sh.store.modify("podgroups", ns, name, move |p| {
        let before = p["status"].clone();
        if !p["status"].is_object() {
            p["status"] = json!({});
        }
        let st = &mut p["status"];
        st["phase"] = json!(phase);
        for (k, v) in [("running", counts.0), ("succeeded", counts.1), ("failed", counts.2)] {
            if v > 0 {
                st[k] = json!(v);
            } else if let Some(m) = st.as_object_mut() {
                m.remove(k);
            }
        }
        if let Some((t, r, m)) = &cond {
            let mut conds: Vec<Value> = st["conditions"].as_array().cloned().unwrap_or_default();
            let same = conds.iter().any(|c| c["type"] == json!(t) && c["status"] == "True" && c["reason"] == json!(r) && c["message"] == json!(m));
            if !same {
                // PodGroupCondition: the other type is dropped, as the gang plugin replaces it.
                conds.retain(|c| c["type"] != "Unschedulable" && c["type"] != "Scheduled");
                conds.push(json!({"type": t, "status": "True", "transitionID": uid, "lastTransitionTime": now_rfc3339(), "reason": r, "message": m}));
                st["conditions"] = json!(conds);
            }
        }
        p["status"] != before
    });
}

/// The node-fit part of a kube-scheduler message, in Volcano's words
/// (`api/unschedule_info.go`): "0/N nodes are unavailable: <histogram>."
fn fit_error(pick_err: &str) -> String {
    let hist = pick_err
        .split_once("are available: ")
        .map(|(_, r)| {
            r.split(". preemption")
                .next()
                .unwrap_or(r)
                .trim_end_matches('.')
        })
        .unwrap_or(pick_err);
    let n = pick_err
        .strip_prefix("0/")
        .and_then(|r| r.split(' ').next())
        .unwrap_or("0");
    format!("0/{n} nodes are unavailable: {hist}.")
}

/// One scheduling session over every PodGroup.
pub(super) fn session(sh: &Arc<Shared>) {
    let nodes = sh.store.list("nodes", None).0;
    let mut usage = node_usage(sh);
    let queues: BTreeMap<String, Value> = sh
        .store
        .list("queues", None)
        .0
        .into_iter()
        .map(|q| (meta(&q, "name").to_string(), q))
        .collect();
    let mut pgs = sh.store.list("podgroups", None).0;
    pgs.sort_by(|a, b| {
        (meta(a, "creationTimestamp"), meta(a, "name"))
            .cmp(&(meta(b, "creationTimestamp"), meta(b, "name")))
    });
    // What admitted groups hold: per queue, and (for overcommit) those not running yet.
    let mut allocated: BTreeMap<String, Res> = BTreeMap::new();
    let mut inqueue = Res::new();
    for pg in &pgs {
        if matches!(phase(pg), "Inqueue" | "Running" | "Unknown") {
            let q = pg["spec"]["queue"]
                .as_str()
                .unwrap_or("default")
                .to_string();
            for (k, v) in res(&pg["spec"]["minResources"]) {
                *allocated
                    .entry(q.clone())
                    .or_default()
                    .entry(k.clone())
                    .or_default() += v;
                if phase(pg) == "Inqueue" {
                    *inqueue.entry(k).or_default() += v;
                }
            }
        }
    }
    let mut idle = Res::new();
    for n in &nodes {
        for (k, v) in res(&n["status"]["allocatable"]) {
            *idle.entry(k).or_default() += v * 6 / 5;
        }
    }
    for u in usage.values() {
        for (k, v) in u {
            *idle.entry(k.clone()).or_default() -= v;
        }
    }
    for pg in &pgs {
        let ns = meta(pg, "namespace").to_string();
        let name = meta(pg, "name").to_string();
        let qname = pg["spec"]["queue"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let Some(queue) = queues.get(&qname) else {
            continue;
        };
        let min = pg["spec"]["minMember"].as_i64().unwrap_or(1);
        let min_res = res(&pg["spec"]["minResources"]);
        let pods = group_pods(sh, &ns, SCHEDULER, |p| {
            p["metadata"]["annotations"][GROUP_ANNOTATION] == json!(name)
        });
        let live: Vec<&Value> = pods
            .iter()
            .filter(|p| p["metadata"].get("deletionTimestamp").is_none())
            .collect();
        let counts = (
            live.iter()
                .filter(|p| p["status"]["phase"] == "Running")
                .count() as i64,
            live.iter()
                .filter(|p| p["status"]["phase"] == "Succeeded")
                .count() as i64,
            live.iter()
                .filter(|p| p["status"]["phase"] == "Failed")
                .count() as i64,
        );
        match phase(pg) {
            "" | "Pending" => {
                let cap = res(&queue["spec"]["capability"]);
                let mut short: Vec<String> = Vec::new();
                for (k, v) in &min_res {
                    if let Some(c) = cap.get(k) {
                        let used = allocated
                            .get(&qname)
                            .and_then(|a| a.get(k))
                            .copied()
                            .unwrap_or(0);
                        if used + v > *c {
                            short.push(format!("insufficient {k}"));
                        }
                    }
                }
                let mut over: Vec<String> = Vec::new();
                for (k, v) in &min_res {
                    if *v > 0
                        && inqueue.get(k).copied().unwrap_or(0) + v
                            > idle.get(k).copied().unwrap_or(0)
                    {
                        over.push(format!("overused {k}"));
                    }
                }
                let denial = if queue["status"]["state"]
                    .as_str()
                    .is_some_and(|s| s != "Open")
                {
                    Some(format!("queue {qname} is not open"))
                } else if !short.is_empty() {
                    Some(format!(
                        "queue resource quota insufficient: {}",
                        short.join(", ")
                    ))
                } else if !over.is_empty() {
                    Some(format!(
                        "resource in cluster is overused: {}",
                        over.join(", ")
                    ))
                } else {
                    None
                };
                match denial {
                    Some(m) => {
                        write(sh, pg, "Pending", counts, None);
                        sh.record_event(pg, "PodGroup", "Normal", "Unschedulable", &m, SCHEDULER);
                        sh.record_event(
                            pg,
                            "PodGroup",
                            "Warning",
                            "Unschedulable",
                            &format!("0/0 tasks in gang unschedulable: pod group is not ready, {min} minAvailable"),
                            SCHEDULER,
                        );
                    }
                    None => {
                        for (k, v) in &min_res {
                            *allocated
                                .entry(qname.clone())
                                .or_default()
                                .entry(k.clone())
                                .or_default() += v;
                            *inqueue.entry(k.clone()).or_default() += v;
                        }
                        write(sh, pg, "Inqueue", counts, None);
                    }
                }
            }
            _ => {
                let bound: Vec<&&Value> = live
                    .iter()
                    .filter(|p| p["spec"]["nodeName"].is_string())
                    .collect();
                let mut waiting: Vec<&Value> = live
                    .iter()
                    .filter(|p| !p["spec"]["nodeName"].is_string() && !terminal(p))
                    .copied()
                    .collect();
                waiting.sort_by_key(|p| meta(p, "name").to_string());
                let scheduled = bound.len() as i64;
                if !waiting.is_empty() && scheduled + waiting.len() as i64 >= min {
                    let mut trial = usage.clone();
                    let mut placed: Vec<(&Value, String)> = Vec::new();
                    let mut first_err: Option<(String, String)> = None;
                    for p in &waiting {
                        match crate::scheduler::pick(p, &nodes, &trial) {
                            Ok(n) => {
                                let u = trial.entry(n.clone()).or_default();
                                for (k, v) in crate::scheduler::pod_requests(p) {
                                    *u.entry(k).or_default() += v;
                                }
                                placed.push((p, n));
                            }
                            Err(e) => {
                                first_err.get_or_insert((meta(p, "name").to_string(), e));
                            }
                        }
                    }
                    if scheduled + placed.len() as i64 >= min {
                        for (p, n) in &placed {
                            bind(sh, p, n, SCHEDULER);
                        }
                        usage = trial;
                        write(
                            sh,
                            pg,
                            if phase(pg) == "Inqueue" {
                                "Running"
                            } else {
                                phase(pg)
                            },
                            counts,
                            Some(("Scheduled", "tasks in gang are ready to be scheduled", "")),
                        );
                        continue;
                    }
                    let pending = waiting.len();
                    let total = live.len();
                    let (pod, err) = first_err.unwrap_or_default();
                    let msg = format!(
                        "{pending}/{total} tasks in gang unschedulable: pod group is not ready, {pending} Pending, {min} minAvailable; Pending: {pending} Unschedulable. Origin reason is {pod}: {}",
                        fit_error(&err)
                    );
                    for p in &waiting {
                        unschedulable(sh, p, &msg, SCHEDULER);
                    }
                    let ph = if scheduled > 0 { "Unknown" } else { phase(pg) };
                    write(
                        sh,
                        pg,
                        ph,
                        counts,
                        Some(("Unschedulable", "NotEnoughResources", &msg)),
                    );
                    sh.record_event(pg, "PodGroup", "Warning", "Unschedulable", &msg, SCHEDULER);
                    continue;
                }
                let done = counts.1 > 0 && counts.1 as usize == live.len();
                let ph = if done {
                    "Completed"
                } else if scheduled >= min {
                    "Running"
                } else {
                    phase(pg)
                };
                write(sh, pg, ph, counts, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_error_in_volcano_words() {
        assert_eq!(
            fit_error(
                "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
            ),
            "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu."
        );
    }
}
