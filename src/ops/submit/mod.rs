//! `submit`: render and validate offline, check the cluster is ready, validate against the live
//! CRD and a server-side dry run, then create the TFJob — all or nothing.
//!
//! Every check before the create is a read (or a dry run, or an access review, which store
//! nothing), so a failure at any step leaves the cluster exactly as it was.

use super::Context;

mod create;
use std::io::IsTerminal;
use std::time::Duration;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams, PropagationPolicy,
};
use kube::runtime::wait::{await_condition, conditions};

use super::DryRun;
use super::readiness::{check_readiness, combine};
use super::wait::{self, WaitOptions};
use super::workload::jobset;
use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::gateway::BASE_URL_KEY;
use crate::model::duration::brief as humantime;
use crate::model::{self, TFJob};
use crate::output::{Output, ReportFormat};
use crate::pipeline::render::{self, RenderOptions};
use crate::pipeline::validate;
use crate::print::{self, Format};

pub use crate::model::SUBMISSION_ANNOTATION;

/// What `submit` does (the flags, clap-free).
#[derive(Debug, Clone)]
pub struct SubmitOptions {
    pub render: RenderOptions,
    pub dry_run: DryRun,
    /// `-o`; `None` prints `tfjob.kubeflow.org/NAME created` and the next steps.
    /// `-o`: kubectl's printers on the created object (None: the `created` line).
    pub output: Option<Format>,
    /// Delete a job of the same name first (asks unless `yes`).
    pub replace: bool,
    pub yes: bool,
    /// Follow the job after creating it.
    pub wait: bool,
    pub wait_opts: WaitOptions,
    /// Do not refuse a job the placement pre-flight says can never run (autoscaled clusters).
    pub skip_capacity_check: bool,
    /// Go on although objects the pods need do not exist yet (created after the job on purpose).
    pub allow_missing_refs: bool,
    /// Create the job although an image reference cannot be parsed (`--skip-image-check`).
    pub skip_image_check: bool,
    /// `--to`: the kind to create, decided once from the flags (a TFJob, or the JobSet
    /// `export --to jobset` makes of it, the Workload's JobSet arm).
    pub to: Kind,
}

/// The kind `submit` creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    TfJob,
    JobSet,
}

