//! The I/O loop of `wait`: kube-runtime watchers feed reflector stores, the pure
//! [`evaluate`] decides after every change and every second, and direct GETs take over while
//! the watches fail.
//!
//! Requests do not grow with the replica count: one watch for the job, one for its pods (a
//! streaming list, `sendInitialEvents=true`, sends the current pods as events on the same
//! request; servers without it get a paged list first, as client-go's reflector falls back).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::{FutureExt, Stream, StreamExt};
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::wait::Condition;
use kube::runtime::{WatchStreamExt, watcher};

use super::conditions::{self, JobState, Outcome, evaluate};
use super::progress::Display;
use super::state::{Limits, Now, Tracker, View};
use super::{WaitFor, WaitJobOptions, WaitOptions};
use crate::cluster::budget::{self, Budget, DECORATION};
use crate::cluster::pod::{self, Pod};
use crate::cluster::{self, Action, Kube, OperatorState};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::ops::Context;
use crate::output::{Output, ReportFormat};

/// Page size of the pod list where streaming lists are not served, and of direct reads: a page
/// is read into memory whole, and each pod carries the whole cluster in TF_CONFIG.
const PAGE_SIZE: u32 = 100;
/// How often the job and its pods are read directly while the watches fail.
const POLL_EVERY: Duration = Duration::from_secs(2);
/// Watch errors in a row (no event in between) before direct reads take over.
const FAILED_WATCHES_BEFORE_POLLING: u32 = 2;
/// How often the operator is looked at again while nothing reconciles the job.
const OPERATOR_EVERY: Duration = Duration::from_secs(5);
/// Events taken in one go before the state is judged again.
const MAX_BATCH: usize = 10_000;
/// Upper bound of one direct read (job + pods) when the deadline is further away.
const READ_LIMIT: Duration = Duration::from_secs(30);
/// Log lines of a crash-looping container quoted in the failure.
const CRASH_LOG_LINES: usize = 5;
/// `--for training`: how often the running replicas' last lines are read while no step shows.
const LOOK_EVERY: Duration = Duration::from_secs(5);

/// `kubectl tfjob wait NAME`.
pub async fn run(ctx: &Context, opts: WaitJobOptions, out: &mut Output) -> Result<()> {
    let kube = ctx.kube().await?;
    let namespace = kube.namespace.clone();
    follow(kube, &namespace, &opts.name, &opts.wait, opts.format, out).await
}

/// Follows one job; shared with `submit --wait`.
pub async fn follow(
    kube: &Kube,
    namespace: &str,
    name: &str,
    opts: &WaitOptions,
    format: ReportFormat,
    out: &mut Output,
) -> Result<()> {
    // The command's one deadline (`submit --wait` has spent part of it already).
    let end = kube.deadline.end();
    kube.deadline.phase(format!(
        "waiting for TFJob {namespace}/{name} to be {}",
        opts.wait_for.flag_value()
    ));
    let mut w = Waiter {
        kube,
        namespace,
        name,
        opts,
        jobs: Api::namespaced(kube.client.clone(), namespace),
        pods: Api::namespaced(kube.client.clone(), namespace),
        selector: model::job_selector(name),
        limits: Limits::from(opts),
        tracker: Tracker::starting_at(opts.since.unwrap_or_else(k8s_openapi::jiff::Timestamp::now)),
        operator: None,
        operator_noted: false,
        display: Display::new(format, out.err_is_terminal()),
        started: Instant::now(),
        end,
        last_shown: None,
        last: None,
        asked_model: false,
        missing_since: None,
        next_refusals: None,
        pending_since: None,
        next_lookup: None,
        queue: Default::default(),
        capacity: None,
        saver: opts
            .save
            .clone()
            .map(|s| crate::ops::evidence::Saver::new(s, namespace, name, opts.max_restarts)),
        next_look: Instant::now(),
        silent: Vec::new(),
    };
    // One GET first: a missing job or CRD is reported at once instead of after a timeout.
    let first = w.get_job().await?;
    w.check_operator(&first).await?;
    let outcome = if opts.timeout.is_zero() {
        w.check_once(out).await
    } else {
        w.watch(out).await
    };
    w.display.finish();
    let outcome = w.save_at_the_end(outcome, out).await;
    w.report(outcome, format, out).await
}

