//! `top`'s units, as `kubectl top pod` prints usage (k8s.io/kubectl pkg/metricsutil
//! metrics_printer.go, printSingleResourceUsage): CPU as whole millicores (`MilliValue`, rounded
//! up) with `m`, memory as whole MiB (`Value()/(1024*1024)`, truncated) with `Mi`, and
//! `<unknown>` where there is no sample (printSingleMissingResource); and `top`'s rows, its table
//! (kubectl's tab-terminated cells) and its `-o json`.

/// What a missing sample prints as.
pub const UNKNOWN: &str = "<unknown>";

/// `250m` for 250 millicores.
pub fn cpu(millicores: i128) -> String {
    format!("{millicores}m")
}

/// `64Mi` for 64 MiB (bytes truncated to whole MiB).
pub fn memory(bytes: i128) -> String {
    format!("{}Mi", bytes / (1024 * 1024))
}

/// A usage cell: the value, or `<unknown>`.
pub fn usage(v: Option<i128>, unit: fn(i128) -> String) -> String {
    v.map(unit).unwrap_or_else(|| UNKNOWN.to_string())
}

/// A request/limit cell: `-` when no container sets it (kubectl describe prints 0; a dash tells
/// "unset" apart from a real 0).
pub fn declared(v: Option<i128>, unit: fn(i128) -> String) -> String {
    v.map(unit).unwrap_or_else(|| "-".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_kubectl_tops() {
        assert_eq!(cpu(250), "250m");
        assert_eq!(memory(64 * 1024 * 1024), "64Mi");
        // Truncated, as Go's integer division.
        assert_eq!(memory(64 * 1024 * 1024 + 1024 * 1023), "64Mi");
        assert_eq!(usage(None, cpu), "<unknown>");
        assert_eq!(declared(None, memory), "-");
    }
}

use serde_json::{Value, json};

use super::tabwrite;
use crate::diagnose::gpu_use::{GpuSample, GpuUse};

/// Summed over a pod's containers; `None` when no container declares it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Declared {
    pub cpu_milli: Option<i128>,
    pub memory_bytes: Option<i128>,
}

/// One replica's row.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaTop {
    pub replica: String,
    pub pod: String,
    pub node: Option<String>,
    pub phase: String,
    pub gpus: i64,
    pub requests: Declared,
    pub limits: Declared,
    /// (millicores, bytes) from PodMetrics; `None` without a sample.
    pub usage: Option<(i128, i128)>,
    /// What its GPUs do (DCGM through Prometheus, or nvidia-smi in the pod).
    pub gpu_use: GpuUse,
    /// Where its training is, from its recent lines (`step 620/5,000 (12.3/s)`).
    pub progress: Option<String>,
}

/// One job and its replicas in the operator's order.
#[derive(Debug, Clone, PartialEq)]
pub struct JobTop {
    pub namespace: String,
    pub name: String,
    pub replicas: Vec<ReplicaTop>,
}

