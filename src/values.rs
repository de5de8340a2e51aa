//! Template values: what a user can set, where it comes from, and precise errors when a key or
//! type is wrong.
//!
//! Sources, later wins: template defaults < `-f` values files < `--set` < dedicated flags.
//! Each source is checked on its own against the schema of [`Values`] (derived with schemars), so
//! an unknown key or a wrong type is reported with the file and line, or the `--set` argument,
//! it came from, and with the closest known key.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cluster::ConnectionOptions;
use crate::error::{Error, Result};
use crate::manifest::{self, Document, join_index, join_key};
use crate::render::RenderOptions;

/// Everything a built-in template can be shaped with. Every field is always present in the
/// template context (unset ones as `none`), so templates can run in strict-undefined mode and a
/// typo in a template is an error rather than an empty field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Values {
    /// The TFJob name (a DNS-1035 label).
    pub name: Option<String>,
    /// The namespace; `-n` wins. Left out of the output when unset.
    pub namespace: Option<String>,
    /// Container image for every role (a role's own `image` wins).
    pub image: Option<String>,
    /// Command for every role's tensorflow container.
    pub command: Option<Vec<String>>,
    /// Args for every role's tensorflow container.
    pub args: Option<Vec<String>>,
    /// Labels for the TFJob and its pods.
    pub labels: BTreeMap<String, String>,
    /// Annotations for the TFJob.
    pub annotations: BTreeMap<String, String>,
    /// Env vars for every tensorflow container (use a Secret for credentials).
    pub env: BTreeMap<String, String>,
    /// Replica restartPolicy for every role: Always, OnFailure, Never or ExitCode.
    pub restart_policy: Option<String>,
    /// Parameter servers.
    pub ps: Role,
    /// Workers.
    pub worker: Role,
    /// The chief (MultiWorkerMirroredStrategy coordinator), 0 or 1.
    pub chief: Role,
    /// The evaluator.
    pub evaluator: Role,
    /// runPolicy.
    pub run_policy: RunPolicyValues,
    /// successPolicy: "" or AllWorkers.
    pub success_policy: Option<String>,
    // Pod settings for every role; a role's own entries are added to (lists, maps) or win over
    // (single values) these.
    /// nodeSelector for every role's pods.
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations for every role's pods.
    pub tolerations: Vec<k8s_openapi::api::core::v1::Toleration>,
    /// Pod volumes for every role (see --pvc, --config-map, --secret-volume, --empty-dir).
    pub volumes: Vec<k8s_openapi::api::core::v1::Volume>,
    /// Mounts in every role's tensorflow container.
    pub volume_mounts: Vec<k8s_openapi::api::core::v1::VolumeMount>,
    /// Names of Secrets holding registry credentials (pod imagePullSecrets).
    pub image_pull_secrets: Vec<String>,
    /// The pods' ServiceAccount (serviceAccountName).
    pub service_account: Option<String>,
    /// The pods' PriorityClass (pod priorityClassName, used by kube-scheduler for preemption);
    /// not runPolicy.schedulingPolicy.priorityClass, which is the gang PodGroup's.
    pub priority_class_name: Option<String>,
    /// Env vars read from Secrets: NAME → "secret/key" (e.g. HF_TOKEN: hf/token).
    pub env_from_secret: BTreeMap<String, String>,
    /// Values a user template declares in its header (`values:`), by top-level key; merged into
    /// the template context beside the keys above.
    #[serde(skip)]
    pub extra: Map<String, Value>,
}

/// The type of a value a user template declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclaredType {
    String,
    Integer,
    Number,
    Boolean,
    List,
    Map,
    Any,
}

impl DeclaredType {
    pub const NAMES: [&'static str; 7] = [
        "string", "integer", "number", "boolean", "list", "map", "any",
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            "list" => Self::List,
            "map" => Self::Map,
            "any" => Self::Any,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn accepts(self, v: &Value) -> bool {
        match self {
            Self::String => v.is_string(),
            Self::Integer => v.is_i64() || v.is_u64(),
            Self::Number => v.is_number(),
            Self::Boolean => v.is_boolean(),
            Self::List => v.is_array(),
            Self::Map => v.is_object(),
            Self::Any => true,
        }
    }
}

/// One value a user template declares in its header:
/// `values: {data.pvc: {type: string, default: datasets, description: …}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    /// Dotted path, e.g. `data.pvc`; its first segment is not a built-in key.
    pub path: String,
    pub kind: DeclaredType,
    /// Null when the header gives none.
    pub default: Value,
    pub description: String,
}

/// Removes the declared paths from one source tree (so the built-in schema does not call them
/// unknown) and returns what was there, type-checked. `coerce` as in [`check_shape`].
fn take_declared(
    tree: &mut Value,
    declared: &[Declared],
    coerce: bool,
    problems: &mut Vec<Problem>,
) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for d in declared {
        let segs: Vec<&str> = d.path.split('.').collect();
        let Some(v) = take_path(tree, &segs) else {
            continue;
        };
        let v = match v {
            v if d.kind.accepts(&v) || v.is_null() => v,
            v if coerce && d.kind == DeclaredType::String && !v.is_object() && !v.is_array() => {
                Value::String(scalar_text(&v))
            }
            v => {
                problems.push(Problem {
                    path: d.path.clone(),
                    message: format!(
                        "expected {} (declared by the template), got {}",
                        d.kind.name(),
                        describe(&v)
                    ),
                    hint: None,
                });
                continue;
            }
        };
        found.push((d.path.clone(), v));
    }
    found
}

