//! `top`: what each job uses, per replica — node, GPUs, CPU and memory requested and limited (from
//! the pod specs), and live usage from `metrics.k8s.io/v1beta1` PodMetrics when the cluster serves
//! them (metrics-server), printed in `kubectl top pod`'s units ([`crate::print::top`]).
//!
//! Requests, constant in the number of replicas: the job (or one list of jobs), one list of their
//! pods, one list of PodMetrics with the same label selector. Metrics that cannot be read (API not
//! served, forbidden, down) are `<unknown>` with one note: usage is decoration, never a failure.
//! Then, within one small budget ([`enrich`]): GPU use per replica and its training progress.

use std::collections::BTreeMap;
use std::io::Write;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

mod enrich;

use super::Context;
use crate::cluster::{self, Kube};
use crate::diagnose::gpu_use::GpuUse;
use crate::error::{Error, Result};
use crate::model;
use crate::output::Output;
use crate::print;
use crate::print::jobview;
use crate::print::top::{self as units, Declared, JobTop, ReplicaTop, add};
// The printers moved to print/top.rs with the rows they print; callers keep these paths.
use crate::model::quantity::parse_quantity;
pub use crate::print::top::{table, to_json};

/// Which jobs and how.
#[derive(Debug, Clone, Default)]
pub struct TopOptions {
    /// One job, else every job of the namespace (or all namespaces).
    pub name: Option<String>,
    pub all_namespaces: bool,
    /// Label selector on the TFJobs.
    pub selector: Option<String>,
    /// `-o json` instead of the table.
    pub json: bool,
    /// `-o wide`: the table with GPU memory and the requests and limits beside the use.
    pub wide: bool,
    pub no_headers: bool,
    /// The Prometheus to ask for DCGM's GPU metrics, instead of looking for one.
    pub prometheus: Option<crate::cluster::prometheus::PromService>,
    /// `--progress-pattern`: a regex with a `step` group, for logs of other shapes.
    pub progress_pattern: Option<regex::Regex>,
}

/// Requests and limits of the app containers, and GPUs (limit, else request, of
/// `nvidia.com/gpu`, as [`jobview::gpus`] counts them).
fn declared(pod: &Pod) -> (Declared, Declared, i64) {
    let (mut req, mut lim, mut gpus) = (Declared::default(), Declared::default(), 0i64);
    let q =
        |m: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
         k: &str| m.and_then(|m| m.get(k)).and_then(|q| parse_quantity(&q.0));
    for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
        let Some(r) = c.resources.as_ref() else {
            continue;
        };
        let (rq, lm) = (r.requests.as_ref(), r.limits.as_ref());
        req.cpu_milli = add(req.cpu_milli, q(rq, "cpu"));
        req.memory_bytes = add(req.memory_bytes, q(rq, "memory").map(|m| m / 1000));
        lim.cpu_milli = add(lim.cpu_milli, q(lm, "cpu"));
        lim.memory_bytes = add(lim.memory_bytes, q(lm, "memory").map(|m| m / 1000));
        let g = q(lm, crate::model::GPU_RESOURCE).or_else(|| q(rq, crate::model::GPU_RESOURCE));
        let g = g.map_or(0, |m| i64::try_from((m / 1000).max(0)).unwrap_or(i64::MAX));
        gpus = gpus.saturating_add(g);
    }
    (req, lim, gpus)
}

/// A PodMetrics' usage summed over its containers (getPodMetrics in kubectl's
/// metrics_printer.go), as (millicores, bytes).
pub fn metrics_usage(m: &Value) -> Option<(i128, i128)> {
    let cs = m.get("containers")?.as_array()?;
    // What the metrics API sends is untrusted: a negative usage is no usage, and the sums
    // saturate instead of wrapping (a hostile figure must not come out as 0).
    let usage = |c: &Value, k: &str| {
        c.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_str)
            .and_then(parse_quantity)
            .unwrap_or(0)
            .max(0)
    };
    let (mut cpu, mut mem) = (0i128, 0i128);
    for c in cs {
        cpu = cpu.saturating_add(usage(c, "cpu"));
        mem = mem.saturating_add(usage(c, "memory"));
    }
    // Milli-units: cpu is already millicores; memory in bytes rounds up as Quantity.Value does.
    Some((cpu, mem.saturating_add(999) / 1000))
}

