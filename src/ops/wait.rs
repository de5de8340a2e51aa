//! `wait`: follow a TFJob to a condition by watching the API, show per-replica progress, and
//! stop as soon as the outcome is settled.
//!
//! Two watches (the TFJob by name, its pods by label selector) feed reflector stores; after every
//! event the pure [`evaluate`] looks at the stores and says reached / failed / keep waiting. The
//! request count is therefore independent of the number of replicas. kube-runtime's watcher
//! re-lists on 410 Gone, re-watches dropped connections and backs off on errors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde::{Deserialize, Serialize};

use crate::cluster::{self, Action, ConnectionOptions, Kube};
use crate::error::{Error, Result};
use crate::model::{self, ReplicaType, TFJob, condition};
use crate::output::{Output, ReportFormat};

// ---------------------------------------------------------------------------------------------
// What is kept of each pod

/// A pod as `wait` keeps it: metadata and status, without the spec. The operator puts the whole
/// cluster's addresses into every pod's TF_CONFIG, so at 2,000 workers each spec is ~90 KB and
/// keeping full pods would cost ~180 MB; the spec is skipped while deserializing instead.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Pod {
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PodStatus>,
}

impl k8s_openapi::Resource for Pod {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for Pod {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

// ---------------------------------------------------------------------------------------------
// Progress (pure)

/// Pod phases per replica type, as shown while waiting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub expected: i32,
    pub pending: i32,
    pub running: i32,
    pub succeeded: i32,
    pub failed: i32,
}

/// What the job looks like right now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// The last condition type (what `kubectl get tfjobs` calls State), or "Pending".
    pub state: String,
    pub replicas: BTreeMap<String, Counts>,
    /// The most telling reason seen on a pod (Unschedulable, ImagePullBackOff, …), if any.
    pub reason: Option<String>,
}

impl Progress {
    /// One line, e.g. `Created  PS 1/1 running  Worker 1/3 running, 2 pending (Unschedulable)`.
    pub fn line(&self) -> String {
        let mut out = self.state.clone();
        for (rtype, c) in &self.replicas {
            let mut parts = vec![format!("{}/{} running", c.running, c.expected)];
            for (n, what) in [
                (c.pending, "pending"),
                (c.succeeded, "succeeded"),
                (c.failed, "failed"),
            ] {
                if n > 0 {
                    parts.push(format!("{n} {what}"));
                }
            }
            out.push_str(&format!("  {rtype} {}", parts.join(", ")));
        }
        if let Some(reason) = &self.reason {
            out.push_str(&format!("  ({reason})"));
        }
        out
    }
}

/// The replica type a pod belongs to, from the operator's label, in canonical case.
fn pod_replica_type(pod: &Pod) -> Option<String> {
    let label = pod
        .metadata
        .labels
        .as_ref()?
        .get(model::LABEL_REPLICA_TYPE)?;
    Some(
        ReplicaType::from_any_case(label)
            .map(|t| t.as_str().to_string())
            .unwrap_or_else(|| label.clone()),
    )
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
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
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.reason.clone())
}

