//! What the kubelet hands a container as its environment (kubernetes
//! `pkg/kubelet/kubelet_pods.go` `makeEnvironmentVariables`): `envFrom` sources first, then
//! `env` in order, each `value` expanded against the variables above it only, each `valueFrom`
//! resolved (downward API fieldRefs, Secret and ConfigMap keys). The expansion is
//! `third_party/forked/golang/expansion/expand.go`: `$(NAME)` of a known variable is replaced,
//! an unknown one stays as written, `$$` is `$`. Service-link variables are not modelled.
//!
//! The result of each container start is kept, so a test reads the TF_CONFIG a pod really
//! got: [`crate::TestCluster::container_env`]. Written for the test cluster; it mirrors the
//! kubelet, not the plugin.

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::Value;

use crate::TestCluster;

/// (namespace, pod, container) → the environment, in declaration order.
pub(crate) type EnvMap = HashMap<(String, String, String), Vec<(String, String)>>;
use crate::state::Shared;

/// `Expand(input, mapping)`.
pub(crate) fn expand(input: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if after.is_empty() {
            // A trailing `$` is kept.
            out.push('$');
            rest = after;
            break;
        }
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('(') {
            match tail.find(')') {
                Some(close) => {
                    let name = &tail[..close];
                    match vars.get(name) {
                        Some(v) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &tail[close + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = tail;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A downward-API `fieldPath` of `pod`.
fn field(pod: &Value, path: &str) -> Option<String> {
    let m = &pod["metadata"];
    let bracket = |prefix: &str, map: &Value| -> Option<String> {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        map[key].as_str().map(String::from)
    };
    match path {
        "metadata.name" => m["name"].as_str().map(String::from),
        "metadata.namespace" => m["namespace"].as_str().map(String::from),
        "metadata.uid" => m["uid"].as_str().map(String::from),
        "spec.nodeName" => pod["spec"]["nodeName"].as_str().map(String::from),
        "spec.serviceAccountName" => pod["spec"]["serviceAccountName"].as_str().map(String::from),
        "status.podIP" => pod["status"]["podIP"].as_str().map(String::from),
        "status.hostIP" => pod["status"]["hostIP"].as_str().map(String::from),
        p if p.starts_with("metadata.labels['") => bracket("metadata.labels['", &m["labels"]),
        p if p.starts_with("metadata.annotations['") => {
            bracket("metadata.annotations['", &m["annotations"])
        }
        _ => None,
    }
}

fn key_of(obj: &Value, key: &str) -> Option<String> {
    if let Some(v) = obj["stringData"][key].as_str() {
        return Some(v.to_string());
    }
    let raw = obj["data"][key].as_str()?;
    if obj["kind"] == "Secret" {
        let bytes = base64::engine::general_purpose::STANDARD.decode(raw).ok()?;
        return String::from_utf8(bytes).ok();
    }
    Some(raw.to_string())
}

/// The environment of container `c` of `pod`, in declaration order (a later duplicate wins
/// in place, as the kubelet's map does).
pub(crate) fn environment(sh: &Shared, pod: &Value, c: &Value) -> Vec<(String, String)> {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut set = |vars: &mut HashMap<String, String>, k: String, v: String| {
        if !vars.contains_key(&k) {
            order.push(k.clone());
        }
        vars.insert(k, v);
    };
    for src in c["envFrom"].as_array().into_iter().flatten() {
        let prefix = src["prefix"].as_str().unwrap_or("");
        for (field_name, res) in [("configMapRef", "configmaps"), ("secretRef", "secrets")] {
            let Some(name) = src[field_name]["name"].as_str() else {
                continue;
            };
            let Some(obj) = sh.store.get(res, ns, name) else {
                continue;
            };
            for map in ["data", "stringData"] {
                for k in obj[map]
                    .as_object()
                    .map(|m| m.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default()
                {
                    if let Some(v) = key_of(&obj, &k) {
                        set(&mut vars, format!("{prefix}{k}"), v);
                    }
                }
            }
        }
    }
    for e in c["env"].as_array().into_iter().flatten() {
        let Some(name) = e["name"].as_str() else {
            continue;
        };
        let value = match e["value"].as_str() {
            Some(v) if !v.is_empty() => expand(v, &vars),
            _ => {
                let from = &e["valueFrom"];
                if let Some(p) = from["fieldRef"]["fieldPath"].as_str() {
                    field(pod, p).unwrap_or_default()
                } else if let Some(r) = from["secretKeyRef"].as_object() {
                    let (n, k) = (
                        r.get("name").and_then(Value::as_str).unwrap_or(""),
                        r.get("key").and_then(Value::as_str).unwrap_or(""),
                    );
                    sh.store
                        .get("secrets", ns, n)
                        .and_then(|o| key_of(&o, k))
                        .unwrap_or_default()
                } else if let Some(r) = from["configMapKeyRef"].as_object() {
                    let (n, k) = (
                        r.get("name").and_then(Value::as_str).unwrap_or(""),
                        r.get("key").and_then(Value::as_str).unwrap_or(""),
                    );
                    sh.store
                        .get("configmaps", ns, n)
                        .and_then(|o| key_of(&o, k))
                        .unwrap_or_default()
                } else {
                    String::new()
                }
            }
        };
        set(&mut vars, name.to_string(), value);
    }
    order
        .into_iter()
        .map(|k| {
            let v = vars[&k].clone();
            (k, v)
        })
        .collect()
}

/// Records what a starting container got (kubelet.rs calls it at each start).
pub(crate) fn record(sh: &Shared, pod: &Value, c: &Value) {
    let key = (
        pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        pod["metadata"]["name"].as_str().unwrap_or("").to_string(),
        c["name"].as_str().unwrap_or("").to_string(),
    );
    let env = environment(sh, pod, c);
    sh.container_env.lock().unwrap().insert(key, env);
}

impl TestCluster {
    /// The environment the kubelet gave a container when it last started, after `$(VAR)`
    /// expansion, in declaration order; `None` before it started.
    pub fn container_env(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Option<Vec<(String, String)>> {
        self.shared
            .container_env
            .lock()
            .unwrap()
            .get(&(
                namespace.to_string(),
                pod.to_string(),
                container.to_string(),
            ))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_is_the_kubelets() {
        let vars: HashMap<String, String> =
            [("A".to_string(), "x".to_string())].into_iter().collect();
        assert_eq!(expand("$(A)/$(A)", &vars), "x/x");
        assert_eq!(expand("$(B)", &vars), "$(B)");
        assert_eq!(expand("$$(A)", &vars), "$(A)");
        assert_eq!(expand("$$$(A)", &vars), "$x");
        assert_eq!(expand("cost $5 $", &vars), "cost $5 $");
        assert_eq!(expand("$(A", &vars), "$(A");
    }

    #[test]
    fn field_refs_read_labels_annotations_and_metadata() {
        let pod = serde_json::json!({"metadata": {"name": "p", "namespace": "ns",
            "labels": {"a/b": "1"}, "annotations": {"batch.kubernetes.io/job-completion-index": "2"}}});
        assert_eq!(field(&pod, "metadata.labels['a/b']").as_deref(), Some("1"));
        assert_eq!(
            field(
                &pod,
                "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            )
            .as_deref(),
            Some("2")
        );
        assert_eq!(field(&pod, "metadata.namespace").as_deref(), Some("ns"));
        assert_eq!(field(&pod, "metadata.labels['missing']"), None);
    }
}
