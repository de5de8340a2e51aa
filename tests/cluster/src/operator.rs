//! Simulated training-operator v1.9.4 TFJob controller (see operator-behavior.md):
//! names, labels, TF_CONFIG, events, condition bookkeeping and the chief-or-worker rules.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::scenario::OperatorMode;
use crate::state::Shared;
use crate::store::{EventType, StoreEvent};
use crate::util::{now_rfc3339, parse_rfc3339};

const COMPONENT: &str = "tfjob-controller";
const KNOWN: [&str; 5] = ["Chief", "Evaluator", "Master", "PS", "Worker"];
const L_OPERATOR: &str = "training.kubeflow.org/operator-name";
const L_JOB: &str = "training.kubeflow.org/job-name";
const L_TYPE: &str = "training.kubeflow.org/replica-type";
const L_INDEX: &str = "training.kubeflow.org/replica-index";
const L_ROLE: &str = "training.kubeflow.org/job-role";

type Key = (String, String);

/// Runs the controller until the cluster stops.
pub(crate) async fn run(sh: Arc<Shared>) {
    let mut rx = sh.store.subscribe();
    let mut stop = sh.stop.subscribe();
    // Only a Running operator reconciles; becoming Running re-queues every job.
    let mut mode = sh.mode.subscribe();
    let running =
        |m: &tokio::sync::watch::Receiver<OperatorMode>| *m.borrow() == OperatorMode::Running;
    let (req_tx, mut req_rx) = mpsc::unbounded_channel::<Key>();
    let mut seen: HashSet<String> = HashSet::new();
    let mut dirty: BTreeSet<Key> = if *sh.mode.borrow() == OperatorMode::Running {
        all_jobs(&sh)
    } else {
        BTreeSet::new()
    };
    let delay = Duration::from_millis(sh.scenario.timing.reconcile_ms);
    loop {
        if dirty.is_empty() {
            tokio::select! {
                r = rx.recv() => match r {
                    Ok(ev) => note(&ev, &mut dirty, &mut seen),
                    Err(broadcast::error::RecvError::Lagged(_)) => dirty.extend(all_jobs(&sh)),
                    Err(_) => return,
                },
                Some(k) = req_rx.recv() => { dirty.insert(k); }
                r = mode.changed() => {
                    if r.is_err() {
                        return;
                    }
                    if running(&mode) {
                        dirty.extend(all_jobs(&sh));
                    }
                }
                _ = stop.changed() => return,
            }
            if !running(&mode) {
                dirty.clear();
            }
            if dirty.is_empty() {
                continue;
            }
        }
        // Debounce: collect everything that happens within reconcileMs into one pass.
        tokio::time::sleep(delay).await;
        loop {
            match rx.try_recv() {
                Ok(ev) => note(&ev, &mut dirty, &mut seen),
                Err(broadcast::error::TryRecvError::Lagged(_)) => dirty.extend(all_jobs(&sh)),
                Err(broadcast::error::TryRecvError::Empty) => break,
                Err(broadcast::error::TryRecvError::Closed) => return,
            }
        }
        while let Ok(k) = req_rx.try_recv() {
            dirty.insert(k);
        }
        if !running(&mode) {
            dirty.clear();
            continue;
        }
        for key in std::mem::take(&mut dirty) {
            reconcile(&sh, &key, &mut seen, &req_tx);
        }
    }
}

