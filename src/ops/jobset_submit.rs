//! `submit --to jobset` (issue 27): the exported JobSet, created after the same readiness and
//! placement checks as a TFJob (readiness here: the JobSet API served and its controller
//! running), and with `--wait` followed until every replicatedJob's pods are Ready. JobSet has
//! no Running condition; "all pods running" is Kueue's `PodsReady` test, which the JobSet
//! controller's `allJobsReady` shares: Σ replicas == Σ (ready + succeeded) over
//! `status.replicatedJobsStatus` (kueue `pkg/controller/jobs/jobset/jobset_controller.go`;
//! jobset `pkg/controllers/jobset_controller.go`), with Completed and Failed not True.

use super::Context;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{ListParams, PostParams};

use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::ops::DryRun;
use crate::ops::export::{jobset_not_served, print_notes, refused, server_dry_run};
use crate::ops::readiness::combine;
use crate::ops::submit::SubmitOptions;
use crate::ops::wait::WaitFor;
use crate::output::Output;
use crate::pipeline::jobset::model::{JobSet, JobSetStatus};

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

/// `submit --to jobset`.
pub async fn run(ctx: &Context, args: SubmitOptions, out: &mut Output) -> Result<()> {
    if args.replace {
        return Err(Error::Usage(
            "--replace is for TFJobs; delete the JobSet first (kubectl delete jobset NAME)".into(),
        ));
    }
    if args.dry_run == DryRun::Client {
        let (exported, prepared) = super::export::prepare(ctx.conn(), &args.render)?;
        super::preflight::print_warnings(&prepared.report, out);
        print_notes(&exported.notes, out);
        return out.data(&super::export::to_text(
            &exported.jobset,
            super::export::ExportFormat::Yaml,
        ));
    }
    let kube = ctx.kube().await?;
    let mut prepared = crate::pipeline::render::prepare(ctx.conn(), &args.render)?;
    let namespace = super::preflight::settle_namespace(kube, &mut prepared.job)?;
    let (exported, prepared) = super::export::from_prepared(prepared)?;
    super::preflight::print_warnings(&prepared.report, out);
    print_notes(&exported.notes, out);
    let job = prepared.job.clone();

    // Readiness: every check runs, the failures are reported together.
    let ((mut failures, warnings), ns, secrets) = tokio::join!(
        check_jobset(kube, &namespace),
        super::readiness::check_namespace(kube, &namespace),
        super::readiness::check_secrets(kube, &namespace, &job, &prepared.gateway),
    );
    for w in &warnings {
        out.note_line(&format!("warning: {w}"));
    }
    if let Err(e) = ns {
        failures.push(e);
    }
    if let Err(e) = secrets {
        failures.push(e);
    }
    if !failures.is_empty() {
        return Err(combine(failures));
    }
    // Placement: the JobSet's pods are the TFJob's pods.
    let gate = super::preflight::GateOptions {
        show_verdict: args.dry_run == DryRun::Server,
        capacity: !args.skip_capacity_check,
        allow_missing_refs: args.allow_missing_refs,
    };
    super::preflight::gate(kube, &namespace, &job, gate, out).await?;
    let answered = server_dry_run(kube, &namespace, &exported.jobset).await?;
    let shown = answered
        .metadata
        .name
        .clone()
        .or_else(|| exported.jobset.metadata.generate_name.clone())
        .unwrap_or_default();
    if args.dry_run == DryRun::Server {
        return out.data_line(&format!(
            "jobset.jobset.x-k8s.io/{shown} created (server dry run)"
        ));
    }
    let api: Api<JobSet> = Api::namespaced(kube.client.clone(), &namespace);
    let params = PostParams {
        dry_run: false,
        field_manager: Some(cluster::FIELD_MANAGER.into()),
    };
    crate::error::on_interrupt_write(
        "JobSet",
        &namespace,
        &shown,
        "created",
        &format!(
            "kubectl get jobset {shown} {}",
            kube.hints.ns_flags(&namespace)
        ),
    );
    // One attempt: a create is retried only by the caller who can look it up first.
    let created = match api.create(&params, &exported.jobset).await {
        Ok(js) => js,
        Err(e) if cluster::status_code(&e) == Some(409) => {
            return Err(Error::Conflict {
                message: format!("JobSet {namespace}/{shown} already exists"),
                hint: Some(format!(
                    "Delete it (kubectl delete jobset {shown} {}) or choose another --name.",
                    kube.hints.ns_flags(&namespace)
                )),
            });
        }
        Err(e) => return Err(refused(e, kube, &namespace, "create")),
    };
    let name = created.metadata.name.clone().unwrap_or(shown);
    crate::error::on_interrupt(format!(
        "interrupted: JobSet {namespace}/{name} was created and is left as it is"
    ));
    let line = format!("jobset.jobset.x-k8s.io/{name} created");
    let printed = out.data_line(&line);
    out.after_write(printed, &line)?;
    if args.wait {
        follow(
            kube,
            &api,
            &created,
            args.wait_opts.wait_for,
            args.wait_opts.timeout,
            out,
        )
        .await?;
    }
    Ok(())
}

