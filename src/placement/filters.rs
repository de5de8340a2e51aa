//! kube-scheduler's Filter plugins over one node, in the default profile's order, and the
//! FailedScheduling wording (`pkg/scheduler/framework/types.go` `FitError.Error`, preemption
//! summary from `pkg/scheduler/framework/preemption`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PodSpec, Taint, Toleration,
};

use super::NodeInfo;
use crate::model::quantity::parse_quantity;

/// Resource name → milli-units.
pub type Res = BTreeMap<String, i128>;

/// Why a node was rejected: the reasons of the first failing filter, and whether preemption
/// could help (`Unschedulable`) or not (`UnschedulableAndUnresolvable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reasons: Vec<String>,
    pub resolvable: bool,
}

fn add(into: &mut Res, from: &Res) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

/// What the scheduler reads of a container: its resource quantities and restartPolicy. Both
/// the typed `Container` and the collector's slim pod rows implement it, so a pod's requests
/// are computed by one function whichever way it was read.
pub(crate) trait ContainerResources {
    /// Calls `f` with each `(resource, quantity)` of `resources.limits`.
    fn each_limit(&self, f: &mut dyn FnMut(&str, &str));
    /// Calls `f` with each `(resource, quantity)` of `resources.requests`.
    fn each_request(&self, f: &mut dyn FnMut(&str, &str));
    fn restart_policy(&self) -> Option<&str>;
}

impl ContainerResources for k8s_openapi::api::core::v1::Container {
    fn each_limit(&self, f: &mut dyn FnMut(&str, &str)) {
        let r = self.resources.as_ref().and_then(|r| r.limits.as_ref());
        r.into_iter().flatten().for_each(|(k, q)| f(k, &q.0));
    }
    fn each_request(&self, f: &mut dyn FnMut(&str, &str)) {
        let r = self.resources.as_ref().and_then(|r| r.requests.as_ref());
        r.into_iter().flatten().for_each(|(k, q)| f(k, &q.0));
    }
    fn restart_policy(&self) -> Option<&str> {
        self.restart_policy.as_deref()
    }
}

/// A container's requests after API defaulting (`SetDefaults_Pod`): each limit stands in for a
/// missing request of the same resource.
fn container_requests(c: &impl ContainerResources) -> Res {
    let mut out = Res::new();
    let mut put = |k: &str, q: &str| {
        if let Some(v) = parse_quantity(q) {
            out.insert(k.to_string(), v);
        }
    };
    c.each_limit(&mut put);
    c.each_request(&mut put);
    out
}

/// The pod's effective requests as the scheduler computes them (`resource.PodRequests`):
/// sum over app containers (plus restartable init "sidecars"), max with each regular init
/// container (which runs alone, with the sidecars started before it), plus `overhead`.
pub fn effective_requests(spec: &PodSpec) -> Res {
    let overhead = spec
        .overhead
        .iter()
        .flatten()
        .map(|(k, q)| (k.as_str(), q.0.as_str()));
    pod_requests(
        &spec.containers,
        spec.init_containers.as_deref().unwrap_or(&[]),
        overhead,
    )
}

/// [`effective_requests`] over any container type.
pub(crate) fn pod_requests<'a, C: ContainerResources>(
    containers: &[C],
    init_containers: &[C],
    overhead: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Res {
    let mut sum = Res::new();
    for c in containers {
        add(&mut sum, &container_requests(c));
    }
    let mut sidecars = Res::new();
    let mut init_max = Res::new();
    for c in init_containers {
        let r = container_requests(c);
        if c.restart_policy() == Some("Always") {
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
    for (k, q) in overhead {
        if let Some(v) = parse_quantity(q) {
            *sum.entry(k.to_string()).or_default() += v;
        }
    }
    sum
}

/// `v1helper.TolerationsTolerateTaint` / `Toleration.ToleratesTaint`.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty())
        && e != taint.effect
    {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    // An empty key with Exists matches every taint.
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

pub fn untolerated<'a>(spec: &PodSpec, taints: &'a [Taint]) -> Option<&'a Taint> {
    let tols = spec.tolerations.as_deref().unwrap_or(&[]);
    taints.iter().find(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !tols.iter().any(|t| tolerates(t, taint))
    })
}

fn requirement_matches(r: &NodeSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let v = labels.get(&r.key);
    let vals = r.values.as_deref().unwrap_or(&[]);
    match r.operator.as_str() {
        "In" => v.is_some_and(|v| vals.contains(v)),
        "NotIn" => v.is_none_or(|v| !vals.contains(v)),
        "Exists" => v.is_some(),
        "DoesNotExist" => v.is_none(),
        // Gt/Lt need exactly one integer value and an integer label (nodeaffinity helpers).
        "Gt" | "Lt" => {
            let (Some(label), [bound]) = (v, vals) else {
                return false;
            };
            match (label.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(l), Ok(b)) => {
                    if r.operator == "Gt" {
                        l > b
                    } else {
                        l < b
                    }
                }
                _ => false,
            }
        }
        _ => false,
    }
}

