//! The Workload's JobSet arm (issue 27): a JobSet that `export --to jobset` or `submit --to
//! jobset` made, read and judged by what the JobSet and Job controllers write (jobset.md §4:
//! `replicatedJobsStatus`, its conditions, the `jobset.sigs.k8s.io/jobset-name` pod label).
//! Its one health verdict is [`health`]: `wait`'s [`evaluate`], `diagnose`'s report and the
//! Workload's `ended` all read it. The API and controller check ([`check_jobset`]), the watch
//! that follows it ([`follow`]) and its diagnosis ([`diagnose`]) sit here beside it.

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams, Preconditions, PropagationPolicy};
use kube::runtime::{WatchStreamExt, watcher};

use super::Workload;
use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::ops::Context;
use crate::ops::wait::WaitFor;
use crate::output::Output;
use crate::pipeline::jobset::model::{JobSet, JobSetStatus};
use crate::pipeline::jobset::{self, COMPLETION_INDEX_ANNOTATION, LABEL_REPLICATED_JOB};

/// A JobSet pod's task, where the pod says it: the replicatedJob it belongs to and its Job's
/// completion index (the export names each replicatedJob after its replica type).
pub fn jobset_task(m: &ObjectMeta) -> (Option<&str>, Option<&str>) {
    let rjob = m.labels.as_ref().and_then(|l| l.get(LABEL_REPLICATED_JOB));
    let index = m
        .annotations
        .as_ref()
        .and_then(|a| a.get(COMPLETION_INDEX_ANNOTATION));
    (rjob.map(String::as_str), index.map(String::as_str))
}

/// `<rjob>-<index>` ([`jobset_task`]), `?` for what the pod does not say.
pub fn jobset_replica(m: &ObjectMeta) -> String {
    let (rjob, index) = jobset_task(m);
    format!("{}-{}", rjob.unwrap_or("?"), index.unwrap_or("?"))
}

/// The JobSet's API.
pub(crate) fn jobsets(kube: &Kube) -> Api<JobSet> {
    Api::namespaced(kube.client.clone(), &kube.namespace)
}

/// The JobSet `name` does not exist in the namespace (exit 3, as kubectl's NotFound).
pub(crate) fn jobset_not_found(kube: &Kube, name: &str) -> Error {
    Error::NotFound(format!(
        "jobsets.jobset.x-k8s.io {name:?} not found in namespace {:?}",
        kube.namespace
    ))
}

/// The JobSet `name`, read once, if the plugin made it; said as kubectl says it when it is
/// not there or JobSet is not installed.
pub async fn read_jobset(kube: &Kube, name: &str) -> Result<JobSet> {
    let action = Action::new("get", "jobsets", Some(&kube.namespace)).named(name);
    let api = jobsets(kube);
    match cluster::retry(kube, || api.get_opt(name)).await {
        Ok(Some(js)) => {
            let js = ours(js, &kube.namespace)?;
            super::arm(kube, &Workload::JobSet(js.clone())).await;
            Ok(js)
        }
        Ok(None) => Err(jobset_not_found(kube, name)),
        Err(e) if cluster::status_code(&e) == Some(404) => Err(jobset_not_served()),
        Err(e) => Err(cluster::explain(e, &action, kube)),
    }
}

/// The JobSet if the plugin made it (`export`/`submit --to jobset` annotate it), else a
/// Conflict (exit 3, as for any object that exists but is not the one asked for): the
/// day-two commands read a JobSet by the shape the export gives it, so another one is left
/// to kubectl.
pub(crate) fn ours(js: JobSet, namespace: &str) -> Result<JobSet> {
    if crate::pipeline::jobset::made_by_plugin(&js) {
        return Ok(js);
    }
    let name = js.metadata.name.clone().unwrap_or_default();
    Err(Error::Conflict {
        message: format!(
            "JobSet {namespace}/{name} was not made by kubectl-tfjob (no annotation {}={}): the jobset/NAME commands act only on JobSets that `export --to jobset` or `submit --to jobset` made",
            crate::pipeline::jobset::MADE_BY_ANNOTATION,
            crate::pipeline::jobset::MADE_FROM
        ),
        hint: Some(format!(
            "Use kubectl for it: kubectl get jobset {name} -n {namespace} -o yaml (or kubectl describe, kubectl delete jobset {name}, kubectl logs -l {})",
            crate::pipeline::jobset::pod_selector(&name)
        )),
    })
}

