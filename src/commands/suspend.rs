//! `kubectl tfjob suspend NAME` / `resume NAME`: `spec.runPolicy.suspend` (operator v1.7+).

use clap::Args;

use super::block_on;
use crate::cluster::parse_job_name;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::suspend::{SuspendAction, SuspendOptions};
use crate::output::Output;

#[derive(Debug, Clone, Args)]
pub struct SuspendArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,
}

pub fn exec(
    ctx: Context,
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
    block_on(&ctx, crate::ops::suspend::run(&ctx, opts, out))
}

pub(super) const SUSPEND_EXAMPLES: &str = "\
Examples:
  # Stop the job's pods (the operator deletes them); only checkpointed training survives
  kubectl tfjob suspend tf-dist-train

  # Create its pods again from scratch
  kubectl tfjob resume tf-dist-train";
