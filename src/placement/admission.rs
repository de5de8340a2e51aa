//! The admission plugins that can refuse the operator's pod creations.
//! - LimitRanger (`plugin/pkg/admission/limitranger/admission.go`): Container defaults
//!   (`default` → limits, `defaultRequest` → requests, for resources the container leaves out),
//!   after the API's own defaulting (limit → missing request, `pkg/apis/core/v1/defaults.go`);
//!   LimitRange objects are themselves defaulted (`SetDefaults_LimitRangeItem`: default ← max,
//!   defaultRequest ← default, then ← min). Then min/max per Container and per Pod.
//! - ResourceQuota (`plugin/pkg/admission/resourcequota/controller.go` with the pod evaluator
//!   `pkg/quota/v1/evaluator/core/pods.go`): `exceeded quota: NAME, requested: …, used: …,
//!   limited: …` and `failed quota: NAME: must specify …`. Each pod is admitted against what the
//!   earlier ones used, as the operator creates them one by one.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{LimitRange, PodSpec, ResourceQuota};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::filters::{Res, effective_requests, is_extended};
use super::pods::JobPod;
// LimitRanger's defaulting is applied while the pods are built (pods.rs, the step before this one).
use super::{QuotaFinding, Verdict};
use crate::model::quantity::{format_quantity, parse_quantity};

type List = BTreeMap<String, Quantity>;

fn q(l: Option<&List>, k: &str) -> Option<i128> {
    l.and_then(|l| l.get(k)).and_then(|v| parse_quantity(&v.0))
}

fn pod_limits(spec: &PodSpec) -> Res {
    let mut out = Res::new();
    for c in &spec.containers {
        for (k, v) in c
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .into_iter()
            .flatten()
        {
            *out.entry(k.clone()).or_default() += parse_quantity(&v.0).unwrap_or(0);
        }
    }
    let mut init = Res::new();
    for c in spec.init_containers.iter().flatten() {
        for (k, v) in c
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .into_iter()
            .flatten()
        {
            let e = init.entry(k.clone()).or_default();
            *e = (*e).max(parse_quantity(&v.0).unwrap_or(0));
        }
    }
    for (k, v) in init {
        let e = out.entry(k).or_default();
        *e = (*e).max(v);
    }
    out
}

/// LimitRange min/max violations (one finding per pod template and rule, `never`).
pub fn limit_range_violations(pods: &[JobPod], limit_ranges: &[LimitRange]) -> Vec<QuotaFinding> {
    let mut out = vec![];
    let mut seen = BTreeSet::new();
    for p in pods {
        // All pods of a replica type share a template: report once per type.
        if !seen.insert(p.replica_type.clone()) {
            continue;
        }
        for lr in limit_ranges {
            let lname = lr.metadata.name.clone().unwrap_or_default();
            for item in lr.spec.iter().flat_map(|s| s.limits.iter()) {
                let mut errs = vec![];
                let mut check = |kind: &str, req: Option<i128>, lim: Option<i128>, res: &str| {
                    if let Some(min) = q(item.min.as_ref(), res) {
                        match req {
                            None => errs.push(format!(
                                "minimum {res} usage per {kind} is {}.  No request is specified",
                                format_quantity(res, min)
                            )),
                            Some(r) if r < min => errs.push(format!(
                                "minimum {res} usage per {kind} is {}, but request is {}",
                                format_quantity(res, min),
                                format_quantity(res, r)
                            )),
                            _ => {}
                        }
                    }
                    if let Some(max) = q(item.max.as_ref(), res) {
                        match lim {
                            None => errs.push(format!(
                                "maximum {res} usage per {kind} is {}.  No limit is specified",
                                format_quantity(res, max)
                            )),
                            Some(l) if l > max => errs.push(format!(
                                "maximum {res} usage per {kind} is {}, but limit is {}",
                                format_quantity(res, max),
                                format_quantity(res, l)
                            )),
                            _ => {}
                        }
                    }
                };
                let keys: BTreeSet<String> = item
                    .min
                    .iter()
                    .chain(item.max.iter())
                    .flat_map(|m| m.keys().cloned())
                    .collect();
                match item.type_.as_str() {
                    "Container" => {
                        for c in &p.spec.containers {
                            let r = c.resources.as_ref();
                            for k in &keys {
                                check(
                                    "Container",
                                    q(r.and_then(|r| r.requests.as_ref()), k),
                                    q(r.and_then(|r| r.limits.as_ref()), k),
                                    k,
                                );
                            }
                        }
                    }
                    "Pod" => {
                        let reqs = effective_requests(&p.spec);
                        let lims = pod_limits(&p.spec);
                        for k in &keys {
                            check("Pod", reqs.get(k).copied(), lims.get(k).copied(), k);
                        }
                    }
                    _ => {}
                }
                if !errs.is_empty() {
                    out.push(QuotaFinding {
                        name: lname.clone(),
                        resource: keys.iter().cloned().collect::<Vec<_>>().join(","),
                        verdict: Verdict::Never,
                        message: format!("pods {:?} is forbidden: [{}]", p.name, errs.join(", ")),
                    });
                }
            }
        }
    }
    out
}

