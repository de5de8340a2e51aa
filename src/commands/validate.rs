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

    /// "server": also ask the cluster, each valid job as `kubectl create --dry-run=server -f`
    /// sends it (the CRD's schema, the operator's webhook, admission), then the pods the
    /// operator would create from it. Stores nothing; a refusal is exit 2 too. ("client", the
    /// default, is offline.)
    #[arg(long, value_enum, default_value = "none", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: crate::ops::DryRun,

    #[command(flatten)]
    pub gateway: GatewayArgs,
}

pub fn exec(ctx: crate::ops::Context, args: ValidateArgs, out: &mut Output) -> Result<()> {
    let options = ValidateOptions {
        files: args.files,
        output: args.output,
        strict: args.strict,
        gateway: args.gateway.into(),
        server: args.dry_run == crate::ops::DryRun::Server,
    };
    if options.server {
        return super::block_on(&ctx, crate::ops::validate::run_server(&ctx, options, out));
    }
    crate::ops::validate::run(options, out)
}

pub(super) const VALIDATE_EXAMPLES: &str = "\
Examples:
  # Validate a manifest
  kubectl tfjob validate -f tfjob.yaml

  # Several documents from stdin, findings as JSON
  cat jobs.yaml | kubectl tfjob validate -f - -o json";
