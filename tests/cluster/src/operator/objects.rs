//! What the operator builds for a job: the defaulted replica specs (never written back),
//! TF_CONFIG, and one pod and one headless Service per replica with the upstream names and
//! labels (`pkg/controller.v1/tensorflow`).

use super::*;

/// Canonical replica type (`worker` → `Worker`); unknown keys keep their spelling.
pub(super) fn canonical(rtype: &str) -> String {
    KNOWN
        .iter()
        .find(|k| k.eq_ignore_ascii_case(rtype))
        .map(|s| s.to_string())
        .unwrap_or_else(|| rtype.to_string())
}

/// The in-memory defaulted replica specs (never written back).
pub(super) fn defaulted_specs(job: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (k, v) in job["spec"]["tfReplicaSpecs"]
        .as_object()
        .into_iter()
        .flatten()
    {
        let mut rs = if v.is_object() { v.clone() } else { json!({}) };
        if rs["replicas"].is_null() {
            rs["replicas"] = json!(1);
        }
        if rs["restartPolicy"].as_str().unwrap_or("").is_empty() {
            rs["restartPolicy"] = json!("Never");
        }
        let containers = rs["template"]["spec"]["containers"].as_array_mut();
        if let Some(cs) = containers
            && !cs.is_empty()
        {
            let idx = cs
                .iter()
                .position(|c| c["name"] == "tensorflow")
                .unwrap_or(0);
            let c = &mut cs[idx];
            let has = c["ports"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "tfjob-port"));
            if !has {
                if !c["ports"].is_array() {
                    c["ports"] = json!([]);
                }
                c["ports"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "tfjob-port", "containerPort": 2222}));
            }
        }
        out.insert(canonical(k), rs);
    }
    out
}

pub(super) fn replicas(rs: &Value) -> i64 {
    rs["replicas"].as_i64().unwrap_or(1)
}

pub(super) fn tf_port(rs: &Value) -> i64 {
    rs["template"]["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "tensorflow"))
        .and_then(|c| c["ports"].as_array())
        .and_then(|ps| ps.iter().find(|p| p["name"] == "tfjob-port"))
        .and_then(|p| p["containerPort"].as_i64())
        .unwrap_or(2222)
}

pub(super) fn addr(job: &str, ns: &str, rt: &str, i: i64, port: i64) -> String {
    let domain = std::env::var("CUSTOM_CLUSTER_DOMAIN")
        .ok()
        .filter(|d| !d.is_empty());
    match domain {
        Some(d) => format!("{job}-{rt}-{i}.{ns}.svc.{d}:{port}"),
        None => format!("{job}-{rt}-{i}.{ns}.svc:{port}"),
    }
}

/// TF_CONFIG exactly as Go's encoding/json writes it (compact, sorted map keys).
pub fn tf_config(
    job_name: &str,
    ns: &str,
    specs: &BTreeMap<String, Value>,
    rtype: &str,
    index: i64,
    dynamic: bool,
) -> String {
    let s = |x: &str| serde_json::to_string(x).unwrap();
    let lower = rtype.to_lowercase();
    if dynamic {
        let ps_addrs: Option<Vec<String>> = specs.get("PS").map(|rs| {
            (0..replicas(rs))
                .map(|i| addr(job_name, ns, "ps", i, tf_port(rs)))
                .collect()
        });
        let (worker, ps) = match rtype {
            "Worker" => {
                let port = specs.get("Worker").map(tf_port).unwrap_or(2222);
                let w = format!(
                    "{{{}:{}}}",
                    s(&index.to_string()),
                    s(&addr(job_name, ns, "worker", index, port))
                );
                let ps = match &ps_addrs {
                    Some(v) => {
                        format!("[{}]", v.iter().map(|a| s(a)).collect::<Vec<_>>().join(","))
                    }
                    None => "null".into(),
                };
                (w, ps)
            }
            "PS" => {
                let port = specs.get("PS").map(tf_port).unwrap_or(2222);
                (
                    "{}".to_string(),
                    format!("[{}]", s(&addr(job_name, ns, "ps", index, port))),
                )
            }
            _ => ("{}".to_string(), "[]".to_string()),
        };
        return format!(
            "{{\"cluster\":{{\"worker\":{worker},\"ps\":{ps}}},\"task\":{{\"type\":{},\"index\":{index}}}}}",
            s(&lower)
        );
    }
    let cluster = cluster_json(job_name, ns, specs);
    tf_config_with(&cluster, rtype, index)
}

/// The `"cluster"` object of TF_CONFIG, shared by every pod of a job (computed once per reconcile).
pub(super) fn cluster_json(job_name: &str, ns: &str, specs: &BTreeMap<String, Value>) -> String {
    let s = |x: &str| serde_json::to_string(x).unwrap();
    let mut cluster: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (rt, rs) in specs {
        let l = rt.to_lowercase();
        let port = tf_port(rs);
        cluster.insert(
            l.clone(),
            (0..replicas(rs))
                .map(|i| addr(job_name, ns, &l, i, port))
                .collect(),
        );
    }
    let parts: Vec<String> = cluster
        .iter()
        .map(|(k, v)| {
            format!(
                "{}:[{}]",
                s(k),
                v.iter().map(|a| s(a)).collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

pub(super) fn tf_config_with(cluster: &str, rtype: &str, index: i64) -> String {
    let t = serde_json::to_string(&rtype.to_lowercase()).unwrap();
    format!(
        "{{\"cluster\":{cluster},\"task\":{{\"type\":{t},\"index\":{index}}},\"environment\":\"cloud\"}}"
    )
}

pub(super) fn owner_ref(job: &Value) -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true
    })
}

pub(super) fn base_labels(job_name: &str, lower: &str, idx: i64) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert(L_OPERATOR.into(), json!(COMPONENT));
    m.insert(L_JOB.into(), json!(job_name.replace('/', "-")));
    m.insert(L_TYPE.into(), json!(lower));
    m.insert(L_INDEX.into(), json!(idx.to_string()));
    m
}

pub(super) fn contains_chief(specs: &BTreeMap<String, Value>) -> bool {
    specs.contains_key("Chief") || specs.contains_key("Master")
}

pub(super) fn is_master_role(specs: &BTreeMap<String, Value>, rtype: &str, idx: i64) -> bool {
    if contains_chief(specs) {
        rtype == "Chief" || rtype == "Master"
    } else {
        rtype == "Worker" && idx == 0
    }
}

/// The operator decodes the job into Go structs and its client encodes the pod with
/// encoding/json: an empty non-pointer `omitempty` string (k8s.io/api/core/v1 types.go) is
/// left out, so `dnsPolicy: ""` arrives as no dnsPolicy and is defaulted. Pointer fields
/// (`runtimeClassName`, `preemptionPolicy`) keep their `""`.
fn omit_empty_strings(spec: &mut Value) {
    fn drop_empty(v: &mut Value, keys: &[&str]) {
        if let Some(m) = v.as_object_mut() {
            m.retain(|k, x| !(keys.contains(&k.as_str()) && x == &json!("")));
        }
    }
    drop_empty(
        spec,
        &[
            "restartPolicy",
            "dnsPolicy",
            "serviceAccountName",
            "serviceAccount",
            "nodeName",
            "hostname",
            "subdomain",
            "schedulerName",
            "priorityClassName",
        ],
    );
    for list in ["containers", "initContainers"] {
        let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in cs {
            drop_empty(
                c,
                &[
                    "image",
                    "workingDir",
                    "terminationMessagePath",
                    "terminationMessagePolicy",
                    "imagePullPolicy",
                ],
            );
            for p in c
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                drop_empty(p, &["name", "hostIP", "protocol"]);
            }
        }
    }
}

