//! Where progress goes: a live line on a terminal (redrawn every second, so the clock moves while
//! nothing changes), a plain line per change otherwise, or NDJSON.

use std::time::Duration;

use super::conditions::Progress;
use crate::error::Result;
use crate::output::{Output, ReportFormat};

pub(super) enum Display {
    Live(indicatif::ProgressBar),
    Lines,
    Json,
}

impl Display {
    pub(super) fn new(format: ReportFormat, stderr_is_terminal: bool) -> Self {
        match format {
            ReportFormat::Json => Display::Json,
            ReportFormat::Text if stderr_is_terminal => {
                let bar = indicatif::ProgressBar::new_spinner();
                bar.enable_steady_tick(Duration::from_millis(120));
                Display::Live(bar)
            }
            ReportFormat::Text => Display::Lines,
        }
    }

    /// Called on every change and on every tick; `changed` says whether the state differs from
    /// the last call. The live line is redrawn each time (its clock moves); the other forms
    /// print only changes.
    pub(super) fn show(
        &self,
        out: &mut Output,
        job: &str,
        p: &Progress,
        waiting_for: &str,
        elapsed: Duration,
        changed: bool,
    ) -> Result<()> {
        match self {
            Display::Live(bar) => bar.set_message(live_line(job, p, waiting_for, elapsed)),
            // Progress is not the result: stdout keeps only "condition met" (as kubectl wait).
            Display::Lines if changed => {
                out.note_line(&format!("tfjob/{job}: {}; {waiting_for}", p.line()))
            }
            Display::Json if changed => {
                let event = serde_json::json!({
                    "event": "progress",
                    "job": job,
                    "elapsedSeconds": elapsed.as_secs_f64(),
                    "state": p.state,
                    "replicas": p.replicas,
                    "reason": p.reason,
                    "waitingFor": waiting_for,
                });
                out.data_line(&event.to_string())?;
            }
            Display::Lines | Display::Json => {}
        }
        Ok(())
    }

    /// A note that must not be overwritten by the live line.
    pub(super) fn note(&self, out: &mut Output, line: &str) {
        match self {
            Display::Live(bar) => bar.suspend(|| out.note_line(line)),
            _ => out.note_line(line),
        }
    }

    pub(super) fn finish(&self) {
        if let Display::Live(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// `tfjob/NAME [ 12s] Created  Worker 1/3 running, 2 pending (Unschedulable) — waiting for …`
pub(super) fn live_line(job: &str, p: &Progress, waiting_for: &str, elapsed: Duration) -> String {
    format!(
        "tfjob/{job} [{:>3}s] {} — {waiting_for}",
        elapsed.as_secs(),
        p.line()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_line_carries_the_clock_and_what_it_waits_for() {
        let p = Progress {
            state: "Created".into(),
            ..Progress::default()
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

    #[test]
    fn plain_output_prints_changes_only() {
        let (mut out, stdout, stderr) = Output::buffers();
        let p = Progress {
            state: "Created".into(),
            ..Progress::default()
        };
        let d = Display::Lines;
        d.show(&mut out, "x", &p, "waiting", Duration::from_secs(1), true)
            .unwrap();
        d.show(&mut out, "x", &p, "waiting", Duration::from_secs(2), false)
            .unwrap();
        // Progress is a note: stderr only, so stdout stays data.
        assert_eq!(stderr.text(), "tfjob/x: Created; waiting\n");
        assert_eq!(stdout.text(), "");
    }
}