/// What the status says about "every pod runs".
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// Every replicatedJob's Jobs are ready (or succeeded).
    AllReady,
    Completed,
    Failed(String),
    /// Per replicatedJob: (name, ready + succeeded Jobs, Jobs wanted).
    Waiting(Vec<(String, i64, i64)>),
}

/// Pure: the JobSet's state by Kueue's `PodsReady` test.
pub fn progress(js: &JobSet) -> Progress {
    let empty = JobSetStatus::default();
    let status = js.status.as_ref().unwrap_or(&empty);
    let cond = |t: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == t && c.status == "True")
    };
    if let Some(c) = cond("Failed") {
        return Progress::Failed(format!("{}: {}", c.reason, c.message));
    }
    if cond("Completed").is_some() {
        return Progress::Completed;
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
        Progress::AllReady
    } else {
        Progress::Waiting(rows)
    }
}

/// Follows the JobSet until every pod is Ready, it completes or fails, or `timeout` passes:
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
    timeout: Duration,
    out: &mut Output,
) -> Result<()> {
    let namespace = api_namespace(first, kube);
    let name = first.metadata.name.as_deref().unwrap_or_default();
    let end = tokio::time::Instant::now() + timeout;
    let mut last = String::new();
    if let Some(done) = judge(first, target, namespace, name, &mut last, out) {
        return done;
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
    match tokio::time::timeout_at(end, watch).await {
        Ok(done) => done,
        Err(_) => Err(Error::Timeout(format!(
            "timed out after {}s waiting for JobSet {namespace}/{name} (--for {}): {last}",
            timeout.as_secs(),
            target.flag_value()
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
pub enum Verdict {
    Reached(String),
    Failed(String),
    Waiting(String),
}

pub fn verdict(js: &JobSet, target: WaitFor) -> Verdict {
    let status = js.status.clone().unwrap_or_default();
    match progress(js) {
        Progress::Failed(why) => return Verdict::Failed(why),
        Progress::Completed => return Verdict::Reached("completed".into()),
        Progress::AllReady if target == WaitFor::AllRunning => {
            return Verdict::Reached(": every replicatedJob's pods are ready".into());
        }
        Progress::AllReady | Progress::Waiting(_) => {}
    }
    let counts = |name: &str| {
        status
            .replicated_jobs_status
            .iter()
            .find(|s| s.name == name)
    };
    match target {
        WaitFor::Created if !status.replicated_jobs_status.is_empty() => {
            return Verdict::Reached(": the JobSet controller has made its Jobs".into());
        }
        WaitFor::Running if status.replicated_jobs_status.iter().any(|s| s.ready > 0) => {
            return Verdict::Reached(": a Job of it runs with its pods ready".into());
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
    Verdict::Waiting(format!("{what}{suspended}: {}", jobs.join("; ")))
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
    match verdict(js, target) {
        Verdict::Reached(how) => Some(out.data_line(&format!(
            "jobset.jobset.x-k8s.io/{name}{}",
            if how.starts_with(':') {
                how
            } else {
                format!(" {how}")
            }
        ))),
        Verdict::Failed(why) => Some(Err(Error::JobFailed(format!(
            "JobSet {namespace}/{name} failed ({why})"
        )))),
        Verdict::Waiting(line) => {
            if line != *last {
                out.note_line(&line);
                *last = line;
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::jobset::model::ReplicatedJobStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    fn js(statuses: &[(&str, i32, i32)], conditions: &[(&str, &str)]) -> JobSet {
        let mut j: JobSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "x"},
            "spec": {"replicatedJobs": [
                {"name": "ps", "replicas": 1, "template": {}},
                {"name": "worker", "replicas": 1, "template": {}}]}}))
        .unwrap();
        j.status = Some(JobSetStatus {
            replicated_jobs_status: statuses
                .iter()
                .map(|(n, ready, succeeded)| ReplicatedJobStatus {
                    name: n.to_string(),
                    ready: *ready,
                    succeeded: *succeeded,
                    ..Default::default()
                })
                .collect(),
            conditions: conditions
                .iter()
                .map(|(t, r)| Condition {
                    type_: t.to_string(),
                    status: "True".into(),
                    reason: r.to_string(),
                    message: "m".into(),
                    last_transition_time: Time(Default::default()),
                    observed_generation: None,
                })
                .collect(),
            ..Default::default()
        });
        j
    }

    #[test]
    fn all_ready_is_every_replicated_job_ready_or_succeeded() {
        assert_eq!(
            progress(&js(&[("worker", 1, 0), ("ps", 1, 0)], &[])),
            Progress::AllReady
        );
        assert_eq!(
            progress(&js(&[("worker", 1, 0)], &[])),
            Progress::Waiting(vec![("ps".into(), 0, 1), ("worker".into(), 1, 1)])
        );
        assert_eq!(
            progress(&js(&[("worker", 0, 1), ("ps", 1, 0)], &[])),
            Progress::AllReady
        );
        assert_eq!(
            progress(&js(&[], &[("Failed", "FailedJobs")])),
            Progress::Failed("FailedJobs: m".into())
        );
        assert_eq!(
            progress(&js(&[], &[("Completed", "AllJobsCompleted")])),
            Progress::Completed
        );
    }

    #[test]
    fn only_the_completed_condition_is_succeeded_and_failed_fails_every_target() {
        let running = js(&[("worker", 1, 0), ("ps", 1, 0)], &[]);
        for target in [WaitFor::Succeeded, WaitFor::Finished] {
            match verdict(&running, target) {
                Verdict::Waiting(line) => assert!(
                    line.starts_with("waiting for the JobSet's Completed condition"),
                    "{line}"
                ),
                other => panic!("{target:?} on a running JobSet: {other:?}"),
            }
        }
        assert!(matches!(
            verdict(&running, WaitFor::AllRunning),
            Verdict::Reached(_)
        ));
        assert!(matches!(
            verdict(&running, WaitFor::Running),
            Verdict::Reached(_)
        ));
        assert!(matches!(
            verdict(&running, WaitFor::Created),
            Verdict::Reached(_)
        ));
        let none = js(&[], &[]);
        assert!(matches!(
            verdict(&none, WaitFor::Created),
            Verdict::Waiting(_)
        ));
        assert!(matches!(
            verdict(&none, WaitFor::Running),
            Verdict::Waiting(_)
        ));
        let done = js(&[("worker", 0, 1)], &[("Completed", "AllJobsCompleted")]);
        for target in [WaitFor::Succeeded, WaitFor::Finished, WaitFor::AllRunning] {
            assert_eq!(verdict(&done, target), Verdict::Reached("completed".into()));
        }
        let failed = js(
            &[("worker", 1, 0), ("ps", 1, 0)],
            &[("Failed", "FailedJobs")],
        );
        for target in [WaitFor::Succeeded, WaitFor::AllRunning, WaitFor::Running] {
            assert_eq!(
                verdict(&failed, target),
                Verdict::Failed("FailedJobs: m".into())
            );
        }
    }
}
