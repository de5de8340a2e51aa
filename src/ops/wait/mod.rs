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
//! - `training`: before saying every replica runs, one cheap look at their last log lines.
//! - `report`: the closing report, and before "condition met" the in-pod checks of `probe` in
//!   one replica of each role (the judgement is `diagnose::inpod::at_start`).

pub mod conditions;
mod follow;
pub use follow::{is_namespace_gone, namespace_gone_message};
mod progress;
pub mod queue;
pub mod restarts;
pub mod state;
mod training;

use std::time::Duration;

use crate::output::ReportFormat;

pub use conditions::{Counts, JobState, Outcome, evaluate, progress};
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
    /// Every replica runs (as `AllRunning`) and every worker, chief or master looked at has
    /// logged a progress line (a step, an epoch, a loss): the job trains.
    Training,
    /// The Succeeded condition.
    Succeeded,
    /// Succeeded (exit 0) or Failed (exit 4).
    Finished,
    /// The TFJob is gone (kubectl's `--for=delete`); followed by `commands::wait` itself, not
    /// by the job follower.
    Deleted,
}

impl WaitFor {
    /// Every replica must run, settled (`all-running`, and `training` on top of it).
    pub fn needs_every_replica(self) -> bool {
        matches!(self, WaitFor::AllRunning | WaitFor::Training)
    }

    /// The `--for` value, for messages and resume hints.
    pub fn flag_value(self) -> &'static str {
        match self {
            WaitFor::Created => "created",
            WaitFor::Running => "running",
            WaitFor::AllRunning => "all-running",
            WaitFor::Training => "training",
            WaitFor::Succeeded => "succeeded",
            WaitFor::Finished => "finished",
            WaitFor::Deleted => "delete",
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
    /// The user said nodes may be added (`submit --skip-capacity-check --wait`): a job that does
    /// not fit on the current nodes waits for capacity (up to `pending_timeout`) instead of
    /// ending as "can never be scheduled". A detected autoscaler does the same by itself.
    pub capacity_may_come: bool,
    /// `--delete-on-failure`: a wait that fails (exit 4) deletes the job, as Arena does.
    pub delete_on_failure: bool,
    /// `--save DIR`: the job's evidence written as replicas terminate and when the wait ends.
    pub save: Option<crate::ops::evidence::SaveOptions>,
    /// Where restarts start to count (earlier ones are history): `submit --wait` passes the
    /// moment before its create, so every restart of the pods it caused counts however late
    /// the wait's first look comes; `None` is the wait's own start.
    pub since: Option<k8s_openapi::jiff::Timestamp>,
    /// Run `probe`'s in-pod checks once every replica runs, before saying so (`--no-probe`
    /// turns it off: the note then says what was not checked).
    pub probe: bool,
    /// The gateway variables' prefix the pods use (`PREFIX_API_KEY`, `PREFIX_BASE_URL`):
    /// `submit --wait` passes its own `--api-env-prefix`.
    pub env_prefix: String,
}

/// `--settle` against `--timeout` for `all-running`: a settle window as long as the timeout can
/// never be waited out, so a `--settle` given that way is refused (exit 2), and the default is
/// shortened to half the timeout, with a note saying so. `None` is the default.
pub fn fit_settle(
    wait_for: WaitFor,
    timeout: Duration,
    settle: Option<Duration>,
) -> crate::error::Result<(Duration, Option<String>)> {
    let fits = |s: Duration| {
        !wait_for.needs_every_replica() || timeout.is_zero() || s.is_zero() || s < timeout
    };
    let go = crate::model::duration::go;
    match settle {
        Some(s) if fits(s) => Ok((s, None)),
        Some(s) => Err(crate::error::Error::Usage(format!(
            "--settle {} is not shorter than --timeout {}: every replica must have run for \
             --settle before --timeout ends, so the wait could never succeed; shorten --settle \
             or lengthen --timeout",
            go(s),
            go(timeout)
        ))),
        None if fits(DEFAULT_SETTLE) => Ok((DEFAULT_SETTLE, None)),
        None => {
            let half = timeout / 2;
            Ok((
                half,
                Some(format!(
                    "note: --settle shortened from its default {} to {} (half of --timeout {}) to fit",
                    go(DEFAULT_SETTLE),
                    crate::cluster::client::seconds(half),
                    go(timeout)
                )),
            ))
        }
    }
}

/// kubectl's `--for=condition=NAME[=VALUE]` for a TFJob: the job's Created, Running and
/// Succeeded conditions (names compared without case, VALUE `true` only).
pub fn for_condition(condition: &str) -> std::result::Result<WaitFor, String> {
    let (name, value) = condition.split_once('=').unwrap_or((condition, "true"));
    if !value.eq_ignore_ascii_case("true") {
        return Err(format!(
            "only a condition being True can be waited for (not {name}={value})"
        ));
    }
    match name.to_ascii_lowercase().as_str() {
        "created" => Ok(WaitFor::Created),
        "running" => Ok(WaitFor::Running),
        "succeeded" => Ok(WaitFor::Succeeded),
        "failed" => Err(
            "waiting for Failed is not supported: use --for finished (exit 0 when the job \
             succeeds, 4 when it fails)"
                .into(),
        ),
        _ => Err(format!(
            "a TFJob has no condition {name:?} to wait for: use condition=Created, \
             condition=Running or condition=Succeeded (or --for all-running|finished)"
        )),
    }
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
            capacity_may_come: false,
            delete_on_failure: false,
            save: None,
            since: None,
            probe: true,
            env_prefix: crate::gateway::DEFAULT_ENV_PREFIX.to_string(),
        }
    }
}

