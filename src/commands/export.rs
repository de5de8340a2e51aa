//! `kubectl tfjob export --to jobset`: the job `render` takes, or a TFJob already in the
//! cluster (`export NAME`), as a kubernetes-sigs JobSet.

use clap::{Args, ValueEnum};

use super::block_on;
use super::render::RenderArgs;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::DryRun;
use crate::ops::export::{ExportFormat, ExportOptions};
use crate::output::Output;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TargetArg {
    /// jobset.x-k8s.io/v1alpha2 JobSet (kubernetes-sigs/jobset v0.12).
    Jobset,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Yaml,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// A TFJob in the cluster to export, as `kubectl get` names it (instead of rendering one
    /// from a template: the template flags do not go with it).
    #[arg(id = "job", value_name = "NAME")]
    pub job: Option<String>,

    /// What to export to.
    #[arg(long, value_enum, value_name = "KIND")]
    pub to: TargetArg,

    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    pub output: FormatArg,

    /// "server": also send the create as a server-side dry run (needs the JobSet CRD served).
    #[arg(long, value_enum, default_value = "none", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: DryRun,

    #[command(flatten)]
    pub render: RenderArgs,
}

pub fn exec(ctx: Context, args: ExportArgs, out: &mut Output) -> Result<()> {
    // One kind today: `--to` is required so scripts say what they get. The ops core knows no
    // other, so it takes no target.
    let TargetArg::Jobset = args.to;
    let render: crate::pipeline::render::RenderOptions = args.render.into();
    if let Some(name) = &args.job {
        let mut given = crate::pipeline::render::shaping_flags(&render);
        if !render.files.is_empty() {
            given.insert(0, "-f");
        }
        if render.template.is_some() {
            given.insert(0, "--template");
        }
        if let Some(flag) = given.first() {
            return Err(crate::error::Error::Usage(format!(
                "{flag} cannot be used with NAME ({name}): NAME exports the TFJob stored in the \
                 cluster as it is; leave out {flag}, or leave out NAME to render a new job"
            )));
        }
    }
    let options = ExportOptions {
        stored: args.job,
        render,
        format: match args.output {
            FormatArg::Yaml => ExportFormat::Yaml,
            FormatArg::Json => ExportFormat::Json,
        },
        server_dry_run: match args.dry_run {
            DryRun::Server => true,
            DryRun::None | DryRun::Client => false,
        },
    };
    block_on(&ctx, crate::ops::export::run(&ctx, options, out))
}

pub(super) const EXPORT_EXAMPLES: &str = "\
Examples:
  # The article's job as a JobSet, for a cluster with the JobSet controller and no training-operator
  kubectl tfjob export --to jobset --name tf-dist-train --image tensorflow/tensorflow:2.13.0-gpu \\
      --ps 1 --workers 3 --gpus 1 -- python -m trainer.task

  # An existing TFJob manifest, checked by the cluster without creating it
  kubectl tfjob export --to jobset -f tfjob.yaml --dry-run=server -o json";
