//! Container rules of core Pod validation (validateContainerCommon and what it calls).

use serde_json::{Map, Value};

use super::super::{Finding, Severity};
use super::env::env;
use super::{Out, err, int, items, local_descending_path, nonnegative, one_of, s};
use crate::model::quantity;
use crate::pipeline::manifest::{join_index, join_key};

/// What a container's rules need to know of its pod.
pub(super) struct Ctx<'a> {
    /// The pod's `restartPolicy` is Never (the operator's for a Never or ExitCode replica).
    pub restart_never: bool,
    /// `hostUsers` (default true): procMount Unmasked needs false.
    pub host_users: bool,
    /// The pod's resource claim names (gatherPodResourceClaimNames).
    pub claims: &'a [&'a str],
    /// terminationGracePeriodSeconds (default 30), the bound of a sleep hook.
    pub grace: i64,
    /// The pod's volumes, for volumeMounts and volumeDevices.
    pub volumes: &'a [Value],
}

impl Ctx<'_> {
    fn volume(&self, name: &str) -> Option<&Value> {
        self.volumes.iter().find(|v| s(v, "name") == Some(name))
    }
}

/// validateContainerCommon and validateInitContainers' extra rules.
pub(super) fn container(c: &Value, path: &str, init: bool, ctx: &Ctx, out: &mut Out) {
    // validateContainerCommon: an image is required. A value that is no string is the
    // schema's type error, said there.
    if matches!(c.get("image"), None | Some(Value::Null))
        || c.get("image").and_then(Value::as_str) == Some("")
    {
        err(
            out,
            format!("{path}.image"),
            "a container needs an image".into(),
        );
    }
    // validatePullPolicy, validateContainerCommon's terminationMessagePolicy.
    one_of(
        c,
        "imagePullPolicy",
        &["Always", "Never", "IfNotPresent"],
        path,
        "imagePullPolicy",
        out,
    );
    one_of(
        c,
        "terminationMessagePolicy",
        &["File", "FallbackToLogsOnError"],
        path,
        "terminationMessagePolicy",
        out,
    );
    ports(c, path, out);
    env(c, path, ctx.volumes, out);
    if let Some(r) = c.get("resources") {
        resources(r, &format!("{path}.resources"), out);
        super::scheduling::validate_resource_claim_names(
            r,
            ctx.claims,
            &format!("{path}.resources"),
            out,
        );
    }
    mounts(c, path, out);
    validate_volume_devices(c, path, ctx, out);
    validate_resize_policy(c, path, ctx.restart_never, out);
    restart_rules(c, path, out);
    let sidecar = init && s(c, "restartPolicy") == Some("Always");
    if init {
        // validateInitContainers: only restartable (sidecar) init containers take probes and
        // lifecycle hooks.
        if !sidecar {
            for k in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if c.get(k).is_some_and(|v| !v.is_null()) {
                    err(
                        out,
                        format!("{path}.{k}"),
                        format!(
                            "{k} may not be set for init containers without restartPolicy=Always"
                        ),
                    );
                }
            }
        }
    }
    for (k, liveness_like) in [
        ("livenessProbe", true),
        ("readinessProbe", false),
        ("startupProbe", true),
    ] {
        if let Some(p) = c.get(k).filter(|p| !p.is_null()) {
            probe(p, &format!("{path}.{k}"), liveness_like, ctx, out);
            // validateReadinessProbe: no terminationGracePeriodSeconds.
            if k == "readinessProbe"
                && p.get("terminationGracePeriodSeconds")
                    .is_some_and(|v| !v.is_null())
            {
                err(
                    out,
                    format!("{path}.{k}.terminationGracePeriodSeconds"),
                    "must not be set for readinessProbes".into(),
                );
            }
        }
    }
    if let Some(l) = c.get("lifecycle") {
        for k in ["postStart", "preStop"] {
            if let Some(h) = l.get(k) {
                handler(h, &format!("{path}.lifecycle.{k}"), true, ctx, out);
            }
        }
    }
    if let Some(sc) = c.get("securityContext") {
        super::security::validate_security_context(
            sc,
            &format!("{path}.securityContext"),
            ctx.host_users,
            out,
        );
    }
}

