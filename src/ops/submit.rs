//! `submit`: render and validate offline, check the cluster is ready, validate against the live
//! CRD and a server-side dry run, then create the TFJob — all or nothing.
//!
//! Every check before the create is a read (or a dry run, or an access review, which store
//! nothing), so a failure at any step leaves the cluster exactly as it was.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};

use super::DryRun;
use super::wait::{self, WaitOptions};
use crate::cluster::{self, Action, ConnectionOptions, Kube, OperatorState};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::output::{ManifestFormat, Output, ReportFormat};
use crate::render::{self, RenderOptions};
use crate::validate;

/// Annotation carrying a per-submission id, so a create retried after an ambiguous failure can
/// tell "my first attempt went through" from "someone else's job has that name".
pub const SUBMISSION_ANNOTATION: &str = "kubectl-tfjob.kubeflow.org/submission-id";
/// Field manager for everything this tool writes.
pub const FIELD_MANAGER: &str = "kubectl-tfjob";

/// What `submit` does (the flags, clap-free).
#[derive(Debug, Clone)]
pub struct SubmitOptions {
    pub render: RenderOptions,
    pub dry_run: DryRun,
    /// `-o`; `None` prints `tfjob.kubeflow.org/NAME created` and the next steps.
    pub output: Option<ManifestFormat>,
    /// Delete a job of the same name first (asks unless `yes`).
    pub replace: bool,
    pub yes: bool,
    /// Follow the job after creating it.
    pub wait: bool,
    pub wait_opts: WaitOptions,
}

/// `kubectl tfjob submit`: all or nothing, every check before the first write.
pub async fn run(
    kube_args: &ConnectionOptions,
    args: SubmitOptions,
    out: &mut Output,
) -> Result<()> {
    // 1. Offline: render (or read), inject credentials, validate. Exit 2 before any request.
    let prepared = render::prepare(kube_args, &args.render)?;
    print_warnings(&prepared.report, out);
    let mut job = prepared.job;
    // With generateName the API server picks the name; until then, show the prefix.
    let name = job
        .metadata
        .name
        .clone()
        .or_else(|| job.metadata.generate_name.clone())
        .unwrap_or_default();

    if args.dry_run == DryRun::Client {
        print_job(
            out,
            &job,
            args.output,
            &format!("tfjob.kubeflow.org/{name} created (dry run)"),
        )?;
        return Ok(());
    }

    // 2. The namespace, resolved as kubectl does.
    let kube = cluster::connect(kube_args).await?;
    let namespace = resolve_namespace(&kube, job.metadata.namespace.as_deref())?;
    job.metadata.namespace = Some(namespace.clone());

    // 3. Readiness: every check runs, all failures are reported together.
    let readiness = check_readiness(&kube, &namespace, &job, &prepared.gateway, args.replace).await;
    for warning in &readiness.warnings {
        out.note_line(&format!("warning: {warning}"));
    }
    if !readiness.failures.is_empty() {
        return Err(combine(readiness.failures));
    }

    // 4. Cluster-side validation: the live CRD's schema (version skew), then a server dry run
    //    (which runs the operator's admission webhook too).
    if let Some(schema) = &readiness.live_schema {
        let value = serde_json::to_value(&job).map_err(|e| Error::Other(e.to_string()))?;
        let findings = validate::validate_against_openapi(schema, &value);
        let report = validate::Report { findings };
        if report.has_errors() {
            return Err(Error::Invalid(format!(
                "the TFJob does not match the CRD installed in the cluster (version skew?):\n{}",
                report.render_text()
            )));
        }
    }
    let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), &namespace);
    let existing = readiness.existing;
    let answered = server_dry_run(&kube, &jobs, &job, existing.as_ref()).await?;

    if args.dry_run == DryRun::Server {
        // As kubectl does, show what the server answered (with its generated name).
        let shown = answered.unwrap_or(job);
        let shown_name = shown.metadata.name.clone().unwrap_or(name);
        print_job(
            out,
            &shown,
            args.output,
            &format!("tfjob.kubeflow.org/{shown_name} created (server dry run)"),
        )?;
        return Ok(());
    }

    // 5. The writes: replace (delete, wait for it to go) if asked, then create.
    if let Some(old) = existing {
        confirm_replace(&namespace, &name, args.yes)?;
        delete_and_wait(&kube, &jobs, &namespace, &name, old.metadata.uid.as_deref()).await?;
        let deleted = format!("tfjob.kubeflow.org/{name} deleted");
        let printed = out.data_line(&deleted);
        out.after_write(printed, &deleted)?;
    }
    let created = create(&kube, &jobs, job).await?;
    // Every later step follows the name the server gave (generateName).
    let name = created.metadata.name.clone().unwrap_or(name);
    let line = format!("tfjob.kubeflow.org/{name} created");
    let printed = print_job(out, &created, args.output, &line);
    // The job exists now: a closed stdout must not hide that.
    out.after_write(printed, &line)?;
    if args.output.is_none() && !args.wait {
        // The same connection flags, so each hint reaches the same cluster as this command.
        let conn = kube_args.hint_suffix();
        out.note_line(&format!(
            "\nFollow it:   kubectl tfjob wait {name} -n {namespace}{conn}\n\
             Its pods:    kubectl get pods -n {namespace} -l {}={name}{conn}\n\
             If stuck:    kubectl tfjob diagnose {name} -n {namespace}{conn}",
            model::LABEL_JOB_NAME
        ));
    }
    if args.wait {
        wait::follow(
            &kube,
            &namespace,
            &name,
            &args.wait_opts,
            ReportFormat::Text,
            out,
        )
        .await?;
    }
    Ok(())
}