/// Images the kubelet cannot even parse (`InvalidImageName`): the API server stores such a
/// job, and every pod of it fails. Only the tool can stop it, so `submit` refuses before any
/// request, as for a job that can never fit (exit 4), unless `--skip-image-check`; a server
/// dry run is the API server's answer, so there it is a warning.
pub(super) fn image_gate(job: &TFJob, args: &SubmitOptions, out: &mut Output) -> Result<()> {
    if args.skip_image_check || args.dry_run == DryRun::Client {
        return Ok(());
    }
    let mut bad = Vec::new();
    for (role, replica) in &job.spec.tf_replica_specs {
        let Some(spec) = replica.template.spec.as_ref() else {
            continue;
        };
        let containers = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| ("initContainers", c));
        for (list, c) in containers.chain(spec.containers.iter().map(|c| ("containers", c))) {
            let image = c.image.as_deref().unwrap_or("");
            if let Err(why) = crate::pipeline::validate::pod::image_reference(image) {
                bad.push(format!(
                    "{role} {list} {:?}: image {image:?} is not a valid image reference ({why})",
                    c.name
                ));
            }
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    let name = job.metadata.name.as_deref().unwrap_or("the job");
    if args.dry_run == DryRun::Server {
        for b in &bad {
            out.note_line(&format!(
                "warning: {b}: its pods would fail with InvalidImageName"
            ));
        }
        return Ok(());
    }
    Err(Error::WontRun {
        message: format!(
            "TFJob {name} can never run: {}; the kubelet cannot pull it, so every pod would \
             fail with InvalidImageName. Nothing was created",
            bad.join("; ")
        ),
        hint: Some(
            "Write it as [registry/]repository[:tag][@digest] in lower case, e.g. \
             tensorflow/tensorflow:2.13.0, or create the job anyway with --skip-image-check"
                .into(),
        ),
    })
}

/// `kubectl tfjob submit`: all or nothing, every check before the first write.
pub async fn run(ctx: &Context, args: SubmitOptions, out: &mut Output) -> Result<()> {
    // `--save DIR` must be writable before anything is sent (exit 2 naming it).
    if args.wait
        && let Some(save) = &args.wait_opts.save
    {
        super::evidence::check_dir(save)?;
    }
    // 1. Offline: render (or read), inject credentials, validate. Exit 2 before any request.
    let prepared = render::prepare(ctx.conn(), &args.render)?;
    if args.to == Kind::JobSet {
        // The flags only a TFJob takes were refused (`commands/submit.rs`); the JobSet is the
        // export of this job, checked and created by the Workload's JobSet arm.
        image_gate(&prepared.job, &args, out)?;
        return submit_jobset(ctx, prepared, &args, out).await;
    }
    super::preflight::print_warnings(&prepared.report, out);
    crate::print::manifest::resources(&prepared.resources, out);
    let mut job = prepared.job.clone();
    try_printer(&job, args.output.as_ref())?;
    image_gate(&job, &args, out)?;
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
            args.output.as_ref(),
            &format!("tfjob.kubeflow.org/{name} created (dry run)"),
        )?;
        return Ok(());
    }

    // 2. The namespace, resolved as kubectl does (reading the kubeconfig sends nothing).
    let kube = ctx.kube().await?;
    let namespace = super::preflight::settle_namespace(kube, &mut job)?;

    // --replace may delete: ask before the first request, so an unanswerable question ends the
    // command at once, with nothing sent.
    if args.replace && args.dry_run == DryRun::None {
        confirm_replace(&namespace, &name, args.yes)?;
    }

    // From here `--timeout` (with --wait or --replace) is spent phase by phase.
    kube.deadline.phase(format!(
        "checking TFJob {namespace}/{name} before creating it (readiness, placement, dry runs); nothing was created"
    ));
    // 3.-5. Readiness, the live schema, placement and queues.
    let existing = check_cluster(kube, &namespace, &mut job, &prepared, &args, out).await?;
    // 6. The pods the operator will create, as server dry runs: PodSecurity, policy engines
    //    and webhooks on pods answer only there.
    super::pod_dry_run::check(kube, &namespace, &job, out).await?;
    let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), &namespace);
    let wire = Wire::new(kube, &namespace, prepared.as_written.as_ref());
    let answered = server_dry_run(kube, &jobs, &wire, &job, existing.as_ref()).await?;

    if args.dry_run == DryRun::Server {
        // As kubectl does, show what the server answered (with its generated name).
        let shown = answered.unwrap_or(job);
        let shown_name = shown.metadata.name.clone().unwrap_or(name);
        print_job(
            out,
            &shown,
            args.output.as_ref(),
            &format!("tfjob.kubeflow.org/{shown_name} created (server dry run)"),
        )?;
        return Ok(());
    }

    // 7. The writes: replace if asked, then create; what was made is said.
    let target = Target {
        kube,
        jobs: &jobs,
        wire: &wire,
        namespace: &namespace,
        name: &name,
    };
    let before_create = k8s_openapi::jiff::Timestamp::now();
    let name = write(&target, job, existing, &args, out).await?;
    if args.wait {
        // With -o, stdout carries the object alone: what `wait` prints goes to stderr.
        let mut out = out.data_to_stderr(args.output.is_some());
        let wait_opts = WaitOptions {
            capacity_may_come: args.skip_capacity_check,
            since: Some(before_create),
            env_prefix: prepared.gateway.env_prefix.clone(),
            ..args.wait_opts.clone()
        };
        wait::follow(
            kube,
            &namespace,
            &name,
            &wait_opts,
            ReportFormat::Text,
            &mut out,
        )
        .await?;
    }
    Ok(())
}

/// The printer runs on a sample first: a -o that cannot print the job fails here, before any
/// write, not after the job exists.
fn try_printer(job: &TFJob, output: Option<&Format>) -> Result<()> {
    if let Some(format) = output {
        print::manifest::job(
            &sample(job),
            Some(format),
            crate::ops::list::QUALIFIED_KIND,
            "",
            &mut std::io::sink(),
        )
        .map_err(|e| match e {
            Error::Interrupted(_) => e,
            other => Error::Usage(format!(
                "-o cannot print the job, so nothing was created: {other}"
            )),
        })?;
    }
    Ok(())
}

