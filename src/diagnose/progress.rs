//! Is it training? Progress read from the log lines the tool already reads (issue 49): the step
//! or epoch counters, their rate, the loss when printed, per replica, and the replicas whose
//! step stopped while their peers go on. Pure: timestamped lines in, facts out; `diagnose` and
//! `get` show them.
//!
//! The shapes recognised, as TensorFlow prints them:
//! - Keras `model.fit(verbose=1)`: `Epoch 3/10`, then progress-bar lines
//!   `120/500 [=====>....] - ETA: 1:02 - loss: 0.4123`, redrawn with `\r` (or backspaces) on a
//!   terminal, and the epoch's last `500/500 [====] - 12s 24ms/step - loss: 0.3100`; with
//!   `verbose=2`, one line per epoch: `500/500 - 12s - loss: 0.3100 - 12s/epoch - 24ms/step`;
//! - the Estimator (`tf.estimator`, `LoggingTensorHook`): `loss = 0.123, step = 400 (2.1 sec)`
//!   and `global_step/sec: 12.3`;
//! - custom TF2 loops: `step 100`, `Step 100, loss 0.412`, `step: 100/1000`, `step=100`, with an
//!   `epoch N[/M]` beside it when printed;
//! - a user pattern (`--progress-pattern`), a regex with the named groups `step` (required),
//!   `total`, `epoch` and `loss`, tried first.

use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use regex::Regex;

/// The replica types that log training steps, as the operator names them: a PS or an
/// evaluator need not, so their silence says nothing about progress.
pub fn logs_steps(replica_type: &str) -> bool {
    matches!(replica_type, "Worker" | "Chief" | "Master")
}

/// A replica whose step has not moved for this long (or twice its own longest gap between
/// steps, when that is longer), while a peer's has, is stalled.
/// What every verb says of a replica that trains yet has logged no progress line (a step, an
/// epoch, a loss): one wording for `wait`, `list`, `get` and `top` (issue 61 item 6).
pub const NO_STEP_YET: &str = "no step yet";

pub const STALL_AFTER: Duration = Duration::from_secs(10 * 60);

/// What one line says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// Steps done (within the epoch for Keras's bar).
    pub step: Option<u64>,
    /// Steps in all (in the epoch, for Keras).
    pub total: Option<u64>,
    pub epoch: Option<u64>,
    pub epochs: Option<u64>,
    pub loss: Option<f64>,
    /// Steps per second as the line states it (`global_step/sec`, Keras's `24ms/step`).
    pub rate: Option<f64>,
    /// `step` and `total` count within the current epoch (Keras's progress bar).
    pub in_epoch: bool,
}

/// One replica's progress over the lines read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The step the replica is at, counted over the whole run where the epochs say how
    /// (Keras: `(epoch - 1) × steps per epoch + step`).
    pub step: u64,
    /// The whole run's steps, when the log says it.
    pub total: Option<u64>,
    pub epoch: Option<u64>,
    pub epochs: Option<u64>,
    pub loss: Option<f64>,
    /// Steps per second: as the log states it, else from two of its timestamped steps.
    pub rate: Option<f64>,
    /// When the step reached its last value (the line's time): the start of any stall.
    pub last_advance: Option<Timestamp>,
    /// The longest wait between two lines that advanced the step, in the lines read: the
    /// job's own rhythm, against which a stall is judged ([`stalls`]).
    pub cadence: Option<Duration>,
}

/// The user's `--progress-pattern`, compiled with a bound on its size (the regex crate runs in
/// linear time whatever the pattern), or why it cannot be one.
pub fn pattern(s: &str) -> Result<Regex, String> {
    let re = regex::RegexBuilder::new(s)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("not a regular expression: {e}"))?;
    if !re.capture_names().any(|n| n == Some("step")) {
        return Err(format!(
            "{s:?} has no group named step: write (?P<step>\\d+) where the step number is"
        ));
    }
    Ok(re)
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("the built-in patterns compile"))
}

const NUMBER: &str = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?";