/// Two optional sums added; `None` only when both are.
pub(crate) fn add(a: Option<i128>, b: Option<i128>) -> Option<i128> {
    match (a, b) {
        (None, None) => None,
        // Saturating: a hostile quantity must not wrap a sum to a small figure.
        _ => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

fn sum_usage(rs: &[ReplicaTop]) -> Option<(i128, i128)> {
    rs.iter()
        .filter_map(|r| r.usage)
        .reduce(|a, b| (a.0 + b.0, a.1 + b.1))
}

fn sum_declared(rs: &[ReplicaTop], f: impl Fn(&ReplicaTop) -> Declared) -> Declared {
    rs.iter().map(f).fold(Declared::default(), |a, b| Declared {
        cpu_milli: add(a.cpu_milli, b.cpu_milli),
        memory_bytes: add(a.memory_bytes, b.memory_bytes),
    })
}

/// The table: a job's first row (REPLICA `*`) sums its replicas, one row per replica follows.
/// Every cell is tab-terminated in kubectl's printer (printValue), so the last column is padded
/// too: an empty trailing cell reproduces that. By default the columns `kubectl top` users read
/// (what is used); `wide` adds GPU memory and the requests and limits, as `-o wide` adds columns.
/// GPU REQUESTS is what the pods ask for (their `nvidia.com/gpu` limit), not what a device
/// plugin reports as allocated.
pub fn table(jobs: &[JobTop], all_namespaces: bool, no_headers: bool, wide: bool) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    if !no_headers {
        let mut h: Vec<String> = Vec::new();
        if all_namespaces {
            h.push("NAMESPACE".into());
        }
        for (c, only_wide) in [
            ("NAME", false),
            ("REPLICA", false),
            ("NODE", false),
            ("GPU REQUESTS", false),
            ("GPU(%)", false),
            ("GPU MEMORY", true),
            ("CPU(cores)", false),
            ("CPU REQUESTS", true),
            ("CPU LIMITS", true),
            ("MEMORY(bytes)", false),
            ("MEMORY REQUESTS", true),
            ("MEMORY LIMITS", true),
            ("PROGRESS", false),
            ("", false),
        ] {
            if wide || !only_wide {
                h.push(c.into());
            }
        }
        rows.push(h);
    }
    let line = |ns: &str,
                name: &str,
                replica: &str,
                node: &str,
                gpus: i64,
                gpu: (String, String),
                usage: Option<(i128, i128)>,
                req: Declared,
                lim: Declared,
                progress: &str| {
        let mut r = Vec::new();
        if all_namespaces {
            r.push(ns.to_string());
        }
        r.extend([name.to_string(), replica.to_string(), node.to_string()]);
        r.extend([gpus.to_string(), gpu.0]);
        if wide {
            r.push(gpu.1);
        }
        r.push(self::usage(usage.map(|u| u.0), cpu));
        if wide {
            r.extend([declared(req.cpu_milli, cpu), declared(lim.cpu_milli, cpu)]);
        }
        r.push(self::usage(usage.map(|u| u.1), memory));
        if wide {
            r.extend([
                declared(req.memory_bytes, memory),
                declared(lim.memory_bytes, memory),
            ]);
        }
        r.extend([progress.to_string(), String::new()]);
        r
    };
    for j in jobs {
        rows.push(line(
            &j.namespace,
            &j.name,
            "*",
            "",
            j.replicas.iter().map(|r| r.gpus).sum(),
            gpu_cells(&sum_gpu(&j.replicas)),
            sum_usage(&j.replicas),
            sum_declared(&j.replicas, |r| r.requests),
            sum_declared(&j.replicas, |r| r.limits),
            "",
        ));
        for r in &j.replicas {
            rows.push(line(
                &j.namespace,
                &j.name,
                &r.replica,
                r.node.as_deref().unwrap_or("<none>"),
                r.gpus,
                gpu_cells(&r.gpu_use),
                r.usage,
                r.requests,
                r.limits,
                r.progress.as_deref().unwrap_or("-"),
            ));
        }
    }
    tabwrite(&rows)
}

/// The job's GPUs together: utilization averaged over the GPUs read, memory summed; unknown
/// when a replica holding GPUs was not read, none when no replica holds any.
fn sum_gpu(rs: &[ReplicaTop]) -> GpuUse {
    let mut seen: Vec<&GpuSample> = Vec::new();
    for r in rs {
        match &r.gpu_use {
            GpuUse::None => {}
            GpuUse::Seen { sample, .. } => seen.push(sample),
            GpuUse::Unknown(why) => return GpuUse::Unknown(why.clone()),
        }
    }
    if seen.is_empty() {
        return GpuUse::None;
    }
    let weighted: Vec<(f64, u32)> = seen
        .iter()
        .filter_map(|s| Some((s.util_percent?, s.devices.max(1))))
        .collect();
    let n: u32 = weighted.iter().map(|(_, d)| d).sum();
    let opt_sum = |f: fn(&GpuSample) -> Option<u64>| -> Option<u64> {
        seen.iter().map(|s| f(s)).sum::<Option<u64>>()
    };
    GpuUse::Seen {
        sample: GpuSample {
            devices: seen.iter().map(|s| s.devices).sum(),
            util_percent: (n > 0)
                .then(|| weighted.iter().map(|(u, d)| u * *d as f64).sum::<f64>() / n as f64),
            memory_used_mib: opt_sum(|s| s.memory_used_mib),
            memory_total_mib: opt_sum(|s| s.memory_total_mib),
        },
        source: String::new(),
    }
}

/// GPU(%) and GPU MEMORY cells: `-` without GPUs, `<unknown>` when not read.
fn gpu_cells(g: &GpuUse) -> (String, String) {
    match g {
        GpuUse::None => ("-".into(), "-".into()),
        GpuUse::Unknown(_) => (UNKNOWN.into(), UNKNOWN.into()),
        GpuUse::Seen { sample, .. } => (
            sample
                .util_percent
                .map_or_else(|| UNKNOWN.to_string(), |u| format!("{u:.0}%")),
            sample
                .memory_used_mib
                .map_or_else(|| UNKNOWN.to_string(), |m| format!("{m}Mi")),
        ),
    }
}

fn gpu_json(g: &GpuUse) -> (Value, Value) {
    match g {
        GpuUse::None => (Value::Null, Value::Null),
        GpuUse::Unknown(why) => (Value::Null, json!(why)),
        GpuUse::Seen { sample, source } => {
            let mut v = json!({
                "devices": sample.devices,
                "utilizationPercent": sample.util_percent,
                "memoryUsedBytes": sample.memory_used_mib.map(|m| m * 1024 * 1024),
                "memoryTotalBytes": sample.memory_total_mib.map(|m| m * 1024 * 1024),
            });
            if !source.is_empty() {
                v["source"] = json!(source);
            }
            (v, Value::Null)
        }
    }
}

fn declared_json(d: Declared) -> Value {
    json!({"cpuMillicores": d.cpu_milli, "memoryBytes": d.memory_bytes})
}

fn usage_json(u: Option<(i128, i128)>) -> Value {
    u.map_or(
        Value::Null,
        |(c, m)| json!({"cpuMillicores": c, "memoryBytes": m}),
    )
}

/// `-o json`: numbers in millicores and bytes; `usage` null where there is no sample,
/// `metricsAvailable` false when the metrics API could not be read.
pub fn to_json(jobs: &[JobTop], metrics_available: bool) -> Value {
    let items: Vec<Value> = jobs
        .iter()
        .map(|j| {
            let (job_gpu, job_gpu_unknown) = gpu_json(&sum_gpu(&j.replicas));
            json!({
                "namespace": j.namespace, "name": j.name,
                "gpus": j.replicas.iter().map(|r| r.gpus).sum::<i64>(),
                "requests": declared_json(sum_declared(&j.replicas, |r| r.requests)),
                "limits": declared_json(sum_declared(&j.replicas, |r| r.limits)),
                "usage": usage_json(sum_usage(&j.replicas)),
                "gpuUse": job_gpu, "gpuUseUnknown": job_gpu_unknown,
                "replicas": j.replicas.iter().map(|r| {
                    let (gpu, gpu_unknown) = gpu_json(&r.gpu_use);
                    json!({
                        "replica": r.replica, "pod": r.pod, "node": r.node, "phase": r.phase,
                        "gpus": r.gpus, "requests": declared_json(r.requests),
                        "limits": declared_json(r.limits), "usage": usage_json(r.usage),
                        "gpuUse": gpu, "gpuUseUnknown": gpu_unknown, "progress": r.progress,
                    })
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({"metricsAvailable": metrics_available, "items": items})
}
