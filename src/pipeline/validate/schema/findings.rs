//! How a JSON Schema error reads as a validation finding: the field path as kubectl names it,
//! the API server's wording for each kind of error, and a hint for a misspelled field.

use jsonschema::Validator;
use serde_json::Value;

use super::super::{Finding, Severity};
use crate::pipeline::manifest::{join_index, join_key};

/// Findings from a compiled validator.
pub fn check_with(validator: &Validator, obj: &Value) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for err in validator.iter_errors(obj) {
        let segs: Vec<String> = err
            .instance_path()
            .iter()
            .map(|s| match s {
                jsonschema::paths::LocationSegment::Property(p) => p.into_owned(),
                jsonschema::paths::LocationSegment::Index(i) => i.to_string(),
            })
            .collect();
        let path = pointer_to_path(obj, &segs);
        let mut found = Vec::new();
        if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } =
            err.kind()
        {
            // One finding per unknown key, placed on the key itself (its line is what to fix).
            // A set: a list made this quadratic in the keys (200,000 unknown keys ran for hours).
            let siblings: std::collections::HashSet<&str> = err
                .instance()
                .as_object()
                .map(|m| m.keys().map(String::as_str).collect())
                .unwrap_or_default();
            for key in unexpected {
                let hint = unknown_field_hint(key, &siblings);
                found.push(
                    Finding::new(
                        Severity::Error,
                        "schema",
                        join_key(&path, key),
                        format!("unknown field `{key}`"),
                    )
                    .with_hint(Some(hint)),
                );
            }
        } else {
            let instance = err.instance();
            let (message, hint) = describe_error(err.kind(), instance.as_ref(), &path);
            found.push(Finding::new(Severity::Error, "schema", path, message).with_hint(hint));
        }
        for f in found {
            // A set, not a scan of `out`: that was quadratic in the number of findings.
            if seen.insert((f.path.clone(), f.message.clone())) {
                out.push(f);
            }
        }
    }
    out
}

/// JSON-pointer segments to our field path format, using the document to tell list indexes
/// from map keys that happen to be numbers.
pub fn pointer_to_path(obj: &Value, segs: &[String]) -> String {
    let mut path = String::new();
    let mut cur = Some(obj);
    for s in segs {
        match cur {
            Some(Value::Array(a)) => {
                let i: usize = s.parse().unwrap_or(0);
                path = join_index(&path, i);
                cur = a.get(i);
            }
            other => {
                path = join_key(&path, s);
                cur = other.and_then(|v| v.get(s));
            }
        }
    }
    path
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "mapping",
    }
}

/// A description of the offending value: a short string is quoted (`a string "two"`, what the
/// user typed), one that looks like a key or is long only counted, since it may be a secret.
fn shown(v: &Value) -> String {
    match v {
        Value::Bool(_) | Value::Number(_) | Value::Null => format!("{} {v}", json_type(v)),
        Value::String(s)
            if s.chars().count() <= 40
                && !s.chars().any(char::is_control)
                && !crate::pipeline::validate::credentials::looks_like_key(s) =>
        {
            format!("a string {s:?}")
        }
        Value::String(s) => format!("a string ({} chars)", s.chars().count()),
        other => format!("a {}", json_type(other)),
    }
}

fn last_key(path: &str) -> String {
    match crate::pipeline::manifest::parent_path(path) {
        Some(p) if !p.is_empty() => path[p.len()..]
            .trim_start_matches('.')
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        _ => path.to_string(),
    }
}

fn describe_error(
    kind: &jsonschema::error::ValidationErrorKind,
    instance: &Value,
    path: &str,
) -> (String, Option<String>) {
    use jsonschema::error::ValidationErrorKind as K;
    match kind {
        K::Type { kind } => {
            let expected = match kind {
                jsonschema::error::TypeKind::Single(t) => t.to_string(),
                jsonschema::error::TypeKind::Multiple(ts) => ts
                    .iter()
                    .map(|t| t.to_string())
                    .filter(|t| t != "null")
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            let hint = (expected.contains("string")
                && matches!(instance, Value::Bool(_) | Value::Number(_)))
            .then(|| format!("quote it: {}: \"{}\"", last_key(path), instance));
            (
                format!("expected {expected}, got {}", shown(instance)),
                hint,
            )
        }
        K::AdditionalProperties { unexpected } => {
            let what = if unexpected.len() == 1 {
                "field"
            } else {
                "fields"
            };
            (
                format!("unknown {what} {}", quote_list(unexpected)),
                Some("remove it, or check its spelling and indentation".into()),
            )
        }
        K::Required { property } => (format!("missing required field {property}"), None),
        K::Maximum { limit } => (
            format!("{} is larger than the maximum {limit}", shown(instance)),
            None,
        ),
        K::Minimum { limit } => (
            format!("{} is smaller than the minimum {limit}", shown(instance)),
            None,
        ),
        K::Pattern { .. } => (format!("{} has an invalid format", shown(instance)), None),
        K::Enum { options } => (format!("must be one of {options}"), None),
        other => (
            // The JSON Schema keyword (`minLength`, `anyOf`, …), never a Rust structure.
            format!("does not match the schema's `{}` rule", other.keyword()),
            None,
        ),
    }
}

/// Fields users misspell most, for "did you mean"; the schema error does not carry the list of
/// allowed names, and these cover the TFJob-specific levels and the usual container fields.
const COMMON_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "runPolicy",
    "successPolicy",
    "tfReplicaSpecs",
    "enableDynamicWorker",
    "replicas",
    "template",
    "restartPolicy",
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
    "suspend",
    "managedBy",
    "minAvailable",
    "queue",
    "minResources",
    "priorityClass",
    "scheduleTimeoutSeconds",
    "containers",
    "initContainers",
    "volumes",
    "nodeSelector",
    "tolerations",
    "affinity",
    "serviceAccountName",
    "imagePullSecrets",
    "name",
    "image",
    "command",
    "args",
    "env",
    "envFrom",
    "resources",
    "limits",
    "requests",
    "ports",
    "volumeMounts",
    "workingDir",
    "imagePullPolicy",
    "securityContext",
    "valueFrom",
    "secretKeyRef",
    "value",
    "labels",
    "annotations",
    "containerPort",
    "schedulerName",
];

fn unknown_field_hint(key: &str, present: &std::collections::HashSet<&str>) -> String {
    let candidates = COMMON_FIELDS
        .iter()
        .copied()
        .filter(|c| *c != key && !present.contains(c));
    match crate::model::names::closest(key, candidates) {
        Some(c) => format!("did you mean `{c}`? (or check the indentation)"),
        None => "remove it, or check its spelling and indentation".into(),
    }
}

fn quote_list(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