/// Removes `segs` from `tree`, dropping parents left empty. Depth is the declared path's.
fn take_path(tree: &mut Value, segs: &[&str]) -> Option<Value> {
    let (first, rest) = segs.split_first()?;
    let map = tree.as_object_mut()?;
    if rest.is_empty() {
        return map.remove(*first);
    }
    let child = map.get_mut(*first)?;
    let v = take_path(child, rest);
    if child.as_object().is_some_and(Map::is_empty) {
        map.remove(*first);
    }
    v
}

/// Per-role settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Role {
    /// Number of pods (≥ 0); 0 leaves the role out.
    pub replicas: Option<i64>,
    pub image: Option<String>,
    pub command: Option<Vec<String>>,
    pub args: Option<Vec<String>>,
    /// CPU limit (also the request unless cpuRequest is set), e.g. 4 or 500m.
    pub cpu: Option<Qty>,
    /// Memory limit (also the request unless memoryRequest is set), e.g. 8Gi.
    pub memory: Option<Qty>,
    /// CPU request, when it should be lower than the limit.
    pub cpu_request: Option<Qty>,
    /// Memory request, when it should be lower than the limit.
    pub memory_request: Option<Qty>,
    /// nvidia.com/gpu per pod (the flag is --gpus); request = limit, as Kubernetes requires for
    /// extended resources.
    pub gpus: Option<i64>,
    pub env: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<k8s_openapi::api::core::v1::Toleration>,
    /// Overrides the top-level restartPolicy for this role.
    pub restart_policy: Option<String>,
    pub volumes: Vec<k8s_openapi::api::core::v1::Volume>,
    pub volume_mounts: Vec<k8s_openapi::api::core::v1::VolumeMount>,
    pub image_pull_secrets: Vec<String>,
    pub service_account: Option<String>,
    pub priority_class_name: Option<String>,
    pub env_from_secret: BTreeMap<String, String>,
}

/// runPolicy settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct RunPolicyValues {
    pub clean_pod_policy: Option<String>,
    pub backoff_limit: Option<i64>,
    pub active_deadline_seconds: Option<i64>,
    pub ttl_seconds_after_finished: Option<i64>,
    pub suspend: Option<bool>,
    pub scheduling_policy: SchedulingValues,
}

/// runPolicy.schedulingPolicy settings (gang scheduling).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct SchedulingValues {
    pub min_available: Option<i64>,
    pub queue: Option<String>,
    /// The gang PodGroup's PriorityClass (for Volcano / scheduler-plugins); the pods' own priority
    /// is `priorityClassName`.
    pub priority_class: Option<String>,
    pub schedule_timeout_seconds: Option<i64>,
}

/// A resource quantity as users write it: `4`, `0.5`, `500m` or `8Gi`. Numbers are kept as
/// their text; whether the text is a valid quantity is checked by validation on the result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Qty(pub String);

impl<'de> Deserialize<'de> for Qty {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(Qty(s)),
            Value::Number(n) => Ok(Qty(n.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "expected a quantity like 4, 500m or 8Gi, got {other}"
            ))),
        }
    }
}

impl JsonSchema for Qty {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Quantity".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["string", "number"]})
    }
}

impl fmt::Display for Qty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

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

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

fn scalar_text(v: &Value) -> String {
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

fn unknown_key(parent: &str, key: &str, siblings: &[&str]) -> Problem {
    let path = join_key(parent, key);
    let suggestion = closest(key, siblings.iter().copied())
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

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let w = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (c, strsim::jaro_winkler(&w, &c.to_ascii_lowercase())))
        .filter(|(_, score)| *score >= 0.8)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// Deep-merges `over` into `base`: mappings merge key by key, anything else is replaced.
pub fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// Types a `--set` value the way Helm does: `true`, `false`, `null` and integers are typed,
/// everything else is a string. (Full YAML 1.1 resolution would turn `--set name=n` or
/// `--set queue=on` into booleans, which no one typing a flag means.)
fn set_scalar(raw: &str) -> Value {
    match raw {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        _ => match raw.parse::<i64>() {
            // "007" and "+1" stay strings (image tags, versions).
            Ok(n) if raw == "0" || !raw.starts_with(['+', '0']) => Value::from(n),
            _ => Value::String(raw.to_string()),
        },
    }
}

/// Nesting of one `--set` key (`a.b[0].c` is 4 levels). Helm stops at 30 nested name levels
/// (helm/helm pkg/strvals/parser.go, `maxNestedNameLevel`); deeper keys are never real values,
/// and a key with 60,000 segments must not build a tree deep enough to overflow the stack.
pub const MAX_SET_DEPTH: usize = 30;
/// Largest list index `--set a[N]=x` accepts; the list is padded up to it.
pub const MAX_SET_INDEX: usize = 1000;

/// How a `--set`-style argument's values are read, in Helm's flags: `--set` types `true`,
/// `false`, `null` and integers; `--set-string` keeps text; `--set-file` reads the value from a
/// file (through the bounded reader).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetArg {
    Typed(String),
    String(String),
    File(String),
}

