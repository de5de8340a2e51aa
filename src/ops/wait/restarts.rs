//! Restarts, as the kubelet and the operator mean them (pure, like [`super::conditions`], which
//! calls it; both keep their memory in [`super::state`]).
//!
//! A container that exits under `OnFailure`/`Always` is restarted in place by the kubelet; a pod
//! that fails under `OnFailure`/`Always`, or under `ExitCode` with a retryable code, is deleted
//! and created again by the operator (training-operator v1.9 `pkg/controller.v1/common/pod.go`
//! ReconcilePods, with `pkg/util/train/train_util.go` IsRetryableExitCode: code >= 128). Neither
//! is a failure: it starts the settle window again and is shown. The wait fails on a restart
//! only when one container has restarted `max_restarts` times during it (a crash loop), or when
//! the operator says so (Failed).

use std::sync::Arc;
use std::time::Duration;

use super::state::{Limits, Now, Restarted, Restarts, Tracker, View, jiff_span};
use crate::cluster::pod::{Pod, PodFacts, canonical_replica_type};
use crate::model::{self, ReplicaType, TFJob};

/// The pod-level end of a followed job, besides the operator's Failed: a crash loop or a pod
/// that fails for good, by the same rules as [`evaluate`](super::evaluate) (`logs -f` ends on them too). The
/// restarts it sees are noted in `tracker`.
pub fn pods_failed(
    job: &TFJob,
    pods: &[Arc<Pod>],
    tracker: &mut Tracker,
    limits: Limits,
    now: Now,
) -> Option<String> {
    let view = View {
        job,
        pods,
        operator: None,
    };
    observe_restarts(view, tracker, now);
    crash_loop(job, tracker, limits).or_else(|| pods.iter().find_map(|p| permanent_failure(job, p)))
}

/// The label of a replica in messages: `worker-1` for pod `JOB-worker-1`.
/// `Worker-1`, as `diagnose`, `probe` and the closing error name the replica (issue 48: one
/// label in one output); the pod's name when it is not the operator's.
fn replica_label(job: &TFJob, pod: &str) -> String {
    let job_name = job.metadata.name.as_deref().unwrap_or_default();
    crate::diagnose::failure::label_from_pod_name(pod, job_name).unwrap_or_else(|| pod.to_string())
}

/// The memory limit the job's template gives `container` of `replica_type` (what an OOM kill
/// hit; the pods are followed without their specs).
fn memory_limit(job: &TFJob, replica_type: &str, container: &str) -> Option<String> {
    let (_, spec) = job
        .spec
        .tf_replica_specs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(replica_type))?;
    let c = spec
        .template
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == container)?;
    Some(
        c.resources
            .as_ref()?
            .limits
            .as_ref()?
            .get("memory")?
            .0
            .clone(),
    )
}

/// The classes of [`crate::diagnose::failure::classify`] that are a disruption of the pod
/// by the cluster rather than its program's end.
const DISRUPTIONS: [&str; 7] = [
    "Evicted",
    "PreemptionByScheduler",
    "TerminationByKubelet",
    "EvictionByEvictionAPI",
    "DeletionByTaintManager",
    "DeletionByPodGC",
    "NodeLost",
];

/// `Worker-1: Evicted by the kubelet: The node was low on resource: memory…` when the pod
/// was disrupted. Pure.
fn disruption(pod: &Pod) -> Option<String> {
    let ev =
        crate::diagnose::failure::PodEvidence::bare(&pod.metadata, pod.status.as_ref(), u32::MAX);
    let f = crate::diagnose::failure::classify(ev, None)?;
    DISRUPTIONS
        .contains(&f.class.as_str())
        .then(|| crate::cluster::pod::first_sentence(&f.line))
}

fn times(n: u32) -> String {
    format!("{n}\u{d7}")
}

