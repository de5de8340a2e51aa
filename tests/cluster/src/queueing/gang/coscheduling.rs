//! scheduler-plugins v0.34 for the operator's `scheduling.x-k8s.io/v1alpha1` PodGroups:
//! - the PodGroup controller's phases (`pkg/controllers/podgroup_controller.go`): empty →
//!   Pending, Scheduling once minMember labelled pods exist, Running once running + succeeded
//!   reach minMember, Finished once succeeded does, Failed once a pod failed and failed +
//!   running + succeeded reach minMember; back to Pending below minMember pods;
//! - the coscheduling plugin (`pkg/coscheduling/core/core.go`, `coscheduling.go`): a group
//!   with fewer than minMember pods fails PreFilter ("pre-filter pod <pod> cannot find enough
//!   sibling pods, current pods number: <n>, minMember of group: <m>", in kube-scheduler's
//!   "0/<N> nodes are available: <msg>." wrapper); otherwise the pods are bound only when
//!   minMember of them fit together, else the pod that does not fit gets kube-scheduler's fit
//!   error and its siblings the PostFilter rejection ("PodGroup <ns>/<pg> gets rejected due to
//!   Pod <pod> is unschedulable even after PostFilter"). No conditions: the state is in the
//!   pods' events.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{bind, group_pods, node_usage, unschedulable};
use crate::state::Shared;

const SCHEDULER: &str = "scheduler-plugins-scheduler";
const LABEL: &str = "scheduling.x-k8s.io/pod-group";

fn meta<'a>(o: &'a Value, k: &str) -> &'a str {
    o["metadata"][k].as_str().unwrap_or("")
}

/// One scheduling cycle plus one PodGroup controller pass.
pub(super) fn cycle(sh: &Arc<Shared>) {
    let nodes = sh.store.list("nodes", None).0;
    let mut usage = node_usage(sh);
    let n = nodes.len();
    for pg in sh.store.list("podgroups", None).0 {
        let (ns, name) = (
            meta(&pg, "namespace").to_string(),
            meta(&pg, "name").to_string(),
        );
        let min = pg["spec"]["minMember"].as_i64().unwrap_or(1);
        let pods = group_pods(sh, &ns, SCHEDULER, |p| {
            p["metadata"]["labels"][LABEL] == json!(name)
        });
        let mut waiting: Vec<&Value> = pods
            .iter()
            .filter(|p| {
                !p["spec"]["nodeName"].is_string()
                    && p["status"]["phase"]
                        .as_str()
                        .is_none_or(|ph| ph == "Pending")
            })
            .collect();
        waiting.sort_by_key(|p| meta(p, "name").to_string());
        let total = pods.len() as i64;
        if !waiting.is_empty() {
            if total < min {
                for p in &waiting {
                    let msg = format!(
                        "0/{n} nodes are available: pre-filter pod {} cannot find enough sibling pods, current pods number: {total}, minMember of group: {min}.",
                        meta(p, "name")
                    );
                    unschedulable(sh, p, &msg, SCHEDULER);
                }
            } else {
                let bound = pods
                    .iter()
                    .filter(|p| p["spec"]["nodeName"].is_string())
                    .count() as i64;
                let mut trial = usage.clone();
                let mut placed = Vec::new();
                let mut failed: Option<(String, String)> = None;
                for p in &waiting {
                    match crate::scheduler::pick(p, &nodes, &trial) {
                        Ok(node) => {
                            let u = trial.entry(node.clone()).or_default();
                            for (k, v) in crate::scheduler::pod_requests(p) {
                                *u.entry(k).or_default() += v;
                            }
                            placed.push((*p, node));
                        }
                        Err(e) => {
                            failed.get_or_insert((meta(p, "name").to_string(), e));
                        }
                    }
                }
                if bound + placed.len() as i64 >= min {
                    for (p, node) in &placed {
                        bind(sh, p, node, SCHEDULER);
                    }
                    usage = trial;
                } else if let Some((bad, err)) = failed {
                    for p in &waiting {
                        let msg = if meta(p, "name") == bad {
                            err.clone()
                        } else {
                            format!(
                                "PodGroup {ns}/{name} gets rejected due to Pod {bad} is unschedulable even after PostFilter"
                            )
                        };
                        unschedulable(sh, p, &msg, SCHEDULER);
                    }
                }
            }
        }
        let pods = group_pods(sh, &ns, SCHEDULER, |p| {
            p["metadata"]["labels"][LABEL] == json!(name)
        });
        let count = |ph: &str| pods.iter().filter(|p| p["status"]["phase"] == ph).count() as i64;
        let (running, succeeded, failed) = (count("Running"), count("Succeeded"), count("Failed"));
        let cur = pg["status"]["phase"].as_str().unwrap_or("");
        let phase = if (pods.len() as i64) < min && !matches!(cur, "Finished" | "Failed") {
            "Pending"
        } else if succeeded >= min {
            "Finished"
        } else if failed > 0 && failed + running + succeeded >= min {
            "Failed"
        } else if running + succeeded >= min {
            "Running"
        } else if cur.is_empty() || cur == "Pending" {
            "Scheduling"
        } else {
            cur
        };
        let _ = sh.store.modify("podgroups", &ns, &name, |p| {
            let before = p["status"].clone();
            if !p["status"].is_object() {
                p["status"] = json!({});
            }
            p["status"]["phase"] = json!(phase);
            for (k, v) in [
                ("running", running),
                ("succeeded", succeeded),
                ("failed", failed),
            ] {
                p["status"][k] = json!(v);
            }
            if p["status"]["scheduleStartTime"].is_null() {
                p["status"]["scheduleStartTime"] = json!(crate::util::now_rfc3339());
            }
            p["status"] != before
        });
    }
}
