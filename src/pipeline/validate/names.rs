//! Object names and metadata as the API server and the operator's webhook check them.
//!
//! A TFJob's name must be a DNS-1035 label (the webhook, operator-behavior.md §1). With
//! `generateName` and no `name`, kube-apiserver generates the name before admission runs
//! (k8s.io/apiserver/pkg/registry/rest/create.go `BeforeCreate` calls the name generator;
//! k8s.io/apiserver/pkg/storage/names/generate.go cuts the prefix to 58 characters and appends
//! 5 random ones from `bcdfghjklmnpqrstvwxz2456789`), so the webhook sees `prefix + 5 chars`.

use serde_json::{Map, Value};

use super::{Finding, Severity};
use crate::pipeline::manifest::join_key;

/// Characters kube-apiserver appends to a `generateName` prefix.
pub const GENERATED_SUFFIX_LEN: usize = 5;
/// The longest prefix kept: 63 - 5.
pub const MAX_GENERATE_NAME_PREFIX: usize = 63 - GENERATED_SUFFIX_LEN;

/// The name a job will have, as far as it can be known offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobName {
    /// The name, or for `generateName` the prefix (cut as the API server cuts it) plus a
    /// stand-in suffix of the generated length.
    pub effective: String,
    /// The field the user wrote: `metadata.name` or `metadata.generateName`.
    pub path: &'static str,
    /// True for `generateName`.
    pub generated: bool,
}

impl JobName {
    /// Length of what the user wrote (for "shorten to N" hints).
    pub fn written_len(&self) -> usize {
        if self.generated {
            self.effective.len() - GENERATED_SUFFIX_LEN
        } else {
            self.effective.len()
        }
    }
}

/// The name kube-apiserver would give a job with this prefix, with `x`s standing for the random
/// characters (all of which are lowercase alphanumerics, like `x`).
pub fn generated_name(prefix: &str) -> String {
    let base: String = prefix.chars().take(MAX_GENERATE_NAME_PREFIX).collect();
    format!("{base}{}", "x".repeat(GENERATED_SUFFIX_LEN))
}

/// `metadata.name`, or the name `metadata.generateName` will produce.
pub fn job_name(meta: Option<&Map<String, Value>>) -> Option<JobName> {
    let meta = meta?;
    match (meta.get("name"), meta.get("generateName")) {
        (Some(Value::String(n)), _) if !n.is_empty() => Some(JobName {
            effective: n.clone(),
            path: "metadata.name",
            generated: false,
        }),
        (_, Some(Value::String(g))) if !g.is_empty() => Some(JobName {
            effective: generated_name(g),
            path: "metadata.generateName",
            generated: true,
        }),
        _ => None,
    }
}