fn term_matches(t: &NodeSelectorTerm, node: &NodeInfo) -> bool {
    let exprs = t.match_expressions.as_deref().unwrap_or(&[]);
    let fields = t.match_fields.as_deref().unwrap_or(&[]);
    // A term with no requirements matches nothing.
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let name_labels = BTreeMap::from([("metadata.name".to_string(), node.name.clone())]);
    exprs.iter().all(|r| requirement_matches(r, &node.labels))
        && fields.iter().all(|r| requirement_matches(r, &name_labels))
}

/// nodeSelector AND required node affinity (terms ORed).
pub fn affinity_matches(spec: &PodSpec, node: &NodeInfo) -> bool {
    let sel_ok = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(k, v)| node.labels.get(k) == Some(v));
    let req = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    sel_ok && req.is_none_or(|r| r.node_selector_terms.iter().any(|t| term_matches(t, node)))
}

/// Runs the filters in the default profile's order over `node` with `used` already requested
/// there by `pod_count` pods; `None` when the pod fits.
pub fn node_reject_reason(
    spec: &PodSpec,
    requests: &Res,
    node: &NodeInfo,
    used: &Res,
    pod_count: usize,
) -> Option<Rejection> {
    let unresolvable = |r: &str| {
        Some(Rejection {
            reasons: vec![r.to_string()],
            resolvable: false,
        })
    };
    // NodeUnschedulable: cordoned, unless the pod tolerates the unschedulable taint.
    if node.unschedulable {
        let taint = Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        };
        let tolerated = spec
            .tolerations
            .iter()
            .flatten()
            .any(|t| tolerates(t, &taint));
        if !tolerated {
            return unresolvable("node(s) were unschedulable");
        }
    }
    // NodeName.
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty())
        && n != node.name
    {
        return unresolvable("node(s) didn't match the requested node name");
    }
    // TaintToleration: the first untolerated NoSchedule/NoExecute taint, in node order.
    if let Some(t) = untolerated(spec, &node.taints) {
        return unresolvable(&format!(
            "node(s) had untolerated taint {{{}: {}}}",
            t.key,
            t.value.as_deref().unwrap_or("")
        ));
    }
    // NodeAffinity (nodeSelector + required affinity).
    if !affinity_matches(spec, node) {
        return unresolvable("node(s) didn't match Pod's node affinity/selector");
    }
    // NodeResourcesFit: every shortage is a reason.
    let reasons = insufficient(requests, node, used, pod_count);
    if reasons.is_empty() {
        None
    } else {
        Some(Rejection {
            reasons: reasons.into_iter().map(|(_, r)| r).collect(),
            resolvable: true,
        })
    }
}

/// `fitsRequest`: (resource, reason) for each shortage.
pub fn insufficient(
    requests: &Res,
    node: &NodeInfo,
    used: &Res,
    pod_count: usize,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let max_pods = node.allocatable.get("pods").copied().unwrap_or(0) / 1000;
    if pod_count as i128 + 1 > max_pods {
        out.push(("pods".to_string(), "Too many pods".to_string()));
    }
    for (k, v) in requests {
        if *v <= 0 || k == "pods" {
            continue;
        }
        let alloc = node.allocatable.get(k).copied().unwrap_or(0);
        let u = used.get(k).copied().unwrap_or(0);
        if *v > alloc - u {
            out.push((k.clone(), format!("Insufficient {k}")));
        }
    }
    out
}

/// The scheduler's message when no node fits: `0/N nodes are available: <histogram>.
/// preemption: 0/N nodes are available: <histogram>.` Histogram entries are "COUNT reason",
/// sorted as strings (so counts take part in the order), as `FitError.Error` does. The
/// preemption part assumes no lower-priority victims (every pod at the same priority).
pub fn fit_error_message(n_nodes: usize, rejections: &[Rejection]) -> String {
    if n_nodes == 0 {
        return "no nodes available to schedule pods".into();
    }
    let mut hist: BTreeMap<&str, usize> = BTreeMap::new();
    let mut pre: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rejections {
        for reason in &r.reasons {
            *hist.entry(reason).or_default() += 1;
        }
        let p = if r.resolvable {
            "No preemption victims found for incoming pod"
        } else {
            "Preemption is not helpful for scheduling"
        };
        *pre.entry(p).or_default() += 1;
    }
    let sorted = |h: BTreeMap<&str, usize>| {
        let mut v: Vec<String> = h.iter().map(|(k, c)| format!("{c} {k}")).collect();
        v.sort();
        v.join(", ")
    };
    format!(
        "0/{n_nodes} nodes are available: {}. preemption: 0/{n_nodes} nodes are available: {}.",
        sorted(hist),
        sorted(pre)
    )
}

/// Extended resources: fully qualified names outside `kubernetes.io/` (and not `requests.`).
pub fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}
