//! The cluster-facing commands, clap-free: each takes plain options, a
//! [`crate::cluster::ConnectionOptions`] and an [`crate::output::Output`]. `diagnose` lives in
//! [`crate::diagnose`] beside its pure checks.

pub mod check;
pub mod secret;
pub mod submit;
pub mod wait;

/// `--dry-run`: what a command may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRun {
    /// Really write.
    #[default]
    None,
    /// Render and validate offline; nothing is sent.
    Client,
    /// Run every check and a server-side dry run; nothing is stored.
    Server,
}