impl SetArg {
    pub fn text(&self) -> &str {
        match self {
            SetArg::Typed(s) | SetArg::String(s) | SetArg::File(s) => s,
        }
    }
    /// The argument as the user typed it, for messages.
    pub fn flag(&self) -> String {
        let name = match self {
            SetArg::Typed(_) => "--set",
            SetArg::String(_) => "--set-string",
            SetArg::File(_) => "--set-file",
        };
        format!("{name} {}", self.text())
    }
}

const HELM_FORMS: &str = "write KEY=VALUE, e.g. --set worker.replicas=4, a list as --set command={python,train.py}, one element as --set command[1]=train.py, a literal comma or dot as \\, or \\.";

/// Parses one `--set` argument (`a.b=1,c[0]=x,l={a,b}`, `\,` for a literal comma) into a values
/// tree, typing values as [`set_scalar`] does.
pub fn parse_set(arg: &str) -> std::result::Result<Value, String> {
    let mut root = Value::Object(Map::new());
    parse_set_into(&mut root, &SetArg::Typed(arg.to_string()))?;
    Ok(root)
}

/// Applies one `--set`/`--set-string`/`--set-file` argument onto `root`, as Helm does when several
/// are given: `--set a[0]=x --set a[1]=y` makes `[x, y]`.
pub fn parse_set_into(root: &mut Value, arg: &SetArg) -> std::result::Result<(), String> {
    for (segs, v) in parse_pairs(arg)? {
        set_segs(root, &segs, v);
    }
    Ok(())
}

/// The (path, value) pairs of one argument, files read.
fn parse_pairs(arg: &SetArg) -> std::result::Result<Vec<(Vec<Seg>, Value)>, String> {
    let mut out = Vec::new();
    for pair in split_pairs(arg.text()) {
        if pair.is_empty() {
            continue;
        }
        let Some((key, raw)) = split_key_value(&pair) else {
            return Err(format!("`{pair}` is not KEY=VALUE; {HELM_FORMS}"));
        };
        let value = match arg {
            SetArg::File(_) => {
                let (_, text) = crate::input::read_text(&raw, crate::input::SET_FILE)
                    .map_err(|e| e.to_string())?;
                Value::String(text)
            }
            SetArg::Typed(_) | SetArg::String(_) => {
                let typed = matches!(arg, SetArg::Typed(_));
                let one = |s: &str| {
                    if typed {
                        set_scalar(s)
                    } else {
                        Value::String(s.to_string())
                    }
                };
                match raw.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                    Some("") => Value::Array(Vec::new()),
                    Some(items) => {
                        Value::Array(split_unescaped(items, ',').iter().map(|s| one(s)).collect())
                    }
                    None => one(&unescape(&raw)),
                }
            }
        };
        out.push((parse_set_key(key.trim())?, value));
    }
    Ok(out)
}

/// Splits at the first unescaped `=`.
fn split_key_value(pair: &str) -> Option<(String, String)> {
    let mut escaped = false;
    for (i, c) in pair.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '=' if !escaped => return Some((pair[..i].to_string(), pair[i + 1..].to_string())),
            _ => escaped = false,
        }
    }
    None
}

/// Splits an argument into `KEY=VALUE` pairs at unescaped commas outside `{…}` lists. Escapes
/// other than `\,` are kept for the key and value parsers.
fn split_pairs(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut depth = 0usize;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let cur = out.last_mut().expect("never empty");
                cur.push('\\');
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '{' => {
                depth += 1;
                out.last_mut().expect("never empty").push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                out.last_mut().expect("never empty").push(c);
            }
            ',' if depth == 0 => out.push(String::new()),
            _ => out.last_mut().expect("never empty").push(c),
        }
    }
    out
}

/// Removes the escapes of `\,`, `\.`-free text: what a scalar `--set` value means.
fn unescape(s: &str) -> String {
    split_unescaped(s, ',').join(",")
}

/// Splits at unescaped `sep`; `\sep` becomes `sep`, `\\` becomes `\`, other escapes are kept.
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && matches!(chars.peek(), Some(&n) if n == sep || n == '\\' || n == ',' || n == '=')
        {
            let n = chars.next().expect("peeked");
            out.last_mut().expect("never empty").push(n);
        } else if c == sep {
            out.push(String::new());
        } else {
            out.last_mut().expect("never empty").push(c);
        }
    }
    out
}

/// Path segments of a `--set` key: `a.b[2].c` → [Key a, Key b, Index 2, Key c].
enum Seg {
    Key(String),
    Index(usize),
}