/// `submit --to jobset` from where the kinds part ([`run`] did the offline build and the image
/// gate): the exported JobSet (printed, under `--dry-run=client`), created after
/// the same readiness and placement checks as a TFJob (readiness here: the JobSet API served and
/// its controller running), and with `--wait` followed until every replicatedJob's pods are
/// Ready ([`follow`]).
async fn submit_jobset(
    ctx: &Context,
    mut prepared: crate::pipeline::render::Prepared,
    args: &SubmitOptions,
    out: &mut Output,
) -> Result<()> {
    if args.dry_run == DryRun::Client {
        let (exported, prepared) = super::export::from_prepared(prepared)?;
        crate::ops::preflight::print_warnings(&prepared.report, out);
        super::export::print_notes(&exported.notes, out);
        return out.data(&super::export::to_text(
            &exported.jobset,
            super::export::ExportFormat::Yaml,
        ));
    }
    let kube = ctx.kube().await?;
    let namespace = crate::ops::preflight::settle_namespace(kube, &mut prepared.job)?;
    let (exported, prepared) = super::export::from_prepared(prepared)?;
    crate::ops::preflight::print_warnings(&prepared.report, out);
    super::export::print_notes(&exported.notes, out);
    let job = prepared.job.clone();

    // Readiness: every check runs, the failures are reported together.
    let ((mut failures, warnings), ns, secrets) = tokio::join!(
        jobset::check_jobset(kube, &namespace),
        crate::ops::readiness::check_namespace(kube, &namespace),
        crate::ops::readiness::check_secrets(kube, &namespace, &job, &prepared.gateway),
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
        return Err(super::readiness::combine(failures));
    }
    // Placement: the JobSet's pods are the TFJob's pods.
    let gate = crate::ops::preflight::GateOptions {
        show_verdict: args.dry_run == DryRun::Server,
        capacity: !args.skip_capacity_check,
        allow_missing_refs: args.allow_missing_refs,
    };
    crate::ops::preflight::gate(kube, &namespace, &job, gate, out).await?;
    let answered = jobset::server_dry_run(kube, &namespace, &exported.jobset).await?;
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
    let api: Api<crate::pipeline::jobset::model::JobSet> =
        Api::namespaced(kube.client.clone(), &namespace);
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
        Err(e) => return Err(jobset::refused(e, kube, &namespace, "create")),
    };
    let name = created.metadata.name.clone().unwrap_or(shown);
    crate::error::on_interrupt(format!(
        "interrupted: JobSet {namespace}/{name} was created and is left as it is"
    ));
    let line = format!("jobset.jobset.x-k8s.io/{name} created");
    let printed = out.data_line(&line);
    out.after_write(printed, &line)?;
    if args.wait {
        jobset::follow(
            kube,
            &api,
            &created,
            args.wait_opts.wait_for,
            args.wait_opts.timeout.is_zero(),
            out,
        )
        .await?;
    }
    Ok(())
}

