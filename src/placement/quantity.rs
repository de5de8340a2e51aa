//! Resource quantities as exact milli-units (i128), after apimachinery's `resource.Quantity`:
//! decimal mantissa, then a binary (Ki…Ei), decimal (m, k, M…E) or exponent (e3) suffix.
//! The scheduler compares cpu in milli and the rest in units rounded up; milli keeps both exact.

/// Parses `"500m"`, `"2"`, `"1.5Gi"`, `"1e3"` into milli-units. `None` when malformed.
pub fn parse_quantity(q: &str) -> Option<i128> {
    let q = q.trim();
    let (neg, q) = match q.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, q.strip_prefix('+').unwrap_or(q)),
    };
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    if num.is_empty() || num.matches('.').count() > 1 {
        return None;
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits: String = format!("{int}{frac}");
    let mantissa: i128 = if digits.is_empty() {
        return None;
    } else {
        digits.parse().ok()?
    };
    // value = mantissa × 10^-frac.len() × mult; in milli: × 1000.
    let (num_mult, den_pow10): (i128, u32) = match suffix {
        "" => (1, 0),
        // nano and micro too (apimachinery suffix.go): metrics-server reports CPU in `n`.
        "n" => (1, 9),
        "u" => (1, 6),
        "m" => (1, 3),
        "k" => (1_000, 0),
        "M" => (1_000_000, 0),
        "G" => (1_000_000_000, 0),
        "T" => (1_000_000_000_000, 0),
        "P" => (1_000_000_000_000_000, 0),
        "E" => (1_000_000_000_000_000_000, 0),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        s if s.starts_with(['e', 'E']) => {
            let e: i32 = s[1..].parse().ok()?;
            if e >= 0 {
                (10i128.checked_pow(e as u32)?, 0)
            } else {
                (1, e.unsigned_abs())
            }
        }
        _ => return None,
    };
    let den = 10i128.checked_pow(frac.len() as u32 + den_pow10)?;
    let scaled = mantissa.checked_mul(num_mult)?.checked_mul(1000)?;
    // Round up like Quantity.MilliValue() does for sub-milli precision.
    let v = (scaled + den - 1) / den;
    Some(if neg { -v } else { v })
}

/// Formats milli-units for messages the way the API server prints quantities: `500m`, `2`,
/// `4Gi` for memory-like values that are whole binary multiples, else plain units.
pub fn format_quantity(resource: &str, milli: i128) -> String {
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
    use super::parse_quantity;

    #[test]
    fn nano_and_micro_suffixes_round_up_to_milli() {
        // metrics-server's CPU usage, e.g. "123456789n" = 124m as MilliValue rounds it.
        assert_eq!(parse_quantity("123456789n"), Some(124));
        assert_eq!(parse_quantity("500000000n"), Some(500));
        assert_eq!(parse_quantity("1500u"), Some(2));
    }
}