fn parse_set_key(key: &str) -> std::result::Result<Vec<Seg>, String> {
    let mut segs = Vec::new();
    let parts = split_unescaped(key, '.');
    if parts.len() > MAX_SET_DEPTH {
        return Err(format!(
            "the key has {} levels; at most {MAX_SET_DEPTH} are allowed (as in Helm)",
            parts.len()
        ));
    }
    for part in parts {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part.as_str(), ""),
        };
        if name.is_empty() {
            return Err(format!("`{key}` has an empty key segment; {HELM_FORMS}"));
        }
        segs.push(Seg::Key(name.to_string()));
        while let Some(r) = rest.strip_prefix('[') {
            let end = r
                .find(']')
                .ok_or_else(|| format!("`{key}`: missing `]`; {HELM_FORMS}"))?;
            let idx: usize = r[..end].parse().map_err(|_| {
                format!("`{key}`: a list index must be a number ≥ 0, as in --set command[0]=python")
            })?;
            if idx > MAX_SET_INDEX {
                return Err(format!(
                    "`{key}`: list index {idx} is too large (at most {MAX_SET_INDEX})"
                ));
            }
            segs.push(Seg::Index(idx));
            rest = &r[end + 1..];
        }
        if !rest.is_empty() {
            return Err(format!("`{key}`: unexpected `{rest}`; {HELM_FORMS}"));
        }
        if segs.len() > MAX_SET_DEPTH {
            return Err(format!(
                "the key nests deeper than {MAX_SET_DEPTH} levels (as in Helm)"
            ));
        }
    }
    Ok(segs)
}

fn set_path(root: &mut Value, key: &str, value: Value) -> std::result::Result<(), String> {
    let segs = parse_set_key(key.trim())?;
    set_segs(root, &segs, value);
    Ok(())
}

fn set_segs(root: &mut Value, segs: &[Seg], value: Value) {
    let mut cur = root;
    for seg in segs {
        cur = match seg {
            Seg::Key(k) => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                cur.as_object_mut()
                    .expect("made an object")
                    .entry(k.clone())
                    .or_insert(Value::Null)
            }
            Seg::Index(i) => {
                if !cur.is_array() {
                    *cur = Value::Array(Vec::new());
                }
                let a = cur.as_array_mut().expect("made an array");
                if a.len() <= *i {
                    a.resize(*i + 1, Value::Null);
                }
                &mut a[*i]
            }
        };
    }
    *cur = value;
}

/// Path segments of a declared (dotted, no indexes) path.
fn dotted(path: &str) -> Vec<Seg> {
    path.split('.').map(|k| Seg::Key(k.to_string())).collect()
}

/// The first list element still unset after every `--set` (`command[1]=x` without `[0]`).
fn first_hole(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::Object(m) => m
            .iter()
            .find_map(|(k, c)| first_hole(c, &join_key(path, k))),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, c)| {
            if c.is_null() {
                Some(join_index(path, i))
            } else {
                first_hole(c, &join_index(path, i))
            }
        }),
        _ => None,
    }
}

/// Splits `KEY=VALUE` for --label/--annotation/--env.
fn kv(flag: &str, s: &str) -> Result<(String, String)> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| Error::Usage(format!("{flag} {s:?}: expected KEY=VALUE")))
}

/// The dedicated flags as a values tree (the last and strongest source).
pub fn flags_overlay(kube: &ConnectionOptions, args: &RenderOptions) -> Result<Value> {
    let mut v = serde_json::json!({});
    let o = v.as_object_mut().unwrap();
    let mut put = |path: &str, val: Value| {
        // Paths here are fixed and valid, so set_path cannot fail.
        let _ = set_path_obj(o, path, val);
    };
    if let Some(n) = &args.name {
        put("name", n.clone().into());
    }
    if let Some(n) = &kube.namespace {
        put("namespace", n.clone().into());
    }
    if let Some(i) = &args.image {
        put("image", i.clone().into());
    }
    for (flag, role) in [
        (args.ps, "ps"),
        (args.workers, "worker"),
        (args.chief, "chief"),
        (args.evaluator, "evaluator"),
    ] {
        if let Some(n) = flag {
            put(&format!("{role}.replicas"), n.into());
        }
    }
    for role in ["worker", "chief"] {
        if let Some(g) = args.gpus {
            put(&format!("{role}.gpus"), g.into());
        }
        if let Some(c) = &args.pod.cpu_request {
            put(&format!("{role}.cpuRequest"), c.clone().into());
        }
        if let Some(m) = &args.pod.memory_request {
            put(&format!("{role}.memoryRequest"), m.clone().into());
        }
        if let Some(c) = &args.cpu {
            put(&format!("{role}.cpu"), c.clone().into());
        }
        if let Some(m) = &args.memory {
            put(&format!("{role}.memory"), m.clone().into());
        }
    }
    for (flag, list, key) in [
        ("--label", &args.labels, "labels"),
        ("--annotation", &args.annotations, "annotations"),
        ("--env", &args.env, "env"),
        ("--node-selector", &args.pod.node_selector, "nodeSelector"),
        (
            "--env-from-secret",
            &args.pod.env_from_secret,
            "envFromSecret",
        ),
    ] {
        for s in list {
            let (k, val) = kv(flag, s)?;
            let map = o
                .entry(key)
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .unwrap();
            map.insert(k, val.into());
        }
    }
    let mut put = |path: &str, val: Value| {
        let _ = set_path_obj(o, path, val);
    };
    if let Some(p) = &args.restart_policy {
        put("restartPolicy", p.clone().into());
    }
    if let Some(p) = &args.clean_pod_policy {
        put("runPolicy.cleanPodPolicy", p.clone().into());
    }
    if let Some(n) = args.backoff_limit {
        put("runPolicy.backoffLimit", n.into());
    }
    if let Some(n) = args.active_deadline_seconds {
        put("runPolicy.activeDeadlineSeconds", n.into());
    }
    if let Some(n) = args.ttl_seconds_after_finished {
        put("runPolicy.ttlSecondsAfterFinished", n.into());
    }
    if let Some(p) = &args.success_policy {
        put("successPolicy", p.clone().into());
    }
    if let Some(q) = &args.queue {
        put("runPolicy.schedulingPolicy.queue", q.clone().into());
    }
    if let Some(p) = &args.priority_class {
        put("runPolicy.schedulingPolicy.priorityClass", p.clone().into());
    }
    if !args.command.is_empty() {
        put("command", args.command.clone().into());
    }
    if let Some(s) = &args.pod.service_account {
        put("serviceAccount", s.clone().into());
    }
    if let Some(p) = &args.pod.pod_priority_class {
        put("priorityClassName", p.clone().into());
    }
    let pod = pod_flags(&args.pod)?;
    for (key, list) in pod {
        if !list.is_empty() {
            o.insert(key.into(), Value::Array(list));
        }
    }
    Ok(v)
}

