//! The command cores, clap-free: one `run` per command, written below `commands/` (which turns
//! flags into the plain option types) and above the layers it calls (`diagnose`, `placement`,
//! `render`/`values`/`validate`, `print`, `cluster`).
//!
//! One signature, for every command whose core is here:
//!
//! ```text
//! pub [async] fn run(conn: &ConnectionOptions, opts: <Cmd>Options, out: &mut Output) -> Result<()>
//! ```
//!
//! `conn` is the connection flags (a cluster command connects with them; an offline one,
//! `render` and `validate`, reads at most the namespace), `opts` the command's own flags as plain
//! values, `out` the stdout/stderr pair (data on stdout, the rest on stderr). Every core has it:
//! `submit`, `check`, `render`, `validate`, `diagnose`, `wait` (`wait_many::run`; the one-job
//! `wait::run` beneath it), `secret` (`create` or `check`), and the day-two cores `list`, `get`,
//! `logs`, `top`, `delete`, `suspend`. A day-two `run` connects and hands the client and the two
//! streams to the step beside it (`list::list`, `get::get`, …), which the in-process tests call
//! with a client of their own; `submit --wait` calls `wait::follow` the same way.
//!
//! Shared steps sit beside the commands: the pre-flight service [`preflight`] (the gate `submit`
//! runs, `check`'s report, what `wait` asks of Unschedulable pods), the readiness checks
//! [`readiness`] and pod dry runs; the pure views of the day-two commands are in
//! [`crate::jobview`].

pub mod check;
pub mod delete;
pub mod diagnose;
pub mod export;
pub mod get;
pub mod jobset_day2;
pub mod jobset_diagnose;
pub mod jobset_submit;
pub mod list;
pub mod logs;
pub mod pod_dry_run;
pub mod preflight;
pub mod probe;
pub mod queue;
pub mod queue_suspend;
pub mod readiness;
pub mod render;
pub mod secret;
pub mod submit;
pub mod suspend;
pub mod top;
pub mod validate;
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
