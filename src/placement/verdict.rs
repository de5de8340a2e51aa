//! The job verdict: place the pods the operator will create ([`super::pods`]) all together on a
//! copy of the cluster, most demanding first, each onto the least-allocated feasible node (the
//! default profile's NodeResourcesFit LeastAllocated score over cpu and memory).

use std::collections::BTreeMap;

use super::filters::{Rejection, Res, fit_error_message, node_reject_reason};
use super::pods::JobPod;
use super::{ClusterState, NodeInfo, Placement, PodPlacement, Verdict};
use crate::model::quantity::format_quantity;

/// Per-node state during a simulated placement.
#[derive(Clone, Default)]
struct NodeState {
    used: Res,
    pods: usize,
}

pub(super) fn demand_key(p: &JobPod) -> (i128, i128, i128) {
    let ext: i128 = p
        .requests
        .iter()
        .filter(|(k, _)| super::filters::is_extended(k))
        .map(|(_, v)| *v)
        .sum();
    let get = |k: &str| p.requests.get(k).copied().unwrap_or(0);
    (ext, get("cpu"), get("memory"))
}

/// LeastAllocated over cpu and memory after adding the pod (higher is better).
fn score(node: &NodeInfo, st: &NodeState, req: &Res) -> f64 {
    let share = |k: &str| {
        let cap = node.allocatable.get(k).copied().unwrap_or(0);
        if cap <= 0 {
            return 0.0;
        }
        let used = st.used.get(k).copied().unwrap_or(0) + req.get(k).copied().unwrap_or(0);
        ((cap - used).max(0)) as f64 / cap as f64
    };
    (share("cpu") + share("memory")) / 2.0
}

/// Places `order` (indices into `pods`) greedily on the nodes `among` (indices into `nodes`);
/// returns the node of each pod or its rejections.
fn simulate(
    nodes: &[NodeInfo],
    among: &[usize],
    mut state: Vec<NodeState>,
    pods: &[JobPod],
    order: &[usize],
) -> Vec<Result<usize, Vec<Rejection>>> {
    let mut out: Vec<Result<usize, Vec<Rejection>>> = vec![Err(vec![]); pods.len()];
    for &i in order {
        let p = &pods[i];
        let mut best: Option<(f64, usize)> = None;
        let mut rejections = vec![];
        for &n in among {
            let node = &nodes[n];
            match node_reject_reason(&p.spec, &p.requests, node, &state[n].used, state[n].pods) {
                Some(r) => rejections.push(r),
                None => {
                    let s = score(node, &state[n], &p.requests);
                    if best.is_none_or(|(b, _)| s > b) {
                        best = Some((s, n));
                    }
                }
            }
        }
        out[i] = match best {
            Some((_, n)) => {
                for (k, v) in &p.requests {
                    *state[n].used.entry(k.clone()).or_default() += v;
                }
                state[n].pods += 1;
                Ok(n)
            }
            None => Err(rejections),
        };
    }
    out
}

