//! The operator's webhook rules and the lint checks, on the raw JSON value.
//!
//! Every check tolerates any shape (a broken manifest may have a string where a map belongs):
//! the schema check reports wrong shapes, these rules report what they can still see.

use serde_json::{Map, Value};

use super::{Context, Finding, Severity, quantity};
use crate::manifest::{join_index, join_key};
use crate::model::{
    API_VERSION, CLEAN_POD_POLICIES, DEFAULT_CONTAINER_NAME, KIND, MANAGED_BY_VALUES,
    RESTART_POLICIES, ReplicaType, SUCCESS_POLICIES,
};

const GPU: &str = "nvidia.com/gpu";

/// Runs every rule.
pub fn check(obj: &Value, ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(root) = obj.as_object() else {
        out.push(Finding::new(
            Severity::Error,
            "document",
            "",
            "a TFJob manifest must be a mapping with apiVersion, kind, metadata and spec",
        ));
        return out;
    };
    identity(root, &mut out);
    if root
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != KIND)
    {
        return out; // another kind of object: its spec rules are not ours
    }
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str);
    metadata(root.get("metadata"), "metadata", true, &mut out);
    let Some(spec) = root.get("spec").and_then(Value::as_object) else {
        if root.get("spec").is_none() {
            out.push(
                Finding::new(
                    Severity::Error,
                    "spec-required",
                    "spec",
                    "must be specified",
                )
                .with_hint(Some(
                    "add spec.tfReplicaSpecs with at least one replica type".into(),
                )),
            );
        }
        return out;
    };
    run_policy(spec, &mut out);
    let Some(replicas) = spec.get("tfReplicaSpecs") else {
        out.push(Finding::new(
            Severity::Error,
            "webhook/replica-specs",
            "spec.tfReplicaSpecs",
            "must be required",
        ));
        return out;
    };
    let Some(replicas) = replicas.as_object() else {
        return out; // schema reports the type
    };
    replica_keys(replicas, &mut out);
    let mut total_known: i64 = 0;
    let mut longest: Option<(String, String)> = None; // (pod name, path)
    for (key, rs) in replicas {
        let path = join_key("spec.tfReplicaSpecs", key);
        let count = replica_spec(key, rs, &path, ctx, &mut out);
        if ReplicaType::from_any_case(key).is_some() {
            total_known += count.unwrap_or(1).max(0);
        }
        let n = count.unwrap_or(1);
        if let Some(name) = name
            && n > 0
        {
            let pod = crate::model::pod_name(name, key, n - 1);
            if longest.as_ref().is_none_or(|(l, _)| pod.len() > l.len()) {
                longest = Some((pod, path.clone()));
            }
        }
    }
    if let (Some(name), Some((pod, _))) = (name, &longest) {
        name_budget(name, pod, &mut out);
    }
    if !replicas.is_empty() && total_known == 1 {
        out.push(
            Finding::new(
                Severity::Info,
                "tf-config",
                "spec.tfReplicaSpecs",
                "one replica in total: the operator sets no TF_CONFIG, so TensorFlow runs single-node",
            )
            .with_hint(Some(
                "fine for single-node training; add workers (or a PS) for distributed training"
                    .into(),
            )),
        );
    }
    out
}

fn identity(root: &Map<String, Value>, out: &mut Vec<Finding>) {
    match root.get("apiVersion").and_then(Value::as_str) {
        Some(API_VERSION) => {}
        Some(other) => out.push(
            Finding::new(
                Severity::Error,
                "api-version",
                "apiVersion",
                format!("is {other:?}; TFJob is served only as {API_VERSION}"),
            )
            .with_hint(Some(format!("apiVersion: {API_VERSION}"))),
        ),
        None => out.push(
            Finding::new(Severity::Error, "api-version", "apiVersion", "missing")
                .with_hint(Some(format!("apiVersion: {API_VERSION}"))),
        ),
    }
    match root.get("kind").and_then(Value::as_str) {
        Some(KIND) => {}
        Some(other) => {
            let hint = other
                .eq_ignore_ascii_case(KIND)
                .then(|| format!("kind: {KIND} (the case matters)"));
            out.push(
                Finding::new(
                    Severity::Error,
                    "kind",
                    "kind",
                    format!("is {other:?}, not a {KIND}; this plugin only handles TFJobs"),
                )
                .with_hint(hint),
            )
        }
        None => out.push(
            Finding::new(Severity::Error, "kind", "kind", "missing")
                .with_hint(Some(format!("kind: {KIND}"))),
        ),
    }
}

