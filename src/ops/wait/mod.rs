//! `wait`: follow a TFJob to a condition, show per-replica progress, and stop as soon as the
//! outcome is settled.
//!
//! - [`conditions`]: pure. Small job conditions in kube-runtime's `Condition` style, per-replica
//!   progress, and [`evaluate`], which says reached / failed / keep waiting given the clock.
//! - [`restarts`]: pure. What a container restart means (shown, not a failure) and when
//!   restarts are a crash loop or a pod has failed for good.
//! - [`state`]: pure data. The clock, the view, the limits and the waiter's memory that both
//!   of the above read and update (conditions calls restarts, never back).
//! - `follow`: the I/O loop. kube-runtime `watcher`s feed reflector stores (streaming lists
//!   where the server supports them, a paged list otherwise); periodic GETs take over when every
//!   watch fails; the operator's health is checked while nothing reconciles the job.
//! - `stuck`: while a reconciled job's pods stay missing or Pending, the operator's refused
//!   creates and the missing objects they mount, read with bounded requests.
//! - `progress`: the live line on a terminal, one line per change otherwise, or NDJSON.

pub mod conditions;
mod follow;
mod progress;
pub mod queue;
pub mod restarts;
pub mod state;

use std::time::Duration;

use crate::output::ReportFormat;

pub use conditions::{Counts, Outcome, Progress, evaluate, progress};
pub use follow::{follow, run};
pub use state::{Limits, Now, Restarted, Tracker, View};

/// What `wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitFor {
    /// The operator has seen the job (Created condition).
    Created,
    /// The operator's Running condition: the chief runs, or (without a chief) any one worker.
    /// Other replicas may still be Pending; see `operator-behavior.md` "When is Running set".
    Running,
    /// Every replica pod of every role runs with its containers started, for the settle window.
    #[default]
    AllRunning,
    /// The Succeeded condition.
    Succeeded,
    /// Succeeded (exit 0) or Failed (exit 4).
    Finished,
}

impl WaitFor {
    /// The `--for` value, for messages and resume hints.
    pub fn flag_value(self) -> &'static str {
        match self {
            WaitFor::Created => "created",
            WaitFor::Running => "running",
            WaitFor::AllRunning => "all-running",
            WaitFor::Succeeded => "succeeded",
            WaitFor::Finished => "finished",
        }
    }
}

/// How long and for what `wait` (and `submit --wait`) waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitOptions {
    pub wait_for: WaitFor,
    /// Overall limit; zero checks once.
    pub timeout: Duration,
    /// Give up when a pod has been unschedulable this long, or when nothing reconciles the job
    /// (operator not ready) this long, or (operator not seen) when the job has had no status
    /// this long since its creation. `None`: unschedulable pods wait for `timeout`, an
    /// unreconciled job with a broken operator fails at once, one with an unseen operator after
    /// [`RECONCILE_GRACE`](crate::cluster::operator::RECONCILE_GRACE).
    pub pending_timeout: Option<Duration>,
    /// How long image pull errors may persist before they count as fatal.
    pub image_pull_grace: Duration,
    /// `all-running` holds only after every replica has run this long without a restart.
    pub settle: Duration,
    /// Restarts of one container during the wait that end it as a crash loop (exit 4);
    /// `runPolicy.backoffLimit` takes its place when the job sets one.
    pub max_restarts: u32,
}

impl WaitOptions {
    /// The command's deadline `--timeout` sets: none for 0 (check once, each request bounded
    /// by the retry policy).
    pub fn deadline(&self) -> crate::cluster::budget::Deadline {
        if self.timeout.is_zero() {
            crate::cluster::budget::Deadline::none()
        } else {
            crate::cluster::budget::Deadline::after(self.timeout, "--timeout")
        }
    }
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            wait_for: WaitFor::default(),
            timeout: Duration::from_secs(600),
            pending_timeout: None,
            image_pull_grace: Duration::from_secs(60),
            settle: DEFAULT_SETTLE,
            max_restarts: DEFAULT_MAX_RESTARTS,
        }
    }
}

/// `kubectl tfjob wait NAME`'s options: the job, how long and for what, and how to report.
#[derive(Debug, Clone, Default)]
pub struct WaitJobOptions {
    /// As given on the command line (`NAME`, `tfjob/NAME`, …).
    pub name: String,
    pub wait: WaitOptions,
    /// Text (live progress on a terminal, a line per change otherwise) or NDJSON.
    pub format: ReportFormat,
}

/// The default `--max-restarts`: one restart is routine (a worker that starts before its PS),
/// three in one wait is a loop.
pub const DEFAULT_MAX_RESTARTS: u32 = 3;

/// The default `--settle`: long enough to see a container that dies right after it starts
/// (bad flags, import errors), short enough not to slow a healthy submit down.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(5);
