//! The runtime and interrupt glue of the cluster commands: one tokio runtime per command, and
//! the one Ctrl-C/SIGTERM/SIGHUP listener, installed before the first request.

use crate::error::{Error, Result};
use crate::ops::Context;

/// Runs a cluster command's async core. Offline commands never start a runtime, which keeps
/// `render`/`validate` fast.
///
/// Ctrl-C is caught from the first instant: tokio installs a signal handler only when a listener
/// is first polled, so a command listening for it later would otherwise be killed by a Ctrl-C
/// that comes before (no exit code, no message). This is the only listener: a command says what
/// an interrupt means with [`crate::error::on_interrupt`] (`wait` says how to resume, a write what
/// to check); otherwise the command ends with exit 130, saying what it was doing and that
/// nothing was written.
///
/// The command's deadline ([`Context::deadline`]) guards the whole future: whatever it awaits,
/// it ends within a moment of `--timeout` with exit 5, naming the phase it was in.
pub fn block_on<F: std::future::Future<Output = Result<()>>>(
    ctx: &Context,
    future: F,
) -> Result<()> {
    new_runtime()?.block_on(async {
        let listener = interrupt_listener()?;
        // The listener runs on the runtime's workers, so an interrupt is recorded even while
        // the command's own future is busy without yielding (a printer): that work polls
        // `interrupt_requested` and stops; this future then ends the command.
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let signal = listener.await;
            crate::error::request_interrupt();
            let _ = tx.send(signal);
        });
        // Unconstrained: a command future that always has work (a log that never ends) spends
        // the task's whole cooperative budget each poll, and a budgeted channel polled after it
        // would never see the signal (`logs -f` ran on after SIGTERM, two cores busy).
        let interrupted = tokio::task::unconstrained(async {
            match rx.await {
                Ok(signal) => signal,
                Err(_) => std::future::pending().await,
            }
        });
        tokio::select! {
            biased;
            result = ctx.deadline().bound(future) => result,
            // A caller's cancellation (the MCP client's) means what an interrupt means.
            _ = ctx.cancelled() => Err(crate::error::interrupted(&unsaid(
                "cancelled by the caller",
                &ctx.deadline().current_phase(),
            ))),
            signal = interrupted => Err(crate::error::interrupted(&unsaid(
                signal,
                &ctx.deadline().current_phase(),
            ))),
        }
    })
}

/// The runtime a command (or the MCP server) runs on: two workers, as the machines it is
/// built for have few cores and a command's work is mostly waiting on the API server.
pub fn new_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("starting the async runtime", e))
}

/// The interrupt's message when the command said nothing of it: every write says what an
/// interrupt means just before it is sent (`error::on_interrupt_write`), so a command that never
/// did wrote nothing. What it was doing is the deadline's phase, the words a timeout would use.
fn unsaid(signal: &str, doing: &str) -> String {
    if doing.is_empty() {
        format!("interrupted ({signal}); nothing was written")
    } else {
        format!("interrupted ({signal}) while {doing}; nothing was written")
    }
}

/// A future that completes on SIGINT, SIGTERM or SIGHUP (a closed terminal, `kill`, a CI
/// runner's cancel: each deserves the same account of what was done), with the handlers
/// installed now (not at the first poll). It yields the signal's name for the message.
fn interrupt_listener() -> Result<impl std::future::Future<Output = &'static str>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let install =
            |kind| signal(kind).map_err(|e| Error::io("installing the interrupt handlers", e));
        let mut sigint = install(SignalKind::interrupt())?;
        let mut sigterm = install(SignalKind::terminate())?;
        let mut sighup = install(SignalKind::hangup())?;
        Ok(async move {
            tokio::select! {
                _ = sigint.recv() => "Ctrl-C",
                _ = sigterm.recv() => "SIGTERM",
                _ = sighup.recv() => "SIGHUP",
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        })
    }
}