/// `metadata` of the job (`top`) or of a pod template.
fn metadata(meta: Option<&Value>, path: &str, top: bool, out: &mut Vec<Finding>) {
    let Some(meta) = meta.and_then(Value::as_object) else {
        if top {
            out.push(Finding::new(
                Severity::Error,
                "webhook/name",
                "metadata.name",
                "missing: a TFJob needs a name",
            ));
        }
        return;
    };
    if top {
        match meta.get("name") {
            Some(Value::String(n)) => {
                if let Err(why) = dns1035(n) {
                    out.push(
                        Finding::new(
                            Severity::Error,
                            "webhook/name",
                            "metadata.name",
                            format!("{n:?} is not a valid TFJob name: {why}"),
                        )
                        .with_hint(Some(format!("e.g. {:?}", suggest_name(n)))),
                    );
                }
            }
            Some(_) => {} // schema reports the type
            None => {
                let msg = if meta.contains_key("generateName") {
                    "missing: the operator's webhook needs a name (generateName is not enough)"
                } else {
                    "missing: a TFJob needs a name"
                };
                out.push(Finding::new(
                    Severity::Error,
                    "webhook/name",
                    "metadata.name",
                    msg,
                ));
            }
        }
        if let Some(Value::String(ns)) = meta.get("namespace")
            && let Err(why) = dns1123_label(ns)
        {
            out.push(Finding::new(
                Severity::Error,
                "namespace",
                "metadata.namespace",
                format!("{ns:?} is not a valid namespace: {why}"),
            ));
        }
    }
    for (field, is_label) in [("labels", true), ("annotations", false)] {
        let fpath = join_key(path, field);
        let Some(map) = meta.get(field).and_then(Value::as_object) else {
            continue;
        };
        for (k, v) in map {
            let kpath = join_key(&fpath, k);
            if let Err(why) = qualified_name(k) {
                out.push(Finding::new(
                    Severity::Error,
                    "metadata-key",
                    kpath.clone(),
                    format!(
                        "{k:?} is not a valid {} key: {why}",
                        &field[..field.len() - 1]
                    ),
                ));
            }
            match v {
                Value::String(s) => {
                    if is_label && let Err(why) = label_value(s) {
                        out.push(Finding::new(
                            Severity::Error,
                            "metadata-value",
                            kpath,
                            format!("label value {s:?} is invalid: {why}"),
                        ));
                    }
                }
                Value::Bool(_) | Value::Number(_) | Value::Null => {
                    let (got, shown) = match v {
                        Value::Null => ("null (an empty value)".to_string(), String::new()),
                        Value::Bool(b) => (format!("boolean {b}"), b.to_string()),
                        other => (format!("number {other}"), other.to_string()),
                    };
                    out.push(
                        Finding::new(
                            Severity::Error,
                            "metadata-value",
                            kpath,
                            format!(
                                "{} values must be strings, got {got}: YAML reads it unquoted as a non-string",
                                &field[..field.len() - 1]
                            ),
                        )
                        .with_hint(Some(format!("quote it: {k}: \"{shown}\""))),
                    );
                }
                _ => {} // schema reports lists/maps
            }
        }
    }
}

