//! The progress `wait` shows while it follows a job: the plain [`JobState`] (what the job looks
//! like now, counted by `ops::wait::conditions::progress`) and the text made of it, the live
//! terminal line, the plain line per change and the NDJSON event. The caller decides where and
//! when each goes (`ops::wait::progress`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

/// Pod phases per replica type, as shown while waiting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub expected: i32,
    pub pending: i32,
    pub running: i32,
    /// Phase Running, but a container waits or restarts (a crash loop between two back-offs).
    pub restarting: i32,
    /// Being deleted (a lost node's pods keep phase Running): not running.
    pub terminating: i32,
    pub succeeded: i32,
    pub failed: i32,
}

/// What the job looks like right now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JobState {
    /// [`TFJob::state`]: the last condition type, or "Pending" before the first reconcile.
    pub state: String,
    pub replicas: BTreeMap<String, Counts>,
    /// The most telling reason seen on a pod (Unschedulable, ImagePullBackOff, …), if any.
    pub reason: Option<String>,
}

impl JobState {
    /// One line, e.g. `Created  PS 1/1 running  Worker 1/3 running, 2 pending (Unschedulable)`.
    pub fn line(&self) -> String {
        let mut out = self.state.clone();
        for (rtype, c) in &self.replicas {
            let mut parts = vec![format!("{}/{} running", c.running, c.expected)];
            for (n, what) in [
                (c.pending, "pending"),
                (c.restarting, "restarting"),
                (c.terminating, "terminating"),
                (c.succeeded, "succeeded"),
                (c.failed, "failed"),
            ] {
                if n > 0 {
                    parts.push(format!("{n} {what}"));
                }
            }
            out.push_str(&format!("  {rtype} {}", parts.join(", ")));
        }
        if let Some(reason) = &self.reason {
            out.push_str(&format!(" ({reason})"));
        }
        // State, replica types and reasons are the cluster's text.
        super::terminal::escape(&out).into_owned()
    }
}

/// `tfjob/NAME [ 12s] Created  Worker 1/3 running, 2 pending (Unschedulable) — waiting for …`
pub fn live_line(job: &str, p: &JobState, waiting_for: &str, elapsed: Duration) -> String {
    format!(
        "tfjob/{job} [{:>3}s] {} — {waiting_for}",
        elapsed.as_secs(),
        p.line()
    )
}

/// `tfjob/NAME: Created  Worker 1/3 running; waiting for …`, printed once per change.
pub fn plain_line(job: &str, p: &JobState, waiting_for: &str) -> String {
    format!("tfjob/{job}: {}; {waiting_for}", p.line())
}

/// The NDJSON `progress` event of `-o json`, one per change.
pub fn json_event(job: &str, p: &JobState, waiting_for: &str, elapsed: Duration) -> String {
    serde_json::json!({
        "event": "progress",
        "job": job,
        "elapsedSeconds": elapsed.as_secs_f64(),
        "state": p.state,
        "replicas": p.replicas,
        "reason": p.reason,
        "waitingFor": waiting_for,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_line_carries_the_clock_and_what_it_waits_for() {
        let p = JobState {
            state: "Created".into(),
            ..JobState::default()
        };
        let a = live_line(
            "x",
            &p,
            "waiting for every replica to run",
            Duration::from_secs(1),
        );
        let b = live_line(
            "x",
            &p,
            "waiting for every replica to run",
            Duration::from_secs(2),
        );
        assert_ne!(a, b, "the clock must move while nothing changes");
        assert!(b.contains("[  2s]"), "{b}");
        assert!(b.ends_with("— waiting for every replica to run"), "{b}");
    }
}
