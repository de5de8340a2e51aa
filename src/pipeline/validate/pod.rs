//! What core Pod validation would refuse when the operator creates pods from a replica template.
//!
//! The API server stores a TFJob whose pod template is wrong (the CRD schema leaves it open), and
//! the operator's pod creation is then refused, so the job sits there without pods. These checks
//! follow k8s.io/kubernetes pkg/apis/core/validation/validation.go (`ValidatePodSpec`,
//! `validateContainers`, `ValidateEnv`, `validateTolerations`, `ValidateVolumes`,
//! `validateVolumeMounts`, `ValidateAnnotations` via apimachinery's `ValidateAnnotationsSize`)
//! and, for images, the reference grammar of distribution/reference (regexp.go), which the
//! kubelet applies before pulling (`InvalidImageName`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::names::{dns1123_label, env_var_name, qualified_name};
use super::{Finding, Severity};
use crate::pipeline::manifest::{join_index, join_key};
// The known effects live in `model` so `values` (the --toleration flag) reads them too.
use crate::model::TAINT_EFFECTS;

/// apimachinery's `TotalAnnotationSizeLimitB`: keys plus values of one object.
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Every pod-template problem of a TFJob (as JSON), as errors with field paths.
pub fn check(obj: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    annotations_size(
        obj.pointer("/metadata/annotations"),
        "metadata.annotations",
        &mut out,
    );
    let Some(specs) = obj
        .pointer("/spec/tfReplicaSpecs")
        .and_then(Value::as_object)
    else {
        return out;
    };
    for (rtype, spec) in specs {
        let base = join_key("spec.tfReplicaSpecs", rtype);
        let tpath = format!("{base}.template");
        let Some(t) = spec.get("template") else {
            continue;
        };
        annotations_size(
            t.pointer("/metadata/annotations"),
            &format!("{tpath}.metadata.annotations"),
            &mut out,
        );
        if let Some(ps) = t.get("spec") {
            // Judged as the operator sends it: an empty string it leaves out is not refused, and
            // its tfjob-port is there (with hostNetwork, it takes host port 2222 too).
            let mut sent = ps.clone();
            crate::operator_pods::wire::omit_empty(&mut sent);
            crate::operator_pods::wire::add_default_port(&mut sent);
            // The operator writes the replica's policy on the pod (ExitCode as Never).
            sent["restartPolicy"] = crate::operator_pods::pod_restart_policy(
                spec.get("restartPolicy").and_then(Value::as_str),
            )
            .into();
            pod_spec(&sent, &format!("{tpath}.spec"), &mut out);
        }
    }
    out
}

fn err(out: &mut Vec<Finding>, path: String, message: String, hint: Option<String>) {
    out.push(Finding::new(Severity::Error, "pod", path, message).with_hint(hint));
}

fn annotations_size(a: Option<&Value>, path: &str, out: &mut Vec<Finding>) {
    let Some(m) = a.and_then(Value::as_object) else {
        return;
    };
    let total: usize = m
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if total > MAX_ANNOTATIONS_BYTES {
        err(
            out,
            path.to_string(),
            format!(
                "annotations total {total} bytes; the API server allows at most {MAX_ANNOTATIONS_BYTES} (256 KiB) per object"
            ),
            Some("keep large data in a ConfigMap and mount it (--config-map NAME:/path)".into()),
        );
    }
}

