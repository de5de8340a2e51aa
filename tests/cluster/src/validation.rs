//! Admission: structural-schema validation/pruning/defaulting for custom resources, and
//! the training-operator's TFJob validating webhook (operator-behavior.md §1).

use serde_json::{Value, json};

use crate::status::FieldError;
use crate::util::dns1035_errors;

/// Result of checking an object against a CRD structural schema.
#[derive(Debug, Default)]
pub struct SchemaOutcome {
    /// Validation errors (→ 422 Invalid).
    pub errors: Vec<FieldError>,
    /// Paths of fields not declared in the schema (pruned; fatal with fieldValidation=Strict).
    pub unknown: Vec<String>,
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Validates `obj` (everything except metadata) against `schema`, pruning unknown fields
/// and nulls and applying `default`s, the order the apiextensions-apiserver uses.
pub fn check_schema(schema: &Value, obj: &mut Value) -> SchemaOutcome {
    let mut out = SchemaOutcome::default();
    if let Some(map) = obj.as_object_mut() {
        let props = &schema["properties"];
        let keys: Vec<String> = map.keys().cloned().collect();
        for k in keys {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match props.get(&k) {
                Some(s) => walk(s, map.get_mut(&k).unwrap(), &k, &mut out),
                None if schema["x-kubernetes-preserve-unknown-fields"] == json!(true) => {}
                None => {
                    map.remove(&k);
                    out.unknown.push(format!(".{k}"));
                }
            }
        }
        for r in schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !map.contains_key(r) || map[r].is_null() {
                out.errors.push(FieldError::required(r, ""));
            }
        }
    }
    out
}

/// OpenAPI `pattern` on a string, as kube-openapi's validator reports it
/// (k8s.io/kube-openapi pkg/validation/errors `FailedPattern`: "<path> in body should match
/// '<pattern>'", an Invalid field error). Quantities are checked this way in the upstream CRD.
fn check_pattern(schema: &Value, v: &Value, path: &str, out: &mut SchemaOutcome) {
    if let (Some(pattern), Value::String(s)) = (schema["pattern"].as_str(), v)
        && let Ok(re) = regex::Regex::new(pattern)
        && !re.is_match(s)
    {
        out.errors.push(FieldError::invalid(
            path,
            v,
            &format!("{path} in body should match '{pattern}'"),
        ));
    }
}

