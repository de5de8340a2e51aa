//! `kubectl tfjob list` (alias `ls`): the jobs as a kubectl-style table, or json/yaml/name.

use clap::{Args, ValueEnum};

use super::{Global, block_on};
use crate::cluster;
use crate::error::Result;
use crate::ops::list::{ListFormat, ListOptions};
use crate::output::Output;

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListOutput {
    /// Adds the nodes and why a replica is stuck.
    Wide,
    /// A `List` of the objects as the API returned them.
    Json,
    /// A `List` of the objects as the API returned them.
    Yaml,
    /// `tfjob.kubeflow.org/NAME`, one per line.
    Name,
}

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Output format (default: a table).
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<ListOutput>,

    /// Jobs of every namespace (adds a NAMESPACE column).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// Label selector (e.g. team=nlp,env!=prod).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,

    /// After the list, print a line per change until interrupted.
    #[arg(short = 'w', long)]
    pub watch: bool,

    /// Leave out the header row.
    #[arg(long)]
    pub no_headers: bool,
}

pub fn exec(global: &Global, args: ListArgs, out: &mut Output) -> Result<()> {
    let opts = ListOptions {
        all_namespaces: args.all_namespaces,
        selector: args.selector,
        format: match args.output {
            None => ListFormat::Table,
            Some(ListOutput::Wide) => ListFormat::Wide,
            Some(ListOutput::Json) => ListFormat::Json,
            Some(ListOutput::Yaml) => ListFormat::Yaml,
            Some(ListOutput::Name) => ListFormat::Name,
        },
        no_headers: args.no_headers,
        watch: args.watch,
    };
    let conn = global.connection();
    let result = block_on(async {
        let kube = cluster::connect(&conn).await?;
        let (data, notes) = out.streams();
        crate::ops::list::list(&kube, &kube.namespace, &opts, data, notes).await
    });
    out.data_result(result)
}

pub(super) const LIST_EXAMPLES: &str = "\
Examples:
  # The jobs of the current namespace: state, age, duration, replicas running/desired, GPUs
  kubectl tfjob list

  # Every namespace, with nodes and why a replica is stuck
  kubectl tfjob list -A -o wide

  # Names only, for scripts; or a line per change
  kubectl tfjob list -o name
  kubectl tfjob list -w";
