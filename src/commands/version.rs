//! `kubectl tfjob version`: kubectl answers `kubectl tfjob --version` itself, so the plugin's
//! version needs a verb, as `kubectl version` has one.

use clap::{Args, ValueEnum};

use super::block_on;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::version::VersionOptions;
use crate::output::{Output, ReportFormat};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VersionFormat {
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct VersionArgs {
    /// Only this binary's version; nothing is sent to a cluster.
    #[arg(long)]
    pub client: bool,

    /// Output format: json (clientVersion, serverVersion, trainingOperator).
    #[arg(short = 'o', long, value_name = "FORMAT")]
    pub output: Option<VersionFormat>,
}

pub fn exec(ctx: Context, args: VersionArgs, out: &mut Output) -> Result<()> {
    let opts = VersionOptions {
        client: args.client,
        format: match args.output {
            Some(VersionFormat::Json) => ReportFormat::Json,
            None => ReportFormat::Text,
        },
    };
    block_on(&ctx, crate::ops::version::run(&ctx, opts, out))
}

pub(super) const VERSION_EXAMPLES: &str = "\
Examples:
  # This plugin's version, the API server's and the training-operator's image
  kubectl tfjob version

  # Only the plugin's, without a cluster
  kubectl tfjob version --client";
