//! Logging setup. `-v` levels map onto tracing filters; `RUST_LOG` wins when set.
//!
//! Secrets must not reach the logs at any level: we never log Secret data or request bodies
//! ourselves, and the HTTP stack's own trace output is capped (see `init`).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::EnvFilter;

/// Whether `-v` was given: informational findings and notes are printed only then.
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// See [`VERBOSE`].
pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

pub fn init(verbose: u8) {
    VERBOSE.store(verbose > 0, Ordering::Relaxed);
    // Only this crate at the default level: kube's HTTP trace layer logs every 5xx as an ERROR,
    // even when our retry then succeeds; failures reach the user once, as the final error.
    let default = match verbose {
        0 => "kubectl_tfjob=warn",
        1 => "kubectl_tfjob=info",
        2 => "kubectl_tfjob=debug,kube=debug",
        _ => "kubectl_tfjob=trace,kube=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // Escapes only when stderr is a terminal and the user's variables allow them: the same
    // decision as every other stream (`-v 2>file` gets plain text).
    let ansi = crate::output::use_color(std::io::stderr().is_terminal());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(|| crate::output::redact::Redacting::new(std::io::stderr()))
        .with_target(true)
        .try_init();
}
