//! The rest of core Pod validation, as kube-apiserver 1.36 applies it to the pods the operator
//! creates from a replica template: enums, ranges, ports, env sources, resources, probes,
//! volumes, affinity, DNS, security contexts, and the Priority admission plugin's rule.
//!
//! Every rule names the upstream function it follows, in k8s.io/kubernetes
//! pkg/apis/core/validation/validation.go unless said otherwise. What a rule cannot know offline
//! (a PriorityClass's value, PodSecurity, policy webhooks) is left to the server dry run.

use serde_json::Value;

use super::names::{dns1123_label, label_value, qualified_name};
use super::{Finding, Severity};
use crate::pipeline::manifest::{join_index, join_key};

mod containers;
mod env;
mod scheduling;
mod security;
#[cfg(test)]
mod tests;
mod volumes;

pub use security::is_valid_sysctl_name;

use containers::container;
pub use containers::port_name;

type Out = Vec<Finding>;

fn err(out: &mut Out, path: String, message: String) {
    out.push(Finding::new(Severity::Error, "pod", path, message));
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn items<'a>(v: &'a Value, k: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    v.get(k)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// `field.NotSupported`: a value outside a closed set (the set as the API server lists it).
fn one_of(v: &Value, key: &str, allowed: &[&str], path: &str, what: &str, out: &mut Out) {
    if let Some(x) = s(v, key)
        && !allowed.contains(&x)
    {
        let near = allowed
            .iter()
            .find(|a| a.eq_ignore_ascii_case(x) || strsim_close(a, x))
            .map(|a| format!(" (did you mean {a}?)"))
            .unwrap_or_default();
        err(
            out,
            format!("{path}.{key}"),
            format!(
                "{what} {x:?} is not supported: use one of {}{near}",
                allowed.join(", ")
            ),
        );
    }
}

/// A typo of one edit or two (enough for `IfNotPresnt`, `ClusterFrist`).
fn strsim_close(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()] <= 2
}

fn int(v: &Value, k: &str) -> Option<i64> {
    v.get(k).and_then(Value::as_i64)
}

