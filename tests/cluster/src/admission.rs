//! Pod admission as kube-apiserver runs it after defaulting: LimitRanger
//! (`plugin/pkg/admission/limitranger/admission.go`: Container defaults for what a container
//! leaves out, then min/max per Container) and ResourceQuota
//! (`plugin/pkg/admission/resourcequota/controller.go`, pod evaluator
//! `pkg/quota/v1/evaluator/core/pods.go`). Both refuse with 403 Forbidden:
//! `pods "NAME" is forbidden: exceeded quota: Q, requested: R=V, used: R=V, limited: R=V`,
//! `… failed quota: Q: must specify R,R`, `… [maximum cpu usage per Container is 2, but limit is 4]`.
//! Quota usage is recomputed from the live pods, as the quota controller converges to, and
//! written to `status.used`.

use serde_json::{Map, Value, json};

use crate::scheduler::{Res, pod_requests};
use crate::state::Shared;
use crate::status::ApiError;
use crate::util::value_quantity_milli;

fn res(v: &Value) -> Res {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Some((k.clone(), value_quantity_milli(q)?)))
        .collect()
}

/// Quantity text for messages: `500m`, `2`, `1Gi`.
fn fmt_q(resource: &str, milli: i128) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let u = milli / 1000;
    if (resource.contains("memory") || resource.contains("storage")) && u != 0 {
        for (s, sh) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
            if u % (1i128 << sh) == 0 {
                return format!("{}{s}", u >> sh);
            }
        }
    }
    u.to_string()
}

/// 403 Forbidden from an admission plugin.
pub(crate) fn forbidden(name: &str, message: &str) -> ApiError {
    ApiError {
        code: 403,
        body: json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "Forbidden",
            "details": {"name": name, "kind": "pods"}, "code": 403
        }),
        retry_after: None,
    }
}