/// Steps 3 to 5 of [`run`], all reads and dry runs: the cluster is ready (every check, all
/// failures together), the namespace's stored gateway URL applied, the job matches the live CRD,
/// and the queue and placement gates pass. Returns the job of the same name `--replace` found.
async fn check_cluster(
    kube: &Kube,
    namespace: &str,
    job: &mut TFJob,
    prepared: &render::Prepared,
    args: &SubmitOptions,
    out: &mut Output,
) -> Result<Option<TFJob>> {
    // 3. Readiness: every check runs, all failures are reported together.
    let readiness = check_readiness(kube, namespace, job, &prepared.gateway, args.replace).await;
    for warning in &readiness.warnings {
        out.note_line(&format!("warning: {warning}"));
    }
    if let Some((message, hint)) = super::readiness::istio_warning(
        &prepared.report,
        namespace,
        readiness.istio_injection.as_deref(),
    ) {
        out.note_line(&format!("warning: {message}\n  hint: {hint}"));
    }
    if !readiness.failures.is_empty() {
        return Err(combine(readiness.failures));
    }

    // The namespace's Secret may name its own gateway: its key must not go to the default one.
    if let Some(stored) = readiness.stored_base_url {
        let mut gateway = prepared.gateway.clone();
        if gateway.enabled && !gateway.base_url_given {
            if let Err(why) = crate::gateway::absolute_http_url(&stored) {
                return Err(Error::not_ready(
                    format!(
                        "Secret {namespace}/{} holds {:?} under {BASE_URL_KEY:?}, which jobs would use as their gateway, but {why}; nothing was created",
                        gateway.secret_name,
                        crate::gateway::masked_url(&stored)
                    ),
                    format!(
                        "Store a valid one: {} --base-url https://gateway.example.com/api --overwrite, or pass --api-base-url",
                        cluster::secret::create_command(
                            &gateway.secret_name,
                            &gateway.secret_key,
                            namespace,
                            &kube.hints
                        )
                    ),
                ));
            }
            gateway.use_stored_base_url(&stored);
            gateway.apply(job);
            out.note_line(&format!(
                "gateway base URL: {} (from Secret {namespace}/{}, key {BASE_URL_KEY:?})",
                gateway.base_url, gateway.secret_name
            ));
        }
    }

    // 4. Cluster-side validation: the live CRD's schema (version skew), then a server dry run
    //    (which runs the operator's admission webhook too).
    if let Some(schema) = &readiness.live_schema {
        let value = serde_json::to_value(&*job).map_err(|e| Error::Other(e.to_string()))?;
        let findings = validate::validate_against_openapi(schema, &value);
        let report = validate::Report { findings };
        if report.has_errors() {
            return Err(Error::Invalid(format!(
                "the TFJob does not match the CRD installed in the cluster (version skew?):\n{}",
                report.render_text()
            )));
        }
    }
    // 5. Will it run? Missing objects the pods need, and a `never`, refuse here, before
    //    anything is written.
    let gate = super::preflight::GateOptions {
        show_verdict: args.dry_run == DryRun::Server,
        capacity: !args.skip_capacity_check,
        allow_missing_refs: args.allow_missing_refs,
    };
    // A server dry run asks for the API server's answer, as `kubectl create --dry-run=server`
    // does: a job that can never be placed or admitted is said as a warning there, and the
    // dry run goes on to the server.
    let dry = args.dry_run == DryRun::Server;
    let queued = match super::queue::gate(kube, namespace, job, gate.capacity, out).await {
        Err(e @ Error::WontRun { .. }) if dry => {
            dry_run_warning(&e, out);
            return Ok(readiness.existing);
        }
        queued => queued?,
    };
    match super::preflight::gate(kube, namespace, queued.placement_job(job), gate, out).await {
        Err(e @ Error::WontRun { .. }) if dry => dry_run_warning(&e, out),
        gated => gated?,
    }
    Ok(readiness.existing)
}

/// A `never` under `--dry-run=server`: the refusal a real submit would get, as a warning.
fn dry_run_warning(e: &Error, out: &mut Output) {
    out.note_line(&format!(
        "warning: {e} (a submit without --dry-run is refused so; the server dry run goes on)"
    ));
    if let Some(hint) = e.hint() {
        out.note_line(hint);
    }
}

/// Where the writes go: the job's API, how it is sent, and its name.
struct Target<'a> {
    kube: &'a Kube,
    jobs: &'a Api<TFJob>,
    wire: &'a Wire<'a>,
    namespace: &'a str,
    name: &'a str,
}