/// A container's own `restartPolicy` and `restartPolicyRules` (ContainerRestartRules and
/// RestartAllContainersOnContainerExits, on by default in 1.36; kubernetes
/// `pkg/apis/core/validation` validateContainerRestartPolicy and validateContainerRestartRules).
/// Words and limits as the real 1.36.2 server gives them: `Unsupported value: "Bogus":
/// supported values: "Always", "Never", "OnFailure"`, `Required value: must specify
/// restartPolicy when restart rules are used`, at most 20 rules and 255 exit codes each.
fn restart_rules(c: &Value, path: &str, out: &mut Out) {
    const POLICIES: [&str; 3] = ["Always", "Never", "OnFailure"];
    if let Some(p) = s(c, "restartPolicy")
        && !POLICIES.contains(&p)
    {
        err(
            out,
            format!("{path}.restartPolicy"),
            format!(
                "Unsupported value: {p:?}: supported values: \"Always\", \"Never\", \"OnFailure\""
            ),
        );
    }
    let Some(rules) = c.get("restartPolicyRules").and_then(Value::as_array) else {
        return;
    };
    if !rules.is_empty() && c.get("restartPolicy").is_none_or(Value::is_null) {
        err(
            out,
            format!("{path}.restartPolicy"),
            "Required value: must specify restartPolicy when restart rules are used".into(),
        );
    }
    let rp = format!("{path}.restartPolicyRules");
    if rules.len() > 20 {
        err(
            out,
            rp.clone(),
            format!("Too many: {}: must have at most 20 items", rules.len()),
        );
    }
    for (i, r) in rules.iter().enumerate() {
        let at = join_index(&rp, i);
        if let Some(a) = s(r, "action")
            && !["Restart", "RestartAllContainers"].contains(&a)
        {
            err(
                out,
                format!("{at}.action"),
                format!(
                    "Unsupported value: {a:?}: supported values: \"Restart\", \"RestartAllContainers\""
                ),
            );
        }
        match r.get("exitCodes") {
            None | Some(Value::Null) => err(
                out,
                format!("{at}.exitCodes"),
                "Required value: must be specified".into(),
            ),
            Some(codes) => {
                let n = codes
                    .get("values")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                if n > 255 {
                    err(
                        out,
                        format!("{at}.exitCodes.values"),
                        format!("Too many: {n}: must have at most 255 items"),
                    );
                }
            }
        }
    }
}

/// validateResizePolicy, for every container, init ones too: cpu or memory, once each,
/// NotRequired or RestartContainer, and only NotRequired in a pod whose restartPolicy is Never
/// (the real 1.36.2 server: `Unsupported value: "gpu": supported values: "cpu", "memory"`,
/// `Invalid value: "RestartContainer": must be 'NotRequired' when pod `restartPolicy` is
/// 'Never'`).
fn validate_resize_policy(c: &Value, path: &str, restart_never: bool, out: &mut Out) {
    let rp = format!("{path}.resizePolicy");
    let mut seen: Vec<&str> = Vec::new();
    for (i, p) in items(c, "resizePolicy") {
        let n = s(p, "resourceName").unwrap_or("");
        if seen.contains(&n) {
            err(out, join_index(&rp, i), format!("Duplicate value: {n:?}"));
        }
        seen.push(n);
        if !["cpu", "memory"].contains(&n) {
            err(
                out,
                rp.clone(),
                format!("Unsupported value: {n:?}: supported values: \"cpu\", \"memory\""),
            );
        }
        let r = s(p, "restartPolicy").unwrap_or("");
        if restart_never && r == "RestartContainer" {
            err(
                out,
                rp.clone(),
                "Invalid value: \"RestartContainer\": must be 'NotRequired' when pod `restartPolicy` is 'Never'".into(),
            );
        }
        if !["NotRequired", "RestartContainer"].contains(&r) {
            err(
                out,
                rp.clone(),
                format!(
                    "resize restartPolicy {r:?} is not supported: use one of NotRequired, RestartContainer"
                ),
            );
        }
    }
}

