//! Plain scalars as kubectl reads them: go-yaml v2's YAML 1.1 resolver, then Go's `encoding/json`.

use serde_json::{Number, Value};

/// Resolves an unquoted scalar as kubectl does, then turns it into the JSON kubectl would send.
///
/// The resolver is go-yaml v2.4's `resolve` (the copy vendored as sigs.k8s.io/yaml/goyaml.v2):
/// the first character picks what to try (sign or digit: int, then float; `.`: float; one of
/// `yYnNtTfFoO~`: the fixed table of YAML 1.1 booleans and nulls; anything else: a string).
/// The JSON step is Go's `encoding/json`, which writes an integral float as an integer
/// (`2.0` → `2`, `1e1` → `10`) and refuses infinities and NaN, so `.inf` is an error here too.
/// Returns the error message kubectl's conversion would give.
pub fn resolve_plain(s: &str) -> Result<Value, String> {
    Ok(match resolve_yaml11(s) {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::from(i),
        Scalar::Uint(u) => Value::from(u),
        Scalar::Float(f) => json_float(f).map_err(|what| {
            format!(
                "{s} is {what}, which JSON cannot carry; kubectl refuses it too (json: unsupported value); quote it if you meant the text"
            )
        })?,
        Scalar::Str => Value::String(s.to_string()),
    })
}

/// What go-yaml v2 makes of a plain scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str,
}

/// go-yaml v2.4 `resolve.go` for an untagged plain scalar.
pub fn resolve_yaml11(s: &str) -> Scalar {
    // The fixed table (`resolveMapList`).
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Scalar::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Scalar::Bool(false);
        }
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match s.as_bytes()[0] {
        // `strconv.ParseFloat(in)` as is: no `_` removal on this path.
        b'.' => match go_parse_float(s) {
            Some(f) if is_dot_float(s) => Scalar::Float(f),
            _ => Scalar::Str,
        },
        b'+' | b'-' | b'0'..=b'9' => {
            let plain = s.replace('_', "");
            if let Some(i) = go_parse_int_base0(&plain) {
                return i;
            }
            if is_yaml_style_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return Scalar::Float(f);
            }
            if let Some(rest) = plain.strip_prefix("0b") {
                return go_parse_int(rest, 2).unwrap_or(Scalar::Str);
            }
            if let Some(rest) = plain.strip_prefix("-0b") {
                return match go_parse_int(&format!("-{rest}"), 2) {
                    Some(Scalar::Int(i)) => Scalar::Int(i),
                    _ => Scalar::Str,
                };
            }
            Scalar::Str
        }
        _ => Scalar::Str,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)`: optional sign (ParseInt only),
/// then `0x`/`0X` hex, `0o`/`0O` octal, `0b`/`0B` binary, a leading `0` for octal, or decimal.
fn go_parse_int_base0(s: &str) -> Option<Scalar> {
    let (sign, body) = match s.as_bytes().first()? {
        b'+' => ("", &s[1..]),
        b'-' => ("-", &s[1..]),
        _ => ("", s),
    };
    let lower = body.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, &body[2..]),
        Some("0o") => (8, &body[2..]),
        Some("0b") => (2, &body[2..]),
        _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..]),
        _ => (10, body),
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let r = go_parse_int(&format!("{sign}{digits}"), radix)?;
    // ParseUint takes no sign at all.
    if matches!(r, Scalar::Uint(_)) && !s.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(r)
}

/// `strconv.ParseInt(s, radix, 64)`, falling back to `ParseUint` for values above i64::MAX.
fn go_parse_int(s: &str, radix: u32) -> Option<Scalar> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    if let Ok(i) = i64::from_str_radix(s, radix) {
        return Some(Scalar::Int(i));
    }
    if s.starts_with(['+', '-']) {
        return None;
    }
    u64::from_str_radix(s, radix).ok().map(Scalar::Uint)
}

/// go-yaml v2.4's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exp_ok
}

/// What `strconv.ParseFloat` accepts after a leading `.`: digits, then an optional exponent.
fn is_dot_float(s: &str) -> bool {
    s.starts_with('.') && is_yaml_style_float(s)
}

/// `strconv.ParseFloat(s, 64)` on text already known to be decimal: out of range is an error
/// (Go returns ErrRange), so the scalar stays a string.
fn go_parse_float(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's `encoding/json` for a float64: integral values below 1e21 are written without a
/// fraction (so the API server reads an integer); infinities and NaN are refused.
fn json_float(f: f64) -> Result<Value, &'static str> {
    if f.is_nan() {
        return Err("NaN");
    }
    if f.is_infinite() {
        return Err(if f > 0.0 { "+Inf" } else { "-Inf" });
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if f >= i64::MIN as f64 && f < i64::MAX as f64 {
            return Ok(Value::from(f as i64));
        }
        if f >= 0.0 && f < u64::MAX as f64 {
            return Ok(Value::from(f as u64));
        }
    }
    Ok(Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null))
}
