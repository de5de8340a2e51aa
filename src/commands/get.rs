//! `kubectl tfjob get NAME` (alias `status`): one job in full, or as the API returned it.

use clap::{Args, ValueEnum};

use super::{Global, block_on};
use crate::cluster::{self, parse_job_name};
use crate::error::Result;
use crate::ops::get::{GetFormat, GetOptions};
use crate::output::Output;

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GetOutput {
    /// The TFJob as the API returned it.
    Json,
    /// The TFJob as the API returned it.
    Yaml,
}

#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    /// Output format (default: conditions, replicas, services, events, gateway env, TF_CONFIG).
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<GetOutput>,
}

pub fn exec(global: &Global, args: GetArgs, out: &mut Output) -> Result<()> {
    let mut opts = GetOptions::new(parse_job_name(&args.name, "get")?);
    opts.format = match args.output {
        None => GetFormat::Describe,
        Some(GetOutput::Json) => GetFormat::Json,
        Some(GetOutput::Yaml) => GetFormat::Yaml,
    };
    let conn = global.connection();
    let result = block_on(async {
        let kube = cluster::connect(&conn).await?;
        let (data, notes) = out.streams();
        crate::ops::get::get(&kube, &kube.namespace, &opts, data, notes).await
    });
    out.data_result(result)
}

pub(super) const GET_EXAMPLES: &str = "\
Examples:
  # Conditions, replica pods, services, recent events, the gateway Secret each role reads
  kubectl tfjob get tf-dist-train

  # The TFJob as the API server returns it
  kubectl tfjob get tf-dist-train -o yaml";
