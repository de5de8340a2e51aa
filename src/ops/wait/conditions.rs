//! Pure evaluation: what the job and its pods look like, and whether the wait is over.
//!
//! Job-level conditions are kube-runtime [`Condition`]s over the TFJob, so they compose with
//! `.and()`/`.or()`/`.not()` like `kube::runtime::wait::conditions`; pod-level checks need the
//! pods and the clock, so [`evaluate`] takes both (`now` is injected: tests drive the clock).
//!
//! Why `all-running` is the default: the training-operator sets `Running` as soon as the chief
//! runs, or, without a chief, as soon as *any one* worker runs (`tfjob_controller.go`
//! `UpdateJobStatus`, summarised in `operator-behavior.md` "When is Running set"). A job with
//! 1 PS + 3 one-GPU workers on a one-GPU cluster is therefore `Running` while two workers are
//! Unschedulable forever.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use kube::runtime::wait::Condition;

use super::WaitFor;
use super::restarts::{crash_loop, observe_restarts, permanent_failure};
use super::state::{Limits, Now, Settle, Tracker, View, jiff_span};
use crate::cluster::operator::OperatorState;
use crate::cluster::pod::{self, Pod, PodFacts};
use crate::model::{self, TFJob, condition};

// ---------------------------------------------------------------------------------------------
// Job conditions

/// The job carries condition `type_` with status True.
pub fn has_condition(type_: &'static str) -> impl Condition<TFJob> {
    move |job: Option<&TFJob>| job.is_some_and(|j| j.has_condition(type_))
}

/// The operator has written a condition (it writes Created on its first reconcile).
pub fn is_reconciled() -> impl Condition<TFJob> {
    |job: Option<&TFJob>| {
        job.and_then(|j| j.status.as_ref())
            .is_some_and(|s| !s.conditions.is_empty())
    }
}

/// The operator's Running, in its own meaning (chief, or any worker). A job that already
/// succeeded has been through it.
pub fn operator_says_running() -> impl Condition<TFJob> {
    has_condition(condition::RUNNING).or(has_condition(condition::SUCCEEDED))
}

/// `runPolicy.suspend: true`: the operator deletes the pods and creates none.
pub fn is_suspended() -> impl Condition<TFJob> {
    |job: Option<&TFJob>| job.is_some_and(TFJob::is_suspended)
}

// ---------------------------------------------------------------------------------------------
// Pods

/// When the most recently (re)started container of `pod` started, as the kubelet reports it.
fn last_start(pod: &Pod) -> Option<Timestamp> {
    let containers = pod.status.as_ref()?.container_statuses.as_deref()?;
    containers
        .iter()
        .map(|cs| {
            cs.state
                .as_ref()
                .and_then(|s| s.running.as_ref())
                .and_then(|r| r.started_at.as_ref())
                .map(|t| t.0)
        })
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()
}

/// Restarts per pod instance: a recreated pod (new uid) or a bumped restartCount changes it.
fn restart_marks(pods: &[Arc<Pod>]) -> BTreeMap<String, i32> {
    pods.iter()
        .filter(|p| p.replica_type().is_some())
        .map(|p| {
            let key = format!(
                "{}/{}",
                p.pod_name(),
                p.metadata.uid.as_deref().unwrap_or_default()
            );
            let restarts = p.restarts();
            (key, restarts)
        })
        .collect()
}

/// The replica count of every role, keyed by canonical role name: the operator's pods
/// ([`crate::operator_pods`]).
pub fn expected_replicas(job: &TFJob) -> BTreeMap<String, i32> {
    crate::operator_pods::expand(job).expected()
}

/// Started pods per canonical role name.
fn started_per_role(pods: &[Arc<Pod>]) -> BTreeMap<String, i32> {
    let mut started: BTreeMap<String, i32> = BTreeMap::new();
    for pod in pods.iter().filter(|p| p.started()) {
        if let Some(rtype) = pod.replica_type() {
            *started.entry(rtype).or_default() += 1;
        }
    }
    started
}

