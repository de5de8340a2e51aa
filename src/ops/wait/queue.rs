//! `wait`'s queue layer: a job Kueue holds suspended is queued, not failed. While it waits,
//! progress says what Kueue says (the Workload's QuotaReserved/Admitted/Evicted conditions, the
//! ClusterQueue, the position when the visibility API answers); Kueue's inadmissible cases end
//! the wait at once (a missing LocalQueue or ClusterQueue: exit 3; more than the ClusterQueue
//! can ever give: exit 4); `--pending-timeout` bounds the queueing (exit 5). A Volcano PodGroup
//! still Pending with no pods is "gang waiting", with the PodGroup's own words.
//!
//! Kueue states follow the queueing notes' §1.15 table and Kueue v0.19's
//! `apis/kueue/v1beta2/workload_types.go` (reasons), `pkg/controller/core/workload_controller.go`
//! (`getQueueBlocker` messages), `pkg/scheduler/flavorassigner/flavorassigner.go` (the no-fit
//! messages), `pkg/workload/evict/evict.go` (Evicted reasons).

use std::time::{Duration, Instant};

use crate::cluster::Kube;
use crate::cluster::queue::{self as q, Fact, Workload, cond_true, find_cond};
use crate::error::{Error, Result};
use crate::model::TFJob;

/// How often the Workload (or PodGroup) is read again while the job waits.
const READ_EVERY: Duration = Duration::from_secs(2);

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
    let suspended = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|p| p.suspend)
        .unwrap_or(false);
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
    let cq = wl.status.admission.as_ref().map(|a| a.cluster_queue.clone());
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
        why: if m.is_empty() { qr.reason.clone() } else { m.clone() },
    }
}

/// The follow's queue state across checks.
#[derive(Debug, Default)]
pub struct QueueWatch {
    since: Option<Instant>,
    next_read: Option<Instant>,
    last_said: Option<String>,
    /// `None` until looked up; `Some(false)`: Kueue's API is not served.
    kueue_served: Option<bool>,
    /// The job is held (queued or gang waiting) right now.
    pub held: bool,
}

impl QueueWatch {
    /// Looks at the job's queue (rate-limited); `Ok(lines)` to print, `Err` to end the wait.
    pub async fn observe(
        &mut self,
        kube: &Kube,
        ns: &str,
        job: &TFJob,
        has_pods: bool,
        pending_timeout: Option<Duration>,
    ) -> Result<Vec<String>> {
        let now = Instant::now();
        if self.next_read.is_some_and(|t| now < t) {
            return Ok(vec![]);
        }
        self.next_read = Some(now + READ_EVERY);
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let mut lines = vec![];
        let held = if let Some(lq) = q::local_queue_name(job) {
            self.kueue(kube, ns, job, lq, &mut lines).await?
        } else if !has_pods && !job.is_finished() && !suspended(job) {
            self.gang(kube, ns, name, &mut lines).await?
        } else {
            None
        };
        self.held = held.is_some();
        let Some(what) = held else {
            self.since = None;
            return Ok(lines);
        };
        let since = *self.since.get_or_insert(now);
        if let Some(limit) = pending_timeout
            && now.duration_since(since) >= limit
        {
            return Err(Error::Timeout(format!(
                "TFJob {ns}/{name} is still {what} after --pending-timeout {}s",
                limit.as_secs()
            )));
        }
        Ok(lines)
    }

    fn say(&mut self, line: String, lines: &mut Vec<String>) {
        if self.last_said.as_deref() != Some(line.as_str()) {
            self.last_said = Some(line.clone());
            lines.push(line);
        }
    }

