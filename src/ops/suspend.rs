//! `suspend` / `resume`: set `spec.runPolicy.suspend` with a merge patch, after checking that the
//! installed CRD has the field (training-operator v1.7 and later).
//!
//! What the operator does (kubeflow/trainer v1.9 `pkg/controller.v1/common/job.go`, see
//! operator-behavior.md §3): while `suspend` is true it deletes all the job's pods and services
//! (active counts 0, `Running=False` reason `TFJobSuspended`, `Suspended=True`); on resume it
//! sets `Suspended=False` (`TFJobResumed`), resets `startTime` and creates the pods again from
//! scratch — anything the training did not checkpoint is lost.

use std::io::Write;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};

use super::Context;
use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::output::Output;

/// Suspend or resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuspendAction {
    Suspend,
    Resume,
}

/// Which job.
#[derive(Debug, Clone)]
pub struct SuspendOptions {
    pub name: String,
    pub action: SuspendAction,
    /// Return once it took effect (the pods gone, or every replica running again).
    pub wait: bool,
    /// The uid of the job an earlier read saw (restart's suspend): a job created again under
    /// the name since is another job and is left alone.
    pub uid: Option<String>,
}

/// What the user should know about running pods, said plainly.
pub fn consequence(action: SuspendAction, name: &str) -> String {
    match action {
        SuspendAction::Suspend => format!(
            "The training-operator now deletes every pod and service of tfjob {name}; \
             running training stops and only what it checkpointed survives. \
             `kubectl tfjob resume {name}` creates the pods again from scratch."
        ),
        SuspendAction::Resume => format!(
            "The training-operator creates the pods of tfjob {name} again from scratch \
             (startTime is reset); training resumes only from its own checkpoints."
        ),
    }
}

/// Whether the served `kubeflow.org/v1` schema has `spec.runPolicy.suspend`.
pub fn crd_has_suspend(crd: &CustomResourceDefinition) -> bool {
    crd.spec
        .versions
        .iter()
        .filter(|v| v.name == model::VERSION)
        .filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
        .any(|s| {
            let prop = |s: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps,
                        k: &str| s.properties.as_ref().and_then(|p| p.get(k)).cloned();
            prop(s, "spec")
                .and_then(|sp| prop(&sp, "runPolicy"))
                .and_then(|rp| prop(&rp, "suspend"))
                .is_some()
        })
}

/// `kubectl tfjob suspend|resume NAME`: patches the job in the context's namespace.
pub async fn run(ctx: &Context, opts: SuspendOptions, out: &mut Output) -> Result<()> {
    ctx.with_streams(out, async |kube, ns, data, notes| {
        let uid = set_suspend(kube, ns, &opts, data, notes).await?;
        if opts.wait && opts.action == SuspendAction::Suspend {
            pods_gone(kube, ns, &opts.name, &uid, ctx.deadline(), notes).await?;
        }
        Ok(())
    })
    .await?;
    if opts.wait && opts.action == SuspendAction::Resume {
        // As `wait` follows it: every replica running, said by the wait's own lines.
        let kube = ctx.kube().await?;
        let wait = super::wait::WaitOptions {
            wait_for: super::wait::WaitFor::AllRunning,
            timeout: ctx.deadline().timeout().unwrap_or_default(),
            ..Default::default()
        };
        super::wait::follow(
            kube,
            &kube.namespace,
            &opts.name,
            &wait,
            crate::output::ReportFormat::Text,
            out,
        )
        .await?;
    }
    Ok(())
}

/// The job under `name` is not the one read (`uid`): it was deleted and created again since.
fn replaced(kube: &Kube, namespace: &str, name: &str, uid: &str) -> Error {
    Error::Conflict {
        message: format!(
            "tfjob {namespace}/{name} was deleted and created again since it was read (uid {uid} \
             is gone): the job under that name now is another one, and it was left as it is"
        ),
        hint: Some(format!(
            "See what it is before acting on it: kubectl tfjob get {name} {}",
            kube.hints.ns_flags(namespace)
        )),
    }
}

