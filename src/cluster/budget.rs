//! The command's one deadline ([`Deadline`], from `--timeout`), and best effort under it.
//!
//! [`Deadline`]: kube-rs says of `await_condition` that it "does not add a timeout… wrap it";
//! stern bounds a whole command by one context. Here one `Deadline` is built per command (in
//! `ops::Context`), carried by the client ([`super::Kube::deadline`]) so the retry policy never
//! sleeps past it, and every phase (pre-flight, create, `--replace`'s deletion, the wait, the
//! closing diagnosis) spends from it and says, with [`Deadline::phase`], what it is doing so the
//! timeout can name it.
//!
//! Best effort. Once a command knows its answer, what decorates it (log
//! excerpts, events) is read once each, never retried, and cut off when the budget is spent:
//! the verdict must not wait for them (a kubelet that cannot serve logs makes the API server
//! answer 500, which the request retry policy would otherwise retry for a minute).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{DeadlineReached, Error, Result};

/// How long after the deadline the command's last guard cuts it off: the phases stop at the
/// deadline themselves (with their own words); this only catches one that does not.
pub const GRACE: Duration = Duration::from_millis(500);

/// The one deadline of a command (`--timeout`), or none, and what the command is doing now:
/// the phase names both a timeout and an interrupt, so a command without a deadline keeps
/// one too. Cheap to clone (the phase is shared).
#[derive(Debug, Clone, Default)]
pub struct Deadline {
    limit: Option<Limit>,
    /// What the command is doing now, for the message when it runs out or is interrupted.
    phase: Arc<Mutex<String>>,
}

#[derive(Debug, Clone, Copy)]
struct Limit {
    until: Instant,
    timeout: Duration,
    /// The flag that set it, for messages (`--timeout`).
    flag: &'static str,
}

impl Deadline {
    /// No deadline: each request is bounded by its own retry policy only.
    pub fn none() -> Self {
        Deadline::default()
    }

    /// `timeout` from now, set by `flag`.
    pub fn after(timeout: Duration, flag: &'static str) -> Self {
        // A deadline too far to represent (`--timeout -1s` is a week; larger ones) is none.
        let limit = Instant::now().checked_add(timeout).map(|until| Limit {
            until,
            timeout,
            flag,
        });
        Deadline {
            limit,
            phase: Arc::default(),
        }
    }

    pub fn until(&self) -> Option<Instant> {
        self.limit.map(|l| l.until)
    }

    /// When the command must end: the deadline, or a year away when it has none (a flag's
    /// timeout too large to represent), so a core never keeps a timeout of its own.
    pub fn end(&self) -> Instant {
        self.until()
            .unwrap_or_else(|| after(Duration::from_secs(365 * 24 * 3600)))
    }

    /// The whole `--timeout` as given.
    pub fn timeout(&self) -> Option<Duration> {
        self.limit.map(|l| l.timeout)
    }

    /// What is left (`None`: no deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.until()
            .map(|u| u.saturating_duration_since(Instant::now()))
    }

    /// `limit`, or what is left of the deadline when that is less: a per-phase budget is only
    /// ever a slice of the deadline.
    pub fn slice(&self, limit: Duration) -> Duration {
        self.remaining().map_or(limit, |r| r.min(limit))
    }

    pub fn passed(&self) -> bool {
        self.remaining().is_some_and(|r| r.is_zero())
    }

    /// Says what the command is doing now (`creating TFJob default/x`), for the message when
    /// the deadline runs out or an interrupt comes during it.
    pub fn phase(&self, doing: impl Into<String>) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = doing.into();
    }

    /// The current phase (empty when none was said).
    pub fn current_phase(&self) -> String {
        self.phase.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `--timeout 20s ran out while creating TFJob default/x`.
    pub fn ran_out_message(&self) -> String {
        let Some(l) = &self.limit else {
            return "the deadline ran out".into();
        };
        let phase = self.current_phase();
        let mut m = format!(
            "{} {} ran out",
            l.flag,
            crate::model::duration::go(l.timeout)
        );
        if !phase.is_empty() {
            m.push_str(" while ");
            m.push_str(&phase);
        }
        m
    }

    /// The request error [`crate::cluster::retry`] returns when the deadline cut a request off.
    pub fn reached(&self) -> DeadlineReached {
        DeadlineReached(self.ran_out_message())
    }

    /// `fut`, cut off at the deadline (run to its end when there is none); `None` when the
    /// deadline came first.
    pub async fn attempt<T>(&self, fut: impl Future<Output = T>) -> Option<T> {
        match self.until() {
            None => Some(fut.await),
            Some(until) => tokio::time::timeout_at(tokio::time::Instant::from_std(until), fut)
                .await
                .ok(),
        }
    }

    /// `fut`, cut off after `limit` or at the deadline, whichever comes first (a phase's own
    /// bound is a slice of the command's); `None` when it was cut off.
    pub async fn within<T>(&self, limit: Duration, fut: impl Future<Output = T>) -> Option<T> {
        Budget::within(limit, self).attempt(fut).await
    }

    /// The error when the deadline ran out (exit 5).
    pub fn ran_out(&self) -> Error {
        Error::Timeout(self.ran_out_message())
    }

    /// Runs `fut`, cut off [`GRACE`] after the deadline with [`Deadline::ran_out`]: the guard
    /// around a whole command, so that no phase, however it waits, outlives `--timeout` by more
    /// than about a second.
    pub async fn bound<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        match self.until() {
            None => fut.await,
            Some(until) => {
                let at = tokio::time::Instant::from_std(until + GRACE);
                match tokio::time::timeout_at(at, fut).await {
                    Ok(result) => result,
                    Err(_) => Err(self.ran_out()),
                }
            }
        }
    }
}