/// A volume name from what it mounts: DNS-1123 label characters, at most 63.
fn volume_name(prefix: &str, source: &str) -> String {
    let mut name: String = format!("{prefix}-{source}")
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(63)
        .collect();
    while name.ends_with('-') {
        name.pop();
    }
    name
}

fn flag_error(flag: &str, arg: &str, form: &str) -> Error {
    Error::Usage(format!("{flag} {arg:?}: expected {form}"))
}

/// `/path` check for mount flags: the kubelet needs an absolute path.
fn mount_path(flag: &str, arg: &str, path: &str, form: &str) -> Result<String> {
    if !path.starts_with('/') {
        return Err(flag_error(
            flag,
            arg,
            &format!("{form} with an absolute mount path"),
        ));
    }
    Ok(path.to_string())
}

/// The list-valued pod flags as values entries: volumes, volumeMounts, tolerations,
/// imagePullSecrets.
fn pod_flags(a: &crate::render::PodOptions) -> Result<Vec<(&'static str, Vec<Value>)>> {
    use serde_json::json;
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    let mut add = |name: String, volume: Value, path: String, read_only: bool| {
        let mut name = name;
        let mut n = 2;
        let base = name.clone();
        while volumes.iter().any(|v: &Value| v["name"] == name.as_str()) {
            name = format!("{}-{n}", base.chars().take(60).collect::<String>());
            n += 1;
        }
        let mut vol = json!({"name": name});
        merge(&mut vol, volume);
        volumes.push(vol);
        let mut m = json!({"name": name, "mountPath": path});
        if read_only {
            m["readOnly"] = true.into();
        }
        mounts.push(m);
    };
    for arg in &a.pvc {
        let form = "CLAIM:/mount/path[:ro]";
        let mut parts = arg.splitn(3, ':');
        let (Some(claim), Some(path)) = (parts.next(), parts.next()) else {
            return Err(flag_error("--pvc", arg, form));
        };
        let ro = match parts.next() {
            None => false,
            Some("ro") => true,
            Some(_) => return Err(flag_error("--pvc", arg, form)),
        };
        if claim.is_empty() {
            return Err(flag_error("--pvc", arg, form));
        }
        let path = mount_path("--pvc", arg, path, form)?;
        let mut src = json!({"claimName": claim});
        if ro {
            src["readOnly"] = true.into();
        }
        add(
            volume_name("pvc", claim),
            json!({"persistentVolumeClaim": src}),
            path,
            ro,
        );
    }
    for (flag, list, prefix) in [
        ("--config-map", &a.config_map, "cm"),
        ("--secret-volume", &a.secret_volume, "secret"),
    ] {
        for arg in list {
            let form = "NAME:/mount/path";
            let Some((name, path)) = arg.split_once(':').filter(|(n, _)| !n.is_empty()) else {
                return Err(flag_error(flag, arg, form));
            };
            let path = mount_path(flag, arg, path, form)?;
            let src = if prefix == "cm" {
                json!({"configMap": {"name": name}})
            } else {
                json!({"secret": {"secretName": name}})
            };
            // Config and credentials are read, never written.
            add(volume_name(prefix, name), src, path, true);
        }
    }
    for (i, arg) in a.empty_dir.iter().enumerate() {
        let form = "/mount/path[:SIZE]";
        let (path, size) = match arg.split_once(':') {
            Some((p, s)) if !s.is_empty() => (p, Some(s)),
            Some(_) => return Err(flag_error("--empty-dir", arg, form)),
            None => (arg.as_str(), None),
        };
        let path = mount_path("--empty-dir", arg, path, form)?;
        let src = match size {
            Some(s) => json!({"emptyDir": {"sizeLimit": s}}),
            None => json!({"emptyDir": {}}),
        };
        let name = if path == "/dev/shm" {
            "dshm".to_string()
        } else {
            format!("scratch-{i}")
        };
        add(name, src, path, false);
    }
    let mut tolerations = Vec::new();
    for arg in &a.toleration {
        let form = "KEY[=VALUE]:EFFECT, e.g. nvidia.com/gpu:NoSchedule or dedicated=ml:NoSchedule";
        let Some((kv, effect)) = arg.rsplit_once(':') else {
            return Err(flag_error("--toleration", arg, form));
        };
        // validation.go validateTolerations: the effects a taint can have.
        if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
            return Err(Error::Usage(format!(
                "--toleration {arg:?}: effect {effect:?} is not NoSchedule, PreferNoSchedule or NoExecute"
            )));
        }
        let t = match kv.split_once('=') {
            Some((k, v)) => json!({"key": k, "operator": "Equal", "value": v, "effect": effect}),
            None => json!({"key": kv, "operator": "Exists", "effect": effect}),
        };
        tolerations.push(t);
    }
    let secrets = a
        .image_pull_secret
        .iter()
        .map(|s| Value::from(s.clone()))
        .collect();
    Ok(vec![
        ("volumes", volumes),
        ("volumeMounts", mounts),
        ("tolerations", tolerations),
        ("imagePullSecrets", secrets),
    ])
}

