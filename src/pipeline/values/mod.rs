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

use crate::error::{Error, Result};
use crate::pipeline::manifest::{Document, join_index, join_key};

mod flagkeys;
mod flagnames;
mod options;
mod pod;
pub mod resources;
mod set;
mod shape;

pub use flagnames::FLAG_KEYS;
pub use options::{PodOptions, RenderOptions};
pub use pod::flags_overlay;
pub use resources::RoleResource;
use set::*;
pub use set::{MAX_SET_DEPTH, MAX_SET_INDEX, SetArg, parse_set, parse_set_into};
pub use shape::{Problem, builtin_keys, check_shape};
use shape::{describe, scalar_text};

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
        problems.extend(flagkeys::translate(&mut v));
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
                let mut problems = flagkeys::translate(&mut alone);
                problems.extend(check_shape(&mut alone, true));
                for p in problems {
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
    // Reported per argument above.
    let _ = flagkeys::translate(&mut from_set);
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
        return Err(invalid_values(&errors));
    }
    let mut values: Values =
        serde_json::from_value(merged).map_err(|e| Error::Invalid(format!("values: {e}")))?;
    if let Value::Object(m) = extra {
        values.extra = m;
    }
    let problems = check_values(&values);
    if !problems.is_empty() {
        return Err(invalid_values(&problems));
    }
    Ok(values)
}

fn invalid_values(problems: &[String]) -> Error {
    let n = problems.len();
    Error::Invalid(format!(
        "invalid values ({n} problem{}):\n{}",
        if n == 1 { "" } else { "s" },
        problems.join("\n")
    ))
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
    use crate::pipeline::manifest;
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

        // The flags' names are top-level keys too (issue 48 item 8), and a key is the same
        // key in snake_case or kebab-case.
        for (written, meant) in [
            ("gpu", "gpus"),
            ("worker_memory", "workerMemory"),
            ("cpu-request", "cpuRequest"),
        ] {
            let mut v = json!({ written: 1 });
            let p = check_shape(&mut v, false);
            assert_eq!(
                p[0].hint.as_deref(),
                Some(format!("did you mean `{meant}`?").as_str()),
                "{written}: {p:?}"
            );
        }
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
        let args = RenderOptions {
            ps: Some(0),
            gpus: Some(1),
            ..Default::default()
        };
        let v = resolve(
            &defaults,
            &[doc],
            &[SetArg::Typed("worker.replicas=7".into())],
            flags_overlay(None, &args).unwrap(),
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
