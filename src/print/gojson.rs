//! JSON as Go's encoding/json writes it, which is what kubectl prints: `-o json` is
//! `json.MarshalIndent(obj, "", "    ")` (cli-runtime printers/json.go) and JSONPath prints maps
//! and lists with `json.Marshal`. Keys come sorted (serde_json's map is ordered, as Go sorts map
//! keys), and Go's HTML-safe escaping turns `<`, `>`, `&`, U+2028 and U+2029 into `\u…`
//! escapes. Those characters can only occur inside JSON strings, so replacing them in the
//! serialized text is exact.

use serde::Serialize;
use serde_json::Value;

fn go_escape(s: String) -> String {
    if !s.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `json.MarshalIndent(v, "", "    ")`.
pub fn indented(v: &Value) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    // Serializing a Value into memory cannot fail.
    let _ = v.serialize(&mut ser);
    go_escape(String::from_utf8(buf).unwrap_or_default())
}

/// `json.Marshal(v)`.
pub fn compact(v: &Value) -> String {
    go_escape(serde_json::to_string(v).unwrap_or_default())
}
