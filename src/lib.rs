//! kubectl-tfjob as a library: one module per concern, pure logic kept apart from I/O.
//!
//! Imports run one way, down this line (issue 21; `tests/architecture.rs` enforces it):
//!
//! ```text
//! main → commands → ops → {diagnose, placement, pipeline, print} → {cluster, gateway}
//!      → operator_pods → {model, names, quantity, duration, output, error}
//! ```
//!
//! The map of the modules, what each holds and why it sits where it does, is told once, in
//! ARCHITECTURE.md at the repository's root; each module's own `//!` doc goes further.

pub mod cluster;
pub mod commands;
pub mod diagnose;
pub mod duration;
pub mod error;
pub mod gateway;
pub mod input;
pub mod logging;
pub mod model;
pub mod names;
pub mod operator_pods;
pub mod ops;
pub mod output;
pub mod pipeline;
pub mod placement;
pub mod print;
pub mod quantity;
pub mod redact;

use std::io::Write;

use error::{Error, ExitCode};

/// Prints an error the way kubectl does (`error: …`) plus the next step, and returns its exit
/// code. A closed stdout ends quietly.
pub fn report_error(err: &Error, stderr: &mut dyn Write) -> ExitCode {
    if !err.is_quiet() {
        // Nothing sensible is left to do if stderr is gone too.
        // The message may carry the cluster's words (a log line, an event): escaped for the
        // terminal here, the one place every error is printed.
        let _ = writeln!(
            stderr,
            "error: {}",
            crate::print::terminal::escape(&err.to_string())
        );
        if let Some(hint) = err.hint() {
            let _ = writeln!(stderr, "\n{}", crate::print::terminal::escape(hint));
        }
    }
    err.exit_code()
}
