//! Simulated training-operator v1.9.4 TFJob controller (see operator-behavior.md):
//! names, labels, TF_CONFIG, events, condition bookkeeping and the chief-or-worker rules.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::controller::{Changes, Controller};
use crate::scenario::OperatorMode;
use crate::state::Shared;
use crate::store::{EventType, StoreEvent};
use crate::util::{now_rfc3339, parse_rfc3339};

const COMPONENT: &str = "tfjob-controller";
/// How soon a job whose pod creates were refused is reconciled again.
const REFUSED_REQUEUE: Duration = Duration::from_millis(500);
const KNOWN: [&str; 5] = ["Chief", "Evaluator", "Master", "PS", "Worker"];
const L_OPERATOR: &str = "training.kubeflow.org/operator-name";
const L_JOB: &str = "training.kubeflow.org/job-name";
const L_TYPE: &str = "training.kubeflow.org/replica-type";
const L_INDEX: &str = "training.kubeflow.org/replica-index";
const L_ROLE: &str = "training.kubeflow.org/job-role";

mod gang;
mod objects;
mod status;

use objects::*;
use status::*;
pub(crate) use status::{set_condition, write_condition};

type Key = (String, String);

/// Runs the controller until the cluster stops.
pub(crate) async fn run(sh: Arc<Shared>) {
    let changes = Changes::subscribe(&sh);
    // Only a Running operator reconciles; becoming Running re-queues every job.
    let mode = sh.mode.subscribe();
    let (requeue, requeued) = mpsc::unbounded_channel::<Key>();
    let dirty: BTreeSet<Key> = if *sh.mode.borrow() == OperatorMode::Running {
        all_jobs(&sh)
    } else {
        BTreeSet::new()
    };
    let delay = Duration::from_millis(sh.scenario.timing.reconcile_ms);
    let op = Loop {
        sh,
        mode,
        requeue,
        requeued,
        seen: HashSet::new(),
        dirty,
    };
    changes.run(delay, op).await;
}

/// The operator in the shared controller loop: the jobs a change touched are due, and those
/// a reconcile asked to see again (controller-runtime's requeue-after).
struct Loop {
    sh: Arc<Shared>,
    mode: tokio::sync::watch::Receiver<OperatorMode>,
    requeue: mpsc::UnboundedSender<Key>,
    requeued: mpsc::UnboundedReceiver<Key>,
    seen: HashSet<String>,
    dirty: BTreeSet<Key>,
}

impl Loop {
    fn running(&self) -> bool {
        *self.mode.borrow() == OperatorMode::Running
    }
}

impl Controller for Loop {
    fn note(&mut self, ev: &StoreEvent) {
        note(ev, &mut self.dirty, &mut self.seen);
    }
    fn lagged(&mut self) {
        self.dirty.extend(all_jobs(&self.sh));
    }
    fn due(&mut self) -> bool {
        if !self.running() {
            self.dirty.clear();
        }
        !self.dirty.is_empty()
    }
    async fn wake(&mut self) -> bool {
        tokio::select! {
            Some(k) = self.requeued.recv() => {
                self.dirty.insert(k);
            }
            r = self.mode.changed() => {
                if r.is_err() {
                    return false;
                }
                if self.running() {
                    self.dirty.extend(all_jobs(&self.sh));
                }
            }
        }
        true
    }
    fn reconcile(&mut self) {
        let sh = Arc::clone(&self.sh);
        let _pass = sh.operator_pass.lock().unwrap_or_else(|e| e.into_inner());
        while let Ok(k) = self.requeued.try_recv() {
            self.dirty.insert(k);
        }
        if !self.running() {
            self.dirty.clear();
            return;
        }
        for key in std::mem::take(&mut self.dirty) {
            reconcile(&self.sh, &key, &mut self.seen, &self.requeue);
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
        "pods" | "services" | "podgroups" => {
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
    if policy == "None" || sh.cleanup_held.load(std::sync::atomic::Ordering::SeqCst) {
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
        gang::delete(sh, &job);
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
        gang::delete(sh, &job);
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
        gang::delete(sh, &job);
        clean_pods(sh, &job, ns, &pods);
        sh.record_event(&job, "TFJob", "Normal", "TFJobFailed", &msg, COMPONENT);
        write_status(sh, ns, name, &old_status, &status);
        cleanup_job(sh, &job, &status, key, requeue);
        return;
    }

    if !status["replicaStatuses"].is_object() {
        status["replicaStatuses"] = json!({});
    }
    if gang::sync(sh, &job, &specs, &mut status) {
        write_status(sh, ns, name, &old_status, &status);
        return;
    }
    let cluster = cluster_json(name, ns, &specs);
    let mut refused = false;
    for (rtype, rs) in &specs {
        refused |= reconcile_pods(sh, &job, &specs, &cluster, rtype, rs, &pods, &mut status);
        reconcile_services(sh, &job, &specs, rtype, rs, &services);
    }
    // A refused create is a reconcile error: controller-runtime requeues the job with the
    // workqueue's rate limiter (per-item exponential backoff), so the pods come once what
    // refused them is fixed (a ServiceAccount created later). Here a fixed short delay.
    if refused {
        let (tx, k) = (requeue.clone(), key.clone());
        tokio::spawn(async move {
            tokio::time::sleep(REFUSED_REQUEUE).await;
            let _ = tx.send(k);
        });
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
) -> bool {
    let mut refused_any = false;
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
                gang::decorate(sh, job, rtype, &mut pod);
                crate::defaults::apply_defaults("pods", &mut pod);
                let pn = pname(&pod);
                // pod_control.go: a refused create is a FailedCreatePod event, "Error creating: %v".
                let refused = crate::podadmission::check_create(sh, &mut pod)
                    .map_err(|e| e.body["message"].as_str().unwrap_or("").to_string())
                    .and_then(|()| crate::admission::admit_pod(sh, ns, &mut pod));
                if let Err(m) = refused {
                    refused_any = true;
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
                        // The API server's words for the store's answer (StatusError.Error()).
                        &format!(
                            "Error creating: {}",
                            match e {
                                crate::store::StoreError::AlreadyExists =>
                                    format!("pods {pn:?} already exists"),
                                crate::store::StoreError::NotFound =>
                                    format!("namespaces {ns:?} not found"),
                                crate::store::StoreError::Conflict => format!(
                                    "Operation cannot be fulfilled on pods {pn:?}: the object has been modified; please apply your changes to the latest version and try again"
                                ),
                            }
                        ),
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
            // A Running pod being deleted counts as failed (training-operator
            // pkg/core/status.go): a preempted pod or one of a lost node.
            "Running" if pod["metadata"].get("deletionTimestamp").is_some() => failed += 1,
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
    refused_any
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
