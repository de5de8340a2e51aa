//! Go's `fmt` `%v` of decoded JSON (`map[string]interface{}` and friends), which kubectl's
//! custom columns (`fmt.Sprintf("%v", …)` in cli-runtime printers/customcolumn.go) and
//! JSONPath's scalar results (`fmt.Fprint`) print: `map[k:v k2:v2]` with sorted keys,
//! `[a b]`, `<nil>`, and floats as `%g` with Go's exponent rule.

use serde_json::Value;

/// A scalar as `fmt.Fprint` prints it.
pub fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else if let Some(u) = n.as_u64() {
                u.to_string()
            } else {
                float(n.as_f64().unwrap_or_default())
            }
        }
        Value::Null => "<nil>".into(),
        other => value(other),
    }
}

/// `%v`.
pub fn value(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", value(v))).collect();
            format!("map[{}]", parts.join(" "))
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(value).collect();
            format!("[{}]", parts.join(" "))
        }
        other => scalar(other),
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest representation, in exponent form when
/// the exponent is < -4 or >= 21 (the shortest-digits threshold `%v` uses).
pub fn float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return match f {
            f if f.is_nan() => "NaN".into(),
            f if f == f64::INFINITY => "+Inf".into(),
            f if f == f64::NEG_INFINITY => "-Inf".into(),
            _ => "0".into(),
        };
    }
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..21).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_like_go() {
        assert_eq!(
            value(&json!({"b": [1, "x"], "a": null})),
            "map[a:<nil> b:[1 x]]"
        );
        assert_eq!(float(0.5), "0.5");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(1.5e-5), "1.5e-05");
        assert_eq!(float(123456.0), "123456");
    }
}
