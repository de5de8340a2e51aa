//! The live placement question, pure: for a job whose pods already exist and are
//! Unschedulable, what does the model say once the job's own bound pods are taken out of the
//! snapshot? And which nodeSelector pairs no node carries. The reads are the caller's
//! ([`super::collect`] under the caller's retry policy): `ops::preflight` for `wait`, and
//! `diagnose`, ask the same question of the same function.

use std::collections::BTreeSet;

use super::{ClusterState, Forecast, Verdict, admitted_pods, place};
use crate::model::TFJob;

/// What the model adds for a created job's Unschedulable pods: `waits` or `never` with the
/// job's reason, and for `never` the hint when a selector is the cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unschedulable {
    pub verdict: Verdict,
    pub reason: String,
    pub hint: Option<String>,
}

/// The model's verdict for a job already created whose pods are Unschedulable, with the job's
/// own bound pods taken out of the cluster (they would otherwise hold resources against
/// themselves). `None` when the model has nothing to add (fits, unknown, or an autoscaler may
/// add nodes).
pub fn unschedulable(
    snapshot: ClusterState,
    namespace: &str,
    job: &TFJob,
) -> Option<Unschedulable> {
    if Forecast::autoscaled(&snapshot) {
        return placement(snapshot, namespace, job).filter(|u| u.verdict != Verdict::Never);
    }
    placement(snapshot, namespace, job)
}

/// [`unschedulable`] before the autoscaler is taken into account: the placement verdict on the
/// nodes there are now.
pub fn placement(
    mut snapshot: ClusterState,
    namespace: &str,
    job: &TFJob,
) -> Option<Unschedulable> {
    let pods = admitted_pods(
        job,
        &snapshot.limit_ranges,
        snapshot.runtime_classes.as_ref(),
    );
    let own: BTreeSet<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    if let Some(bound) = &mut snapshot.bound_pods {
        bound.remove_kept(|p| p.namespace == namespace && own.contains(p.name.as_str()));
    }
    // Quota usage already counts the job's created pods, so only placement is asked here.
    let placed = place(&snapshot, &pods);
    match placed.verdict {
        verdict @ (Verdict::Never | Verdict::Waits) => Some(Unschedulable {
            verdict,
            hint: selector_hint(job, &snapshot, &placed.reason),
            reason: placed.reason,
        }),
        Verdict::Fits | Verdict::Unknown => None,
    }
}

/// Advice that fits why the job can never run, when the cause is not a shortage that fewer or
/// smaller replicas would cure: a selector no node matches ([`selector_hint`]), nodes that all
/// carry a taint the pods do not tolerate (a lone control-plane node), or a resource no node
/// has at all (`nvidia.com/gpu` on a cluster without GPUs). `None`: the generic advice fits.
pub fn cause_hint(job: &TFJob, snapshot: &ClusterState, reason: &str) -> Option<String> {
    if let Some(hint) = selector_hint(job, snapshot, reason) {
        return Some(hint);
    }
    let nodes = snapshot.nodes.as_ref().filter(|n| !n.is_empty())?;
    let pods = admitted_pods(
        job,
        &snapshot.limit_ranges,
        snapshot.runtime_classes.as_ref(),
    );
    // A resource a pod asks for that no node offers: only other nodes would help.
    for p in &pods {
        for (res, want) in &p.requests {
            if *want > 0
                && super::filters::is_extended(res)
                && nodes
                    .iter()
                    .all(|n| n.allocatable.get(res).copied().unwrap_or(0) <= 0)
            {
                return Some(format!(
                    "No node offers {res} at all ({} replica {} asks for it): fewer replicas will not help. Add nodes that have it (for nvidia.com/gpu, GPU nodes with the NVIDIA device plugin), or run without it (e.g. without --gpus).",
                    p.replica_type, p.index
                ));
            }
        }
    }
    // Every node keeps every pod off with a taint: name them, and the control-plane case.
    let mut taints: std::collections::BTreeSet<String> = Default::default();
    for n in nodes {
        for p in &pods {
            let t = super::filters::untolerated(&p.spec, &n.taints)?;
            taints.insert(format!("{}:{}", t.key, t.effect));
        }
    }
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).take(3).collect();
    let control_plane = taints
        .iter()
        .any(|t| t.starts_with("node-role.kubernetes.io/control-plane:"));
    let taint_list = taints.iter().cloned().collect::<Vec<_>>().join(", ");
    Some(if control_plane && nodes.len() == 1 {
        format!(
            "The only node, {}, is a control plane (taint {taint_list}): it takes no workloads. Add a worker node, or on a test cluster let it run pods: `kubectl taint nodes {} node-role.kubernetes.io/control-plane:NoSchedule-`.",
            names[0], names[0]
        )
    } else {
        format!(
            "Every node carries a taint the pods do not tolerate ({taint_list}; e.g. {}): fewer replicas will not help. Add tolerations to the pod templates if the job may run there, or add nodes without the taint.",
            names.join(", ")
        )
    })
}

/// When pods select nodes that do not exist, capacity is not the cure: name each nodeSelector
/// pair no node carries (kube-scheduler's NodeAffinity filter, `didn't match Pod's node
/// affinity/selector`), or the required affinity when every pair is carried somewhere.
pub fn selector_hint(job: &TFJob, snapshot: &ClusterState, reason: &str) -> Option<String> {
    let nodes = snapshot.nodes.as_ref()?;
    let mut unmatched: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (role, spec) in &job.spec.tf_replica_specs {
        let Some(selector) = spec
            .template
            .spec
            .as_ref()
            .and_then(|p| p.node_selector.as_ref())
        else {
            continue;
        };
        for (k, v) in selector {
            if !nodes.iter().any(|n| n.labels.get(k) == Some(v)) {
                unmatched
                    .entry(format!("{k}={v}"))
                    .or_default()
                    .push(role.clone());
            }
        }
    }
    if unmatched.is_empty() {
        return reason.contains("node affinity/selector").then(|| {
            "The pods' node affinity or nodeSelector matches no node that could hold them: compare \
             it with `kubectl get nodes --show-labels`."
                .to_string()
        });
    }
    let pairs: Vec<String> = unmatched
        .iter()
        .map(|(pair, roles)| format!("nodeSelector {pair} ({})", roles.join(", ")))
        .collect();
    let first = unmatched.keys().next().expect("not empty");
    Some(format!(
        "No node matches {}: label the nodes meant for the job (`kubectl label node NODE {first}`) or fix the selector; adding capacity elsewhere will not help.",
        pairs.join(", ")
    ))
}