fn print_warnings(report: &validate::Report, out: &mut Output) {
    if !report.findings.is_empty() {
        out.note(&report.render_text());
    }
}

/// `-n` wins; a manifest naming another namespace is refused, as kubectl refuses it.
fn resolve_namespace(kube: &Kube, from_job: Option<&str>) -> Result<String> {
    match from_job {
        Some(ns) if kube.namespace_from_flag && ns != kube.namespace => Err(Error::Usage(format!(
            "the namespace from the provided object {ns:?} does not match the namespace {:?}; \
             pass --namespace={ns} or remove metadata.namespace",
            kube.namespace
        ))),
        Some(ns) => Ok(ns.to_string()),
        None => Ok(kube.namespace.clone()),
    }
}

fn print_job(
    out: &mut Output,
    job: &TFJob,
    output: Option<ManifestFormat>,
    default_line: &str,
) -> Result<()> {
    match output {
        Some(ManifestFormat::Yaml) => out.data(&render::to_yaml(job)),
        Some(ManifestFormat::Json) => out.data_line(&render::to_json(job)),
        Some(ManifestFormat::Name) => out.data_line(&format!(
            "tfjob.kubeflow.org/{}",
            job.metadata.name.as_deref().unwrap_or_default()
        )),
        None => out.data_line(default_line),
    }
}

// ---------------------------------------------------------------------------------------------
// Readiness

/// What the readiness checks found.
#[derive(Default)]
struct Readiness {
    failures: Vec<Error>,
    warnings: Vec<String>,
    /// The installed CRD's v1 openAPIV3Schema, when readable.
    live_schema: Option<serde_json::Value>,
    /// The TFJob of the same name, when `--replace` allows it to exist.
    existing: Option<TFJob>,
}

/// Combines several readiness failures into one error (exit code of the first kind).
fn combine(mut failures: Vec<Error>) -> Error {
    if failures.len() == 1 {
        return failures.remove(0);
    }
    let mut message = format!(
        "the cluster is not ready for this job ({} problems):",
        failures.len()
    );
    for (i, f) in failures.iter().enumerate() {
        message.push_str(&format!("\n  {}. {f}", i + 1));
        if let Some(hint) = f.hint() {
            message.push_str(&format!("\n     → {hint}"));
        }
    }
    Error::NotReady {
        message,
        hint: Some("Nothing was created.".into()),
    }
}