    /// `Some(what it waits for)` while Kueue holds the job.
    async fn kueue(
        &mut self,
        kube: &Kube,
        ns: &str,
        job: &TFJob,
        lq: &str,
        lines: &mut Vec<String>,
    ) -> Result<Option<String>> {
        let name = job.metadata.name.as_deref().unwrap_or_default();
        if !suspended(job) {
            return Ok(None);
        }
        if self.kueue_served.is_none() {
            self.kueue_served = q::kueue_served(kube).await?.known().copied();
        }
        if self.kueue_served == Some(false) {
            return Err(Error::JobFailed(format!(
                "TFJob {name} is suspended (runPolicy.suspend: true) and names LocalQueue {lq}, but Kueue's API is not served here: nothing will resume it"
            )));
        }
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let wl = match q::workload_for(kube, ns, uid).await? {
            Fact::Known(w) => w,
            Fact::Unknown(why) => {
                self.say(
                    format!("queued in Kueue LocalQueue {lq} (its Workload is not readable: {why})"),
                    lines,
                );
                return Ok(Some(format!("queued in LocalQueue {lq}")));
            }
        };
        let state = kueue_state(job, wl.as_ref());
        let wl_name = wl.as_ref().and_then(|w| w.metadata.name.clone());
        let flags = kube.hints.ns_flags(ns);
        match state {
            KueueState::NotHeld => Ok(None),
            KueueState::NoWorkload => {
                self.say(
                    format!("queued in Kueue LocalQueue {lq}: no Workload yet (Kueue creates one for the job)"),
                    lines,
                );
                Ok(Some(format!("queued in LocalQueue {lq} without a Workload")))
            }
            KueueState::Missing(m) => Err(Error::NotReady {
                message: format!("TFJob {ns}/{name} cannot be admitted: {m} (Workload {})", wl_name.unwrap_or_default()),
                hint: Some(format!(
                    "List the LocalQueues with `kubectl get localqueues {flags}`; Kueue admits the job once its queue exists."
                )),
            }),
            KueueState::Never { cq, why } => Err(Error::WontRun {
                message: format!(
                    "TFJob {ns}/{name} can never be admitted by ClusterQueue {} (LocalQueue {lq}) as configured: {why}",
                    cq.unwrap_or_else(|| "?".into())
                ),
                hint: Some(format!(
                    "Lower the replicas or their requests, or ask for more quota; see `kubectl tfjob diagnose {name} {flags}`."
                )),
            }),
            KueueState::Deactivated => {
                self.say(
                    format!("Workload {} is deactivated (spec.active: false): Kueue admits it once reactivated (`kubectl tfjob resume {name} {flags}`)", wl_name.unwrap_or_default()),
                    lines,
                );
                Ok(Some("deactivated in Kueue".into()))
            }
            KueueState::Evicted { reason, why } => {
                self.say(
                    format!("evicted by Kueue ({reason}): {why}; the job is suspended and queued again"),
                    lines,
                );
                Ok(Some(format!("queued after eviction ({reason})")))
            }
            KueueState::Queued { cq, why } => {
                let cq = match cq {
                    Some(cq) => Some(cq),
                    None => match q::local_queue(kube, ns, lq).await? {
                        Fact::Known(Some(l)) => Some(l.spec.cluster_queue),
                        _ => None,
                    },
                };
                let position = q::pending_position(kube, ns, lq, wl_name.as_deref())
                    .await
                    .and_then(|(p, _)| p)
                    .map(|p| format!(" (position {} in the ClusterQueue)", p + 1))
                    .unwrap_or_default();
                let cq = cq.unwrap_or_else(|| "?".into());
                self.say(
                    format!("queued in ClusterQueue {cq} (LocalQueue {lq}){position}: {why}"),
                    lines,
                );
                Ok(Some(format!("queued in ClusterQueue {cq}")))
            }
        }
    }

    /// `Some(..)` while a Volcano PodGroup holds a reconciled job with no pods.
    async fn gang(
        &mut self,
        kube: &Kube,
        ns: &str,
        name: &str,
        lines: &mut Vec<String>,
    ) -> Result<Option<String>> {
        let Fact::Known(Some((system, pg))) = q::pod_group(kube, ns, name).await? else {
            return Ok(None);
        };
        let phase = pg.status.phase.clone().unwrap_or_default();
        if !matches!(phase.as_str(), "" | "Pending" | "Inqueue") {
            return Ok(None);
        }
        let words = pg
            .status
            .conditions
            .iter()
            .rev()
            .find(|c| !c.message.is_empty())
            .map(|c| c.message.clone())
            .unwrap_or_else(|| {
                if phase.is_empty() {
                    "no gang scheduler has processed it yet (is it running?)".into()
                } else {
                    format!("minMember {}", pg.spec.min_member.unwrap_or_default())
                }
            });
        let queue = pg
            .spec
            .queue
            .as_deref()
            .map(|q| format!(" in queue {q}"))
            .unwrap_or_default();
        self.say(
            format!(
                "gang waiting: {} PodGroup {name}{queue} is {}: {words}",
                system.as_str(),
                if phase.is_empty() { "unprocessed" } else { phase.as_str() }
            ),
            lines,
        );
        Ok(Some("gang waiting".into()))
    }
}

fn suspended(job: &TFJob) -> bool {
    job.spec
        .run_policy
        .as_ref()
        .and_then(|p| p.suspend)
        .unwrap_or(false)
}

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
        let pending = wl(json!({"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100, 3 more needed"}]}));
        assert!(matches!(kueue_state(&job(true), Some(&pending)), KueueState::Queued { why, .. } if why.contains("3 more needed")));
        let max = wl(json!({"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu in flavor a100, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"}]}));
        assert!(matches!(kueue_state(&job(true), Some(&max)), KueueState::Never { .. }));
        let no_lq = wl(json!({"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Inadmissible",
            "message": "LocalQueue team-a doesn't exist"}]}));
        assert_eq!(kueue_state(&job(true), Some(&no_lq)), KueueState::Missing("LocalQueue team-a doesn't exist".into()));
        let inactive = wl(json!({"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Inadmissible",
            "message": "ClusterQueue gpu-cq is inactive"}]}));
        assert!(matches!(kueue_state(&job(true), Some(&inactive)), KueueState::Queued { .. }));
        let evicted = wl(json!({"conditions": [{"type": "Evicted", "status": "True", "reason": "Preempted", "message": "Preempted to accommodate a workload"},
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "Preempted to accommodate a workload"}]}));
        assert!(matches!(kueue_state(&job(true), Some(&evicted)), KueueState::Evicted { reason, .. } if reason == "Preempted"));
        let admitted = wl(json!({"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"}], "admission": {"clusterQueue": "gpu-cq"}}));
        assert_eq!(kueue_state(&job(false), Some(&admitted)), KueueState::NotHeld);
        assert_eq!(kueue_state(&job(true), None), KueueState::NoWorkload);
        // Not evaluated yet (no QuotaReserved condition): queued.
        assert!(matches!(kueue_state(&job(true), Some(&wl(json!({})))), KueueState::Queued { .. }));
    }

    #[test]
    fn a_deactivated_workload_is_kueues_own_suspend() {
        let mut w = wl(json!({}));
        w.spec.active = Some(false);
        assert_eq!(kueue_state(&job(true), Some(&w)), KueueState::Deactivated);
    }
}
