//! `submit --to jobset` (issue 27): the exported JobSet, created after the same readiness and
//! placement checks as a TFJob (readiness here: the JobSet API served and its controller
//! running), and with `--wait` followed until every replicatedJob's pods are Ready. JobSet has
//! no Running condition; "all pods running" is Kueue's `PodsReady` test, which the JobSet
//! controller's `allJobsReady` shares: Σ replicas == Σ (ready + succeeded) over
//! `status.replicatedJobsStatus` (kueue `pkg/controller/jobs/jobset/jobset_controller.go`;
//! jobset `pkg/controllers/jobset_controller.go`), with Completed and Failed not True.

use super::Context;

use kube::Api;
use kube::api::PostParams;

use crate::cluster;
use crate::error::{Error, Result};
use crate::ops::DryRun;
use crate::ops::export::{print_notes, refused, server_dry_run};
use crate::ops::readiness::combine;
use crate::ops::submit::SubmitOptions;
use crate::ops::target::check_jobset;
use crate::output::Output;
use crate::pipeline::jobset::model::JobSet;

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
    let mut prepared = crate::pipeline::render::prepare(ctx.conn(), &args.render)?;
    super::submit::image_gate(&prepared.job, &args, out)?;
    let kube = ctx.kube().await?;
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
        super::wait::jobset::follow(
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
