//! `kubectl tfjob wait NAME`, and the wait flags `submit --wait` shares.

use std::time::Duration;

use clap::Args;

use super::{Global, block_on, parse_duration, parse_signed_duration};
use crate::error::Result;
use crate::ops::wait::{WaitFor, WaitOptions};
use crate::output::{Output, ReportFormat};

#[derive(Debug, Clone, Args)]
pub struct WaitOptionArgs {
    /// The condition to wait for.
    #[arg(long = "for", value_enum, default_value = "running")]
    pub wait_for: WaitFor,

    /// How long to wait (kubectl duration syntax: 30s, 10m, 1h). 0 checks once; negative waits a week.
    #[arg(long, default_value = "10m", value_parser = parse_signed_duration, allow_hyphen_values = true)]
    pub timeout: Duration,

    /// Give up when a pod has been unschedulable this long (default: wait for --timeout).
    #[arg(long, value_parser = parse_duration)]
    pub pending_timeout: Option<Duration>,

    /// How long image pull errors may persist before they count as fatal.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub image_pull_grace: Duration,
}

impl From<WaitOptionArgs> for WaitOptions {
    fn from(a: WaitOptionArgs) -> Self {
        WaitOptions {
            wait_for: a.wait_for,
            timeout: a.timeout,
            pending_timeout: a.pending_timeout,
            image_pull_grace: a.image_pull_grace,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct WaitArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    #[command(flatten)]
    pub opts: WaitOptionArgs,

    /// Output: text (live progress on a terminal, a line per change otherwise) or json (NDJSON).
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,
}

pub fn exec(global: &Global, args: WaitArgs, out: &mut Output) -> Result<()> {
    let opts = WaitOptions::from(args.opts);
    block_on(crate::ops::wait::run(
        &global.connection(),
        &args.name,
        &opts,
        args.output,
        out,
    ))
}

pub(super) const WAIT_EXAMPLES: &str = "\
Examples:
  # Wait until the operator reports Running (default timeout 10m)
  kubectl tfjob wait tf-dist-train

  # Wait until every replica pod runs, give up if a pod is unschedulable for 2 minutes
  kubectl tfjob wait tf-dist-train --for all-running --pending-timeout 2m

  # In CI: one JSON object per change
  kubectl tfjob wait tf-dist-train --for finished --timeout 2h -o json";
