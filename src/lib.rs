//! kubectl-tfjob as a library: one module per concern, pure logic kept apart from I/O.
//!
//! Imports run one way, down this line (issue 21; `tests/architecture.rs` enforces it):
//!
//! ```text
//! main → mcp → commands → ops → {diagnose, placement, pipeline, print} → {cluster, gateway}
//!      → operator_pods → {model, input, output, error}
//! ```
//!
//! The map of the modules, what each holds and why it sits where it does, is told once, in
//! ARCHITECTURE.md at the repository's root; each module's own `//!` doc goes further.

pub mod cluster;
pub mod commands;
pub mod diagnose;
pub mod error;
pub mod gateway;
pub mod input;
pub mod mcp;
pub mod model;
pub mod operator_pods;
pub mod ops;
pub mod output;
pub mod pipeline;
pub mod placement;
pub mod print;

use commands::{Cli, Command};
use output::Output;

use error::Error;

/// Runs one parsed command line: `mcp` serves the other commands to an MCP client
/// ([`mcp::serve`]); every other command runs through [`commands::exec`].
pub fn run(cli: Cli, out: &mut Output) -> Result<(), Error> {
    match cli.command {
        Command::Mcp(args) => mcp::serve(cli.global, args),
        _ => commands::exec(cli, out),
    }
}

pub use commands::report_error;
