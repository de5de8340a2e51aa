//! Environment rules of core Pod validation: ValidateEnv and what it calls for each source of a
//! value, and ValidateEnvFrom.

use serde_json::Value;

use super::super::names::{dns1123_subdomain, env_var_name, qualified_name};
use super::{Out, err, items, s};
use crate::pipeline::manifest::join_index;

/// The fieldRef paths env vars may read (`validEnvDownwardAPIFieldPathExpressions`, 1.36:
/// with the dual-stack `status.hostIPs` and `status.podIPs`).
const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// `validContainerResourceFieldPathExpressions` (plus the hugepages prefixes).
const RESOURCE_FIELD_PATHS: [&str; 6] = [
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
];

/// ValidateEnv → validateEnvVarValueFrom (one source, no `value` beside it),
/// validateObjectFieldSelector, validateContainerResourceFieldSelector,
/// validateConfigMapKeySelector / validateSecretKeySelector, a fileKeyRef against the pod's
/// `volumes`; ValidateEnvFrom.
pub(super) fn env(c: &Value, path: &str, volumes: &[Value], out: &mut Out) {
    for (i, e) in items(c, "env") {
        let epath = join_index(&format!("{path}.env"), i);
        let Some(vf) = e.get("valueFrom").filter(|v| !v.is_null()) else {
            continue;
        };
        let vpath = format!("{epath}.valueFrom");
        let kinds = [
            "fieldRef",
            "resourceFieldRef",
            "configMapKeyRef",
            "secretKeyRef",
            "fileKeyRef",
        ];
        let set: Vec<&str> = kinds
            .iter()
            .copied()
            .filter(|k| vf.get(*k).is_some_and(|x| !x.is_null()))
            .collect();
        match set.len() {
            0 => err(
                out,
                vpath.clone(),
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`".into(),
            ),
            1 => {}
            _ => err(
                out,
                vpath.clone(),
                format!(
                    "may not have more than one field specified at a time: {}",
                    set.join(", ")
                ),
            ),
        }
        if s(e, "value").is_some_and(|v| !v.is_empty()) && !set.is_empty() {
            err(
                out,
                vpath.clone(),
                "may not be specified when `value` is not empty: give value or valueFrom".into(),
            );
        }
        if let Some(fr) = vf.get("fieldRef") {
            field_ref(fr, &format!("{vpath}.fieldRef"), out);
        }
        if let Some(rr) = vf.get("resourceFieldRef") {
            let res = s(rr, "resource").unwrap_or("");
            divisor(rr, res, &format!("{vpath}.resourceFieldRef"), out);
            let hugepages =
                res.starts_with("requests.hugepages-") || res.starts_with("limits.hugepages-");
            if !RESOURCE_FIELD_PATHS.contains(&res) && !hugepages {
                err(
                    out,
                    format!("{vpath}.resourceFieldRef.resource"),
                    format!(
                        "resource {res:?} is not supported: use one of {}",
                        RESOURCE_FIELD_PATHS.join(", ")
                    ),
                );
            }
        }
        if let Some(fk) = vf.get("fileKeyRef").filter(|v| !v.is_null()) {
            file_key_ref(fk, &format!("{vpath}.fileKeyRef"), volumes, out);
        }
        for (k, name_key) in [("configMapKeyRef", "name"), ("secretKeyRef", "name")] {
            if let Some(r) = vf.get(k) {
                let rpath = format!("{vpath}.{k}");
                match s(r, "key") {
                    None | Some("") => err(out, format!("{rpath}.key"), "key is required".into()),
                    Some(key) => {
                        if let Err(e) = config_map_key(key) {
                            err(out, format!("{rpath}.key"), format!("key {key:?} {e}"));
                        }
                    }
                }
                if let Some(n) = s(r, name_key)
                    && let Err(e) = dns1123_subdomain(n)
                {
                    err(
                        out,
                        format!("{rpath}.{name_key}"),
                        format!("name {n:?} {e}"),
                    );
                }
            }
        }
    }
    for (i, e) in items(c, "envFrom") {
        let epath = join_index(&format!("{path}.envFrom"), i);
        let n = ["configMapRef", "secretRef"]
            .iter()
            .filter(|k| e.get(**k).is_some_and(|x| !x.is_null()))
            .count();
        if n != 1 {
            err(
                out,
                epath.clone(),
                if n == 0 {
                    "must specify one of: `configMapRef` or `secretRef`".into()
                } else {
                    "may not have more than one field specified at a time".into()
                },
            );
        }
        // validateConfigMapEnvSource / validateSecretEnvSource: a name that is a DNS
        // subdomain (checked as a prefix: a trailing '-' passes).
        for k in ["configMapRef", "secretRef"] {
            let Some(r) = e.get(k).filter(|v| !v.is_null()) else {
                continue;
            };
            match s(r, "name") {
                None | Some("") => err(
                    out,
                    format!("{epath}.{k}.name"),
                    format!("{k}.name is required"),
                ),
                Some(n) => {
                    let masked = match n.strip_suffix('-') {
                        Some(head) if !head.is_empty() => format!("{head}a"),
                        _ => n.to_string(),
                    };
                    if let Err(m) = dns1123_subdomain(&masked) {
                        err(out, format!("{epath}.{k}.name"), format!("name {n:?} {m}"));
                    }
                }
            }
        }
        if let Some(p) = s(e, "prefix")
            && !p.is_empty()
            && let Err(m) = env_var_name(p)
        {
            err(out, format!("{epath}.prefix"), format!("prefix {p:?} {m}"));
        }
    }
}

/// validateObjectFieldSelector: an allowlisted path, or a subscripted label/annotation.
fn field_ref(fr: &Value, path: &str, out: &mut Out) {
    if let Some(v) = s(fr, "apiVersion")
        && v != "v1"
    {
        err(
            out,
            format!("{path}.apiVersion"),
            format!("apiVersion {v:?} is not supported: only v1"),
        );
    }
    let fp = s(fr, "fieldPath").unwrap_or("");
    if fp.is_empty() {
        err(
            out,
            format!("{path}.fieldPath"),
            "fieldPath is required".into(),
        );
        return;
    }
    // fieldpath.SplitMaybeSubscriptedPath: metadata.labels['k'] / metadata.annotations['k'].
    let subscripted = ["metadata.labels", "metadata.annotations"]
        .iter()
        .find_map(|p| {
            fp.strip_prefix(p)
                .and_then(|r| r.strip_prefix("['"))
                .and_then(|r| r.strip_suffix("']"))
                .map(|k| (*p, k))
        });
    match subscripted {
        Some((_, k)) => {
            if let Err(e) = qualified_name(k) {
                err(
                    out,
                    format!("{path}.fieldPath"),
                    format!("the key {k:?} {e}"),
                );
            }
        }
        None if ENV_FIELD_PATHS.contains(&fp) => {}
        None => err(
            out,
            format!("{path}.fieldPath"),
            format!(
                "fieldPath {fp:?} is not supported: use one of {}, or metadata.labels['KEY'] / metadata.annotations['KEY']",
                ENV_FIELD_PATHS.join(", ")
            ),
        ),
    }
}

/// apimachinery `IsConfigMapKey`: `[-._a-zA-Z0-9]+`, at most 253, not `.` or `..` or `..*`.
fn config_map_key(k: &str) -> Result<(), String> {
    if k.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    if !k
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    {
        return Err("must consist of alphanumeric characters, '-', '_' or '.'".into());
    }
    if k == "." || k == ".." || k.starts_with("..") {
        return Err("must not be '.' or '..' or start with '..'".into());
    }
    Ok(())
}

/// An env var read from a file in a volume (`fileKeyRef`, EnvFiles). Its rules as a real
/// kube-apiserver 1.36.2 answers them (seen by dry runs, and found by the differential run
/// against it): `volumeName` and `path` are required; `path` may be absolute but no segment may
/// be `..`; `key` is required and an env var name (printable ASCII but `=`); the volume must be
/// one of the pod's (`Not found`, also for an empty name) and an emptyDir.
/// A volume that names no source is one: defaulting makes it so (core/v1 defaults.go
/// `SetDefaults_Volume`), and the server takes it (the differential run's second finding).
fn file_key_ref(fk: &Value, path: &str, volumes: &[Value], out: &mut Out) {
    let volume = s(fk, "volumeName").unwrap_or("");
    if volume.is_empty() {
        err(
            out,
            format!("{path}.volumeName"),
            "volumeName is required".into(),
        );
    }
    match s(fk, "path").unwrap_or("") {
        "" => err(out, format!("{path}.path"), "path is required".into()),
        p if p.split('/').any(|seg| seg == "..") => err(
            out,
            format!("{path}.path"),
            format!("path {p:?} must not contain '..'"),
        ),
        _ => {}
    }
    match s(fk, "key").unwrap_or("") {
        "" => err(out, format!("{path}.key"), "key is required".into()),
        k => {
            if let Err(e) = env_var_name(k) {
                err(out, format!("{path}.key"), format!("key {k:?} {e}"));
            }
        }
    }
    match volumes.iter().find(|v| s(v, "name") == Some(volume)) {
        None => err(
            out,
            format!("{path}.volumeName"),
            format!("volume {volume:?} not found in the pod's volumes"),
        ),
        Some(v) if !empty_dir(v) => err(
            out,
            format!("{path}.volumeName"),
            format!(
                "volume {volume:?} must be an emptyDir: a fileKeyRef reads an env file the pod writes there"
            ),
        ),
        Some(_) => {}
    }
}

/// An emptyDir volume, or one that names no source, which defaulting makes an emptyDir.
fn empty_dir(v: &Value) -> bool {
    v.get("emptyDir").is_some_and(|e| !e.is_null())
        || v.as_object()
            .is_some_and(|m| m.iter().all(|(k, x)| k == "name" || x.is_null()))
}

/// validateContainerResourceDivisor: a divisor other than zero must be, in its canonical form,
/// 1m or 1 for cpu, and 1, 1k … 1E or 1Ki … 1Ei for memory and ephemeral storage (kubernetes
/// `pkg/apis/core/validation` validContainerResourceDivisorFor*; the real 1.36 server: `Invalid
/// value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`).
/// The canonical form keeps a binary suffix only when one was written: 1024 stays "1024".
pub(super) fn divisor(rr: &Value, resource: &str, path: &str, out: &mut Out) {
    let Some(text) = rr.get("divisor").map(|d| match d {
        Value::String(t) => t.clone(),
        other => other.to_string(),
    }) else {
        return;
    };
    let Ok(q) = crate::model::quantity::parse(text.trim()) else {
        return; // not a quantity: the schema's error
    };
    let Some(milli) = q.milli() else {
        return;
    };
    if milli == 0 {
        return;
    }
    let one = 1000i128;
    let (ok, what) = match resource {
        "limits.cpu" | "requests.cpu" => (
            milli == 1 || milli == one,
            "1m and 1 are supported with the cpu resource",
        ),
        "limits.memory"
        | "requests.memory"
        | "limits.ephemeral-storage"
        | "requests.ephemeral-storage" => {
            // `1e3` keeps its exponent form when canonical: only `1k` is in the set.
            let exponent = text.trim().rsplit_once(['e', 'E']).is_some_and(|(_, x)| {
                !x.is_empty()
                    && x.trim_start_matches(['+', '-'])
                        .bytes()
                        .all(|b| b.is_ascii_digit())
            });
            let decimal =
                (0..=6).any(|k| milli == one * 10i128.pow(3 * k)) && (!exponent || milli == one);
            let binary = q.is_binary() && (1..=6).any(|k| milli == one << (10 * k));
            (
                decimal || binary,
                if resource.ends_with("memory") {
                    "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"
                } else {
                    "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"
                },
            )
        }
        _ => return,
    };
    if !ok {
        err(
            out,
            format!("{path}.divisor"),
            format!("Invalid value: {resource:?}: only divisor's values {what}"),
        );
    }
}