/// The rows, pure: jobs (namespace, name) in order, their pods, the usage by (namespace, pod).
pub fn build(
    jobs: &[(String, String)],
    pods: &[Pod],
    usage: &BTreeMap<(String, String), (i128, i128)>,
) -> Vec<JobTop> {
    jobs.iter()
        .map(|(ns, name)| {
            let mut replicas: Vec<ReplicaTop> = pods
                .iter()
                .filter(|p| {
                    p.namespace().as_deref() == Some(ns.as_str())
                        && p.labels().get(model::LABEL_JOB_NAME) == Some(name)
                })
                .map(|p| {
                    let (requests, limits, gpus) = declared(p);
                    ReplicaTop {
                        replica: jobview::replica_label(&crate::cluster::pod::Pod {
                            metadata: p.metadata.clone(),
                            status: None,
                        }),
                        pod: p.name_any(),
                        node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
                        phase: p
                            .status
                            .as_ref()
                            .and_then(|s| s.phase.clone())
                            .unwrap_or_else(|| "Unknown".into()),
                        gpus,
                        requests,
                        limits,
                        usage: usage.get(&(ns.clone(), p.name_any())).copied(),
                        gpu_use: if gpus > 0 {
                            GpuUse::Unknown("not read".into())
                        } else {
                            GpuUse::None
                        },
                        progress: None,
                    }
                })
                .collect();
            replicas.sort_by_key(|r| jobview::replica_order(&r.replica));
            JobTop {
                namespace: ns.clone(),
                name: name.clone(),
                replicas,
            }
        })
        .collect()
}

/// PodMetrics by (namespace, pod), or why they could not be read.
async fn read_metrics(
    kube: &Kube,
    namespace: Option<&str>,
    selector: &str,
) -> std::result::Result<BTreeMap<(String, String), (i128, i128)>, String> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics"),
        "pods",
    );
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(kube.client.clone(), ns, &ar),
        None => Api::all_with(kube.client.clone(), &ar),
    };
    let lp = ListParams::default().labels(selector);
    match cluster::retry(kube, || api.list(&lp)).await {
        Ok(list) => Ok(list
            .items
            .iter()
            .filter_map(|m| {
                let v = serde_json::to_value(m).ok()?;
                Some((
                    (m.namespace().unwrap_or_default(), m.name_any()),
                    metrics_usage(&v)?,
                ))
            })
            .collect()),
        // kubectl top says "Metrics API not available" when discovery lacks the group
        // (pkg/cmd/top/top_pod.go, SupportedMetricsAPIVersionAvailable); a 404 here is that.
        Err(e) if cluster::is_not_found(&e) => Err(
            "metrics API not available (metrics.k8s.io/v1beta1 is not served; metrics-server installs it)"
                .into(),
        ),
        Err(e) => Err(format!(
            "pod metrics could not be read ({})",
            cluster::status_code(&e)
                .map(|c| format!("HTTP {c}"))
                .unwrap_or_else(|| "no reply".into())
        )),
    }
}

/// Each replica's GPU use and progress ([`enrich`]), both at once within one budget; the
/// replicas whose GPU use stays unknown are named on `err` with the reason, once per reason.
async fn read_replicas(
    kube: &Kube,
    ns: Option<&str>,
    opts: &TopOptions,
    pods: &[Pod],
    rows: &mut [JobTop],
    err: &mut dyn Write,
) -> Result<()> {
    let mine: Vec<&Pod> = pods
        .iter()
        .filter(|p| {
            rows.iter().any(|j| {
                p.namespace().as_deref() == Some(j.namespace.as_str())
                    && p.labels().get(model::LABEL_JOB_NAME) == Some(&j.name)
            })
        })
        .collect();
    let gpus: BTreeMap<(String, String), i64> = rows
        .iter()
        .flat_map(|j| {
            j.replicas
                .iter()
                .map(|r| ((j.namespace.clone(), r.pod.clone()), r.gpus))
        })
        .collect();
    let budget = enrich::budget(kube);
    let (gpu, progress) = futures::join!(
        enrich::gpu_use(kube, &mine, &gpus, ns, opts.prometheus.as_ref(), &budget),
        enrich::progress(kube, &mine, opts.progress_pattern.as_ref(), &budget),
    );
    let mut unknown: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for j in rows.iter_mut() {
        for r in j.replicas.iter_mut() {
            let k = (j.namespace.clone(), r.pod.clone());
            if let Some(g) = gpu.get(&k) {
                r.gpu_use = g.clone();
            }
            r.progress = progress.get(&k).cloned();
            if let GpuUse::Unknown(why) = &r.gpu_use {
                unknown
                    .entry(why.clone())
                    .or_default()
                    .push(format!("{}/{}", j.name, r.replica));
            }
        }
    }
    let io = |e: std::io::Error| Error::io("writing output", e);
    for (why, who) in unknown {
        let who = crate::print::diagnosis::compact(&who);
        writeln!(
            err,
            "note: GPU use of {who} is unknown: {}.",
            crate::print::terminal::escape(&why)
        )
        .map_err(io)?;
    }
    Ok(())
}