/// The JobSet API is not served here: install JobSet (server-side: the CRD is over 256 KiB).
pub fn jobset_not_served() -> Error {
    Error::not_ready(
        format!(
            "this cluster does not serve {}/{} (the JobSet CRD {} is not installed)",
            jobset::GROUP,
            jobset::VERSION,
            jobset::CRD_NAME
        ),
        "Install JobSet: kubectl apply --server-side -f https://github.com/kubernetes-sigs/jobset/releases/download/v0.12.0/manifests.yaml",
    )
}

/// Where the upstream manifests install the controller (jobset `config/components/manager`).
pub const CONTROLLER_NAMESPACE: &str = "jobset-system";
pub const CONTROLLER_DEPLOYMENT: &str = "jobset-controller-manager";

/// The JobSet API answers (a list of one) and its controller's Deployment has a ready replica.
/// A Deployment not found or not readable is a warning: it may run under another name.
pub(crate) async fn check_jobset(kube: &Kube, namespace: &str) -> (Vec<Error>, Vec<String>) {
    let api: Api<JobSet> = Api::namespaced(kube.client.clone(), namespace);
    let deps: Api<Deployment> = Api::namespaced(kube.client.clone(), CONTROLLER_NAMESPACE);
    let lp = ListParams::default().limit(1);
    let (served, controller) = tokio::join!(
        cluster::retry(kube, || api.list(&lp)),
        cluster::retry(kube, || deps.get_opt(CONTROLLER_DEPLOYMENT)),
    );
    let mut failures = Vec::new();
    let mut warnings = Vec::new();
    match served {
        Ok(_) => {}
        Err(e) if cluster::status_code(&e) == Some(404) => failures.push(jobset_not_served()),
        Err(e) if cluster::status_code(&e) == Some(403) => {}
        Err(e) => failures.push(cluster::explain(
            e,
            &Action::new("list", "jobsets", Some(namespace)),
            kube,
        )),
    }
    match controller {
        Ok(Some(d)) => {
            let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0);
            if ready == 0 {
                failures.push(Error::not_ready(
                    format!(
                        "the JobSet controller Deployment {CONTROLLER_NAMESPACE}/{CONTROLLER_DEPLOYMENT} has no ready replicas: nothing would create the JobSet's Jobs, and its webhooks would refuse it"
                    ),
                    format!(
                        "Look at why: kubectl describe deployment {CONTROLLER_DEPLOYMENT} {flags}; kubectl logs deployment/{CONTROLLER_DEPLOYMENT} {flags}",
                        flags = kube.hints.ns_flags(CONTROLLER_NAMESPACE)
                    ),
                ));
            }
        }
        Ok(None) => warnings.push(format!(
            "no JobSet controller Deployment {CONTROLLER_NAMESPACE}/{CONTROLLER_DEPLOYMENT}; going on, since it may run under another name"
        )),
        Err(e) => warnings.push(format!(
            "could not read the JobSet controller Deployment ({}); going on",
            crate::error::chain(&e)
        )),
    }
    (failures, warnings)
}

/// What a JobSet's status says about "every pod runs".
#[derive(Debug, PartialEq, Eq)]
pub enum Phase {
    /// Every replicatedJob's Jobs are ready (or succeeded).
    AllReady,
    Completed,
    Failed(String),
    /// Per replicatedJob: (name, ready + succeeded Jobs, Jobs wanted).
    Waiting(Vec<(String, i64, i64)>),
}