fn all_jobs(sh: &Shared) -> BTreeSet<Key> {
    sh.store
        .list("tfjobs", None)
        .0
        .iter()
        .map(|j| {
            (
                j["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                j["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn note(ev: &StoreEvent, dirty: &mut BTreeSet<Key>, seen: &mut HashSet<String>) {
    match ev.resource.as_str() {
        "tfjobs" => {
            if ev.kind == EventType::Deleted {
                if let Some(uid) = ev.object["metadata"]["uid"].as_str() {
                    seen.remove(uid);
                }
                return;
            }
            if let Some(n) = ev.object["metadata"]["name"].as_str() {
                dirty.insert((ev.namespace.clone(), n.to_string()));
            }
        }
        "pods" | "services" => {
            for o in ev.object["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if o["kind"] == "TFJob"
                    && o["controller"] == json!(true)
                    && let Some(n) = o["name"].as_str()
                {
                    dirty.insert((ev.namespace.clone(), n.to_string()));
                }
            }
        }
        _ => {}
    }
}

/// Canonical replica type (`worker` → `Worker`); unknown keys keep their spelling.
fn canonical(rtype: &str) -> String {
    KNOWN
        .iter()
        .find(|k| k.eq_ignore_ascii_case(rtype))
        .map(|s| s.to_string())
        .unwrap_or_else(|| rtype.to_string())
}

/// The in-memory defaulted replica specs (never written back).
fn defaulted_specs(job: &Value) -> BTreeMap<String, Value> {
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

fn replicas(rs: &Value) -> i64 {
    rs["replicas"].as_i64().unwrap_or(1)
}

fn tf_port(rs: &Value) -> i64 {
    rs["template"]["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "tensorflow"))
        .and_then(|c| c["ports"].as_array())
        .and_then(|ps| ps.iter().find(|p| p["name"] == "tfjob-port"))
        .and_then(|p| p["containerPort"].as_i64())
        .unwrap_or(2222)
}

fn addr(job: &str, ns: &str, rt: &str, i: i64, port: i64) -> String {
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
fn cluster_json(job_name: &str, ns: &str, specs: &BTreeMap<String, Value>) -> String {
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

fn tf_config_with(cluster: &str, rtype: &str, index: i64) -> String {
    let t = serde_json::to_string(&rtype.to_lowercase()).unwrap();
    format!(
        "{{\"cluster\":{cluster},\"task\":{{\"type\":{t},\"index\":{index}}},\"environment\":\"cloud\"}}"
    )
}

fn owner_ref(job: &Value) -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true
    })
}

fn base_labels(job_name: &str, lower: &str, idx: i64) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert(L_OPERATOR.into(), json!(COMPONENT));
    m.insert(L_JOB.into(), json!(job_name.replace('/', "-")));
    m.insert(L_TYPE.into(), json!(lower));
    m.insert(L_INDEX.into(), json!(idx.to_string()));
    m
}

fn contains_chief(specs: &BTreeMap<String, Value>) -> bool {
    specs.contains_key("Chief") || specs.contains_key("Master")
}

fn is_master_role(specs: &BTreeMap<String, Value>, rtype: &str, idx: i64) -> bool {
    if contains_chief(specs) {
        rtype == "Chief" || rtype == "Master"
    } else {
        rtype == "Worker" && idx == 0
    }
}

fn new_pod(
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

fn new_service(
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

fn has_cond(status: &Value, t: &str) -> bool {
    status["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == t && c["status"] == "True"))
}

/// `setCondition` from pkg/util/status.go.
pub(crate) fn set_condition(
    status: &mut Value,
    ctype: &str,
    cstatus: &str,
    reason: &str,
    message: &str,
) {
    if has_cond(status, "Failed") {
        return;
    }
    let conds: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    let cur = conds.iter().find(|c| c["type"] == ctype);
    if let Some(c) = cur
        && c["status"] == cstatus
        && c["reason"] == reason
    {
        return;
    }
    let now = now_rfc3339();
    let mut cond = json!({"type": ctype, "status": cstatus, "reason": reason, "message": message, "lastUpdateTime": now, "lastTransitionTime": now});
    if let Some(c) = cur
        && c["status"] == cstatus
    {
        cond["lastTransitionTime"] = c["lastTransitionTime"].clone();
    }
    let mut out: Vec<Value> = Vec::new();
    for mut c in conds {
        let t = c["type"].as_str().unwrap_or("").to_string();
        if (ctype == "Restarting" && t == "Running")
            || (ctype == "Running" && t == "Restarting")
            || t == ctype
        {
            continue;
        }
        if (ctype == "Failed" || ctype == "Succeeded") && t == "Running" {
            c["status"] = json!("False");
        }
        out.push(c);
    }
    out.push(cond);
    status["conditions"] = json!(out);
}

fn exit_code(pod: &Value) -> Option<i64> {
    pod["status"]["containerStatuses"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == "tensorflow")?
        .get("state")?
        .get("terminated")?
        .get("exitCode")?
        .as_i64()
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or("Pending")
}

fn pname(pod: &Value) -> String {
    pod["metadata"]["name"].as_str().unwrap_or("").to_string()
}

fn delete_pod_and_service(sh: &Shared, job: &Value, ns: &str, pod: &str) {
    if sh.store.delete("pods", ns, pod).is_ok() {
        sh.record_event(
            job,
            "TFJob",
            "Normal",
            "SuccessfulDeletePod",
            &format!("Deleted pod: {pod}"),
            COMPONENT,
        );
    }
    if sh.store.delete("services", ns, pod).is_ok() {
        sh.record_event(
            job,
            "TFJob",
            "Normal",
            "SuccessfulDeleteService",
            &format!("Deleted service: {pod}"),
            COMPONENT,
        );
    }
}

fn clean_pods(sh: &Shared, job: &Value, ns: &str, pods: &[Arc<Value>]) {
    let policy = job["spec"]["runPolicy"]["cleanPodPolicy"]
        .as_str()
        .filter(|p| !p.is_empty())
        .unwrap_or("None");
    if policy == "None" {
        return;
    }
    for p in pods {
        if policy == "Running" && !matches!(phase(p), "Running" | "Pending") {
            continue;
        }
        delete_pod_and_service(sh, job, ns, &pname(p));
    }
}

fn secs_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// TTL cleanup; returns true when the job was deleted.
fn cleanup_job(
    sh: &Shared,
    job: &Value,
    status: &Value,
    key: &Key,
    requeue: &mpsc::UnboundedSender<Key>,
) -> bool {
    let Some(ttl) = job["spec"]["runPolicy"]["ttlSecondsAfterFinished"].as_i64() else {
        return false;
    };
    let Some(done) = status["completionTime"].as_str().and_then(parse_rfc3339) else {
        return false;
    };
    let expire = (done + ttl) as f64;
    let now = secs_now();
    if now > expire {
        let name = job["metadata"]["name"].as_str().unwrap_or("");
        if sh.store.delete("tfjobs", &key.0, &key.1).is_ok() {
            sh.record_event(
                job,
                "TFJob",
                "Normal",
                "SuccessfulDeleteJob",
                &format!("Deleted job: {name}"),
                COMPONENT,
            );
        }
        return true;
    }
    let wait = Duration::from_secs_f64((expire - now).max(0.0) + 0.05);
    let (tx, k) = (requeue.clone(), key.clone());
    tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        let _ = tx.send(k);
    });
    false
}

fn reconcile(
    sh: &Shared,
    key: &Key,
    seen: &mut HashSet<String>,
    requeue: &mpsc::UnboundedSender<Key>,
) {
    let (ns, name) = (key.0.as_str(), key.1.as_str());
    let Some(job) = sh.store.get("tfjobs", ns, name) else {
        return;
    };
    if job["metadata"].get("deletionTimestamp").is_some() {
        return;
    }
    if let Some(m) = job["spec"]["runPolicy"]["managedBy"].as_str()
        && m != "kubeflow.org/training-operator"
    {
        return;
    }
    let uid = job["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let old_status = job.get("status").cloned().unwrap_or(json!({}));
    let mut status = old_status.clone();
    if !status.is_object() {
        status = json!({});
    }
    if seen.insert(uid.clone())
        && !status["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Created"))
    {
        set_condition(
            &mut status,
            "Created",
            "True",
            "TFJobCreated",
            &format!("TFJob {name} is created."),
        );
    }
    let specs = defaulted_specs(&job);
    let owned = |o: &Value| {
        o["metadata"]["labels"][L_JOB] == json!(name.replace('/', "-"))
            && o["metadata"]["labels"][L_OPERATOR] == json!(COMPONENT)
            && o["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|a| {
                    a.iter()
                        .any(|r| r["uid"] == json!(uid) && r["controller"] == json!(true))
                })
    };
    let pods = sh.store.list_shared("pods", ns, owned);
    let services = sh.store.list_shared("services", ns, owned);
    let finished = has_cond(&status, "Succeeded") || has_cond(&status, "Failed");
    let run_policy = &job["spec"]["runPolicy"];

    if finished {
        clean_pods(sh, &job, ns, &pods);
        if has_cond(&status, "Succeeded")
            && let Some(rss) = status["replicaStatuses"].as_object_mut()
        {
            for rs in rss.values_mut() {
                let active = rs["active"].as_i64().unwrap_or(0);
                if active > 0 {
                    rs["succeeded"] = json!(rs["succeeded"].as_i64().unwrap_or(0) + active);
                }
                if let Some(m) = rs.as_object_mut() {
                    m.remove("active");
                }
            }
        }
        write_status(sh, ns, name, &old_status, &status);
        cleanup_job(sh, &job, &status, key, requeue);
        return;
    }

    if run_policy["suspend"] == json!(true) {
        for p in &pods {
            delete_pod_and_service(sh, &job, ns, &pname(p));
        }
        for s in &services {
            let sn = s["metadata"]["name"].as_str().unwrap_or("");
            if sh.store.delete("services", ns, sn).is_ok() {
                sh.record_event(
                    &job,
                    "TFJob",
                    "Normal",
                    "SuccessfulDeleteService",
                    &format!("Deleted service: {sn}"),
                    COMPONENT,
                );
            }
        }
        if let Some(rss) = status["replicaStatuses"].as_object_mut() {
            for rs in rss.values_mut() {
                if let Some(m) = rs.as_object_mut() {
                    m.remove("active");
                }
            }
        }
        let msg = format!("TFJob {name} is suspended.");
        if has_cond(&status, "Running") {
            set_condition(&mut status, "Running", "False", "TFJobSuspended", &msg);
        }
        if !has_cond(&status, "Suspended") {
            set_condition(&mut status, "Suspended", "True", "TFJobSuspended", &msg);
        }
        sh.record_event(&job, "TFJob", "Normal", "TFJobSuspended", &msg, COMPONENT);
        write_status(sh, ns, name, &old_status, &status);
        return;
    }
    if has_cond(&status, "Suspended") {
        let msg = format!("TFJob {name} is resumed.");
        set_condition(&mut status, "Suspended", "False", "TFJobResumed", &msg);
        status["startTime"] = json!(now_rfc3339());
        sh.record_event(&job, "TFJob", "Normal", "TFJobResumed", &msg, COMPONENT);
    }

    record_abnormal_pods(sh, &job, &pods);

    // Backoff limit and active deadline (checked only when something triggers a reconcile).
    let total: i64 = specs.values().map(replicas).sum();
    let active_now = pods.iter().filter(|p| phase(p) == "Running").count() as i64;
    let _ = total == active_now;
    let past_backoff = run_policy["backoffLimit"].as_i64().is_some_and(|limit| {
        let restarts: i64 = pods
            .iter()
            .filter(|p| phase(p) == "Running")
            .filter(|p| {
                let rt = canonical(p["metadata"]["labels"][L_TYPE].as_str().unwrap_or(""));
                specs.get(&rt).is_some_and(|rs| {
                    matches!(
                        rs["restartPolicy"].as_str(),
                        Some("OnFailure" | "Always" | "ExitCode")
                    )
                })
            })
            .flat_map(|p| {
                let mut v: Vec<i64> = p["status"]["containerStatuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c["restartCount"].as_i64().unwrap_or(0))
                    .collect();
                v.extend(
                    p["status"]["initContainerStatuses"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| c["restartCount"].as_i64().unwrap_or(0)),
                );
                v
            })
            .sum();
        if limit == 0 {
            restarts > 0
        } else {
            restarts >= limit
        }
    });
    let past_deadline = run_policy["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|ads| {
            status["startTime"]
                .as_str()
                .and_then(parse_rfc3339)
                .is_some_and(|st| secs_now() - st as f64 >= ads as f64)
        });
    if past_backoff || past_deadline {
        let msg = if past_backoff {
            format!("Job {name} has failed because it has reached the specified backoff limit")
        } else {
            format!("Job {name} has failed because it was active longer than specified deadline")
        };
        // v1.9.4: Failed first, then cleanup honouring cleanPodPolicy.
        if status["completionTime"].is_null() {
            status["completionTime"] = json!(now_rfc3339());
        }
        set_condition(&mut status, "Failed", "True", "TFJobFailed", &msg);
        clean_pods(sh, &job, ns, &pods);
        sh.record_event(&job, "TFJob", "Normal", "TFJobFailed", &msg, COMPONENT);
        write_status(sh, ns, name, &old_status, &status);
        cleanup_job(sh, &job, &status, key, requeue);
        return;
    }

    if !status["replicaStatuses"].is_object() {
        status["replicaStatuses"] = json!({});
    }
    let cluster = cluster_json(name, ns, &specs);
    for (rtype, rs) in &specs {
        reconcile_pods(sh, &job, &specs, &cluster, rtype, rs, &pods, &mut status);
        reconcile_services(sh, &job, &specs, rtype, rs, &services);
    }
    update_job_status(sh, &job, &specs, &pods, &mut status);
    write_status(sh, ns, name, &old_status, &status);
}

fn index_of(o: &Value) -> Option<i64> {
    o["metadata"]["labels"][L_INDEX].as_str()?.parse().ok()
}

#[allow(clippy::too_many_arguments)]
fn reconcile_pods(
    sh: &Shared,
    job: &Value,
    specs: &BTreeMap<String, Value>,
    cluster: &str,
    rtype: &str,
    rs: &Value,
    pods: &[Arc<Value>],
    status: &mut Value,
) {
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("");
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    let lower = rtype.to_lowercase();
    let mine = of_replica_type(pods, &lower);
    let want = replicas(rs);
    let max_idx = mine.iter().filter_map(|p| index_of(p)).max().unwrap_or(-1);
    let (mut active, mut succeeded, mut failed) = (0i64, 0i64, 0i64);
    let rp = rs["restartPolicy"].as_str().unwrap_or("Never");
    let mut by_index: std::collections::HashMap<i64, &Value> = std::collections::HashMap::new();
    for p in &mine {
        if let Some(i) = index_of(p) {
            by_index.entry(i).or_insert(p);
        }
    }
    for idx in 0..want.max(max_idx + 1) {
        let Some(pod) = by_index.get(&idx) else {
            if idx < want {
                let mut pod = new_pod(sh, job, specs, cluster, rtype, idx);
                crate::defaults::apply_defaults("pods", &mut pod);
                let pn = pname(&pod);
                // pod_control.go: a refused create is a FailedCreatePod event, "Error creating: %v".
                if let Err(m) = crate::admission::admit_pod(sh, ns, &mut pod) {
                    sh.record_event(
                        job,
                        "TFJob",
                        "Warning",
                        "FailedCreatePod",
                        &format!("Error creating: {m}"),
                        COMPONENT,
                    );
                    continue;
                }
                match sh.store.create("pods", ns, pod) {
                    Ok(_) => sh.record_event(
                        job,
                        "TFJob",
                        "Normal",
                        "SuccessfulCreatePod",
                        &format!("Created pod: {pn}"),
                        COMPONENT,
                    ),
                    Err(e) => sh.record_event(
                        job,
                        "TFJob",
                        "Warning",
                        "FailedCreatePod",
                        &format!("Error creating: {e:?}"),
                        COMPONENT,
                    ),
                }
            }
            continue;
        };
        let pn = pname(pod);
        if idx >= want && sh.store.delete("pods", ns, &pn).is_ok() {
            sh.record_event(
                job,
                "TFJob",
                "Normal",
                "SuccessfulDeletePod",
                &format!("Deleted pod: {pn}"),
                COMPONENT,
            );
        }
        let code = exit_code(pod);
        if let Some(c) = code {
            sh.record_event(
                job,
                "TFJob",
                "Normal",
                "ExitedWithCode",
                &format!("Pod: {ns}.{pn} exited with code {c}"),
                COMPONENT,
            );
        }
        if phase(pod) == "Failed" {
            let c = code.unwrap_or(0xbeef);
            if rp == "OnFailure" || rp == "Always" || (rp == "ExitCode" && c >= 128) {
                if sh.store.delete("pods", ns, &pn).is_ok() {
                    sh.record_event(
                        job,
                        "TFJob",
                        "Normal",
                        "SuccessfulDeletePod",
                        &format!("Deleted pod: {pn}"),
                        COMPONENT,
                    );
                }
                let msg = format!("job {name} is restarting because {rtype} replica(s) failed.");
                sh.record_event(job, "TFJob", "Warning", "TFJobRestarting", &msg, COMPONENT);
                set_condition(status, "Restarting", "True", "TFJobRestarting", &msg);
            } else if rp == "ExitCode" {
                let msg = format!("job {name:?} is failing because {rtype:?} replica(s) failed.");
                sh.record_event(job, "TFJob", "Warning", "TFJobFailed", &msg, COMPONENT);
                if status["completionTime"].is_null() {
                    status["completionTime"] = json!(now_rfc3339());
                }
                set_condition(status, "Failed", "True", "TFJobFailed", &msg);
            }
        }
        match phase(pod) {
            "Running" => active += 1,
            "Succeeded" => succeeded += 1,
            "Failed" => failed += 1,
            _ => {}
        }
    }
    let mut rstat = json!({});
    for (k, v) in [
        ("active", active),
        ("succeeded", succeeded),
        ("failed", failed),
    ] {
        if v != 0 {
            rstat[k] = json!(v);
        }
    }
    status["replicaStatuses"][rtype] = rstat;
}

/// The operator's pods or services of one replica type (by the lowercase type label); pods and
/// services are sliced the same way, as upstream's ReconcilePods/ReconcileServices do.
fn of_replica_type<'a>(objs: &'a [Arc<Value>], lower: &str) -> Vec<&'a Value> {
    objs.iter()
        .filter(|p| p["metadata"]["labels"][L_TYPE] == json!(lower))
        .map(|p| &**p)
        .collect()
}

fn reconcile_services(
    sh: &Shared,
    job: &Value,
    specs: &BTreeMap<String, Value>,
    rtype: &str,
    rs: &Value,
    services: &[Arc<Value>],
) {
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("");
    let lower = rtype.to_lowercase();
    let mine = of_replica_type(services, &lower);
    let want = replicas(rs);
    let max_idx = mine.iter().filter_map(|p| index_of(p)).max().unwrap_or(-1);
    let by_index: std::collections::HashMap<i64, &Value> = mine
        .iter()
        .filter_map(|s| index_of(s).map(|i| (i, *s)))
        .collect();
    for idx in 0..want.max(max_idx + 1) {
        match by_index.get(&idx) {
            None if idx < want => match new_service(job, specs, rtype, idx) {
                Some(mut svc) => {
                    crate::defaults::apply_defaults("services", &mut svc);
                    let sn = svc["metadata"]["name"].as_str().unwrap_or("").to_string();
                    if sh.store.create("services", ns, svc).is_ok() {
                        sh.record_event(
                            job,
                            "TFJob",
                            "Normal",
                            "SuccessfulCreateService",
                            &format!("Created service: {sn}"),
                            COMPONENT,
                        );
                    }
                }
                None => sh.record_event(
                    job,
                    "TFJob",
                    "Warning",
                    "FailedCreateService",
                    "Error creating: failed to find the port",
                    COMPONENT,
                ),
            },
            Some(s) if idx >= want => {
                let sn = s["metadata"]["name"].as_str().unwrap_or("").to_string();
                if sh.store.delete("services", ns, &sn).is_ok() {
                    sh.record_event(
                        job,
                        "TFJob",
                        "Normal",
                        "SuccessfulDeleteService",
                        &format!("Deleted service: {sn}"),
                        COMPONENT,
                    );
                }
            }
            _ => {}
        }
    }
}

fn record_abnormal_pods(sh: &Shared, job: &Value, pods: &[Arc<Value>]) {
    for p in pods
        .iter()
        .filter(|p| !matches!(phase(p), "Succeeded" | "Failed"))
    {
        let pn = pname(p);
        let cs = p["status"]["containerStatuses"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !cs.is_empty() {
            for c in &cs {
                let cn = c["name"].as_str().unwrap_or("");
                let t = &c["state"]["terminated"];
                if let Some(code) = t["exitCode"].as_i64().filter(|c| *c != 0) {
                    sh.record_event(
                        job,
                        "TFJob",
                        "Warning",
                        t["reason"].as_str().unwrap_or(""),
                        &format!(
                            "Error pod {pn} container {cn} exitCode: {code} terminated message: {}",
                            t["message"].as_str().unwrap_or("")
                        ),
                        COMPONENT,
                    );
                }
                let w = &c["state"]["waiting"];
                if let Some(m) = w["message"].as_str().filter(|m| !m.is_empty()) {
                    sh.record_event(
                        job,
                        "TFJob",
                        "Warning",
                        w["reason"].as_str().unwrap_or(""),
                        &format!("Error pod {pn} container {cn} waiting message: {m}"),
                        COMPONENT,
                    );
                }
            }
            continue;
        }
        let mut conds = p["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if conds.is_empty() {
            continue;
        }
        conds.sort_by(|a, b| {
            b["lastTransitionTime"]
                .as_str()
                .cmp(&a["lastTransitionTime"].as_str())
        });
        let c = &conds[0];
        if c["status"] == "True" {
            continue;
        }
        sh.record_event(
            job,
            "TFJob",
            "Warning",
            c["reason"].as_str().unwrap_or(""),
            &format!(
                "Error pod {pn} condition message: {}",
                c["message"].as_str().unwrap_or("")
            ),
            COMPONENT,
        );
    }
}

fn update_job_status(
    sh: &Shared,
    job: &Value,
    specs: &BTreeMap<String, Value>,
    pods: &[Arc<Value>],
    status: &mut Value,
) {
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("");
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    if status["startTime"].is_null() {
        status["startTime"] = json!(now_rfc3339());
    }
    let worker0_completed = specs.contains_key("Worker")
        && pods.iter().any(|p| {
            p["metadata"]["labels"][L_TYPE] == "worker"
                && index_of(p) == Some(0)
                && phase(p) == "Succeeded"
                && exit_code(p) == Some(0)
        });
    let all_workers = job["spec"]["successPolicy"] == "AllWorkers";
    let chief = contains_chief(specs);
    for rtype in KNOWN {
        let Some(rs) = specs.get(rtype) else { continue };
        let st = &status["replicaStatuses"][rtype];
        let (succ, running, failed) = (
            st["succeeded"].as_i64().unwrap_or(0),
            st["active"].as_i64().unwrap_or(0),
            st["failed"].as_i64().unwrap_or(0),
        );
        let expected = replicas(rs) - succ;
        let drives = if chief {
            rtype == "Chief" || rtype == "Master"
        } else {
            rtype == "Worker"
        };
        if drives {
            let success = if chief {
                expected == 0
            } else {
                expected == 0 || (worker0_completed && !all_workers)
            };
            if chief && running > 0 {
                set_condition(
                    status,
                    "Running",
                    "True",
                    "TFJobRunning",
                    &format!("TFJob {ns}/{name} is running."),
                );
            }
            if success {
                let msg = format!("TFJob {ns}/{name} successfully completed.");
                sh.record_event(job, "TFJob", "Normal", "TFJobSucceeded", &msg, COMPONENT);
                if status["completionTime"].is_null() {
                    status["completionTime"] = json!(now_rfc3339());
                }
                set_condition(status, "Succeeded", "True", "TFJobSucceeded", &msg);
            } else if !chief && running > 0 {
                set_condition(
                    status,
                    "Running",
                    "True",
                    "TFJobRunning",
                    &format!("TFJob {ns}/{name} is running."),
                );
            }
        }
        if failed > 0 {
            let restarting = status["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Restarting").cloned());
            if let Some(r) = restarting {
                set_condition(
                    status,
                    "Restarting",
                    "True",
                    r["reason"].as_str().unwrap_or(""),
                    r["message"].as_str().unwrap_or(""),
                );
            } else {
                if job["spec"]["enableDynamicWorker"] == json!(true) && rtype == "Worker" {
                    continue;
                }
                let msg = format!(
                    "TFJob {ns}/{name} has failed because {failed} {rtype} replica(s) failed."
                );
                sh.record_event(job, "TFJob", "Normal", "TFJobFailed", &msg, COMPONENT);
                if status["completionTime"].is_null() {
                    status["completionTime"] = json!(now_rfc3339());
                }
                set_condition(status, "Failed", "True", "TFJobFailed", &msg);
            }
        }
    }
}

fn write_status(sh: &Shared, ns: &str, name: &str, old: &Value, new: &Value) {
    if old == new {
        return;
    }
    let new2 = new.clone();
    let written = sh.store.modify("tfjobs", ns, name, move |j| {
        j["status"] = new2.clone();
        true
    });
    if written.is_some() {
        log_new_conditions(sh, name, old, new);
    }
}

fn log_new_conditions(sh: &Shared, name: &str, old: &Value, new: &Value) {
    let now = Instant::now();
    let olds: Vec<&Value> = old["conditions"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut log = sh.condition_log.lock().unwrap();
    for c in new["conditions"].as_array().into_iter().flatten() {
        let same = olds.iter().any(|o| {
            o["type"] == c["type"] && o["status"] == c["status"] && o["reason"] == c["reason"]
        });
        if !same && c["status"] == "True" {
            log.push((
                name.to_string(),
                c["type"].as_str().unwrap_or("").to_string(),
                now,
            ));
        }
    }
}

/// Writes a condition to a TFJob's status right now (benchmarks); returns the write instant.
pub(crate) fn write_condition(
    sh: &Shared,
    ns: &str,
    name: &str,
    ctype: &str,
    cstatus: &str,
    reason: &str,
    message: &str,
) -> Option<Instant> {
    let job = sh.store.get("tfjobs", ns, name)?;
    let old = job.get("status").cloned().unwrap_or(json!({}));
    let mut st = if old.is_object() {
        old.clone()
    } else {
        json!({})
    };
    set_condition(&mut st, ctype, cstatus, reason, message);
    let at = Instant::now();
    write_status(sh, ns, name, &old, &st);
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tf_config_matches_operator_test() {
        let job = json!({"spec": {"tfReplicaSpecs": {
            "Worker": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}},
            "PS": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}},
            "Evaluator": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}}
        }}});
        let specs = defaulted_specs(&job);
        assert_eq!(
            tf_config("test-tfjob", "ns3", &specs, "Worker", 0, false),
            r#"{"cluster":{"evaluator":["test-tfjob-evaluator-0.ns3.svc:2222"],"ps":["test-tfjob-ps-0.ns3.svc:2222"],"worker":["test-tfjob-worker-0.ns3.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}"#
        );
    }
    #[test]
    fn dynamic_worker_sparse_tf_config() {
        let job = json!({"spec": {"tfReplicaSpecs": {
            "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}},
            "PS": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}}
        }}});
        let specs = defaulted_specs(&job);
        assert_eq!(
            tf_config("j", "ns", &specs, "Worker", 1, true),
            r#"{"cluster":{"worker":{"1":"j-worker-1.ns.svc:2222"},"ps":["j-ps-0.ns.svc:2222"]},"task":{"type":"worker","index":1}}"#
        );
        assert_eq!(
            tf_config("j", "ns", &specs, "PS", 0, true),
            r#"{"cluster":{"worker":{},"ps":["j-ps-0.ns.svc:2222"]},"task":{"type":"ps","index":0}}"#
        );
    }

    #[test]
    fn conditions_bookkeeping() {
        let mut st = json!({});
        set_condition(&mut st, "Created", "True", "TFJobCreated", "c");
        set_condition(&mut st, "Running", "True", "TFJobRunning", "r");
        set_condition(&mut st, "Restarting", "True", "TFJobRestarting", "x");
        set_condition(&mut st, "Running", "True", "TFJobRunning", "r");
        set_condition(&mut st, "Succeeded", "True", "TFJobSucceeded", "s");
        let types: Vec<(String, String)> = st["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["type"].as_str().unwrap().into(),
                    c["status"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(
            types,
            vec![
                ("Created".into(), "True".into()),
                ("Running".into(), "False".into()),
                ("Succeeded".into(), "True".into())
            ]
        );
    }
}
