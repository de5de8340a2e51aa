//! A Prometheus that scrapes NVIDIA's DCGM exporter, behind a Service the API server's service
//! proxy reaches (`GET /api/v1/namespaces/NS/services/NAME[:PORT]/proxy/api/v1/query`), and
//! what `nvidia-smi` prints in a pod: `top`'s GPU use (scenario `prometheus`, `gpuUse`).
//!
//! Outcomes come from the scenario, not from a query engine: the answer holds, for the running
//! pods that were given GPUs (of the namespace the query names, else all), one series per GPU
//! for each DCGM gauge, labelled as dcgm-exporter labels them (`gpu`, `UUID`, `Hostname`, and
//! the pod under `exported_*` when Prometheus scrapes without honor_labels, the default here,
//! or under `pod`/`namespace` with it). Prometheus's instant-query JSON
//! (web/api/v1 `queryData`): `{"status":"success","data":{"resultType":"vector","result":[…]}}`.
//!
//! The proxy's own answers are kube-apiserver's, both seen on a real 1.36.2: a missing Service,
//! or one without an Endpoints object, is 404 NotFound naming the Service; a Service whose
//! Endpoints hold no ready address answers 503 `no endpoints available for service "NAME"`
//! (pkg/registry/core/service/proxy.go, ResourceLocation).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::state::Shared;
use crate::status::ApiError;

/// The scenario's Prometheus.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct PrometheusSim {
    pub namespace: String,
    pub name: String,
    /// The Service's labels (what `top` finds it by).
    pub labels: BTreeMap<String, String>,
    pub port_name: String,
    pub port: u16,
    /// Prometheus keeps the exporter's `pod`/`namespace` labels (honor_labels: true); false
    /// puts the workload under `exported_pod`/`exported_namespace`.
    pub honor_labels: bool,
    /// False: its pods do not run; the proxy answers 503.
    pub running: bool,
}

impl Default for PrometheusSim {
    fn default() -> Self {
        PrometheusSim {
            namespace: "monitoring".into(),
            name: "prometheus-operated".into(),
            labels: [("operated-prometheus".to_string(), "true".to_string())].into(),
            port_name: "web".into(),
            port: 9090,
            honor_labels: false,
            running: true,
        }
    }
}

/// What the GPUs given to a pod do. The first entry whose `pod` is a substring of the pod's
/// name wins; a pod matched by none idles (0 %, 0 MiB of 40,960).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct GpuUseSpec {
    pub pod: String,
    pub utilization: f64,
    #[serde(rename = "memoryUsedMiB")]
    pub memory_used_mib: u64,
    #[serde(rename = "memoryTotalMiB")]
    pub memory_total_mib: u64,
}

impl Default for GpuUseSpec {
    fn default() -> Self {
        GpuUseSpec {
            pod: String::new(),
            utilization: 0.0,
            memory_used_mib: 0,
            memory_total_mib: 40960,
        }
    }
}

/// The Service object created at start.
pub fn service(p: &PrometheusSim) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": p.name, "namespace": p.namespace, "labels": p.labels},
        "spec": {"clusterIP": "None", "selector": {"app.kubernetes.io/name": "prometheus"},
                 "ports": [{"name": p.port_name, "port": p.port, "protocol": "TCP"}]}})
}

fn spec_for(sh: &Shared, pod: &str) -> GpuUseSpec {
    sh.scenario
        .gpu_use
        .iter()
        .find(|g| pod.contains(&g.pod))
        .cloned()
        .unwrap_or_default()
}

/// The `nvidia.com/gpu` a container asks for: its limit, else its request.
pub fn requested(container: &Value) -> u64 {
    let r = &container["resources"];
    let q = if r["limits"]["nvidia.com/gpu"].is_null() {
        &r["requests"]["nvidia.com/gpu"]
    } else {
        &r["limits"]["nvidia.com/gpu"]
    };
    match q {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .unwrap_or(0)
}

/// GPUs a container that asked for some was given: as many, or the scenario's `gpuDevices`
/// when it says the runtime mounts another number.
pub fn devices(sh: &Shared, container: &Value) -> u64 {
    match requested(container) {
        0 => 0,
        n => sh.scenario.gpu_devices.map_or(n, u64::from),
    }
}

/// `nvidia-smi --query-gpu=uuid,utilization.gpu,memory.used,memory.total
/// --format=csv,noheader,nounits` in `container` of `pod`: one line per GPU; with none, the
/// driver's "No devices were found" and exit 6.
pub fn nvidia_smi(sh: &Shared, pod: &Value, container: &Value) -> (String, i32) {
    let n = devices(sh, container);
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    if n == 0 {
        return ("No devices were found\n".into(), 6);
    }
    let g = spec_for(sh, name);
    let lines: String = (0..n)
        .map(|i| {
            format!(
                "{}, {}, {}, {}\n",
                uuid(name, i),
                g.utilization,
                g.memory_used_mib,
                g.memory_total_mib
            )
        })
        .collect();
    (lines, 0)
}

fn uuid(pod: &str, i: u64) -> String {
    let h = pod
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(b as u32));
    format!("GPU-{h:08x}-{i:04}")
}

