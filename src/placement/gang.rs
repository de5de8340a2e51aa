//! A Volcano gang: the PodGroup the training-operator v1.9 makes for the job and whether its
//! Volcano Queue lets it in. Pure.
//!
//! Upstream behaviour modelled:
//! - kubeflow/trainer v1.9 `pkg/controller.v1/common/scheduling.go` (`SyncPodGroup`): minMember =
//!   `schedulingPolicy.minAvailable`, else the sum of all replicas; queue =
//!   `schedulingPolicy.queue`, else `default`; and `pkg/controller.v1/common/util.go`
//!   (`CalcPGMinResources`): `schedulingPolicy.minResources`, else the requests of the first
//!   minMember pods (limits only for a container with no requests at all; init containers
//!   ignored);
//! - volcano `pkg/scheduler/plugins/capacity/capacity.go` and `proportion/proportion.go`
//!   (enqueue: a group whose minResources exceed what its queue may still take waits, "queue
//!   resource quota insufficient"); `pkg/webhooks/admission/podgroups/validate/validate_podgroup.go`
//!   (a missing or non-Open queue refuses the PodGroup, so the operator creates no pods).
//!
//! Left out: the overcommit plugin (cluster allocatable × 1.2), priorities, deserved shares,
//! hierarchical queues.

use k8s_openapi::api::core::v1::ResourceRequirements;

use super::Res;
use super::kueue::qty;
use crate::cluster::queue::VolcanoQueue;
use crate::model::TFJob;

/// The PodGroup the operator would make.
#[derive(Debug, Clone, PartialEq)]
pub struct Gang {
    pub min_member: i64,
    pub queue: String,
    pub min_resources: Res,
}

fn container_requests(r: Option<&ResourceRequirements>) -> Res {
    let Some(r) = r else { return Res::new() };
    // The requests, or the limits when the container sets no requests at all.
    let src = match &r.requests {
        Some(req) if !req.is_empty() => req,
        _ => match &r.limits {
            Some(l) => l,
            None => return Res::new(),
        },
    };
    src.iter()
        .filter_map(|(k, v)| Some((k.clone(), super::parse_quantity(&v.0)?)))
        .collect()
}

/// The gang of `job` as the operator computes it.
pub fn gang_of(job: &TFJob) -> Gang {
    let policy = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|p| p.scheduling_policy.as_ref());
    let pods = crate::operator_pods::expand(job);
    let total: i64 = pods.replicas.iter().map(|r| i64::from(r.count)).sum();
    let min_member = policy
        .and_then(|p| p.min_available)
        .map(i64::from)
        .unwrap_or(total);
    let queue = policy
        .and_then(|p| p.queue.clone())
        .filter(|q| !q.is_empty())
        .unwrap_or_else(|| "default".into());
    let min_resources = match policy.and_then(|p| p.min_resources.as_ref()) {
        Some(m) => m
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), super::parse_quantity(&v.0)?)))
            .collect(),
        None => {
            // Upstream sorts by PriorityClass value (ties in map order); without classes the
            // order does not change the sum unless minMember cuts a type short.
            let mut sum = Res::new();
            let mut left = min_member;
            for r in &pods.replicas {
                let per_pod: Res = r
                    .spec
                    .template
                    .spec
                    .iter()
                    .flat_map(|s| &s.containers)
                    .map(|c| container_requests(c.resources.as_ref()))
                    .fold(Res::new(), |mut acc, r| {
                        for (k, v) in r {
                            *acc.entry(k).or_default() += v;
                        }
                        acc
                    });
                let n = i64::from(r.count).min(left);
                left -= n;
                for (k, v) in per_pod {
                    *sum.entry(k).or_default() += v.saturating_mul(i128::from(n));
                }
            }
            sum
        }
    };
    Gang {
        min_member,
        queue,
        min_resources,
    }
}

/// The queue's answer for the gang.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GangVerdict {
    Fits,
    /// Waits for the queue's allocation to free: (resource, need, free).
    Waits(String, i128, i128),
    /// More than the queue's capability: (resource, need, capability).
    Never(String, i128, i128),
    /// The queue is missing or not Open: the PodGroup is refused.
    Refused(String),
}

/// minResources against the Volcano Queue's capability and what it has allocated.
pub fn judge(gang: &Gang, queue: Option<&VolcanoQueue>) -> GangVerdict {
    let Some(queue) = queue else {
        return GangVerdict::Refused(format!("unable to find queue: {}", gang.queue));
    };
    if let Some(state) = queue.status.state.as_deref().filter(|s| *s != "Open") {
        return GangVerdict::Refused(format!(
            "can only submit PodGroup to queue with state `Open`, queue `{}` status is `{state}`",
            gang.queue
        ));
    }
    let mut waits = None;
    for (res, need) in &gang.min_resources {
        let Some(cap) = queue.spec.capability.get(res).and_then(qty) else {
            continue;
        };
        if *need > cap {
            return GangVerdict::Never(res.clone(), *need, cap);
        }
        let used = queue.status.allocated.get(res).and_then(qty).unwrap_or(0);
        if *need > cap - used && waits.is_none() {
            waits = Some(GangVerdict::Waits(res.clone(), *need, (cap - used).max(0)));
        }
    }
    waits.unwrap_or(GangVerdict::Fits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(policy: serde_json::Value) -> TFJob {
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j"},
            "spec": {"runPolicy": {"schedulingPolicy": policy}, "tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i",
                    "resources": {"requests": {"cpu": "2"}}}]}}},
                "Worker": {"replicas": 3, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}}
        }))
        .unwrap()
    }

    fn queue(cap: serde_json::Value, allocated: serde_json::Value) -> VolcanoQueue {
        serde_json::from_value(
            json!({"metadata": {"name": "default"}, "spec": {"capability": cap},
            "status": {"state": "Open", "allocated": allocated}}),
        )
        .unwrap()
    }

    #[test]
    fn min_member_and_resources_as_the_operator_computes_them() {
        let g = gang_of(&job(json!({})));
        assert_eq!(g.min_member, 4);
        assert_eq!(g.queue, "default");
        // Limits count only for a container without requests.
        assert_eq!(g.min_resources["nvidia.com/gpu"], 3000);
        assert_eq!(g.min_resources["cpu"], 2000);
        let g = gang_of(&job(
            json!({"queue": "q1", "minAvailable": 2, "minResources": {"cpu": "1"}}),
        ));
        assert_eq!((g.min_member, g.queue.as_str()), (2, "q1"));
        assert_eq!(g.min_resources.len(), 1);
    }

    #[test]
    fn capability_decides_never_waits_or_fits() {
        let g = gang_of(&job(json!({})));
        assert_eq!(
            judge(&g, Some(&queue(json!({"nvidia.com/gpu": "2"}), json!({})))),
            GangVerdict::Never("nvidia.com/gpu".into(), 3000, 2000)
        );
        assert_eq!(
            judge(
                &g,
                Some(&queue(
                    json!({"nvidia.com/gpu": "4"}),
                    json!({"nvidia.com/gpu": "2"})
                ))
            ),
            GangVerdict::Waits("nvidia.com/gpu".into(), 3000, 2000)
        );
        assert_eq!(
            judge(&g, Some(&queue(json!({}), json!({})))),
            GangVerdict::Fits
        );
        assert!(
            matches!(judge(&g, None), GangVerdict::Refused(m) if m == "unable to find queue: default")
        );
    }
}
