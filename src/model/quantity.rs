//! Kubernetes resource quantities (`resource.Quantity`): `4`, `500m`, `1.5`, `8Gi`, `1e3`, parsed
//! once, exactly, for every layer: validation (is it valid, negative, whole), placement and `top`
//! (exact milli-units) and the printers (sorting).
//!
//! The grammar is `resource.ParseQuantity`'s (k8s.io/apimachinery pkg/api/resource/quantity.go,
//! `parseQuantityString`): an optional sign, digits with at most one '.', then a binary (Ki…Ei),
//! decimal (n, u, m, k, M…E) or exponent (e3) suffix (suffix.go). Nothing is trimmed, so
//! `" 4Gi"` is refused there, and by the CRD's pattern for the field. A parsed [`Quantity`]
//! keeps the digits as written, so [`Quantity::milli`] is exact; the scheduler compares cpu in
//! milli and the rest in units rounded up, and milli keeps both exact.

/// A quantity as written: sign, decimal digits (the '.' removed) and the power of the suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    /// The number as written, with its '.' (for [`Quantity::approx`]).
    number: String,
    scale: Scale,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    /// × 10^n.
    Decimal(i32),
    /// × 2^n.
    Binary(u32),
}

/// Parses a quantity exactly as the API server's grammar reads it, or says why it is not one.
pub fn parse(s: &str) -> Result<Quantity, String> {
    if s.is_empty() {
        return Err("empty quantity".into());
    }
    if s.trim() != s || s.contains(char::is_whitespace) {
        return Err(format!(
            "{s:?} contains spaces; a quantity is written without any (e.g. \"{}\")",
            s.split_whitespace().collect::<String>()
        ));
    }
    let (negative, rest) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (num, suffix) = rest.split_at(num_len);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(format!("{s:?} does not start with a number"));
    }
    let scale = match suffix {
        "" => Scale::Decimal(0),
        "n" => Scale::Decimal(-9),
        "u" => Scale::Decimal(-6),
        "m" => Scale::Decimal(-3),
        "k" => Scale::Decimal(3),
        "M" => Scale::Decimal(6),
        "G" => Scale::Decimal(9),
        "T" => Scale::Decimal(12),
        "P" => Scale::Decimal(15),
        "E" => Scale::Decimal(18),
        "Ki" => Scale::Binary(10),
        "Mi" => Scale::Binary(20),
        "Gi" => Scale::Binary(30),
        "Ti" => Scale::Binary(40),
        "Pi" => Scale::Binary(50),
        "Ei" => Scale::Binary(60),
        e if e.starts_with(['e', 'E']) => {
            let exp = &e[1..];
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(bad_suffix(s, suffix));
            }
            Scale::Decimal(exp.parse().map_err(|_| bad_suffix(s, suffix))?)
        }
        _ => return Err(bad_suffix(s, suffix)),
    };
    Ok(Quantity {
        negative,
        number: num.to_string(),
        scale,
    })
}

impl Quantity {
    /// The value in milli-units, rounded up like `Quantity.MilliValue()` for sub-milli
    /// precision (`123456789n` is 124m). `None` when it does not fit an i128.
    pub fn milli(&self) -> Option<i128> {
        let (int, frac) = self.number.split_once('.').unwrap_or((&self.number, ""));
        let digits = format!("{int}{frac}");
        let v = match self.scale {
            // value = digits × 10^(e - frac.len()); in milli: × 1000.
            Scale::Decimal(e) => decimal_milli(&digits, i64::from(e) + 3 - frac.len() as i64)?,
            Scale::Binary(shift) => {
                let mantissa: i128 = digits.parse().ok()?;
                let den = 10i128.checked_pow(frac.len() as u32)?;
                let scaled = mantissa.checked_mul(1i128 << shift)?.checked_mul(1000)?;
                (scaled + den - 1) / den
            }
        };
        Some(if self.negative { -v } else { v })
    }

    /// Written with a binary suffix (Ki … Ei): its canonical form keeps one.
    pub fn is_binary(&self) -> bool {
        matches!(self.scale, Scale::Binary(_))
    }