fn strs<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// Core Pod validation of one pod spec (also run on exported JobSet templates, `jobset::validate`).
pub fn pod_spec(ps: &Value, path: &str, out: &mut Vec<Finding>) {
    let mut volume_names = Vec::new();
    for (i, vol) in strs(ps, "volumes") {
        let vpath = join_index(&format!("{path}.volumes"), i);
        match vol.get("name").and_then(Value::as_str) {
            Some(n) => {
                if let Err(e) = dns1123_label(n) {
                    err(
                        out,
                        format!("{vpath}.name"),
                        format!("volume name {n:?} {e}"),
                        None,
                    );
                }
                if volume_names.contains(&n) {
                    err(
                        out,
                        format!("{vpath}.name"),
                        format!("volume name {n:?} is used twice"),
                        None,
                    );
                }
                volume_names.push(n);
            }
            None => err(
                out,
                format!("{vpath}.name"),
                "a volume needs a name".into(),
                None,
            ),
        }
    }
    for key in ["containers", "initContainers"] {
        for (i, c) in strs(ps, key) {
            container(
                c,
                &join_index(&format!("{path}.{key}"), i),
                &volume_names,
                out,
            );
        }
    }
    for (i, t) in strs(ps, "tolerations") {
        toleration(t, &join_index(&format!("{path}.tolerations"), i), out);
    }
    for (i, s) in strs(ps, "imagePullSecrets") {
        if s.get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            // pkg/api/pod/warnings.go: the API server warns ("invalid empty name") and stores it.
            out.push(Finding::new(
                Severity::Warning,
                "pod",
                join_index(&format!("{path}.imagePullSecrets"), i),
                "an imagePullSecrets entry without a name is ignored (the API server warns: invalid empty name)",
            ));
        }
    }
    // ValidatePodSpec: these name objects (ValidateServiceAccountName, ValidatePriorityClassName,
    // ValidateRuntimeClassName), DNS-1123 subdomains.
    for key in [
        "serviceAccountName",
        "priorityClassName",
        "runtimeClassName",
    ] {
        if let Some(n) = ps.get(key).and_then(Value::as_str)
            && let Err(e) = super::names::dns1123_subdomain(n)
        {
            err(out, format!("{path}.{key}"), format!("{n:?} {e}"), None);
        }
    }
    super::podrules::pod_spec(ps, path, out);
    pod_resources(ps, path, out);
    if let Some(m) = ps.get("nodeSelector").and_then(Value::as_object) {
        for k in m.keys() {
            if let Err(e) = qualified_name(k) {
                err(
                    out,
                    join_key(&format!("{path}.nodeSelector"), k),
                    format!("label key {k:?} {e}"),
                    None,
                );
            }
        }
    }
}

/// Pod-level `resources` (on by default since 1.34): only cpu, memory and hugepages-<size>,
/// and no request above its limit (kubernetes `pkg/apis/core/validation` validatePodResources;
/// the real 1.36 server's words: `Unsupported value: "nvidia.com/gpu": supported values: "cpu",
/// "hugepages-", "memory"` and `must be less than or equal to cpu limit of 2`).
fn pod_resources(ps: &Value, path: &str, out: &mut Vec<Finding>) {
    if ps
        .pointer("/resources/claims")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
    {
        err(
            out,
            format!("{path}.resources.claims"),
            "Forbidden: claims may not be set for Resources at pod-level".into(),
            Some("name the claims on the containers' resources.claims".into()),
        );
    }
    let part = |k: &str| {
        ps.pointer(&format!("/resources/{k}"))
            .and_then(Value::as_object)
    };
    for k in ["limits", "requests"] {
        for name in part(k).into_iter().flatten().map(|(n, _)| n) {
            if !(name == "cpu" || name == "memory" || name.starts_with("hugepages-")) {
                err(
                    out,
                    join_key(&format!("{path}.resources.{k}"), name),
                    format!("Unsupported value: {name:?}: supported values: \"cpu\", \"hugepages-\", \"memory\" (pod-level resources)"),
                    Some("set extended resources such as nvidia.com/gpu on the container's resources".into()),
                );
            }
        }
    }
    if part("requests").is_none() && part("limits").is_none() {
        return;
    }
    let aggregate = aggregate_container_requests(ps);
    let lim = part("limits");
    // validatePodResourceConsistency: an explicit pod request covers the containers' aggregate
    // (the real 1.36 server: `spec.resources.requests[cpu]: Invalid value: "1": must be greater
    // than or equal to aggregate container requests of 2`).
    for (name, r) in part("requests").into_iter().flatten() {
        if let (Some(rq), Some(&agg)) = (quantity(r), aggregate.get(name.as_str()))
            && agg > rq
        {
            err(
                out,
                format!("{path}.resources.requests[{name}]"),
                format!(
                    "Invalid value: {:?}: must be greater than or equal to aggregate container requests of {}",
                    text(r),
                    crate::model::quantity::format_quantity(name, agg)
                ),
                None,
            );
        }
    }
    // ... and no container's limit exceeds the pod's (`spec.resources.containers[0][memory].
    // limits: Invalid value: "2Gi": must be less than or equal to pod limits of 1Gi`).
    let containers = ps.get("containers").and_then(Value::as_array);
    for (i, c) in containers.into_iter().flatten().enumerate() {
        for (name, l) in c
            .pointer("/resources/limits")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let (Some(cl), Some(pl)) = (quantity(l), lim.and_then(|m| m.get(name)))
                && quantity(pl).is_some_and(|pl| cl > pl)
            {
                err(
                    out,
                    format!("{path}.resources.containers[{i}][{name}].limits"),
                    format!(
                        "Invalid value: {:?}: must be less than or equal to pod limits of {}",
                        text(l),
                        text(pl)
                    ),
                    None,
                );
            }
        }
    }
    // A pod request left out defaults to the containers' aggregate, or to the pod limit
    // without one (kubernetes `pkg/apis/core/v1/defaults.go` defaultPodRequests), and then may
    // not exceed the pod limit (validatePodResources: `must be less than or equal to cpu limit
    // of 1`, with the aggregate as the value when it was defaulted).
    let Some(lim) = lim else {
        return;
    };
    let req = part("requests");
    for (name, l) in lim {
        let (value, shown) = match req.and_then(|r| r.get(name)) {
            Some(r) => (quantity(r), text(r)),
            None => match aggregate.get(name.as_str()) {
                Some(&agg) => (
                    Some(agg),
                    crate::model::quantity::format_quantity(name, agg),
                ),
                None => continue,
            },
        };
        if let (Some(rq), Some(lq)) = (value, quantity(l))
            && rq > lq
        {
            err(
                out,
                format!("{path}.resources.requests"),
                format!(
                    "Invalid value: {shown:?}: must be less than or equal to {name} limit of {}",
                    text(l)
                ),
                None,
            );
        }
    }
}

