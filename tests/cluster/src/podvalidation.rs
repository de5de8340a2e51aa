//! kube-apiserver's core Pod validation for what the simulated cluster's pods carry, with
//! apimachinery's field paths and wording: k8s.io/kubernetes pkg/apis/core/validation/
//! validation.go `ValidatePodCreate` → `ValidatePodSpec` (validateContainers,
//! validateInitContainers, validateContainerPorts, ValidateEnv/validateEnvVarValueFrom,
//! ValidateVolumes/validateVolumeSource, validateVolumeMounts, ValidateResourceRequirements,
//! validateProbe/validateHandler, validateAffinity, validateDNSPolicy,
//! validatePodSecurityContext, validateTolerations) as of 1.36, where
//! RelaxedEnvironmentVariableValidation is GA and locked on.
//!
//! Run after defaulting (protocol TCP, imagePullPolicy, dnsPolicy are filled in by then) and
//! before the validating admission plugins (quota), as the apiserver orders them.

use serde_json::Value;

use crate::status::FieldError;

struct V {
    errs: Vec<FieldError>,
}

fn arr(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn present(v: &Value) -> bool {
    !v.is_null()
}

fn dup(field: String, v: &str) -> FieldError {
    FieldError {
        reason: "FieldValueDuplicate",
        message: format!("Duplicate value: {v:?}"),
        field,
    }
}

impl V {
    fn push(&mut self, e: FieldError) {
        self.errs.push(e);
    }

    fn enum_of(&mut self, v: &Value, field: String, allowed: &[&str]) {
        if let Some(s) = v.as_str()
            && !allowed.contains(&s)
        {
            self.push(FieldError::not_supported(field, s, allowed));
        }
    }

    /// apimachinery `IsDNS1123Label`.
    fn dns_label(&mut self, v: &Value, field: String) {
        let s = text(v);
        let ok = (1..=63).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-');
        if !ok {
            self.push(FieldError::invalid(
                field,
                v,
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            ));
        }
    }

    fn id_range(&mut self, v: &Value, field: String) {
        if let Some(n) = v.as_i64()
            && !(0..=2_147_483_647).contains(&n)
        {
            self.push(FieldError::invalid(
                field,
                v,
                "must be between 0 and 2147483647, inclusive",
            ));
        }
    }
}

/// Field errors for a Pod object as the apiserver would list them on create.
pub fn validate_pod(pod: &Value) -> Vec<FieldError> {
    let mut v = V { errs: Vec::new() };
    let spec = &pod["spec"];
    let sp = "spec";
    v.enum_of(
        &spec["dnsPolicy"],
        format!("{sp}.dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
    );
    if text(&spec["dnsPolicy"]) == "None" && arr(&spec["dnsConfig"]["nameservers"]).is_empty() {
        v.push(FieldError::required(
            format!("{sp}.dnsConfig"),
            "must provide `dnsConfig` when `dnsPolicy` is None",
        ));
    }
    for k in ["hostname", "subdomain"] {
        if present(&spec[k]) {
            v.dns_label(&spec[k], format!("{sp}.{k}"));
        }
    }
    let sc = &spec["securityContext"];
    for k in ["runAsUser", "runAsGroup", "fsGroup"] {
        v.id_range(&sc[k], format!("{sp}.securityContext.{k}"));
    }
    volumes(&mut v, spec);
    let mut names: Vec<String> = Vec::new();
    for (list, init) in [("initContainers", true), ("containers", false)] {
        for (i, c) in arr(&spec[list]).iter().enumerate() {
            let cp = format!("{sp}.{list}[{i}]");
            let n = text(&c["name"]).to_string();
            if n.is_empty() {
                v.push(FieldError::required(format!("{cp}.name"), ""));
            } else if names.contains(&n) {
                v.push(dup(format!("{cp}.name"), &n));
            } else {
                v.dns_label(&c["name"], format!("{cp}.name"));
                names.push(n);
            }
            container(&mut v, c, &cp, init);
        }
    }
    affinity(&mut v, &spec["affinity"]);
    tolerations(&mut v, spec);
    v.errs
}

/// validateTolerations: known operators and effects, no value with Exists, and
/// tolerationSeconds only for NoExecute.
fn tolerations(v: &mut V, spec: &Value) {
    for (i, t) in arr(&spec["tolerations"]).iter().enumerate() {
        let tp = format!("spec.tolerations[{i}]");
        let effect = text(&t["effect"]);
        if !effect.is_empty() {
            v.enum_of(
                &t["effect"],
                format!("{tp}.effect"),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            );
        }
        match text(&t["operator"]) {
            "Exists" if !text(&t["value"]).is_empty() => v.push(FieldError::invalid(
                format!("{tp}.operator"),
                &t["value"],
                "value must be empty when `operator` is 'Exists'",
            )),
            "" | "Equal" | "Exists" => {}
            op => v.push(FieldError::not_supported(
                format!("{tp}.operator"),
                op,
                &["Equal", "Exists"],
            )),
        }
        if present(&t["tolerationSeconds"]) && effect != "NoExecute" {
            v.push(FieldError::invalid(
                format!("{tp}.effect"),
                &t["effect"],
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
    }
}

/// ValidateVolumes: names, exactly one source, required claim/secret/configMap names.
fn volumes(v: &mut V, spec: &Value) {
    const SOURCES: &[&str] = &[
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
    ];
    for (i, vol) in arr(&spec["volumes"]).iter().enumerate() {
        let vp = format!("spec.volumes[{i}]");
        let mut seen = 0;
        for s in SOURCES {
            if !present(&vol[*s]) {
                continue;
            }
            seen += 1;
            if seen > 1 {
                // validateVolumeSource reports the second source found, in its own order.
                v.push(FieldError::forbidden(
                    format!("{vp}.{s}"),
                    "may not specify more than 1 volume type",
                ));
            }
        }
        // No source: kube-apiserver defaults it to `emptyDir: {}` before validating
        // (SetDefaults_Volume), so it is stored; the real tier's differential saw that.
        for (src, key) in [
            ("persistentVolumeClaim", "claimName"),
            ("secret", "secretName"),
            ("configMap", "name"),
        ] {
            if present(&vol[src]) && text(&vol[src][key]).is_empty() {
                v.push(FieldError::required(format!("{vp}.{src}.{key}"), ""));
            }
        }
    }
}

fn container(v: &mut V, c: &Value, cp: &str, init: bool) {
    v.enum_of(
        &c["imagePullPolicy"],
        format!("{cp}.imagePullPolicy"),
        &["Always", "IfNotPresent", "Never"],
    );
    let mut port_names: Vec<&str> = Vec::new();
    for (j, p) in arr(&c["ports"]).iter().enumerate() {
        let pp = format!("{cp}.ports[{j}]");
        if let Some(n) = p["name"].as_str() {
            let ok = n.len() <= 15
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && n.bytes().any(|b| b.is_ascii_lowercase())
                && !n.contains("--")
                && !n.starts_with('-')
                && !n.ends_with('-');
            if !ok {
                v.push(FieldError::invalid(
                    format!("{pp}.name"),
                    &p["name"],
                    "must be no more than 15 characters; must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-); must contain at least one letter (a-z); must not contain consecutive hyphens; must not begin or end with a hyphen",
                ));
            } else if port_names.contains(&n) {
                v.push(dup(format!("{pp}.name"), n));
            }
            port_names.push(n);
        }
        match p["containerPort"].as_i64() {
            None | Some(0) => v.push(FieldError::required(format!("{pp}.containerPort"), "")),
            Some(n) if !(1..=65535).contains(&n) => v.push(FieldError::invalid(
                format!("{pp}.containerPort"),
                &p["containerPort"],
                "must be between 1 and 65535, inclusive",
            )),
            _ => {}
        }
        v.enum_of(
            &p["protocol"],
            format!("{pp}.protocol"),
            &["SCTP", "TCP", "UDP"],
        );
    }
    for (j, e) in arr(&c["env"]).iter().enumerate() {
        env_var(v, e, &format!("{cp}.env[{j}]"));
    }
    limits(v, &c["resources"], &format!("{cp}.resources"));
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let pr = &c[probe];
        if !present(pr) {
            continue;
        }
        if init && text(&c["restartPolicy"]) != "Always" {
            v.push(FieldError::forbidden(
                format!("{cp}.{probe}"),
                "may not be set for init containers without restartPolicy=Always",
            ));
            continue;
        }
        let handlers = ["exec", "httpGet", "tcpSocket", "grpc"]
            .iter()
            .filter(|h| present(&pr[**h]))
            .collect::<Vec<_>>();
        if handlers.is_empty() {
            v.push(FieldError::required(
                format!("{cp}.{probe}"),
                "must specify a handler type",
            ));
        } else if handlers.len() > 1 {
            v.push(FieldError::forbidden(
                format!("{cp}.{probe}.{}", handlers[1]),
                "may not specify more than 1 handler type",
            ));
        }
    }
}

/// ValidateEnv with the relaxed names of 1.36 (apimachinery `IsRelaxedEnvVarName`), then
/// validateEnvVarValueFrom and validateObjectFieldSelector.
fn env_var(v: &mut V, e: &Value, ep: &str) {
    let name = text(&e["name"]);
    if name.is_empty() {
        v.push(FieldError::required(format!("{ep}.name"), ""));
    } else if name
        .bytes()
        .any(|b| !(0x20..0x7f).contains(&b) || b == b'=')
    {
        v.push(FieldError::invalid(
            format!("{ep}.name"),
            &e["name"],
            "a valid environment variable name must consist only of printable ASCII characters other than '='",
        ));
    }
    let from = &e["valueFrom"];
    if !present(from) {
        return;
    }
    let sources = [
        "fieldRef",
        "resourceFieldRef",
        "configMapKeyRef",
        "secretKeyRef",
    ]
    .iter()
    .filter(|s| present(&from[**s]))
    .count();
    if !text(&e["value"]).is_empty() && sources > 0 {
        v.push(FieldError::invalid(
            format!("{ep}.valueFrom"),
            &Value::String(String::new()),
            "may not be specified when `value` is not empty",
        ));
    }
    if sources == 0 {
        v.push(FieldError::invalid(
            format!("{ep}.valueFrom"),
            &Value::String(String::new()),
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ));
    }
    let path = &from["fieldRef"]["fieldPath"];
    if present(&from["fieldRef"]) {
        const ALLOWED: &[&str] = &[
            "metadata.annotations",
            "metadata.labels",
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
        let p = text(path);
        // metadata.labels['k'] and metadata.annotations['k'] name one entry.
        let base = p.split_once("['").map_or(p, |(b, _)| b);
        let subscripted = base != p;
        let ok = if subscripted {
            base == "metadata.labels" || base == "metadata.annotations"
        } else {
            ALLOWED.contains(&p) && base != "metadata.labels" && base != "metadata.annotations"
        };
        if p.is_empty() {
            v.push(FieldError::required(
                format!("{ep}.valueFrom.fieldRef.fieldPath"),
                "",
            ));
        } else if !ok {
            v.push(FieldError::not_supported(
                format!("{ep}.valueFrom.fieldRef.fieldPath"),
                p,
                &ALLOWED[2..],
            ));
        }
    }
}

/// ValidateResourceRequirements: standard names, requests ≤ limits, and request = limit for
/// resources that are not overcommitted (anything outside the kubernetes.io domain, hugepages).
fn limits(v: &mut V, r: &Value, rp: &str) {
    let num = |q: &Value| -> Option<f64> {
        if let Some(n) = q.as_f64() {
            return Some(n);
        }
        let s = q.as_str()?;
        let split = s
            .find(|ch: char| !(ch.is_ascii_digit() || ch == '.' || ch == '-' || ch == '+'))
            .unwrap_or(s.len());
        let (n, suf) = s.split_at(split);
        let mul = match suf {
            "" => 1.0,
            "m" => 1e-3,
            "k" => 1e3,
            "M" => 1e6,
            "G" => 1e9,
            "T" => 1e12,
            "Ki" => 1024.0,
            "Mi" => 1048576.0,
            "Gi" => 1073741824.0,
            "Ti" => 1099511627776.0,
            _ => return None,
        };
        n.parse::<f64>().ok().map(|x| x * mul)
    };
    for part in ["limits", "requests"] {
        for (k, _) in r[part].as_object().into_iter().flatten() {
            let standard = k.contains('/')
                || matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage")
                || k.starts_with("hugepages-");
            if !standard {
                v.push(FieldError::invalid(
                    format!("{rp}.{part}[{k}]"),
                    &Value::String(k.clone()),
                    "must be a standard resource for containers",
                ));
            }
        }
    }
    for (k, q) in r["requests"].as_object().into_iter().flatten() {
        let overcommit =
            (!k.contains('/') || k.contains("kubernetes.io/")) && !k.starts_with("hugepages-");
        let lim = &r["limits"][k];
        match (num(q), num(lim)) {
            (Some(a), Some(b)) => {
                if a > b + b.abs() * 1e-9 {
                    v.push(FieldError::invalid(
                        format!("{rp}.requests[{k}]"),
                        q,
                        &format!(
                            "must be less than or equal to {k} limit of {}",
                            lim_text(lim)
                        ),
                    ));
                }
                if !overcommit && (a - b).abs() > b.abs() * 1e-9 {
                    v.push(FieldError::invalid(
                        format!("{rp}.requests[{k}]"),
                        q,
                        &format!("must be equal to {k} limit of {}", lim_text(lim)),
                    ));
                }
            }
            (Some(_), None) if !overcommit => v.push(FieldError::required(
                format!("{rp}.limits[{k}]"),
                "Limit must be set for non overcommitable resources",
            )),
            _ => {}
        }
    }
}

fn lim_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// validateAffinity → ValidateNodeSelector / ValidateNodeSelectorRequirement.
fn affinity(v: &mut V, a: &Value) {
    let req = &a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    if !present(req) {
        return;
    }
    let tp = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    let terms = arr(&req["nodeSelectorTerms"]);
    if terms.is_empty() {
        v.push(FieldError::required(
            tp,
            "must have at least one node selector term",
        ));
    }
    for (i, t) in terms.iter().enumerate() {
        for (j, r) in arr(&t["matchExpressions"]).iter().enumerate() {
            let rp = format!("{tp}[{i}].matchExpressions[{j}]");
            let n = arr(&r["values"]).len();
            match text(&r["operator"]) {
                "In" | "NotIn" if n == 0 => v.push(FieldError::required(
                    format!("{rp}.values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )),
                "Exists" | "DoesNotExist" if n > 0 => v.push(FieldError::forbidden(
                    format!("{rp}.values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )),
                "Gt" | "Lt" if n != 1 => v.push(FieldError::required(
                    format!("{rp}.values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )),
                "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
                op => v.push(FieldError::invalid(
                    format!("{rp}.operator"),
                    &Value::String(op.into()),
                    "not a valid selector operator",
                )),
            }
        }
    }
}

/// plugin/pkg/admission/priority/admission.go `admitPod` (a mutating admission plugin, so it
/// runs before validation): the priority is computed from the named PriorityClass, else the
/// global default class, else 0, and a pod that states another value is forbidden.
pub fn admit_priority(classes: &[Value], pod: &Value) -> Result<(), String> {
    let spec = &pod["spec"];
    let class = text(&spec["priorityClassName"]);
    // A named class must exist whether or not the pod states a priority (the two
    // system classes are built in).
    if !class.is_empty()
        && !["system-cluster-critical", "system-node-critical"].contains(&class)
        && !classes
            .iter()
            .any(|c| text(&c["metadata"]["name"]) == class)
    {
        return Err(format!("no PriorityClass with name {class} was found"));
    }
    let Some(given) = spec["priority"].as_i64() else {
        return Ok(());
    };
    let computed = if class.is_empty() {
        classes
            .iter()
            .filter(|c| c["globalDefault"].as_bool() == Some(true))
            .filter_map(|c| c["value"].as_i64())
            .min()
            .unwrap_or(0)
    } else {
        match classes
            .iter()
            .find(|c| text(&c["metadata"]["name"]) == class)
        {
            Some(c) => c["value"].as_i64().unwrap_or(0),
            None => return Err(format!("no PriorityClass with name {class} was found")),
        }
    };
    if given != computed {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {computed} from the given PriorityClass name"
        ));
    }
    Ok(())
}

/// plugin/pkg/admission/runtimeclass/admission.go, `Admit` then `Validate`: a pod naming a
/// RuntimeClass that does not exist is forbidden; a known class's overhead becomes the pod's
/// (`setOverhead`: a different one of the pod's own is forbidden) and its scheduling node
/// selector and tolerations are merged in (`setScheduling`: another value for the same key is
/// a conflict); a pod overhead without a class that defines one is forbidden
/// (`validateOverhead`). Quantities compare by value (`apiequality.Semantic`).
pub fn admit_runtime_class(classes: &[Value], pod: &mut Value) -> Result<(), String> {
    let class = text(&pod["spec"]["runtimeClassName"]).to_string();
    let own = pod["spec"]["overhead"]
        .as_object()
        .filter(|o| !o.is_empty())
        .cloned();
    const WITHOUT: &str =
        "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead";
    if class.is_empty() {
        return match own {
            Some(_) => Err(WITHOUT.into()),
            None => Ok(()),
        };
    }
    let Some(rc) = classes
        .iter()
        .find(|c| text(&c["metadata"]["name"]) == class)
    else {
        return Err(format!("pod rejected: RuntimeClass {class:?} not found"));
    };
    match rc.get("overhead").filter(|o| o.is_object()) {
        Some(o) => {
            let fixed = o["podFixed"].as_object().cloned().unwrap_or_default();
            let same = |a: &serde_json::Map<String, Value>, b: &serde_json::Map<String, Value>| {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        let milli = |v: &Value| {
                            crate::util::parse_quantity_milli(
                                &v.as_str()
                                    .map(String::from)
                                    .unwrap_or_else(|| v.to_string()),
                            )
                        };
                        b.get(k)
                            .is_some_and(|w| milli(v).is_some() && milli(v) == milli(w))
                    })
            };
            if own.as_ref().is_some_and(|own| !same(own, &fixed)) {
                return Err(
                    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
                        .into(),
                );
            }
            pod["spec"]["overhead"] = Value::Object(fixed);
        }
        None if own.is_some() => return Err(WITHOUT.into()),
        None => {}
    }
    if let Some(selector) = rc["scheduling"]["nodeSelector"].as_object() {
        for (k, v) in selector {
            let mine = &pod["spec"]["nodeSelector"][k];
            if !mine.is_null() && mine != v {
                return Err(format!(
                    "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {}; pod.spec.nodeSelector[{k}] = {}",
                    text(v),
                    text(mine)
                ));
            }
        }
        for (k, v) in selector {
            pod["spec"]["nodeSelector"][k] = v.clone();
        }
    }
    if let Some(extra) = rc["scheduling"]["tolerations"].as_array() {
        if !pod["spec"]["tolerations"].is_array() {
            pod["spec"]["tolerations"] = Value::Array(vec![]);
        }
        if let Some(ts) = pod["spec"]["tolerations"].as_array_mut() {
            for t in extra {
                if !ts.contains(t) {
                    ts.push(t.clone());
                }
            }
        }
    }
    Ok(())
}

/// Both pod-create paths (the API and the simulated operator) run this: Priority and
/// RuntimeClass admission, then validation. `Err` is the apiserver's error for the create.
pub fn check_create(
    sh: &crate::state::Shared,
    pod: &mut Value,
) -> Result<(), crate::status::ApiError> {
    let name = text(&pod["metadata"]["name"]).to_string();
    let (classes, _) = sh.store.list("priorityclasses", None);
    admit_priority(&classes, pod).map_err(|m| crate::admission::forbidden(&name, &m))?;
    let (runtimes, _) = sh.store.list("runtimeclasses", None);
    admit_runtime_class(&runtimes, pod).map_err(|m| crate::admission::forbidden(&name, &m))?;
    let errs = validate_pod(pod);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(crate::status::invalid("Pod", "", &name, &errs))
    }
}