/// checkHostPortConflicts: no protocol/hostIP/hostPort twice among the regular containers,
/// nor within one init container.
pub(super) fn check_host_port_conflicts(ps: &Value, key: &str, path: &str, out: &mut Out) {
    // With hostNetwork, defaulting gives every port its containerPort as hostPort
    // (core/v1 defaults.go `defaultHostNetworkPorts`) before validation sees them.
    let host_network = ps.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in items(ps, key) {
        if key == "initContainers" {
            seen.clear();
        }
        for (j, p) in items(c, "ports") {
            let Some(h) = int(p, "hostPort")
                .filter(|h| *h != 0)
                .or_else(|| int(p, "containerPort").filter(|_| host_network))
            else {
                continue;
            };
            let k = format!(
                "{}/{}/{h}",
                s(p, "protocol").unwrap_or("TCP"),
                s(p, "hostIP").unwrap_or("")
            );
            if seen.contains(&k) {
                err(
                    out,
                    format!(
                        "{}.hostPort",
                        join_index(
                            &format!("{}.ports", join_index(&format!("{path}.{key}"), i)),
                            j
                        )
                    ),
                    if s(p, "name") == Some(crate::model::DEFAULT_PORT_NAME) {
                        format!(
                            "Duplicate value: {k:?}: the operator's {} (which it adds when no port has that name) takes host port {h} too under hostNetwork; name your port {} instead",
                            crate::model::DEFAULT_PORT_NAME,
                            crate::model::DEFAULT_PORT_NAME
                        )
                    } else {
                        format!("Duplicate value: {k:?}")
                    },
                );
            }
            seen.push(k);
        }
    }
}

/// ValidateVolumeDevices: named, unique, on a PVC or ephemeral volume, a unique device path
/// without '..', and not also mounted.
fn validate_volume_devices(c: &Value, path: &str, ctx: &Ctx, out: &mut Out) {
    let mounts: Vec<(&str, &str)> = items(c, "volumeMounts")
        .map(|(_, m)| (s(m, "name").unwrap_or(""), s(m, "mountPath").unwrap_or("")))
        .collect();
    let (mut names, mut paths): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for (i, d) in items(c, "volumeDevices") {
        let dp = join_index(&format!("{path}.volumeDevices"), i);
        let (n, p) = (s(d, "name").unwrap_or(""), s(d, "devicePath").unwrap_or(""));
        if n.is_empty() {
            err(
                out,
                format!("{dp}.name"),
                "a volume device needs a name".into(),
            );
        }
        if names.contains(&n) {
            err(out, format!("{dp}.name"), format!("{n:?} must be unique"));
        }
        match ctx.volume(n) {
            None => err(
                out,
                format!("{dp}.name"),
                format!("volume {n:?} not found in the pod's volumes"),
            ),
            Some(v) if !["persistentVolumeClaim", "ephemeral"].iter().any(|k| v.get(*k).is_some_and(|x| !x.is_null())) => err(
                out,
                format!("{dp}.name"),
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode".into(),
            ),
            _ => {}
        }
        if p.is_empty() {
            err(
                out,
                format!("{dp}.devicePath"),
                "devicePath is required".into(),
            );
        }
        if paths.contains(&p) {
            err(
                out,
                format!("{dp}.devicePath"),
                format!("{p:?} must be unique"),
            );
        }
        if p.split('/').any(|x| x == "..") {
            err(
                out,
                format!("{dp}.devicePath"),
                "can not contain backsteps ('..')".into(),
            );
        } else {
            paths.push(p);
        }
        if mounts.iter().any(|m| m.0 == n) {
            err(
                out,
                format!("{dp}.name"),
                "must not already exist in volumeMounts".into(),
            );
        }
        if mounts.iter().any(|m| m.1 == p) {
            err(
                out,
                format!("{dp}.devicePath"),
                "must not already exist as a path in volumeMounts".into(),
            );
        }
        if !n.is_empty() {
            names.push(n);
        }
    }
}