fn run_policy(spec: &Map<String, Value>, out: &mut Vec<Finding>) {
    if let Some(Value::String(p)) = spec.get("successPolicy")
        && !SUCCESS_POLICIES.contains(&p.as_str())
    {
        out.push(
            Finding::new(
                Severity::Warning,
                "success-policy",
                "spec.successPolicy",
                format!("{p:?} is not a success policy; the operator treats it as \"\" (worker-0 decides)"),
            )
            .with_hint(Some("use \"\" or AllWorkers".into())),
        );
    }
    let Some(rp) = spec.get("runPolicy").and_then(Value::as_object) else {
        return;
    };
    if let Some(Value::String(p)) = rp.get("cleanPodPolicy")
        && !p.is_empty()
        && !CLEAN_POD_POLICIES.contains(&p.as_str())
    {
        out.push(
            Finding::new(
                Severity::Warning,
                "clean-pod-policy",
                "spec.runPolicy.cleanPodPolicy",
                format!("{p:?} is not All, Running or None; the operator then deletes all pods"),
            )
            .with_hint(
                crate::values::closest(p, CLEAN_POD_POLICIES).map(|c| format!("did you mean {c}?")),
            ),
        );
    }
    if let Some(Value::String(m)) = rp.get("managedBy")
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
    for f in [
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
    ] {
        if let Some(n) = rp.get(f).and_then(Value::as_i64)
            && n < 0
        {
            out.push(Finding::new(
                Severity::Error,
                "run-policy",
                join_key("spec.runPolicy", f),
                format!("must be zero or more, got {n}"),
            ));
        }
    }
    if rp
        .get("activeDeadlineSeconds")
        .is_some_and(Value::is_number)
    {
        out.push(Finding::new(
            Severity::Info,
            "active-deadline",
            "spec.runPolicy.activeDeadlineSeconds",
            "the operator checks the deadline only when another event (a pod change) makes it reconcile (kubeflow/trainer#3358), so a job may run past it",
        ));
    }
    if let Some(mr) = rp
        .get("schedulingPolicy")
        .and_then(|s| s.get("minResources"))
        .and_then(Value::as_object)
    {
        for (k, v) in mr {
            quantity_check(
                v,
                &join_key("spec.runPolicy.schedulingPolicy.minResources", k),
                out,
            );
        }
    }
}

fn replica_keys(replicas: &Map<String, Value>, out: &mut Vec<Finding>) {
    if replicas.is_empty() {
        out.push(
            Finding::new(
                Severity::Error,
                "replica-specs",
                "spec.tfReplicaSpecs",
                "is empty: the job would create no pods",
            )
            .with_hint(Some("add Worker (and PS or Chief) replicas".into())),
        );
    }
    let mut chiefs = 0;
    for key in replicas.keys() {
        let path = join_key("spec.tfReplicaSpecs", key);
        match (ReplicaType::from_exact(key), ReplicaType::from_any_case(key)) {
            (Some(t), _) => {
                if t.is_chief_like() {
                    chiefs += 1;
                }
                if t == ReplicaType::Master {
                    out.push(
                        Finding::new(
                            Severity::Info,
                            "replica-type",
                            path,
                            "Master is kept for backwards compatibility; it behaves like Chief",
                        )
                        .with_hint(Some("rename the key to Chief".into())),
                    );
                }
            }
            (None, Some(t)) => out.push(
                Finding::new(
                    Severity::Warning,
                    "replica-type-case",
                    path,
                    format!(
                        "replica type {key:?} is not in canonical case; the operator maps it to {t}, but tools matching the exact key (status, this plugin's wait) will not"
                    ),
                )
                .with_hint(Some(format!("rename the key to {t}"))),
            ),
            (None, None) => {
                let all = ReplicaType::ALL.map(|t| t.as_str());
                let hint = crate::values::closest(key, all)
                    .map(|c| format!("did you mean {c}?"))
                    .unwrap_or_else(|| format!("use one of {}", all.join(", ")));
                out.push(
                    Finding::new(
                        Severity::Error,
                        "replica-type",
                        path,
                        format!(
                            "unknown replica type {key:?}: the operator would create its pods but never count them for Running/Succeeded; valid types are {}",
                            all.join(", ")
                        ),
                    )
                    .with_hint(Some(hint)),
                )
            }
        }
    }
    if chiefs > 1 {
        out.push(Finding::new(
            Severity::Error,
            "webhook/chief",
            "spec.tfReplicaSpecs",
            "must not have more than 1 Chief or Master role",
        ));
    }
    roles(replicas, out);
}

