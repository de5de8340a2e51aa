//! Patch types the apiserver accepts. Strategic merge and server-side apply are
//! simplified to JSON merge semantics (lists are replaced, not merged by key).

use serde_json::{Map, Value};

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().unwrap();
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// Merge keys of the core/v1 list fields strategic merge patch merges element-wise
/// (from the `patchMergeKey` tags in k8s.io/api); other lists are replaced.
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "ports" => "containerPort",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "conditions" => "type",
        "ownerReferences" => "uid",
        "hostAliases" => "ip",
        _ => return None,
    })
}

/// Strategic merge patch: JSON merge semantics, except that lists with a known merge key
/// are merged element by element (`$patch: delete` removes one); other `$` directives are
/// ignored.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().unwrap();
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        match (v, merge_key(k), t.get_mut(k)) {
            (Value::Null, _, _) => {
                t.remove(k);
            }
            (Value::Array(items), Some(key), Some(Value::Array(cur))) => {
                for item in items {
                    let id = &item[key];
                    let pos = cur.iter().position(|c| !id.is_null() && c[key] == *id);
                    let delete = item["$patch"] == "delete";
                    match (pos, delete) {
                        (Some(i), true) => {
                            cur.remove(i);
                        }
                        (Some(i), false) => strategic_merge_patch(&mut cur[i], item),
                        (None, false) => {
                            let mut fresh = Value::Null;
                            strategic_merge_patch(&mut fresh, item);
                            cur.push(fresh);
                        }
                        (None, true) => {}
                    }
                }
            }
            (Value::Object(_), _, _) => {
                strategic_merge_patch(t.entry(k.clone()).or_insert(Value::Null), v)
            }
            _ => {
                t.insert(k.clone(), strip_directives(v));
            }
        }
    }
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// Server-side apply, approximated: the applied configuration is merged in (nulls ignored).
pub fn apply_patch(target: &mut Value, applied: &Value) {
    match applied {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().unwrap();
            for (k, v) in p {
                if !v.is_null() {
                    apply_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// Server-side apply's ownership rule, for a single manager: fields this manager applied
/// last time but left out now are removed (maps/objects recursively; lists are atomic).
pub fn remove_dropped(target: &mut Value, previous: &Value, applied: &Value) {
    let (Some(t), Some(prev)) = (target.as_object_mut(), previous.as_object()) else {
        return;
    };
    let now = applied.as_object();
    for (k, pv) in prev {
        match now.and_then(|n| n.get(k)) {
            None => {
                t.remove(k);
            }
            Some(nv) => {
                if let Some(tv) = t.get_mut(k) {
                    remove_dropped(tv, pv, nv);
                }
            }
        }
    }
}

fn unescape(tok: &str) -> String {
    tok.replace("~1", "/").replace("~0", "~")
}

fn split_ptr(path: &str) -> Result<(String, String), String> {
    let idx = path
        .rfind('/')
        .ok_or_else(|| format!("invalid path {path:?}"))?;
    Ok((path[..idx].to_string(), unescape(&path[idx + 1..])))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split_ptr(path)?;
    let p = doc
        .pointer_mut(&parent)
        .ok_or_else(|| format!("doc is missing path: {path:?}: missing value"))?;
    match p {
        Value::Object(m) => {
            m.insert(last, value);
            Ok(())
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(value);
                return Ok(());
            }
            let i: usize = last
                .parse()
                .map_err(|_| format!("invalid index {last:?}"))?;
            if i > a.len() {
                return Err(format!(
                    "add operation does not apply: doc is missing path: {path:?}"
                ));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(format!("doc is missing path: {path:?}")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split_ptr(path)?;
    let p = doc
        .pointer_mut(&parent)
        .ok_or_else(|| format!("doc is missing path: {path:?}"))?;
    match p {
        Value::Object(m) => m
            .remove(&last)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {last}: missing value")),
        Value::Array(a) => {
            let i: usize = last
                .parse()
                .map_err(|_| format!("invalid index {last:?}"))?;
            if i >= a.len() {
                return Err(format!(
                    "Unable to access invalid index: {i}: invalid index referenced"
                ));
            }
            Ok(a.remove(i))
        }
        _ => Err(format!("doc is missing path: {path:?}")),
    }
}

/// RFC 6902 JSON patch (add, remove, replace, move, copy, test).
pub fn json_patch(doc: &mut Value, ops: &Value) -> Result<(), String> {
    let ops = ops.as_array().ok_or("json patch must be an array")?;
    for op in ops {
        let path = op["path"].as_str().unwrap_or("");
        match op["op"].as_str().unwrap_or("") {
            "add" => add(doc, path, op["value"].clone())?,
            "remove" => {
                remove(doc, path)?;
            }
            "replace" => {
                if doc.pointer(path).is_none() {
                    return Err(format!(
                        "replace operation does not apply: doc is missing key: {path}: missing value"
                    ));
                }
                *doc.pointer_mut(path).unwrap() = op["value"].clone();
            }
            "move" => {
                let from = op["from"].as_str().unwrap_or("");
                let v = remove(doc, from)?;
                add(doc, path, v)?;
            }
            "copy" => {
                let from = op["from"].as_str().unwrap_or("");
                let v = doc
                    .pointer(from)
                    .cloned()
                    .ok_or_else(|| format!("copy from missing path {from:?}"))?;
                add(doc, path, v)?;
            }
            "test" => {
                if doc.pointer(path) != Some(&op["value"]) {
                    return Err(format!("testing value {path} failed: test failed"));
                }
            }
            other => return Err(format!("Unexpected kind: {other}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    #[test]
    fn patches() {
        let mut d = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge_patch(&mut d, &json!({"a": {"b": null, "d": 3}}));
        assert_eq!(d, json!({"a": {"c": 2, "d": 3}, "l": [1, 2]}));
        json_patch(&mut d, &json!([{"op": "add", "path": "/l/-", "value": 3}, {"op": "replace", "path": "/a/c", "value": 9}])).unwrap();
        assert_eq!(d, json!({"a": {"c": 9, "d": 3}, "l": [1, 2, 3]}));
    }
    #[test]
    fn strategic_merges_lists_by_key() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]}, {"name": "b", "image": "2"}]}});
        strategic_merge_patch(
            &mut pod,
            &json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}, {"name": "b", "$patch": "delete"}]}}),
        );
        assert_eq!(
            pod,
            json!({"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]}})
        );
    }
}
