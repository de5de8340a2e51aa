//! Where a container's log has been printed up to (`logs` reads with `timestamps=true`).

use k8s_openapi::jiff::Timestamp;

/// Where a container's log has been printed up to, so a resumed request (after a dropped
/// stream, or the previous instance after a restart) prints every line exactly once.
///
/// The resume request says `sinceTime` = the last printed line's second, floored: the API server
/// forwards `sinceTime` to the kubelet with whole seconds only (`pkg/registry/core/pod/
/// strategy.go`, `opts.SinceTime.Format(time.RFC3339)`) and the kubelet includes lines *at*
/// `since` (`pkg/kubelet/kuberuntime/logs/logs.go`, skips only `Before(since)`), so the answer
/// repeats up to a second of lines; those are skipped here by timestamp, counting lines that
/// share the last timestamp. (kube-rs rounds `since_time` to the nearest second, which could
/// round up past unprinted lines; flooring first avoids that.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cursor {
    last: Option<Timestamp>,
    /// Lines printed with timestamp == `last`.
    at_last: usize,
    /// Lines with timestamp == `last` still to skip in the current answer.
    skip_eq: usize,
}

impl Cursor {
    /// Call before reading each new answer.
    pub fn begin(&mut self) {
        self.skip_eq = self.at_last;
    }

    /// Whether a line with this timestamp is new (and if so, records it).
    pub fn accept(&mut self, ts: Timestamp) -> bool {
        match self.last {
            Some(last) if ts < last => false,
            Some(last) if ts == last => {
                if self.skip_eq > 0 {
                    self.skip_eq -= 1;
                    false
                } else {
                    self.at_last += 1;
                    true
                }
            }
            _ => {
                self.last = Some(ts);
                self.at_last = 1;
                self.skip_eq = 0;
                true
            }
        }
    }

    /// `sinceTime` for a resumed request: the last printed second, floored.
    pub fn resume_from(&self) -> Option<Timestamp> {
        let last = self.last?;
        Timestamp::from_second(last.as_second()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn cursor_skips_what_a_resumed_answer_repeats_and_keeps_equal_timestamps() {
        let mut c = Cursor::default();
        c.begin();
        let first = [
            "2026-12-01T03:00:00.100000000Z",
            "2026-12-01T03:00:00.200000000Z",
            "2026-12-01T03:00:00.200000000Z",
        ];
        assert!(first.iter().all(|t| c.accept(ts(t))));
        assert_eq!(c.resume_from(), Some(ts("2026-12-01T03:00:00Z")));
        // The resumed answer starts at the floored second: everything printed comes again,
        // then one more line with the same timestamp as the last, then newer ones.
        c.begin();
        let again = [
            ("2026-12-01T03:00:00.100000000Z", false),
            ("2026-12-01T03:00:00.200000000Z", false),
            ("2026-12-01T03:00:00.200000000Z", false),
            ("2026-12-01T03:00:00.200000000Z", true),
            ("2026-12-01T03:00:01.000000000Z", true),
        ];
        for (t, want) in again {
            assert_eq!(c.accept(ts(t)), want, "{t}");
        }
    }
}