async fn check_readiness(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    gateway: &crate::gateway::GatewayConfig,
    replace: bool,
) -> Readiness {
    // generateName: the server picks a fresh name, so nothing can exist under it.
    let name = job.metadata.name.clone();
    let (crd, operator, ns, access, secrets, existing) = tokio::join!(
        cluster::crd::require_served(kube),
        find_operator(kube),
        check_namespace(kube, namespace),
        check_access(kube, namespace),
        check_secrets(kube, namespace, job, gateway),
        check_existing(kube, namespace, name.as_deref(), replace),
    );
    let mut r = Readiness::default();
    let crd_ok = match crd {
        Ok(schema) => {
            r.live_schema = schema;
            true
        }
        Err(e) => {
            r.failures.push(e);
            false
        }
    };
    match operator {
        OperatorCheck::Ready => {}
        OperatorCheck::NotReady(e) => r.failures.push(e),
        OperatorCheck::Unknown(why) => r.warnings.push(why),
    }
    for result in [ns, access, secrets] {
        if let Err(e) = result {
            r.failures.push(e);
        }
    }
    // Without the CRD the GET for an existing job is meaningless (404 for the resource).
    if crd_ok {
        match existing {
            Ok(existing) => r.existing = existing,
            Err(e) => r.failures.push(e),
        }
    }
    r
}

enum OperatorCheck {
    Ready,
    NotReady(Error),
    /// Could not tell (RBAC, not found under a recognizable name): warn only.
    Unknown(String),
}

async fn find_operator(kube: &Kube) -> OperatorCheck {
    let deployments: Api<Deployment> = Api::all(kube.client.clone());
    let params = ListParams::default();
    let list = cluster::retry(kube, || deployments.list(&params)).await;
    let list = match list {
        Ok(list) => list,
        Err(e) => {
            return OperatorCheck::Unknown(format!(
                "could not look for the training-operator Deployment ({}); assuming it runs",
                match cluster::status_code(&e) {
                    Some(403) => "not allowed to list deployments in all namespaces".to_string(),
                    _ => e.to_string(),
                }
            ));
        }
    };
    match crate::cluster::operator::operator_state(&list.items) {
        OperatorState::Running { .. } => OperatorCheck::Ready,
        OperatorState::NotFound | OperatorState::Unknown(_) => OperatorCheck::Unknown(
            "no training-operator Deployment found in any namespace; the job will stay without status \
             until an operator reconciles it (install: see `kubectl tfjob diagnose`)"
                .into(),
        ),
        OperatorState::NotReady {
            namespace: ns,
            name: dname,
            ..
        } => OperatorCheck::NotReady(Error::not_ready(
            format!(
                "the training-operator Deployment {ns}/{dname} has no ready replicas: nothing would reconcile the job, and its admission webhook would reject it"
            ),
            format!(
                "Look at why: kubectl -n {ns} describe deployment {dname}; kubectl -n {ns} logs deployment/{dname}"
            ),
        )),
    }
}

async fn check_namespace(kube: &Kube, namespace: &str) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(kube.client.clone());
    match cluster::retry(kube, || namespaces.get_opt(namespace)).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(Error::not_ready(
            format!("namespace {namespace:?} does not exist"),
            format!(
                "Create it with `kubectl create namespace {namespace}`, or pass -n with an existing one."
            ),
        )),
        // Many users may not read namespaces; the create would tell anyway.
        Err(e) if cluster::status_code(&e) == Some(403) => Ok(()),
        Err(e) => Err(cluster::explain(
            e,
            &Action::new("get", "namespaces", None).named(namespace),
            &kube.server,
        )),
    }
}