fn set_path_obj(
    o: &mut Map<String, Value>,
    path: &str,
    val: Value,
) -> std::result::Result<(), String> {
    let mut tmp = Value::Object(std::mem::take(o));
    let r = set_path(&mut tmp, path, val);
    if let Value::Object(m) = tmp {
        *o = m;
    }
    r
}

/// Formats problems of a values file with positions.
fn file_problems(doc: &Document, problems: Vec<Problem>, out: &mut Vec<String>) {
    let mut located: Vec<_> = problems
        .into_iter()
        .map(|p| (doc.positions.locate(&p.path), p))
        .collect();
    // In file order, as the user reads the file.
    located.sort_by_key(|(l, _)| l.as_ref().map(|l| (l.line, l.column)));
    for (loc, p) in located {
        let origin = loc
            .map(|l| l.to_string())
            .unwrap_or_else(|| doc.file.clone());
        out.push(format_problem(&origin, &p));
    }
}

fn format_problem(origin: &str, p: &Problem) -> String {
    let mut s = format!("{origin}: {}: {}", p.path, p.message);
    if let Some(h) = &p.hint {
        s.push_str(&format!("\n  fix: {h}"));
    }
    s
}

/// Merges every source into typed [`Values`]. All problems of all sources are reported together.
pub fn resolve(
    defaults: &Value,
    files: &[Document],
    set: &[SetArg],
    flags: Value,
) -> Result<Values> {
    resolve_with(defaults, &[], files, set, flags)
}

/// [`resolve`] for a template that declares its own values: those keys are accepted by values
/// files and `--set`, checked against their declared types, and passed to the template.
pub fn resolve_with(
    defaults: &Value,
    declared: &[Declared],
    files: &[Document],
    set: &[SetArg],
    flags: Value,
) -> Result<Values> {
    let mut merged = defaults.clone();
    let mut errors = Vec::new();
    let mut extra = Value::Object(Map::new());
    for d in declared {
        set_segs(&mut extra, &dotted(&d.path), d.default.clone());
    }
    for doc in files {
        let mut v = doc.value.clone();
        if !v.is_object() {
            errors.push(format!(
                "{}: a values file must be a mapping of keys, got {}",
                doc.positions
                    .locate("")
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| doc.file.clone()),
                describe(&v)
            ));
            continue;
        }
        let mut problems = Vec::new();
        for (path, found) in take_declared(&mut v, declared, false, &mut problems) {
            set_segs(&mut extra, &dotted(&path), found);
        }
        problems.extend(check_shape(&mut v, false));
        file_problems(doc, problems, &mut errors);
        merge(&mut merged, v);
    }
    // Helm applies every --set onto one tree, so indexes from several arguments merge.
    let mut from_set = Value::Object(Map::new());
    for arg in set {
        match parse_pairs(arg) {
            Ok(pairs) => {
                let mut alone = Value::Object(Map::new());
                for (segs, v) in pairs {
                    set_segs(&mut alone, &segs, v.clone());
                    set_segs(&mut from_set, &segs, v);
                }
                let _ = take_declared(&mut alone, declared, true, &mut Vec::new());
                for p in check_shape(&mut alone, true) {
                    errors.push(format_problem(&arg.flag(), &p));
                }
            }
            Err(e) => errors.push(format!("{}: {e}", arg.flag())),
        }
    }
    if let Some(hole) = first_hole(&from_set, "") {
        errors.push(format!(
            "--set: {hole} is not set; list indexes start at 0 and every element up to the highest needs a value (e.g. --set command[0]=python --set command[1]=train.py, or --set command={{python,train.py}})"
        ));
    }
    let mut problems = Vec::new();
    for (path, found) in take_declared(&mut from_set, declared, true, &mut problems) {
        set_segs(&mut extra, &dotted(&path), found);
    }
    for p in problems {
        errors.push(format_problem("--set", &p));
    }
    // Coerce the merged tree too (`--set image=1.0` means the string "1.0"); problems were
    // reported per argument above.
    let _ = check_shape(&mut from_set, true);
    merge(&mut merged, from_set);
    let mut flags = flags;
    for p in check_shape(&mut flags, true) {
        errors.push(format_problem("flags", &p));
    }
    merge(&mut merged, flags);
    if !errors.is_empty() {
        let n = errors.len();
        return Err(Error::Invalid(format!(
            "invalid values ({n} problem{}):\n{}",
            if n == 1 { "" } else { "s" },
            errors.join("\n")
        )));
    }
    let mut values: Values =
        serde_json::from_value(merged).map_err(|e| Error::Invalid(format!("values: {e}")))?;
    if let Value::Object(m) = extra {
        values.extra = m;
    }
    let problems = check_values(&values);
    if !problems.is_empty() {
        let n = problems.len();
        return Err(Error::Invalid(format!(
            "invalid values ({n} problem{}):\n{}",
            if n == 1 { "" } else { "s" },
            problems.join("\n")
        )));
    }
    Ok(values)
}

