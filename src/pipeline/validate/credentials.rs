//! Literal credentials in a manifest: this tool's promise is that keys live in Secrets.
//!
//! These are warnings for `validate` (the API server stores a literal key without complaint);
//! `submit` refuses them unless `--allow-literal-credentials`. The heuristic must not fire on
//! values that only say where a credential lives: file paths, empty values, `$(VAR)` references,
//! and variables whose name says they hold a path (`*_FILE`, `*_PATH`, `*_DIR`,
//! `GOOGLE_APPLICATION_CREDENTIALS`, which Google's libraries read as a key *file* path).

use serde_json::{Map, Value};

use super::{Finding, Inputs, Report, Severity};
use crate::error::{Error, Result};
use crate::pipeline::manifest::join_index;

/// The rule id `submit` looks for.
pub const RULE: &str = "literal-credential";

/// Env var names whose value is a path to a credential, never the credential itself.
const PATH_NAMES: &[&str] = &["GOOGLE_APPLICATION_CREDENTIALS"];

/// `render` and `submit` refuse literal credentials (unless allowed): the API server would store
/// them, but this tool promises keys stay in Secrets. A job's spec is readable by anyone who may
/// `get tfjobs`, and lands in etcd, audit logs and rendered YAML.
pub fn refuse(report: &Report, allowed: bool) -> Result<()> {
    let found: Vec<String> = report
        .literal_credentials()
        .map(|f| match &f.location {
            Some(l) => format!("  {l}: {}", f.path),
            None => format!("  {}", f.path),
        })
        .collect();
    if found.is_empty() || allowed {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "refused: the job holds {} literal credential{}, and anyone who may read TFJobs in the namespace could read {}:\n{}\n\
         Store the key in a Secret (`kubectl tfjob secret create`) and reference it with valueFrom.secretKeyRef, \
         or pass --allow-literal-credentials to use the job as it is.",
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        if found.len() == 1 { "it" } else { "them" },
        found.join("\n")
    )))
}

/// Checks one env var with a literal value.
pub fn env_var(name: &str, value: &str, epath: &str, inputs: &Inputs, out: &mut Vec<Finding>) {
    let managed = inputs.gateway.key_env_names().iter().any(|n| n == name);
    if !managed && (names_a_path(name) || is_reference_or_path(value)) {
        return;
    }
    // Flags and counts are not secrets, whatever the variable is called; `$(VAR)` refers to
    // another variable.
    let trivial = value.chars().all(|c| c.is_ascii_digit())
        || ["true", "false", "yes", "no", "on", "off"]
            .iter()
            .any(|w| value.eq_ignore_ascii_case(w))
        || (value.starts_with("$(") && value.ends_with(')'));
    if !trivial && (managed || credential_name(name) || looks_like_key(value)) {
        let why = if credential_name(name) || managed {
            format!(
                "env var {name} holds a literal value ({}) and its name says it is a credential",
                mask(value)
            )
        } else {
            format!(
                "env var {name} holds what looks like an API key ({})",
                mask(value)
            )
        };
        let mut f = credential_finding(format!("{epath}.value"), why, inputs);
        if managed && inputs.will_inject {
            f.message.push_str("; it will be replaced by the Secret reference, but the key is in your file: remove it there and rotate it");
        }
        out.push(f);
    }
}

/// `command` and `args` items that look like a key (`--api_key=sk-…`).
pub fn command_args(c: &Map<String, Value>, cpath: &str, inputs: &Inputs, out: &mut Vec<Finding>) {
    for field in ["command", "args"] {
        if let Some(items) = c.get(field).and_then(Value::as_array) {
            for (i, item) in items.iter().enumerate() {
                if let Some(s) = item.as_str() {
                    let candidate = s.split_once('=').map(|(_, v)| v).unwrap_or(s);
                    if looks_like_key(candidate) {
                        out.push(credential_finding(
                            join_index(&format!("{cpath}.{field}"), i),
                            format!(
                                "{field} contains what looks like an API key ({})",
                                mask(candidate)
                            ),
                            inputs,
                        ));
                    }
                }
            }
        }
    }
}

/// A name that says its value is a location: `*_FILE`, `*_PATH`, `*_DIR`, and the well-known
/// path variables.
pub fn names_a_path(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_FILE", "_PATH", "_DIR"]
        .iter()
        .any(|s| upper.ends_with(s))
        || PATH_NAMES.contains(&upper.as_str())
}

/// Empty, a `$(VAR)` reference, or a file path: nothing secret in the text itself.
pub fn is_reference_or_path(value: &str) -> bool {
    let v = value.trim();
    v.is_empty()
        || (v.starts_with("$(") && v.ends_with(')'))
        || v.starts_with('/')
        || v.starts_with("./")
        || v.starts_with("../")
        || v.starts_with("~/")
}

fn credential_finding(path: String, message: String, inputs: &Inputs) -> Finding {
    Finding::new(Severity::Warning, RULE, path, message).with_hint(Some(format!(
        "keep keys out of manifests: `kubectl tfjob secret create {}` stores it, and the job reads it with valueFrom.secretKeyRef",
        inputs.gateway.secret_name
    )))
}

/// Env var names that say "I am a credential".
pub fn credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // Where a credential lives, or how to reach a service, is not itself a credential.
    let about = [
        "_FILE",
        "_PATH",
        "_DIR",
        "_URL",
        "_ENDPOINT",
        "_HOST",
        "_NAME",
        "_ENABLED",
    ];
    if about.iter().any(|s| upper.ends_with(s)) {
        return false;
    }
    let segs: Vec<&str> = upper.split(['_', '-', '.']).collect();
    let has = |s: &str| segs.contains(&s);
    has("TOKEN")
        || has("SECRET")
        || has("PASSWORD")
        || has("PASSWD")
        || has("APIKEY")
        || has("CREDENTIALS")
        || upper.ends_with("API_KEY")
        || upper.ends_with("ACCESS_KEY")
        || upper.ends_with("PRIVATE_KEY")
}

/// Values that look like an API key: known prefixes, or long high-entropy tokens.
pub fn looks_like_key(v: &str) -> bool {
    let v = v.trim();
    let prefixed = [
        "sk-",
        "sk_",
        "ghp_",
        "gho_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "hf_",
        "AKIA",
        "AIza",
    ]
    .iter()
    .any(|p| v.starts_with(p) && v.len() >= 20 && !v.contains(char::is_whitespace));
    if prefixed {
        return true;
    }
    if v.len() < 32 || v.contains("://") || v.starts_with('/') || v.contains(char::is_whitespace) {
        return false;
    }
    let token_chars = v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_+=/.".contains(c));
    let letters = v.chars().any(|c| c.is_ascii_alphabetic());
    let digits = v.chars().any(|c| c.is_ascii_digit());
    token_chars && letters && digits && entropy(v) >= 4.2
}

fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// `sk-…(51 chars)`: enough to recognize which key, never enough to use it.
pub fn mask(v: &str) -> String {
    let n = v.chars().count();
    let prefix: String = match v.find(['-', '_']) {
        Some(i) if i <= 4 => v[..=i].to_string(),
        _ => String::new(),
    };
    format!("{prefix}…({n} chars)")
}