struct Waiter<'a> {
    kube: &'a Kube,
    namespace: &'a str,
    name: &'a str,
    opts: &'a WaitOptions,
    jobs: Api<TFJob>,
    pods: Api<Pod>,
    selector: String,
    limits: Limits,
    tracker: Tracker,
    /// Read while the job has no condition, to tell "slow" from "nothing reconciles it".
    operator: Option<OperatorState>,
    operator_noted: bool,
    display: Display,
    started: Instant,
    /// `--timeout` bounds the whole command, the closing diagnosis included.
    end: Instant,
    last_shown: Option<(JobState, String)>,
    /// What the job waits for once the placement model said it needs more nodes (e.g.
    /// "waiting for capacity (Karpenter is present …)"), shown while a pod is Unschedulable.
    capacity: Option<String>,
    /// The last state judged, for the note after `--for running`.
    last: Option<(TFJob, Vec<Arc<Pod>>)>,
    /// The placement model was asked about Unschedulable pods (once per wait).
    asked_model: bool,
    /// Since when a reconciled job has had pods missing (for the refused-create check).
    missing_since: Option<Instant>,
    next_refusals: Option<Instant>,
    /// Since when a reconciled job has had a Pending pod (for the missing-object check).
    pending_since: Option<Instant>,
    next_lookup: Option<Instant>,
    /// Kueue's hold on the job, or a gang's.
    queue: super::queue::QueueWatch,
    /// `--save DIR`: the evidence, written as replicas terminate and when the wait ends.
    saver: Option<crate::ops::evidence::Saver>,
    /// `--for training`: when the replicas' lines may be read again, and who had no step yet.
    next_look: Instant,
    silent: Vec<String>,
}

/// Which watch an event came from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Job = 0,
    Pods = 1,
}

/// What a watch event did to its store.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    /// A (re-)list is being buffered; the store still holds the previous state.
    Buffering,
    /// The store was replaced by a complete list (objects deleted in a gap are gone).
    Synced,
    Changed,
}

