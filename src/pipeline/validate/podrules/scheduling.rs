//! Scheduling, host and DNS settings of a pod spec, as kube-apiserver 1.36 validates them
//! (pkg/apis/core/validation/validation.go): `validateTopologySpreadConstraints` and its
//! helpers, `ValidateHostAliases`, `validateReadinessGates`, `validateSchedulingGates`,
//! `validatePodDNSConfig`, `validatePodResourceClaims` / `validatePodResourceClaim`.

use serde_json::Value;

use super::super::names::{dns1123_label, dns1123_subdomain, qualified_name};
use super::{Out, err, int, ip_sloppy, items, label_selector, s};
use crate::pipeline::manifest::join_index;

/// validateTopologySpreadConstraints: ValidateMaxSkew, ValidateTopologyKey,
/// ValidateWhenUnsatisfiable, ValidateSpreadConstraintNotRepeat, validateMinDomains,
/// validateNodeInclusionPolicy and the label selector; matchLabelKeys only with a selector
/// (how the keys merge into it is left to the server: it has changed between releases).
pub(super) fn validate_topology_spread_constraints(ps: &Value, path: &str, out: &mut Out) {
    let all: Vec<&Value> = items(ps, "topologySpreadConstraints")
        .map(|x| x.1)
        .collect();
    let base = format!("{path}.topologySpreadConstraints");
    for (i, c) in all.iter().enumerate() {
        let cp = join_index(&base, i);
        let skew = int(c, "maxSkew").unwrap_or(0);
        if skew <= 0 {
            err(
                out,
                format!("{cp}.maxSkew"),
                format!("maxSkew must be greater than zero, is {skew}"),
            );
        }
        let key = s(c, "topologyKey").unwrap_or("");
        if key.is_empty() {
            err(
                out,
                format!("{cp}.topologyKey"),
                "topologyKey can not be empty".into(),
            );
        }
        let action = s(c, "whenUnsatisfiable").unwrap_or("");
        if !["DoNotSchedule", "ScheduleAnyway"].contains(&action) {
            err(
                out,
                format!("{cp}.whenUnsatisfiable"),
                format!(
                    "whenUnsatisfiable {action:?} is not supported: use one of DoNotSchedule, ScheduleAnyway"
                ),
            );
        }
        if all[i + 1..].iter().any(|o| {
            s(o, "topologyKey").unwrap_or("") == key
                && s(o, "whenUnsatisfiable").unwrap_or("") == action
        }) {
            err(
                out,
                format!("{cp}.{{topologyKey, whenUnsatisfiable}}"),
                format!("Duplicate value: \"{{{key}, {action}}}\""),
            );
        }
        if let Some(m) = c.get("minDomains").filter(|v| !v.is_null()) {
            let n = m.as_i64().unwrap_or(0);
            if n <= 0 {
                err(
                    out,
                    format!("{cp}.minDomains"),
                    format!("minDomains must be greater than zero, is {n}"),
                );
            }
            if action != "DoNotSchedule" {
                err(
                    out,
                    format!("{cp}.minDomains"),
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                );
            }
        }
        for k in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(p) = s(c, k)
                && !["Ignore", "Honor"].contains(&p)
            {
                err(
                    out,
                    format!("{cp}.{k}"),
                    format!("{k} {p:?} is not supported: use one of Honor, Ignore"),
                );
            }
        }
        if let Some(ls) = c.get("labelSelector").filter(|v| v.is_object()) {
            label_selector(ls, &format!("{cp}.labelSelector"), out);
        }
        super::label_keys_need_a_selector(c, &["matchLabelKeys"], &cp, out);
    }
}