/// Pure: the JobSet's phase ([`health`]'s) by Kueue's `PodsReady` test, which the JobSet controller's
/// `allJobsReady` shares: Σ replicas == Σ (ready + succeeded) over
/// `status.replicatedJobsStatus` (kueue `pkg/controller/jobs/jobset/jobset_controller.go`;
/// jobset `pkg/controllers/jobset_controller.go`), with Completed and Failed not True.
fn progress(js: &JobSet) -> Phase {
    let empty = JobSetStatus::default();
    let status = js.status.as_ref().unwrap_or(&empty);
    let cond = |t: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == t && c.status == "True")
    };
    if let Some(c) = cond("Failed") {
        return Phase::Failed(format!("{}: {}", c.reason, c.message));
    }
    if cond("Completed").is_some() {
        return Phase::Completed;
    }
    let rows: Vec<(String, i64, i64)> = js
        .spec
        .replicated_jobs
        .iter()
        .map(|r| {
            let have = status
                .replicated_jobs_status
                .iter()
                .find(|s| s.name == r.name)
                .map(|s| i64::from(s.ready) + i64::from(s.succeeded))
                .unwrap_or(0);
            (r.name.clone(), have, i64::from(r.replicas.unwrap_or(1)))
        })
        .collect();
    let suspended = js.is_suspended();
    if !suspended && rows.iter().all(|(_, have, want)| have >= want) {
        Phase::AllReady
    } else {
        Phase::Waiting(rows)
    }
}

/// Follows the JobSet until every pod is Ready, it completes or fails, or the command's one
/// deadline passes (`--timeout`, named with this phase when it runs out; `once`: `--timeout 0`
/// checks the state read and ends, as for a TFJob):
/// the state already read (`first`), then a watch on it (`metadata.name` field selector) through kube-runtime's
/// watcher, which re-watches a dropped stream and relists after 410 Gone, as `wait`'s TFJob
/// follower does (ops/wait/follow.rs). A state change is judged when the API reports it.
/// Only the JobSet is watched: the verdict reads its `replicatedJobsStatus`, which the JobSet
/// controller writes from its Jobs' ready counts, so a pod event alone never changes it.
pub(crate) async fn follow(
    kube: &Kube,
    api: &Api<JobSet>,
    first: &JobSet,
    target: WaitFor,
    once: bool,
    out: &mut Output,
) -> Result<()> {
    let namespace = api_namespace(first, kube);
    let name = first.metadata.name.as_deref().unwrap_or_default();
    let doing = format!(
        "waiting for JobSet {namespace}/{name} (--for {})",
        target.flag_value()
    );
    kube.deadline.phase(&doing);
    let mut last = String::new();
    if let Some(done) = judge(first, target, namespace, name, &mut last, out) {
        return done;
    }
    if once {
        return Err(Error::Timeout(format!(
            "checked once (--timeout 0) {doing}: {last}"
        )));
    }
    let watch = async {
        let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut events = std::pin::pin!(watcher(api.clone(), cfg).default_backoff());
        // Whether a relist (after 410 Gone or a dropped watch) has seen the JobSet yet.
        let mut listed = false;
        let mut refused = 0u32;
        while let Some(event) = events.next().await {
            let js = match event {
                Ok(watcher::Event::Init) => {
                    listed = false;
                    continue;
                }
                Ok(watcher::Event::InitDone) if listed => continue,
                Ok(watcher::Event::InitDone) | Ok(watcher::Event::Delete(_)) => {
                    return Err(Error::JobFailed(format!(
                        "JobSet {namespace}/{name} was deleted while waiting"
                    )));
                }
                Ok(watcher::Event::InitApply(js)) => {
                    listed = true;
                    js
                }
                Ok(watcher::Event::Apply(js)) => js,
                Err(e) => {
                    // Retried by the backoff; a refusal that persists is said, not waited out.
                    tracing::debug!(error = %e, "jobset watch error (retried)");
                    if let Some(message) = refusal(&e) {
                        refused += 1;
                        if refused >= 3 {
                            return Err(Error::NotReady {
                                message: format!("forbidden to watch the JobSet: {message}"),
                                hint: Some(format!(
                                    "Confirm with `kubectl auth can-i watch jobsets.jobset.x-k8s.io {}`.",
                                    kube.hints.ns_flags(namespace)
                                )),
                            });
                        }
                    }
                    continue;
                }
            };
            refused = 0;
            if let Some(done) = judge(&js, target, namespace, name, &mut last, out) {
                return done;
            }
        }
        Err(Error::Other("the JobSet watch ended unexpectedly".into()))
    };
    match kube.deadline.attempt(watch).await {
        Some(done) => done,
        None => Err(Error::Timeout(format!(
            "{}: {last}",
            kube.deadline.ran_out_message()
        ))),
    }
}

