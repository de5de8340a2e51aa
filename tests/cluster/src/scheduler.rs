//! The simulated kube-scheduler's Filter plugins and FailedScheduling wording, after
//! kubernetes/kubernetes `pkg/scheduler/framework/plugins/{nodeunschedulable,tainttoleration,
//! nodeaffinity,noderesources/fit.go}` and `framework/types.go` (`FitError.Error`): filters run
//! in the default profile's order and a node is rejected by the first failing one; the message
//! is `0/N nodes are available: <"COUNT reason" sorted as strings>. preemption: 0/N nodes are
//! available: <COUNT Preemption is not helpful for scheduling | No preemption victims found for
//! incoming pod>.` (every simulated pod has the same priority, so preemption never finds victims).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::util::value_quantity_milli;

/// Resource name → milli-units; `pods` counts 1000 per pod.
pub(crate) type Res = BTreeMap<String, i128>;

fn list_res(v: &Value) -> Res {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Some((k.clone(), value_quantity_milli(q)?)))
        .collect()
}

/// Container requests after API defaulting: each limit stands in for a missing request.
fn container_requests(c: &Value) -> Res {
    let mut r = list_res(&c["resources"]["limits"]);
    r.extend(list_res(&c["resources"]["requests"]));
    r
}

/// `resource.PodRequests` (component-helpers): sum of app containers and sidecars, max with
/// each init container (running next to the sidecars started before it), plus overhead; and
/// one `pods`.
pub(crate) fn pod_requests(pod: &Value) -> Res {
    let mut sum = Res::new();
    let add = |into: &mut Res, from: &Res| {
        for (k, v) in from {
            *into.entry(k.clone()).or_default() += v;
        }
    };
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        add(&mut sum, &container_requests(c));
    }
    let (mut sidecars, mut init_max) = (Res::new(), Res::new());
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let r = container_requests(c);
        if c["restartPolicy"] == "Always" {
            add(&mut sidecars, &r);
            add(&mut sum, &r);
            continue;
        }
        let mut during = r;
        add(&mut during, &sidecars);
        for (k, v) in during {
            let e = init_max.entry(k).or_default();
            *e = (*e).max(v);
        }
    }
    for (k, v) in init_max {
        let e = sum.entry(k).or_default();
        *e = (*e).max(v);
    }
    add(&mut sum, &list_res(&pod["spec"]["overhead"]));
    sum.insert("pods".into(), 1000);
    sum
}

fn tolerates(t: &Value, key: &str, value: &str, effect: &str) -> bool {
    let teff = t["effect"].as_str().unwrap_or("");
    if !teff.is_empty() && teff != effect {
        return false;
    }
    let tkey = t["key"].as_str().unwrap_or("");
    if !tkey.is_empty() && tkey != key {
        return false;
    }
    match t["operator"].as_str().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => t["value"].as_str().unwrap_or("") == value,
        _ => false,
    }
}