impl Waiter<'_> {
    async fn get_job(&self) -> Result<TFJob> {
        let get = Action::new("get", "tfjobs", Some(self.namespace)).named(self.name);
        match cluster::retry(self.kube, || self.jobs.get_opt(self.name)).await {
            Ok(Some(job)) => {
                cluster::secret::arm_redactor(self.kube, self.namespace, job.pod_specs()).await;
                Ok(job)
            }
            Ok(None) => Err(cluster::notfound::tfjob(self.kube, self.namespace, self.name).await),
            Err(e) => Err(cluster::explain(e, &get, self.kube)),
        }
    }

    /// Looks at the operator while the job has no condition: a job nobody reconciles is named
    /// within seconds instead of running out the clock.
    async fn check_operator(&mut self, job: &TFJob) -> Result<()> {
        if conditions::is_reconciled().matches_object(Some(job)) {
            self.operator = None;
            return Ok(());
        }
        self.operator = Some(cluster::operator::current(self.kube).await?);
        Ok(())
    }

    /// The job and its pods, read directly (paged). `None`: the job is gone.
    async fn read(&self) -> std::result::Result<Option<(TFJob, Vec<Arc<Pod>>)>, kube::Error> {
        let Some(job) = cluster::retry(self.kube, || self.jobs.get_opt(self.name)).await? else {
            return Ok(None);
        };
        let mut pods = Vec::new();
        let mut lp = ListParams::default()
            .labels(&self.selector)
            .limit(PAGE_SIZE);
        loop {
            let page = cluster::retry(self.kube, || self.pods.list(&lp)).await?;
            pods.extend(page.items.into_iter().map(|mut p| {
                strip(&mut p);
                Arc::new(p)
            }));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => lp = lp.continue_token(&token),
                None => break,
            }
        }
        Ok(Some((job, pods)))
    }

    /// Shows progress and evaluates; `Some` when the wait is decided.
    fn judge(
        &mut self,
        job: TFJob,
        pods: Vec<Arc<Pod>>,
        out: &mut Output,
    ) -> Result<Option<Result<String>>> {
        let now = Now::current();
        let view = View {
            job: &job,
            pods: &pods,
            operator: self.operator.as_ref(),
        };
        let p = conditions::progress(&job, &pods);
        let mut waiting = conditions::waiting_for(self.opts.wait_for, view, self.limits);
        if let Some(capacity) = &self.capacity
            && pod::any_unschedulable(pods.iter().map(|p| &**p))
        {
            waiting = format!("{capacity}; {waiting}");
        }
        let changed = self
            .last_shown
            .as_ref()
            .is_none_or(|(lp, lw)| *lp != p || *lw != waiting);
        self.display.show(
            out,
            self.name,
            &p,
            &waiting,
            self.started.elapsed(),
            changed,
        )?;
        if changed {
            self.last_shown = Some((p, waiting));
        }
        let outcome = evaluate(
            self.opts.wait_for,
            view,
            &mut self.tracker,
            self.limits,
            now,
        );
        for line in self.tracker.take_notes() {
            self.display.note(out, &line);
        }
        if !self.operator_noted
            && let Some(op) = &self.operator
        {
            let line = match op {
                OperatorState::NotReady { .. }
                    if outcome == Outcome::Waiting && self.limits.pending_timeout.is_some() =>
                {
                    Some(format!(
                        "Nothing reconciles TFJob {}/{}: {}. Waiting up to --pending-timeout for it.",
                        self.namespace, self.name, op
                    ))
                }
                // No evidence either way: the job's own status decides (said even when it
                // already has: the warning is why the answer took the job's age).
                OperatorState::NotFound | OperatorState::Unknown(_)
                    if !conditions::is_reconciled().matches_object(Some(&job)) =>
                {
                    Some(format!(
                        "Warning: {}. An operator may still reconcile the job; it is given {}s from its creation to get a status.",
                        op,
                        self.limits
                            .pending_timeout
                            .unwrap_or(cluster::operator::RECONCILE_GRACE)
                            .as_secs()
                    ))
                }
                _ => None,
            };
            if let Some(line) = line {
                self.operator_noted = true;
                self.display.note(out, &line);
            }
        }
        self.last = Some((job, pods));
        Ok(decided(outcome))
    }

    /// `--save`: a container that terminated (or a pod that failed) since the last save is
    /// the moment to save, before the operator reacts to it with its cleanPodPolicy.
    async fn save_on_termination(&mut self, out: &mut Output) -> Result<()> {
        let (Some(saver), Some((_, pods))) = (self.saver.as_mut(), self.last.as_ref()) else {
            return Ok(());
        };
        if !saver.new_termination(pods.iter().map(|p| &**p)) {
            return Ok(());
        }
        self.display.finish();
        let (_, err) = out.streams();
        saver
            .save(self.kube, "a replica terminated", self.end, err)
            .await
    }

    /// `--save`: when the wait ends on the job's final condition, a failure or a timeout, the
    /// evidence is written before the closing diagnosis (and before the operator's cleanup, when
    /// it is quicker). A write that fails is said; the wait's own outcome keeps its exit code
    /// unless it had succeeded.
    async fn save_at_the_end(
        &mut self,
        outcome: Result<String>,
        out: &mut Output,
    ) -> Result<String> {
        let Some(saver) = self.saver.as_mut() else {
            return outcome;
        };
        let ended = self.last.as_ref().is_some_and(|(job, _)| job.is_finished());
        let terminated = self
            .last
            .as_ref()
            .is_some_and(|(_, pods)| saver.new_termination(pods.iter().map(|p| &**p)));
        let trigger = match &outcome {
            Err(Error::Interrupted(_) | Error::NotReady { .. }) => return outcome,
            Err(Error::JobFailed(_) | Error::Stalled(_) | Error::WontRun { .. }) => {
                "the wait failed"
            }
            Err(Error::Timeout(_)) => "the wait timed out",
            Err(_) => return outcome,
            Ok(_) if ended => "the job reached its final condition",
            Ok(_) if terminated => "a replica terminated",
            Ok(_) => return outcome,
        };
        let trigger = match self.last.as_ref().map(|(job, _)| job) {
            Some(job) if job.is_finished() => format!("{trigger}: the job is {}", job.state()),
            _ => trigger.to_string(),
        };
        let (_, err) = out.streams();
        match saver.save(self.kube, &trigger, self.end, err).await {
            Ok(()) => outcome,
            Err(e) if outcome.is_ok() => Err(e),
            Err(e) => {
                out.note_line(&format!("error: {e}"));
                outcome
            }
        }
    }

    /// Redraws the last state (only the live line changes: its clock).
    fn refresh(&self, out: &mut Output) -> Result<()> {
        if let Some((p, waiting)) = &self.last_shown {
            self.display
                .show(out, self.name, p, waiting, self.started.elapsed(), false)?;
        }
        Ok(())
    }

    /// `--timeout 0`: one read, one verdict (kubectl's semantics: success if it holds now).
    async fn check_once(&mut self, out: &mut Output) -> Result<String> {
        let read = Action::new("list", "pods", Some(self.namespace));
        match self.read().await {
            Ok(Some((job, pods))) => match self.judge(job, pods, out)? {
                Some(decided) => match self.trained(decided, out).await {
                    Some(decided) => decided,
                    None => Err(self.not_met("checked once (--timeout 0)")),
                },
                None => Err(self.not_met("checked once (--timeout 0)")),
            },
            Ok(None) => Err(self.deleted()),
            Err(e) => Err(cluster::explain(e, &read, self.kube)),
        }
    }

    /// At the deadline, the state of the job decides, read once more directly: the watches may
    /// have been failing, and a finished job is not a timeout.
    async fn final_check(&mut self, out: &mut Output) -> Result<String> {
        let timeout = self.opts.timeout;
        // Half of what is left: the other half is the closing diagnosis's.
        let limit = READ_LIMIT.min(self.end.saturating_duration_since(Instant::now()) / 2);
        if let Some(Ok(Some((job, pods)))) = Budget::new(limit).attempt(self.read()).await
            && let Some(decided) = self.judge(job, pods, out)?
            && let Some(decided) = self.trained(decided, out).await
        {
            return decided;
        }
        Err(self.not_met(&timed_out(self.started.elapsed(), timeout)))
    }

    fn not_met(&self, how: &str) -> Error {
        let mut waiting = self
            .last_shown
            .as_ref()
            .map(|(_, w)| format!("; {w}"))
            .unwrap_or_default();
        if !self.silent.is_empty() {
            waiting.push_str(&format!(
                "; {} from {} (`{} -f`)",
                crate::diagnose::progress::NO_STEP_YET,
                self.silent.join(", "),
                crate::diagnose::inpod::job_command(
                    &self.kube.hints,
                    self.namespace,
                    "logs",
                    self.name
                )
            ));
        }
        Error::Timeout(format!(
            "{how} waiting for TFJob {}/{} to be {}{waiting}",
            self.namespace,
            self.name,
            self.opts.wait_for.flag_value()
        ))
    }

    fn was_deleted(&self, err: &Error) -> bool {
        matches!(err, Error::JobFailed(m) if *m == self.deleted().to_string())
    }

    /// Whether the job's namespace is gone or terminating (one short read; unknown is "no").
    async fn namespace_gone(&self) -> bool {
        use k8s_openapi::api::core::v1::Namespace;
        let api: Api<Namespace> = Api::all(self.kube.client.clone());
        let budget = Budget::new(READ_LIMIT).min(Budget::until(self.end));
        match budget.attempt(api.get_opt(self.namespace)).await {
            Some(Ok(None)) => true,
            Some(Ok(Some(ns))) => ns.metadata.deletion_timestamp.is_some(),
            _ => false,
        }
    }

    fn deleted(&self) -> Error {
        Error::JobFailed(format!(
            "TFJob {}/{} was deleted while waiting",
            self.namespace, self.name
        ))
    }

    async fn watch(&mut self, out: &mut Output) -> Result<String> {
        let (job_store, job_writer) = reflector::store::<TFJob>();
        let (pod_store, pod_writer) = reflector::store::<Pod>();
        let job_cfg = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
        let job_events = reflect(
            watcher(self.jobs.clone(), job_cfg)
                .default_backoff()
                .boxed(),
            job_writer,
        )
        .map(|e| (Source::Job, e));
        let pod_events = reflect(pod_watch(self.pods.clone(), &self.selector), pod_writer)
            .map(|e| (Source::Pods, e));
        let mut events = std::pin::pin!(futures::stream::select(job_events, pod_events));

        // What the closing diagnosis may take is kept back from the watch.
        let left = self.end.saturating_duration_since(Instant::now());
        let reserve = DECORATION.min(left / 4);
        let deadline = tokio::time::sleep(left.saturating_sub(reserve));
        tokio::pin!(deadline);
        // Re-evaluate every second without events: time-based limits fire on a quiet job, and
        // the live line's clock moves.
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut health = Health::default();
        let mut polled: Option<(TFJob, Vec<Arc<Pod>>)> = None;
        let mut next_poll = Instant::now();
        let mut next_operator = budget::after(OPERATOR_EVERY);
        let ns_flags = self.kube.hints.ns_flags(self.namespace);
        // From here a Ctrl-C, whatever is being awaited, leaves the job alone: say how to resume.
        crate::error::on_interrupt(format!(
            "interrupted; the job was left as it is. Resume with: kubectl tfjob wait {} {} --for {}",
            self.name,
            ns_flags,
            self.opts.wait_for.flag_value()
        ));
        loop {
            tokio::select! {
                event = events.next() => {
                    // Take every event already received before judging: a burst (the
                    // first list of 2,000 pods) is judged once, not once per pod. The limit
                    // is checked before polling, so no event is taken off and dropped.
                    let mut event = event;
                    let mut taken = 0;
                    loop {
                        health.take(event, &ns_flags)?;
                        taken += 1;
                        if taken >= MAX_BATCH {
                            break;
                        }
                        match events.next().now_or_never() {
                            Some(next) => event = next,
                            None => break,
                        }
                    }
                }
                _ = tick.tick() => {}
                _ = &mut deadline => return self.final_check(out).await,
            }
            // Slow is not failing: a large first list takes a while and is not replaced by
            // reads that would cost as much. Direct reads only while a watch keeps failing.
            let failing = health
                .errors
                .iter()
                .any(|&e| e >= FAILED_WATCHES_BEFORE_POLLING);
            let (job, pods) = if !failing && health.synced.iter().all(|&s| s) {
                polled = None;
                match job_store.state().into_iter().next() {
                    Some(job) => (job.as_ref().clone(), pod_store.state()),
                    None => return Err(self.deleted()),
                }
            } else if !failing {
                // Still listing: keep the live clock moving on what was shown last.
                self.refresh(out)?;
                continue;
            } else {
                // The watches fail: read directly now and then.
                if Instant::now() >= next_poll {
                    next_poll = budget::after(POLL_EVERY);
                    match Budget::new(READ_LIMIT).attempt(self.read()).await {
                        Some(Ok(Some(state))) => polled = Some(state),
                        Some(Ok(None)) => return Err(self.deleted()),
                        Some(Err(e)) => tracing::debug!(error = %e, "direct read failed"),
                        None => tracing::debug!("direct read timed out"),
                    }
                }
                match &polled {
                    Some((job, pods)) => (job.clone(), pods.clone()),
                    None => {
                        self.refresh(out)?;
                        continue;
                    }
                }
            };
            if self.operator.is_some()
                && self.limits.pending_timeout.is_some()
                && Instant::now() >= next_operator
            {
                next_operator = budget::after(OPERATOR_EVERY);
                self.check_operator(&job).await?;
            }
            if let Some(decided) = self.judge(job, pods, out)?
                && (self.opts.wait_for != WaitFor::Training || Instant::now() >= self.next_look)
                && let Some(decided) = self.trained(decided, out).await
            {
                return decided;
            }
            self.save_on_termination(out).await?;
            self.observe_queue(out).await?;
            if let Some(refused) = self.refused_create().await {
                return Err(refused);
            }
            if let Some(missing) = self.waits_for_missing_objects().await {
                return Err(missing);
            }
            if let Some(decided) = self.ask_model(out).await? {
                return decided;
            }
        }
    }

    /// What a queue says of the job, as notes when it changes.
    async fn observe_queue(&mut self, out: &mut Output) -> Result<()> {
        if let Some((job, pods)) = &self.last {
            let (job, has_pods) = (job.clone(), !pods.is_empty());
            let lines = self
                .queue
                .observe(
                    self.kube,
                    self.namespace,
                    &job,
                    has_pods,
                    self.limits.pending_timeout,
                )
                .await?;
            for line in lines {
                self.display.note(out, &line);
            }
        }
        Ok(())
    }

    /// Once a pod is Unschedulable, ask the placement model once: `never` ends the wait, and
    /// what it waits for is said now, not at the next change.
    async fn ask_model(&mut self, out: &mut Output) -> Result<Option<Result<String>>> {
        // Unschedulable pods, or a queue or gang holding a job with none made yet: the
        // placement model says whether it waits or can never run, as `check` and `diagnose` do.
        if !self.asked_model
            && let Some((job, pods)) = &self.last
            && (pod::any_unschedulable(pods.iter().map(|p| &**p))
                || (pods.is_empty() && self.queue.held))
        {
            self.asked_model = true;
            let job = job.clone();
            self.capacity = crate::ops::preflight::on_unschedulable(
                self.kube,
                self.namespace,
                &job,
                self.opts.capacity_may_come,
                out,
            )
            .await?;
            if self.capacity.is_some()
                && let Some((job, pods)) = self.last.take()
                && let Some(decided) = self.judge(job, pods, out)?
            {
                return Ok(Some(decided));
            }
        }
        Ok(None)
    }

    /// `--for training` once every replica runs: one look at the replicas' last lines (at most
    /// every [`LOOK_EVERY`]) decides. Every worker showing a step is reached; one stuck past the
    /// grace period fails as `diagnose` fails it; otherwise None (keep waiting). Other targets
    /// pass through.
    /// One look at the running replicas' last lines ([`super::training`]), within the
    /// decoration budget and the deadline.
    async fn look(&self) -> super::training::Look {
        let pods = self.last.as_ref().map(|(_, p)| &p[..]).unwrap_or_default();
        let budget = Budget::until(self.end).min(Budget::new(DECORATION));
        super::training::look(
            self.kube,
            self.namespace,
            self.name,
            pods,
            self.opts.max_restarts,
            budget,
        )
        .await
    }

    async fn trained(
        &mut self,
        decided: Result<String>,
        out: &mut Output,
    ) -> Option<Result<String>> {
        if self.opts.wait_for != WaitFor::Training
            || decided.as_deref().is_err()
            || decided.as_deref().is_ok_and(|w| w == "Succeeded")
        {
            return Some(decided);
        }
        self.next_look = budget::after(LOOK_EVERY);
        let look = self.look().await;
        if let Some(stuck) = look.stuck_error().or_else(|| look.stall_error()) {
            return Some(Err(stuck));
        }
        if look.trains() {
            return Some(Ok(format!("training: {}", look.progress())));
        }
        let silent = look.silent();
        if silent != self.silent && !silent.is_empty() {
            self.display.note(
                out,
                &format!(
                    "every replica runs; {} from {}",
                    crate::diagnose::progress::NO_STEP_YET,
                    silent.join(", ")
                ),
            );
        }
        self.silent = silent;
        None
    }
}

