//! Kubernetes resource quantities (`resource.Quantity`): `4`, `500m`, `1.5`, `8Gi`, `1e3`.
//!
//! Only parsing and an approximate value: enough to say whether a quantity is valid, negative,
//! or a whole number (GPUs must be).
//!
//! The grammar is `resource.ParseQuantity`'s (k8s.io/apimachinery pkg/api/resource/quantity.go,
//! `parseQuantityString`): an optional sign, digits with at most one '.', then a suffix; nothing
//! is trimmed, so `" 4Gi"` is refused there, and by the CRD's pattern for the field.

/// The value of a quantity as f64, or why it is not one.
pub fn parse(s: &str) -> Result<f64, String> {
    if s.is_empty() {
        return Err("empty quantity".into());
    }
    if s.trim() != s || s.contains(char::is_whitespace) {
        return Err(format!(
            "{s:?} contains spaces; a quantity is written without any (e.g. \"{}\")",
            s.split_whitespace().collect::<String>()
        ));
    }
    let (sign, rest) = match s.as_bytes()[0] {
        b'-' => (-1.0, &s[1..]),
        b'+' => (1.0, &s[1..]),
        _ => (1.0, s),
    };
    let num_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (num, suffix) = rest.split_at(num_len);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(format!("{s:?} does not start with a number"));
    }
    let base: f64 = num.parse().map_err(|_| format!("{s:?}: bad number"))?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => {
            let exp = &e[1..];
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(bad_suffix(s, suffix));
            }
            let n: i32 = exp.parse().map_err(|_| bad_suffix(s, suffix))?;
            10f64.powi(n)
        }
        _ => return Err(bad_suffix(s, suffix)),
    };
    Ok(sign * base * scale)
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

#[cfg(test)]
mod tests {
    use super::parse;

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
}