/// Asks the API server whether we may create tfjobs here (SelfSubjectAccessReview stores nothing).
async fn check_access(kube: &Kube, namespace: &str) -> Result<()> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(kube.client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(model::GROUP.into()),
                resource: Some(model::PLURAL.into()),
                verb: Some("create".into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let action = Action::new("create", "tfjobs", Some(namespace));
    let params = PostParams::default();
    match cluster::retry(kube, || reviews.create(&params, &review)).await {
        Ok(answer) => match answer.status {
            Some(s) if !s.allowed => Err(Error::NotReady {
                message: format!(
                    "you may not create tfjobs in namespace {namespace:?}{}",
                    s.reason.map(|r| format!(": {r}")).unwrap_or_default()
                ),
                hint: Some(format!(
                    "Confirm with `{}`, and ask a cluster admin for a Role granting create on tfjobs.kubeflow.org.",
                    action.can_i()
                )),
            }),
            _ => Ok(()),
        },
        // A server without the review API (or denying it) leaves the answer to the dry run.
        Err(e) => {
            tracing::debug!(error = %e, "access review unavailable");
            Ok(())
        }
    }
}

/// Every Secret/key the job's containers reference must exist (the gateway's first).
async fn check_secrets(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    gateway: &crate::gateway::GatewayConfig,
) -> Result<()> {
    let mut refs: BTreeSet<(String, String)> = BTreeSet::new();
    if gateway.enabled {
        refs.insert((gateway.secret_name.clone(), gateway.secret_key.clone()));
    }
    for spec in job.spec.tf_replica_specs.values() {
        let containers = spec.template.spec.iter().flat_map(|p| {
            p.containers
                .iter()
                .chain(p.init_containers.iter().flatten())
        });
        for c in containers {
            for env in c.env.iter().flatten() {
                if let Some(r) = env
                    .value_from
                    .as_ref()
                    .and_then(|v| v.secret_key_ref.as_ref())
                    && r.optional != Some(true)
                {
                    refs.insert((r.name.clone(), r.key.clone()));
                }
            }
        }
    }
    let mut failures = Vec::new();
    for (name, key) in refs {
        if let Err(e) = cluster::secret::check_secret(kube, namespace, &name, &key).await {
            failures.push(e);
        }
    }
    match failures.len() {
        0 => Ok(()),
        1 => Err(failures.remove(0)),
        _ => Err(combine(failures)),
    }
}

async fn check_existing(
    kube: &Kube,
    namespace: &str,
    name: Option<&str>,
    replace: bool,
) -> Result<Option<TFJob>> {
    let Some(name) = name else {
        return Ok(None);
    };
    let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), namespace);
    let action = Action::new("get", "tfjobs", Some(namespace)).named(name);
    match cluster::retry(kube, || jobs.get_opt(name)).await {
        Ok(None) => Ok(None),
        Ok(Some(job)) if replace => Ok(Some(job)),
        Ok(Some(job)) => Err(Error::Conflict {
            message: format!(
                "TFJob {namespace}/{name} already exists (state: {})",
                job.last_condition()
                    .map(|c| c.type_.as_str())
                    .unwrap_or("no status yet")
            ),
            hint: Some(format!(
                "Pass --replace to delete it and create the new one, or choose another --name. Inspect it with `kubectl tfjob diagnose {name} -n {namespace}`."
            )),
        }),
        // 404 for the resource itself means no CRD, which the CRD check reports.
        Err(e) if cluster::is_not_found(&e) => Ok(None),
        Err(e) => Err(cluster::explain(e, &action, &kube.server)),
    }
}

// ---------------------------------------------------------------------------------------------
// Dry run, replace, create

fn dry_run_params() -> PostParams {
    PostParams {
        dry_run: true,
        field_manager: Some(FIELD_MANAGER.into()),
    }
}

/// Turns a 422 (schema or webhook) into the invalid-input error it is.
fn rejected(e: kube::Error, kube: &Kube, namespace: &str, verb: &'static str) -> Error {
    match &e {
        kube::Error::Api(s) if s.code == 422 || s.code == 400 => {
            let mut message = format!("the API server rejected the TFJob: {}", s.message);
            if let Some(details) = &s.details {
                for cause in &details.causes {
                    message.push_str(&format!("\n  - {}: {}", cause.field, cause.message));
                }
            }
            Error::Invalid(message)
        }
        kube::Error::Api(s) if s.code == 500 && s.message.contains("webhook") => Error::NotReady {
            message: format!("the training-operator's admission webhook failed: {}", s.message),
            hint: Some("The operator is installed but not answering; check its pods in the kubeflow namespace.".into()),
        },
        _ => cluster::explain(e, &Action::new(verb, "tfjobs", Some(namespace)), &kube.server),
    }
}

async fn server_dry_run(
    kube: &Kube,
    jobs: &Api<TFJob>,
    job: &TFJob,
    existing: Option<&TFJob>,
) -> Result<Option<TFJob>> {
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let params = dry_run_params();
    match existing {
        None => cluster::retry(kube, || jobs.create(&params, job))
            .await
            .map(Some)
            .map_err(|e| rejected(e, kube, &namespace, "create")),
        Some(old) => {
            let mut update = job.clone();
            update.metadata.resource_version = old.metadata.resource_version.clone();
            cluster::retry(kube, || jobs.replace(&name, &params, &update))
                .await
                .map(|_| None)
                .map_err(|e| rejected(e, kube, &namespace, "update"))
        }
    }
}