/// A quantity as the manifest wrote it (`"500m"` or `2`), as text and in milli-units.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn quantity(v: &Value) -> Option<i128> {
    crate::model::quantity::parse_quantity(&text(v))
}

/// The containers' aggregate request per resource, as the API server derives a pod's
/// (k8s.io/component-helpers `resource.AggregateContainerRequests`, KEP-753's formula): the
/// regular containers and the sidecars (init containers with `restartPolicy: Always`) summed,
/// or an init container's request plus the sidecars started before it, whichever is larger.
/// A container's request defaults to its limit. Milli-units; only resources some container
/// requests.
fn aggregate_container_requests(ps: &Value) -> BTreeMap<String, i128> {
    let requests = |c: &Value| -> BTreeMap<String, i128> {
        let get = |k: &str| {
            c.pointer(&format!("/resources/{k}"))
                .and_then(Value::as_object)
        };
        // Requests after limits: a request written wins over the limit it defaults to.
        let mut out = BTreeMap::new();
        for k in ["limits", "requests"] {
            for (name, v) in get(k).into_iter().flatten() {
                if let Some(q) = quantity(v) {
                    out.insert(name.clone(), q);
                }
            }
        }
        out
    };
    let add = |into: &mut BTreeMap<String, i128>, from: &BTreeMap<String, i128>| {
        for (k, v) in from {
            *into.entry(k.clone()).or_insert(0) += v;
        }
    };
    let mut total = BTreeMap::new();
    for c in ps
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add(&mut total, &requests(c));
    }
    let mut sidecars = BTreeMap::new();
    let mut init_peak: BTreeMap<String, i128> = BTreeMap::new();
    for c in ps
        .get("initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let r = requests(c);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut sidecars, &r);
            add(&mut total, &r);
        } else {
            let mut during = sidecars.clone();
            add(&mut during, &r);
            for (k, v) in during {
                let peak = init_peak.entry(k).or_insert(0);
                *peak = (*peak).max(v);
            }
        }
    }
    for (k, v) in init_peak {
        let t = total.entry(k).or_insert(0);
        *t = (*t).max(v);
    }
    total
}