fn pod_tolerates(pod: &Value, key: &str, value: &str, effect: &str) -> bool {
    pod["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| tolerates(t, key, value, effect))
}

fn requirement(r: &Value, get: &dyn Fn(&str) -> Option<String>) -> bool {
    let v = get(r["key"].as_str().unwrap_or(""));
    let vals: Vec<&str> = r["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match r["operator"].as_str().unwrap_or("") {
        "In" => v.is_some_and(|v| vals.contains(&v.as_str())),
        "NotIn" => v.is_none_or(|v| !vals.contains(&v.as_str())),
        "Exists" => v.is_some(),
        "DoesNotExist" => v.is_none(),
        op @ ("Gt" | "Lt") => match (v.and_then(|v| v.parse::<i64>().ok()), vals.as_slice()) {
            (Some(l), [b]) => b
                .parse::<i64>()
                .is_ok_and(|b| if op == "Gt" { l > b } else { l < b }),
            _ => false,
        },
        _ => false,
    }
}

fn affinity_ok(pod: &Value, node: &Value) -> bool {
    let labels = &node["metadata"]["labels"];
    let sel_ok = pod["spec"]["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels[k] == *v);
    let terms = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    let Some(terms) = terms.as_array() else {
        return sel_ok;
    };
    let by_label = |k: &str| labels[k].as_str().map(str::to_string);
    let name = node["metadata"]["name"].as_str().unwrap_or("").to_string();
    let by_field = |k: &str| (k == "metadata.name").then(|| name.clone());
    sel_ok
        && terms.iter().any(|t| {
            let exprs = t["matchExpressions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let fields = t["matchFields"].as_array().cloned().unwrap_or_default();
            !(exprs.is_empty() && fields.is_empty())
                && exprs.iter().all(|r| requirement(r, &by_label))
                && fields.iter().all(|r| requirement(r, &by_field))
        })
}

/// The first failing filter's reasons for `node`, and whether preemption could help.
fn reject(pod: &Value, req: &Res, node: &Value, used: Option<&Res>) -> Option<(Vec<String>, bool)> {
    let un = |r: String| Some((vec![r], false));
    if node["spec"]["unschedulable"] == true
        && !pod_tolerates(pod, "node.kubernetes.io/unschedulable", "", "NoSchedule")
    {
        return un("node(s) were unschedulable".into());
    }
    if let Some(t) = node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| {
            let eff = t["effect"].as_str().unwrap_or("");
            matches!(eff, "NoSchedule" | "NoExecute")
                && !pod_tolerates(
                    pod,
                    t["key"].as_str().unwrap_or(""),
                    t["value"].as_str().unwrap_or(""),
                    eff,
                )
        })
    {
        return un(format!(
            "node(s) had untolerated taint {{{}: {}}}",
            t["key"].as_str().unwrap_or(""),
            t["value"].as_str().unwrap_or("")
        ));
    }
    if !affinity_ok(pod, node) {
        return un("node(s) didn't match Pod's node affinity/selector".into());
    }
    let alloc = list_res(&node["status"]["allocatable"]);
    let get = |m: Option<&Res>, k: &str| m.and_then(|m| m.get(k)).copied().unwrap_or(0);
    let mut reasons = vec![];
    if get(used, "pods") + 1000 > get(Some(&alloc), "pods") {
        reasons.push("Too many pods".to_string());
    }
    for (k, v) in req {
        if k != "pods" && *v > 0 && *v > get(Some(&alloc), k) - get(used, k) {
            reasons.push(format!("Insufficient {k}"));
        }
    }
    (!reasons.is_empty()).then_some((reasons, true))
}

/// Picks the least-allocated feasible node (cpu and memory share free after placing the pod;
/// ties to the first node), or explains why none fits, kube-scheduler style.
pub(crate) fn pick(
    pod: &Value,
    nodes: &[Value],
    usage: &HashMap<String, Res>,
) -> Result<String, String> {
    let n = nodes.len();
    if n == 0 {
        return Err("no nodes available to schedule pods".into());
    }
    let req = pod_requests(pod);
    let mut best: Option<(f64, String)> = None;
    let mut hist: BTreeMap<String, usize> = BTreeMap::new();
    let mut pre: BTreeMap<&str, usize> = BTreeMap::new();
    for node in nodes {
        let name = node["metadata"]["name"].as_str().unwrap_or("");
        let used = usage.get(name);
        match reject(pod, &req, node, used) {
            Some((reasons, resolvable)) => {
                for r in reasons {
                    *hist.entry(r).or_default() += 1;
                }
                *pre.entry(if resolvable {
                    "No preemption victims found for incoming pod"
                } else {
                    "Preemption is not helpful for scheduling"
                })
                .or_default() += 1;
            }
            None => {
                let alloc = list_res(&node["status"]["allocatable"]);
                let free = |k: &str| {
                    let cap = alloc.get(k).copied().unwrap_or(0);
                    let u = used.and_then(|u| u.get(k)).copied().unwrap_or(0)
                        + req.get(k).copied().unwrap_or(0);
                    if cap <= 0 {
                        0.0
                    } else {
                        (cap - u).max(0) as f64 / cap as f64
                    }
                };
                let score = (free("cpu") + free("memory")) / 2.0;
                if best.as_ref().is_none_or(|(b, _)| score > *b) {
                    best = Some((score, name.to_string()));
                }
            }
        }
    }
    if let Some((_, name)) = best {
        return Ok(name);
    }
    let sorted = |h: Vec<String>| {
        let mut h = h;
        h.sort();
        h.join(", ")
    };
    Err(format!(
        "0/{n} nodes are available: {}. preemption: 0/{n} nodes are available: {}.",
        sorted(hist.iter().map(|(k, c)| format!("{c} {k}")).collect()),
        sorted(pre.iter().map(|(k, c)| format!("{c} {k}")).collect())
    ))
}