/// Pure: counts pods per replica type against the spec.
pub fn progress(job: &TFJob, pods: &[Arc<Pod>]) -> Progress {
    let mut replicas: BTreeMap<String, Counts> = BTreeMap::new();
    for (key, spec) in &job.spec.tf_replica_specs {
        let name = ReplicaType::from_any_case(key)
            .map(|t| t.as_str().to_string())
            .unwrap_or_else(|| key.clone());
        replicas.entry(name).or_default().expected += spec.replicas.unwrap_or(1).max(0);
    }
    let mut reason = None;
    for pod in pods {
        let Some(rtype) = pod_replica_type(pod) else {
            continue;
        };
        let c = replicas.entry(rtype).or_default();
        match phase(pod) {
            "Running" if pod.metadata.deletion_timestamp.is_none() => c.running += 1,
            "Running" | "Failed" => c.failed += 1,
            "Succeeded" => c.succeeded += 1,
            _ => c.pending += 1,
        }
        if reason.is_none() {
            reason = pod_reason(pod);
        }
    }
    let state = job
        .last_condition()
        .map(|c| c.type_.clone())
        .unwrap_or_else(|| "Pending".into());
    Progress {
        state,
        replicas,
        reason,
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation (pure, given the clock)

/// What the waiter should do after looking at the current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Reached(String),
    /// The job failed or cannot make progress without someone fixing something.
    Fatal(String),
    Waiting,
}

/// Time-dependent memory of the waiter: since when each pod has shown a given problem.
#[derive(Debug, Default)]
pub struct Tracker {
    since: HashMap<(String, &'static str), Instant>,
}

impl Tracker {
    /// How long `pod` has had `problem` (zero on first sighting); forgets problems that are gone.
    fn age(&mut self, pod: &str, problem: &'static str, present: bool, now: Instant) -> Duration {
        let key = (pod.to_string(), problem);
        if present {
            now - *self.since.entry(key).or_insert(now)
        } else {
            self.since.remove(&key);
            Duration::ZERO
        }
    }
}

/// The limits that turn a slow pod into a failed wait.
/// What `wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitFor {
    /// The operator has seen the job (Created condition).
    Created,
    /// The operator's Running condition (chief, or any worker, is running).
    #[default]
    Running,
    /// Every replica pod is Running.
    AllRunning,
    /// The Succeeded condition.
    Succeeded,
    /// Succeeded (exit 0) or Failed (exit 4).
    Finished,
}

/// How long and for what `wait` (and `submit --wait`) waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitOptions {
    pub wait_for: WaitFor,
    /// Overall limit; zero checks once.
    pub timeout: Duration,
    /// Give up when a pod has been unschedulable this long.
    pub pending_timeout: Option<Duration>,
    /// How long image pull errors may persist before they count as fatal.
    pub image_pull_grace: Duration,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub image_pull_grace: Duration,
    pub pending_timeout: Option<Duration>,
}

impl From<&WaitOptions> for Limits {
    fn from(o: &WaitOptions) -> Self {
        Limits {
            image_pull_grace: o.image_pull_grace,
            pending_timeout: o.pending_timeout,
        }
    }
}

/// Pure: has the job reached `target`, failed, or should we keep waiting?
pub fn evaluate(
    target: WaitFor,
    job: &TFJob,
    pods: &[Arc<Pod>],
    tracker: &mut Tracker,
    limits: Limits,
    now: Instant,
) -> Outcome {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    if let Some(failed) = job.condition(condition::FAILED).filter(|c| c.is_true()) {
        return Outcome::Fatal(format!(
            "TFJob {name} failed: {}",
            failed.message.as_deref().unwrap_or("(no message)")
        ));
    }
    let succeeded = job.has_condition(condition::SUCCEEDED);
    let reached = match target {
        WaitFor::Created => job
            .status
            .as_ref()
            .is_some_and(|s| !s.conditions.is_empty()),
        // A job that already succeeded has been through Running.
        WaitFor::Running => job.has_condition(condition::RUNNING) || succeeded,
        WaitFor::AllRunning => {
            succeeded || {
                let p = progress(job, pods);
                let expected: i32 = p.replicas.values().map(|c| c.expected).sum();
                let running: i32 = p.replicas.values().map(|c| c.running).sum();
                expected > 0 && running >= expected
            }
        }
        WaitFor::Succeeded | WaitFor::Finished => succeeded,
    };
    if reached {
        return Outcome::Reached(match target {
            WaitFor::Created => "Created".into(),
            WaitFor::Running => "Running".into(),
            WaitFor::AllRunning => "all replicas Running".into(),
            WaitFor::Succeeded | WaitFor::Finished => "Succeeded".into(),
        });
    }
    if job.spec.run_policy.as_ref().and_then(|r| r.suspend) == Some(true) {
        return Outcome::Fatal(format!(
            "TFJob {name} is suspended (runPolicy.suspend: true); it will not run until resumed"
        ));
    }
    for pod in pods {
        if let Some(reason) = fatal_pod_problem(pod, tracker, limits, now) {
            return Outcome::Fatal(reason);
        }
    }
    Outcome::Waiting
}