/// Every replica of every role has a started pod.
pub fn all_started(job: &TFJob, pods: &[Arc<Pod>]) -> bool {
    let expected = expected_replicas(job);
    let started = started_per_role(pods);
    expected.values().sum::<i32>() > 0
        && expected
            .iter()
            .all(|(rtype, n)| started.get(rtype).copied().unwrap_or(0) >= *n)
}

/// The scheduler's verdict on a pod that is not scheduled: `Unschedulable: 0/1 nodes …`.
fn scheduler_says(pod: &Pod) -> Option<String> {
    let cond = pod.not_scheduled()?;
    Some(match (&cond.reason, &cond.message) {
        (Some(r), Some(m)) => format!("{r}: {m}"),
        (Some(r), None) => r.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) => "not scheduled".into(),
    })
}

/// The replicas that do not run, one line each (pod name, phase and the scheduler's or the
/// kubelet's reason), plus roles whose pods do not exist yet.
pub fn not_running(job: &TFJob, pods: &[Arc<Pod>]) -> Vec<String> {
    let mut out = Vec::new();
    let mut have: BTreeMap<String, i32> = BTreeMap::new();
    let mut sorted: Vec<&Arc<Pod>> = pods.iter().collect();
    sorted.sort_by(|a, b| a.pod_name().cmp(b.pod_name()));
    for pod in sorted {
        let Some(rtype) = pod.replica_type() else {
            continue;
        };
        *have.entry(rtype).or_default() += 1;
        if pod.started() {
            continue;
        }
        let why = (pod.metadata.deletion_timestamp.is_some())
            .then(|| pod::terminating(pod.as_ref()))
            .or_else(|| {
                pod.node_stopped_reporting()
                    .then(|| pod::NODE_STOPPED.to_string())
            })
            .or_else(|| scheduler_says(pod))
            .or_else(|| pod_reason(pod))
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        out.push(format!("{} ({}{why})", pod.pod_name(), pod.pod_phase()));
    }
    for (rtype, n) in expected_replicas(job) {
        let missing = n - have.get(&rtype).copied().unwrap_or(0);
        if missing > 0 {
            out.push(format!("{missing} {rtype} replica(s) without a pod yet"));
        }
    }
    out
}

/// A waiting/terminated reason worth showing, or the scheduler's verdict.
fn pod_reason(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    for cs in status.container_statuses.iter().flatten() {
        if let Some(reason) = cs
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone())
            .filter(|r| r != "ContainerCreating" && r != "PodInitializing")
        {
            return Some(reason);
        }
        if let Some(t) = cs.state.as_ref().and_then(|s| s.terminated.as_ref())
            && t.exit_code != 0
        {
            return Some(
                t.reason
                    .clone()
                    .unwrap_or_else(|| format!("exit {}", t.exit_code)),
            );
        }
    }
    pod::not_scheduled(status).and_then(|c| c.reason.clone())
}

// ---------------------------------------------------------------------------------------------
// JobState

// The plain types live print-side, with the lines made of them.
pub use crate::print::progress::{Counts, JobState};