/// Step 7 of [`run`]: `--replace`'s delete (waiting for the job and its pods to go), then the
/// create, each said on stdout as kubectl says it, with what an interrupt means at each point.
/// Returns the name the server gave.
async fn write(
    t: &Target<'_>,
    job: TFJob,
    existing: Option<TFJob>,
    args: &SubmitOptions,
    out: &mut Output,
) -> Result<String> {
    let (kube, jobs, wire) = (t.kube, t.jobs, t.wire);
    let (namespace, name) = (t.namespace.to_string(), t.name.to_string());
    let deadline = &kube.deadline;
    if let Some(old) = existing {
        let deleted = format!("tfjob.kubeflow.org/{name} deleted");
        deadline.phase(format!(
            "deleting TFJob {namespace}/{name} and its pods for --replace; the new job was not created"
        ));
        delete_and_wait(
            kube,
            jobs,
            &old,
            deadline.slice(args.wait_opts.timeout),
            out,
        )
        .await?;
        if args.output.is_some() {
            // stdout holds only the object asked for with -o.
            out.note_line(&deleted);
        } else {
            let printed = out.data_line(&deleted);
            out.after_write(printed, &deleted)?;
        }
    }
    // What an interrupt means now: the create is in flight.
    let check = format!(
        "kubectl get tfjob {name} {}",
        kube.hints.ns_flags(&namespace)
    );
    crate::error::on_interrupt_write("TFJob", &namespace, &name, "created", &check);
    // No create is started once the deadline has passed (the retry policy sends nothing then
    // either); one cut off in flight may have been applied.
    if deadline.passed() {
        return Err(deadline.ran_out());
    }
    deadline.phase(format!(
        "creating TFJob {namespace}/{name}: it may exist; check with `{check}`"
    ));
    let (created, reply_lost) = create::create(kube, jobs, wire, job).await?;
    let shown = created.metadata.name.clone().unwrap_or(name.clone());
    crate::error::on_interrupt(format!(
        "interrupted: TFJob {namespace}/{shown} was created and is left as it is"
    ));
    if reply_lost {
        out.note_line(&format!(
            "tfjob.kubeflow.org/{shown} created (the reply was lost; the job exists)"
        ));
    }
    // Every later step follows the name the server gave (generateName).
    let name = created.metadata.name.clone().unwrap_or(name);
    let line = format!("tfjob.kubeflow.org/{name} created");
    let printed = print_job(out, &created, args.output.as_ref(), &line);
    if let Err(e) = &printed
        && !matches!(e, Error::BrokenPipe)
    {
        // The printer passed on the sample and failed on the real object: the job exists,
        // and the user must hear that before the printer's error.
        out.note_line(&format!(
            "TFJob {namespace}/{name} was created (uid {}); printing it failed:",
            created.metadata.uid.as_deref().unwrap_or("unknown")
        ));
    }
    super::queue::note_unmanaged(&created, out);
    // The job exists now: a closed stdout must not hide that.
    out.after_write(printed, &line)?;
    if args.output.is_none() && !args.wait {
        // The same connection flags, in the user's order, so each hint reaches the same
        // cluster as this command.
        let conn = kube.hints.ns_flags(&namespace);
        out.note_line(&format!(
            "\nFollow it:   kubectl tfjob wait {name} {conn}\n\
             Its pods:    kubectl get pods {conn} -l {}={name}\n\
             If stuck:    kubectl tfjob diagnose {name} {conn}",
            model::LABEL_JOB_NAME
        ));
    }
    Ok(name)
}

/// The job as the API server would return it, for a printer's trial run: the fields the
/// server sets (uid, resourceVersion, creationTimestamp, namespace, an empty status) filled.
fn sample(job: &TFJob) -> TFJob {
    let mut s = job.clone();
    let m = &mut s.metadata;
    if m.name.is_none() {
        m.name = Some(format!(
            "{}xxxxx",
            m.generate_name.clone().unwrap_or_default()
        ));
    }
    m.namespace.get_or_insert_with(|| "default".into());
    m.uid
        .get_or_insert_with(|| "00000000-0000-0000-0000-000000000000".into());
    m.resource_version.get_or_insert_with(|| "1".into());
    m.generation.get_or_insert(1);
    m.creation_timestamp.get_or_insert({
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        )
    });
    s
}

fn print_job(
    out: &mut Output,
    job: &TFJob,
    output: Option<&Format>,
    default_line: &str,
) -> Result<()> {
    let mut buf = Vec::new();
    let kind = crate::ops::list::QUALIFIED_KIND;
    print::manifest::job(job, output, kind, default_line, &mut buf)?;
    out.data(&String::from_utf8_lossy(&buf))
}

// ---------------------------------------------------------------------------------------------
// Dry run, replace, create

fn dry_run_params() -> PostParams {
    PostParams {
        dry_run: true,
        field_manager: Some(cluster::FIELD_MANAGER.into()),
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
        _ => cluster::explain(e, &Action::new(verb, "tfjobs", Some(namespace)), kube),
    }
}

