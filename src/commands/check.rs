//! `kubectl tfjob check`.

use clap::Args;

use super::block_on;
use super::render::RenderArgs;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::check::CheckOptions;
use crate::output::{Output, ReportFormat};

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// The job, given exactly as to `submit` (flags, values, or -f manifest).
    #[command(flatten)]
    pub render: RenderArgs,

    /// Output format for the report ("json": the documented stable shape).
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,

    /// Report objects the pods need that do not exist yet as warnings, not readiness errors
    /// (for objects created after the job on purpose).
    #[arg(long)]
    pub allow_missing_refs: bool,
}

pub fn exec(ctx: Context, args: CheckArgs, out: &mut Output) -> Result<()> {
    let options = CheckOptions {
        render: args.render.into(),
        output: args.output,
        allow_missing_refs: args.allow_missing_refs,
    };
    block_on(&ctx, crate::ops::check::run(&ctx, options, out))
}

pub(super) const CHECK_LONG_ABOUT: &str = "\
Will this job run here? Takes the same inputs as `submit` (flags, values, -f manifest), writes \
nothing, and reports layer by layer: the readiness checks `submit` runs (CRD, operator, \
namespace, access, Secrets), then a model of kube-scheduler's filters and of quota/LimitRange \
admission applied to every pod the training-operator would create, placed all together.

Placement verdicts:
  fits     every replica can be bound now, all at once
  waits    they would all fit once pods already running finish (the holders are named)
  never    some replica fits on no node even when empty, the job as a whole cannot fit at once,
           or admission (ResourceQuota, LimitRange) would refuse a pod
  unknown  nodes or pods could not be listed (the missing permission is named); not an error

Exit codes of check:
  0    fits, waits (with a warning), or unknown (with a warning); also never when the
       cluster-autoscaler's status ConfigMap is present (nodes may be added)
  2    invalid input
  3    the cluster is not ready (the report lists why)
  4    never: the job can never run on this cluster as it is";

pub(super) const CHECK_EXAMPLES: &str = "\
Examples:
  # The article's job: 1 PS + 3 workers with one GPU each
  kubectl tfjob check --name tf-dist-train --image tensorflow/tensorflow:2.13.0-gpu \\
      --ps 1 --workers 3 --gpus 1 -- python -m trainer.task

  # A manifest, as JSON for scripts (placement.verdict: fits|waits|never|unknown)
  kubectl tfjob check -f tfjob.yaml -o json | jq -r .placement.verdict";
