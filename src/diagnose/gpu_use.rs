//! GPU use per replica (issue 49), pure: what DCGM's exporter says through Prometheus, or what
//! `nvidia-smi` prints inside the pod, folded into one reading per pod.
//!
//! DCGM's exporter labels each GPU's series with the pod it is assigned to, under `pod` and
//! `namespace`, or under `exported_pod` and `exported_namespace` when Prometheus scrapes it
//! without `honor_labels` (the bare labels then name the exporter's own pod). Its gauges:
//! `DCGM_FI_DEV_GPU_UTIL` (percent), `DCGM_FI_DEV_FB_USED` and `DCGM_FI_DEV_FB_FREE` (MiB),
//! one series per GPU (`UUID`, `gpu`). Prometheus answers an instant query as
//! `{"status":"success","data":{"resultType":"vector","result":[{"metric":{…},"value":[t,"v"]}]}}`
//! (prometheus web/api/v1 `queryData`).

use std::collections::BTreeMap;

use serde_json::Value;

/// The DCGM gauges read.
pub const UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
pub const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
pub const FB_FREE: &str = "DCGM_FI_DEV_FB_FREE";

/// The command run in a pod when no Prometheus answers: one CSV line per GPU the process sees,
/// numbers without units (utilization in percent, memory in MiB).
pub const NVIDIA_SMI: &[&str] = &[
    "nvidia-smi",
    "--query-gpu=uuid,utilization.gpu,memory.used,memory.total",
    "--format=csv,noheader,nounits",
];

/// One pod's GPUs, summed (memory) and averaged (utilization).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSample {
    /// GPUs seen.
    pub devices: u32,
    /// Mean utilization over the GPUs that report one, in percent.
    pub util_percent: Option<f64>,
    /// Framebuffer memory in use, MiB, over the GPUs that report it.
    pub memory_used_mib: Option<u64>,
    /// Framebuffer memory in all, MiB, when every GPU reports it.
    pub memory_total_mib: Option<u64>,
}

/// A replica's GPU use as `top` reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuUse {
    /// It asks for no GPU.
    None,
    /// Read; `source` says from where (`DCGM via Prometheus monitoring/prometheus-operated:web`,
    /// `nvidia-smi`).
    Seen { sample: GpuSample, source: String },
    /// Not read, and why.
    Unknown(String),
}

/// One GPU's numbers before they are folded.
#[derive(Debug, Clone, Default)]
struct Device {
    util: Option<f64>,
    used: Option<f64>,
    free: Option<f64>,
    total: Option<f64>,
}

fn fold(devices: &BTreeMap<String, Device>) -> GpuSample {
    let utils: Vec<f64> = devices.values().filter_map(|d| d.util).collect();
    let used: Vec<f64> = devices.values().filter_map(|d| d.used).collect();
    let totals: Option<Vec<f64>> = devices
        .values()
        .map(|d| d.total.or_else(|| Some(d.used? + d.free?)))
        .collect();
    // Each value is in range (`reading`); the sums saturate rather than wrap.
    let mib = |v: &f64| v.max(0.0).round() as u64;
    let sum = |v: &[f64]| v.iter().map(mib).fold(0u64, u64::saturating_add);
    GpuSample {
        devices: u32::try_from(devices.len()).unwrap_or(u32::MAX),
        util_percent: (!utils.is_empty()).then(|| utils.iter().sum::<f64>() / utils.len() as f64),
        memory_used_mib: (!used.is_empty()).then(|| sum(&used)),
        memory_total_mib: totals.filter(|t| !t.is_empty()).map(|t| sum(&t)),
    }
}

/// A number as Prometheus and nvidia-smi print them; `NaN`, `[N/A]` and `[Not Supported]` are
/// no reading.
fn number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// One GPU's framebuffer in MiB is at most 1 PiB: no GPU comes near it.
const MAX_MIB: f64 = (1u64 << 30) as f64;

/// What a pod or an exporter prints is untrusted: a utilization outside 0–100 %, or memory
/// below 0 or above [`MAX_MIB`] (a 300-digit cell), is no reading rather than a figure.
#[derive(Clone, Copy)]
enum Gauge {
    Percent,
    Mib,
}

fn reading(s: &str, gauge: Gauge) -> Option<f64> {
    let v = number(s)?;
    let max = match gauge {
        Gauge::Percent => 100.0,
        Gauge::Mib => MAX_MIB,
    };
    (0.0..=max).contains(&v).then_some(v)
}