/// The JobSet's namespace, else the command's.
fn api_namespace<'a>(js: &'a JobSet, kube: &'a Kube) -> &'a str {
    js.metadata.namespace.as_deref().unwrap_or(&kube.namespace)
}

/// A watch error that is the API server refusing the request (403), with its message.
fn refusal(e: &watcher::Error) -> Option<String> {
    let status = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => &**s,
        watcher::Error::WatchError(s) => &**s,
        _ => return None,
    };
    cluster::forbidden::refused_status(status).map(str::to_string)
}

/// What `wait jobset/NAME --for TARGET` makes of one state of the JobSet (pure), judged as
/// the TFJob path judges its job (ops/wait/conditions.rs `evaluate`): the JobSet's own
/// `Failed` condition fails every wait and its `Completed` condition reaches every target
/// (a finished JobSet has run); short of those, `succeeded`/`finished` wait for the
/// condition, which the JobSet controller writes when its successPolicy is met
/// (jobset controller `executeSuccessPolicy`), never for ready pods. The other targets are
/// read from its Jobs' counts in `replicatedJobsStatus`: `created` once the controller has
/// written them, `running` once a Job of it is ready, `all-running` once every
/// replicatedJob's Jobs are ready or succeeded.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Reached(String),
    Failed(String),
    Waiting(String),
}

pub fn evaluate(js: &JobSet, target: WaitFor) -> Outcome {
    let status = js.status.clone().unwrap_or_default();
    match health(js, &[], &[], &[]).phase {
        Phase::Failed(why) => return Outcome::Failed(why),
        Phase::Completed => return Outcome::Reached("completed".into()),
        Phase::AllReady if target == WaitFor::AllRunning => {
            return Outcome::Reached(": every replicatedJob's pods are ready".into());
        }
        Phase::AllReady | Phase::Waiting(_) => {}
    }
    let counts = |name: &str| {
        status
            .replicated_jobs_status
            .iter()
            .find(|s| s.name == name)
    };
    match target {
        WaitFor::Created if !status.replicated_jobs_status.is_empty() => {
            return Outcome::Reached(": the JobSet controller has made its Jobs".into());
        }
        WaitFor::Running if status.replicated_jobs_status.iter().any(|s| s.ready > 0) => {
            return Outcome::Reached(": a Job of it runs with its pods ready".into());
        }
        _ => {}
    }
    let jobs: Vec<String> = js
        .spec
        .replicated_jobs
        .iter()
        .map(|r| {
            let want = r.replicas.unwrap_or(1);
            let c = counts(&r.name);
            let n = |f: fn(&crate::pipeline::jobset::model::ReplicatedJobStatus) -> i32| {
                c.map(f).unwrap_or(0)
            };
            let mut line = format!(
                "{} {}/{want} ready, {} succeeded",
                r.name,
                n(|x| x.ready),
                n(|x| x.succeeded)
            );
            if n(|x| x.failed) > 0 {
                line.push_str(&format!(", {} failed", n(|x| x.failed)));
            }
            line
        })
        .collect();
    let what = match target {
        WaitFor::Succeeded | WaitFor::Finished => "waiting for the JobSet's Completed condition",
        WaitFor::Deleted => "waiting for the JobSet to be deleted",
        WaitFor::Created => "waiting for the JobSet controller to make its Jobs",
        WaitFor::Running => "waiting for a Job of it to be ready",
        WaitFor::AllRunning | WaitFor::Training => {
            "waiting for every replicatedJob's pods to be ready"
        }
    };
    let suspended = if js.spec.suspend == Some(true) {
        " (the JobSet is suspended)"
    } else {
        ""
    };
    Outcome::Waiting(format!("{what}{suspended}: {}", jobs.join("; ")))
}