/// What the operator's status logic and TensorFlow make of the roles present.
fn roles(replicas: &Map<String, Value>, out: &mut Vec<Finding>) {
    let typed = |t: ReplicaType| {
        replicas
            .iter()
            .find(|(k, _)| ReplicaType::from_any_case(k) == Some(t))
    };
    let count = |v: &Value| v.get("replicas").map_or(Some(1), Value::as_i64);
    for t in [
        ReplicaType::Chief,
        ReplicaType::Master,
        ReplicaType::Evaluator,
    ] {
        if let Some((key, spec)) = typed(t)
            && let Some(n) = count(spec).filter(|n| *n > 1)
        {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "replica-count",
                    format!("{}.replicas", join_key("spec.tfReplicaSpecs", key)),
                    format!(
                        "{n} {t} replicas: TensorFlow's cluster spec allows one {} task",
                        t.lower()
                    ),
                )
                .with_hint(Some(
                    "set replicas: 1 (add Workers for more capacity)".into(),
                )),
            );
        }
    }
    let has_chief = typed(ReplicaType::Chief).is_some() || typed(ReplicaType::Master).is_some();
    if !replicas.is_empty() && !has_chief && typed(ReplicaType::Worker).is_none() {
        out.push(
            Finding::new(
                Severity::Warning,
                "no-worker",
                "spec.tfReplicaSpecs",
                "no Chief and no Worker: the operator decides Running and Succeeded from those, so this job never reports either",
            )
            .with_hint(Some("add a Worker (or Chief) replica".into())),
        );
    }
}

/// Checks one replica spec; returns its `replicas` when it is an integer.
fn replica_spec(
    key: &str,
    rs: &Value,
    path: &str,
    ctx: &Context,
    out: &mut Vec<Finding>,
) -> Option<i64> {
    let containers_path = format!("{path}.template.spec.containers");
    let Some(rs) = rs.as_object() else {
        if rs.is_null() {
            out.push(Finding::new(
                Severity::Error,
                "webhook/containers",
                containers_path,
                "must be specified",
            ));
        }
        return None;
    };
    let replicas = match rs.get("replicas") {
        Some(Value::Number(n)) => match n.as_i64() {
            Some(r) if r < 0 => {
                out.push(
                    Finding::new(
                        Severity::Error,
                        "replicas",
                        format!("{path}.replicas"),
                        format!("must be zero or more, got {r}"),
                    )
                    .with_hint(Some(
                        "use 0 to create no pods of this type, or remove the replica type".into(),
                    )),
                );
                Some(r)
            }
            Some(r) if r > i64::from(i32::MAX) => None, // schema reports the range
            Some(r) => {
                if r > 1000 {
                    out.push(Finding::new(
                        Severity::Warning,
                        "replicas",
                        format!("{path}.replicas"),
                        format!(
                            "{r} replicas: the operator creates one pod and one service per replica"
                        ),
                    ));
                }
                Some(r)
            }
            None => None,
        },
        _ => None,
    };
    if let Some(Value::String(p)) = rs.get("restartPolicy")
        && !RESTART_POLICIES.contains(&p.as_str())
    {
        let hint = crate::values::closest(p, RESTART_POLICIES)
            .map(|c| format!("did you mean {c}?"))
            .unwrap_or_else(|| format!("use one of {}", RESTART_POLICIES.join(", ")));
        out.push(
            Finding::new(
                Severity::Error,
                "restart-policy",
                format!("{path}.restartPolicy"),
                format!(
                    "{p:?} is not a restart policy ({}); the operator copies it into the pods, which the API server then rejects",
                    RESTART_POLICIES.join("|")
                ),
            )
            .with_hint(Some(hint)),
        );
    }
    let template = rs.get("template");
    let tmeta = template.and_then(|t| t.get("metadata"));
    metadata(tmeta, &format!("{path}.template.metadata"), false, out);
    let pod = template.and_then(|t| t.get("spec"));
    if ctx.gateway.istio_opt_out && !ctx.will_inject {
        let inject = tmeta
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(crate::gateway::ISTIO_INJECT_ANNOTATION));
        if !matches!(inject, Some(Value::String(s)) if s == "false")
            && !matches!(inject, Some(Value::Bool(false)))
        {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "istio",
                    format!("{path}.template.metadata.annotations"),
                    "istio sidecar injection is not disabled; in a mesh-enabled namespace the sidecar breaks the replicas' gRPC rendezvous",
                )
                .with_hint(Some("add sidecar.istio.io/inject: \"false\" (render/submit add it unless --allow-istio-sidecar)".into())),
            );
        }
    }
    if let Some(p) = pod.and_then(|p| p.get("restartPolicy"))
        && p.is_string()
    {
        out.push(
            Finding::new(
                Severity::Warning,
                "pod-restart-policy",
                format!("{path}.template.spec.restartPolicy"),
                "the operator overwrites the pod template's restartPolicy with the replica's and emits a warning event",
            )
            .with_hint(Some(format!("move it to {path}.restartPolicy"))),
        );
    }
    let containers = pod.and_then(|p| p.get("containers"));
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
            return replicas;
        }
        Some(_) => return replicas, // schema
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
        container(c, &cpath, key, ctx, out);
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
    replicas
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