/// `kubectl tfjob top [NAME]`: the jobs' usage, in the context's namespace (or all).
pub async fn run(ctx: &Context, opts: TopOptions, out: &mut Output) -> Result<()> {
    ctx.with_streams(out, async |kube, ns, data, notes| {
        top(kube, ns, &opts, data, notes).await
    })
    .await
}

/// Prints the jobs' usage to `out`; notes to `err`.
pub async fn top(
    kube: &Kube,
    namespace: &str,
    opts: &TopOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<()> {
    let ar = model::dynamic_resource();
    let ns = (!opts.all_namespaces || opts.name.is_some()).then_some(namespace);
    let jobs: Vec<(String, String)> = if let Some(name) = &opts.name {
        let job = crate::ops::workload::read_tfjob_object(kube, name).await?;
        vec![(namespace.to_string(), job.name_any())]
    } else {
        let api: Api<DynamicObject> = match ns {
            Some(ns) => Api::namespaced_with(kube.client.clone(), ns, &ar),
            None => Api::all_with(kube.client.clone(), &ar),
        };
        let mut lp = ListParams::default();
        if let Some(s) = &opts.selector {
            lp = lp.labels(s);
        }
        let list = cluster::retry(kube, || api.list(&lp))
            .await
            .map_err(|e| cluster::tfjob_error("listing tfjobs", e))?;
        let mut v: Vec<(String, String)> = list
            .items
            .iter()
            .map(|j| (j.namespace().unwrap_or_default(), j.name_any()))
            .collect();
        v.sort();
        v
    };
    let io = |e: std::io::Error| Error::io("writing output", e);
    if jobs.is_empty() {
        if opts.json {
            return writeln!(out, "{}", print::gojson::indented(&to_json(&[], true))).map_err(io);
        }
        return if opts.all_namespaces {
            writeln!(err, "No resources found")
        } else {
            writeln!(err, "No resources found in {namespace} namespace.")
        }
        .map_err(io);
    }
    let selector = match &opts.name {
        Some(n) => model::job_selector(n),
        None => format!(
            "{},{}={}",
            model::LABEL_JOB_NAME,
            model::LABEL_OPERATOR_NAME,
            model::OPERATOR_NAME
        ),
    };
    let pods_api: Api<Pod> = match ns {
        Some(ns) => Api::namespaced(kube.client.clone(), ns),
        None => Api::all(kube.client.clone()),
    };
    let lp = ListParams::default().labels(&selector);
    let pods = cluster::retry(kube, || pods_api.list(&lp))
        .await
        .map_err(|e| Error::kube("listing pods", e))?
        .items;
    let (usage, available) = match read_metrics(kube, ns, &selector).await {
        Ok(u) => (u, true),
        Err(why) => {
            writeln!(err, "note: {why}: usage is shown as {}.", units::UNKNOWN).map_err(io)?;
            (BTreeMap::new(), false)
        }
    };
    let mut rows = build(&jobs, &pods, &usage);
    read_replicas(kube, ns, opts, &pods, &mut rows, err).await?;
    if opts.json {
        writeln!(
            out,
            "{}",
            print::gojson::indented(&to_json(&rows, available))
        )
        .map_err(io)
    } else {
        write!(
            out,
            "{}",
            table(
                &rows,
                opts.all_namespaces && opts.name.is_none(),
                opts.no_headers,
                opts.wide
            )
        )
        .map_err(io)
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    /// Issue 60 item 7: a hostile metrics answer (a negative usage, quantities at the edge of
    /// what parses) sums to a saturated figure, never a wrapped or negative one.
    #[test]
    fn usage_from_the_metrics_api_never_wraps_or_goes_negative() {
        let big = format!("{}E", "9".repeat(30));
        let m = serde_json::json!({"containers": [
            {"usage": {"cpu": big, "memory": big}},
            {"usage": {"cpu": big, "memory": big}},
            {"usage": {"cpu": "-5", "memory": "-1Gi"}},
        ]});
        let (cpu, mem) = metrics_usage(&m).unwrap();
        let one = serde_json::json!({"containers": [{"usage": {"cpu": big, "memory": big}}]});
        let (cpu1, mem1) = metrics_usage(&one).unwrap();
        assert!(
            cpu >= cpu1 && mem >= mem1 && cpu1 > 0 && mem1 > 0,
            "{cpu} {mem}"
        );
        let m = serde_json::json!({"containers": [{"usage": {"cpu": "-5", "memory": "-1Gi"}}]});
        assert_eq!(metrics_usage(&m), Some((0, 0)));
    }
}
