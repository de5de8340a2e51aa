//! The cluster-facing commands, clap-free: each takes plain options and a client or
//! [`crate::cluster::ConnectionOptions`], and writes through an [`crate::output::Output`] or the
//! two streams it is given (stdout for data, stderr for progress). `diagnose` lives in
//! [`crate::diagnose`] beside its pure checks. Pure views of the day-two commands are in
//! [`crate::jobview`].

pub mod check;
pub mod delete;
pub mod gang;
pub mod get;
pub mod list;
pub mod logs;
pub mod missing;
pub mod pod_dry_run;
pub mod podtable;
pub mod queue;
pub mod queue_suspend;
pub mod readiness;
pub mod secret;
pub mod submit;
pub mod suspend;
pub mod top;
pub mod wait;
pub mod wait_many;

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
