//! `kubectl tfjob restart NAME`: suspend, wait for the pods to go, resume (ops::restart).

use std::time::Duration;

use clap::Args;

use super::block_on;
use crate::cluster::budget::Deadline;
use crate::cluster::parse_job_name;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::restart::RestartOptions;
use crate::output::Output;

#[derive(Debug, Clone, Args)]
pub struct RestartArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    /// How long the whole restart may take; the job stays suspended if its pods are not gone by
    /// then (Go duration).
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = super::parse_duration)]
    pub timeout: Duration,
}

pub fn exec(ctx: Context, args: RestartArgs, out: &mut Output) -> Result<()> {
    let opts = RestartOptions {
        name: parse_job_name(&args.name, "restart")?.to_string(),
    };
    let ctx = ctx.with_deadline(Deadline::after(args.timeout, "--timeout"));
    block_on(&ctx, crate::ops::restart::run(&ctx, opts, out))
}

pub(super) const RESTART_EXAMPLES: &str = "\
Examples:
  # Pods made again from scratch, e.g. after `kubectl tfjob secret create` rotated the key
  kubectl tfjob restart tf-dist-train

  # Give a slow operator longer to delete the pods
  kubectl tfjob restart tf-dist-train --timeout 5m";