fn container(
    c: &Map<String, Value>,
    cpath: &str,
    key: &str,
    ctx: &Context,
    out: &mut Vec<Finding>,
) {
    let is_tf = c.get("name").and_then(Value::as_str) == Some(DEFAULT_CONTAINER_NAME);
    // Resources.
    let res = c.get("resources").and_then(Value::as_object);
    let mut gpu_limit: Option<&Value> = None;
    let mut gpu_request: Option<&Value> = None;
    for kind in ["limits", "requests"] {
        let Some(m) = res.and_then(|r| r.get(kind)).and_then(Value::as_object) else {
            continue;
        };
        for (k, v) in m {
            let qpath = join_key(&format!("{cpath}.resources.{kind}"), k);
            quantity_check(v, &qpath, out);
            if k == GPU {
                if kind == "limits" {
                    gpu_limit = Some(v);
                } else {
                    gpu_request = Some(v);
                }
                if let Some(q) = qty_value(v)
                    && q.fract() != 0.0
                {
                    out.push(
                        Finding::new(
                            Severity::Error,
                            "gpu",
                            qpath,
                            format!(
                                "GPUs are whole devices; {} is not a whole number",
                                qty_text(v)
                            ),
                        )
                        .with_hint(Some(format!("{GPU}: 1"))),
                    );
                }
            }
        }
    }
    if let Some(req) = gpu_request {
        let differ = match gpu_limit {
            Some(lim) => qty_value(req) != qty_value(lim),
            None => true,
        };
        if differ {
            out.push(
                Finding::new(
                    Severity::Error,
                    "gpu",
                    format!("{cpath}.resources.requests[{GPU}]"),
                    format!(
                        "{GPU} request ({}) must equal its limit ({}); Kubernetes rejects the pod otherwise",
                        qty_text(req),
                        gpu_limit.map(qty_text).unwrap_or_else(|| "none".into())
                    ),
                )
                .with_hint(Some(format!("set only resources.limits[{GPU}]; the request defaults to it"))),
            );
        }
    }
    let gpus = gpu_limit.or(gpu_request).and_then(qty_value).unwrap_or(0.0);
    if is_tf && let Some(Value::String(image)) = c.get("image") {
        let tag = image_tag(image);
        let gpu_tag = tag.is_some_and(|t| t.contains("gpu"));
        // Parameter servers hold variables on CPU; sharing the workers' GPU image is normal.
        let ps = ReplicaType::from_any_case(key) == Some(ReplicaType::PS);
        if gpu_tag && gpus == 0.0 && !ps {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "gpu-image",
                    format!("{cpath}.image"),
                    format!("the image tag {:?} is a GPU build but the container asks for no GPU, so it runs on CPU", tag.unwrap_or_default()),
                )
                .with_hint(Some(format!("add resources.limits[{GPU}]: 1 (render: --gpus 1), or use the CPU image"))),
            );
        }
        let stock_tf = image
            .split(['@', ':'])
            .next()
            .is_some_and(|r| r.trim_start_matches("docker.io/") == "tensorflow/tensorflow");
        if stock_tf && !gpu_tag && gpus > 0.0 {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "gpu-image",
                    format!("{cpath}.image"),
                    "the container asks for a GPU but the tensorflow/tensorflow tag is not a -gpu build, so the GPU sits idle",
                )
                .with_hint(Some("use a tag ending in -gpu, e.g. tensorflow/tensorflow:2.13.0-gpu".into())),
            );
        }
    }
    env_checks(c, cpath, is_tf, ctx, out);
    for field in ["command", "args"] {
        if let Some(items) = c.get(field).and_then(Value::as_array) {
            for (i, item) in items.iter().enumerate() {
                if let Some(s) = item.as_str() {
                    let candidate = s.split_once('=').map(|(_, v)| v).unwrap_or(s);
                    if looks_like_key(candidate) {
                        out.push(credential_finding(
                            join_index(&format!("{cpath}.{field}"), i),
                            format!(
                                "{field} contains what looks like an API key ({})",
                                mask(candidate)
                            ),
                            ctx,
                        ));
                    }
                }
            }
        }
    }
}