/// `ValidateNonnegativeField`.
fn nonnegative(v: &Value, keys: &[&str], path: &str, out: &mut Out) {
    for k in keys {
        if let Some(n) = int(v, k)
            && n < 0
        {
            err(
                out,
                format!("{path}.{k}"),
                format!("{k} must be greater than or equal to 0, is {n}"),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pod level

/// The pod-level rules of `ValidatePodSpec` not covered in pod.rs.
pub fn pod_spec(ps: &Value, path: &str, out: &mut Out) {
    // validateDNSPolicy.
    one_of(
        ps,
        "dnsPolicy",
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        path,
        "dnsPolicy",
        out,
    );
    scheduling::validate_pod_dns_config(ps, path, out);
    // ValidatePodSpec: hostname and subdomain are DNS-1123 labels; hostnameOverride (1.34+,
    // on by default in 1.36) a DNS-1123 subdomain.
    for k in ["hostname", "subdomain"] {
        if let Some(h) = s(ps, k)
            && let Err(e) = dns1123_label(h)
        {
            err(out, format!("{path}.{k}"), format!("{k} {h:?} {e}"));
        }
    }
    if let Some(h) = s(ps, "hostnameOverride")
        && let Err(e) = super::names::dns1123_subdomain(h)
    {
        err(
            out,
            format!("{path}.hostnameOverride"),
            format!("Invalid value: {h:?}: {e}"),
        );
    }
    // validateRestartPolicy is not here: the operator overwrites the pod's restartPolicy with
    // the replica's (the replica spec's own check is in lint.rs).
    one_of(
        ps,
        "preemptionPolicy",
        &["PreemptLowerPriority", "Never"],
        path,
        "preemptionPolicy",
        out,
    );
    // ValidatePodSpec: activeDeadlineSeconds in 1..=2^31-1.
    if let Some(n) = int(ps, "activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&n)
    {
        err(
            out,
            format!("{path}.activeDeadlineSeconds"),
            format!("activeDeadlineSeconds must be between 1 and 2147483647, is {n}"),
        );
    }
    // terminationGracePeriodSeconds is left alone: recent API servers raise a negative value
    // to 1 on create rather than refuse it, and a doubt must not become a refusal.
    if let Some(m) = ps.get("nodeSelector").and_then(Value::as_object) {
        // ValidatePodSpec → unversionedvalidation.ValidateLabels: values are label values.
        for (k, v) in m {
            if let Some(v) = v.as_str()
                && let Err(e) = label_value(v)
            {
                err(
                    out,
                    join_key(&format!("{path}.nodeSelector"), k),
                    format!("node selector value {v:?} {e}"),
                );
            }
        }
    }
    // ValidatePodCreate: ephemeral containers come only through their subresource.
    if items(ps, "ephemeralContainers").next().is_some() {
        err(
            out,
            format!("{path}.ephemeralContainers"),
            "ephemeralContainers cannot be set on create".into(),
        );
    }
    security::validate_pod_spec_security_context(ps, path, out);
    security::validate_host_users(ps, path, out);
    security::validate_windows_host_process_pod(ps, path, out);
    security::validate_os(ps, path, out);
    scheduling::validate_topology_spread_constraints(ps, path, out);
    scheduling::validate_host_aliases(ps, path, out);
    scheduling::validate_readiness_gates(ps, path, out);
    scheduling::validate_scheduling_gates(ps, path, out);
    let claims = scheduling::validate_pod_resource_claims(ps, path, out);
    // validateOverhead: ValidateContainerResourceRequirements on limits only.
    if let Some(o) = ps.get("overhead").filter(|v| v.is_object()) {
        containers::resources(
            &serde_json::json!({ "limits": o }),
            &format!("{path}.overhead"),
            out,
        );
    }
    // plugin/pkg/admission/runtimeclass validateOverhead: a pod with an overhead and no
    // RuntimeClass is forbidden at create. An empty map never reaches the API server (the
    // operator's client omits it: omitempty), so only a non-empty one counts; with a class
    // named, whether it matches is the class's to say.
    if ps
        .get("overhead")
        .and_then(Value::as_object)
        .is_some_and(|o| !o.is_empty())
        && s(ps, "runtimeClassName").is_none_or(str::is_empty)
    {
        err(
            out,
            format!("{path}.overhead"),
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead: drop overhead (a RuntimeClass sets it) or name the RuntimeClass in runtimeClassName".into(),
        );
    }
    if let Some(a) = ps.get("affinity") {
        affinity(a, &format!("{path}.affinity"), out);
    }
    for (i, v) in items(ps, "volumes") {
        volumes::validate_volume_source(
            v,
            s(v, "name").unwrap_or(""),
            &join_index(&format!("{path}.volumes"), i),
            out,
        );
    }
    let ctx = containers::Ctx {
        restart_never: s(ps, "restartPolicy") == Some("Never"),
        host_users: security::host_users(ps),
        claims: &claims,
        grace: security::grace_period(ps),
        volumes: ps
            .get("volumes")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    };
    // validateInitContainers / validateContainers: names unique across both lists.
    let mut seen: Vec<&str> = Vec::new();
    for key in ["initContainers", "containers"] {
        for (i, c) in items(ps, key) {
            let cpath = join_index(&format!("{path}.{key}"), i);
            match s(c, "name") {
                None | Some("") => err(
                    out,
                    format!("{cpath}.name"),
                    "a container needs a name".into(),
                ),
                Some(n) if seen.contains(&n) => err(
                    out,
                    format!("{cpath}.name"),
                    format!(
                        "container name {n:?} is used twice: names must be unique across initContainers and containers"
                    ),
                ),
                Some(n) => seen.push(n),
            }
            container(c, &cpath, key == "initContainers", &ctx, out);
        }
        // checkHostPortConflicts: across containers; init containers one by one.
        containers::check_host_port_conflicts(ps, key, path, out);
    }
    host_network_ports(ps, path, out);
    priority(ps, path, out);
}

/// validatePodSpec's hostNetwork rule (validateHostNetwork): with hostNetwork, a hostPort must
/// equal its containerPort.
fn host_network_ports(ps: &Value, path: &str, out: &mut Out) {
    if ps.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return;
    }
    for key in ["initContainers", "containers"] {
        for (i, c) in items(ps, key) {
            for (j, p) in items(c, "ports") {
                if let (Some(h), Some(cp)) = (int(p, "hostPort"), int(p, "containerPort"))
                    && h != 0
                    && h != cp
                {
                    err(
                        out,
                        format!(
                            "{}.hostPort",
                            join_index(
                                &format!("{}.ports", join_index(&format!("{path}.{key}"), i)),
                                j
                            )
                        ),
                        "hostPort must match containerPort when hostNetwork is true".into(),
                    );
                }
            }
        }
    }
}

/// plugin/pkg/admission/priority/admission.go `admitPod`: a pod's `priority` must equal the
/// value the plugin computes from its class, or without a class from the global default class
/// (0 when there is none). Offline the class value is unknown: without a class anything but 0
/// is refused on a cluster without a global default, which is the common case.
fn priority(ps: &Value, path: &str, out: &mut Out) {
    let Some(p) = int(ps, "priority") else {
        return;
    };
    match s(ps, "priorityClassName") {
        None | Some("") if p != 0 => err(
            out,
            format!("{path}.priority"),
            format!(
                "the integer value of priority ({p}) must not be provided in pod spec: the Priority admission plugin computes it from priorityClassName (0 without one)"
            ),
        ),
        None | Some("") => {}
        Some(class) => out.push(
            Finding::new(
                Severity::Warning,
                "pod",
                format!("{path}.priority"),
                format!(
                    "priority {p} is refused at admission unless it equals PriorityClass {class:?}'s value; leave it out"
                ),
            ),
        ),
    }
}

/// apimachinery validation.go `IsValidUserID` / `IsValidGroupID`: 0 to 2^31-1.
fn ids(sc: &Value, keys: &[&str], path: &str, out: &mut Out) {
    for k in keys {
        if let Some(n) = int(sc, k)
            && !(0..=i64::from(i32::MAX)).contains(&n)
        {
            err(
                out,
                format!("{path}.{k}"),
                format!("{k} must be between 0 and 2147483647, inclusive, is {n}"),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Affinity

/// validateAffinity: node affinity (ValidateNodeSelector, ValidateNodeSelectorTerm,
/// ValidateNodeSelectorRequirement, ValidatePreferredSchedulingTerms) and pod (anti-)affinity
/// (validatePodAffinityTerm, validateWeightedPodAffinityTerms).
fn affinity(a: &Value, path: &str, out: &mut Out) {
    if let Some(na) = a.get("nodeAffinity") {
        let npath = format!("{path}.nodeAffinity");
        if let Some(req) = na.get("requiredDuringSchedulingIgnoredDuringExecution") {
            let rpath = format!("{npath}.requiredDuringSchedulingIgnoredDuringExecution");
            let terms = req.get("nodeSelectorTerms").and_then(Value::as_array);
            if terms.is_none_or(Vec::is_empty) {
                err(
                    out,
                    format!("{rpath}.nodeSelectorTerms"),
                    "must have at least one node selector term".into(),
                );
            }
            for (i, t) in items(req, "nodeSelectorTerms") {
                node_selector_term(
                    t,
                    &join_index(&format!("{rpath}.nodeSelectorTerms"), i),
                    out,
                );
            }
        }
        for (i, p) in items(na, "preferredDuringSchedulingIgnoredDuringExecution") {
            let ppath = join_index(
                &format!("{npath}.preferredDuringSchedulingIgnoredDuringExecution"),
                i,
            );
            weight(p, &ppath, out);
            if let Some(t) = p.get("preference") {
                node_selector_term(t, &format!("{ppath}.preference"), out);
            }
        }
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(pa) = a.get(kind) else { continue };
        let kpath = format!("{path}.{kind}");
        for (i, t) in items(pa, "requiredDuringSchedulingIgnoredDuringExecution") {
            pod_affinity_term(
                t,
                &join_index(
                    &format!("{kpath}.requiredDuringSchedulingIgnoredDuringExecution"),
                    i,
                ),
                out,
            );
        }
        for (i, w) in items(pa, "preferredDuringSchedulingIgnoredDuringExecution") {
            let wpath = join_index(
                &format!("{kpath}.preferredDuringSchedulingIgnoredDuringExecution"),
                i,
            );
            weight(w, &wpath, out);
            if let Some(t) = w.get("podAffinityTerm") {
                pod_affinity_term(t, &format!("{wpath}.podAffinityTerm"), out);
            }
        }
    }
}

fn weight(v: &Value, path: &str, out: &mut Out) {
    match int(v, "weight") {
        Some(w) if (1..=100).contains(&w) => {}
        w => err(
            out,
            format!("{path}.weight"),
            format!(
                "weight must be in the range 1-100{}",
                w.map(|w| format!(", is {w}")).unwrap_or_default()
            ),
        ),
    }
}

fn node_selector_term(t: &Value, path: &str, out: &mut Out) {
    for (i, r) in items(t, "matchExpressions") {
        let rpath = join_index(&format!("{path}.matchExpressions"), i);
        selector_requirement(
            r,
            &rpath,
            &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"],
            out,
        );
        if let Some(k) = s(r, "key")
            && let Err(e) = qualified_name(k)
        {
            err(out, format!("{rpath}.key"), format!("key {k:?} {e}"));
        }
    }
    // validateNodeFieldSelectorRequirement: only metadata.name, In/NotIn with one value.
    for (i, r) in items(t, "matchFields") {
        let rpath = join_index(&format!("{path}.matchFields"), i);
        if s(r, "key") != Some("metadata.name") {
            err(
                out,
                format!("{rpath}.key"),
                format!(
                    "{:?} is not a supported field: only metadata.name",
                    s(r, "key").unwrap_or("")
                ),
            );
        }
        match s(r, "operator") {
            Some("In" | "NotIn") => {
                if r.get("values").and_then(Value::as_array).map(Vec::len) != Some(1) {
                    err(
                        out,
                        format!("{rpath}.values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector".into(),
                    );
                }
            }
            other => err(
                out,
                format!("{rpath}.operator"),
                format!(
                    "operator {:?} is not supported: use In or NotIn",
                    other.unwrap_or("")
                ),
            ),
        }
    }
}

/// ValidateNodeSelectorRequirement (and, for label selectors, apimachinery's
/// ValidateLabelSelectorRequirement, which has no Gt/Lt).
fn selector_requirement(r: &Value, path: &str, ops: &[&str], out: &mut Out) {
    let values = r.get("values").and_then(Value::as_array);
    let n = values.map_or(0, Vec::len);
    match s(r, "operator") {
        Some("In" | "NotIn") if n == 0 => err(
            out,
            format!("{path}.values"),
            "must be specified when `operator` is 'In' or 'NotIn'".into(),
        ),
        Some("Exists" | "DoesNotExist") if n > 0 => err(
            out,
            format!("{path}.values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
        ),
        Some(op @ ("Gt" | "Lt")) if ops.contains(&op) => {
            let ok = n == 1
                && values
                    .and_then(|v| v[0].as_str())
                    .is_some_and(|x| x.parse::<i64>().is_ok());
            if !ok {
                err(
                    out,
                    format!("{path}.values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt', and it must be an integer".into(),
                );
            }
        }
        Some(op) if ops.contains(&op) => {}
        op => err(
            out,
            format!("{path}.operator"),
            format!(
                "operator {:?} is not a valid selector operator: use one of {}",
                op.unwrap_or(""),
                ops.join(", ")
            ),
        ),
    }
}

fn pod_affinity_term(t: &Value, path: &str, out: &mut Out) {
    if s(t, "topologyKey").is_none_or(str::is_empty) {
        err(
            out,
            format!("{path}.topologyKey"),
            "topologyKey can not be empty".into(),
        );
    } else if let Some(k) = s(t, "topologyKey")
        && let Err(e) = qualified_name(k)
    {
        err(
            out,
            format!("{path}.topologyKey"),
            format!("topologyKey {k:?} {e}"),
        );
    }
    for sel in ["labelSelector", "namespaceSelector"] {
        if let Some(ls) = t.get(sel) {
            label_selector(ls, &format!("{path}.{sel}"), out);
        }
    }
    label_keys_need_a_selector(t, &["matchLabelKeys", "mismatchLabelKeys"], path, out);
    // validatePodAffinityTerm: each namespace a DNS-1123 label, reported under `namespace`
    // (upstream's path, singular).
    for (_, n) in items(t, "namespaces") {
        if let Some(n) = n.as_str()
            && let Err(e) = dns1123_label(n)
        {
            err(
                out,
                format!("{path}.namespace"),
                format!("Invalid value: {n:?}: {e}"),
            );
        }
    }
}

/// validateMatchLabelKeysAndMismatchLabelKeys / validateMatchLabelKeysInTopologySpread: keys
/// merged into a selector need one (the real 1.36.2 server: `matchLabelKeys: Forbidden: must
/// not be specified when labelSelector is not set`).
pub(super) fn label_keys_need_a_selector(t: &Value, keys: &[&str], path: &str, out: &mut Out) {
    if t.get("labelSelector").is_some_and(|v| !v.is_null()) {
        return;
    }
    for k in keys {
        if t.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
        {
            err(
                out,
                format!("{path}.{k}"),
                "Forbidden: must not be specified when labelSelector is not set".into(),
            );
        }
    }
}

/// apimachinery metav1validation `ValidateLabelSelector`.
fn label_selector(ls: &Value, path: &str, out: &mut Out) {
    for (i, r) in items(ls, "matchExpressions") {
        selector_requirement(
            r,
            &join_index(&format!("{path}.matchExpressions"), i),
            &["In", "NotIn", "Exists", "DoesNotExist"],
            out,
        );
    }
    if let Some(m) = ls.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            let kpath = join_key(&format!("{path}.matchLabels"), k);
            if let Err(e) = qualified_name(k) {
                err(out, kpath.clone(), format!("label key {k:?} {e}"));
            }
            if let Some(v) = v.as_str()
                && let Err(e) = label_value(v)
            {
                err(out, kpath, format!("label value {v:?} {e}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared formats

/// validation.IsValidIP as a create sees it: netutils.ParseIPSloppy, which also takes IPv4
/// octets with leading zeros (a doubt must not become a refusal).
fn ip_sloppy(ip: &str) -> bool {
    if ip.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let parts: Vec<&str> = ip.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.chars().all(|c| c.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// validateLocalDescendingPath (with validatePathNoBacksteps): relative, no '..' element.
fn local_descending_path(p: &str) -> Option<String> {
    if p.starts_with('/') {
        return Some("must be a relative path".into());
    }
    if p.replace('\\', "/").split('/').any(|x| x == "..") {
        return Some("must not contain '..'".into());
    }
    None
}

/// ValidateLocalNonReservedPath: a local descending path that does not start with '..'.
fn local_non_reserved_path(p: &str) -> Option<String> {
    local_descending_path(p).or_else(|| {
        (p.starts_with("..") && !p.starts_with("../")).then(|| "must not start with '..'".into())
    })
}