/// The state of the two watches, from the events seen.
#[derive(Default)]
struct Health {
    synced: [bool; 2],
    /// Errors in a row per watch, since its last good event.
    errors: [u32; 2],
    forbidden: u32,
}

impl Health {
    fn take(
        &mut self,
        event: Option<(Source, std::result::Result<Signal, WatchProblem>)>,
        ns_flags: &str,
    ) -> Result<()> {
        match event {
            Some((source, Ok(signal))) => {
                self.errors[source as usize] = 0;
                self.forbidden = 0;
                if signal == Signal::Synced {
                    self.synced[source as usize] = true;
                }
                Ok(())
            }
            Some((source, Err(problem))) => {
                tracing::debug!(%problem, "watch error (retried)");
                self.errors[source as usize] += 1;
                if let WatchProblem::Forbidden(message) = &problem {
                    self.forbidden += 1;
                    if self.forbidden >= 3 {
                        return Err(Error::NotReady {
                            message: format!("forbidden to watch the job or its pods: {message}"),
                            hint: Some(format!(
                                "Confirm with `kubectl auth can-i watch pods {flags}` and `kubectl auth can-i watch tfjobs.kubeflow.org {flags}`.",
                                flags = ns_flags
                            )),
                        });
                    }
                }
                Ok(())
            }
            None => Err(Error::Other("the watch streams ended unexpectedly".into())),
        }
    }
}