fn env_checks(
    c: &Map<String, Value>,
    cpath: &str,
    is_tf: bool,
    ctx: &Context,
    out: &mut Vec<Finding>,
) {
    let env = c.get("env").and_then(Value::as_array);
    let mut names = Vec::new();
    for (i, e) in env.into_iter().flatten().enumerate() {
        let Some(e) = e.as_object() else { continue };
        let epath = join_index(&format!("{cpath}.env"), i);
        let Some(name) = e.get("name").and_then(Value::as_str) else {
            continue;
        };
        names.push(name);
        let Some(value) = e.get("value").and_then(Value::as_str) else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        let managed = ctx.gateway.key_env_names().iter().any(|n| n == name);
        // Flags and counts are not secrets, whatever the variable is called; `$(VAR)` refers to
        // another variable.
        let trivial = value.chars().all(|c| c.is_ascii_digit())
            || ["true", "false", "yes", "no", "on", "off"]
                .iter()
                .any(|w| value.eq_ignore_ascii_case(w))
            || (value.starts_with("$(") && value.ends_with(')'));
        if name == "TF_CONFIG" {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "tf-config-env",
                    format!("{epath}.name"),
                    "the operator appends its own TF_CONFIG after yours, and the last definition wins, so this one is ignored (on a single-replica job, none is added and yours applies)",
                )
                .with_hint(Some("remove it; the operator builds TF_CONFIG from tfReplicaSpecs".into())),
            );
        }
        if !trivial && (managed || credential_name(name) || looks_like_key(value)) {
            let why = if credential_name(name) || managed {
                format!(
                    "env var {name} holds a literal value ({}) and its name says it is a credential",
                    mask(value)
                )
            } else {
                format!(
                    "env var {name} holds what looks like an API key ({})",
                    mask(value)
                )
            };
            let mut f = credential_finding(format!("{epath}.value"), why, ctx);
            if managed && ctx.will_inject {
                f.message.push_str("; it will be replaced by the Secret reference, but the key is in your file: remove it there and rotate it");
            }
            out.push(f);
        }
        if name.ends_with("BASE_URL") {
            let v1 = value.trim_end_matches('/').ends_with("/v1");
            if name == "OPENAI_BASE_URL" && !v1 {
                out.push(
                    Finding::new(
                        Severity::Warning,
                        "base-url",
                        format!("{epath}.value"),
                        "the openai SDK expects OPENAI_BASE_URL to end in /v1",
                    )
                    .with_hint(Some(format!("{}/v1", value.trim_end_matches('/')))),
                );
            } else if name != "OPENAI_BASE_URL" && v1 {
                out.push(
                    Finding::new(
                        Severity::Warning,
                        "base-url",
                        format!("{epath}.value"),
                        format!("{name} ends in /v1; SDKs append /v1 themselves, giving .../v1/v1 and 404s"),
                    )
                    .with_hint(Some(value.trim_end_matches('/').trim_end_matches("/v1").to_string())),
                );
            }
        }
    }
    if is_tf && ctx.gateway.enabled && !ctx.will_inject {
        let want = ctx.gateway.api_key_env();
        if !names.contains(&want.as_str()) {
            out.push(
                Finding::new(
                    Severity::Info,
                    "gateway-env",
                    format!("{cpath}.env"),
                    format!("no {want}: the training code will not find the gateway key"),
                )
                .with_hint(Some(
                    "kubectl tfjob submit adds it from the Secret (see --api-secret)".into(),
                )),
            );
        }
    }
}

