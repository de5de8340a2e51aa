//! `restart`: a job's pods made again from scratch, e.g. so they read a rotated gateway key
//! (environment from a Secret is read only when a container starts). Suspend, wait until the
//! operator has deleted the job's pods, resume: the operator then creates them anew. A
//! Kueue-managed job goes through its Workload, as `suspend` does.
//!
//! Never half-applied without saying so: if the pods are not gone by `--timeout`, the job is
//! left suspended and the error names the command that resumes it.

use std::io::Write;

use kube::runtime::reflector::Lookup;

use super::Context;
use super::suspend::{SuspendAction, SuspendOptions, set_suspend};
use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::output::Output;

#[derive(Debug, Clone)]
pub struct RestartOptions {
    pub name: String,
}

pub async fn run(ctx: &Context, opts: RestartOptions, out: &mut Output) -> Result<()> {
    let deadline = ctx.deadline().clone();
    ctx.with_streams(out, async |kube, ns, data, notes| {
        restart(kube, ns, &opts, &deadline, data, notes).await
    })
    .await
}

async fn restart(
    kube: &Kube,
    namespace: &str,
    opts: &RestartOptions,
    deadline: &cluster::budget::Deadline,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io("writing output", e);
    let name = &opts.name;
    let job = super::workload::read_tfjob(kube, name).await?;
    if job.is_finished() {
        return Err(Error::Conflict {
            message: format!(
                "tfjob {name} has already finished: the operator makes no pods for it again"
            ),
            hint: Some(format!(
                "Submit it again under a new name, or delete it first: kubectl tfjob delete {name} {}",
                kube.hints.ns_flags(namespace)
            )),
        });
    }
    // suspend/resume's own lines describe those verbs; restart says its own.
    let mut quiet = Vec::new();
    let suspend = SuspendOptions {
        name: name.clone(),
        action: SuspendAction::Suspend,
        wait: false,
        uid: None,
    };
    let uid = set_suspend(kube, namespace, &suspend, &mut quiet, &mut std::io::sink()).await?;
    let resume_hint = format!(
        "kubectl tfjob resume {name} {}",
        kube.hints.ns_flags(namespace)
    );
    writeln!(
        err,
        "tfjob {name} suspended; waiting for the operator to delete its pods"
    )
    .map_err(io)?;
    deadline.phase(format!(
        "waiting for the pods of tfjob {name} to be deleted; it stays suspended until \
         `{resume_hint}`"
    ));
    // An interrupt from here on leaves the job suspended: say so, and how to resume it.
    crate::error::on_interrupt(format!(
        "interrupted while waiting for the pods of tfjob {name} to be deleted: the job stays \
         suspended until `{resume_hint}`"
    ));
    super::suspend::pods_gone(kube, namespace, name, &uid, deadline, err).await?;
    let resume = SuspendOptions {
        name: name.clone(),
        action: SuspendAction::Resume,
        wait: false,
        // Only the job suspended above is resumed, never one created again under its name.
        uid: Some(uid),
    };
    deadline.phase(format!("resuming tfjob {name}"));
    set_suspend(kube, namespace, &resume, &mut quiet, &mut std::io::sink())
        .await
        .map_err(|e| match e {
            Error::Conflict { .. } => e,
            e => Error::Other(format!("{e}; tfjob {name} stays suspended: {resume_hint}")),
        })?;
    writeln!(
        out,
        "tfjob.kubeflow.org/{} restarted",
        job.name().unwrap_or_default()
    )
    .map_err(io)?;
    writeln!(
        err,
        "The training-operator creates the pods of tfjob {name} again from scratch: they read \
         the Secrets' current values; training resumes only from its own checkpoints."
    )
    .map_err(io)?;
    Ok(())
}