/// apimachinery validation.go `IsValidPortName`: an IANA_SVC_NAME, at most 15 characters of
/// lowercase letters, digits and '-', with a letter, no leading, trailing or doubled '-'.
pub fn port_name(n: &str) -> Result<(), String> {
    if n.is_empty() || n.len() > 15 {
        return Err(format!(
            "must be no more than 15 characters, is {}",
            n.len()
        ));
    }
    if !n
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err("must contain only lowercase letters, digits and '-'".into());
    }
    if !n.chars().any(|c| c.is_ascii_lowercase()) {
        return Err("must contain at least one letter".into());
    }
    if n.contains("--") {
        return Err("must not contain consecutive hyphens".into());
    }
    if n.starts_with('-') || n.ends_with('-') {
        return Err("must not begin or end with a hyphen".into());
    }
    Ok(())
}

/// validateContainerPorts: names are IANA_SVC_NAMEs unique in the container, containerPort in
/// 1..=65535, hostPort 0 or in range, protocol TCP, UDP or SCTP.
fn ports(c: &Value, path: &str, out: &mut Out) {
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in items(c, "ports") {
        let ppath = join_index(&format!("{path}.ports"), i);
        if let Some(n) = s(p, "name") {
            if let Err(e) = port_name(n) {
                err(out, format!("{ppath}.name"), format!("port name {n:?} {e}"));
            } else if names.contains(&n) {
                err(
                    out,
                    format!("{ppath}.name"),
                    format!("port name {n:?} is used twice in this container"),
                );
            }
            names.push(n);
        }
        match int(p, "containerPort") {
            None | Some(0) => err(
                out,
                format!("{ppath}.containerPort"),
                "containerPort is required".into(),
            ),
            Some(n) if !(1..=65535).contains(&n) => err(
                out,
                format!("{ppath}.containerPort"),
                format!("containerPort must be between 1 and 65535, inclusive, is {n}"),
            ),
            _ => {}
        }
        if let Some(h) = int(p, "hostPort")
            && h != 0
            && !(1..=65535).contains(&h)
        {
            err(
                out,
                format!("{ppath}.hostPort"),
                format!("hostPort must be between 1 and 65535, inclusive, is {h}"),
            );
        }
        one_of(
            p,
            "protocol",
            &["SCTP", "TCP", "UDP"],
            &ppath,
            "protocol",
            out,
        );
    }
}

/// The resource names a container may request without a domain (`IsStandardContainerResourceName`).
fn standard_container_resource(name: &str) -> bool {
    ["cpu", "memory", "ephemeral-storage"].contains(&name) || name.starts_with("hugepages-")
}

