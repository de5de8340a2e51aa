//! `kubectl tfjob templates [list|show NAME]`.

use clap::{Args, Subcommand};

use crate::error::Result;
use crate::output::Output;
use crate::pipeline::templates::TemplatesAction;

pub(super) const TEMPLATES_EXAMPLES: &str = "\
Examples:
  # The built-in templates, then one's source (start a values file from it)
  kubectl tfjob templates
  kubectl tfjob templates show ps-worker";

#[derive(Debug, Clone, Args)]
#[command(after_help = TEMPLATES_EXAMPLES)]
pub struct TemplatesArgs {
    #[command(subcommand)]
    pub action: Option<TemplatesCommand>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TemplatesCommand {
    /// List the built-in templates (the default).
    #[command(after_help = TEMPLATES_EXAMPLES)]
    List,
    /// Print a built-in template's source.
    #[command(after_help = TEMPLATES_EXAMPLES)]
    Show {
        /// Template name.
        name: String,
    },
}

pub fn exec(args: TemplatesArgs, out: &mut Output) -> Result<()> {
    let action = args.action.map(|a| match a {
        TemplatesCommand::List => TemplatesAction::List,
        TemplatesCommand::Show { name } => TemplatesAction::Show { name },
    });
    crate::pipeline::templates::run_templates(action.as_ref(), out)
}
