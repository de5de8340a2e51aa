//! Where progress goes: a live line on a terminal (redrawn every second, so the clock moves while
//! nothing changes), a plain line per change otherwise, or NDJSON. The lines themselves are made
//! in `print::progress`.

use std::time::Duration;

use crate::error::Result;
use crate::output::{Output, ReportFormat};
use crate::print::progress::{JobState, json_event, live_line, plain_line};

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
        p: &JobState,
        waiting_for: &str,
        elapsed: Duration,
        changed: bool,
    ) -> Result<()> {
        match self {
            Display::Live(bar) => bar.set_message(live_line(job, p, waiting_for, elapsed)),
            // Progress is not the result: stdout keeps only "condition met" (as kubectl wait).
            Display::Lines if changed => out.note_line(&plain_line(job, p, waiting_for)),
            Display::Json if changed => {
                out.data_line(&json_event(job, p, waiting_for, elapsed))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_output_prints_changes_only() {
        let (mut out, stdout, stderr) = Output::buffers();
        let p = JobState {
            state: "Created".into(),
            ..JobState::default()
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
