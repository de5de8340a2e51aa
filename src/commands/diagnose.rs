//! `kubectl tfjob diagnose NAME`.

use clap::Args;

use std::time::Duration;

use super::{block_on, parse_duration};
use crate::cluster::Target;
use crate::cluster::budget::Deadline;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::diagnose::DiagnoseFormat;
use crate::ops::diagnose::DiagnoseOptions;
use crate::output::Output;

#[derive(Debug, Clone, Args)]
pub struct DiagnoseArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    /// Output format for the findings.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: DiagnoseFormat,

    /// Lines of the tensorflow container's log to show for crashing pods.
    #[arg(long, default_value_t = 20)]
    pub tail: i64,

    /// Bound on the whole command (kubectl duration syntax: 30s, 2m). Log excerpts are read
    /// within 2 seconds of it, once each; what is not read by then is said as not read.
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Restarts of one container that make a crash loop: a failure even while the container
    /// runs between two back-offs (the verdict does not change with the back-off timer).
    #[arg(long, default_value_t = crate::diagnose::DEFAULT_MAX_RESTARTS)]
    pub max_restarts: u32,

    /// The in-pod layer, on by default once every replica runs: exec into each and check what
    /// the training process sees (TF_CONFIG, its peers, the gateway), as `kubectl tfjob probe JOB` does.
    /// Given, the row is shown even when a replica does not run (saying which).
    #[arg(long, overrides_with = "no_probe")]
    pub probe: bool,

    /// Skip the in-pod layer (no exec into the pods; the verdict then says it was not checked).
    #[arg(long, overrides_with = "probe")]
    pub no_probe: bool,

    /// How a progress line of your training code reads, when it is none of the shapes known
    /// (Keras, Estimator, `step N`): a regex with a named group `step`, and optionally `total`,
    /// `epoch` and `loss`, e.g. 'it=(?P<step>\d+) of (?P<total>\d+)'.
    #[arg(long, value_name = "REGEX", value_parser = parse_progress_pattern)]
    pub progress_pattern: Option<String>,

    /// Keep the evidence after the report, as `wait --save` does: DIR/<job>-<UTC time>/ with
    /// each pod's current and previous logs, the job, its pods and events, and summary.txt.
    #[arg(long, value_name = "DIR")]
    pub save: Option<std::path::PathBuf>,

    /// With --save: the bytes kept of each log, its end (a quantity: 10Mi, 512Ki).
    #[arg(long, value_name = "BYTES", default_value = "10Mi", value_parser = super::wait::parse_save_limit, requires = "save")]
    pub save_limit: u64,
}

/// `--progress-pattern`: a regex that names the step it reads (diagnose::progress::pattern).
pub fn parse_progress_pattern(s: &str) -> std::result::Result<String, String> {
    crate::diagnose::progress::pattern(s).map(|_| s.to_string())
}

pub fn exec(ctx: Context, args: DiagnoseArgs, out: &mut Output) -> Result<()> {
    let ctx = ctx.with_deadline(Deadline::after(args.timeout, "--timeout"));
    let target = Target::parse(&args.name, "diagnose")?;
    crate::ops::workload::tfjob_only(
        &target,
        "--probe",
        args.probe,
        &format!("run `kubectl tfjob probe jobset/{}`", target.name()),
    )?;
    crate::ops::workload::tfjob_only(&target, "--save", args.save.is_some(), "")?;
    let opts = DiagnoseOptions {
        format: args.output,
        tail: args.tail,
        max_restarts: args.max_restarts,
        in_pod: match (args.probe, args.no_probe) {
            (true, _) => crate::ops::diagnose::InPod::Always,
            (_, true) => crate::ops::diagnose::InPod::Never,
            _ => crate::ops::diagnose::InPod::Auto,
        },
        progress_pattern: args.progress_pattern,
        save: args.save.map(|dir| crate::ops::evidence::SaveOptions {
            dir,
            limit: args.save_limit,
        }),
    };
    // The folder is checked before any request (exit 2 naming it), as wait and logs do.
    if let Some(save) = &opts.save {
        crate::ops::evidence::check_dir(save)?;
    }
    block_on(&ctx, crate::ops::diagnose::run(&ctx, &target, opts, out))
}

pub(super) const DIAGNOSE_EXAMPLES: &str = "\
Examples:
  kubectl tfjob diagnose tf-dist-train
  kubectl tfjob diagnose tf-dist-train -n team-a -o json
  kubectl tfjob diagnose tf-dist-train --timeout 10s
  kubectl tfjob diagnose tf-dist-train --no-probe  # without exec'ing into the pods";
