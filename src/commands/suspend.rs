//! `kubectl tfjob suspend NAME` / `resume NAME`: `spec.runPolicy.suspend` (operator v1.7+).

use clap::Args;

use super::{Global, block_on};
use crate::cluster::{self, parse_job_name};
use crate::error::Result;
use crate::ops::suspend::{SuspendAction, SuspendOptions};
use crate::output::Output;

#[derive(Debug, Clone, Args)]
pub struct SuspendArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,
}

pub fn exec(
    global: &Global,
    args: SuspendArgs,
    action: SuspendAction,
    out: &mut Output,
) -> Result<()> {
    let command = match action {
        SuspendAction::Suspend => "suspend",
        SuspendAction::Resume => "resume",
    };
    let opts = SuspendOptions {
        name: parse_job_name(&args.name, command)?.to_string(),
        action,
    };
    let conn = global.connection();
    let result = block_on(async {
        let kube = cluster::connect(&conn).await?;
        let (data, notes) = out.streams();
        crate::ops::suspend::set_suspend(&kube, &kube.namespace, &opts, data, notes).await
    });
    out.data_result(result)
}

pub(super) const SUSPEND_EXAMPLES: &str = "\
Examples:
  # Stop the job's pods (the operator deletes them); only checkpointed training survives
  kubectl tfjob suspend tf-dist-train

  # Create its pods again from scratch
  kubectl tfjob resume tf-dist-train";