/// The instant `d` from now (far away when `d` is too large to represent): the one place a
/// future instant is computed from the clock, so every bound is visible here.
pub fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

/// The shared budget of a command's enrichment reads, all of them together.
pub const DECORATION: Duration = Duration::from_secs(2);

/// A deadline shared by several best-effort reads.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    until: Instant,
}

impl Budget {
    /// `d` from now.
    pub fn new(d: Duration) -> Self {
        Budget { until: after(d) }
    }

    /// Ends at `until`.
    pub fn until(until: Instant) -> Self {
        Budget { until }
    }

    /// `d` from now, or the command's deadline when that comes first.
    pub fn within(d: Duration, deadline: &Deadline) -> Self {
        let own = Budget::new(d);
        match deadline.until() {
            Some(until) => own.min(Budget::until(until)),
            None => own,
        }
    }

    /// The earlier of the two deadlines.
    pub fn min(self, other: Budget) -> Budget {
        Budget {
            until: self.until.min(other.until),
        }
    }

    pub fn remaining(&self) -> Duration {
        self.until.saturating_duration_since(Instant::now())
    }

    pub fn spent(&self) -> bool {
        self.remaining().is_zero()
    }

    /// One attempt, cut at the deadline; `None` when the budget ran out first (or already had).
    pub async fn attempt<T>(&self, fut: impl Future<Output = T>) -> Option<T> {
        if self.spent() {
            return None;
        }
        tokio::time::timeout(self.remaining(), fut).await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_deadline_cuts_a_command_off_and_names_its_phase() {
        let d = Deadline::after(Duration::from_millis(50), "--timeout");
        d.phase("waiting for TFJob default/x");
        let started = Instant::now();
        let err = d
            .bound(async {
                std::future::pending::<()>().await;
                Ok(())
            })
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(err.exit_code(), crate::error::ExitCode::Timeout);
        assert_eq!(
            err.to_string(),
            "--timeout 50ms ran out while waiting for TFJob default/x"
        );
        // Slices never outlast it; no deadline leaves the limit as it is.
        assert!(d.slice(Duration::from_secs(60)) <= Duration::from_millis(50));
        assert_eq!(
            Deadline::none().slice(Duration::from_secs(60)),
            Duration::from_secs(60)
        );
        assert!(Deadline::none().bound(async { Ok(1) }).await.is_ok());
    }

    #[tokio::test]
    async fn a_spent_budget_runs_nothing_and_an_open_one_runs_once() {
        let spent = Budget::until(Instant::now());
        assert!(spent.attempt(async { 1 }).await.is_none());
        let open = Budget::new(Duration::from_secs(60));
        assert_eq!(open.attempt(async { 2 }).await, Some(2));
        // A read that never answers is cut at the deadline, not awaited.
        let short = Budget::new(Duration::from_millis(1));
        assert!(short.attempt(std::future::pending::<()>()).await.is_none());
        assert!(short.min(open).remaining() <= Duration::from_millis(1));
    }
}
