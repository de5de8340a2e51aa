//! Before `wait` says every replica runs: one cheap look at each running replica's last log
//! lines (issue 46), judged by the failure classifier `diagnose` uses, so the two agree. A
//! replica that has logged for longer than [`failure::STALL_GRACE`] that it cannot reach a peer
//! is a failure for both; one that started doing so recently is said, not failed; and what was
//! not looked at (the in-pod checks) is said too.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod as FullPod;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;

use crate::cluster::budget::Budget;
use crate::cluster::pod::{Pod, PodFacts};
use crate::cluster::{self, Kube};
use crate::diagnose::failure::{self, ReplicaFailure};
use crate::diagnose::progress;
use crate::model::DEFAULT_CONTAINER_NAME;

/// Replicas looked at, the first ones in the operator's order: as many as `diagnose` reads.
const MAX_LOOKED: usize = crate::diagnose::MAX_LAST_LOG;

/// What the look found.
#[derive(Debug, Default)]
pub struct Look {
    /// Replicas stuck past the grace period: the failure, as `diagnose` names it.
    pub stuck: Vec<ReplicaFailure>,
    /// Replicas that have not reached a peer yet, for less than the grace period.
    pub not_yet: Vec<String>,
    /// Replicas whose lines were not read (the budget, an error).
    pub unread: usize,
    /// The workers, chiefs and masters looked at: their label and, once their lines show one,
    /// where they are (`step 120/500`).
    pub trainers: Vec<(String, Option<String>)>,
    /// Trainers whose step has not moved for [`progress::STALL_AFTER`] while a peer's has, or
    /// the whole job's, as `diagnose` words them (`Worker-2: no step for 12m, …`).
    pub stalled: Vec<String>,
}

impl Look {
    /// Every trainer looked at shows progress, and one was looked at.
    pub fn trains(&self) -> bool {
        self.unread == 0
            && !self.trainers.is_empty()
            && self.trainers.iter().all(|(_, p)| p.is_some())
    }