fn number(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// What one log line (without its timestamp) says about progress, or nothing. `user` is the
/// `--progress-pattern`, tried before the built-in shapes.
pub fn read_line(line: &str, user: Option<&Regex>) -> Option<Reading> {
    // A terminal's redraws: the last state of the line is what it shows.
    let line = line
        .rsplit('\r')
        .find(|s| !s.trim().is_empty())
        .unwrap_or(line);
    let line = line.replace('\u{8}', "");
    let line = line.trim();
    if let Some(user) = user {
        if let Some(c) = user.captures(line) {
            let int = |g: &str| c.name(g).and_then(|m| m.as_str().parse::<u64>().ok());
            let step = int("step")?;
            return Some(Reading {
                step: Some(step),
                total: int("total"),
                epoch: int("epoch"),
                loss: c.name("loss").and_then(|m| number(m.as_str())),
                ..Reading::default()
            });
        }
        return None;
    }
    static LOSS: OnceLock<Regex> = OnceLock::new();
    let loss_of = |l: &str| {
        re(&LOSS, &format!(r"(?i)\bloss\b\s*[:=]?\s*({NUMBER})"))
            .captures(l)
            .and_then(|c| number(&c[1]))
    };
    static KERAS_EPOCH: OnceLock<Regex> = OnceLock::new();
    if let Some(c) = re(&KERAS_EPOCH, r"^Epoch\s+(\d+)/(\d+)$").captures(line) {
        return Some(Reading {
            epoch: c[1].parse().ok(),
            epochs: c[2].parse().ok(),
            ..Reading::default()
        });
    }
    static KERAS_BAR: OnceLock<Regex> = OnceLock::new();
    static PER_STEP: OnceLock<Regex> = OnceLock::new();
    // The bar, or with `fit(verbose=2)` one line per epoch and no bar: `1875/1875 - 4s -
    // loss: 0.2985 - …` (Keras 2) or `1875/1875 - 3s - 2ms/step - …` (Keras 3).
    if let Some(c) = re(&KERAS_BAR, r"^(\d+)/(\d+)\s*(?:\[[=>.\s]*\]| - \d)").captures(line) {
        let rate = re(&PER_STEP, r"\b(\d+(?:\.\d+)?)(s|ms|us)/step\b")
            .captures(line)
            .and_then(|c| {
                let per = number(&c[1])?
                    * match &c[2] {
                        "s" => 1.0,
                        "ms" => 1e-3,
                        _ => 1e-6,
                    };
                (per > 0.0).then(|| 1.0 / per)
            });
        return Some(Reading {
            step: c[1].parse().ok(),
            total: c[2].parse().ok(),
            loss: loss_of(line),
            rate,
            in_epoch: true,
            ..Reading::default()
        });
    }
    static ESTIMATOR: OnceLock<Regex> = OnceLock::new();
    if let Some(c) = re(&ESTIMATOR, &format!(r"\bloss = ({NUMBER}), step = (\d+)")).captures(line) {
        return Some(Reading {
            step: c[2].parse().ok(),
            loss: number(&c[1]),
            ..Reading::default()
        });
    }
    static STEP_RATE: OnceLock<Regex> = OnceLock::new();
    if let Some(c) = re(&STEP_RATE, &format!(r"\bglobal_step/sec: ({NUMBER})")).captures(line) {
        return Some(Reading {
            rate: number(&c[1]).filter(|r| *r > 0.0),
            ..Reading::default()
        });
    }
    static STEP: OnceLock<Regex> = OnceLock::new();
    static EPOCH: OnceLock<Regex> = OnceLock::new();
    let c = re(&STEP, r"(?i)\bstep\b\s*[:=#]?\s*(\d+)(?:\s*/\s*(\d+))?").captures(line)?;
    let epoch = re(&EPOCH, r"(?i)\bepoch\b\s*[:=#]?\s*(\d+)(?:\s*/\s*(\d+))?").captures(line);
    Some(Reading {
        step: c[1].parse().ok(),
        total: c.get(2).and_then(|m| m.as_str().parse().ok()),
        epoch: epoch.as_ref().and_then(|e| e[1].parse().ok()),
        epochs: epoch
            .as_ref()
            .and_then(|e| e.get(2))
            .and_then(|m| m.as_str().parse().ok()),
        loss: loss_of(line),
        rate: None,
        in_epoch: false,
    })
}

/// One replica's progress from its log's last lines (timestamped as `timestamps=true` gives
/// them), or `None` when no line has a step.
pub fn of_log(text: &str, user: Option<&Regex>) -> Option<Progress> {
    // (time, step over the run) of each line that gave a step.
    let mut steps: Vec<(Option<Timestamp>, u64)> = Vec::new();
    let mut p = Progress::default();
    let mut stated_rate = None;
    for raw in text.lines() {
        // Lines read with `timestamps=true` carry the kubelet's time; others are read as they are.
        let (at, line) = match crate::cluster::pod::split_timestamp(raw) {
            Some((t, rest)) => (Some(t), rest),
            None => (None, raw),
        };
        let Some(r) = read_line(line, user) else {
            continue;
        };
        if r.epoch.is_some() {
            p.epoch = r.epoch;
        }
        if r.epochs.is_some() {
            p.epochs = r.epochs;
        }
        if r.loss.is_some() {
            p.loss = r.loss;
        }
        if r.rate.is_some() {
            stated_rate = r.rate;
        }
        let Some(step) = r.step else {
            continue;
        };
        // Keras counts steps within the epoch: over the run, the epochs before count too.
        let (step, total) = match (r.in_epoch, p.epoch, r.total) {
            (true, Some(e), Some(t)) => (
                e.saturating_sub(1).saturating_mul(t).saturating_add(step),
                p.epochs.map(|es| es.saturating_mul(t)),
            ),
            (_, _, t) => (step, t),
        };
        p.step = step;
        p.total = total.or(p.total);
        if steps.last().is_none_or(|(_, s)| *s != step) {
            steps.push((at, step));
        }
    }
    // The first step read is always recorded: none recorded, no step seen.
    if steps.is_empty() {
        return None;
    }
    p.last_advance = steps.last().and_then(|(at, _)| *at);
    p.rate = stated_rate.or_else(|| derived_rate(&steps));
    p.cadence = cadence(&steps);
    Some(p)
}

/// The longest gap between consecutive timestamped steps (see [`Progress::cadence`]).
fn cadence(steps: &[(Option<Timestamp>, u64)]) -> Option<Duration> {
    let times: Vec<Timestamp> = steps.iter().filter_map(|(t, _)| *t).collect();
    times
        .windows(2)
        .map(|w| Duration::from_secs(w[1].duration_since(w[0]).as_secs().max(0) as u64))
        .max()
}

/// Steps per second between the first and the last timestamped step, when the step grew and
/// at least a second passed.
fn derived_rate(steps: &[(Option<Timestamp>, u64)]) -> Option<f64> {
    let timed: Vec<(Timestamp, u64)> = steps
        .iter()
        .filter_map(|(t, s)| Some(((*t)?, *s)))
        .collect();
    let (first, last) = (timed.first()?, timed.last()?);
    let secs = last.0.duration_since(first.0).as_secs_f64();
    (last.1 > first.1 && secs >= 1.0).then(|| (last.1 - first.1) as f64 / secs)
}

impl Progress {
    /// Time left at the current rate, when the total is known.
    pub fn eta(&self) -> Option<Duration> {
        let left = self.total?.checked_sub(self.step)?;
        let rate = self.rate.filter(|r| *r > 0.0)?;
        let secs = left as f64 / rate;
        (secs.is_finite() && secs < 1e9).then(|| Duration::from_secs_f64(secs))
    }

    /// Where it is: `step 4,100/10,000` (a table cell's worth).
    pub fn position(&self) -> String {
        match self.total {
            Some(t) => format!("step {}/{}", grouped(self.step), grouped(t)),
            None => format!("step {}", grouped(self.step)),
        }
    }

    /// `step 4,100/10,000 (12.3/s, ETA 12m), epoch 3/10, loss 0.412`.
    pub fn summary(&self) -> String {
        let mut s = self.position();
        let mut paren = Vec::new();
        if let Some(r) = self.rate {
            paren.push(format!("{}/s", rate_text(r)));
        }
        if let Some(eta) = self.eta() {
            paren.push(format!(
                "ETA {}",
                crate::model::duration::coarse(eta.as_secs() as i64)
            ));
        }
        if !paren.is_empty() {
            s.push_str(&format!(" ({})", paren.join(", ")));
        }
        if let Some(e) = self.epoch {
            s.push_str(&format!(", epoch {e}"));
            if let Some(es) = self.epochs {
                s.push_str(&format!("/{es}"));
            }
        }
        if let Some(l) = self.loss {
            s.push_str(&format!(", loss {l}"));
        }
        s
    }
}

pub fn rate_text(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 1.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.3}")
    }
}