fn confirm_replace(namespace: &str, name: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::Usage(format!(
            "--replace deletes TFJob {namespace}/{name} and its pods; pass --yes to confirm without a terminal"
        )));
    }
    let ok = dialoguer::Confirm::new()
        .with_prompt(format!(
            "Delete TFJob {namespace}/{name} and its pods, then create the new one?"
        ))
        .default(false)
        .interact()
        .map_err(|e| Error::Other(format!("reading the confirmation: {e}")))?;
    if ok {
        Ok(())
    } else {
        Err(Error::Interrupted(
            "not replaced; nothing was changed".into(),
        ))
    }
}

async fn delete_and_wait(
    kube: &Kube,
    jobs: &Api<TFJob>,
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> Result<()> {
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    let action = Action::new("delete", "tfjobs", Some(namespace)).named(name);
    match cluster::retry(kube, || jobs.delete(name, &params)).await {
        Ok(_) => {}
        Err(e) if cluster::is_not_found(&e) => return Ok(()),
        Err(e) => return Err(cluster::explain(e, &action, &kube.server)),
    }
    // The name is free once the old object (that uid) is gone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match jobs.get_opt(name).await {
            Ok(None) => return Ok(()),
            Ok(Some(j)) if j.metadata.uid.as_deref() != uid => return Ok(()),
            _ => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "TFJob {namespace}/{name} is still being deleted after 60s (finalizers?); the new job was not created"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn submission_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}-{:x}", nanos, std::process::id())
}

/// Creates the job. Transient failures are retried; if a retry meets AlreadyExists, the stored
/// job's submission id says whether it is ours (success) or someone else's (conflict), so a
/// retried create can never produce two jobs or report a false failure.
async fn create(kube: &Kube, jobs: &Api<TFJob>, mut job: TFJob) -> Result<TFJob> {
    let id = submission_id();
    job.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(SUBMISSION_ANNOTATION.into(), id.clone());
    let params = PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.into()),
    };
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    if job.metadata.name.is_none() {
        return create_generated(kube, jobs, &job, &params, &id, &namespace).await;
    }
    let name = job.metadata.name.clone().unwrap_or_default();
    match cluster::retry(kube, || jobs.create(&params, &job)).await {
        Ok(created) => Ok(created),
        Err(e) if cluster::status_code(&e) == Some(409) => match jobs.get_opt(&name).await {
            Ok(Some(stored))
                if stored
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(SUBMISSION_ANNOTATION))
                    == Some(&id) =>
            {
                Ok(stored)
            }
            _ => Err(Error::Conflict {
                message: format!("TFJob {namespace}/{name} was created by someone else meanwhile"),
                hint: Some("Choose another --name, or pass --replace.".into()),
            }),
        },
        Err(e) => Err(rejected(e, kube, &namespace, "create")),
    }
}

/// generateName: a retried create would make a second job under another name, so a failed
/// attempt is retried only once the list shows that no job carries this submission's id; when
/// one does, the first attempt went through and that job is the result.
async fn create_generated(
    kube: &Kube,
    jobs: &Api<TFJob>,
    job: &TFJob,
    params: &PostParams,
    id: &str,
    namespace: &str,
) -> Result<TFJob> {
    const ATTEMPTS: usize = 3;
    let mut last = None;
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200 * attempt as u64)).await;
            let landed = jobs.list(&ListParams::default()).await.ok().and_then(|l| {
                l.items.into_iter().find(|j| {
                    j.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(SUBMISSION_ANNOTATION))
                        .is_some_and(|v| v == id)
                })
            });
            if let Some(found) = landed {
                return Ok(found);
            }
        }
        match jobs.create(params, job).await {
            Ok(created) => return Ok(created),
            Err(e) if cluster::client::is_transient(&e) => last = Some(e),
            Err(e) => return Err(rejected(e, kube, namespace, "create")),
        }
    }
    Err(rejected(
        last.expect("at least one attempt failed"),
        kube,
        namespace,
        "create",
    ))
}