async fn server_dry_run(
    kube: &Kube,
    jobs: &Api<TFJob>,
    wire: &Wire<'_>,
    job: &TFJob,
    existing: Option<&TFJob>,
) -> Result<Option<TFJob>> {
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let params = dry_run_params();
    match existing {
        None => match cluster::retry(kube, || wire.create(&params, job)).await {
            Ok(answered) => Ok(Some(answered)),
            // Created by someone between the readiness GET and now: the name is taken.
            Err(e) if cluster::status_code(&e) == Some(409) => Err(name_taken(&namespace, &name)),
            Err(e) => Err(rejected(e, kube, &namespace, "create")),
        },
        Some(old) => {
            // An update must carry the stored resourceVersion, and the operator rewrites the
            // job's status all the time: a 409 Conflict means "re-read and try again"
            // (client-go's retry.RetryOnConflict pattern, staging/src/k8s.io/client-go/util/
            // retry/util.go), a few times, not a failure of the job.
            let mut resource_version = old.metadata.resource_version.clone();
            let mut conflicts = 0;
            loop {
                let mut update = job.clone();
                update.metadata.resource_version = resource_version.clone();
                match cluster::retry(kube, || wire.replace(&name, &params, &update)).await {
                    Ok(_) => return Ok(None),
                    Err(e)
                        if cluster::status_code(&e) == Some(409)
                            && conflicts < CONFLICT_RETRIES =>
                    {
                        conflicts += 1;
                        tracing::info!(conflicts, "the job changed meanwhile (409); re-reading it");
                        let get = Action::new("get", "tfjobs", Some(&namespace)).named(&name);
                        match cluster::retry(kube, || jobs.get_opt(&name)).await {
                            Ok(Some(current)) => {
                                resource_version = current.metadata.resource_version
                            }
                            // Deleted meanwhile: what is left to check is a create.
                            Ok(None) => {
                                return Box::pin(server_dry_run(kube, jobs, wire, job, None)).await;
                            }
                            Err(e) => return Err(cluster::explain(e, &get, kube)),
                        }
                    }
                    Err(e) => return Err(rejected(e, kube, &namespace, "update")),
                }
            }
        }
    }
}

/// The body of every create and update: a `-f` manifest as written (see
/// [`render::Prepared::as_written`]) with the metadata submit sets (namespace, submission id,
/// resourceVersion) taken from the typed job; otherwise the typed job itself.
struct Wire<'a> {
    api: Api<DynamicObject>,
    as_written: Option<&'a serde_json::Value>,
}

impl<'a> Wire<'a> {
    fn new(kube: &Kube, namespace: &str, as_written: Option<&'a serde_json::Value>) -> Self {
        let resource = ApiResource::erase::<TFJob>(&());
        Wire {
            api: Api::namespaced_with(kube.client.clone(), namespace, &resource),
            as_written,
        }
    }

    fn body(&self, job: &TFJob) -> kube::Result<DynamicObject> {
        let value = match self.as_written {
            Some(raw) => {
                let mut raw = raw.clone();
                raw["metadata"] =
                    serde_json::to_value(&job.metadata).map_err(kube::Error::SerdeError)?;
                raw
            }
            None => serde_json::to_value(job).map_err(kube::Error::SerdeError)?,
        };
        serde_json::from_value(value).map_err(kube::Error::SerdeError)
    }

    fn typed(answer: DynamicObject) -> kube::Result<TFJob> {
        serde_json::to_value(answer)
            .and_then(serde_json::from_value)
            .map_err(kube::Error::SerdeError)
    }

    async fn create(&self, params: &PostParams, job: &TFJob) -> kube::Result<TFJob> {
        let answer = self.api.create(params, &self.body(job)?).await?;
        Self::typed(answer)
    }

    async fn replace(&self, name: &str, params: &PostParams, job: &TFJob) -> kube::Result<TFJob> {
        let answer = self.api.replace(name, params, &self.body(job)?).await?;
        Self::typed(answer)
    }
}

/// How often a dry-run update is re-read and retried after 409 Conflicts from status writes.
const CONFLICT_RETRIES: u32 = 5;