/// Counts pods per replica type against the spec.
pub fn progress(job: &TFJob, pods: &[Arc<Pod>]) -> JobState {
    let mut replicas: BTreeMap<String, Counts> = expected_replicas(job)
        .into_iter()
        .map(|(rtype, expected)| {
            (
                rtype,
                Counts {
                    expected,
                    ..Counts::default()
                },
            )
        })
        .collect();
    let mut reason = None;
    for pod in pods {
        let Some(rtype) = pod.replica_type() else {
            continue;
        };
        let c = replicas.entry(rtype).or_default();
        // Running means what `started` means for every command: not being deleted, every
        // container running (issue 46: `Worker 2/2 running (CrashLoopBackOff)`).
        match pod.pod_phase() {
            _ if pod.metadata.deletion_timestamp.is_some() && pod.pod_phase() != "Succeeded" => {
                c.terminating += 1
            }
            "Running" if pod.started() => c.running += 1,
            "Running" => c.restarting += 1,
            "Failed" => c.failed += 1,
            "Succeeded" => c.succeeded += 1,
            _ => c.pending += 1,
        }
        if reason.is_none() {
            reason = pod_reason(pod).map(shown_reason);
        }
    }
    JobState {
        state: crate::placement::queue_state::list_state(job).unwrap_or_else(|| job.state()),
        replicas,
        reason,
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/// What the waiter should do after looking at the current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Reached(String),
    /// The job failed or cannot make progress without someone fixing something.
    Fatal(String),
    /// Nothing reconciles the job: the operator is missing or not ready.
    NotReconciled {
        message: String,
        hint: String,
    },
    Waiting,
}

/// Has the job reached `target`, failed, or should we keep waiting?
pub fn evaluate(
    target: WaitFor,
    view: View<'_>,
    tracker: &mut Tracker,
    limits: Limits,
    now: Now,
) -> Outcome {
    let job = view.job;
    let name = job.metadata.name.as_deref().unwrap_or_default();
    if let Some(failed) = job.condition(condition::FAILED).filter(|c| c.is_true()) {
        return Outcome::Fatal(format!(
            "TFJob {name} failed: {}",
            failed.message.as_deref().unwrap_or("(no message)")
        ));
    }
    observe_restarts(view, tracker, now);
    let succeeded = has_condition(condition::SUCCEEDED).matches_object(Some(job));
    let reached = match target {
        WaitFor::Created => is_reconciled().matches_object(Some(job)),
        WaitFor::Running => operator_says_running().matches_object(Some(job)),
        // A job that succeeded has run; its pods may be gone already (cleanPodPolicy).
        // `training` is reached here as all-running; its progress lines are read by the
        // follower (`wait::training`), which alone does I/O.
        WaitFor::AllRunning | WaitFor::Training => {
            succeeded || settled(view, tracker, limits.settle, now)
        }
        WaitFor::Succeeded | WaitFor::Finished => succeeded,
        // A job that still exists is not deleted (`wait` follows deletion apart).
        WaitFor::Deleted => false,
    };
    if reached {
        return Outcome::Reached(match target {
            WaitFor::Created => "Created".into(),
            WaitFor::Running => "Running".into(),
            WaitFor::AllRunning | WaitFor::Training if succeeded => "Succeeded".into(),
            WaitFor::AllRunning | WaitFor::Training => "all replicas Running".into(),
            WaitFor::Succeeded | WaitFor::Finished => "Succeeded".into(),
            WaitFor::Deleted => "deleted".into(),
        });
    }
    // A job in a Kueue queue is suspended by Kueue until admitted: the queue layer
    // (`wait::queue`) judges it, not this.
    if is_suspended().matches_object(Some(job))
        && crate::cluster::queue::local_queue_name(job).is_none()
    {
        return Outcome::Fatal(format!(
            "TFJob {name} is suspended (runPolicy.suspend: true); it will not run until resumed"
        ));
    }
    if let Some(outcome) = unreconciled(view, tracker, limits, now) {
        return outcome;
    }
    if let Some(reason) = crash_loop(job, tracker, limits) {
        return Outcome::Fatal(reason);
    }
    for pod in view.pods {
        if let Some(reason) = permanent_failure(job, pod) {
            return Outcome::Fatal(reason);
        }
        if let Some(reason) = fatal_pod_problem(pod, tracker, limits, now.instant) {
            return Outcome::Fatal(reason);
        }
    }
    Outcome::Waiting
}

/// Every replica runs and has done so for `settle` without a restart: observed by this waiter
/// (a bumped restartCount or a recreated pod starts the window again), or shown by the
/// kubelet's `startedAt` on every container (which a restart resets), so a single check of a
/// job that has been running for a while holds at once. The second is compared with the wall
/// clock, so a skew between this machine and the nodes shifts it by that skew.
fn settled(view: View<'_>, tracker: &mut Tracker, settle: Duration, now: Now) -> bool {
    if !all_started(view.job, view.pods) {
        tracker.settle = None;
        return false;
    }
    let restarts = restart_marks(view.pods);
    match &tracker.settle {
        Some(s) if s.restarts == restarts => {}
        _ => {
            tracker.settle = Some(Settle {
                since: now.instant,
                restarts,
            })
        }
    }
    if tracker.settling_for(now.instant).unwrap_or_default() >= settle {
        return true;
    }
    let Some(cutoff) = now.wall.checked_sub(jiff_span(settle)).ok() else {
        return false;
    };
    view.pods
        .iter()
        .filter(|p| p.started())
        .all(|p| last_start(p).is_some_and(|t| t <= cutoff))
}

/// Nothing reconciles the job. With the operator's Deployment seen with no ready replica, at
/// once, or after `--pending-timeout` when given (it may be rolling out). With the operator not
/// found or not readable, the job itself decides: a running operator writes Created within
/// seconds, so a job still without status `--pending-timeout` (default
/// [`RECONCILE_GRACE`](crate::cluster::operator::RECONCILE_GRACE)) after its creation is not
/// being reconciled.
fn unreconciled(
    view: View<'_>,
    tracker: &mut Tracker,
    limits: Limits,
    now: Now,
) -> Option<Outcome> {
    let job = view.job;
    let pending = !is_reconciled().matches_object(Some(job));
    let down = pending && matches!(view.operator, Some(OperatorState::NotReady { .. }));
    let age = tracker.age("", "operator-down", down, now.instant);
    let ns = job.metadata.namespace.as_deref().unwrap_or("default");
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let wait_longer = "To wait longer for it, pass --pending-timeout (e.g. --pending-timeout 5m).";
    let operator = view.operator?;
    if pending
        && matches!(
            operator,
            OperatorState::NotFound | OperatorState::Unknown(_)
        )
    {
        let limit = limits
            .pending_timeout
            .unwrap_or(crate::cluster::operator::RECONCILE_GRACE);
        let created = job.metadata.creation_timestamp.as_ref()?.0;
        let old = u64::try_from(now.wall.duration_since(created).as_secs()).ok();
        let cause = crate::cluster::operator::not_reconciling_after(operator, old, limit)?;
        return Some(Outcome::NotReconciled {
            message: format!(
                "nothing reconciles TFJob {ns}/{name}: {cause}; the job stays {}",
                model::STATE_NOT_RECONCILED
            ),
            hint: format!("{} {wait_longer}", crate::cluster::install_operator_hint()),
        });
    }
    if !down || limits.pending_timeout.is_some_and(|l| age < l) {
        return None;
    }
    let waited = if age.is_zero() {
        String::new()
    } else {
        format!(" (waited {}s)", age.as_secs())
    };
    let OperatorState::NotReady {
        namespace,
        name: deployment,
        ..
    } = operator
    else {
        return None;
    };
    let cause = crate::cluster::operator::not_reconciling(operator, None)?;
    Some(Outcome::NotReconciled {
        message: format!(
            "nothing reconciles TFJob {ns}/{name}: {cause}; the job stays {}{waited}",
            model::STATE_NOT_RECONCILED
        ),
        hint: format!(
            "See why: kubectl -n {namespace} describe deployment {deployment}; kubectl -n {namespace} logs deploy/{deployment}. {wait_longer}"
        ),
    })
}

/// What the waiter is waiting for right now, in words that change only when the state does.
pub fn waiting_for(target: WaitFor, view: View<'_>, limits: Limits) -> String {
    let job = view.job;
    // An ended job waits for nothing: its replicas completed, not "not running" (issue 61
    // item 6: the last line before "condition met (Succeeded)" must not contradict it).
    if job.has_condition(condition::SUCCEEDED) {
        return "the job succeeded: its replicas completed".into();
    }
    if job.has_condition(condition::FAILED) {
        return "the job failed".into();
    }
    if !is_reconciled().matches_object(Some(job)) {
        return match view.operator {
            Some(op @ OperatorState::NotReady { .. }) => {
                format!("waiting for an operator to reconcile the job: {}", op)
            }
            _ => "waiting for the training-operator to reconcile the job".into(),
        };
    }
    match target {
        WaitFor::Created => "waiting for the training-operator to reconcile the job".into(),
        WaitFor::Running => {
            "waiting for the operator's Running condition (the chief, or one worker, running)"
                .into()
        }
        WaitFor::AllRunning | WaitFor::Training if all_started(job, view.pods) => format!(
            "all replicas running; waiting until they have run {} without a restart{}",
            crate::cluster::client::seconds(limits.settle),
            if target == WaitFor::Training {
                " and every worker logs a step"
            } else {
                ""
            }
        ),
        WaitFor::AllRunning | WaitFor::Training => {
            let expected = expected_replicas(job);
            let started = started_per_role(view.pods);
            let total: i32 = expected.values().sum();
            let running: i32 = expected
                .iter()
                .map(|(rtype, n)| started.get(rtype).copied().unwrap_or(0).min(*n))
                .sum();
            format!(
                "waiting for every replica to run ({} of {total} not running)",
                total - running
            )
        }
        WaitFor::Succeeded | WaitFor::Finished => "waiting for the job to finish".into(),
        WaitFor::Deleted => "waiting for the job to be deleted".into(),
    }
}

/// The registry's answer on a failed pull says the image (or that tag) does not exist, which
/// no retry fixes: containerd's CRI error is `rpc error: code = NotFound desc = failed to pull
/// and unpack image …: not found`, CRI-O's and registries' (OCI distribution spec) is
/// `manifest unknown`. The kubelet passes the CRI error through as ErrImagePull's message and,
/// since 1.32, appends it to ImagePullBackOff's `Back-off pulling image "X": ErrImagePull: …`
/// (pkg/kubelet/images/image_manager.go). Anything else (a timeout, 429, an unreachable
/// registry, 401 before a pull secret is added) may pass and keeps `--image-pull-grace`.
pub fn registry_says_missing(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("code = notfound") || m.contains("manifest unknown")
}

/// The reason shown in progress lines: the kubelet alternates ErrImagePull (a pull failed) and
/// ImagePullBackOff (waiting to retry) on every attempt, which would be a new line every few
/// seconds with nothing changed; both read as the one state "ImagePullBackOff".
fn shown_reason(reason: String) -> String {
    if reason == "ErrImagePull" {
        "ImagePullBackOff".into()
    } else {
        reason
    }
}

/// The first problem on a pod that will not fix itself, if any.
fn fatal_pod_problem(
    pod: &Pod,
    tracker: &mut Tracker,
    limits: Limits,
    now: Instant,
) -> Option<String> {
    let name = pod.pod_name();
    let status = pod.status.as_ref()?;
    let mut pulling = false;
    let mut fatal = None;
    for cs in status.container_statuses.iter().flatten() {
        let Some(waiting) = cs.state.as_ref().and_then(|s| s.waiting.as_ref()) else {
            continue;
        };
        let reason = waiting.reason.as_deref().unwrap_or_default();
        let message = waiting.message.as_deref().unwrap_or_default();
        match reason {
            "ErrImagePull" | "ImagePullBackOff" if registry_says_missing(message) => {
                fatal = Some(format!(
                    "pod {name} container {}: image {:?} does not exist: the registry answered {reason}: {message}",
                    cs.name, cs.image
                ));
            }
            "ErrImagePull" | "ImagePullBackOff" => pulling = true,
            "InvalidImageName"
            | "ErrImageNeverPull"
            | "CreateContainerConfigError"
            | "CreateContainerError" => {
                fatal = Some(format!(
                    "pod {name} container {}: {reason}: {message}",
                    cs.name
                ));
            }
            _ => {}
        }
    }
    if fatal.is_some() {
        return fatal;
    }
    let pull_age = tracker.age(name, "image-pull", pulling, now);
    if pulling && pull_age >= limits.image_pull_grace {
        let image = status
            .container_statuses
            .iter()
            .flatten()
            .find(|cs| {
                cs.state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .is_some_and(|w| w.reason.as_deref().is_some_and(|r| r.contains("Image")))
            })
            .map(|cs| cs.image.clone())
            .unwrap_or_default();
        return Some(format!(
            "pod {name} cannot pull image {image:?} (for {}s)",
            pull_age.as_secs()
        ));
    }
    let unschedulable = pod::unschedulable(status);
    let pending_age = tracker.age(name, "unschedulable", unschedulable.is_some(), now);
    if let (Some(cond), Some(limit)) = (unschedulable, limits.pending_timeout)
        && pending_age >= limit
    {
        return Some(format!(
            "pod {name} has been unschedulable for {}s: {}",
            pending_age.as_secs(),
            cond.message.as_deref().unwrap_or_default()
        ));
    }
    None
}

#[cfg(test)]
mod tests;
