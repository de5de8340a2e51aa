//! `kubectl tfjob validate`.

use clap::Args;

use super::render::GatewayArgs;
use crate::error::Result;
use crate::output::{Output, ReportFormat};
use crate::pipeline::validate::ValidateOptions;

#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Manifest file(s) to validate; "-" reads stdin. Multi-document YAML is fine.
    #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
    pub files: Vec<String>,

    /// Output format for the findings.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,

    /// Treat warnings (lint and policy: literal credentials, duplicate keys, …) as errors.
    /// Without it, exit 2 means the cluster would reject the job.
    #[arg(long)]
    pub strict: bool,

    #[command(flatten)]
    pub gateway: GatewayArgs,
}

pub fn exec(args: ValidateArgs, out: &mut Output) -> Result<()> {
    let options = ValidateOptions {
        files: args.files,
        output: args.output,
        strict: args.strict,
        gateway: args.gateway.into(),
    };
    crate::ops::validate::run(options, out)
}

pub(super) const VALIDATE_EXAMPLES: &str = "\
Examples:
  # Validate a manifest
  kubectl tfjob validate -f tfjob.yaml

  # Several documents from stdin, findings as JSON
  cat jobs.yaml | kubectl tfjob validate -f - -o json";
