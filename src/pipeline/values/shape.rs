//! Checking a values tree against the schema of [`Values`]: unknown keys with the closest known
//! key, wrong types with the expected type.

use serde_json::Value;

use super::Values;
use crate::model::names::closest;
use crate::pipeline::manifest::{self, join_index, join_key};

/// The schema of [`Values`] as JSON, built once per process when first needed.
fn values_schema() -> &'static Value {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| schemars::schema_for!(Values).to_value())
}

/// One problem found in one source.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
}

/// Checks a values tree against the [`Values`] schema: unknown keys (with the closest known key)
/// and wrong types (with the expected type). With `coerce`, scalars given where only a string is
/// accepted become strings, as `--set name=123` means the string "123".
pub fn check_shape(value: &mut Value, coerce: bool) -> Vec<Problem> {
    let schema = values_schema();
    let mut out = Vec::new();
    let walker = Walker { root: schema };
    walker.check(schema, value, "", coerce, &mut out);
    out
}

struct Walker<'a> {
    root: &'a Value,
}

impl<'a> Walker<'a> {
    /// Follows a local `$ref` (`#/$defs/Name`).
    fn resolve(&self, s: &'a Value) -> &'a Value {
        let mut s = s;
        for _ in 0..16 {
            match s.get("$ref").and_then(Value::as_str) {
                Some(r) => match r.strip_prefix('#').map(|p| self.root.pointer(p)) {
                    Some(Some(t)) => s = t,
                    _ => return s,
                },
                None => return s,
            }
        }
        s
    }

    /// The schema alternatives (anyOf / oneOf flattened), resolved.
    fn alternatives(&self, s: &'a Value) -> Vec<&'a Value> {
        let s = self.resolve(s);
        for k in ["anyOf", "oneOf"] {
            if let Some(alts) = s.get(k).and_then(Value::as_array) {
                return alts.iter().flat_map(|a| self.alternatives(a)).collect();
            }
        }
        vec![s]
    }

    fn check(
        &self,
        schema: &'a Value,
        v: &mut Value,
        path: &str,
        coerce: bool,
        out: &mut Vec<Problem>,
    ) {
        let alts = self.alternatives(schema);
        let Some(alt) = alts.iter().copied().find(|a| type_matches(a, v)) else {
            // `--set x=5` where x is a string: take the text.
            if coerce
                && !v.is_object()
                && !v.is_array()
                && !v.is_null()
                && alts.iter().any(|a| allows(a, "string"))
            {
                *v = Value::String(scalar_text(v));
                return;
            }
            let expected: Vec<String> = alts
                .iter()
                .flat_map(|a| types_of(a))
                .filter(|t| t != "null")
                .collect();
            let hint = (expected == ["string"] && (v.is_boolean() || v.is_number()))
                .then(|| format!("quote it: {}: \"{}\"", last_segment(path), scalar_text(v)));
            out.push(Problem {
                path: path.to_string(),
                message: format!("expected {}, got {}", expected.join(" or "), describe(v)),
                hint,
            });
            return;
        };
        match v {
            Value::Object(map) => {
                let props = alt.get("properties").and_then(Value::as_object);
                let additional = alt.get("additionalProperties");
                for (k, child) in map.iter_mut() {
                    let child_path = join_key(path, k);
                    if let Some(p) = props.and_then(|p| p.get(k)) {
                        self.check(p, child, &child_path, coerce, out);
                    } else if let Some(a) = additional.filter(|a| a.is_object()) {
                        self.check(a, child, &child_path, coerce, out);
                    } else if additional == Some(&Value::Bool(false)) {
                        let known: Vec<&str> = props
                            .map(|p| p.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        out.push(unknown_key(path, k, &known));
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = alt.get("items") {
                    for (i, item) in items.iter_mut().enumerate() {
                        // `--set l[1]=x` leaves l[0] open for another --set; holes left at the
                        // end are reported once, by `resolve`.
                        if coerce && item.is_null() {
                            continue;
                        }
                        self.check(item_schema, item, &join_index(path, i), coerce, out);
                    }
                }
            }
            _ => {}
        }
    }
}

fn types_of(s: &Value) -> Vec<String> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => vec![],
    }
}

fn allows(s: &Value, t: &str) -> bool {
    types_of(s).iter().any(|x| x == t)
}

fn type_matches(s: &Value, v: &Value) -> bool {
    let types = types_of(s);
    if types.is_empty() {
        return true; // no constraint
    }
    types.iter().any(|t| match t.as_str() {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => true,
    })
}

pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

pub(super) fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn last_segment(path: &str) -> &str {
    match manifest::parent_path(path) {
        Some(p) if !p.is_empty() => path[p.len()..].trim_start_matches('.'),
        _ => path,
    }
}

/// The top-level keys of [`Values`] (a template may not declare these).
pub fn builtin_keys() -> Vec<String> {
    values_schema()
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every key path of [`Values`], for suggestions across levels (`replicas` → `worker.replicas`).
fn all_value_paths() -> &'static Vec<String> {
    static PATHS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    PATHS.get_or_init(|| {
        let schema = values_schema();
        let w = Walker { root: schema };
        let mut out = Vec::new();
        let mut todo = vec![(schema, String::new())];
        while let Some((s, path)) = todo.pop() {
            for alt in w.alternatives(s) {
                if let Some(props) = alt.get("properties").and_then(Value::as_object) {
                    for (k, p) in props {
                        let child = join_key(&path, k);
                        out.push(child.clone());
                        if child.matches('.').count() < 3 {
                            todo.push((p, child));
                        }
                    }
                }
            }
        }
        out.sort();
        out
    })
}

/// A key as written without its case and separators: `worker_memory`, `worker-memory` and
/// `workerMemory` are one key.
fn folded(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

fn unknown_key(parent: &str, key: &str, siblings: &[&str]) -> Problem {
    let path = join_key(parent, key);
    // At the top, the flags' names are keys too (flagnames.rs): `gpu` is `gpus`.
    let mut candidates: Vec<&str> = siblings.to_vec();
    if parent.is_empty() {
        candidates.extend(super::flagnames::FLAG_KEYS.iter().map(|(k, _)| *k));
    }
    let want = folded(key);
    let suggestion = candidates
        .iter()
        .copied()
        .find(|c| folded(c) == want)
        .or_else(|| closest(key, candidates.iter().copied()))
        .map(|k| join_key(parent, k))
        .or_else(|| {
            // Not a typo of a sibling: maybe the key belongs elsewhere (`replicas` at the top).
            let lower = key.to_ascii_lowercase();
            all_value_paths()
                .iter()
                .find(|p| last_segment(p).to_ascii_lowercase() == lower)
                .cloned()
        });
    let listing = if siblings.is_empty() {
        String::new()
    } else {
        format!("; known keys here: {}", siblings.join(", "))
    };
    Problem {
        message: format!("unknown key `{key}`{listing}"),
        hint: suggestion.map(|s| format!("did you mean `{s}`?")),
        path,
    }
}