fn name_taken(namespace: &str, name: &str) -> Error {
    Error::Conflict {
        message: format!("TFJob {namespace}/{name} already exists (created meanwhile)"),
        hint: Some(format!(
            "Pass --replace to delete it and create the new one, or choose another --name. Inspect it with `kubectl tfjob diagnose {name} -n {namespace}`."
        )),
    }
}

fn confirm_replace(namespace: &str, name: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::Usage(format!(
            "--replace deletes TFJob {namespace}/{name} (if it exists) and its pods; pass --yes \
             to confirm without a terminal"
        )));
    }
    let ok = dialoguer::Confirm::new()
        .with_prompt(format!(
            "If TFJob {namespace}/{name} exists, delete it and its pods, then create the new one?"
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

/// Deletes the old job and waits, up to `timeout` (what is left of `--timeout`), until it and its
/// pods are gone:
/// a real cluster keeps pods through their termination grace period, and the new job's pods
/// take the same names. Waiting uses kube-runtime's `await_condition` + `is_deleted` (by uid, so
/// an object recreated under the same name counts as gone).
async fn delete_and_wait(
    kube: &Kube,
    jobs: &Api<TFJob>,
    old: &TFJob,
    timeout: Duration,
    out: &mut Output,
) -> Result<()> {
    let namespace = old.metadata.namespace.clone().unwrap_or_default();
    let name = old.metadata.name.clone().unwrap_or_default();
    let uid = old.metadata.uid.clone().unwrap_or_default();
    // Only the job read is deleted: one created again under the name since has another uid,
    // and the precondition makes the API server refuse it (409).
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        preconditions: Some(kube::api::Preconditions {
            uid: Some(uid.clone()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let action = Action::new("delete", "tfjobs", Some(&namespace)).named(&name);
    let check = format!(
        "kubectl get tfjob {name} {}",
        kube.hints.ns_flags(&namespace)
    );
    crate::error::on_interrupt_write("TFJob", &namespace, &name, "deleted", &check);
    let deleted = cluster::retry(kube, || jobs.delete(&name, &params)).await;
    crate::error::on_interrupt(format!(
        "interrupted: TFJob {namespace}/{name} is being deleted for --replace; the new job was not created"
    ));
    match deleted {
        Ok(_) => {}
        Err(e) if cluster::is_not_found(&e) => {}
        Err(e) => return Err(cluster::explain(e, &action, kube)),
    }
    // What is left now, after the DELETE itself.
    let timeout = kube.deadline.slice(timeout);
    out.note_line(&format!(
        "waiting for TFJob {namespace}/{name} and its pods to be deleted (up to {})",
        humantime(timeout)
    ));
    let gone = async {
        await_deleted(jobs.clone(), &name, &uid).await;
        // The operator's pods carry the job-name label and the old job as controller owner:
        // one watch on the label, counting only the old job's pods.
        let pods: Api<crate::cluster::pod::Pod> = Api::namespaced(kube.client.clone(), &namespace);
        let selector = format!("{}={name}", model::LABEL_JOB_NAME);
        let owned_by_old = |p: &crate::cluster::pod::Pod| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid)
        };
        crate::cluster::pod::pods_gone(pods, &selector, owned_by_old, |_| Ok(())).await
    };
    kube.deadline.within(timeout, gone).await.ok_or_else(|| {
        // The command's deadline, when there is one, says the phase it ran out in.
        if kube.deadline.until().is_some() {
            return kube.deadline.ran_out();
        }
        Error::Timeout(format!(
            "TFJob {namespace}/{name} or its pods were still being deleted after {} \
             (--timeout; finalizers or a long grace period?); the new job was not created",
            humantime(timeout)
        ))
    })?
}

/// Waits until the object `name` with `uid` is gone. A failed watch is retried after a pause;
/// the caller bounds the whole.
async fn await_deleted<K>(api: Api<K>, name: &str, uid: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut pause = Duration::from_millis(200);
    loop {
        match await_condition(api.clone(), name, conditions::is_deleted(uid)).await {
            Ok(_) => return,
            Err(e) => {
                tracing::info!(error = %e, "watching a deletion failed; watching again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    }
}