/// ValidateHostAliases: an IP and DNS-1123 subdomain host names.
pub(super) fn validate_host_aliases(ps: &Value, path: &str, out: &mut Out) {
    for (i, a) in items(ps, "hostAliases") {
        let ap = join_index(&format!("{path}.hostAliases"), i);
        let ip = s(a, "ip").unwrap_or("");
        if !ip_sloppy(ip) {
            err(
                out,
                format!("{ap}.ip"),
                format!("{ip:?} must be a valid IP address"),
            );
        }
        for (j, h) in items(a, "hostnames") {
            let h = h.as_str().unwrap_or("");
            if let Err(e) = dns1123_subdomain(h) {
                err(
                    out,
                    join_index(&format!("{ap}.hostnames"), j),
                    format!("host name {h:?} {e}"),
                );
            }
        }
    }
}

/// validateReadinessGates: condition types are qualified names.
pub(super) fn validate_readiness_gates(ps: &Value, path: &str, out: &mut Out) {
    for (i, g) in items(ps, "readinessGates") {
        let t = s(g, "conditionType").unwrap_or("");
        if let Err(e) = qualified_name(t) {
            err(
                out,
                format!(
                    "{}.conditionType",
                    join_index(&format!("{path}.readinessGates"), i)
                ),
                format!("conditionType {t:?} {e}"),
            );
        }
    }
}

/// validateSchedulingGates: qualified names, no duplicates.
pub(super) fn validate_scheduling_gates(ps: &Value, path: &str, out: &mut Out) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, g) in items(ps, "schedulingGates") {
        let gp = join_index(&format!("{path}.schedulingGates"), i);
        let n = s(g, "name").unwrap_or("");
        if let Err(e) = qualified_name(n) {
            err(out, gp.clone(), format!("scheduling gate {n:?} {e}"));
        }
        if seen.contains(&n) {
            err(out, gp, format!("Duplicate value: {n:?}"));
        }
        seen.push(n);
    }
}

/// validatePodDNSConfig: with dnsPolicy None a dnsConfig with a nameserver; at most 3 IP
/// nameservers; at most 32 searches of 2048 characters in all, each a DNS subdomain (with
/// '_' and a trailing '.', or just '.': RelaxedDNSSearchValidation is on in 1.36); options
/// with names.
pub(super) fn validate_pod_dns_config(ps: &Value, path: &str, out: &mut Out) {
    let dp = format!("{path}.dnsConfig");
    let cfg = ps.get("dnsConfig").filter(|v| v.is_object());
    if s(ps, "dnsPolicy") == Some("None") {
        match cfg {
            None => {
                return err(
                    out,
                    dp,
                    "must provide `dnsConfig` when `dnsPolicy` is None".into(),
                );
            }
            Some(c) if items(c, "nameservers").next().is_none() => {
                return err(
                    out,
                    format!("{dp}.nameservers"),
                    "must provide at least one DNS nameserver when `dnsPolicy` is None".into(),
                );
            }
            _ => {}
        }
    }
    let Some(c) = cfg else { return };
    let ns: Vec<&Value> = items(c, "nameservers").map(|x| x.1).collect();
    if ns.len() > 3 {
        err(
            out,
            format!("{dp}.nameservers"),
            format!("must not have more than 3 nameservers, has {}", ns.len()),
        );
    }
    for (i, n) in ns.iter().enumerate() {
        let n = n.as_str().unwrap_or("");
        if !ip_sloppy(n) {
            err(
                out,
                join_index(&format!("{dp}.nameservers"), i),
                format!("{n:?} must be a valid IP address"),
            );
        }
    }
    let searches: Vec<&str> = items(c, "searches")
        .map(|x| x.1.as_str().unwrap_or(""))
        .collect();
    if searches.len() > 32 {
        err(
            out,
            format!("{dp}.searches"),
            format!(
                "must not have more than 32 search paths, has {}",
                searches.len()
            ),
        );
    }
    if searches.join(" ").len() > 2048 {
        err(
            out,
            format!("{dp}.searches"),
            "must not have more than 2048 characters (including spaces) in the search list".into(),
        );
    }
    for (i, sr) in searches.iter().enumerate() {
        if *sr == "." {
            continue;
        }
        let t = sr.strip_suffix('.').unwrap_or(sr);
        // ValidateDNS1123SubdomainWithUnderScore.
        if let Err(e) = dns1123_subdomain(&t.replace('_', "a")) {
            err(
                out,
                join_index(&format!("{dp}.searches"), i),
                format!("search {sr:?} {e}"),
            );
        }
    }
    for (i, o) in items(c, "options") {
        if s(o, "name").is_none_or(str::is_empty) {
            err(
                out,
                join_index(&format!("{dp}.options"), i),
                "an option needs a name: must not be empty".into(),
            );
        }
    }
}

