//! Best effort under one deadline. Once a command knows its answer, what decorates it (log
//! excerpts, events) is read once each, never retried, and cut off when the budget is spent:
//! the verdict must not wait for them (a kubelet that cannot serve logs makes the API server
//! answer 500, which the request retry policy would otherwise retry for a minute).

use std::future::Future;
use std::time::{Duration, Instant};

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
        Budget {
            until: Instant::now() + d,
        }
    }

    /// Ends at `until`.
    pub fn until(until: Instant) -> Self {
        Budget { until }
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