/// The role keys, in the order templates list them.
pub const ROLES: [&str; 4] = ["ps", "worker", "chief", "evaluator"];

/// Checks the merged values for what no schema type says: counts ≥ 0, a chief of 0 or 1, limits
/// above zero, `secret/key` references. Messages name the key and the flag.
fn check_values(v: &Values) -> Vec<String> {
    let mut out = Vec::new();
    for role in ROLES {
        let r = v.role(role).expect("known role");
        if let Some(n) = r.replicas.filter(|n| *n < 0) {
            out.push(format!(
                "{role}.replicas: replicas must be ≥ 0, got {n} (0 leaves the role out)"
            ));
        }
        // A role left out does not run, so its resources need no complaint (`--gpus -1` sets
        // the chief too, which ps-worker leaves out).
        if r.replicas.unwrap_or(0) <= 0 {
            continue;
        }
        if let Some(n) = r.gpus.filter(|n| *n < 0) {
            out.push(format!("{role}.gpus: GPUs must be ≥ 0, got {n}"));
        }
        for (key, q) in [("cpu", &r.cpu), ("memory", &r.memory)] {
            if let Some(q) = q.as_ref().filter(|q| is_zero_quantity(&q.0)) {
                out.push(format!(
                    "{role}.{key}: a limit of {q} leaves the container nothing to run on; give a positive amount (e.g. --{key} {}) or leave it unset",
                    if key == "cpu" { "2" } else { "4Gi" }
                ));
            }
        }
        secret_refs(
            &format!("{role}.envFromSecret"),
            &r.env_from_secret,
            &mut out,
        );
    }
    secret_refs("envFromSecret", &v.env_from_secret, &mut out);
    if let Some(n) = v.chief.replicas.filter(|n| *n > 1) {
        out.push(format!(
            "chief.replicas: a job has 0 or 1 chief, got {n} (TensorFlow refuses a cluster spec with two chief tasks); use workers for more replicas"
        ));
    }
    out
}

/// `NAME: secret/key` entries that are not SECRET/KEY.
fn secret_refs(path: &str, refs: &BTreeMap<String, String>, out: &mut Vec<String>) {
    for (name, reference) in refs {
        let ok = reference
            .split_once('/')
            .is_some_and(|(s, k)| !s.is_empty() && !k.is_empty() && !k.contains('/'));
        if !ok {
            out.push(format!(
                "{path}.{name}: {reference:?} is not SECRET/KEY; write e.g. --env-from-secret {name}=my-secret/token"
            ));
        }
    }
}

/// `0`, `0m`, `0.0`, `0Gi`: a quantity whose number is zero.
fn is_zero_quantity(q: &str) -> bool {
    let num: String = q
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '+' || *c == '-')
        .collect();
    num.parse::<f64>().is_ok_and(|n| n == 0.0)
}

impl Values {
    /// The template context: every field present, unset ones as null. Each role's pod settings
    /// are already combined with the all-roles ones (role maps and lists added to them, single
    /// values winning), and `envFromSecret` entries are `{secret, key}` mappings.
    pub fn to_context(&self) -> Value {
        let mut ctx = serde_json::to_value(self).expect("values serialize");
        if let Some(m) = ctx.as_object_mut() {
            m.extend(self.extra.clone());
        }
        let top = ctx.clone();
        for role in ROLES {
            let Some(r) = ctx.get_mut(role).and_then(Value::as_object_mut) else {
                continue;
            };
            for key in ["nodeSelector", "envFromSecret"] {
                let mut all = top[key].as_object().cloned().unwrap_or_default();
                if let Some(own) = r.get(key).and_then(Value::as_object) {
                    all.extend(own.clone());
                }
                r.insert(key.into(), Value::Object(all));
            }
            for key in ["tolerations", "volumes", "volumeMounts", "imagePullSecrets"] {
                let mut all = top[key].as_array().cloned().unwrap_or_default();
                for v in r.get(key).and_then(Value::as_array).into_iter().flatten() {
                    if !all.contains(v) {
                        all.push(v.clone());
                    }
                }
                r.insert(key.into(), Value::Array(all));
            }
            for key in ["serviceAccount", "priorityClassName"] {
                if r.get(key).is_none_or(Value::is_null) {
                    r.insert(key.into(), top[key].clone());
                }
            }
            if let Some(m) = r.get_mut("envFromSecret").and_then(Value::as_object_mut) {
                for v in m.values_mut() {
                    let text = v.as_str().unwrap_or_default().to_string();
                    let (secret, key) = text.split_once('/').unwrap_or((&text, ""));
                    *v = serde_json::json!({"secret": secret, "key": key});
                }
            }
        }
        ctx
    }

