//! Durations, read and written in one place: the Go `time.ParseDuration` syntax every duration
//! flag takes ([`parse`], [`parse_signed`]; a bare number other than 0 is refused, as pflag's
//! `DurationVar` refuses it for `kubectl wait --timeout 2`), client-go's `ParseTimeout` for
//! `--request-timeout` ([`parse_request_timeout`]: bare seconds allowed), Go's `Duration.String()` for flags repeated in hints
//! ([`go`]), kubectl's AGE column (k8s.io/apimachinery pkg/util/duration `HumanDuration`,
//! [`human`]), and the one-unit forms of messages ([`coarse`], [`brief`]).

use std::time::Duration;

use k8s_openapi::jiff::SignedDuration;

/// Parses a kubectl duration flag as pflag's `DurationVar` does (Go `time.ParseDuration`):
/// "90s", "10m", "1h30m", "250ms", "0"; a bare number other than 0 has no unit and is refused
/// (`kubectl wait --timeout 2`: `time: missing unit in duration "2"`).
pub fn parse(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    match t.parse::<u64>() {
        Ok(0) => Ok(Duration::ZERO),
        Ok(n) => Err(format!(
            "invalid duration {t:?}: missing unit, as kubectl says; use e.g. {n}s, {n}m or {n}h"
        )),
        Err(_) => parse_units(t),
    }
}

/// `--request-timeout` as client-go's `clientcmd.ParseTimeout` reads it: a bare number of seconds,
/// or a Go duration (k8s.io/client-go/tools/clientcmd/client_config.go).
pub fn parse_request_timeout(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    match t.parse::<u64>() {
        Ok(secs) => Ok(Duration::from_secs(secs)),
        Err(_) => parse_units(t),
    }
}

/// A Go duration with units.
fn parse_units(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration; use e.g. 30s, 10m or 1h".into());
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("invalid duration {s:?}: missing unit (ns, us, ms, s, m, h)"))?;
        if num_len == 0 {
            return Err(format!(
                "invalid duration {s:?}: expected a number, e.g. 30s, 10m or 1h"
            ));
        }
        let value: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("invalid duration {s:?}"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            unit => {
                return Err(format!(
                    "invalid duration {s:?}: unknown unit {unit:?} (use ns, us, ms, s, m or h)"
                ));
            }
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    if !total.is_finite() || total > 1e12 {
        return Err(format!("invalid duration {s:?}: too large"));
    }
    Ok(Duration::from_secs_f64(total))
}

/// Like [`parse`], but a negative value means "a week", as in `kubectl wait --timeout=-1s`.
pub fn parse_signed(s: &str) -> Result<Duration, String> {
    match s.trim().strip_prefix('-') {
        Some(rest) => parse(rest).map(|_| Duration::from_secs(7 * 24 * 3600)),
        None => parse(s),
    }
}

/// A duration as Go's `time.Duration.String()` would print the common cases (`5s`, `1m30s`,
/// `250ms`), which `--request-timeout` reads back.
pub fn go(d: Duration) -> String {
    if d.is_zero() {
        return "0".into();
    }
    if d.subsec_nanos() != 0 {
        return format!("{}ms", d.as_millis().max(1));
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{s}s"));
    out
}

/// kubectl's short age (`translateTimestampSince` → `duration.HumanDuration`): `45s`, `3m20s`,
/// `5h`, `2d3h`, `40d`, `3y100d`.
pub fn human(d: SignedDuration) -> String {
    let secs = d.as_secs().max(0);
    if secs < 60 * 2 {
        return format!("{secs}s");
    }
    let mins = secs / 60;
    if mins < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{mins}m")
        } else {
            format!("{mins}m{s}s")
        };
    }
    if mins < 60 * 3 {
        return format!("{mins}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = mins % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// 45s, 3m, 2h, 5d: an age in its one largest unit, for the sentences `diagnose` writes
/// ("restarted 3m ago"); tables use [`human`], kubectl's two-unit form.
pub fn coarse(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// A timeout in a message: `2m`, `90s`, `250ms` (the largest whole unit that says it).
pub fn brief(d: Duration) -> String {
    match d.as_secs() {
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s if s > 0 => format!("{s}s"),
        _ => format!("{}ms", d.as_millis()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_forms_keep_one_unit() {
        assert_eq!(brief(Duration::from_secs(120)), "2m");
        assert_eq!(brief(Duration::from_secs(90)), "90s");
        assert_eq!(brief(Duration::from_millis(250)), "250ms");
        assert_eq!(coarse(119), "119s");
        assert_eq!(coarse(150), "2m");
        assert_eq!(coarse(3 * 3600), "3h");
        assert_eq!(coarse(50 * 3600), "2d");
    }
}