/// The instant query for the DCGM gauges of the pods of `namespace` (every namespace when
/// `None`), under either labelling: `or` keeps one copy of a series both halves match.
pub fn promql(namespace: Option<&str>) -> String {
    let names = format!("__name__=~\"{UTIL}|{FB_USED}|{FB_FREE}\"");
    match namespace {
        // A namespace name is a DNS label: nothing in it needs escaping in a PromQL string.
        Some(ns) => {
            format!("{{{names},exported_namespace=\"{ns}\"}} or {{{names},namespace=\"{ns}\"}}")
        }
        None => format!("{{{names},exported_pod!=\"\"}} or {{{names},pod!=\"\"}}"),
    }
}

/// The pods' GPU samples from a Prometheus instant-query answer, by (namespace, pod); an
/// answer that is not a successful vector is the reason why not.
pub fn from_prometheus(answer: &Value) -> Result<BTreeMap<(String, String), GpuSample>, String> {
    if answer["status"] != "success" {
        let why = answer["error"].as_str().unwrap_or("no status \"success\"");
        return Err(format!("Prometheus answered an error: {why}"));
    }
    let Some(result) = answer.pointer("/data/result").and_then(Value::as_array) else {
        return Err("Prometheus's answer has no data.result".into());
    };
    let mut pods: BTreeMap<(String, String), BTreeMap<String, Device>> = BTreeMap::new();
    for series in result {
        let m = &series["metric"];
        let label = |k: &str| m[k].as_str().filter(|s| !s.is_empty());
        // With exported_* present the bare labels are the exporter's own pod.
        let (ns, pod) = match (label("exported_namespace"), label("exported_pod")) {
            (Some(ns), Some(pod)) => (ns, pod),
            _ => match (label("namespace"), label("pod")) {
                (Some(ns), Some(pod)) => (ns, pod),
                _ => continue,
            },
        };
        let gpu = label("UUID")
            .or_else(|| label("gpu"))
            .or_else(|| label("device"))
            .unwrap_or("0")
            .to_string();
        let gauge = match label("__name__") {
            Some(UTIL) => Gauge::Percent,
            _ => Gauge::Mib,
        };
        let Some(value) = series["value"]
            .get(1)
            .and_then(Value::as_str)
            .and_then(|v| reading(v, gauge))
        else {
            continue;
        };
        let d = pods
            .entry((ns.to_string(), pod.to_string()))
            .or_default()
            .entry(gpu)
            .or_default();
        match label("__name__") {
            Some(UTIL) => d.util = Some(value),
            Some(FB_USED) => d.used = Some(value),
            Some(FB_FREE) => d.free = Some(value),
            _ => {}
        }
    }
    Ok(pods.into_iter().map(|(k, d)| (k, fold(&d))).collect())
}