/// The verdict on one state of the JobSet, or `None` while it waits (the progress line is
/// printed on stderr when it changes).
fn judge(
    js: &JobSet,
    target: WaitFor,
    namespace: &str,
    name: &str,
    last: &mut String,
    out: &mut Output,
) -> Option<Result<()>> {
    match evaluate(js, target) {
        Outcome::Reached(how) => Some(out.data_line(&format!(
            "jobset.jobset.x-k8s.io/{name}{}",
            if how.starts_with(':') {
                how
            } else {
                format!(" {how}")
            }
        ))),
        Outcome::Failed(why) => Some(Err(Error::JobFailed(format!(
            "JobSet {namespace}/{name} failed ({why})"
        )))),
        Outcome::Waiting(line) => {
            if line != *last {
                out.note_line(&line);
                *last = line;
            }
            None
        }
    }
}

/// A JobSet's one health verdict: its phase ([`Phase`]), what each part shows (the
/// report's lines), and the most specific cause when it failed or will not run without someone
/// fixing something (exit 4). `wait` ([`evaluate`]), `diagnose`, `get` and the Workload's
/// `ended` all read it, so they tell one story.
#[derive(Debug, PartialEq, Eq)]
pub struct Health {
    pub phase: Phase,
    pub lines: Vec<String>,
    /// `None`: nothing wrong; else the failure to end with (exit 4).
    pub failure: Option<String>,
}