/// helper.IsExtendedResourceName: domain-qualified, not native, not `requests.`-prefixed.
fn extended_resource(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Resources the scheduler may overcommit: native ones that are not hugepages
/// (helper.IsOvercommitAllowed, IsNativeResource).
fn overcommit_allowed(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    native && !name.starts_with("hugepages-")
}

/// ValidateResourceRequirements (via validateContainerResourceName, ValidateResourceQuantityValue):
/// standard names without a domain, non-negative values, requests ≤ limits, and for
/// resources that cannot be overcommitted (GPUs and other extended resources, hugepages) a
/// limit equal to the request.
pub(super) fn resources(r: &Value, path: &str, out: &mut Out) {
    let empty = Map::new();
    let limits = r.get("limits").and_then(Value::as_object).unwrap_or(&empty);
    let requests = r
        .get("requests")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let value = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(x) => quantity::parse_approx(x).ok(),
        _ => None,
    };
    for (part, m) in [("limits", limits), ("requests", requests)] {
        for k in m.keys() {
            if !k.contains('/') && !standard_container_resource(k) {
                err(
                    out,
                    join_key(&format!("{path}.{part}"), k),
                    format!(
                        "{k:?} is not a standard resource for containers: use cpu, memory, ephemeral-storage, hugepages-<size>, or a domain-qualified name such as nvidia.com/gpu"
                    ),
                );
            }
        }
    }
    // Values themselves (valid, not negative) are checked by lint::quantity_check; here
    // ValidateResourceQuantityValue's integer rule for extended resources and
    // validateResourceQuantityHugePageValue's divisibility.
    for (part, m) in [("limits", limits), ("requests", requests)] {
        for (k, v) in m {
            let kp = join_key(&format!("{path}.{part}"), k);
            let milli = match v {
                Value::String(x) => quantity::parse_quantity(x),
                Value::Number(n) => n.as_f64().map(|f| (f * 1000.0).round() as i128),
                _ => None,
            };
            let Some(milli) = milli else { continue };
            if extended_resource(k) && milli % 1000 != 0 {
                err(
                    out,
                    kp.clone(),
                    format!("{k} {} must be an integer", text(v)),
                );
            }
            if let Some(page) = k
                .strip_prefix("hugepages-")
                .and_then(quantity::parse_quantity)
                .filter(|p| *p > 0)
                && milli % page != 0
            {
                err(
                    out,
                    kp,
                    format!("{} is not positive integer multiple of {k}", text(v)),
                );
            }
        }
    }
    for (k, req) in requests {
        let rpath = join_key(&format!("{path}.requests"), k);
        let Some(rv) = value(req) else { continue };
        let limit = limits.get(k);
        match limit.and_then(value) {
            // A relative margin: 100m and 0.1 are the same quantity.
            Some(lv) if overcommit_allowed(k) && rv > lv * (1.0 + 1e-12) => err(
                out,
                rpath,
                format!(
                    "the {k} request {} must be less than or equal to its limit {}",
                    text(req),
                    text(&limits[k])
                ),
            ),
            Some(lv) if !overcommit_allowed(k) && (rv - lv).abs() > lv.abs() * 1e-12 => {
                cannot_overcommit(k, req, limit, &rpath, out)
            }
            // Upstream reports this one at the missing limit.
            None if !overcommit_allowed(k) => {
                cannot_overcommit(k, req, None, &join_key(&format!("{path}.limits"), k), out)
            }
            _ => {}
        }
    }
    // ValidateResourceRequirements: hugepages need a cpu or memory request or limit.
    let has_hugepages = limits
        .keys()
        .chain(requests.keys())
        .any(|k| k.starts_with("hugepages-"));
    let has_cpu_mem = ["cpu", "memory"]
        .iter()
        .any(|k| limits.contains_key(*k) || requests.contains_key(*k));
    if has_hugepages && !has_cpu_mem {
        err(
            out,
            path.to_string(),
            "HugePages require cpu or memory".into(),
        );
    }
}

/// ValidateResourceRequirements: a resource that cannot be overcommitted (GPUs and other
/// extended resources, hugepages) needs a limit equal to its request.
fn cannot_overcommit(k: &str, req: &Value, limit: Option<&Value>, path: &str, out: &mut Out) {
    out.push(
        Finding::new(
            Severity::Error,
            "pod",
            path,
            format!(
                "{k} request ({}) must equal its limit ({}); Kubernetes rejects the pod otherwise, since {k} cannot be overcommitted",
                text(req),
                limit.map(text).unwrap_or_else(|| "none".into())
            ),
        )
        .with_hint(Some(format!(
            "set only resources.limits[{k}]; the request defaults to it"
        ))),
    );
}

fn text(v: &Value) -> String {
    match v {
        Value::String(x) => x.clone(),
        other => other.to_string(),
    }
}