/// What [`NVIDIA_SMI`] printed, one GPU per line (`GPU-…, 87, 10240, 40960`); no line is no GPU.
pub fn from_nvidia_smi(stdout: &str) -> Result<GpuSample, String> {
    let mut devices = BTreeMap::new();
    for (i, line) in stdout.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != 4 {
            return Err(format!(
                "nvidia-smi printed a line that is not uuid, utilization, used, total: {:?}",
                line.chars().take(120).collect::<String>()
            ));
        }
        let id = if cells[0].is_empty() {
            i.to_string()
        } else {
            cells[0].to_string()
        };
        devices.insert(
            id,
            Device {
                util: reading(cells[1], Gauge::Percent),
                used: reading(cells[2], Gauge::Mib),
                free: None,
                total: reading(cells[3], Gauge::Mib),
            },
        );
    }
    Ok(fold(&devices))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Issue 60 item 7: a negative or 300-digit utilization, memory past any GPU's, are no
    /// reading; sums never wrap (two GPUs at the limit stay a large number, not 0).
    #[test]
    fn figures_out_of_range_are_no_reading_and_sums_do_not_wrap() {
        let huge = "9".repeat(300);
        let s = from_nvidia_smi(&format!(
            "GPU-a, -5, {huge}, 40960\nGPU-b, {huge}, 1024, -1\n"
        ))
        .unwrap();
        assert_eq!(s.devices, 2);
        assert_eq!(s.util_percent, None, "{s:?}");
        assert_eq!(s.memory_used_mib, Some(1024), "{s:?}");
        assert_eq!(s.memory_total_mib, None, "{s:?}");
        let top = (1u64 << 30).to_string();
        let s = from_nvidia_smi(&format!("a, 50, {top}, {top}\nb, 50, {top}, {top}\n")).unwrap();
        assert_eq!(s.memory_used_mib, Some(2 << 30));
        assert_eq!(s.util_percent, Some(50.0));
        let answer = json!({"status": "success", "data": {"resultType": "vector", "result": [
            series(UTIL, json!({"namespace": "ml", "pod": "p", "gpu": "0"}), "-3"),
            series(FB_USED, json!({"namespace": "ml", "pod": "p", "gpu": "0"}), &huge),
        ]}});
        let pods = from_prometheus(&answer).unwrap();
        assert!(pods.is_empty(), "{pods:?}");
    }

    fn series(name: &str, labels: Value, v: &str) -> Value {
        let mut m = labels;
        m["__name__"] = json!(name);
        json!({"metric": m, "value": [1_765_000_000.5, v]})
    }

    #[test]
    fn dcgm_series_are_attributed_by_exported_labels_first_and_folded_per_pod() {
        // honor_labels off: the bare labels name the exporter, exported_* the workload.
        let exp = |gpu: &str| {
            json!({"exported_namespace": "ml", "exported_pod": "train-worker-0",
                   "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-abc", "UUID": gpu})
        };
        // honor_labels on: the bare labels name the workload.
        let bare = json!({"namespace": "ml", "pod": "train-worker-1", "gpu": "0"});
        let answer = json!({"status": "success", "data": {"resultType": "vector", "result": [
            series(UTIL, exp("GPU-a"), "90"),
            series(UTIL, exp("GPU-b"), "70"),
            series(FB_USED, exp("GPU-a"), "1000"),
            series(FB_USED, exp("GPU-b"), "3000"),
            series(FB_FREE, exp("GPU-a"), "39000"),
            series(FB_FREE, exp("GPU-b"), "37000"),
            series(UTIL, bare.clone(), "NaN"),
            series(FB_USED, bare, "512"),
            // A GPU nobody holds: no pod label, not attributed.
            series(UTIL, json!({"gpu": "3"}), "0"),
        ]}});
        let got = from_prometheus(&answer).unwrap();
        assert_eq!(got.len(), 2);
        let w0 = &got[&("ml".to_string(), "train-worker-0".to_string())];
        assert_eq!(
            *w0,
            GpuSample {
                devices: 2,
                util_percent: Some(80.0),
                memory_used_mib: Some(4000),
                memory_total_mib: Some(80000),
            }
        );
        let w1 = &got[&("ml".to_string(), "train-worker-1".to_string())];
        assert_eq!(w1.util_percent, None, "NaN is no reading");
        assert_eq!(w1.memory_used_mib, Some(512));
        assert_eq!(w1.memory_total_mib, None, "no FB_FREE: total unknown");
    }

    #[test]
    fn a_prometheus_error_or_odd_answer_is_a_reason() {
        let e = from_prometheus(&json!({"status": "error", "errorType": "bad_data",
                                        "error": "parse error at char 3"}))
        .unwrap_err();
        assert!(e.contains("parse error at char 3"), "{e}");
        assert!(from_prometheus(&json!({"status": "success"})).is_err());
        assert!(from_prometheus(&json!("404 page not found")).is_err());
    }

    #[test]
    fn nvidia_smi_lines_are_one_gpu_each() {
        let s = from_nvidia_smi("GPU-1, 87, 10240, 40960\nGPU-2, 13, 2048, 40960\n").unwrap();
        assert_eq!(
            s,
            GpuSample {
                devices: 2,
                util_percent: Some(50.0),
                memory_used_mib: Some(12288),
                memory_total_mib: Some(81920),
            }
        );
        let na = from_nvidia_smi("GPU-1, [N/A], 100, 16384\n").unwrap();
        assert_eq!(na.util_percent, None);
        assert_eq!(from_nvidia_smi("").unwrap().devices, 0);
        assert!(from_nvidia_smi("No devices were found\n").is_err());
    }

    #[test]
    fn the_query_asks_both_labellings_of_one_namespace() {
        let q = promql(Some("ml"));
        assert!(q.contains("exported_namespace=\"ml\"} or {"), "{q}");
        assert!(q.contains("DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_FREE"));
        assert!(promql(None).contains("pod!=\"\""));
    }
}