fn container(c: &Value, path: &str, volumes: &[&str], out: &mut Vec<Finding>) {
    if let Some(n) = c.get("name").and_then(Value::as_str)
        && let Err(e) = dns1123_label(n)
    {
        err(
            out,
            format!("{path}.name"),
            format!("container name {n:?} {e}"),
            None,
        );
    }
    // Pod validation checks only that the image has no surrounding spaces (validateContainers);
    // a reference the runtime cannot parse is stored and fails at pull (InvalidImageName).
    if let Some(image) = c.get("image").and_then(Value::as_str)
        && image.trim() != image
    {
        err(
            out,
            format!("{path}.image"),
            format!("Invalid value: {image:?}: must not have leading or trailing whitespace"),
            Some(format!("write it as {:?}", image.trim())),
        );
    } else if let Some(image) = c.get("image").and_then(Value::as_str)
        && let Err(e) = image_reference(image)
    {
        out.push(
            Finding::new(
                Severity::Warning,
                "pod",
                format!("{path}.image"),
                format!("image {image:?} is stored, but it is not a valid image reference, so the kubelet cannot pull it (InvalidImageName): {e}"),
            )
            .with_hint(Some("write it as [registry/]repository[:tag][@digest], e.g. tensorflow/tensorflow:2.13.0".into())),
        );
    }
    // An env var read from a file names a volume of the pod (the real 1.36 server answers
    // `…fileKeyRef.volumeName: Not found` otherwise; seen by the real tier's differential).
    for (j, e) in strs(c, "env") {
        if let Some(v) = e
            .pointer("/valueFrom/fileKeyRef/volumeName")
            .and_then(Value::as_str)
            && !volumes.contains(&v)
        {
            err(
                out,
                format!(
                    "{}.valueFrom.fileKeyRef.volumeName",
                    join_index(&format!("{path}.env"), j)
                ),
                format!("Not found: {v:?}: the pod has no volume of that name"),
                Some(format!(
                    "add an emptyDir volume named {v:?} that an init container fills with the env file"
                )),
            );
        }
    }
    for (j, e) in strs(c, "env") {
        if let Some(n) = e.get("name").and_then(Value::as_str)
            && let Err(msg) = env_var_name(n)
        {
            let hint = n.split_once('=').map(|(k, v)| format!("write the name and the value apart: name: {k:?}, value: {v:?} (render: --env {k}={v})"));
            err(
                out,
                format!("{}.name", join_index(&format!("{path}.env"), j)),
                format!("env var name {n:?} {msg}"),
                hint,
            );
        }
    }
    for (j, m) in strs(c, "volumeMounts") {
        let mpath = join_index(&format!("{path}.volumeMounts"), j);
        match m.get("name").and_then(Value::as_str) {
            Some(n) if !volumes.contains(&n) => err(
                out,
                format!("{mpath}.name"),
                format!("mounts volume {n:?}, which the pod does not define"),
                Some(format!(
                    "add a volume named {n:?} to the pod's volumes (render: --pvc, --config-map, --secret-volume, --empty-dir)"
                )),
            ),
            _ => {}
        }
        if m.get("mountPath")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            err(
                out,
                format!("{mpath}.mountPath"),
                "a volume mount needs a mountPath".into(),
                None,
            );
        }
    }
    for part in ["limits", "requests"] {
        if let Some(m) = c
            .pointer(&format!("/resources/{part}"))
            .and_then(Value::as_object)
        {
            for k in m.keys() {
                if let Err(e) = qualified_name(k) {
                    err(
                        out,
                        join_key(&format!("{path}.resources.{part}"), k),
                        format!("resource name {k:?} {e}"),
                        None,
                    );
                }
            }
        }
    }
}

/// validation.go `validateTolerations`: known effects and operators; `Exists` takes no value;
/// an empty key needs `Exists`; `tolerationSeconds` only with NoExecute; an `Equal` value is a
/// label value.
fn toleration(t: &Value, path: &str, out: &mut Vec<Finding>) {
    let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
    let (key, op, value, effect) = (s("key"), s("operator"), s("value"), s("effect"));
    if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
        err(
            out,
            format!("{path}.effect"),
            format!(
                "toleration effect {effect:?} is not NoSchedule, PreferNoSchedule or NoExecute"
            ),
            None,
        );
    }
    if !["", "Exists", "Equal"].contains(&op) {
        err(
            out,
            format!("{path}.operator"),
            format!("toleration operator {op:?} is not Exists or Equal"),
            None,
        );
    }
    if op == "Exists" && !value.is_empty() {
        err(
            out,
            format!("{path}.value"),
            "a toleration with operator Exists takes no value".into(),
            None,
        );
    }
    if key.is_empty() && op != "Exists" {
        err(
            out,
            format!("{path}.operator"),
            "a toleration without a key must use operator Exists".into(),
            None,
        );
    }
    if t.get("tolerationSeconds").is_some_and(|v| !v.is_null()) && effect != "NoExecute" {
        err(
            out,
            format!("{path}.effect"),
            "effect must be 'NoExecute' when `tolerationSeconds` is set".into(),
            None,
        );
    }
    if op != "Exists"
        && let Err(e) = super::names::label_value(value)
    {
        err(
            out,
            format!("{path}.value"),
            format!("toleration value {value:?} {e}"),
            None,
        );
    }
    if !key.is_empty()
        && let Err(e) = qualified_name(key)
    {
        err(
            out,
            format!("{path}.key"),
            format!("toleration key {key:?} {e}"),
            None,
        );
    }
}