/// Records restarts in place (a bumped restartCount) and pods recreated after a failure (a new
/// uid under a name whose last instance failed), with a note for each.
pub(super) fn observe_restarts(view: View<'_>, tracker: &mut Tracker, now: Now) {
    let since = *tracker.first_seen.get_or_insert(now.wall);
    for pod in view.pods.iter().filter(|p| p.replica_type().is_some()) {
        let name = pod.pod_name();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        // An eviction, a preemption, a lost node: someone else's act, named once per pod
        // instance as diagnose names it, not left to show as a count dropping (issue 61).
        if let Some(line) = disruption(pod)
            && tracker.disrupted.insert(uid.clone())
        {
            tracker.notes.push(line);
        }
        let pod_failed = pod.pod_phase() == "Failed";
        // creationTimestamp has whole seconds: a pod stamped up to 2s before the first look
        // may have been created after it.
        let created_during_wait = pod
            .metadata
            .creation_timestamp
            .as_ref()
            .and_then(|t| t.0.checked_add(jiff_span(Duration::from_secs(2))).ok())
            .is_some_and(|t| t >= since);
        let wall = now.wall;
        let now = now.instant;
        for cs in pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
        {
            let key = (name.to_string(), cs.name.clone());
            let terminated = cs.state.as_ref().and_then(|s| s.terminated.as_ref());
            let last_terminated = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
            let entry = tracker.restarts.entry(key).or_insert_with(|| Restarts {
                uid: uid.clone(),
                // Restarts before the wait started are history, not this wait's.
                count: if created_during_wait {
                    0
                } else {
                    cs.restart_count
                },
                during_wait: 0,
                first_at: None,
                last_at: None,
                last_exit: None,
                // A container the kubelet has recovered (run past its back-off reset) starts
                // afresh, as the kubelet's back-off does.
                before: if created_during_wait || crate::diagnose::failure::recovered(cs, wall) {
                    0
                } else {
                    cs.restart_count.max(0) as u32
                },
                down_at_start: cs.restart_count > 0
                    && cs.state.as_ref().is_some_and(|s| {
                        s.waiting.is_some()
                            || s.terminated.as_ref().is_some_and(|t| t.exit_code != 0)
                    }),
                failed: false,
            });
            let mut new = 0;
            let mut exit = None;
            if entry.uid != uid {
                // Recreated: the operator replaced a failed pod (or the user deleted it).
                if entry.failed {
                    new += 1;
                    exit = entry.last_exit.clone();
                }
                entry.uid = uid.clone();
                entry.count = 0;
                entry.before = 0;
                entry.down_at_start = false;
            }
            if cs.restart_count > entry.count {
                new += (cs.restart_count - entry.count) as u32;
                exit = last_terminated.map(|t| (t.exit_code, t.reason.clone()));
            }
            entry.count = entry.count.max(cs.restart_count);
            if let Some(t) = terminated.or(last_terminated) {
                entry.last_exit = Some((t.exit_code, t.reason.clone()));
            }
            entry.failed = pod_failed && terminated.is_some_and(|t| t.exit_code != 0);
            if new == 0 {
                continue;
            }
            entry.during_wait += new;
            entry.first_at.get_or_insert(now);
            entry.last_at = Some(now);
            let container = if cs.name == model::DEFAULT_CONTAINER_NAME {
                String::new()
            } else {
                format!(" container {}", cs.name)
            };
            let exit = exit.or_else(|| entry.last_exit.clone());
            let exit_code = exit.as_ref().map(|(c, _)| *c);
            // An OOM kill says so, with the limit it hit, as diagnose does: exit 137 alone
            // reads as any SIGKILL.
            let code = match &exit {
                Some((c, Some(r))) if r == "OOMKilled" => format!(
                    " (OOMKilled{}, exit {c})",
                    pod.replica_type()
                        .and_then(|t| memory_limit(view.job, &t, &cs.name))
                        .map(|l| format!(" at its memory limit {l}"))
                        .unwrap_or_default()
                ),
                Some((c, _)) => format!(" (exit {c})"),
                None => String::new(),
            };
            let replica = replica_label(view.job, name);
            tracker.notes.push(format!(
                "{replica}{container} restarted{code}, {}",
                times(entry.during_wait)
            ));
            tracker.restarted.push(Restarted {
                replica: replica.to_string(),
                container: (cs.name != model::DEFAULT_CONTAINER_NAME).then(|| cs.name.clone()),
                exit: exit_code,
            });
        }
    }
}

