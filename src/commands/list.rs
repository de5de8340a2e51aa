//! `kubectl tfjob list` (alias `ls`): the jobs as a kubectl-style table, or json/yaml/name.

use clap::Args;

use super::block_on;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::list::ListOptions;
use crate::output::Output;
use crate::print::{self, TableFlags};

// (A plain comment, not a doc comment: a flattened struct's doc would become the `about` of
// every subcommand that flattens it, once clap runs the deferred arguments; see commands::Command.)
// `-o`, `--sort-by`, `--show-labels`, `-L`, `--no-headers`: kubectl get's printing flags, shared by
// `list` and `get`.
#[derive(Debug, Clone, Default, Args)]
pub struct PrintArgs {
    /// Output format: json|yaml|name|wide|jsonpath=…|jsonpath-file=…|jsonpath-as-json=…|
    /// custom-columns=…|custom-columns-file=…|go-template=…|go-template-file=… (as kubectl get).
    #[arg(short = 'o', long, value_name = "FORMAT", value_parser = FormatParser::tables(), hide_possible_values = true)]
    pub output: Option<String>,

    /// Sort by a JSONPath expression (e.g. '{.metadata.creationTimestamp}'), as kubectl get.
    #[arg(long, value_name = "JSONPATH")]
    pub sort_by: Option<String>,

    /// Add a LABELS column with every label.
    #[arg(long)]
    pub show_labels: bool,

    /// Add a column per label key (repeatable, or comma-separated).
    #[arg(short = 'L', long = "label-columns", value_name = "KEY")]
    pub label_columns: Vec<String>,

    /// Leave out the header row.
    #[arg(long)]
    pub no_headers: bool,
}

/// Any `-o` string (it is parsed by `print::parse_format`, with kubectl's error), offering the
/// format names to completion.
#[derive(Debug, Clone, Copy)]
pub(super) struct FormatParser {
    /// Offer `wide` (commands that print tables).
    wide: bool,
}

impl FormatParser {
    pub(super) fn tables() -> Self {
        FormatParser { wide: true }
    }

    /// For a command that prints one object it made (`submit`).
    pub(super) fn object() -> Self {
        FormatParser { wide: false }
    }
}

impl clap::builder::TypedValueParser for FormatParser {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<String, clap::Error> {
        Ok(value.to_string_lossy().into_owned())
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            [
                "wide",
                "json",
                "yaml",
                "name",
                "jsonpath=",
                "jsonpath-file=",
                "jsonpath-as-json=",
                "custom-columns=",
                "custom-columns-file=",
                "go-template=",
                "go-template-file=",
            ]
            .into_iter()
            .filter(|f| self.wide || *f != "wide")
            .map(clap::builder::PossibleValue::new),
        ))
    }
}

impl PrintArgs {
    pub fn format(&self) -> Result<print::Format> {
        print::parse_format(self.output.as_deref())
    }

    pub fn table(&self) -> TableFlags {
        TableFlags {
            no_headers: self.no_headers,
            show_labels: self.show_labels,
            label_columns: print::label_columns(&self.label_columns),
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Only these jobs (NAME or tfjob/NAME), as `kubectl get tfjobs NAME…` lists them.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,

    #[command(flatten)]
    pub print: PrintArgs,

    /// Jobs of every namespace (adds a NAMESPACE column).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// Label selector (e.g. team=nlp,env!=prod).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,

    /// After the list, print a line per change until interrupted.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

pub fn exec(ctx: Context, args: ListArgs, out: &mut Output) -> Result<()> {
    if args.all_namespaces && !args.names.is_empty() {
        // kubectl's words for `get -A NAME`.
        return Err(crate::error::Error::Usage(
            "a resource cannot be retrieved by name across all namespaces: drop -A, or give -n NAMESPACE".into(),
        ));
    }
    let names = args
        .names
        .iter()
        .map(|n| crate::cluster::parse_job_name(n, "list").map(str::to_string))
        .collect::<Result<Vec<_>>>()?;
    let opts = ListOptions {
        names,
        all_namespaces: args.all_namespaces,
        selector: args.selector,
        format: args.print.format()?,
        table: args.print.table(),
        sort_by: args.print.sort_by.clone(),
        watch: args.watch,
    };
    block_on(&ctx, crate::ops::list::run(&ctx, opts, out))
}

pub(super) const LIST_EXAMPLES: &str = "\
Examples:
  # The jobs of the current namespace: state, age, duration, replicas running/desired, GPUs
  kubectl tfjob list

  # Every namespace, with nodes and why a replica is stuck
  kubectl tfjob list -A -o wide

  # Names only, for scripts; or a line per change
  kubectl tfjob list -o name
  kubectl tfjob list -w

  # kubectl's printers: JSONPath, custom columns, Go templates, sorting and labels
  kubectl tfjob list -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.status.conditions[-1:].type}{\"\\n\"}{end}'
  kubectl tfjob list -o custom-columns=NAME:.metadata.name,WORKERS:.spec.tfReplicaSpecs.Worker.replicas
  kubectl tfjob list --sort-by=.metadata.creationTimestamp --show-labels -L team";