pub(super) fn new_pod(
    sh: &Shared,
    job: &Value,
    specs: &BTreeMap<String, Value>,
    cluster: &str,
    rtype: &str,
    idx: i64,
) -> Value {
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("");
    let lower = rtype.to_lowercase();
    let rs = &specs[rtype];
    let tmpl = &rs["template"];
    let mut labels = tmpl["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    labels.extend(base_labels(name, &lower, idx));
    if is_master_role(specs, rtype, idx) {
        labels.insert(L_ROLE.into(), json!("master"));
    }
    let mut spec = tmpl["spec"].clone();
    omit_empty_strings(&mut spec);
    if spec["restartPolicy"].is_string() {
        sh.record_event(
            job,
            "TFJob",
            "Warning",
            "SetPodTemplateRestartPolicy",
            "Restart policy in pod template will be overwritten by restart policy in replica spec",
            COMPONENT,
        );
    }
    let rp = rs["restartPolicy"].as_str().unwrap_or("Never");
    spec["restartPolicy"] = json!(if rp == "ExitCode" { "Never" } else { rp });
    let total: i64 = specs
        .iter()
        .filter(|(k, _)| KNOWN.contains(&k.as_str()))
        .map(|(_, v)| replicas(v))
        .sum();
    if total != 1 {
        let dynamic = job["spec"]["enableDynamicWorker"] == json!(true);
        let cfg = if dynamic {
            tf_config(name, ns, specs, rtype, idx, true)
        } else {
            tf_config_with(cluster, rtype, idx)
        };
        if let Some(c) = spec["containers"]
            .as_array_mut()
            .and_then(|cs| cs.iter_mut().find(|c| c["name"] == "tensorflow"))
        {
            if !c["env"].is_array() {
                c["env"] = json!([]);
            }
            c["env"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "TF_CONFIG", "value": cfg}));
        }
    }
    let mut meta = json!({
        "name": format!("{}-{lower}-{idx}", name.replace('/', "-")),
        "namespace": ns,
        "labels": labels,
        "ownerReferences": [owner_ref(job)],
    });
    for k in ["annotations", "finalizers"] {
        if !tmpl["metadata"][k].is_null() {
            meta[k] = tmpl["metadata"][k].clone();
        }
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

pub(super) fn new_service(
    job: &Value,
    specs: &BTreeMap<String, Value>,
    rtype: &str,
    idx: i64,
) -> Option<Value> {
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("");
    let lower = rtype.to_lowercase();
    let c = specs[rtype]["template"]["spec"]["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == "tensorflow")?;
    let ports: Vec<Value> = c["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| json!({"name": p["name"], "port": p["containerPort"]}))
        .collect();
    let labels = base_labels(name, &lower, idx);
    Some(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("{}-{lower}-{idx}", name.replace('/', "-")), "namespace": ns, "labels": labels, "ownerReferences": [owner_ref(job)]},
        "spec": {"clusterIP": "None", "selector": labels, "ports": ports}
    }))
}