fn credential_finding(path: String, message: String, ctx: &Context) -> Finding {
    Finding::new(Severity::Error, "literal-credential", path, message).with_hint(Some(format!(
        "keep keys out of manifests: `kubectl tfjob secret create {}` stores it, and the job reads it with valueFrom.secretKeyRef",
        ctx.gateway.secret_name
    )))
}

/// Env var names that say "I am a credential".
pub fn credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // Where a credential lives, or how to reach a service, is not itself a credential.
    let about = [
        "_FILE",
        "_PATH",
        "_DIR",
        "_URL",
        "_ENDPOINT",
        "_HOST",
        "_NAME",
        "_ENABLED",
    ];
    if about.iter().any(|s| upper.ends_with(s)) {
        return false;
    }
    let segs: Vec<&str> = upper.split(['_', '-', '.']).collect();
    let has = |s: &str| segs.contains(&s);
    has("TOKEN")
        || has("SECRET")
        || has("PASSWORD")
        || has("PASSWD")
        || has("APIKEY")
        || has("CREDENTIALS")
        || upper.ends_with("API_KEY")
        || upper.ends_with("ACCESS_KEY")
        || upper.ends_with("PRIVATE_KEY")
}

/// Values that look like an API key: known prefixes, or long high-entropy tokens.
pub fn looks_like_key(v: &str) -> bool {
    let v = v.trim();
    let prefixed = [
        "sk-",
        "sk_",
        "ghp_",
        "gho_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "hf_",
        "AKIA",
        "AIza",
    ]
    .iter()
    .any(|p| v.starts_with(p) && v.len() >= 20 && !v.contains(char::is_whitespace));
    if prefixed {
        return true;
    }
    if v.len() < 32 || v.contains("://") || v.starts_with('/') || v.contains(char::is_whitespace) {
        return false;
    }
    let token_chars = v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_+=/.".contains(c));
    let letters = v.chars().any(|c| c.is_ascii_alphabetic());
    let digits = v.chars().any(|c| c.is_ascii_digit());
    token_chars && letters && digits && entropy(v) >= 4.2
}

fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// `sk-…(51 chars)`: enough to recognize which key, never enough to use it.
pub fn mask(v: &str) -> String {
    let n = v.chars().count();
    let prefix: String = match v.find(['-', '_']) {
        Some(i) if i <= 4 => v[..=i].to_string(),
        _ => String::new(),
    };
    format!("{prefix}…({n} chars)")
}

fn qty_value(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => quantity::parse(s).ok(),
        _ => None,
    }
}

fn qty_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn quantity_check(v: &Value, path: &str, out: &mut Vec<Finding>) {
    let parsed = match v {
        Value::String(s) => quantity::parse(s),
        Value::Number(n) if n.is_f64() => Err(format!(
            "{n} is a YAML float; the API server accepts only integers or strings here"
        )),
        Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0)),
        _ => return, // schema reports other types
    };
    match parsed {
        Ok(q) if q < 0.0 => out.push(Finding::new(
            Severity::Error,
            "quantity",
            path,
            format!("{} is negative", qty_text(v)),
        )),
        Ok(_) => {}
        Err(why) => {
            let hint = match v {
                Value::Number(n) => Some(format!("quote it: \"{n}\"")),
                _ => Some("e.g. cpu: \"500m\" or \"2\", memory: \"8Gi\"".into()),
            };
            out.push(
                Finding::new(
                    Severity::Error,
                    "quantity",
                    path,
                    format!("invalid quantity: {why}"),
                )
                .with_hint(hint),
            )
        }
    }
}