/// Pure: the health over what was read. What a caller did not read (a watch has the JobSet
/// alone: no Jobs, pods or events) adds nothing, and the phase is the JobSet's own.
pub fn health(js: &JobSet, jobs: &[Job], pods: &[Pod], events: &[Event]) -> Health {
    let name = js.metadata.name.clone().unwrap_or_default();
    let mut lines = Vec::new();
    let mut failure = None;
    let phase = progress(js);
    match &phase {
        Phase::Failed(why) => {
            lines.push(format!("JobSet: Failed ({why})"));
            failure = Some(format!("JobSet {name} failed: {why}"));
        }
        Phase::Completed => lines.push("JobSet: Completed".into()),
        Phase::AllReady => lines.push("JobSet: every replicatedJob's pods are ready".into()),
        Phase::Waiting(rows) => lines.push(format!(
            "JobSet: {}{}",
            rows.iter()
                .map(|(r, have, want)| format!("{r} {have}/{want} Jobs ready"))
                .collect::<Vec<_>>()
                .join(", "),
            if js.is_suspended() {
                " (suspended)"
            } else {
                ""
            }
        )),
    }
    for j in jobs {
        let jname = j.metadata.name.clone().unwrap_or_default();
        for c in j.status.iter().flat_map(|s| s.conditions.iter().flatten()) {
            if c.status == "True" && c.type_ == "Failed" {
                lines.push(format!(
                    "Job {jname}: Failed ({}: {})",
                    c.reason.as_deref().unwrap_or(""),
                    c.message.as_deref().unwrap_or("")
                ));
            }
        }
        if let Some(e) = events.iter().rev().find(|e| {
            e.involved_object.name.as_deref() == Some(jname.as_str())
                && e.reason.as_deref() == Some("FailedCreate")
        }) {
            let msg = e.message.clone().unwrap_or_default();
            lines.push(format!("Job {jname}: its pods are refused: {msg}"));
            failure.get_or_insert(format!("the pods of Job {jname} are refused: {msg}"));
        }
    }
    let mut rows: Vec<(String, String)> = Vec::new();
    for p in pods {
        let pname = p.metadata.name.clone().unwrap_or_default();
        let st = p.status.clone().unwrap_or_default();
        if let Some(c) = cluster::pod::unschedulable(&st) {
            let msg = c.message.clone().unwrap_or_default();
            rows.push((pname.clone(), format!("Unschedulable: {msg}")));
            failure.get_or_insert(format!("pod {pname} cannot be scheduled: {msg}"));
            continue;
        }
        for cs in st.container_statuses.iter().flatten() {
            if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref())
                && let Some(reason) = w.reason.as_deref()
                && cluster::pod::STUCK_WAITING_REASONS.contains(&reason)
            {
                let msg = w.message.clone().unwrap_or_default();
                rows.push((
                    pname.clone(),
                    format!("container {}: {reason} {msg}", cs.name),
                ));
                failure.get_or_insert(format!("pod {pname}: container {} is {reason}", cs.name));
            }
        }
    }
    rows.sort();
    for (p, what) in rows {
        lines.push(format!("Pod {p}: {what}"));
    }
    if failure.is_none() && lines.len() == 1 {
        lines.push(format!("{} pods, none stuck", pods.len()));
    }
    Health {
        phase,
        lines,
        failure,
    }
}

/// `kubectl tfjob diagnose jobset/NAME`: the JobSet API and controller first (a missing
/// controller is why nothing moves), then the JobSet, resolved once.
pub async fn diagnose(ctx: &Context, name: &str, out: &mut Output) -> Result<()> {
    let kube = ctx.kube().await?;
    let ns = kube.namespace.clone();
    let (failures, warnings) = check_jobset(kube, &ns).await;
    for w in &warnings {
        out.note_line(&format!("warning: {w}"));
    }
    if !failures.is_empty() {
        return Err(crate::ops::readiness::combine(failures));
    }
    let js = read_jobset(kube, name).await?;
    let lp = ListParams::default().labels(&crate::pipeline::jobset::pod_selector(name));
    // Events about Jobs (FailedCreate): the namespace's, filtered here by the Jobs' names.
    let job_events = ListParams::default().fields("involvedObject.kind=Job");
    let (jobs, pods, events) = tokio::join!(
        list::<Job>(kube, &lp, "jobs"),
        list::<Pod>(kube, &lp, "pods"),
        list::<Event>(kube, &job_events, "events"),
    );
    let v = health(&js, &jobs?, &pods?, &events.unwrap_or_default());
    for l in &v.lines {
        out.data_line(l)?;
    }
    match v.failure {
        Some(f) => Err(Error::JobFailed(f)),
        None => Ok(()),
    }
}

async fn list<K>(kube: &Kube, lp: &ListParams, resource: &'static str) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(kube.client.clone(), &kube.namespace);
    cluster::retry(kube, || api.list(lp))
        .await
        .map(|l| l.items)
        .map_err(|e| {
            cluster::explain(
                e,
                &Action::new("list", resource, Some(&kube.namespace)),
                kube,
            )
        })
}

/// A dry-run create: the CRD's schema, the JobSet webhooks and admission judge it; nothing is
/// stored. A group not served is the cluster not being ready (exit 3).
pub async fn server_dry_run(kube: &Kube, namespace: &str, js: &JobSet) -> Result<JobSet> {
    let api: Api<JobSet> = Api::namespaced(kube.client.clone(), namespace);
    let params = PostParams {
        dry_run: true,
        field_manager: Some(cluster::FIELD_MANAGER.into()),
    };
    match cluster::retry(kube, || api.create(&params, js)).await {
        Ok(js) => Ok(js),
        Err(e) => Err(refused(e, kube, namespace, "create")),
    }
}