fn decided(outcome: Outcome) -> Option<Result<String>> {
    match outcome {
        Outcome::Reached(what) => Some(Ok(what)),
        Outcome::Fatal(why) => Some(Err(Error::JobFailed(why))),
        Outcome::NotReconciled { message, hint } => Some(Err(Error::NotReady {
            message,
            hint: Some(hint),
        })),
        Outcome::Waiting => None,
    }
}

/// What `wait` keeps of a pod: the spec is never deserialized ([`Pod`]); managedFields go too.
fn strip(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
}

/// The job's pods as watcher events: a streaming list first; if the server refuses
/// `sendInitialEvents` (400/422 from an API server without the WatchList feature), a paged
/// list-then-watch from then on, as client-go's reflector falls back to a regular list.
fn pod_watch(
    api: Api<Pod>,
    selector: &str,
) -> BoxStream<'static, std::result::Result<watcher::Event<Pod>, watcher::Error>> {
    let streaming = watcher::Config::default()
        .labels(selector)
        .streaming_lists();
    let paged = watcher::Config::default()
        .labels(selector)
        .page_size(PAGE_SIZE);
    let first = watcher(api.clone(), streaming)
        .default_backoff()
        .map(|e| e.map(|e| e.modify(strip)))
        .boxed();
    futures::stream::unfold(
        (first, Some((api, paged))),
        |(mut current, mut fallback)| async move {
            let item = current.next().await?;
            match &item {
                Err(e) if fallback.is_some() && streaming_refused(e) => {
                    tracing::debug!(error = %e, "no streaming lists here; listing in pages");
                    let (api, cfg) = fallback.take().expect("checked");
                    current = watcher(api, cfg)
                        .default_backoff()
                        .map(|e| e.map(|e| e.modify(strip)))
                        .boxed();
                }
                // Served once: later errors are ordinary and the watcher retries them.
                Ok(watcher::Event::InitDone) => fallback = None,
                _ => {}
            }
            Some((item, (current, fallback)))
        },
    )
    .boxed()
}

