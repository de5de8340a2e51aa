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
    /// TFJob names (or tfjob/NAME); several are shown one after another, or as one List with
    /// -o json|yaml, as `kubectl get` does.
    #[arg(required = true, num_args = 1..)]
    pub names: Vec<String>,

    /// Default: conditions, replicas, services, events, gateway env, TF_CONFIG. `-o wide` is the
    /// job's `list -o wide` row; the other formats print the TFJob as the API returned it.
    #[command(flatten)]
    pub print: PrintArgs,
}

pub fn exec(ctx: Context, args: GetArgs, out: &mut Output) -> Result<()> {
    let targets = args
        .names
        .iter()
        .map(|arg| Target::parse(arg, "get"))
        .collect::<Result<Vec<_>>>()?;
    let mut opts = GetOptions::new(targets[0].name());
    opts.format = args.print.format()?;
    opts.table = args.print.table();
    block_on(&ctx, crate::ops::get::run(&ctx, &targets, opts, out))
}

pub(super) const GET_EXAMPLES: &str = "\
Examples:
  # Conditions, replica pods, services, recent events, the gateway Secret each role reads
  kubectl tfjob get tf-dist-train

  # Two jobs one after the other; as one List with -o yaml
  kubectl tfjob get tf-dist-train tf-eval

  # The TFJob as the API server returns it, or one field of it
  kubectl tfjob get tf-dist-train -o yaml
  kubectl tfjob get tf-dist-train -o jsonpath='{.status.conditions[-1:].type}'";