/// The API server's "name or generateName is required", and the webhook's DNS-1035 rule
/// (validateTFJob step 1) on the name it will see.
pub fn object_name(meta: Option<&Map<String, Value>>, out: &mut Vec<Finding>) {
    let name = meta.and_then(|m| m.get("name"));
    if name.is_some_and(|n| !n.is_string() && !n.is_null()) {
        return; // schema reports the type
    }
    match job_name(meta) {
        None => out.push(
            Finding::new(
                Severity::Error,
                "name",
                "metadata.name",
                "missing: name or generateName is required",
            )
            .with_hint(Some(
                "set metadata.name, or metadata.generateName (a prefix the API server completes)"
                    .into(),
            )),
        ),
        Some(n) if !n.generated => {
            if let Err(why) = dns1035(&n.effective) {
                out.push(
                    Finding::new(
                        Severity::Error,
                        "webhook/name",
                        "metadata.name",
                        format!("{:?} is not a valid TFJob name: {why}", n.effective),
                    )
                    .with_hint(Some(format!("e.g. {:?}", suggest_name(&n.effective)))),
                );
            }
        }
        Some(n) => {
            let prefix = meta
                .and_then(|m| m.get("generateName"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            // ValidateObjectMeta checks the prefix itself as a DNS subdomain (trailing '-'
            // allowed), before the cut.
            let why = if prefix.len() > 253 {
                Err(format!(
                    "must be at most 253 characters, is {}",
                    prefix.len()
                ))
            } else {
                dns1035(&n.effective)
            };
            if let Err(why) = why {
                out.push(
                    Finding::new(
                        Severity::Error,
                        "webhook/name",
                        "metadata.generateName",
                        format!(
                            "{prefix:?} gives names like {:?}, which the operator's webhook refuses: {why}",
                            n.effective
                        ),
                    )
                    .with_hint(Some(format!("e.g. {:?}", format!("{}-", suggest_name(prefix))))),
                );
            }
        }
    }
}

/// `metadata` of the job (`top`) or of a pod template.
pub fn metadata(meta: Option<&Value>, path: &str, top: bool, out: &mut Vec<Finding>) {
    let Some(meta) = meta.and_then(Value::as_object) else {
        return; // object_name reports the missing name
    };
    if top
        && let Some(Value::String(ns)) = meta.get("namespace")
        && let Err(why) = dns1123_label(ns)
    {
        out.push(Finding::new(
            Severity::Error,
            "namespace",
            "metadata.namespace",
            format!("{ns:?} is not a valid namespace: {why}"),
        ));
    }
    // ValidateObjectMeta's finalizers (apimachinery validateFinalizerName): a standard name
    // or a qualified name with a prefix; the pods the operator makes carry the template's.
    for (i, f) in meta
        .get("finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(f) = f.as_str() else { continue };
        let standard = ["kubernetes", "orphan", "foregroundDeletion"].contains(&f);
        let qualified = f.contains('/') && qualified_name(f).is_ok();
        if !standard && !qualified {
            out.push(
                Finding::new(
                    Severity::Error,
                    "metadata-finalizer",
                    format!("{}[{i}]", join_key(path, "finalizers")),
                    format!("Invalid value: {f:?}: name is neither a standard finalizer name nor is it fully qualified"),
                )
                .with_hint(Some(format!("prefix it with a domain you own, e.g. example.com/{f}"))),
            );
        }
    }
    for (field, is_label) in [("labels", true), ("annotations", false)] {
        let fpath = join_key(path, field);
        let Some(map) = meta.get(field).and_then(Value::as_object) else {
            continue;
        };
        for (k, v) in map {
            let kpath = join_key(&fpath, k);
            // ValidateAnnotations checks `IsQualifiedName(strings.ToLower(k))`
            // (apimachinery/pkg/api/validation/objectmeta.go); label keys are taken as written.
            let checked = if is_label {
                k.clone()
            } else {
                k.to_lowercase()
            };
            if let Err(why) = qualified_name(&checked) {
                out.push(Finding::new(
                    Severity::Error,
                    "metadata-key",
                    kpath.clone(),
                    format!(
                        "{k:?} is not a valid {} key: {why}",
                        &field[..field.len() - 1]
                    ),
                ));
            }
            match v {
                Value::String(s) => {
                    if is_label && let Err(why) = label_value(s) {
                        out.push(Finding::new(
                            Severity::Error,
                            "metadata-value",
                            kpath,
                            format!("label value {s:?} is invalid: {why}"),
                        ));
                    }
                }
                Value::Bool(_) | Value::Number(_) | Value::Null => {
                    let (got, shown) = match v {
                        Value::Null => ("null (an empty value)".to_string(), String::new()),
                        Value::Bool(b) => (format!("boolean {b}"), b.to_string()),
                        other => (format!("number {other}"), other.to_string()),
                    };
                    out.push(
                        Finding::new(
                            Severity::Error,
                            "metadata-value",
                            kpath,
                            format!(
                                "{} values must be strings, got {got}: YAML reads it unquoted as a non-string",
                                &field[..field.len() - 1]
                            ),
                        )
                        .with_hint(Some(format!("quote it: {k}: \"{shown}\""))),
                    );
                }
                _ => {} // schema reports lists/maps
            }
        }
    }
}

/// Pod and Service names are `<job name>-<type>-<index>`; a Service name is a DNS-1035 label
/// (63 characters), so the operator's creates fail past that. `name` is the job's name, or for
/// `generateName` a stand-in of the generated length.
pub fn name_budget(name: &JobName, longest_pod: &str, out: &mut Vec<Finding>) {
    if dns1035(&name.effective).is_err() {
        return; // already reported
    }
    if longest_pod.len() > 63 {
        let cut = longest_pod.len() - 63;
        out.push(
            Finding::new(
                Severity::Error,
                "name-length",
                name.path,
                format!(
                    "too long for its pods: the operator names them <name>-<type>-<index>, and {longest_pod:?} is {} characters, over the 63 allowed for pod and service names",
                    longest_pod.len()
                ),
            )
            .with_hint(Some(format!(
                "shorten {} by at least {cut} character{} (to {} or fewer)",
                if name.generated { "metadata.generateName" } else { "the name" },
                if cut == 1 { "" } else { "s" },
                name.written_len().saturating_sub(cut)
            ))),
        );
    }
}

// The name rules themselves live in the bottom `names` module, so `cluster` and `gateway` use
// them without importing `validate`; re-exported here for the checks that read them as `names::`.
pub use crate::model::names::{
    dns1035, dns1123_label, dns1123_subdomain, env_var_name, label_value, qualified_name,
    suggest_name,
};