/// distribution/reference (reference.go grammar, regexp.go):
/// `name [":" tag] ["@" digest]`, name = `[domain "/"] path-component ("/" path-component)*`,
/// path-component = `[a-z0-9]+ (separator [a-z0-9]+)*` with separators `.`, `_`, `__`, `-+`,
/// tag = `[\w][\w.-]{0,127}`, digest = `algorithm ":" hex{32,}`, name at most 255 characters.
pub fn image_reference(image: &str) -> Result<(), String> {
    if image.is_empty() {
        return Err("it is empty".into());
    }
    if let Some(c) = image.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "it contains {c:?} (whitespace or a control character)"
        ));
    }
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    // A ':' after the last '/' starts the tag (a ':' before it is a registry port).
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].find(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if name.len() > 255 {
        return Err("the repository name is longer than 255 characters".into());
    }
    let mut comps: Vec<&str> = name.split('/').collect();
    // The first component is a registry when it has '.' or ':' or is localhost (docker's rule),
    // or when it has uppercase letters, which a repository path never has.
    if comps.len() > 1 {
        let first = comps[0];
        if first.contains(['.', ':'])
            || first == "localhost"
            || first.chars().any(|c| c.is_ascii_uppercase())
        {
            // The grammar's domain is optional: a first part that is no host name may still be
            // a repository path part (`a_b.c/img`).
            if let Err(e) = domain(first) {
                path_component(first).map_err(|_| e)?;
            }
            comps.remove(0);
        }
    }
    for c in comps {
        path_component(c)?;
    }
    if let Some(t) = tag {
        let ok = !t.is_empty()
            && t.len() <= 128
            && t.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !ok {
            return Err(if t.is_empty() {
                "the tag after ':' is empty".into()
            } else {
                format!(
                    "the tag {t:?} must be 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
                )
            });
        }
    }
    if let Some(d) = digest {
        let ok = d.split_once(':').is_some_and(|(alg, hex)| {
            alg.starts_with(|c: char| c.is_ascii_alphabetic())
                && alg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_+.".contains(c))
                && hex.len() >= 32
                && hex.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !ok {
            return Err(format!(
                "the digest {d:?} is not ALGORITHM:HEX (e.g. sha256:…)"
            ));
        }
    }
    Ok(())
}

fn domain(d: &str) -> Result<(), String> {
    // An IPv6 host between brackets, then an optional port (regexp.go: host = domainName |
    // ipv6address, ipv6address = `\[(?:[a-fA-F0-9:]+)\]`; no zone, no IPv4-mapped form).
    if let Some(inner) = d.strip_prefix('[') {
        let Some((addr, after)) = inner.split_once(']') else {
            return Err(format!("the registry {d:?} opens '[' without closing it"));
        };
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(format!(
                "the registry {d:?}: an IPv6 address holds only hex digits and ':'"
            ));
        }
        return match after {
            "" => Ok(()),
            p if p.len() > 1
                && p.starts_with(':')
                && p[1..].chars().all(|c| c.is_ascii_digit()) =>
            {
                Ok(())
            }
            _ => Err(format!("the registry port in {d:?} must be a number")),
        };
    }
    let (host, port) = match d.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (d, None),
    };
    if let Some(p) = port
        && (p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(format!("the registry port in {d:?} must be a number"));
    }
    let ok = host.split('.').all(|l| {
        !l.is_empty()
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    });
    if !ok {
        return Err(format!("the registry {d:?} is not a host name"));
    }
    Ok(())
}