/// An API server that does not serve streaming lists rejects `sendInitialEvents` /
/// `resourceVersionMatch` on a watch as invalid (kube-apiserver's list-options validation).
fn streaming_refused(err: &watcher::Error) -> bool {
    let code = match err {
        watcher::Error::WatchStartFailed(kube::Error::Api(s)) => s.code,
        watcher::Error::WatchError(s) => s.code,
        _ => return false,
    };
    matches!(code, 400 | 422)
}

/// Applies watcher events to a reflector store (buffering a re-list until it is complete, so
/// pods deleted while the watch was down disappear) and says what changed.
fn reflect<K>(
    events: BoxStream<'static, std::result::Result<watcher::Event<K>, watcher::Error>>,
    mut writer: Writer<K>,
) -> impl Stream<Item = std::result::Result<Signal, WatchProblem>>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    events.map(move |event| match event {
        Ok(event) => {
            writer.apply_watcher_event(&event);
            Ok(match event {
                watcher::Event::Init | watcher::Event::InitApply(_) => Signal::Buffering,
                watcher::Event::InitDone => Signal::Synced,
                watcher::Event::Apply(_) | watcher::Event::Delete(_) => Signal::Changed,
            })
        }
        Err(err) => Err(WatchProblem::from(&err)),
    })
}

