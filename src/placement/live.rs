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