/// `kubectl tfjob wait NAME`'s options: the job, how long and for what, and how to report.
#[derive(Debug, Clone, Default)]
pub struct WaitJobOptions {
    /// The TFJob's name, parsed by `commands/wait.rs`.
    pub name: String,
    pub wait: WaitOptions,
    /// Text (live progress on a terminal, a line per change otherwise) or NDJSON.
    pub format: ReportFormat,
}

/// The default `--max-restarts`, `diagnose`'s: both judge a crash loop by the same count.
pub use crate::diagnose::DEFAULT_MAX_RESTARTS;

/// The default `--settle`: long enough to see a container that dies right after it starts
/// (bad flags, import errors), short enough not to slow a healthy submit down.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(5);

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn a_settle_window_that_cannot_fit_the_timeout_is_refused_or_shortened() {
        let s = Duration::from_secs;
        // Fits: as given.
        assert_eq!(
            fit_settle(WaitFor::AllRunning, s(60), Some(s(5))).unwrap(),
            (s(5), None)
        );
        // Given and too long: refused, exit 2, both flags named.
        let e = fit_settle(WaitFor::AllRunning, s(5), Some(s(10))).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        assert!(
            e.to_string()
                .contains("--settle 10s is not shorter than --timeout 5s"),
            "{e}"
        );
        // The default, too long: half the timeout, said.
        let (settle, note) = fit_settle(WaitFor::AllRunning, s(3), None).unwrap();
        assert_eq!(settle, Duration::from_millis(1500));
        assert!(note.unwrap().contains("--settle shortened"));
        // Settle means nothing for other conditions, and 0 checks once.
        assert_eq!(
            fit_settle(WaitFor::Succeeded, s(3), Some(s(10))).unwrap().0,
            s(10)
        );
        assert!(fit_settle(WaitFor::AllRunning, s(0), Some(s(10))).is_ok());
    }

    #[test]
    fn kubectls_condition_form_names_the_jobs_conditions() {
        assert_eq!(for_condition("Succeeded"), Ok(WaitFor::Succeeded));
        assert_eq!(for_condition("succeeded=True"), Ok(WaitFor::Succeeded));
        assert_eq!(for_condition("Running"), Ok(WaitFor::Running));
        assert_eq!(for_condition("CREATED"), Ok(WaitFor::Created));
        assert!(
            for_condition("Failed")
                .unwrap_err()
                .contains("--for finished")
        );
        assert!(for_condition("Succeeded=false").is_err());
        assert!(for_condition("Ready").unwrap_err().contains("no condition"));
    }
}