/// A watch failure, reduced to what the waiter acts on.
#[derive(Debug)]
enum WatchProblem {
    Forbidden(String),
    Other(String),
}

impl std::fmt::Display for WatchProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WatchProblem::Forbidden(m) => write!(f, "forbidden: {m}"),
            WatchProblem::Other(m) => f.write_str(m),
        }
    }
}

impl From<&watcher::Error> for WatchProblem {
    fn from(err: &watcher::Error) -> Self {
        let status = match err {
            watcher::Error::InitialListFailed(kube::Error::Api(s))
            | watcher::Error::WatchStartFailed(kube::Error::Api(s))
            | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(&**s),
            watcher::Error::WatchError(s) => Some(&**s),
            _ => None,
        };
        match status {
            Some(s) => match cluster::forbidden::refused_status(s) {
                Some(message) => WatchProblem::Forbidden(message.to_string()),
                None => WatchProblem::Other(format!("HTTP {}: {}", s.code, s.message)),
            },
            None => WatchProblem::Other(err.to_string()),
        }
    }
}

#[path = "report.rs"]
mod report;
#[path = "stuck.rs"]
mod stuck;

pub use report::{is_namespace_gone, namespace_gone_message};

/// How long the wait watched before it gave up, said as it was: the watch stops early enough
/// to leave the closing diagnosis its share of `--timeout` (and `submit --wait` spent part of
/// it before), so the watch's own time is not the flag's. Pure.
pub fn timed_out(watched: Duration, timeout: Duration) -> String {
    let said = crate::cluster::client::seconds(watched);
    let flag = crate::model::duration::go(timeout);
    if timeout.saturating_sub(watched) < Duration::from_millis(500) {
        format!("timed out after {flag}")
    } else {
        format!(
            "timed out after {said} of watching (--timeout {flag} bounds the whole command, the diagnosis below included)"
        )
    }
}

#[cfg(test)]
mod tests;
