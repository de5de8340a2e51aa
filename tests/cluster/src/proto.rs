//! Just enough of the Kubernetes protobuf encoding to accept the bodies typed clients
//! (e.g. `kubectl create secret generic`) send for Secrets, ConfigMaps and Namespaces.
//! Wire format facts: a `k8s\0` magic prefix, then a `runtime.Unknown` message
//! {1: typeMeta{1: apiVersion, 2: kind}, 2: raw object bytes}; field numbers per
//! k8s.io/api generated.proto.

use base64::Engine;
use serde_json::{Map, Value, json};

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i)?;
        *i += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn fields(b: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let (num, wt) = (key >> 3, key & 7);
        match wt {
            0 => out.push((num, Wire::Varint(varint(b, &mut i)?))),
            2 => {
                let len = varint(b, &mut i)? as usize;
                let s = b.get(i..i + len)?;
                i += len;
                out.push((num, Wire::Bytes(s)));
            }
            1 => i += 8,
            5 => i += 4,
            _ => return None,
        }
    }
    Some(out)
}

fn string(w: &Wire) -> String {
    match w {
        Wire::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Wire::Varint(v) => v.to_string(),
    }
}

/// A map entry message {1: key, 2: value}; `bytes_value` base64-encodes the value.
fn map_entry(w: &Wire, bytes_value: bool) -> Option<(String, Value)> {
    let Wire::Bytes(b) = w else { return None };
    let (mut k, mut v) = (String::new(), Value::String(String::new()));
    for (n, f) in fields(b)? {
        match (n, &f) {
            (1, _) => k = string(&f),
            (2, Wire::Bytes(x)) if bytes_value => {
                v = json!(base64::engine::general_purpose::STANDARD.encode(x))
            }
            (2, _) => v = json!(string(&f)),
            _ => {}
        }
    }
    Some((k, v))
}

fn object_meta(b: &[u8]) -> Option<Value> {
    let mut m = Map::new();
    let (mut labels, mut annotations, mut finalizers) = (Map::new(), Map::new(), Vec::new());
    for (n, f) in fields(b)? {
        match n {
            1 => {
                m.insert("name".into(), json!(string(&f)));
            }
            2 => {
                m.insert("generateName".into(), json!(string(&f)));
            }
            3 => {
                m.insert("namespace".into(), json!(string(&f)));
            }
            6 => {
                m.insert("resourceVersion".into(), json!(string(&f)));
            }
            11 => labels.extend(map_entry(&f, false)),
            12 => annotations.extend(map_entry(&f, false)),
            14 => finalizers.push(json!(string(&f))),
            _ => {}
        }
    }
    if !labels.is_empty() {
        m.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), Value::Object(annotations));
    }
    if !finalizers.is_empty() {
        m.insert("finalizers".into(), Value::Array(finalizers));
    }
    Some(Value::Object(m))
}

/// SelfSubjectAccessReviewSpec{1: resourceAttributes{1: namespace, 2: verb, 3: group,
/// 4: version, 5: resource, 6: subresource, 7: name}, 2: nonResourceAttributes{1: path, 2: verb}}.
fn ssar_spec(b: &[u8]) -> Option<Value> {
    let mut spec = Map::new();
    for (n, f) in fields(b)? {
        let Wire::Bytes(inner) = f else { continue };
        let names: &[&str] = match n {
            1 => &[
                "namespace",
                "verb",
                "group",
                "version",
                "resource",
                "subresource",
                "name",
            ],
            2 => &["path", "verb"],
            _ => continue,
        };
        let mut attrs = Map::new();
        for (n2, f2) in fields(inner)? {
            if let Some(key) = names.get(n2 as usize - 1) {
                attrs.insert(key.to_string(), json!(string(&f2)));
            }
        }
        let key = if n == 1 {
            "resourceAttributes"
        } else {
            "nonResourceAttributes"
        };
        spec.insert(key.into(), Value::Object(attrs));
    }
    Some(Value::Object(spec))
}

/// Decodes a protobuf request body into the JSON object it stands for.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let unsupported = || "unsupported protobuf body".to_string();
    let rest = body.strip_prefix(b"k8s\0").ok_or_else(unsupported)?;
    let (mut api_version, mut kind, mut raw): (String, String, &[u8]) =
        (String::new(), String::new(), &[]);
    for (n, f) in fields(rest).ok_or_else(unsupported)? {
        match (n, f) {
            (1, Wire::Bytes(tm)) => {
                for (n2, f2) in fields(tm).ok_or_else(unsupported)? {
                    match n2 {
                        1 => api_version = string(&f2),
                        2 => kind = string(&f2),
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    let mut obj = json!({"apiVersion": api_version, "kind": kind, "metadata": {}});
    let (mut data, mut extra) = (Map::new(), Map::new());
    for (n, f) in fields(raw).ok_or_else(unsupported)? {
        match (kind.as_str(), n) {
            (_, 1) => {
                if let Wire::Bytes(b) = f {
                    obj["metadata"] = object_meta(b).ok_or_else(unsupported)?;
                }
            }
            ("Secret", 2) => data.extend(map_entry(&f, true)),
            ("Secret", 3) => obj["type"] = json!(string(&f)),
            ("Secret", 4) => extra.extend(map_entry(&f, false)),
            ("Secret", 5) | ("ConfigMap", 4) => {
                obj["immutable"] = json!(matches!(f, Wire::Varint(1)))
            }
            ("ConfigMap", 2) => data.extend(map_entry(&f, false)),
            ("ConfigMap", 3) => extra.extend(map_entry(&f, true)),
            ("Namespace", _) => {}
            ("SelfSubjectAccessReview", 2) => {
                if let Wire::Bytes(b) = f {
                    obj["spec"] = ssar_spec(b).ok_or_else(unsupported)?;
                }
            }
            ("SelfSubjectAccessReview", _) => {}
            _ => {
                return Err(format!(
                    "protobuf bodies for {kind} are not supported by the test cluster; send JSON"
                ));
            }
        }
    }
    if !data.is_empty() {
        obj["data"] = Value::Object(data);
    }
    if !extra.is_empty() {
        obj[if kind == "Secret" {
            "stringData"
        } else {
            "binaryData"
        }] = Value::Object(extra);
    }
    if !matches!(
        kind.as_str(),
        "Secret" | "ConfigMap" | "Namespace" | "SelfSubjectAccessReview"
    ) {
        return Err(format!(
            "protobuf bodies for {kind} are not supported by the test cluster; send JSON"
        ));
    }
    Ok(obj)
}