/// validatePodResourceClaims / validatePodResourceClaim: unique DNS-label names, exactly one
/// of resourceClaimName and resourceClaimTemplateName, both DNS subdomains. Returns the names
/// (gatherPodResourceClaimNames) for the containers' claims.
pub(super) fn validate_pod_resource_claims<'a>(
    ps: &'a Value,
    path: &str,
    out: &mut Out,
) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in items(ps, "resourceClaims") {
        let cp = join_index(&format!("{path}.resourceClaims"), i);
        match s(c, "name").unwrap_or("") {
            "" => err(
                out,
                format!("{cp}.name"),
                "a resource claim needs a name".into(),
            ),
            n if names.contains(&n) => {
                err(out, format!("{cp}.name"), format!("Duplicate value: {n:?}"))
            }
            n => {
                if let Err(e) = dns1123_label(n) {
                    err(out, format!("{cp}.name"), format!("{n:?} {e}"));
                }
                names.push(n);
            }
        }
        let (a, b) = (s(c, "resourceClaimName"), s(c, "resourceClaimTemplateName"));
        match (a, b) {
            (Some(_), Some(_)) => err(
                out,
                cp.clone(),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified".into(),
            ),
            (None, None) => err(
                out,
                cp.clone(),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`".into(),
            ),
            _ => {}
        }
        for (k, v) in [("resourceClaimName", a), ("resourceClaimTemplateName", b)] {
            if let Some(v) = v
                && let Err(e) = dns1123_subdomain(v)
            {
                err(out, format!("{cp}.{k}"), format!("{v:?} {e}"));
            }
        }
    }
    names
}

/// validateResourceClaimNames: a container's resources.claims name the pod's claims, once
/// each, with DNS-label request names.
pub(super) fn validate_resource_claim_names(
    r: &Value,
    pod_claims: &[&str],
    path: &str,
    out: &mut Out,
) {
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in items(r, "claims") {
        let cp = join_index(&format!("{path}.claims"), i);
        let name = s(c, "name").unwrap_or("");
        if name.is_empty() {
            err(out, cp, "a claim needs a name".into());
            continue;
        }
        let req = s(c, "request").unwrap_or("");
        if !req.is_empty()
            && let Err(e) = dns1123_label(req)
        {
            err(out, format!("{cp}.request"), format!("{req:?} {e}"));
        }
        let key = if req.is_empty() {
            name.to_string()
        } else {
            format!("{name}/{req}")
        };
        let overlaps = seen.contains(&name.to_string())
            || seen.contains(&key)
            || (req.is_empty()
                && seen
                    .iter()
                    .any(|k| k.split_once('/').is_some_and(|x| x.0 == name)));
        if overlaps {
            err(out, cp.clone(), format!("Duplicate value: {key:?}"));
        }
        seen.push(key);
        if !pod_claims.contains(&name) {
            err(
                out,
                cp,
                format!(
                    "claim {name:?} not found: must be one of the names in pod.spec.resourceClaims{}",
                    if pod_claims.is_empty() {
                        " which is empty".to_string()
                    } else {
                        format!(": {}", pod_claims.join(", "))
                    }
                ),
            );
        }
    }
}