/// The restart count that makes a crash loop, and where it comes from. The operator fails the
/// job once the restarts of its Running pods reach `runPolicy.backoffLimit` (v1.9
/// `pkg/controller.v1/common/job.go` ReconcileJobs → PastBackoffLimit, which sums restartCount
/// over pods of replica types with `OnFailure`/`Always`/`ExitCode`; `> 0` when the limit is 0),
/// so when the job sets one it is the bound here too.
fn restart_limit(job: &TFJob, limits: Limits) -> (u32, String) {
    match job.spec.run_policy.as_ref().and_then(|r| r.backoff_limit) {
        Some(b) => (b.max(1) as u32, format!("runPolicy.backoffLimit {b}")),
        None => (
            limits.max_restarts.max(1),
            format!("--max-restarts {}", limits.max_restarts.max(1)),
        ),
    }
}

/// One container restarted the limit's number of times during the wait: a crash loop. So is
/// one that had restarted that often before the wait and is still crashing: down when first
/// seen, or restarting again during the wait. Its earlier restarts are history only once it
/// runs without restarting (a restart the kubelet recovered from); `diagnose` and `probe`
/// judge the same container a crash loop by the same count (issue 59: one story, where a
/// real kubelet's back-off let the wait time out on a job diagnose called failed).
pub(super) fn crash_loop(job: &TFJob, tracker: &mut Tracker, limits: Limits) -> Option<String> {
    let (limit, source) = restart_limit(job, limits);
    let crashing = |r: &Restarts| {
        r.during_wait >= limit
            || (r.before + r.during_wait >= limit && (r.during_wait > 0 || r.down_at_start))
    };
    let ((pod, container), r) = tracker.restarts.iter().find(|(_, r)| crashing(r))?;
    let span = match (r.first_at, r.last_at) {
        (Some(a), Some(b)) => format!(" in {:.1}s", (b - a).as_secs_f64()),
        _ => String::new(),
    };
    let last = r
        .last_exit
        .as_ref()
        .map(|(code, reason)| {
            format!(
                ", last exit code {code}{}",
                reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_default();
    let restarted = if r.during_wait >= limit {
        format!("restarted {}{span} during the wait", times(r.during_wait))
    } else {
        format!(
            "restarted {}, {} of them during the wait",
            times(r.before + r.during_wait),
            r.during_wait
        )
    };
    let message = format!(
        "{} (pod {pod}) is crash-looping: container {container} {restarted}{last} ({source})",
        replica_label(job, pod),
    );
    tracker.crashed = Some((pod.clone(), container.clone()));
    Some(message)
}

/// A pod that decides the outcome has failed and nothing will restart it: under `Never` (the
/// operator's default, `tensorflow_defaults.go`) the operator fails the job in UpdateJobStatus;
/// under `ExitCode` with a code 1-127 (not IsRetryableExitCode) ReconcilePods fails it. Workers
/// of a job with `enableDynamicWorker` do not decide it.
pub(super) fn permanent_failure(job: &TFJob, pod: &Pod) -> Option<String> {
    if pod.pod_phase() != "Failed" {
        return None;
    }
    let rtype = pod.replica_type()?;
    if rtype == ReplicaType::Worker.as_str() && job.spec.enable_dynamic_worker == Some(true) {
        return None;
    }
    let policy = job
        .spec
        .tf_replica_specs
        .iter()
        .find(|(k, _)| canonical_replica_type(k) == rtype)
        .and_then(|(_, s)| s.restart_policy.clone())
        .unwrap_or_else(|| "Never".into());
    let main = pod
        .status
        .as_ref()?
        .container_statuses
        .iter()
        .flatten()
        .find(|cs| cs.name == model::DEFAULT_CONTAINER_NAME)
        .and_then(|cs| cs.state.as_ref()?.terminated.as_ref());
    // No terminated tensorflow status reads as 0xbeef upstream: retryable.
    let code = main.map(|t| t.exit_code).unwrap_or(0xbeef);
    let permanent = match policy.as_str() {
        "Never" => true,
        "ExitCode" => (1..128).contains(&code),
        _ => false,
    };
    if !permanent {
        return None;
    }
    let reason = main
        .and_then(|t| t.reason.as_deref())
        .map(|r| format!(", {r}"))
        .unwrap_or_default();
    Some(format!(
        "{} (pod {}) failed with exit code {code}{reason}; restartPolicy {policy} does not restart it, so the job fails",
        replica_label(job, pod.pod_name()),
        pod.pod_name()
    ))
}