/// The namespace a query's matcher names (`namespace="x"` or `exported_namespace="x"`).
fn namespace_of(query: &str) -> Option<String> {
    let at = query.find("namespace=\"")? + "namespace=\"".len();
    let rest = &query[at..];
    Some(rest[..rest.find('"')?].to_string())
}

/// The proxy's answer for `GET …/services/{name}/proxy/{path}`.
pub fn proxy(
    sh: &Shared,
    namespace: &str,
    name_port: &str,
    path: &str,
    query: Option<&str>,
) -> Result<(u16, Value), ApiError> {
    // `[scheme:]name[:port]`, as the proxy's ResourceLocation splits it.
    let parts: Vec<&str> = name_port.split(':').collect();
    let name = match parts.as_slice() {
        [n] | [n, _] => *n,
        [s, n, _] if matches!(*s, "http" | "https") => *n,
        _ => name_port,
    };
    if sh.store.get("services", namespace, name).is_none() {
        return Err(crate::status::not_found("services", "", name));
    }
    let Some(p) = sh
        .scenario
        .prometheus
        .as_ref()
        .filter(|p| p.namespace == namespace && p.name == name)
    else {
        // Any other Service has no Endpoints object here (no endpoints controller runs): the
        // API server then answers NotFound naming the Service, as a real one without
        // kube-controller-manager does (compared on the wire, tests/real/wire.rs).
        return Err(crate::status::not_found("services", "", name));
    };
    if !p.running {
        // Its Endpoints hold no ready address.
        return Err(crate::status::service_unavailable(&format!(
            "no endpoints available for service \"{name}\""
        )));
    }
    if path != "api/v1/query" {
        return Ok((
            404,
            json!({"status": "error", "errorType": "not_found",
                                "error": format!("no route /{path}")}),
        ));
    }
    let Some(q) = query.filter(|q| !q.is_empty()) else {
        return Ok((
            400,
            json!({"status": "error", "errorType": "bad_data",
                               "error": "invalid parameter \"query\": 1:1: parse error: no expression found in input"}),
        ));
    };
    let want_ns = namespace_of(q);
    let metrics: Vec<&str> = [
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
    ]
    .into_iter()
    .filter(|m| q.contains(m))
    .collect();
    let mut result = Vec::new();
    let (pods, _) = sh.store.list("pods", want_ns.as_deref());
    for pod in pods {
        if pod["status"]["phase"] != "Running" {
            continue;
        }
        let (pns, pname) = (
            pod["metadata"]["namespace"].as_str().unwrap_or(""),
            pod["metadata"]["name"].as_str().unwrap_or(""),
        );
        let node = pod["spec"]["nodeName"].as_str().unwrap_or("");
        let g = spec_for(sh, pname);
        for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
            for i in 0..devices(sh, c) {
                let mut labels = json!({"gpu": i.to_string(), "UUID": uuid(pname, i),
                    "device": format!("nvidia{i}"), "modelName": "NVIDIA A100-SXM4-40GB",
                    "Hostname": node, "instance": "10.244.1.9:9400", "job": "nvidia-dcgm-exporter"});
                if p.honor_labels {
                    labels["namespace"] = json!(pns);
                    labels["pod"] = json!(pname);
                    labels["container"] = c["name"].clone();
                } else {
                    labels["exported_namespace"] = json!(pns);
                    labels["exported_pod"] = json!(pname);
                    labels["exported_container"] = c["name"].clone();
                    labels["namespace"] = json!("gpu-operator");
                    labels["pod"] = json!("nvidia-dcgm-exporter-7xk2p");
                    labels["container"] = json!("nvidia-dcgm-exporter");
                }
                for m in &metrics {
                    let v = match *m {
                        "DCGM_FI_DEV_GPU_UTIL" => g.utilization,
                        "DCGM_FI_DEV_FB_USED" => g.memory_used_mib as f64,
                        _ => g.memory_total_mib.saturating_sub(g.memory_used_mib) as f64,
                    };
                    let mut l = labels.clone();
                    l["__name__"] = json!(m);
                    result.push(json!({"metric": l, "value": [1_765_000_000.0, v.to_string()]}));
                }
            }
        }
    }
    Ok((
        200,
        json!({"status": "success", "data": {"resultType": "vector", "result": result}}),
    ))
}