/// Returns once the operator has deleted every pod of job `name` whose owner is `uid` (a job
/// re-created under the name has another); cut by the deadline with its message (the job is
/// suspended all the same).
pub async fn pods_gone(
    kube: &Kube,
    namespace: &str,
    name: &str,
    uid: &str,
    deadline: &crate::cluster::budget::Deadline,
    err: &mut dyn Write,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io("writing progress", e);
    let pods: Api<crate::cluster::pod::Pod> = Api::namespaced(kube.client.clone(), namespace);
    let owned = |p: &crate::cluster::pod::Pod| {
        p.metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| o.iter().any(|o| o.uid == uid))
    };
    let selector = model::job_selector(name);
    let gone = cluster::pod::pods_gone(pods, &selector, owned, |n| {
        writeln!(err, "waiting for {n} pod(s) of tfjob {name} to be deleted").map_err(io)
    });
    deadline
        .attempt(gone)
        .await
        .ok_or_else(|| Error::Timeout(deadline.ran_out_message()))?
}

/// Patches `runPolicy.suspend`; prints `tfjob.kubeflow.org/NAME suspended|resumed` on `out`
/// (or `… unchanged` when it already was), and the consequence on `err`. Returns the uid of
/// the job it read, whose pods a caller may wait for.
pub async fn set_suspend(
    kube: &Kube,
    namespace: &str,
    opts: &SuspendOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(kube.client.clone());
    let crd = cluster::retry(kube, || crds.get_opt(model::CRD_NAME))
        .await
        .map_err(|e| Error::kube("reading the TFJob CRD", e))?
        .ok_or_else(cluster::crd_not_served)?;
    if !crd_has_suspend(&crd) {
        return Err(Error::not_ready(
            format!(
                "the installed CRD {} has no spec.runPolicy.suspend (training-operator older than v1.7)",
                model::CRD_NAME
            ),
            "upgrade the training-operator to v1.7 or later to suspend and resume TFJobs",
        ));
    }
    let job = super::workload::read_tfjob(kube, &opts.name).await?;
    let uid = job.metadata.uid.clone().unwrap_or_default();
    if let Some(read) = opts.uid.as_deref().filter(|read| *read != uid) {
        return Err(replaced(kube, namespace, &opts.name, read));
    }
    let want = opts.action == SuspendAction::Suspend;
    // A Kueue-managed job is paused through its Workload, not runPolicy.suspend.
    if !(want && job.is_finished())
        && super::queue_suspend::set_active(kube, namespace, &job, want, out, err).await?
    {
        return Ok(uid);
    }
    let io = |e: std::io::Error| Error::io("writing output", e);
    let verb = if want { "suspended" } else { "resumed" };
    let now = job.is_suspended();
    if now == want {
        writeln!(
            out,
            "tfjob.kubeflow.org/{} unchanged (already {verb})",
            opts.name
        )
        .map_err(io)?;
        return Ok(uid);
    }
    if want && job.is_finished() {
        return Err(Error::Conflict {
            message: format!(
                "tfjob {} has already finished; there is nothing to suspend",
                opts.name
            ),
            hint: None,
        });
    }
    // The uid read is the patch's precondition (metadata.uid is immutable: another uid is 422),
    // so a job created again under the name between the read and the write is not touched.
    let patch = serde_json::json!({
        "metadata": {"uid": uid},
        "spec": {"runPolicy": {"suspend": want}},
    });
    // Setting suspend to a value is idempotent, so the patch may be retried like a read.
    let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
    let check = format!(
        "kubectl get tfjob {} {} -o jsonpath={{.spec.runPolicy.suspend}}",
        opts.name,
        kube.hints.ns_flags(namespace)
    );
    crate::error::on_interrupt_write("TFJob", namespace, &opts.name, "patched", &check);
    let api: Api<TFJob> = Api::namespaced(kube.client.clone(), namespace);
    let patched = cluster::retry(kube, || api.patch(&opts.name, &params, &patch)).await;
    crate::error::on_interrupt_settled();
    patched.map_err(|e| match cluster::invalid_field(&e) {
        Some("metadata.uid") => replaced(kube, namespace, &opts.name, &uid),
        _ => Error::kube(format!("patching tfjob {}", opts.name), e),
    })?;
    writeln!(out, "tfjob.kubeflow.org/{} {verb}", opts.name).map_err(io)?;
    writeln!(err, "{}", consequence(opts.action, &opts.name)).map_err(io)?;
    Ok(uid)
}