fn shortages(rs: &[Rejection]) -> Vec<String> {
    let mut v: Vec<String> = rs
        .iter()
        .flat_map(|r| r.reasons.iter())
        .filter_map(|r| {
            r.strip_prefix("Insufficient ")
                .map(str::to_string)
                .or_else(|| (r == "Too many pods").then(|| "pods".to_string()))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The job verdict over the snapshot.
pub fn place(snap: &ClusterState, pods: &[JobPod]) -> Placement {
    let unknown = |reason: String| Placement {
        verdict: Verdict::Unknown,
        reason: reason.clone(),
        pods: pods
            .iter()
            .map(|p| PodPlacement {
                name: p.name.clone(),
                replica_type: p.replica_type.clone(),
                index: p.index,
                node: None,
                verdict: Verdict::Unknown,
                reason: reason.clone(),
            })
            .collect(),
    };
    let (Some(nodes), Some(bound)) = (&snap.nodes, &snap.bound_pods) else {
        let missing = if snap.missing_permissions.is_empty() {
            "nodes and pods could not be listed".to_string()
        } else {
            format!("no permission to {}", snap.missing_permissions.join(", "))
        };
        return unknown(format!("{missing}; cannot predict placement"));
    };
    let index: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let now = in_use(nodes.len(), &index, bound);
    let mut order: Vec<usize> = (0..pods.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(demand_key(&pods[i])));

    // Only the nodes whose pods were read can take a pod now (`scope`: the candidates left
    // unread once a placement was found); every node counts for what could ever fit.
    let all: Vec<usize> = (0..nodes.len()).collect();
    let read: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&i| !snap.unread.contains(&nodes[i].name))
        .collect();
    let current = simulate(nodes, &read, now.clone(), pods, &order);
    let pod_row = |i: usize, r: &Result<usize, Vec<Rejection>>, v: Verdict, reason: String| {
        let p = &pods[i];
        PodPlacement {
            name: p.name.clone(),
            replica_type: p.replica_type.clone(),
            index: p.index,
            node: r.as_ref().ok().map(|&n| nodes[n].name.clone()),
            verdict: if r.is_ok() { Verdict::Fits } else { v },
            reason: if r.is_ok() { String::new() } else { reason },
        }
    };
    if current.iter().all(Result::is_ok) {
        return Placement {
            verdict: Verdict::Fits,
            reason: format!("all {} pods can be scheduled now", pods.len()),
            pods: (0..pods.len())
                .map(|i| {
                    let mut row = pod_row(i, &current[i], Verdict::Fits, String::new());
                    let on = row.node.clone().unwrap_or_default();
                    row.reason = format!("fits on {on}");
                    // kube-scheduler binds there all the same; the pod would not start.
                    if let Some(why) = nodes
                        .iter()
                        .find(|n| n.name == on)
                        .and_then(|n| n.not_ready.as_deref())
                    {
                        row.reason.push_str(&format!(
                            ", but {on} is not Ready ({why}): it would not start"
                        ));
                    }
                    row
                })
                .collect(),
        };
    }

    let empty = vec![NodeState::default(); nodes.len()];
    let alone = never_alone(pods, nodes);
    if alone.iter().any(Option::is_some) {
        let first = alone.iter().flatten().next().cloned().unwrap_or_default();
        return Placement {
            verdict: Verdict::Never,
            reason: first,
            pods: (0..pods.len())
                .map(|i| match &alone[i] {
                    Some(r) => pod_row(i, &Err(vec![]), Verdict::Never, r.clone()),
                    None => pod_row(
                        i,
                        &current[i],
                        Verdict::Waits,
                        wait_reason(&current[i], nodes, bound, &index),
                    ),
                })
                .collect(),
        };
    }

    let emptied = simulate(nodes, &all, empty, pods, &order);
    if emptied.iter().all(Result::is_ok) {
        let reasons: Vec<String> = current
            .iter()
            .filter_map(|r| r.as_ref().err())
            .map(|r| wait_reason(&Err(r.clone()), nodes, bound, &index))
            .collect();
        let mut uniq = reasons.clone();
        uniq.dedup();
        return Placement {
            verdict: Verdict::Waits,
            reason: format!(
                "{} of {} pods must wait for running pods to finish: {}",
                reasons.len(),
                pods.len(),
                uniq.join("; ")
            ),
            pods: (0..pods.len())
                .map(|i| {
                    pod_row(
                        i,
                        &current[i],
                        Verdict::Waits,
                        wait_reason(&current[i], nodes, bound, &index),
                    )
                })
                .collect(),
        };
    }
    let reason = whole_job_reason(pods, nodes, &emptied);
    Placement {
        verdict: Verdict::Never,
        reason: reason.clone(),
        pods: (0..pods.len())
            .map(|i| pod_row(i, &emptied[i], Verdict::Never, reason.clone()))
            .map(|mut row| {
                // Rows that fit on empty nodes still cannot run without the rest of the job.
                if row.verdict == Verdict::Fits {
                    row.node = None;
                    row.verdict = Verdict::Never;
                    row.reason = format!("the job cannot run as a whole: {reason}");
                }
                row
            })
            .collect(),
    }
}

/// What the pods bound now use on each node (by the index of `nodes`).
fn in_use(nodes: usize, index: &BTreeMap<&str, usize>, bound: &super::BoundPods) -> Vec<NodeState> {
    let mut now = vec![NodeState::default(); nodes];
    for (node, usage) in bound.by_node() {
        if let Some(&i) = index.get(node.as_str()) {
            for (k, v) in &usage.requests {
                *now[i].used.entry(k.clone()).or_default() += v;
            }
            now[i].pods += usage.pods;
        }
    }
    now
}

/// Each pod alone on empty nodes: a pod that fits nowhere can never run (why, per pod).
fn never_alone(pods: &[JobPod], nodes: &[NodeInfo]) -> Vec<Option<String>> {
    pods.iter()
        .map(|p| {
            let rej: Vec<Rejection> = nodes
                .iter()
                .filter_map(|n| node_reject_reason(&p.spec, &p.requests, n, &Res::new(), 0))
                .collect();
            (rej.len() == nodes.len()).then(|| never_alone_reason(p, nodes, &rej))
        })
        .collect()
}

fn never_alone_reason(p: &JobPod, nodes: &[NodeInfo], rej: &[Rejection]) -> String {
    let msg = fit_error_message(nodes.len(), rej);
    let short = shortages(rej);
    let Some(res) = short.first() else {
        return format!(
            "{} {} fits on no node even when empty: {msg}",
            p.replica_type, p.index
        );
    };
    let (best, on) = nodes
        .iter()
        .map(|n| {
            (
                n.allocatable.get(res).copied().unwrap_or(0),
                n.name.as_str(),
            )
        })
        .max_by_key(|(v, _)| *v)
        .unwrap_or((0, ""));
    let want = if res == "pods" {
        1000
    } else {
        p.requests.get(res).copied().unwrap_or(0)
    };
    format!(
        "{} replica {} ({}) needs {} {res} and fits on no node even when empty; the largest allocatable {res} is {}{}: {msg}",
        p.replica_type,
        p.index,
        p.name,
        format_quantity(res, want),
        format_quantity(res, best),
        if on.is_empty() {
            String::new()
        } else {
            format!(" on {on}")
        },
    )
}

/// Why a node is not Ready: its condition, else the taint the node lifecycle controller puts
/// on a NotReady or unreachable node (`node.kubernetes.io/not-ready`, `…/unreachable`).
fn not_ready(n: &NodeInfo) -> Option<String> {
    n.not_ready.clone().or_else(|| {
        n.taints
            .iter()
            .find(|t| {
                t.key == "node.kubernetes.io/not-ready" || t.key == "node.kubernetes.io/unreachable"
            })
            .map(|t| format!("tainted {}", t.key))
    })
}

/// "2 nvidia.com/gpu held by 3 pods on node-a" for the resources a pod lacked.
fn wait_reason(
    r: &Result<usize, Vec<Rejection>>,
    nodes: &[NodeInfo],
    bound: &super::BoundPods,
    index: &BTreeMap<&str, usize>,
) -> String {
    let Err(rej) = r else { return String::new() };
    let short = shortages(rej);
    let mut parts = vec![];
    for res in &short {
        let mut per_node: BTreeMap<usize, (i128, usize)> = BTreeMap::new();
        // Whose pods hold it, per node: `TFJob team-b/bert` (issue 46).
        let mut owners: BTreeMap<usize, Vec<(String, usize)>> = BTreeMap::new();
        for (node, usage) in bound.by_node() {
            // Only pods holding some of `res` count (each pod holds 1 of "pods").
            let held = if res == "pods" {
                (1000 * usage.pods as i128, usage.pods)
            } else {
                usage.held.get(res).copied().unwrap_or_default()
            };
            if held.1 == 0 {
                continue;
            }
            if let Some(&i) = index.get(node.as_str()) {
                let e = per_node.entry(i).or_default();
                e.0 += held.0;
                e.1 += held.1;
                if let Some(by) = usage.holders.get(res) {
                    owners
                        .entry(i)
                        .or_default()
                        .extend(by.iter().map(|(o, n)| (o.clone(), *n)));
                }
            }
        }
        let mut rows: Vec<(usize, (i128, usize))> = per_node.into_iter().collect();
        rows.sort_by_key(|(_, (v, _))| std::cmp::Reverse(*v));
        for (i, (v, c)) in rows.into_iter().take(3) {
            let mut of = owners.remove(&i).unwrap_or_default();
            of.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let named = match of.len() {
                0 => String::new(),
                1 | 2 => format!(
                    " ({})",
                    of.iter()
                        .map(|(o, _)| o.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                n => format!(" ({}, {} and {} more)", of[0].0, of[1].0, n - 2),
            };
            parts.push(format!(
                "{} {res} held by {c} pod{} on {}{named}",
                format_quantity(res, v),
                if c == 1 { "" } else { "s" },
                nodes[i].name
            ));
        }
        // A node that has it but does not report Ready: its capacity is not coming back
        // until it does (its taints keep pods off, or a pod placed there would not start).
        for n in nodes
            .iter()
            .filter(|n| n.allocatable.get(res).copied().unwrap_or(0) > 0 && not_ready(n).is_some())
        {
            parts.push(format!(
                "{} ({} {res}) is not Ready: {}",
                n.name,
                format_quantity(res, n.allocatable.get(res).copied().unwrap_or(0)),
                not_ready(n).unwrap_or_default()
            ));
        }
    }
    if parts.is_empty() {
        "resources are held by pods already running".into()
    } else {
        parts.join(", ")
    }
}

/// Why the whole job cannot fit at once on empty nodes: the resource it needs more of than the
/// nodes its pods may use have in total.
fn whole_job_reason(
    pods: &[JobPod],
    nodes: &[NodeInfo],
    emptied: &[Result<usize, Vec<Rejection>>],
) -> String {
    let failed: Vec<&Vec<Rejection>> = emptied.iter().filter_map(|r| r.as_ref().err()).collect();
    let short = shortages(
        &failed
            .iter()
            .flat_map(|r| r.iter().cloned())
            .collect::<Vec<_>>(),
    );
    let res = short.first().cloned().unwrap_or_else(|| "cpu".into());
    let need: i128 = pods
        .iter()
        .map(|p| {
            if res == "pods" {
                1000
            } else {
                p.requests.get(&res).copied().unwrap_or(0)
            }
        })
        .sum();
    let have: i128 = nodes
        .iter()
        .filter(|n| {
            pods.iter()
                .any(|p| node_reject_reason(&p.spec, &Res::new(), n, &Res::new(), 0).is_none())
        })
        .map(|n| n.allocatable.get(&res).copied().unwrap_or(0))
        .sum();
    format!(
        "the job needs {} {res} at once ({} pods, all required together), but the nodes its pods may use have {} allocatable in total",
        format_quantity(&res, need),
        pods.len(),
        format_quantity(&res, have)
    )
}
