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

    /// Return once it took effect: suspend, when the operator has deleted the job's pods;
    /// resume, when every replica runs again (as `wait --for all-running`).
    #[arg(long)]
    pub wait: bool,

    /// Act only if the job's uid is still UID (the job you read): a job created again under
    /// the name since is left alone (the patch carries `metadata.uid`).
    #[arg(long, value_name = "UID")]
    pub uid: Option<String>,

    /// With --wait: how long to wait (Go duration).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = super::parse_duration, requires = "wait")]
    pub timeout: std::time::Duration,
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
        wait: args.wait,
        uid: args.uid,
    };
    let ctx = if args.wait {
        ctx.with_deadline(crate::cluster::budget::Deadline::after(
            args.timeout,
            "--timeout",
        ))
    } else {
        ctx
    };
    block_on(&ctx, crate::ops::suspend::run(&ctx, opts, out))
}

pub(super) const SUSPEND_EXAMPLES: &str = "\
Examples:
  # Stop the job's pods (the operator deletes them); only checkpointed training survives
  kubectl tfjob suspend tf-dist-train

  # Create its pods again from scratch, and return once every replica runs
  kubectl tfjob resume tf-dist-train --wait";
