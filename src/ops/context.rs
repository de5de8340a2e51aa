//! The one command context ([`Context`]): what every core takes besides its own options and the
//! output streams. Built by `commands/` from the global flags before any I/O, once per command:
//!
//! - the connection flags as plain options ([`ConnectionOptions`]; a bad `-n` is exit 2 when
//!   the client is built, before any request);
//! - the client, built once and only when a core first asks for it ([`Context::kube`]), so the
//!   offline commands (`render`, `validate`, `templates`, `submit --dry-run=client`) never
//!   connect;
//! - the namespace, resolved once with the client (`-n`, else the context's, else `default`;
//!   [`Context::namespace`]);
//! - the deadline ([`Deadline`], `--timeout`): carried by the client, so the retry policy never
//!   sleeps past it, and guarding the whole command ([`Deadline::bound`], in
//!   `commands::block_on`).
//!
//! - the caller's cancellation ([`Context::with_cancel`]): an MCP client's
//!   `notifications/cancelled` ends the call's command as Ctrl-C ends a command line's.
//!
//! Stern's one `ctx` per command and cargo's `GlobalContext` are the model: one value that the
//! command's phases share, instead of each rebuilding it from the flags.

use std::io::Write;

use crate::cluster::budget::Deadline;
use crate::cluster::{self, ConnectionOptions, Kube};
use crate::error::Result;
use crate::output::Output;

/// See the module docs.
pub struct Context {
    conn: ConnectionOptions,
    kube: tokio::sync::OnceCell<Kube>,
    deadline: Deadline,
    cancel: Option<tokio_util::sync::CancellationToken>,
}

/// What a caller other than the command line (the MCP adapter) sets for one command: its
/// deadline and its cancellation. Carried by the global flags, so every verb gets it the same way.
#[derive(Debug, Clone)]
pub struct Call {
    /// The call's deadline, unless the verb's own `--timeout` sets it.
    pub timeout: std::time::Duration,
    pub cancel: tokio_util::sync::CancellationToken,
}

impl Context {
    /// The context of a command run with `conn`; no I/O (the client is built on first use).
    pub fn new(conn: ConnectionOptions) -> Self {
        Context {
            conn,
            kube: tokio::sync::OnceCell::new(),
            deadline: Deadline::none(),
            cancel: None,
        }
    }

    /// The same context ended early when `cancel` fires ([`Context::cancelled`]).
    pub fn with_cancel(mut self, cancel: tokio_util::sync::CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Completes when the caller cancelled the command; never without a caller's token.
    pub async fn cancelled(&self) {
        match &self.cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// The same context bounded by `deadline` (set before the client is built).
    pub fn with_deadline(mut self, deadline: Deadline) -> Self {
        if let Some(kube) = self.kube.get_mut() {
            kube.deadline = deadline.clone();
        }
        self.deadline = deadline;
        self
    }

    /// The connection flags, as given (offline commands read at most `-n` from them).
    pub fn conn(&self) -> &ConnectionOptions {
        &self.conn
    }

    pub fn deadline(&self) -> &Deadline {
        &self.deadline
    }

    /// The client, connected on first use with the command's deadline, then shared.
    pub async fn kube(&self) -> Result<&Kube> {
        self.kube
            .get_or_try_init(|| async {
                let mut kube = cluster::connect(&self.conn).await?;
                kube.deadline = self.deadline.clone();
                Ok(kube)
            })
            .await
    }

    /// The namespace, resolved once as kubectl does: `-n`, else the kubeconfig context's,
    /// else `default`.
    pub async fn namespace(&self) -> Result<&str> {
        Ok(&self.kube().await?.namespace)
    }

    /// Runs a day-two step (`list::list`, `get::get`, …) with the client, the namespace and
    /// the two streams (data, notes). A failure after stdout was closed is reported as the
    /// closed pipe it is ([`Output::data_result`]).
    pub async fn with_streams<T>(
        &self,
        out: &mut Output,
        step: impl AsyncFnOnce(&Kube, &str, &mut dyn Write, &mut dyn Write) -> Result<T>,
    ) -> Result<()> {
        let result = async {
            let kube = self.kube().await?;
            let (data, notes) = out.streams();
            step(kube, &kube.namespace, data, notes).await.map(|_| ())
        }
        .await;
        out.data_result(result)
    }
}
