//! `kubectl tfjob diagnose NAME`.

use clap::Args;

use super::{Global, block_on};
use crate::error::Result;
use crate::output::{Output, ReportFormat};

#[derive(Debug, Clone, Args)]
pub struct DiagnoseArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    /// Output format for the findings.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,

    /// Lines of the tensorflow container's log to show for crashing pods.
    #[arg(long, default_value_t = 20)]
    pub tail: i64,
}

pub fn exec(global: &Global, args: DiagnoseArgs, out: &mut Output) -> Result<()> {
    block_on(crate::diagnose::run(
        &global.connection(),
        &args.name,
        args.output,
        args.tail,
        out,
    ))
}

pub(super) const DIAGNOSE_EXAMPLES: &str = "\
Examples:
  kubectl tfjob diagnose tf-dist-train
  kubectl tfjob diagnose tf-dist-train -n team-a -o json";