    /// [`Quantity::milli`], with magnitudes beyond [`BEYOND_MILLI`] (or beyond i128) held at it
    /// and its sign kept. What placement sums and compares.
    pub fn milli_saturating(&self) -> i128 {
        if let Some(v) = self.milli() {
            return v.clamp(-BEYOND_MILLI, BEYOND_MILLI);
        }
        // milli() fails on a magnitude beyond i128, or on more digits (or a smaller exponent)
        // than i128 can scale exactly; the f64 value tells the two apart.
        let m = self.approx() * 1000.0;
        let sign: i128 = if self.negative { -1 } else { 1 };
        if m.abs() >= BEYOND_MILLI as f64 || m.is_nan() {
            sign * BEYOND_MILLI
        } else if m == 0.0 && self.number.chars().all(|c| c == '0' || c == '.') {
            0
        } else {
            // A non-zero value: rounded up, away from zero, as MilliValue rounds (a tiny request
            // is at least 1m).
            sign * (m.abs().ceil() as i128).max(1)
        }
    }

    /// The value as f64: enough to say whether a quantity is negative or whole, and to compare
    /// any two (however large) with a relative margin.
    pub fn approx(&self) -> f64 {
        // The number passed the grammar, so it parses; 0 is unreachable.
        let base: f64 = self.number.parse().unwrap_or(0.0);
        let scale = match self.scale {
            Scale::Decimal(e) => 10f64.powi(e),
            Scale::Binary(shift) => 1024f64.powi(shift as i32 / 10),
        };
        let sign = if self.negative { -1.0 } else { 1.0 };
        sign * base * scale
    }
}

/// `digits × 10^exp`, rounded up (away from zero, for the magnitude) to a whole number, exactly
/// for any number of digits. `None` when the result needs more than 38 digits.
fn decimal_milli(digits: &str, exp: i64) -> Option<i128> {
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(0);
    }
    if exp >= 0 {
        if digits.len() as i64 + exp > 38 {
            return None;
        }
        return digits
            .parse::<i128>()
            .ok()?
            .checked_mul(10i128.pow(exp as u32));
    }
    let cut = exp.unsigned_abs();
    if cut >= digits.len() as u64 {
        return Some(1); // non-zero, below one unit: rounded up to 1m
    }
    let (whole, dropped) = digits.split_at(digits.len() - cut as usize);
    if whole.len() > 38 {
        return None;
    }
    let up = dropped.bytes().any(|b| b != b'0');
    Some(whole.parse::<i128>().ok()? + i128::from(up))
}

/// The value of a quantity as f64, or why it is not one (what validation compares).
pub fn parse_approx(s: &str) -> Result<f64, String> {
    parse(s).map(|q| q.approx())
}

/// The magnitude, in milli-units, at which placement stops telling amounts apart: 2^80, about
/// 130,000 times the largest amount kube-scheduler computes in (an int64 of milli-cpu, or of
/// bytes), and small enough that a sum over every pod of a cluster, or an amount times a
/// replica count, stays exact in i128. Anything beyond is larger than any node or quota, which
/// is all placement needs to know of it.
pub const BEYOND_MILLI: i128 = 1 << 80;

/// Parses `"500m"`, `"2"`, `"1.5Gi"`, `"1e3"` into milli-units, surrounding whitespace ignored
/// (values read back from the cluster). `None` only when malformed: a valid quantity too large
/// for i128 (`1e36`, `99999999999999999999Ei`) is [`BEYOND_MILLI`], never "nothing", so it is
/// compared as larger than any node instead of fitting everywhere (issue 47 item 10).
pub fn parse_quantity(q: &str) -> Option<i128> {
    let q = parse(q.trim()).ok()?;
    Some(q.milli_saturating())
}

fn bad_suffix(s: &str, suffix: &str) -> String {
    let hint = match suffix {
        "gi" | "GB" | "gb" | "G" => " (memory: use Gi, e.g. 8Gi)",
        "mi" | "MB" | "mb" => " (memory: use Mi, e.g. 512Mi)",
        "Gib" | "GiB" => " (write Gi, not GiB)",
        "Mib" | "MiB" => " (write Mi, not MiB)",
        "K" => " (use k or Ki)",
        _ => "",
    };
    format!("{s:?} has an unknown unit {suffix:?}; use m, k, M, G, Ki, Mi, Gi…{hint}")
}