    /// The effective replica count of a role (unset → 0: the role is left out).
    pub fn replicas(&self, role: &str) -> i64 {
        self.role(role).and_then(|r| r.replicas).unwrap_or(0)
    }

    pub fn role(&self, role: &str) -> Option<&Role> {
        match role {
            "ps" => Some(&self.ps),
            "worker" => Some(&self.worker),
            "chief" => Some(&self.chief),
            "evaluator" => Some(&self.evaluator),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_parses_helm_style() {
        assert_eq!(
            parse_set("worker.replicas=4,image=a/b:1").unwrap(),
            json!({"worker": {"replicas": 4}, "image": "a/b:1"})
        );
        assert_eq!(
            parse_set(r"command[1]=a\,b").unwrap(),
            json!({"command": [null, "a,b"]})
        );
        assert_eq!(parse_set("x=true").unwrap(), json!({"x": true}));
        assert!(parse_set("novalue").is_err());
        assert!(parse_set("a[x]=1").is_err());
    }

    #[test]
    fn unknown_keys_suggest_the_closest() {
        let mut v = json!({"worker": {"replcas": 3}});
        let p = check_shape(&mut v, false);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].path, "worker.replcas");
        assert_eq!(
            p[0].hint.as_deref(),
            Some("did you mean `worker.replicas`?")
        );

        let mut v = json!({"replicas": 3});
        let p = check_shape(&mut v, false);
        assert!(p[0].hint.as_deref().unwrap().contains(".replicas"), "{p:?}");
    }

    #[test]
    fn wrong_types_name_the_expected_type() {
        let mut v = json!({"worker": {"replicas": "three"}, "labels": {"a": true}});
        let p = check_shape(&mut v, false);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p.iter().any(|p| p.message.contains("expected integer")));
        let l = p.iter().find(|p| p.path == "labels.a").unwrap();
        assert_eq!(l.hint.as_deref(), Some("quote it: a: \"true\""));
    }

    #[test]
    fn set_coerces_scalars_to_strings() {
        let mut v = parse_set("image=1.0,worker.cpu=4").unwrap();
        assert!(check_shape(&mut v, true).is_empty());
        assert_eq!(v["image"], json!("1.0"));
    }

    #[test]
    fn sources_merge_later_wins() {
        let defaults = json!({"worker": {"replicas": 2}, "ps": {"replicas": 1, "cpu": "2"}});
        let doc = manifest::parse_one("worker:\n  replicas: 5\n", "v.yaml")
            .unwrap()
            .unwrap();
        let kube = ConnectionOptions::default();
        let args = RenderOptions {
            ps: Some(0),
            gpus: Some(1),
            ..Default::default()
        };
        let v = resolve(
            &defaults,
            &[doc],
            &[SetArg::Typed("worker.replicas=7".into())],
            flags_overlay(&kube, &args).unwrap(),
        )
        .unwrap();
        assert_eq!(v.worker.replicas, Some(7));
        assert_eq!(v.ps.replicas, Some(0));
        assert_eq!(v.ps.cpu, Some(Qty("2".into())));
        assert_eq!(v.worker.gpus, Some(1));
    }

    #[test]
    fn file_errors_carry_line_and_file() {
        let doc = manifest::parse_one("name: x\nworker:\n  replcas: 5\n", "v.yaml")
            .unwrap()
            .unwrap();
        let e = resolve(&json!({}), &[doc], &[], json!({})).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("v.yaml:3:3: worker.replcas: unknown key"),
            "{msg}"
        );
        assert!(msg.contains("did you mean `worker.replicas`?"), "{msg}");
        let e = resolve(
            &json!({}),
            &[],
            &[SetArg::Typed("wroker.replicas=1".into())],
            json!({}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("--set wroker.replicas=1"), "{e}");
    }

    #[test]
    fn secret_references_and_counts_are_checked_once() {
        let flags = json!({
            "worker": {"replicas": 2, "gpus": -1},
            "chief": {"gpus": -1},
            "envFromSecret": {"HF_TOKEN": "hf-token"},
        });
        let e = resolve(&json!({}), &[], &[], flags)
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid values (2 problems)"), "{e}");
        assert!(e.contains("worker.gpus: GPUs must be ≥ 0, got -1"), "{e}");
        assert!(
            e.contains("envFromSecret.HF_TOKEN: \"hf-token\" is not SECRET/KEY"),
            "{e}"
        );
    }
}