/// `SetDefaults_LimitRangeItem`: default ← max, defaultRequest ← default, then ← min.
fn item_defaults(item: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let mut def = item["default"].as_object().cloned().unwrap_or_default();
    let mut req = item["defaultRequest"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (k, v) in item["max"].as_object().into_iter().flatten() {
        def.entry(k.clone()).or_insert(v.clone());
    }
    for (k, v) in def.clone() {
        req.entry(k).or_insert(v);
    }
    for (k, v) in item["min"].as_object().into_iter().flatten() {
        req.entry(k.clone()).or_insert(v.clone());
    }
    (def, req)
}

/// Runs LimitRanger then ResourceQuota on a pod being created (already defaulted).
/// Returns the API server's refusal message.
pub(crate) fn admit_pod(sh: &Shared, ns: &str, pod: &mut Value) -> Result<(), String> {
    let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
    let lrs = sh.store.list("limitranges", Some(ns)).0;
    let items: Vec<Value> = lrs
        .iter()
        .flat_map(|l| l["spec"]["limits"].as_array().cloned().unwrap_or_default())
        .filter(|i| i["type"] == "Container")
        .collect();
    let mut errs = vec![];
    for key in ["containers", "initContainers"] {
        for c in pod["spec"][key].as_array_mut().into_iter().flatten() {
            for item in &items {
                let (def, defreq) = item_defaults(item);
                for (field, vals) in [("limits", def), ("requests", defreq)] {
                    if vals.is_empty() {
                        continue;
                    }
                    if !c["resources"].is_object() {
                        c["resources"] = json!({});
                    }
                    if !c["resources"][field].is_object() {
                        c["resources"][field] = json!({});
                    }
                    for (k, v) in vals {
                        if c["resources"][field].get(&k).is_none() {
                            c["resources"][field][&k] = v;
                        }
                    }
                }
                if key != "containers" {
                    continue;
                }
                let req = res(&c["resources"]["requests"]);
                let lim = res(&c["resources"]["limits"]);
                for (k, min) in res(&item["min"]) {
                    match req.get(&k) {
                        None => errs.push(format!(
                            "minimum {k} usage per Container is {}.  No request is specified",
                            fmt_q(&k, min)
                        )),
                        Some(r) if *r < min => errs.push(format!(
                            "minimum {k} usage per Container is {}, but request is {}",
                            fmt_q(&k, min),
                            fmt_q(&k, *r)
                        )),
                        _ => {}
                    }
                }
                for (k, max) in res(&item["max"]) {
                    match lim.get(&k) {
                        None => errs.push(format!(
                            "maximum {k} usage per Container is {}.  No limit is specified",
                            fmt_q(&k, max)
                        )),
                        Some(l) if *l > max => errs.push(format!(
                            "maximum {k} usage per Container is {}, but limit is {}",
                            fmt_q(&k, max),
                            fmt_q(&k, *l)
                        )),
                        _ => {}
                    }
                }
            }
        }
    }
    // ServiceAccount admission (plugin/pkg/admission/serviceaccount/admission.go, `Admit` →
    // `getServiceAccount`) mutates, so it refuses before LimitRanger's validation. `default`
    // always exists: the serviceaccounts controller creates it in every namespace.
    let sa = pod["spec"]["serviceAccountName"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string();
    if sa != "default" && sh.store.get("serviceaccounts", ns, &sa).is_none() {
        return Err(format!(
            "pods {name:?} is forbidden: error looking up service account {ns}/{sa}: serviceaccount {sa:?} not found"
        ));
    }
    if !errs.is_empty() {
        return Err(format!("pods {name:?} is forbidden: [{}]", errs.join(", ")));
    }
    for q in sh.store.list("resourcequotas", Some(ns)).0 {
        if q["spec"]["scopes"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
            || q["spec"]["scopeSelector"].is_object()
        {
            continue;
        }
        let qname = q["metadata"]["name"].as_str().unwrap_or("");
        let hard = res(&q["spec"]["hard"]);
        let mut missing: Vec<String> = vec![];
        for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
            for k in hard.keys() {
                let (field, r) = match k.split_once('.') {
                    Some(("limits", r)) if matches!(r, "cpu" | "memory") => ("limits", r),
                    Some(("requests", r)) if matches!(r, "cpu" | "memory") => ("requests", r),
                    None if matches!(k.as_str(), "cpu" | "memory") => ("requests", k.as_str()),
                    _ => continue,
                };
                if c["resources"][field].get(r).is_none() && !missing.contains(k) {
                    missing.push(k.clone());
                }
            }
        }
        if !missing.is_empty() {
            missing.sort();
            return Err(format!(
                "pods {name:?} is forbidden: failed quota: {qname}: must specify {}",
                missing.join(",")
            ));
        }
        let used = namespace_usage(sh, ns);
        let delta = usage(pod);
        let mut exceeded: Vec<&String> = hard
            .iter()
            .filter(|(k, h)| {
                let d = delta.get(*k).copied().unwrap_or(0);
                d > 0 && used.get(*k).copied().unwrap_or(0) + d > **h
            })
            .map(|(k, _)| k)
            .collect();
        if !exceeded.is_empty() {
            exceeded.sort();
            let pretty = |m: &Res| {
                exceeded
                    .iter()
                    .map(|k| {
                        let base = if k.contains('/') {
                            k.as_str()
                        } else {
                            k.rsplit('.').next().unwrap_or(k)
                        };
                        format!("{k}={}", fmt_q(base, m.get(*k).copied().unwrap_or(0)))
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            };
            return Err(format!(
                "pods {name:?} is forbidden: exceeded quota: {qname}, requested: {}, used: {}, limited: {}",
                pretty(&delta),
                pretty(&used),
                pretty(&hard)
            ));
        }
    }
    Ok(())
}

/// What one pod charges: requests.X (and bare cpu/memory), limits.X, pods, count/pods.
fn usage(pod: &Value) -> Res {
    let mut u = Res::new();
    for (k, v) in pod_requests(pod) {
        if k == "pods" {
            continue;
        }
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            u.insert(k.clone(), v);
        }
        u.insert(format!("requests.{k}"), v);
    }
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        for (k, v) in res(&c["resources"]["limits"]) {
            if !k.contains('/') {
                *u.entry(format!("limits.{k}")).or_default() += v;
            }
        }
    }
    u.insert("pods".into(), 1000);
    u.insert("count/pods".into(), 1000);
    u
}

fn namespace_usage(sh: &Shared, ns: &str) -> Res {
    let mut used = Res::new();
    for p in sh.store.list("pods", Some(ns)).0 {
        if matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")) {
            continue;
        }
        for (k, v) in usage(&p) {
            *used.entry(k).or_default() += v;
        }
    }
    used
}

/// Writes `status.used` (for the resources each quota constrains) and `status.hard`.
pub(crate) fn refresh_quotas(sh: &Shared, ns: &str) {
    let quotas = sh.store.list("resourcequotas", Some(ns)).0;
    if quotas.is_empty() {
        return;
    }
    let used = namespace_usage(sh, ns);
    for q in quotas {
        let hard = q["spec"]["hard"].clone();
        let mut u = json!({});
        for (k, _) in hard.as_object().into_iter().flatten() {
            let base = if k.contains('/') {
                k.as_str()
            } else {
                k.rsplit('.').next().unwrap_or(k)
            };
            u[k] = json!(fmt_q(base, used.get(k).copied().unwrap_or(0)));
        }
        let name = q["metadata"]["name"].as_str().unwrap_or("").to_string();
        sh.store.modify("resourcequotas", ns, &name, move |o| {
            if o["status"]["used"] == u && o["status"]["hard"] == hard {
                return false;
            }
            o["status"] = json!({"hard": hard, "used": u});
            true
        });
    }
}