/// Formats milli-units for messages the way the API server prints quantities: `500m`, `2`,
/// `4Gi` for memory-like values that are whole binary multiples, else plain units.
pub fn format_quantity(resource: &str, milli: i128) -> String {
    if milli.abs() >= BEYOND_MILLI {
        let sign = if milli < 0 { "-" } else { "" };
        return format!("{sign}more than any int64 holds");
    }
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let units = milli / 1000;
    let memory_like = resource.contains("memory") || resource.contains("storage");
    if memory_like && units != 0 {
        for (suffix, shift) in [
            ("Ei", 60),
            ("Pi", 50),
            ("Ti", 40),
            ("Gi", 30),
            ("Mi", 20),
            ("Ki", 10),
        ] {
            if units % (1i128 << shift) == 0 {
                return format!("{}{suffix}", units >> shift);
            }
        }
    }
    units.to_string()
}

#[cfg(test)]
mod tests {
    use super::{parse_approx as parse, parse_quantity};

    #[test]
    fn valid_quantities() {
        assert_eq!(parse("4").unwrap(), 4.0);
        assert_eq!(parse("500m").unwrap(), 0.5);
        assert_eq!(parse("8Gi").unwrap(), 8.0 * 1024f64.powi(3));
        assert_eq!(parse("1e3").unwrap(), 1000.0);
        assert_eq!(parse("1.5").unwrap(), 1.5);
        assert_eq!(parse(".5").unwrap(), 0.5);
        assert_eq!(parse("-1").unwrap(), -1.0);
        assert_eq!(parse("2E-1").unwrap(), 0.2);
    }

    #[test]
    fn invalid_quantities() {
        for q in [
            "", "Gi", "8GB", "8 Gi", "1.2.3", "abc", "1e", "4cores", "8GiB", ".", " 4Gi", "4Gi ",
            "4\t", "1e1.5", "+", "--1",
        ] {
            assert!(parse(q).is_err(), "{q}");
        }
        assert!(parse("8GiB").unwrap_err().contains("not GiB"));
        assert!(
            parse(" 4Gi").unwrap_err().contains("spaces"),
            "{:?}",
            parse(" 4Gi")
        );
        // What the grammar allows: a trailing '.', a sign, an exponent.
        assert_eq!(parse("5.").unwrap(), 5.0);
        assert_eq!(parse("+1k").unwrap(), 1000.0);
        assert_eq!(parse("1E+2").unwrap(), 100.0);
    }

    #[test]
    fn nano_and_micro_suffixes_round_up_to_milli() {
        // metrics-server's CPU usage, e.g. "123456789n" = 124m as MilliValue rounds it.
        assert_eq!(parse_quantity("123456789n"), Some(124));
        assert_eq!(parse_quantity("500000000n"), Some(500));
        assert_eq!(parse_quantity("1500u"), Some(2));
    }

    #[test]
    fn milli_is_exact_and_reads_values_from_the_cluster_trimmed() {
        assert_eq!(parse_quantity("1.5Gi"), Some(1_610_612_736_000));
        assert_eq!(parse_quantity(" 2 "), Some(2000));
        assert_eq!(parse_quantity("-500m"), Some(-500));
        assert_eq!(parse_quantity("1e-3"), Some(1));
    }

    /// Issue 47 item 10: a valid quantity too large for exact milli-units is larger than any
    /// node, not nothing; tiny ones are still at least 1m; the grammar still decides validity.
    #[test]
    fn quantities_beyond_i128_saturate_instead_of_vanishing() {
        use super::BEYOND_MILLI;
        for q in [
            "1e40",
            "1e36",
            "99999999999999999999Ei",
            "9300000000000000000000000T",
        ] {
            assert_eq!(parse_quantity(q), Some(BEYOND_MILLI), "{q}");
        }
        assert_eq!(parse_quantity("-1e40"), Some(-BEYOND_MILLI));
        // Exact below the cap, including past int64 milli (where the scheduler's int64 ends).
        assert_eq!(
            parse_quantity("9223372036854776"),
            Some(9_223_372_036_854_776_000)
        );
        assert_eq!(parse_quantity("1e-400"), Some(1));
        assert_eq!(parse_quantity("0e-400"), Some(0));
        assert_eq!(
            parse_quantity(&format!("1.{}1", "0".repeat(60))),
            Some(1001)
        );
        assert_eq!(parse_quantity("1x"), None);
        assert_eq!(
            super::format_quantity("cpu", BEYOND_MILLI),
            "more than any int64 holds"
        );
    }
}
