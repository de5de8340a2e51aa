//! Values in the flags' language: a per-job flag's name as a top-level key of a values file (or
//! a `--set`) means what the flag means. `workers: 2`, `gpus: 1`, `cpu: 4` are `--workers 2 --gpus
//! 1 --cpu 4`, turned into the nested form by the same [`flags_overlay`] the flags go through,
//! so the two cannot drift apart. The flag's spelling (`restart-policy`, `cpu-request`) and the
//! values spelling (`restartPolicy`, `cpuRequest`) are both accepted.
//!
//! Keys that are already values keys keep their values meaning when their value has the values
//! type (`ps: {replicas: 1}`, `labels: {team: nlp}`) and take the flag's when it has the flag's
//! (`ps: 1`, `labels: [team=nlp]`). Nested keys in the same source win over what a flag-named key
//! sets, as a role's own `--ps-cpu` wins over `--cpu`.

use serde_json::{Map, Value};

use super::flagnames::FLAG_KEYS;
use super::pod::flags_overlay;
use super::shape::{Problem, describe, scalar_text};
use super::{RenderOptions, RoleResource, merge};

/// Flags that shape the job but have no values form, with why: refused with the flag to use.
const FLAG_ONLY: &[(&str, &str, &str)] = &[
    (
        "generateName",
        "--generate-name",
        "the API server completes the name, so it is not a template value",
    ),
    (
        "localQueue",
        "--local-queue",
        "its label goes on the TFJob alone, not on the pods the template's labels reach",
    ),
];