/// validateVolumeMounts: unique mountPaths, subPath relative without `..`
/// (validateLocalDescendingPath), known mountPropagation.
fn mounts(c: &Value, path: &str, out: &mut Out) {
    let mut paths: Vec<&str> = Vec::new();
    for (i, m) in items(c, "volumeMounts") {
        let mpath = join_index(&format!("{path}.volumeMounts"), i);
        if let Some(p) = s(m, "mountPath").filter(|p| !p.is_empty()) {
            if paths.contains(&p) {
                err(
                    out,
                    format!("{mpath}.mountPath"),
                    format!("mountPath {p:?} must be unique"),
                );
            }
            paths.push(p);
        }
        if let Some(sp) = s(m, "subPath")
            && (sp.starts_with('/') || sp.split('/').any(|part| part == ".."))
        {
            err(
                out,
                format!("{mpath}.subPath"),
                format!("subPath {sp:?} must be a relative path without '..'"),
            );
        }
        one_of(
            m,
            "mountPropagation",
            &["None", "HostToContainer", "Bidirectional"],
            &mpath,
            "mountPropagation",
            out,
        );
        // validateMountPropagation: Bidirectional only in privileged containers.
        if s(m, "mountPropagation") == Some("Bidirectional")
            && c.pointer("/securityContext/privileged")
                .and_then(Value::as_bool)
                != Some(true)
        {
            err(
                out,
                format!("{path}.volumeMounts.mountPropagation"),
                "Bidirectional mount propagation is available only to privileged containers".into(),
            );
        }
        // ValidateVolumeMounts: subPathExpr excludes subPath and is a local path.
        if let Some(x) = s(m, "subPathExpr").filter(|x| !x.is_empty()) {
            if s(m, "subPath").is_some_and(|p| !p.is_empty()) {
                err(
                    out,
                    format!("{mpath}.subPathExpr"),
                    "subPathExpr and subPath are mutually exclusive".into(),
                );
            }
            if let Some(e) = local_descending_path(x) {
                err(
                    out,
                    format!("{path}.volumeMounts.subPathExpr"),
                    format!("subPathExpr {x:?} {e}"),
                );
            }
        }
        // An image volume takes subPath and subPathExpr since 1.33 (the ImageVolume
        // subPath support): the real 1.36.2 server accepts both, so nothing is said here.
        // validateMountRecursiveReadOnly.
        match s(m, "recursiveReadOnly") {
            None | Some("Disabled") => {}
            Some("Enabled" | "IfPossible") => {
                let rp = format!("{path}.volumeMounts.recursiveReadOnly");
                if m.get("readOnly").and_then(Value::as_bool) != Some(true) {
                    err(
                        out,
                        rp.clone(),
                        "may only be specified when readOnly is true".into(),
                    );
                }
                if s(m, "mountPropagation").is_some_and(|p| p != "None") {
                    err(
                        out,
                        rp,
                        "may only be specified when mountPropagation is None or not specified"
                            .into(),
                    );
                }
            }
            Some(x) => err(
                out,
                format!("{path}.volumeMounts.recursiveReadOnly"),
                format!(
                    "recursiveReadOnly {x:?} is not supported: use one of Disabled, Enabled, IfPossible"
                ),
            ),
        }
        // Names and paths shared with volumeDevices.
        if let Some(n) = s(m, "name")
            && items(c, "volumeDevices").any(|(_, d)| s(d, "name") == Some(n))
        {
            err(
                out,
                format!("{mpath}.name"),
                "must not already exist in volumeDevices".into(),
            );
        }
        if let Some(p) = s(m, "mountPath")
            && items(c, "volumeDevices").any(|(_, d)| s(d, "devicePath") == Some(p))
        {
            err(
                out,
                format!("{mpath}.mountPath"),
                "must not already exist as a path in volumeDevices".into(),
            );
        }
    }
}

