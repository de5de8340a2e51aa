//! The dedicated render flags (`--workers`, `--cpu`, `--pvc`, `--toleration`, …) as a values
//! tree: the last and strongest source.

use super::*;

/// Splits `KEY=VALUE` for --label/--annotation/--env.
pub(super) fn kv(flag: &str, s: &str) -> Result<(String, String)> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| Error::Usage(format!("{flag} {s:?}: expected KEY=VALUE")))
}

/// The dedicated flags as a values tree (the last and strongest source).
pub fn flags_overlay(namespace: Option<&str>, args: &RenderOptions) -> Result<Value> {
    let mut v = serde_json::json!({});
    let o = v.as_object_mut().unwrap();
    let mut put = |path: &str, val: Value| {
        // Paths here are fixed and valid, so set_path cannot fail.
        let _ = set_path_obj(o, path, val);
    };
    if let Some(n) = &args.name {
        put("name", n.clone().into());
    }
    if let Some(n) = namespace {
        put("namespace", n.into());
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
    }
    // --cpu/--memory for every role; a role's own flag replaces them here, and its own setting
    // in a values file or --set makes them step aside (values::resources::yield_to_own).
    for role in ROLES {
        if let Some(c) = &args.cpu {
            put(&format!("{role}.cpu"), c.clone().into());
        }
        if let Some(m) = &args.memory {
            put(&format!("{role}.memory"), m.clone().into());
        }
    }
    for r in &args.pod.per_role {
        put(&format!("{}.{}", r.role, r.key), r.value.clone().into());
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
pub(super) fn volume_name(prefix: &str, source: &str) -> String {
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

pub(super) fn flag_error(flag: &str, arg: &str, form: &str) -> Error {
    Error::Usage(format!("{flag} {arg:?}: expected {form}"))
}

/// `/path` check for mount flags: the kubelet needs an absolute path.
pub(super) fn mount_path(flag: &str, arg: &str, path: &str, form: &str) -> Result<String> {
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
pub(super) fn pod_flags(a: &PodOptions) -> Result<Vec<(&'static str, Vec<Value>)>> {
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
        if !crate::model::TAINT_EFFECTS.contains(&effect) {
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

pub(super) fn set_path_obj(
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