/// `restart-policy` → `restartPolicy`.
fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut up = false;
    for c in key.chars() {
        if c == '-' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Rewrites the flag-named top-level keys of one source into the nested form the templates
/// read, in place; problems name the key as written.
pub fn translate(tree: &mut Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    let Some(map) = tree.as_object_mut() else {
        return problems;
    };
    // Problems name a key as written (its file position is found by that name).
    let written = rename_kebab(map, &mut problems);
    let as_written = |key: &str| {
        written
            .iter()
            .find(|(to, _)| to == key)
            .map_or(key.to_string(), |(_, from)| from.clone())
    };
    for &(key, flag, why) in FLAG_ONLY {
        if map.contains_key(key) {
            problems.push(Problem {
                path: as_written(key),
                message: format!("{flag} has no values form: {why}"),
                hint: Some(format!("pass {flag} on the command line")),
            });
            map.remove(key);
        }
    }
    let mut o = RenderOptions::default();
    let mut taken: Vec<String> = Vec::new();
    for &(key, flag) in FLAG_KEYS {
        let Some(v) = map.get(key) else { continue };
        match assign(key, flag, v, &mut o) {
            Assign::NotOurs => continue,
            Assign::Set => {}
            Assign::Bad(expected) => problems.push(Problem {
                path: as_written(key),
                message: format!("expected {expected}, as {flag} takes, got {}", describe(v)),
                hint: None,
            }),
        }
        // Taken: translated, or refused (so the schema does not call it unknown too).
        taken.push(key.to_string());
    }
    if taken.is_empty() {
        return problems;
    }
    let rest: Map<String, Value> = std::mem::take(map)
        .into_iter()
        .filter(|(k, _)| !taken.contains(k))
        .collect();
    match flags_overlay(None, &o) {
        Ok(mut nested) => {
            // The source's own nested keys win over what its flag-named keys set.
            merge(&mut nested, Value::Object(rest));
            *tree = nested;
        }
        Err(e) => {
            *tree = Value::Object(rest);
            problems.push(Problem {
                path: taken
                    .iter()
                    .map(|k| as_written(k))
                    .collect::<Vec<_>>()
                    .join(", "),
                message: e.to_string(),
                hint: None,
            });
        }
    }
    problems
}

/// Values keys in the flag's spelling first: `restart-policy` is `restartPolicy`. Returns
/// (new key, key as written) of each renamed.
fn rename_kebab(
    map: &mut Map<String, Value>,
    problems: &mut Vec<Problem>,
) -> Vec<(String, String)> {
    let kebab: Vec<String> = map.keys().filter(|k| k.contains('-')).cloned().collect();
    let mut written: Vec<(String, String)> = Vec::new();
    for key in kebab {
        let to = camel(&key);
        if map.contains_key(&to) {
            problems.push(Problem {
                path: key.clone(),
                message: format!("set twice, here and as `{to}`"),
                hint: Some(format!("keep one of `{key}` and `{to}`")),
            });
            continue;
        }
        if let Some(v) = map.remove(&key) {
            map.insert(to.clone(), v);
            written.push((to, key));
        }
    }
    written
}

/// What one flag-named key did.
enum Assign {
    /// A values key of its own with this name (a role, a map): left to the values schema.
    NotOurs,
    Set,
    /// Not of the flag's type: what was expected.
    Bad(String),
}

/// Sets the option `key` stands for from its value, as the flag would.
fn assign(key: &str, flag: &str, v: &Value, o: &mut RenderOptions) -> Assign {
    match key {
        // Values keys of their own (a role, a map): the flag's meaning only for the
        // flag's type; anything else is left to the values schema.
        "ps" | "chief" | "evaluator" if !v.is_i64() => Assign::NotOurs,
        "labels" | "annotations" | "env" | "nodeSelector" | "envFromSecret"
            if v.is_object() || v.is_null() =>
        {
            Assign::NotOurs
        }
        "ps" | "workers" | "chief" | "evaluator" | "backoffLimit" | "ttlSecondsAfterFinished" => {
            match v.as_i64().and_then(|n| i32::try_from(n).ok()) {
                Some(n) => {
                    let slot = match key {
                        "ps" => &mut o.ps,
                        "workers" => &mut o.workers,
                        "chief" => &mut o.chief,
                        "evaluator" => &mut o.evaluator,
                        "backoffLimit" => &mut o.backoff_limit,
                        _ => &mut o.ttl_seconds_after_finished,
                    };
                    *slot = Some(n);
                    Assign::Set
                }
                None => Assign::Bad("an integer".to_string()),
            }
        }
        "gpus" | "activeDeadlineSeconds" => match v.as_i64() {
            Some(n) => {
                if key == "gpus" {
                    o.gpus = Some(n);
                } else {
                    o.active_deadline_seconds = Some(n);
                }
                Assign::Set
            }
            None => Assign::Bad("an integer".to_string()),
        },
        _ if key.ends_with("Cpu")
            || key.ends_with("Memory")
            || key.ends_with("Request")
            || key == "cpu"
            || key == "memory" =>
        {
            match v {
                Value::String(_) | Value::Number(_) => {
                    let q = scalar_text(v);
                    match key {
                        "cpu" => o.cpu = Some(q),
                        "memory" => o.memory = Some(q),
                        "cpuRequest" => o.pod.cpu_request = Some(q),
                        "memoryRequest" => o.pod.memory_request = Some(q),
                        _ => {
                            let (role, res) = per_role(key);
                            o.pod.per_role.push(RoleResource {
                                role,
                                key: res,
                                value: q,
                            });
                        }
                    }
                    Assign::Set
                }
                _ => Assign::Bad("a quantity like 4, 500m or 8Gi".to_string()),
            }
        }
        "cleanPodPolicy" | "queue" | "priorityClass" | "podPriorityClass" => match v {
            Value::String(s) => {
                let slot = match key {
                    "cleanPodPolicy" => &mut o.clean_pod_policy,
                    "queue" => &mut o.queue,
                    "priorityClass" => &mut o.priority_class,
                    _ => &mut o.pod.pod_priority_class,
                };
                *slot = Some(s.clone());
                Assign::Set
            }
            _ => Assign::Bad("a string".to_string()),
        },
        // The repeatable flags: one argument, or a list of them.
        _ => match strings(v) {
            Some(list) => {
                let slot = match key {
                    "label" | "labels" => &mut o.labels,
                    "annotation" | "annotations" => &mut o.annotations,
                    "env" => &mut o.env,
                    "pvc" => &mut o.pod.pvc,
                    "configMap" => &mut o.pod.config_map,
                    "secretVolume" => &mut o.pod.secret_volume,
                    "emptyDir" => &mut o.pod.empty_dir,
                    "imagePullSecret" => &mut o.pod.image_pull_secret,
                    "nodeSelector" => &mut o.pod.node_selector,
                    "toleration" => &mut o.pod.toleration,
                    _ => &mut o.pod.env_from_secret,
                };
                slot.extend(list);
                Assign::Set
            }
            None => Assign::Bad(format!(
                "{flag}'s argument or a list of them (a string or a list of strings)"
            )),
        },
    }
}

/// `psCpu` → (`ps`, `cpu`).
fn per_role(key: &str) -> (&'static str, &'static str) {
    let res = if key.ends_with("Cpu") {
        "cpu"
    } else {
        "memory"
    };
    let role = super::ROLES
        .iter()
        .find(|r| key.starts_with(**r))
        .copied()
        .unwrap_or("worker");
    (role, res)
}

/// One string, or a list of strings (numbers and booleans as their text, as on a command line).
fn strings(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Some(s.clone()),
                Value::Number(_) | Value::Bool(_) => Some(scalar_text(i)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flag_named_keys_become_the_nested_form() {
        let mut v = json!({"workers": 2, "gpus": 1, "cpu": 4, "memory": "8Gi", "ps": 1,
            "restart-policy": "Never", "label": ["team=nlp"]});
        assert_eq!(translate(&mut v), vec![]);
        assert_eq!(v["worker"]["replicas"], 2);
        assert_eq!(v["worker"]["gpus"], 1);
        assert_eq!(v["chief"]["gpus"], 1);
        assert_eq!(v["ps"]["replicas"], 1);
        assert_eq!(v["ps"]["cpu"], "4");
        assert_eq!(v["worker"]["memory"], "8Gi");
        assert_eq!(v["restartPolicy"], "Never");
        assert_eq!(v["labels"]["team"], "nlp");
        assert!(v.get("workers").is_none() && v.get("gpus").is_none());
    }

    #[test]
    fn values_forms_keep_their_meaning_and_win_over_flag_named_keys() {
        let mut v = json!({"ps": {"replicas": 2}, "labels": {"a": "b"}, "cpu": 4,
            "worker": {"cpu": "1"}});
        assert_eq!(translate(&mut v), vec![]);
        assert_eq!(v["ps"]["replicas"], 2);
        assert_eq!(v["labels"], json!({"a": "b"}));
        assert_eq!(v["worker"]["cpu"], "1");
        assert_eq!(v["ps"]["cpu"], "4");
    }

    #[test]
    fn wrong_types_and_flag_only_keys_are_named_with_their_flag() {
        let mut v = json!({"gpus": "two", "localQueue": "q", "pvc": {"a": 1}});
        let p = translate(&mut v);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p.iter().any(|p| {
            p.path == "gpus"
                && p.message
                    .starts_with("expected an integer, as --gpus takes")
        }));
        assert!(p.iter().any(|p| p.path == "localQueue"
            && p.hint.as_deref() == Some("pass --local-queue on the command line")));
        assert!(p.iter().any(|p| p.path == "pvc"));
    }
}