/// The first problem on a pod that will not fix itself, if any.
fn fatal_pod_problem(
    pod: &Pod,
    tracker: &mut Tracker,
    limits: Limits,
    now: Instant,
) -> Option<String> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
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
            "ErrImagePull" | "ImagePullBackOff" => pulling = true,
            "InvalidImageName" | "CreateContainerConfigError" | "CreateContainerError" => {
                fatal = Some(format!(
                    "pod {name} container {}: {reason}: {message}",
                    cs.name
                ));
            }
            "CrashLoopBackOff" if cs.name == model::DEFAULT_CONTAINER_NAME => {
                let last = cs
                    .last_state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .map(|t| {
                        format!(
                            " (last exit code {}{})",
                            t.exit_code,
                            t.reason
                                .as_deref()
                                .map(|r| format!(", {r}"))
                                .unwrap_or_default()
                        )
                    })
                    .unwrap_or_default();
                fatal = Some(format!(
                    "pod {name}: the tensorflow container is crash-looping after {} restarts{last}",
                    cs.restart_count
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
    let unschedulable = status.conditions.iter().flatten().find(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    });
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

// ---------------------------------------------------------------------------------------------
// Display

/// Where progress goes: a live spinner line, a plain line per change, or NDJSON.
enum Display {
    Live(indicatif::ProgressBar),
    Lines,
    Json,
}

impl Display {
    fn new(format: ReportFormat, stderr_is_terminal: bool) -> Self {
        match format {
            ReportFormat::Json => Display::Json,
            ReportFormat::Text if stderr_is_terminal => {
                let bar = indicatif::ProgressBar::new_spinner();
                bar.enable_steady_tick(Duration::from_millis(120));
                Display::Live(bar)
            }
            ReportFormat::Text => Display::Lines,
        }
    }

    fn show(&self, out: &mut Output, job: &str, p: &Progress, elapsed: Duration) -> Result<()> {
        match self {
            Display::Live(bar) => bar.set_message(format!(
                "tfjob/{job} [{:>3}s] {}",
                elapsed.as_secs(),
                p.line()
            )),
            Display::Lines => out.data_line(&format!("tfjob/{job}: {}", p.line()))?,
            Display::Json => {
                let event = serde_json::json!({
                    "event": "progress",
                    "job": job,
                    "elapsedSeconds": elapsed.as_secs_f64(),
                    "state": p.state,
                    "replicas": p.replicas,
                    "reason": p.reason,
                });
                out.data_line(&event.to_string())?;
            }
        }
        Ok(())
    }

    fn finish(&self) {
        if let Display::Live(bar) = self {
            bar.finish_and_clear();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The command

/// `kubectl tfjob wait NAME`: `name` as given on the command line (`NAME`, `tfjob/NAME`, …).
pub async fn run(
    conn: &ConnectionOptions,
    name: &str,
    opts: &WaitOptions,
    format: ReportFormat,
    out: &mut Output,
) -> Result<()> {
    let name = crate::cluster::parse_job_name(name, "wait")?.to_string();
    let kube = cluster::connect(conn).await?;
    let namespace = kube.namespace.clone();
    follow(&kube, &namespace, &name, opts, format, out).await
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
    let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), namespace);
    let get = Action::new("get", "tfjobs", Some(namespace)).named(name);
    // One GET first: a missing job or CRD is reported at once instead of after a timeout.
    match cluster::retry(kube, || jobs.get_opt(name)).await {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Err(Error::NotReady {
                message: format!("TFJob {namespace}/{name} not found"),
                hint: Some(format!(
                    "List the jobs with `kubectl get tfjobs -n {namespace}`, or submit it with `kubectl tfjob submit`."
                )),
            });
        }
        Err(e) if cluster::is_not_found(&e) => return Err(crate::cluster::crd_not_served()),
        Err(e) => return Err(cluster::explain(e, &get, &kube.server)),
    }

    let pods: Api<Pod> = Api::namespaced(kube.client.clone(), namespace);
    let (job_store, job_writer) = reflector::store::<TFJob>();
    let (pod_store, pod_writer) = reflector::store::<Pod>();
    let job_cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let job_events = reflector(job_writer, watcher(jobs, job_cfg))
        .default_backoff()
        .map(|e| {
            e.map(|_| ()).map_err(|err| match &err {
                watcher::Error::InitialListFailed(kube::Error::Api(s))
                | watcher::Error::WatchStartFailed(kube::Error::Api(s))
                | watcher::Error::WatchError(s) => WatchProblem::from_status(s.code, &s.message),
                _ => WatchProblem::Other(err.to_string()),
            })
        });
    let pod_events = watch_pods(pods, model::job_selector(name), pod_writer);
    let mut events = std::pin::pin!(futures::stream::select(job_events, pod_events));

    let display = Display::new(format, out.err_is_terminal());
    let limits = Limits::from(opts);
    let mut tracker = Tracker::default();
    let started = Instant::now();
    let deadline = tokio::time::sleep(opts.timeout);
    tokio::pin!(deadline);
    // Re-evaluate now and then even without events, so time-based limits fire on a quiet job.
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut last_shown: Option<Progress> = None;
    let mut seen_job = false;
    let mut forbidden_errors = 0u32;
    let mut asked_model = false;

    let outcome: Result<String> = loop {
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(())) => forbidden_errors = 0,
                Some(Err(problem)) => {
                    tracing::debug!(%problem, "watch error (retried)");
                    if let WatchProblem::Forbidden(message) = &problem {
                        forbidden_errors += 1;
                        if forbidden_errors >= 3 {
                            break Err(Error::NotReady {
                                message: format!("forbidden to watch the job or its pods: {message}"),
                                hint: Some(format!(
                                    "Confirm with `kubectl auth can-i watch pods -n {namespace}` and `kubectl auth can-i watch tfjobs.kubeflow.org -n {namespace}`."
                                )),
                            });
                        }
                    }
                    continue;
                }
                None => break Err(Error::Other("the watch streams ended unexpectedly".into())),
            },
            _ = tick.tick() => {}
            _ = &mut deadline => {
                break Err(Error::Timeout(format!(
                    "timed out after {}s waiting for TFJob {namespace}/{name} to be {}",
                    opts.timeout.as_secs(),
                    target_name(opts.wait_for)
                )));
            }
            _ = &mut ctrl_c => {
                break Err(Error::Interrupted(format!(
                    "interrupted; the job was left as it is. Resume with: kubectl tfjob wait {name} -n {namespace} --for {}",
                    target_name(opts.wait_for)
                )));
            }
        }
        let Some(job) = job_store.state().into_iter().next() else {
            if seen_job {
                break Err(Error::JobFailed(format!(
                    "TFJob {namespace}/{name} was deleted while waiting"
                )));
            }
            continue;
        };
        seen_job = true;
        let pods = pod_store.state();
        let now_progress = progress(&job, &pods);
        if last_shown.as_ref() != Some(&now_progress) {
            display.show(out, name, &now_progress, started.elapsed())?;
            last_shown = Some(now_progress);
        }
        match evaluate(
            opts.wait_for,
            &job,
            &pods,
            &mut tracker,
            limits,
            Instant::now(),
        ) {
            Outcome::Reached(what) => break Ok(what),
            Outcome::Fatal(why) => break Err(Error::JobFailed(why)),
            Outcome::Waiting => {}
        }
        // Once a pod is Unschedulable, ask the placement model once: `never` ends the wait.
        if !asked_model && super::check::any_unschedulable(pods.iter().map(|p| p.status.as_ref())) {
            asked_model = true;
            if let Err(e) = super::check::on_unschedulable(kube, namespace, &job, out).await {
                break Err(e);
            }
        }
    };
    display.finish();

    match outcome {
        Ok(what) => {
            match format {
                ReportFormat::Json => out.data_line(
                    &serde_json::json!({"event": "reached", "job": name, "namespace": namespace, "condition": what,
                        "elapsedSeconds": started.elapsed().as_secs_f64()})
                    .to_string(),
                )?,
                ReportFormat::Text => {
                    out.data_line(&format!("tfjob.kubeflow.org/{name} condition met ({what})"))?
                }
            }
            // `--for finished` reaches on Succeeded only; a Failed job ends in the Fatal branch.
            Ok(())
        }
        Err(err @ Error::Interrupted(_)) => Err(err),
        Err(err @ Error::NotReady { .. }) => Err(err),
        Err(err) => {
            report_diagnosis(kube, namespace, name, format, out).await?;
            Err(err)
        }
    }
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