/// What a refused JobSet write means for the user.
pub fn refused(e: kube::Error, kube: &Kube, namespace: &str, verb: &'static str) -> Error {
    match &e {
        kube::Error::Api(s) if s.code == 404 && !s.message.contains("namespaces") => {
            jobset_not_served()
        }
        kube::Error::Api(s) if s.code == 422 || s.code == 400 => {
            let mut message = format!("the API server rejected the JobSet: {}", s.message);
            if let Some(details) = &s.details {
                for cause in &details.causes {
                    message.push_str(&format!("\n  - {}: {}", cause.field, cause.message));
                }
            }
            Error::Invalid(message)
        }
        kube::Error::Api(s) if s.code == 500 && s.message.contains("webhook") => Error::NotReady {
            message: format!("the JobSet admission webhook failed: {}", s.message),
            hint: Some("The JobSet controller is installed but not answering; check its pods in the jobset-system namespace.".into()),
        },
        _ => cluster::explain(e, &Action::new(verb, "jobsets", Some(namespace)), kube),
    }
}

/// `delete jobset/NAME`: one DELETE, foreground (its Jobs and pods go first), then until it
/// is gone or the command's deadline passes.
pub(crate) async fn delete(kube: &Kube, js: &JobSet, wait: bool, out: &mut Output) -> Result<()> {
    let name = js.metadata.name.as_deref().unwrap_or_default();
    // The uid as precondition: a JobSet made again under the name since the read (maybe not
    // the plugin's) is never the one deleted.
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        preconditions: js.metadata.uid.clone().map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    let action = Action::new("delete", "jobsets", Some(&kube.namespace)).named(name);
    let jobsets = jobsets(kube);
    let ns = kube.namespace.clone();
    let check = format!("kubectl get jobset {name} {}", kube.hints.ns_flags(&ns));
    crate::error::on_interrupt_write("JobSet", &ns, name, "deleted", &check);
    let deleted = cluster::retry(kube, || jobsets.delete(name, &dp)).await;
    crate::error::on_interrupt_settled();
    match deleted {
        Ok(_) => {}
        Err(e) if cluster::status_code(&e) == Some(404) => {
            return Err(jobset_not_found(kube, name));
        }
        Err(e) => return Err(cluster::explain(e, &action, kube)),
    }
    // Said once the DELETE is accepted, before the wait, as kubectl and the TFJob path say it.
    out.data_line(&format!("jobset.jobset.x-k8s.io \"{name}\" deleted"))?;
    if wait {
        gone(kube, &jobsets, name).await?;
    }
    Ok(())
}

/// Until the JobSet is gone (its Jobs and pods first, foreground): a watch on it by name,
/// re-watched after a drop and relisted after 410 Gone by kube-runtime's watcher, under one
/// deadline. A relist that no longer finds it is gone too.
async fn gone(kube: &Kube, jobsets: &Api<JobSet>, name: &str) -> Result<()> {
    kube.deadline.phase(format!(
        "waiting for JobSet {}/{name} to be deleted",
        kube.namespace
    ));
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let watch = async {
        let mut events = std::pin::pin!(watcher(jobsets.clone(), cfg).default_backoff());
        let mut listed = false;
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Init) => listed = false,
                Ok(watcher::Event::InitApply(_)) => listed = true,
                Ok(watcher::Event::InitDone) if !listed => return,
                Ok(watcher::Event::Delete(_)) => return,
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "jobset watch error (retried)"),
            }
        }
    };
    kube.deadline
        .attempt(watch)
        .await
        .ok_or_else(|| kube.deadline.ran_out())
}

#[cfg(test)]
mod tests;