/// The pod evaluator's usage: requests.X (and bare cpu/memory), limits.X, pods, count/pods.
fn pod_usage(p: &JobPod) -> Res {
    let mut u = Res::new();
    for (k, v) in &p.requests {
        u.insert(format!("requests.{k}"), *v);
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            u.insert(k.clone(), *v);
        }
    }
    for (k, v) in pod_limits(&p.spec) {
        if !is_extended(&k) {
            u.insert(format!("limits.{k}"), v);
        }
    }
    u.insert("pods".into(), 1000);
    u.insert("count/pods".into(), 1000);
    u
}

fn pretty(res: &Res, keys: &[String]) -> String {
    keys.iter()
        .map(|k| {
            let base = k.rsplit('.').next().unwrap_or(k);
            let base = if k.contains('/') { k.as_str() } else { base };
            format!(
                "{k}={}",
                format_quantity(base, res.get(k).copied().unwrap_or(0))
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Would the operator's pod creations pass each ResourceQuota (scoped quotas are skipped)?
pub fn check_quotas(pods: &[JobPod], quotas: &[ResourceQuota]) -> Vec<QuotaFinding> {
    let mut out = vec![];
    for quota in quotas {
        let name = quota.metadata.name.clone().unwrap_or_default();
        let Some(spec) = &quota.spec else { continue };
        if spec.scopes.as_ref().is_some_and(|s| !s.is_empty()) || spec.scope_selector.is_some() {
            continue;
        }
        let hard: Res = spec
            .hard
            .iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), parse_quantity(&v.0)?)))
            .collect();
        let mut used: Res = quota
            .status
            .as_ref()
            .and_then(|s| s.used.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), parse_quantity(&v.0)?)))
            .collect();
        // "must specify": a constrained cpu/memory resource some container leaves unset.
        let constrained: Vec<&String> = hard
            .keys()
            .filter(|k| {
                matches!(
                    k.as_str(),
                    "cpu"
                        | "memory"
                        | "requests.cpu"
                        | "requests.memory"
                        | "limits.cpu"
                        | "limits.memory"
                )
            })
            .collect();
        let mut reported = false;
        for p in pods {
            let mut missing = BTreeSet::new();
            for c in &p.spec.containers {
                let r = c.resources.as_ref();
                for k in &constrained {
                    let (list, res) = match k.split_once('.') {
                        Some(("limits", res)) => (r.and_then(|r| r.limits.as_ref()), res),
                        Some((_, res)) => (r.and_then(|r| r.requests.as_ref()), res),
                        None => (r.and_then(|r| r.requests.as_ref()), k.as_str()),
                    };
                    if list.is_none_or(|l| !l.contains_key(res)) {
                        missing.insert((*k).clone());
                    }
                }
            }
            if !missing.is_empty() {
                out.push(QuotaFinding {
                    name: name.clone(),
                    resource: missing.iter().cloned().collect::<Vec<_>>().join(","),
                    verdict: Verdict::Never,
                    message: format!(
                        "pods {:?} is forbidden: failed quota: {name}: must specify {}",
                        p.name,
                        missing.into_iter().collect::<Vec<_>>().join(",")
                    ),
                });
                reported = true;
                break;
            }
        }
        if reported {
            continue;
        }
        // Admit the pods one by one, as the operator creates them.
        let total: Res = pods.iter().fold(Res::new(), |mut acc, p| {
            for (k, v) in pod_usage(p) {
                *acc.entry(k).or_default() += v;
            }
            acc
        });
        for p in pods {
            let u = pod_usage(p);
            let exceeded: Vec<String> = hard
                .iter()
                .filter(|(k, h)| {
                    let d = u.get(*k).copied().unwrap_or(0);
                    d > 0 && used.get(*k).copied().unwrap_or(0) + d > **h
                })
                .map(|(k, _)| k.clone())
                .collect();
            if exceeded.is_empty() {
                for (k, v) in &u {
                    if hard.contains_key(k) {
                        *used.entry(k.clone()).or_default() += v;
                    }
                }
                continue;
            }
            let never = exceeded
                .iter()
                .any(|k| total.get(k).copied().unwrap_or(0) > hard[k]);
            out.push(QuotaFinding {
                name: name.clone(),
                resource: exceeded.join(","),
                verdict: if never { Verdict::Never } else { Verdict::Waits },
                message: format!(
                    "pods {:?} is forbidden: exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                    p.name,
                    pretty(&u, &exceeded),
                    pretty(&used, &exceeded),
                    pretty(&hard, &exceeded)
                ),
            });
            break;
        }
    }
    out
}
