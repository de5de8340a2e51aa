//! `kubectl tfjob top [NAME]`: per job and replica, node, GPUs and their use, CPU/memory
//! requested, limited and used (metrics.k8s.io when served), and training progress.

use clap::{Args, ValueEnum};

use super::block_on;
use crate::cluster::parse_job_name;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::top::TopOptions;
use crate::output::Output;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TopFormat {
    Json,
    /// The table with GPU memory and the CPU and memory requests and limits.
    Wide,
}

#[derive(Debug, Clone, Args)]
pub struct TopArgs {
    /// TFJob name (or tfjob/NAME); every job when left out.
    pub name: Option<String>,

    /// Jobs of every namespace (adds a NAMESPACE column).
    #[arg(short = 'A', long, conflicts_with = "name")]
    pub all_namespaces: bool,

    /// Label selector on the TFJobs (e.g. team=nlp).
    #[arg(short = 'l', long, value_name = "SELECTOR", conflicts_with = "name")]
    pub selector: Option<String>,

    /// Output format: wide (GPU memory, requests and limits too), or json (millicores and
    /// bytes; usage null where there is no sample).
    #[arg(short = 'o', long, value_name = "FORMAT")]
    pub output: Option<TopFormat>,

    /// Leave out the header row.
    #[arg(long)]
    pub no_headers: bool,

    /// The Prometheus that scrapes NVIDIA's DCGM exporter, read through the API server's
    /// service proxy, instead of the one found by its labels (operated-prometheus=true,
    /// app.kubernetes.io/name=prometheus). Without one, GPU use is read by nvidia-smi in the pods.
    #[arg(long, value_name = "NAMESPACE/SERVICE[:PORT]", value_parser = parse_prometheus)]
    pub prometheus: Option<crate::cluster::prometheus::PromService>,

    /// How a progress line of your training code reads, when it is none of the shapes known
    /// (Keras, Estimator, `step N`): a regex with a named group `step`, as diagnose takes it.
    #[arg(long, value_name = "REGEX", value_parser = super::diagnose::parse_progress_pattern)]
    pub progress_pattern: Option<String>,
}

fn parse_prometheus(
    s: &str,
) -> std::result::Result<crate::cluster::prometheus::PromService, String> {
    crate::cluster::prometheus::PromService::parse(s)
}

pub fn exec(ctx: Context, args: TopArgs, out: &mut Output) -> Result<()> {
    let opts = TopOptions {
        name: args
            .name
            .as_deref()
            .map(|n| parse_job_name(n, "top").map(String::from))
            .transpose()?,
        all_namespaces: args.all_namespaces,
        selector: args.selector,
        json: matches!(args.output, Some(TopFormat::Json)),
        wide: matches!(args.output, Some(TopFormat::Wide)),
        no_headers: args.no_headers,
        prometheus: args.prometheus,
        // Checked by the parser already.
        progress_pattern: args
            .progress_pattern
            .as_deref()
            .and_then(|p| crate::diagnose::progress::pattern(p).ok()),
    };
    block_on(&ctx, crate::ops::top::run(&ctx, opts, out))
}

pub(super) const TOP_EXAMPLES: &str = "\
Examples:
  # Every job of the namespace: a summed row (REPLICA *) then one row per replica
  kubectl tfjob top

  # One job; or every namespace's jobs with a label
  kubectl tfjob top tf-dist-train
  kubectl tfjob top -A -l team=nlp

  # GPU use from a Prometheus that scrapes the DCGM exporter, named rather than found
  kubectl tfjob top tf-dist-train --prometheus monitoring/prometheus-operated:9090

  # GPU memory, and the CPU and memory requests and limits beside the use
  kubectl tfjob top tf-dist-train -o wide

  # Millicores and bytes for scripts
  kubectl tfjob top tf-dist-train -o json";