fn walk(schema: &Value, v: &mut Value, path: &str, out: &mut SchemaOutcome) {
    if schema["x-kubernetes-int-or-string"] == json!(true) {
        if !matches!(v, Value::String(_) | Value::Number(_)) {
            out.errors.push(FieldError::type_invalid(
                path,
                json_type(v),
                "integer-or-string",
            ));
        }
        check_pattern(schema, v, path, out);
        return;
    }
    let ty = schema["type"].as_str();
    let actual = json_type(v);
    let type_ok = match ty {
        None => true,
        Some("number") => matches!(actual, "number" | "integer"),
        Some(t) => t == actual,
    };
    if !type_ok {
        out.errors.push(FieldError::type_invalid(
            path,
            actual,
            ty.unwrap_or_default(),
        ));
        return;
    }
    check_pattern(schema, v, path, out);
    if let Some(en) = schema["enum"].as_array()
        && !en.contains(v)
    {
        let allowed: Vec<String> = en
            .iter()
            .map(|e| {
                e.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| e.to_string())
            })
            .collect();
        let refs: Vec<&str> = allowed.iter().map(String::as_str).collect();
        out.errors.push(FieldError::not_supported(
            path,
            v.as_str().unwrap_or(&v.to_string()),
            &refs,
        ));
    }
    match v {
        Value::Object(map) => {
            let preserve = schema["x-kubernetes-preserve-unknown-fields"] == json!(true);
            let props = schema["properties"].as_object();
            let addl = &schema["additionalProperties"];
            // Nulls in non-nullable fields are pruned before validation; a map's values take
            // their schema from additionalProperties (prunenulls.go getSchemaForField).
            map.retain(|k, val| {
                !(val.is_null()
                    && props
                        .and_then(|p| p.get(k))
                        .or(addl.is_object().then_some(addl))
                        .is_some_and(|s| s["nullable"] != json!(true)))
            });
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let child = join(path, &k);
                if let Some(s) = props.and_then(|p| p.get(&k)) {
                    walk(s, map.get_mut(&k).unwrap(), &child, out);
                } else if addl.is_object() {
                    walk(addl, map.get_mut(&k).unwrap(), &child, out);
                } else if preserve || *addl == json!(true) {
                } else if props.is_some() || ty == Some("object") {
                    map.remove(&k);
                    out.unknown.push(format!(".{child}"));
                }
            }
            if let Some(p) = props {
                for (k, s) in p {
                    if !map.contains_key(k)
                        && let Some(d) = s.get("default")
                    {
                        map.insert(k.clone(), d.clone());
                        // A defaulted object gets its own properties' defaults too
                        // (structural defaulting walks the value it just set).
                        if d.is_object() {
                            let child = join(path, k);
                            walk(s, map.get_mut(k).unwrap(), &child, out);
                        }
                    }
                }
            }
            for r in schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !map.contains_key(r) {
                    out.errors.push(FieldError::required(join(path, r), ""));
                }
            }
        }
        Value::Array(items) if schema["items"].is_object() => {
            for (i, it) in items.iter_mut().enumerate() {
                walk(&schema["items"], it, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Metadata checks every object gets (name shape, string-valued labels/annotations).
/// Returns a 400-style decode message or field errors.
pub fn check_metadata(
    obj: &Value,
    kind: &str,
    api_version: &str,
) -> Result<Vec<FieldError>, String> {
    let meta = &obj["metadata"];
    for k in ["labels", "annotations"] {
        if let Some(m) = meta[k].as_object() {
            for val in m.values() {
                if !val.is_string() {
                    return Err(format!(
                        "{kind} in version {:?} cannot be handled as a {kind}: json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{k} of type string",
                        api_version.rsplit('/').next().unwrap_or(api_version),
                        match val {
                            Value::Bool(_) => "bool",
                            Value::Number(_) => "number",
                            Value::Array(_) => "array",
                            Value::Object(_) => "object",
                            _ => "null",
                        }
                    ));
                }
            }
        }
    }
    let mut errs = Vec::new();
    let name = meta["name"].as_str().unwrap_or("");
    if name.is_empty() && meta["generateName"].as_str().unwrap_or("").is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else if !name.is_empty() {
        for e in crate::util::dns1123_subdomain_errors(name) {
            errs.push(FieldError::invalid("metadata.name", &json!(name), &e));
        }
    }
    Ok(errs)
}

const MANAGED_BY: [&str; 2] = [
    "kubeflow.org/training-operator",
    "kueue.x-k8s.io/multikueue",
];

/// `validateTFJob` from the training-operator webhook, on the raw (undefaulted) object.
pub fn validate_tfjob(old: Option<&Value>, job: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    let dns = dns1035_errors(name);
    if !dns.is_empty() {
        errs.push(FieldError::invalid(
            "metadata.name",
            &json!(name),
            &format!("should match: {}", dns.join(",")),
        ));
    }
    let managed = &job["spec"]["runPolicy"]["managedBy"];
    if let Some(old) = old
        && old["spec"]["runPolicy"]["managedBy"] != *managed
    {
        errs.push(FieldError::invalid(
            "spec.runPolicy.managedBy",
            managed,
            "field is immutable",
        ));
    }
    if let Some(m) = managed.as_str()
        && !MANAGED_BY.contains(&m)
    {
        errs.push(FieldError::not_supported(
            "spec.runPolicy.managedBy",
            m,
            &MANAGED_BY,
        ));
    }
    let specs = &job["spec"]["tfReplicaSpecs"];
    let Some(specs) = specs.as_object() else {
        errs.push(FieldError::required(
            "spec.tfReplicaSpecs",
            "must be required",
        ));
        return errs;
    };
    let mut chiefs = 0;
    // Go map iteration is unordered; sorted keys keep messages stable.
    let mut keys: Vec<&String> = specs.keys().collect();
    keys.sort();
    for rtype in keys {
        let spec = &specs[rtype];
        if rtype == "Chief" || rtype == "Master" {
            chiefs += 1;
        }
        let cpath = format!("spec.tfReplicaSpecs[{rtype}].template.spec.containers");
        let containers = spec["template"]["spec"]["containers"].as_array();
        let containers = match containers {
            Some(c) if !c.is_empty() => c,
            _ => {
                errs.push(FieldError::required(&cpath, "must be specified"));
                errs.push(FieldError::required(
                    &cpath,
                    "must have at least one container with name tensorflow",
                ));
                continue;
            }
        };
        let mut has_tf = false;
        for (i, c) in containers.iter().enumerate() {
            if c["image"].as_str().unwrap_or("").is_empty() {
                errs.push(FieldError::required(
                    format!("{cpath}[{i}].image"),
                    "must be required",
                ));
            }
            if c["name"] == "tensorflow" {
                has_tf = true;
            }
        }
        if !has_tf {
            errs.push(FieldError::required(
                &cpath,
                "must have at least one container with name tensorflow",
            ));
        }
    }
    if chiefs > 1 {
        errs.push(FieldError::forbidden(
            "spec.tfReplicaSpecs",
            "must not have more than 1 Chief or Master role",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn webhook_no_containers_gives_two_errors() {
        let job = json!({"metadata": {"name": "ok"}, "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {}}}}}});
        assert_eq!(validate_tfjob(None, &job).len(), 2);
    }
    #[test]
    fn schema_prunes_and_types() {
        let crd = crate::crd::builtin_tfjob_crd();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let mut obj = json!({"spec": {"bogus": 1, "tfReplicaSpecs": {"PS": {"replicas": "x", "template": {"metadata": {"annotations": {"a": false}}}}}}});
        let out = check_schema(schema, &mut obj);
        assert_eq!(out.unknown, vec![".spec.bogus"]);
        assert_eq!(out.errors.len(), 2, "{:?}", out.errors);
    }
    #[test]
    fn non_nullable_nulls_are_pruned_in_properties_and_map_values() {
        let crd = crate::crd::builtin_tfjob_crd();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let mut obj = json!({"spec": {"tfReplicaSpecs": {"PS": {"replicas": null, "template": {"spec": {
            "containers": [{"name": "tensorflow", "resources": {"limits": {"cpu": null, "memory": "1Gi"}}}]}}}}}});
        let out = check_schema(schema, &mut obj);
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        let ps = &obj["spec"]["tfReplicaSpecs"]["PS"];
        assert!(ps.get("replicas").is_none(), "{ps}");
        assert_eq!(
            ps["template"]["spec"]["containers"][0]["resources"]["limits"],
            json!({"memory": "1Gi"})
        );
    }
}