impl WatchProblem {
    fn from_status(code: u16, message: &str) -> Self {
        if code == 403 {
            WatchProblem::Forbidden(message.to_string())
        } else {
            WatchProblem::Other(format!("HTTP {code}: {message}"))
        }
    }
}

/// Follows the job's pods with a single watch and no list. A list would be read into memory
/// whole, and every pod of a large job carries the whole cluster in TF_CONFIG (2,000 workers:
/// ~180 MB of pods), while a watch from resourceVersion "0" streams the current pods as ADDED
/// events one at a time. Re-watches resume from the last resourceVersion (bookmarks included);
/// 410 Gone restarts from "0", which re-sends every pod (an upsert here), so nothing is missed.
/// Yields once per applied change.
fn watch_pods(
    api: Api<Pod>,
    selector: String,
    mut writer: reflector::store::Writer<Pod>,
) -> impl futures::Stream<Item = std::result::Result<(), WatchProblem>> {
    let (tx, rx) = futures::channel::mpsc::unbounded();
    tokio::spawn(async move {
        let mut version = "0".to_string();
        let mut backoff = Duration::from_millis(100);
        loop {
            let params = kube::api::WatchParams::default()
                .labels(&selector)
                .timeout(290);
            let stream = match api.watch(&params, &version).await {
                Ok(stream) => stream,
                Err(err) => {
                    let problem = match &err {
                        kube::Error::Api(s) => WatchProblem::from_status(s.code, &s.message),
                        _ => WatchProblem::Other(err.to_string()),
                    };
                    if tx.unbounded_send(Err(problem)).is_err() {
                        return;
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let applied = match event {
                    Ok(
                        kube::api::WatchEvent::Added(pod) | kube::api::WatchEvent::Modified(pod),
                    ) => {
                        version = pod.metadata.resource_version.clone().unwrap_or(version);
                        writer.apply_watcher_event(&watcher::Event::Apply(pod));
                        true
                    }
                    Ok(kube::api::WatchEvent::Deleted(pod)) => {
                        version = pod.metadata.resource_version.clone().unwrap_or(version);
                        writer.apply_watcher_event(&watcher::Event::Delete(pod));
                        true
                    }
                    Ok(kube::api::WatchEvent::Bookmark(b)) => {
                        version = b.metadata.resource_version;
                        false
                    }
                    Ok(kube::api::WatchEvent::Error(status)) => {
                        if status.code == 410 {
                            version = "0".into();
                        } else {
                            let _ = tx.unbounded_send(Err(WatchProblem::from_status(
                                status.code,
                                &status.message,
                            )));
                        }
                        break;
                    }
                    Err(err) => {
                        let _ = tx.unbounded_send(Err(WatchProblem::Other(err.to_string())));
                        break;
                    }
                };
                backoff = Duration::from_millis(100);
                if applied && tx.unbounded_send(Ok(())).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

fn target_name(target: WaitFor) -> &'static str {
    match target {
        WaitFor::Created => "created",
        WaitFor::Running => "running",
        WaitFor::AllRunning => "all-running",
        WaitFor::Succeeded => "succeeded",
        WaitFor::Finished => "finished",
    }
}

/// When a wait ends without reaching its target, say which layer is at fault.
async fn report_diagnosis(
    kube: &Kube,
    namespace: &str,
    name: &str,
    format: ReportFormat,
    out: &mut Output,
) -> Result<()> {
    match crate::diagnose::collect(kube, namespace, name, 20).await {
        Ok(snapshot) => {
            let diagnosis = crate::diagnose::diagnose(&snapshot);
            match format {
                ReportFormat::Json => out.data_line(
                    &serde_json::json!({"event": "diagnosis", "diagnosis": diagnosis}).to_string(),
                )?,
                ReportFormat::Text => {
                    out.data_line("")?;
                    let color = out.out_is_terminal();
                    out.data(&diagnosis.render_text(color))?;
                }
            }
        }
        Err(e) => out.note_line(&format!("(could not collect a diagnosis: {e})")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(conditions: serde_json::Value) -> TFJob {
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "tf", "namespace": "default"},
            "spec": {"tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}
            }},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    fn cond(t: &str, s: &str) -> serde_json::Value {
        json!({"type": t, "status": s, "reason": format!("TFJob{t}"), "message": format!("TFJob default/tf is {t}.")})
    }

    fn pod(rtype: &str, idx: i32, status: serde_json::Value) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": format!("tf-{rtype}-{idx}"), "labels": {
                    "training.kubeflow.org/replica-type": rtype,
                    "training.kubeflow.org/replica-index": idx.to_string()}},
                "status": status
            }))
            .unwrap(),
        )
    }

    fn waiting(reason: &str, message: &str) -> serde_json::Value {
        json!({"phase": "Pending", "containerStatuses": [{"name": "tensorflow", "image": "bad:1", "imageID": "",
            "ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason, "message": message}}}]})
    }

    const LIMITS: Limits = Limits {
        image_pull_grace: Duration::from_secs(60),
        pending_timeout: Some(Duration::from_secs(120)),
    };

    #[test]
    fn running_condition_reaches_running_not_succeeded() {
        let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
        let mut t = Tracker::default();
        let now = Instant::now();
        assert_eq!(
            evaluate(WaitFor::Running, &j, &[], &mut t, LIMITS, now),
            Outcome::Reached("Running".into())
        );
        assert_eq!(
            evaluate(WaitFor::Created, &j, &[], &mut t, LIMITS, now),
            Outcome::Reached("Created".into())
        );
        assert_eq!(
            evaluate(WaitFor::Succeeded, &j, &[], &mut t, LIMITS, now),
            Outcome::Waiting
        );
    }

    #[test]
    fn failed_condition_is_fatal_with_its_message() {
        let j = job(
            json!([cond("Created", "True"), {"type": "Failed", "status": "True",
            "message": "TFJob default/tf has failed because 1 Worker replica(s) failed."}]),
        );
        let out = evaluate(
            WaitFor::Finished,
            &j,
            &[],
            &mut Tracker::default(),
            LIMITS,
            Instant::now(),
        );
        assert_eq!(
            out,
            Outcome::Fatal(
                "TFJob tf failed: TFJob default/tf has failed because 1 Worker replica(s) failed."
                    .into()
            )
        );
    }

    #[test]
    fn all_running_counts_every_replica() {
        let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
        let running = json!({"phase": "Running"});
        let mut pods = vec![
            pod("ps", 0, running.clone()),
            pod("worker", 0, running.clone()),
        ];
        let mut t = Tracker::default();
        let now = Instant::now();
        assert_eq!(
            evaluate(WaitFor::AllRunning, &j, &pods, &mut t, LIMITS, now),
            Outcome::Waiting
        );
        pods.push(pod("worker", 1, running));
        assert_eq!(
            evaluate(WaitFor::AllRunning, &j, &pods, &mut t, LIMITS, now),
            Outcome::Reached("all replicas Running".into())
        );
        let p = progress(&j, &pods);
        assert_eq!(p.replicas["Worker"].running, 2);
        assert_eq!(p.replicas["PS"].expected, 1);
        assert_eq!(p.line(), "Running  PS 1/1 running  Worker 2/2 running");
    }

    #[test]
    fn image_pull_errors_get_a_grace_period() {
        let j = job(json!([cond("Created", "True")]));
        let pods = vec![pod(
            "worker",
            0,
            waiting("ImagePullBackOff", "Back-off pulling image \"bad:1\""),
        )];
        let mut t = Tracker::default();
        let t0 = Instant::now();
        assert_eq!(
            evaluate(WaitFor::Running, &j, &pods, &mut t, LIMITS, t0),
            Outcome::Waiting
        );
        match evaluate(
            WaitFor::Running,
            &j,
            &pods,
            &mut t,
            LIMITS,
            t0 + Duration::from_secs(61),
        ) {
            Outcome::Fatal(m) => assert!(m.contains("cannot pull image \"bad:1\""), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_secret_and_crash_loop_fail_at_once() {
        let j = job(json!([cond("Created", "True")]));
        let pods = vec![pod(
            "worker",
            0,
            waiting(
                "CreateContainerConfigError",
                "secret \"taotoken-secret\" not found",
            ),
        )];
        match evaluate(
            WaitFor::Running,
            &j,
            &pods,
            &mut Tracker::default(),
            LIMITS,
            Instant::now(),
        ) {
            Outcome::Fatal(m) => assert!(m.contains("secret \"taotoken-secret\" not found"), "{m}"),
            other => panic!("{other:?}"),
        }
        let crash = json!({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
            "ready": false, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]});
        let pods = vec![pod("worker", 0, crash)];
        match evaluate(
            WaitFor::Running,
            &j,
            &pods,
            &mut Tracker::default(),
            LIMITS,
            Instant::now(),
        ) {
            Outcome::Fatal(m) => {
                assert!(
                    m.contains("crash-looping after 4 restarts (last exit code 1, Error)"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unschedulable_fails_only_after_pending_timeout() {
        let j = job(json!([cond("Created", "True")]));
        let status = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]});
        let pods = vec![pod("worker", 0, status)];
        let mut t = Tracker::default();
        let t0 = Instant::now();
        assert_eq!(
            evaluate(WaitFor::Running, &j, &pods, &mut t, LIMITS, t0),
            Outcome::Waiting
        );
        assert_eq!(progress(&j, &pods).reason.as_deref(), Some("Unschedulable"));
        match evaluate(
            WaitFor::Running,
            &j,
            &pods,
            &mut t,
            LIMITS,
            t0 + Duration::from_secs(121),
        ) {
            Outcome::Fatal(m) => assert!(m.contains("Insufficient nvidia.com/gpu"), "{m}"),
            other => panic!("{other:?}"),
        }
        let no_limit = Limits {
            pending_timeout: None,
            ..LIMITS
        };
        assert_eq!(
            evaluate(
                WaitFor::Running,
                &j,
                &pods,
                &mut t,
                no_limit,
                t0 + Duration::from_secs(10_000)
            ),
            Outcome::Waiting
        );
    }
}