    /// `Worker-0 step 120/500, Worker-1 step 118/500`.
    pub fn progress(&self) -> String {
        self.trainers
            .iter()
            .map(|(r, p)| {
                format!(
                    "{r} {}",
                    p.as_deref()
                        .unwrap_or(crate::diagnose::progress::NO_STEP_YET)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A stall of the steps as `--for training`'s failure (exit 4): the job was asked to
    /// train and does not. (`diagnose` and `wait` for running say it as a warning.)
    pub fn stall_error(&self) -> Option<crate::error::Error> {
        self.stalled.first().map(|stall| {
            crate::error::Error::Stalled(format!(
                "{stall}: every replica runs, but training stopped advancing"
            ))
        })
    }

    /// The first replica stuck past the grace period, as the wait's failure (exit 4).
    pub fn stuck_error(&self) -> Option<crate::error::Error> {
        self.stuck.first().map(|first| {
            crate::error::Error::Stalled(format!(
                "{}: every replica runs, but it has not reached its peers for over {}",
                first.line,
                crate::model::duration::coarse(failure::STALL_GRACE.as_secs() as i64)
            ))
        })
    }

    /// The trainers without a progress line yet.
    pub fn silent(&self) -> Vec<String> {
        self.trainers
            .iter()
            .filter(|(_, p)| p.is_none())
            .map(|(r, _)| r.clone())
            .collect()
    }
}

/// The replica types that log training steps (`diagnose::progress::logs_steps`).
fn trains_itself(pod: &Pod) -> bool {
    pod.replica_type()
        .is_some_and(|t| crate::diagnose::progress::logs_steps(&t))
}

/// Reads the last lines of the running replicas (at most [`MAX_LOOKED`], within `budget`).
pub async fn look(
    kube: &Kube,
    ns: &str,
    job: &str,
    pods: &[Arc<Pod>],
    max_restarts: u32,
    budget: Budget,
) -> Look {
    let api: Api<FullPod> = Api::namespaced(kube.client.clone(), ns);
    let mut running: Vec<&Arc<Pod>> = pods.iter().filter(|p| p.started()).collect();
    running.sort_by_key(|p| {
        crate::print::jobview::replica_order(
            &failure::replica_label(&p.metadata, Some(job)).to_lowercase(),
        )
    });
    let mut look = Look::default();
    let now = Timestamp::now();
    let mut progressed: Vec<(String, progress::Progress)> = Vec::new();
    for pod in running.iter().take(MAX_LOOKED) {
        let container = main_container(pod);
        let read = cluster::bounded::recent_lines(&api, pod.pod_name(), &container);
        let Some(Ok(log)) = budget.attempt(read).await else {
            look.unread += 1;
            continue;
        };
        judge(pod, job, &log, now, max_restarts, &mut look);
        if trains_itself(pod) {
            let label = failure::replica_label(&pod.metadata, Some(job));
            let found = progress::of_log(&log, None);
            let at = found.as_ref().map(|p| match p.total {
                Some(t) => format!("step {}/{t}", p.step),
                None => format!("step {}", p.step),
            });
            if let Some(p) = found {
                progressed.push((label.clone(), p));
            }
            look.trainers.push((label, at));
        }
    }
    look.unread += running.len().saturating_sub(MAX_LOOKED);
    look.stalled = progress::stalls(&progressed, now, progress::STALL_AFTER);
    look
}

/// Pure: one replica's lines into the look.
fn judge(pod: &Pod, job: &str, log: &str, now: Timestamp, max_restarts: u32, look: &mut Look) {
    let ev = failure::PodEvidence {
        meta: &pod.metadata,
        status: pod.status.as_ref(),
        memory_limit: None,
        log: Some(log),
        node_not_ready: None,
        max_restarts,
        now: Some(now),
    };
    match failure::classify(ev, Some(job)) {
        Some(f) if f.running => look.stuck.push(f),
        _ => {
            if let (Some(since), Some((sig, line))) =
                (failure::stalled_since(log), failure::scan_log(log))
                && sig.stalls
            {
                let secs = now.duration_since(since).as_secs().max(0);
                look.not_yet.push(format!(
                    "{}: has not reached a peer for {} ({line})",
                    failure::replica_label(&pod.metadata, Some(job)),
                    crate::model::duration::coarse(secs)
                ));
            }
        }
    }
}

/// The training container: `tensorflow`, else the first the kubelet reports.
fn main_container(pod: &Pod) -> String {
    let names: Vec<&str> = pod
        .status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .map(|c| c.name.as_str())
        .collect();
    names
        .iter()
        .find(|n| **n == DEFAULT_CONTAINER_NAME)
        .or(names.first())
        .unwrap_or(&DEFAULT_CONTAINER_NAME)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(name: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1"}},
            "status": {"phase": "Running", "containerStatuses": [{"name": "tensorflow",
                "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                "state": {"running": {"startedAt": "2026-01-01T10:00:00Z"}}}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_stall_is_said_while_young_and_a_failure_once_old() {
        let pod = running("j-worker-1");
        let now: Timestamp = "2026-01-01T10:10:00Z".parse().unwrap();
        let log = |t: &str| {
            format!(
                "{t} UnavailableError: failed to connect to all addresses; last error: Connection refused\n"
            )
        };
        let mut young = Look::default();
        judge(
            &pod,
            "j",
            &log("2026-01-01T10:09:30.000000000Z"),
            now,
            3,
            &mut young,
        );
        assert!(young.stuck.is_empty());
        assert_eq!(young.not_yet.len(), 1);
        assert!(
            young.not_yet[0].starts_with("Worker-1: has not reached a peer for 30s (Unavailable"),
            "{:?}",
            young.not_yet
        );
        let mut old = Look::default();
        judge(
            &pod,
            "j",
            &log("2026-01-01T10:01:00.000000000Z"),
            now,
            3,
            &mut old,
        );
        assert_eq!(old.stuck.len(), 1);
        assert!(old.stuck[0].line.starts_with("Worker-1: Unavailable"));
        // Progress after it: nothing to say.
        let mut fine = Look::default();
        let trained = format!(
            "{}2026-01-01T10:02:00.000000000Z step 10 loss 0.3\n",
            log("2026-01-01T10:01:00.000000000Z")
        );
        judge(&pod, "j", &trained, now, 3, &mut fine);
        assert!(fine.stuck.is_empty() && fine.not_yet.is_empty());
    }
}
