//! The training-operator's validating webhook, rule for rule: `validateTFJob` in kubeflow/trainer
//! `pkg/webhooks/tensorflow/tfjob_webhook.go` (v1.9.4; operator-behavior.md §1), in its order.
//! Every finding here is an error: the webhook (failurePolicy Fail) refuses the create, and the
//! API server answers 403 `admission webhook "validator.tfjob.training-operator.kubeflow.org"
//! denied the request`.

use serde_json::{Map, Value};

use super::{Finding, Severity, names};
use crate::model::{DEFAULT_CONTAINER_NAME, MANAGED_BY_VALUES, ReplicaType};
use crate::pipeline::manifest::{join_index, join_key};

/// Runs `validateTFJob` on the raw object (the webhook sees it before any defaulting).
pub fn check(root: &Map<String, Value>, out: &mut Vec<Finding>) {
    let meta = root.get("metadata").and_then(Value::as_object);
    // 1. metadata.name is a DNS-1035 label (the generated one, for generateName).
    names::object_name(meta, out);
    let Some(spec) = root.get("spec").and_then(Value::as_object) else {
        return; // the schema requires spec
    };
    let run_policy = spec.get("runPolicy").and_then(Value::as_object);
    // 2. managedBy is immutable on UPDATE: nothing to compare offline.
    // 3. managedBy, when set, is one of the supported values.
    if let Some(Value::String(m)) = run_policy.and_then(|rp| rp.get("managedBy"))
        && !MANAGED_BY_VALUES.contains(&m.as_str())
    {
        out.push(Finding::new(
            Severity::Error,
            "webhook/managed-by",
            "spec.runPolicy.managedBy",
            format!(
                "Unsupported value {m:?}: supported values are {}",
                MANAGED_BY_VALUES.map(|v| format!("{v:?}")).join(", ")
            ),
        ));
    }
    // 4. tfReplicaSpecs must not be nil.
    let replicas = match spec.get("tfReplicaSpecs") {
        None | Some(Value::Null) => {
            out.push(Finding::new(
                Severity::Error,
                "webhook/replica-specs",
                "spec.tfReplicaSpecs",
                "must be required",
            ));
            return;
        }
        Some(Value::Object(r)) => r,
        Some(_) => return, // schema reports the type
    };
    // 5. Each replica type: containers present, each with an image, one named tensorflow.
    for (key, rs) in replicas {
        replica_containers(&join_key("spec.tfReplicaSpecs", key), rs, out);
    }
    // 6. At most one Chief or Master (exact-case keys).
    let chiefs = replicas
        .keys()
        .filter(|k| ReplicaType::from_exact(k).is_some_and(|t| t.is_chief_like()))
        .count();
    if chiefs > 1 {
        out.push(Finding::new(
            Severity::Error,
            "webhook/chief",
            "spec.tfReplicaSpecs",
            "must not have more than 1 Chief or Master role",
        ));
    }
}

fn replica_containers(path: &str, rs: &Value, out: &mut Vec<Finding>) {
    let containers_path = format!("{path}.template.spec.containers");
    if rs.is_null() {
        out.push(Finding::new(
            Severity::Error,
            "webhook/containers",
            containers_path,
            "must be specified",
        ));
        return;
    }
    let containers = rs
        .get("template")
        .and_then(|t| t.get("spec"))
        .and_then(|p| p.get("containers"));
    let list = match containers {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(Value::Array(_)) | None | Some(Value::Null) => {
            // The webhook reports both problems for a spec without containers.
            out.push(Finding::new(
                Severity::Error,
                "webhook/containers",
                containers_path.clone(),
                "must be specified",
            ));
            out.push(tensorflow_missing(&containers_path));
            return;
        }
        Some(_) => return, // schema
    };
    let mut has_tf = false;
    for (i, c) in list.iter().enumerate() {
        let cpath = join_index(&containers_path, i);
        let Some(c) = c.as_object() else { continue };
        if c.get("name").and_then(Value::as_str) == Some(DEFAULT_CONTAINER_NAME) {
            has_tf = true;
        }
        match c.get("image") {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            Some(v) if !v.is_string() && !v.is_null() => {} // schema
            _ => out.push(
                Finding::new(
                    Severity::Error,
                    "webhook/image",
                    format!("{cpath}.image"),
                    "must be required",
                )
                .with_hint(Some(
                    "set the container image (render: --image IMAGE)".into(),
                )),
            ),
        }
    }
    if !has_tf {
        let names: Vec<&str> = list
            .iter()
            .filter_map(|c| c.get("name").and_then(Value::as_str))
            .collect();
        let mut f = tensorflow_missing(&containers_path);
        if let Some(n) = names.first() {
            f.hint = Some(format!(
                "rename the training container {n:?} to \"tensorflow\": the operator reads ports, exit codes and sets TF_CONFIG on that name"
            ));
        }
        out.push(f);
    }
}

fn tensorflow_missing(containers_path: &str) -> Finding {
    Finding::new(
        Severity::Error,
        "webhook/tensorflow-container",
        containers_path,
        "must have at least one container with name tensorflow",
    )
    .with_hint(Some("name the training container \"tensorflow\"".into()))
}
