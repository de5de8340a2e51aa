//! What Kueue is doing with a job, from the job and its Workload: pure, shared by `wait` and
//! `diagnose`.
//!
//! States follow the queueing notes' §1.15 table and Kueue v0.19's
//! `apis/kueue/v1beta2/workload_types.go` (reasons), `pkg/controller/core/workload_controller.go`
//! (`getQueueBlocker` messages), `pkg/scheduler/flavorassigner/flavorassigner.go` (the no-fit
//! messages) and `pkg/workload/evict/evict.go` (Evicted reasons).

use crate::cluster::queue::{self as q, Workload, cond_true, find_cond};
use crate::model::TFJob;

/// What Kueue is doing with the job, from the job and its Workload. Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KueueState {
    /// Not queued by Kueue (no label), or admitted and running its course.
    NotHeld,
    /// Labelled and suspended, no Workload yet.
    NoWorkload,
    /// Waiting for quota (or behind others, or an inactive queue): keep waiting.
    Queued { cq: Option<String>, why: String },
    /// The Workload is deactivated (`spec.active: false`): Kueue's own "suspended".
    Deactivated,
    /// A queue object is missing: exit 3.
    Missing(String),
    /// More than the ClusterQueue can ever give, as configured: exit 4.
    Never { cq: Option<String>, why: String },
    /// Evicted after admission (preempted, PodsReady timeout, a stopped queue…): requeued.
    Evicted { reason: String, why: String },
}

pub fn kueue_state(job: &TFJob, wl: Option<&Workload>) -> KueueState {
    if q::local_queue_name(job).is_none() {
        return KueueState::NotHeld;
    }
    let suspended = job.is_suspended();
    let Some(wl) = wl else {
        return if suspended {
            KueueState::NoWorkload
        } else {
            KueueState::NotHeld
        };
    };
    let conds = &wl.status.conditions;
    if cond_true(conds, "Finished") {
        return KueueState::NotHeld;
    }
    let cq = wl
        .status
        .admission
        .as_ref()
        .map(|a| a.cluster_queue.clone());
    if wl.spec.active == Some(false) {
        return KueueState::Deactivated;
    }
    if let Some(e) = find_cond(conds, "Evicted").filter(|c| c.status == "True")
        && suspended
    {
        return KueueState::Evicted {
            reason: e.reason.clone(),
            why: e.message.clone(),
        };
    }
    if cond_true(conds, "QuotaReserved") && !suspended {
        return KueueState::NotHeld;
    }
    if !suspended {
        return KueueState::NotHeld;
    }
    let Some(qr) = find_cond(conds, "QuotaReserved").filter(|c| c.status == "False") else {
        return KueueState::Queued {
            cq,
            why: if cond_true(conds, "QuotaReserved") {
                "quota reserved, waiting for admission checks".into()
            } else {
                "not evaluated by Kueue's scheduler yet".into()
            },
        };
    };
    let m = &qr.message;
    let missing = (m.starts_with("LocalQueue ") || m.starts_with("ClusterQueue "))
        && (m.ends_with("doesn't exist") || m.ends_with("is terminating or missing"));
    if missing {
        return KueueState::Missing(m.clone());
    }
    // ExceedsMaxQuota / NoMatchingFlavor (gate on), or their messages with the default gates.
    let never = matches!(qr.reason.as_str(), "ExceedsMaxQuota" | "NoMatchingFlavor")
        || m.contains("> maximum capacity (")
        || m.contains("unavailable in ClusterQueue")
        || m.contains("namespace doesn't match ClusterQueue selector");
    if never {
        return KueueState::Never { cq, why: m.clone() };
    }
    KueueState::Queued {
        cq,
        why: if m.is_empty() {
            qr.reason.clone()
        } else {
            m.clone()
        },
    }
}

/// Why a job Kueue holds does not run, in one phrase for `list`'s REASON and `get`'s Problem;
/// None when Kueue does not hold it. Pure.
pub fn held_reason(state: &KueueState) -> Option<String> {
    Some(match state {
        KueueState::NotHeld => return None,
        KueueState::NoWorkload => {
            "queued: Kueue has made no Workload for it yet (is Kueue running?)".into()
        }
        KueueState::Queued { why, .. } => format!("queued: {why}"),
        KueueState::Deactivated => {
            "queued: its Workload is deactivated (spec.active: false)".into()
        }
        KueueState::Missing(m) => format!("queued: {m}"),
        KueueState::Never { why, .. } => format!("never admitted: {why}"),
        KueueState::Evicted { reason, why } => format!("evicted by Kueue ({reason}): {why}"),
    })
}

pub use crate::cluster::queue::list_state;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(suspend: bool) -> TFJob {
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "j", "labels": {q::QUEUE_LABEL: "team-a"}},
            "spec": {"runPolicy": {"suspend": suspend}, "tfReplicaSpecs": {"Worker": {"template": {}}}}
        }))
        .unwrap()
    }

    fn wl(status: serde_json::Value) -> Workload {
        serde_json::from_value(json!({"metadata": {"name": "tfjob-j-51bee"}, "spec": {"queueName": "team-a"}, "status": status})).unwrap()
    }

    #[test]
    fn kueues_reasons_and_messages_decide() {
        let pending = wl(
            json!({"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100, 3 more needed"}]}),
        );
        assert!(
            matches!(kueue_state(&job(true), Some(&pending)), KueueState::Queued { why, .. } if why.contains("3 more needed"))
        );
        let max = wl(
            json!({"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu in flavor a100, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"}]}),
        );
        assert!(matches!(
            kueue_state(&job(true), Some(&max)),
            KueueState::Never { .. }
        ));
        let no_lq = wl(
            json!({"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Inadmissible",
            "message": "LocalQueue team-a doesn't exist"}]}),
        );
        assert_eq!(
            kueue_state(&job(true), Some(&no_lq)),
            KueueState::Missing("LocalQueue team-a doesn't exist".into())
        );
        let inactive = wl(
            json!({"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Inadmissible",
            "message": "ClusterQueue gpu-cq is inactive"}]}),
        );
        assert!(matches!(
            kueue_state(&job(true), Some(&inactive)),
            KueueState::Queued { .. }
        ));
        let evicted = wl(
            json!({"conditions": [{"type": "Evicted", "status": "True", "reason": "Preempted", "message": "Preempted to accommodate a workload"},
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "Preempted to accommodate a workload"}]}),
        );
        assert!(
            matches!(kueue_state(&job(true), Some(&evicted)), KueueState::Evicted { reason, .. } if reason == "Preempted")
        );
        let admitted = wl(
            json!({"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"}], "admission": {"clusterQueue": "gpu-cq"}}),
        );
        assert_eq!(
            kueue_state(&job(false), Some(&admitted)),
            KueueState::NotHeld
        );
        assert_eq!(kueue_state(&job(true), None), KueueState::NoWorkload);
        // Not evaluated yet (no QuotaReserved condition): queued.
        assert!(matches!(
            kueue_state(&job(true), Some(&wl(json!({})))),
            KueueState::Queued { .. }
        ));
    }

    #[test]
    fn list_shows_queued_for_a_job_kueue_holds() {
        assert_eq!(list_state(&job(true)).as_deref(), Some("Queued"));
        assert_eq!(list_state(&job(false)), None);
    }

    #[test]
    fn a_deactivated_workload_is_kueues_own_suspend() {
        let mut w = wl(json!({}));
        w.spec.active = Some(false);
        assert_eq!(kueue_state(&job(true), Some(&w)), KueueState::Deactivated);
    }
}
