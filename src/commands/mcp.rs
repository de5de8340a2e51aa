//! `kubectl tfjob mcp`: the flags of the Model Context Protocol server. The server itself is
//! the adapter above `commands/` (src/mcp/), which runs these same commands per call.

use std::time::Duration;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    /// Serve only the tools that read: no submit, suspend, resume or delete.
    #[arg(long)]
    pub read_only: bool,

    /// The deadline of each tool call (a Go duration), as --timeout is a command's.
    #[arg(long, default_value = "60s", value_parser = super::parse_duration, value_name = "DURATION")]
    pub call_timeout: Duration,
}

pub(super) const MCP_EXAMPLES: &str = "\
Examples:
  # Serve the verbs to an MCP client over stdio (the client starts this command)
  kubectl tfjob mcp

  # Only the tools that read, in one namespace and kubeconfig context
  kubectl tfjob mcp --read-only -n team-a --context prod";