fn image_tag(image: &str) -> Option<&str> {
    let no_digest = image.split('@').next()?;
    let last = no_digest.rsplit('/').next()?;
    last.split_once(':').map(|(_, t)| t)
}

fn name_budget(name: &str, longest_pod: &str, out: &mut Vec<Finding>) {
    if dns1035(name).is_err() {
        return; // already reported
    }
    if longest_pod.len() > 63 {
        let cut = longest_pod.len() - 63;
        out.push(
            Finding::new(
                Severity::Error,
                "name-length",
                "metadata.name",
                format!(
                    "too long for its pods: the operator names them <name>-<type>-<index>, and {longest_pod:?} is {} characters, over the 63 allowed for pod and service names",
                    longest_pod.len()
                ),
            )
            .with_hint(Some(format!(
                "shorten the name by at least {cut} character{} (to {} or fewer)",
                if cut == 1 { "" } else { "s" },
                name.len().saturating_sub(cut)
            ))),
        );
    }
}

/// DNS-1035 label: what the webhook requires of a TFJob name.
pub fn dns1035(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > 63 {
        return Err(format!("must be at most 63 characters, is {}", s.len()));
    }
    if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err("must start with a lowercase letter".into());
    }
    label_chars(s)
}

/// DNS-1123 label (namespaces).
pub fn dns1123_label(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 63 {
        return Err("must be 1 to 63 characters".into());
    }
    if !s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return Err("must start with a lowercase letter or digit".into());
    }
    label_chars(s)
}

fn label_chars(s: &str) -> Result<(), String> {
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "may contain only lowercase letters, digits and '-', found {c:?}"
        ));
    }
    if s.ends_with('-') {
        return Err("must end with a letter or digit".into());
    }
    Ok(())
}

fn suggest_name(s: &str) -> String {
    let mut n: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while n.contains("--") {
        n = n.replace("--", "-");
    }
    let n = n.trim_matches('-');
    let n = if n.starts_with(|c: char| c.is_ascii_lowercase()) {
        n.to_string()
    } else {
        format!("tf-{n}")
    };
    n.chars()
        .take(40)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string()
}

/// Label/annotation key: optional DNS-1123 subdomain prefix and '/', then a name of at most
/// 63 characters made of alphanumerics, '-', '_', '.', starting and ending alphanumeric.
pub fn qualified_name(k: &str) -> Result<(), String> {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    if let Some(p) = prefix {
        if p.is_empty() || p.len() > 253 {
            return Err("the prefix before '/' must be 1 to 253 characters".into());
        }
        let ok = p.split('.').all(|l| {
            !l.is_empty()
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
        if !ok {
            return Err(format!(
                "the prefix {p:?} must be a lowercase DNS subdomain"
            ));
        }
    }
    if name.is_empty() || name.len() > 63 {
        return Err("the name part must be 1 to 63 characters".into());
    }
    let alnum = |c: char| c.is_ascii_alphanumeric();
    if !name.starts_with(alnum) || !name.ends_with(alnum) {
        return Err("must start and end with a letter or digit".into());
    }
    if !name.chars().all(|c| alnum(c) || "-_.".contains(c)) {
        return Err("may contain only letters, digits, '-', '_' and '.'".into());
    }
    Ok(())
}

fn label_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    if v.len() > 63 {
        return Err(format!("at most 63 characters, is {}", v.len()));
    }
    let alnum = |c: char| c.is_ascii_alphanumeric();
    if !v.starts_with(alnum)
        || !v.ends_with(alnum)
        || !v.chars().all(|c| alnum(c) || "-_.".contains(c))
    {
        return Err(
            "must be letters, digits, '-', '_', '.', starting and ending with a letter or digit"
                .into(),
        );
    }
    Ok(())
}
