//! What one evaluation of a wait takes and keeps, pure data: the injected clock ([`Now`]), what
//! the waiter looks at ([`View`]), the limits that end a wait ([`Limits`]), and its memory across
//! evaluations ([`Tracker`], with each container's [`Restarts`] and the [`Restarted`] facts).
//! Both [`super::conditions`] (the verdict) and [`super::restarts`] (what a restart means) read
//! and update it; neither imports the other's state, and conditions calls restarts, never back.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;

use crate::cluster::operator::OperatorState;
use crate::cluster::pod::Pod;
use crate::model::TFJob;

/// The clock, injected: the monotonic instant for windows the waiter observes itself, the wall
/// clock to compare with the kubelet's `startedAt`.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    pub instant: Instant,
    pub wall: Timestamp,
}

impl Now {
    pub fn current() -> Self {
        Now {
            instant: Instant::now(),
            wall: Timestamp::now(),
        }
    }

    /// `d` later on both clocks.
    pub fn after(self, d: Duration) -> Self {
        Now {
            instant: self.instant + d,
            wall: self.wall.checked_add(jiff_span(d)).unwrap_or(self.wall),
        }
    }
}

pub(super) fn jiff_span(d: Duration) -> k8s_openapi::jiff::SignedDuration {
    k8s_openapi::jiff::SignedDuration::try_from(d).unwrap_or(k8s_openapi::jiff::SignedDuration::MAX)
}

/// What the waiter looks at.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    pub job: &'a TFJob,
    pub pods: &'a [Arc<Pod>],
    /// Checked only while the job has no condition; `None` = not checked.
    pub operator: Option<&'a OperatorState>,
}

/// The limits that turn a slow job into a failed wait.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub image_pull_grace: Duration,
    pub pending_timeout: Option<Duration>,
    pub settle: Duration,
    /// Restarts of one container during the wait that make a crash loop (`--max-restarts`);
    /// the job's `runPolicy.backoffLimit` takes its place when set.
    pub max_restarts: u32,
}

impl From<&super::WaitOptions> for Limits {
    fn from(o: &super::WaitOptions) -> Self {
        Limits {
            image_pull_grace: o.image_pull_grace,
            pending_timeout: o.pending_timeout,
            settle: o.settle,
            max_restarts: o.max_restarts,
        }
    }
}

/// Time-dependent memory of the waiter: since when each pod has shown a given problem, and
/// since when every replica has been running without a restart.
#[derive(Debug, Default)]
pub struct Tracker {
    pub(super) since: HashMap<(String, &'static str), Instant>,
    pub(super) settle: Option<Settle>,
    /// Per (pod name, container): the restarts this waiter has seen.
    pub(super) restarts: BTreeMap<(String, String), Restarts>,
    /// Lines to show once (a replica restarted), taken by the I/O loop.
    pub(super) notes: Vec<String>,
    /// The same restarts as facts, for `logs -f`'s marker between two instances' lines.
    pub(super) restarted: Vec<Restarted>,
    /// The container whose crash loop ended the wait: (pod, container), for its last log lines.
    pub crashed: Option<(String, String)>,
    /// When the wait started ([`Tracker::starting_at`]), else the wall clock of the first
    /// evaluation: pods created since (e.g. by `submit --wait`) count every restart they show.
    pub(super) first_seen: Option<Timestamp>,
    /// The pod instances (uids) whose disruption (evicted, preempted, …) was said.
    pub(super) disrupted: std::collections::BTreeSet<String>,
}

#[derive(Debug)]
pub(super) struct Settle {
    pub(super) since: Instant,
    pub(super) restarts: BTreeMap<String, i32>,
}

impl Tracker {
    /// A tracker for a wait that starts at `wall`, before its first request: a pod created
    /// since then counts every restart it shows, however late the first answer about it comes
    /// (a loaded API server or machine can take seconds, and a container that crashes at once
    /// restarts meanwhile).
    pub fn starting_at(wall: Timestamp) -> Tracker {
        Tracker {
            first_seen: Some(wall),
            ..Tracker::default()
        }
    }

    /// How long `pod` has had `problem` (zero on first sighting); forgets problems that are gone.
    pub(super) fn age(
        &mut self,
        pod: &str,
        problem: &'static str,
        present: bool,
        now: Instant,
    ) -> Duration {
        let key = (pod.to_string(), problem);
        if present {
            now - *self.since.entry(key).or_insert(now)
        } else {
            self.since.remove(&key);
            Duration::ZERO
        }
    }

    /// How long every replica has been running without a restart, as seen by this waiter.
    pub fn settling_for(&self, now: Instant) -> Option<Duration> {
        self.settle.as_ref().map(|s| now - s.since)
    }

    /// The lines gathered since the last call ("worker-1 restarted (exit 1), 1×").
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// The restarts seen since the last call (the notes say the same in words).
    pub fn take_restarted(&mut self) -> Vec<Restarted> {
        self.notes.clear();
        std::mem::take(&mut self.restarted)
    }
}

/// One restart (or recreation after a failure) of a replica's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restarted {
    /// `Worker-1`, as `wait` and `diagnose` name it.
    pub replica: String,
    /// The container, unless it is the default `tensorflow` one.
    pub container: Option<String>,
    /// The exit code of the instance that ended, when known.
    pub exit: Option<i32>,
}

impl Restarted {
    /// `--- worker-1 restarted (exit 1) ---`: where one instance's log ends and the next begins,
    /// labelled as `logs` prefixes the replica's lines (`[worker-1]`).
    pub fn marker(&self) -> String {
        let container = self
            .container
            .as_ref()
            .map(|c| format!(" container {c}"))
            .unwrap_or_default();
        let exit = self
            .exit
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default();
        format!(
            "--- {}{container} restarted{exit} ---",
            self.replica.to_lowercase()
        )
    }
}

/// One container of one replica, across restarts in place and pods recreated under its name.
#[derive(Debug)]
pub(super) struct Restarts {
    pub(super) uid: String,
    /// The last restartCount seen on that pod instance.
    pub(super) count: i32,
    /// Restarts seen during this wait (a restart before the wait started does not count).
    pub(super) during_wait: u32,
    pub(super) first_at: Option<Instant>,
    pub(super) last_at: Option<Instant>,
    /// Exit code and reason of the last terminated instance.
    pub(super) last_exit: Option<(i32, Option<String>)>,
    /// Restarts before the wait, on a pod that existed before it: history, unless the
    /// container is still crashing ([`super::restarts::crash_loop`]).
    pub(super) before: u32,
    /// At first sight the container was down (in back-off, or terminated with an error).
    pub(super) down_at_start: bool,
    /// The instance is terminated with a non-zero code in a Failed pod (the operator may
    /// recreate it: `OnFailure`/`Always`/retryable `ExitCode`).
    pub(super) failed: bool,
}