/// validateProbe: exactly one handler, non-negative numbers, and for liveness and startup
/// probes successThreshold 1 (validateLivenessProbe, validateStartupProbe).
fn probe(p: &Value, path: &str, liveness_like: bool, ctx: &Ctx, out: &mut Out) {
    handler(p, path, false, ctx, out);
    // validateProbe: a probe's terminationGracePeriodSeconds is positive.
    if let Some(g) = int(p, "terminationGracePeriodSeconds")
        && g <= 0
    {
        err(
            out,
            format!("{path}.terminationGracePeriodSeconds"),
            format!("must be greater than 0, is {g}"),
        );
    }
    nonnegative(
        p,
        &[
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ],
        path,
        out,
    );
    if liveness_like
        && let Some(n) = int(p, "successThreshold")
        // 0 is defaulted to 1 (SetDefaults_Probe).
        && n > 1
    {
        err(
            out,
            format!("{path}.successThreshold"),
            format!("successThreshold must be 1 for liveness and startup probes, is {n}"),
        );
    }
}

/// validateHandler / validateLifecycleHandler: exactly one of exec, httpGet, tcpSocket, grpc
/// (probes) or sleep (lifecycle hooks); ports are numbers in range or IANA names.
fn handler(h: &Value, path: &str, lifecycle: bool, ctx: &Ctx, out: &mut Out) {
    let kinds: &[&str] = if lifecycle {
        &["exec", "httpGet", "tcpSocket", "sleep"]
    } else {
        &["exec", "httpGet", "tcpSocket", "grpc"]
    };
    let set: Vec<&str> = kinds
        .iter()
        .copied()
        .filter(|k| h.get(*k).is_some_and(|x| !x.is_null()))
        .collect();
    match set.len() {
        0 => err(
            out,
            path.to_string(),
            format!("must specify a handler type: one of {}", kinds.join(", ")),
        ),
        1 => {}
        _ => err(
            out,
            format!("{path}.{}", set[1]),
            format!(
                "may not specify more than 1 handler type: {}",
                set.join(" and ")
            ),
        ),
    }
    for k in ["httpGet", "tcpSocket", "grpc"] {
        let Some(port) = h.get(k).and_then(|x| x.get("port")) else {
            continue;
        };
        let ppath = format!("{path}.{k}.port");
        match port {
            Value::Number(n) => {
                if !n.as_i64().is_some_and(|n| (1..=65535).contains(&n)) {
                    err(
                        out,
                        ppath,
                        format!("port {n} must be between 1 and 65535, inclusive"),
                    );
                }
            }
            Value::String(name) if k != "grpc" => {
                if let Err(e) = port_name(name) {
                    err(out, ppath, format!("port name {name:?} {e}"));
                }
            }
            _ => err(
                out,
                ppath,
                "port must be a number between 1 and 65535".into(),
            ),
        }
    }
    // validateExecAction: a command.
    if let Some(e) = h.get("exec").filter(|v| !v.is_null())
        && items(e, "command").next().is_none()
    {
        err(
            out,
            format!("{path}.exec.command"),
            "command is required".into(),
        );
    }
    // validateSleepAction: 0 (PodLifecycleSleepActionAllowZero, on in 1.36) up to the grace
    // period.
    if let Some(sl) = h.get("sleep").filter(|v| !v.is_null()) {
        let n = int(sl, "seconds").unwrap_or(0);
        if n < 0 || n > ctx.grace {
            err(
                out,
                format!("{path}.sleep"),
                format!(
                    "sleep seconds {n} must be non-negative and less than terminationGracePeriodSeconds ({})",
                    ctx.grace
                ),
            );
        }
    }
    if let Some(g) = h.get("httpGet") {
        // validateHTTPGetAction: header names are HTTP tokens (IsHTTPHeaderName).
        for (_, hd) in items(g, "httpHeaders") {
            let n = s(hd, "name").unwrap_or("");
            if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                err(
                    out,
                    format!("{path}.httpGet.httpHeaders"),
                    format!("header name {n:?} must be letters, digits and '-'"),
                );
            }
        }
        one_of(
            g,
            "scheme",
            &["HTTP", "HTTPS"],
            &format!("{path}.httpGet"),
            "scheme",
            out,
        );
    }
}
