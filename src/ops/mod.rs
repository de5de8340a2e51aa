//! The command cores, clap-free: one `run` per command, written below `commands/` (which turns
//! flags into the plain option types) and above the layers it calls (`diagnose`, `placement`,
//! `render`/`values`/`validate`, `print`, `cluster`).
//!
//! One signature, for every command whose core is here:
//!
//! ```text
//! pub [async] fn run(ctx: &Context, opts: <Cmd>Options, out: &mut Output) -> Result<()>
//! ```
//!
//! `ctx` is the one command context ([`Context`], `context.rs`): the connection flags, the client
//! (built once, on first use: an offline core never connects), the namespace resolved once, and
//! the command's one deadline (`--timeout`), which the client's retries and every phase spend
//! from. `opts` are the command's own flags as plain values, `out` the stdout/stderr pair (data
//! on stdout, the rest on stderr; a separate `&mut` so that `ctx` can be shared by the
//! concurrent phases of a command). Every cluster core has it: `submit`, `check`, `render`,
//! `diagnose`, `wait` (`wait_many::run`; the one-job `wait::run` beneath it), `secret`
//! (`create` or `check`), and the day-two cores `list`, `get`, `logs`, `top`, `delete`,
//! `suspend`; `validate`, offline and reading no flag of the context, takes only `opts` and
//! `out`. The verbs that act on named jobs (`get`, `logs`, `delete`, `diagnose`) also take the
//! parsed `cluster::Target`s and branch once on them (a TFJob, or a JobSet the plugin made,
//! whose facts are [`target`]'s). A day-two `run` hands the client, the namespace and the two streams to the step beside
//! it (`list::list`, `get::get`, …) through [`Context::with_streams`]; the in-process tests call
//! those steps with a client of their own, and `submit --wait` calls `wait::follow` the same way.
//!
//! Shared steps sit beside the commands: the pre-flight service [`preflight`] (the gate `submit`
//! runs, `check`'s report, what `wait` asks of Unschedulable pods), the readiness checks
//! [`readiness`] and pod dry runs; the pure views of the day-two commands are in
//! [`crate::print::jobview`].

pub mod check;
pub mod context;
pub mod delete;
pub mod diagnose;
pub mod evidence;
pub mod export;
pub mod get;
pub mod list;
pub mod logs;
pub mod pod_dry_run;
pub mod preflight;
pub mod probe;
pub mod progress;
pub mod queue;
pub mod queue_suspend;
pub mod readiness;
pub mod render;
pub mod restart;
pub mod secret;
pub mod submit;
pub mod suspend;
pub mod top;
pub mod validate;
pub mod version;
pub mod wait;
pub mod wait_many;
pub mod workload;

pub use context::Context;

/// Several named jobs, several failures (`get a b`, `list a b`): each but the last on `notes`
/// as `error: …`, as kubectl prints them, and the last as the command's error and exit code.
pub(crate) fn end_with_errors(
    mut errors: Vec<crate::error::Error>,
    notes: &mut dyn std::io::Write,
) -> crate::error::Result<()> {
    let last = errors.pop();
    for e in &errors {
        writeln!(notes, "error: {e}")
            .map_err(|e| crate::error::Error::io("writing the errors", e))?;
    }
    last.map_or(Ok(()), Err)
}

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