/// `4100` as `4,100`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The replicas whose step has not moved for `window` while a peer's has (`Worker-2: no step
/// for 12m, peers at step 4,100`), or the whole job when none has moved. Replicas without
/// progress (a PS prints no steps) are not judged.
pub fn stalls(replicas: &[(String, Progress)], now: Timestamp, window: Duration) -> Vec<String> {
    // Judged against the replica's own rhythm: one that logs a step every 15 minutes has not
    // stalled after 10. Its window is at least twice the longest gap it showed; a replica
    // with one timed line keeps `window`.
    let own = |p: &Progress| {
        p.cadence
            .map_or(window, |c| window.max(c.saturating_mul(2)))
    };
    let idle = |p: &Progress| {
        p.last_advance
            .map(|t| Duration::from_secs(now.duration_since(t).as_secs().max(0) as u64))
    };
    let judged: Vec<(&String, &Progress, Duration)> = replicas
        .iter()
        .filter_map(|(l, p)| Some((l, p, idle(p)?)))
        .collect();
    if judged.is_empty() {
        return Vec::new();
    }
    let stalled: Vec<&(&String, &Progress, Duration)> =
        judged.iter().filter(|(_, p, i)| *i >= own(p)).collect();
    if stalled.is_empty() {
        return Vec::new();
    }
    let age = |d: Duration| crate::model::duration::coarse(d.as_secs() as i64);
    if stalled.len() == judged.len() {
        let least = judged.iter().map(|(_, _, i)| *i).min().unwrap_or_default();
        let top = judged.iter().map(|(_, p, _)| p.step).max().unwrap_or(0);
        return vec![format!(
            "no replica has made a step for {} (the furthest is at step {})",
            age(least),
            grouped(top)
        )];
    }
    let moving_top = judged
        .iter()
        .filter(|(_, p, i)| *i < own(p))
        .map(|(_, p, _)| p.step)
        .max()
        .unwrap_or(0);
    stalled
        .iter()
        .map(|(l, p, i)| {
            format!(
                "{l}: no step for {} (at step {}), peers at step {}",
                age(*i),
                grouped(p.step),
                grouped(moving_top)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
