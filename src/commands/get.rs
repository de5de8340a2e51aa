//! `kubectl tfjob get NAME` (alias `status`): one job in full, or as the API returned it.

use clap::Args;

use super::block_on;
use super::list::PrintArgs;
use crate::cluster::Target;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::get::GetOptions;
use crate::output::Output;

#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    /// Default: conditions, replicas, services, events, gateway env, TF_CONFIG. `-o wide` is the
    /// job's `list -o wide` row; the other formats print the TFJob as the API returned it.
    #[command(flatten)]
    pub print: PrintArgs,
}

pub fn exec(ctx: Context, args: GetArgs, out: &mut Output) -> Result<()> {
    let name = match Target::parse(&args.name, "get")? {
        Target::JobSet(name) => {
            return block_on(&ctx, crate::ops::jobset_day2::get(&ctx, &name, out));
        }
        Target::TfJob(name) => name,
    };
    let mut opts = GetOptions::new(&name);
    opts.format = args.print.format()?;
    opts.table = args.print.table();
    block_on(&ctx, crate::ops::get::run(&ctx, opts, out))
}

pub(super) const GET_EXAMPLES: &str = "\
Examples:
  # Conditions, replica pods, services, recent events, the gateway Secret each role reads
  kubectl tfjob get tf-dist-train

  # The TFJob as the API server returns it, or one field of it
  kubectl tfjob get tf-dist-train -o yaml
  kubectl tfjob get tf-dist-train -o jsonpath='{.status.conditions[-1:].type}'";
