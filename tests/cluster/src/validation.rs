//! What the API server does with a custom resource's body before storing it: pruning of
//! unknown fields and non-nullable nulls, and `default`s, the order the
//! apiextensions-apiserver uses (what is stored depends on it), plus ObjectMeta's checks. Schema
//! validation errors and the operator's webhook are the scenario's outcomes (refusals.rs).

use serde_json::{Value, json};

use crate::status::FieldError;

/// Result of pruning an object by a CRD structural schema.
#[derive(Debug, Default)]
pub struct SchemaOutcome {
    /// Paths of fields not declared in the schema (pruned; fatal with fieldValidation=Strict).
    pub unknown: Vec<String>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Prunes `obj` (everything except metadata) by `schema`: unknown fields and nulls go,
/// `default`s are applied, the order the apiextensions-apiserver uses.
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
    }
    out
}

fn walk(schema: &Value, v: &mut Value, path: &str, out: &mut SchemaOutcome) {
    if schema["x-kubernetes-int-or-string"] == json!(true) {
        return;
    }
    let ty = schema["type"].as_str();
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

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn schema_prunes_unknown_fields() {
        let crd = crate::crd::builtin_tfjob_crd();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let mut obj = json!({"spec": {"bogus": 1, "tfReplicaSpecs": {"PS": {"replicas": 1}}}});
        let out = check_schema(schema, &mut obj);
        assert_eq!(out.unknown, vec![".spec.bogus"]);
        assert_eq!(
            obj,
            json!({"spec": {"tfReplicaSpecs": {"PS": {"replicas": 1}}}})
        );
    }
    #[test]
    fn non_nullable_nulls_are_pruned_in_properties_and_map_values() {
        let crd = crate::crd::builtin_tfjob_crd();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let mut obj = json!({"spec": {"tfReplicaSpecs": {"PS": {"replicas": null, "template": {"spec": {
            "containers": [{"name": "tensorflow", "resources": {"limits": {"cpu": null, "memory": "1Gi"}}}]}}}}}});
        check_schema(schema, &mut obj);
        let ps = &obj["spec"]["tfReplicaSpecs"]["PS"];
        assert!(ps.get("replicas").is_none(), "{ps}");
        assert_eq!(
            ps["template"]["spec"]["containers"][0]["resources"]["limits"],
            json!({"memory": "1Gi"})
        );
    }
}