fn path_component(c: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "the repository path part {c:?} must be lowercase letters and digits, separated by '.', '_', '__' or '-'"
        ))
    };
    if c.is_empty() || !c.starts_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit()) {
        return bad();
    }
    if !c.ends_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit()) {
        return bad();
    }
    let b = c.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let ch = b[i];
        if ch.is_ascii_lowercase() || ch.is_ascii_digit() {
            i += 1;
            continue;
        }
        // A separator: '.', '_', '__' or a run of '-'.
        let start = i;
        match ch {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if i < b.len() && b[i] == b'_' {
                    i += 1;
                }
            }
            b'-' => {
                while i < b.len() && b[i] == b'-' {
                    i += 1;
                }
            }
            _ => return bad(),
        }
        if i == start || i >= b.len() || !(b[i].is_ascii_lowercase() || b[i].is_ascii_digit()) {
            return bad();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn image_references_follow_the_distribution_grammar() {
        for ok in [
            "tensorflow/tensorflow:2.13.0-gpu",
            "busybox",
            "localhost:5000/team/img:1",
            "registry.example.com/a/b__c/d-e:latest",
            "gcr.io/x/y@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "MyRegistry.io/img:1",
            "[::1]:5000/team/trainer:1",
            "[2001:db8::1]/img",
        ] {
            assert_eq!(image_reference(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("img name:1", "whitespace"),
            ("img:1\n", "control"),
            ("img:1\u{1b}[31m", "control"),
            ("img;rm -rf:1", "whitespace"),
            ("img;x:1", "repository path part"),
            ("Tensorflow:2.13", "repository path part"),
            ("tensorflow/Tensorflow:2", "repository path part"),
            ("img:", "tag after ':' is empty"),
            ("img:.bad", "tag"),
            ("img@sha256:xyz", "digest"),
            ("[::1%eth0]:5000/img:1", "IPv6"),
            ("[fe80::1:5000/img", "without closing"),
            ("[::1]:x/img", "port"),
            ("", "empty"),
        ] {
            let e = image_reference(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn env_names_follow_is_env_var_name() {
        assert!(env_var_name("HF_TOKEN").is_ok());
        assert!(env_var_name("my.var-1").is_ok());
        assert!(env_var_name("A=B").unwrap_err().contains("'='"));
        // 1.36 validates names relaxed (RelaxedEnvironmentVariableValidation, GA in 1.34).
        assert!(env_var_name("1A").is_ok());
        assert!(env_var_name("my var").is_ok());
        assert!(env_var_name("tab\there").is_err());
        assert!(env_var_name("").is_err());
    }

    fn job(pod: Value) -> Value {
        json!({"metadata": {"name": "j"}, "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": pod}}}}})
    }

    fn paths(f: &[Finding]) -> Vec<&str> {
        f.iter().map(|f| f.path.as_str()).collect()
    }

    #[test]
    fn pod_template_errors_carry_field_paths() {
        let f = check(&job(json!({
            "containers": [{
                "name": "tensorflow", "image": "img:1",
                "env": [{"name": "A=B", "value": "x"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }],
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "Explode"}],
            "volumes": [{"name": "Bad_Name", "emptyDir": {}}],
            "serviceAccountName": "Trainer",
        })));
        let p = "spec.tfReplicaSpecs.Worker.template.spec";
        assert_eq!(
            paths(&f),
            [
                format!("{p}.volumes[0].name"),
                format!("{p}.containers[0].env[0].name"),
                format!("{p}.containers[0].volumeMounts[0].name"),
                format!("{p}.tolerations[0].effect"),
                format!("{p}.serviceAccountName"),
            ]
        );
        assert!(f.iter().all(|f| f.severity == Severity::Error));
        assert!(
            f[1].hint.as_deref().unwrap().contains("--env A=B"),
            "{:?}",
            f[1]
        );
        assert!(f[3].message.contains("\"Explode\""), "{:?}", f[3]);
    }

    #[test]
    fn tolerations_follow_validate_tolerations() {
        let f = check(&job(json!({
            "containers": [{"name": "tensorflow", "image": "img:1"}],
            "tolerations": [
                {"key": "gpu", "operator": "Equal", "value": "a b", "effect": "NoSchedule", "tolerationSeconds": 30},
                {"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
            ],
        })));
        let p = "spec.tfReplicaSpecs.Worker.template.spec.tolerations[0]";
        assert_eq!(paths(&f), [format!("{p}.effect"), format!("{p}.value")]);
    }

    #[test]
    fn annotations_over_256_kib_are_refused() {
        let big = "x".repeat(MAX_ANNOTATIONS_BYTES);
        let f = check(&json!({"metadata": {"annotations": {"a": big}}}));
        assert_eq!(paths(&f), ["metadata.annotations"]);
        let ok = "x".repeat(MAX_ANNOTATIONS_BYTES - 1);
        assert!(check(&json!({"metadata": {"annotations": {"a": ok}}})).is_empty());
    }
}
