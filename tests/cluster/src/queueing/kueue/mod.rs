//! A Kueue v0.19.2 stand-in for TFJobs: the webhooks on TFJob (`webhook.rs`), the job
//! reconciler that creates Workloads, starts and stops the job (`job.rs`), and the
//! workload controller + scheduler that admit against ClusterQueue quota and keep the queues'
//! status (`schedule.rs`), with the pure quota logic in `assign/` and `podsets.rs`. Every
//! pass recomputes from the store, so usage frees as soon as a Workload finishes or goes.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::controller::{Changes, Controller};
use crate::state::Shared;
use crate::util::now_rfc3339;

pub mod assign;
mod job;
pub mod names;
pub mod podsets;
mod schedule;
pub(crate) mod visibility;
pub(crate) mod webhook;

/// `kueue.x-k8s.io/queue-name` (`pkg/controller/constants/constants.go` `QueueLabel`).
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// `kueue.x-k8s.io/job-uid` on the Workload.
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// The Workload finalizer.
pub const FINALIZER: &str = "kueue.x-k8s.io/resource-in-use";
/// Namespace of the Kueue installation (release manifests).
pub const NAMESPACE: &str = "kueue-system";
/// Reporting controller of the TFJob reconciler's events (setup.go: "<framework>-kueue-controller").
pub const JOB_CONTROLLER: &str = "kubeflow.org/tfjob-kueue-controller";
/// Reporting controller of the scheduler's events.
pub const ADMISSION: &str = "kueue-admission";

/// Creates the Kueue CRDs, the manager Deployment and its Configuration ConfigMap (so a client
/// can read `integrations.frameworks`, as `kubectl get cm -n kueue-system kueue-manager-config`
/// shows it on a real install).
pub(crate) fn install(sh: &Shared) {
    let Some(cfg) = &sh.scenario.kueue else {
        return;
    };
    let store = &sh.store;
    for crd in super::crds::kueue() {
        let _ = store.create(
            "customresourcedefinitions",
            "",
            crate::crd::with_established_status(crd),
        );
    }
    let _ = store.create(
        "namespaces",
        "",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": {"kubernetes.io/metadata.name": NAMESPACE}}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
    );
    let frameworks: String = cfg
        .frameworks
        .iter()
        .map(|f| format!("  - \"{f}\"\n"))
        .collect();
    let config = format!(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nhealth:\n  healthProbeBindAddress: :8081\nmetrics:\n  bindAddress: :8443\nwebhook:\n  port: 9443\nmanageJobsWithoutQueueName: false\nwaitForPodsReady:\n  timeout: 30m\nintegrations:\n  frameworks:\n{frameworks}"
    );
    let _ = store.create(
        "configmaps",
        NAMESPACE,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config", "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}}, "data": {"controller_manager_config.yaml": config}}),
    );
    let ready = if cfg.controller { 1 } else { 0 };
    let labels = json!({"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"});
    let _ = store.create(
        "deployments",
        NAMESPACE,
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "kueue-controller-manager", "namespace": NAMESPACE, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.19.2", "args": ["--config=/controller_manager_config.yaml"]}]}}},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": ready, "availableReplicas": ready}}),
    );
}

/// Runs the stand-in until the cluster stops: a full pass after every burst of changes to
/// the kinds Kueue watches.
pub(crate) async fn run(sh: Arc<Shared>) {
    let Some(cfg) = sh.scenario.kueue.clone() else {
        return;
    };
    if !cfg.controller || !cfg.manages_tfjobs() {
        return;
    }
    let changes = Changes::subscribe(&sh);
    let delay = Duration::from_millis(sh.scenario.timing.reconcile_ms);
    for j in sh.store.list("tfjobs", None).0 {
        note_created(j["metadata"]["uid"].as_str().unwrap_or(""));
    }
    pass(&sh);
    changes.run(delay, Loop { sh, due: false }).await;
}

/// Kueue in the shared controller loop: a change to a kind it watches makes one full pass due.
struct Loop {
    sh: Arc<Shared>,
    due: bool,
}

impl Controller for Loop {
    fn note(&mut self, ev: &crate::store::StoreEvent) {
        if ev.resource == "tfjobs" && ev.kind == crate::store::EventType::Added {
            note_created(ev.object["metadata"]["uid"].as_str().unwrap_or(""));
        }
        if watched(&ev.resource) {
            self.due = true;
        }
    }
    fn lagged(&mut self) {
        self.due = true;
    }
    fn due(&mut self) -> bool {
        self.due
    }
    fn reconcile(&mut self) {
        self.due = false;
        pass(&self.sh);
    }
}

fn watched(resource: &str) -> bool {
    matches!(
        resource,
        "tfjobs"
            | "workloads"
            | "localqueues"
            | "clusterqueues"
            | "resourceflavors"
            | "namespaces"
            | "priorityclasses"
    )
}

/// One reconcile of everything; each step writes only what changed, so a pass after a pass
/// with nothing new writes nothing (the loop settles).
pub(crate) fn pass(sh: &Shared) {
    job::reconcile_jobs(sh);
    schedule::schedule(sh);
    job::start_admitted(sh);
}

/// Creation order of TFJobs, by UID, as the store announced them: metav1.Time has whole
/// seconds, so Kueue breaks same-second ties by UID (`baseCompareFunc`), which is random here;
/// the stand-in breaks them by the job's creation order instead, so "submission order" holds.
static CREATED: std::sync::Mutex<Option<std::collections::HashMap<String, u64>>> =
    std::sync::Mutex::new(None);

pub(crate) fn note_created(uid: &str) {
    let mut g = CREATED.lock().unwrap();
    let m = g.get_or_insert_with(Default::default);
    let n = m.len() as u64;
    m.entry(uid.to_string()).or_insert(n);
}

/// The queue order of a Workload: priority (higher first), creation second, creation order, UID.
pub(crate) fn order_key(wl: &Value) -> (i64, i64, u64, String) {
    let uid = wl["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let job_uid = wl["metadata"]["labels"][JOB_UID_LABEL]
        .as_str()
        .unwrap_or("");
    let seq = CREATED
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(job_uid).copied())
        .unwrap_or(u64::MAX);
    (
        -wl["spec"]["priority"].as_i64().unwrap_or(0),
        crate::util::parse_rfc3339(wl["metadata"]["creationTimestamp"].as_str().unwrap_or(""))
            .unwrap_or(0),
        seq,
        uid,
    )
}

/// `meta.SetStatusCondition`: the transition time moves only when the status changes.
/// Returns whether anything changed.
pub(crate) fn set_condition(
    status: &mut Value,
    ctype: &str,
    cstatus: &str,
    reason: &str,
    message: &str,
    generation: &Value,
) -> bool {
    if !status.is_object() {
        *status = json!({});
    }
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let conds = status["conditions"].as_array_mut().unwrap();
    let now = now_rfc3339();
    if let Some(c) = conds.iter_mut().find(|c| c["type"] == ctype) {
        if c["status"] == cstatus && c["reason"] == reason && c["message"] == message {
            return false;
        }
        if c["status"] != cstatus {
            c["lastTransitionTime"] = json!(now);
        }
        c["status"] = json!(cstatus);
        c["reason"] = json!(reason);
        c["message"] = json!(message);
        c["observedGeneration"] = generation.clone();
        return true;
    }
    conds.push(
        json!({"type": ctype, "status": cstatus, "reason": reason, "message": message,
        "lastTransitionTime": now, "observedGeneration": generation}),
    );
    true
}

/// The condition of `ctype` when its status is True.
pub(crate) fn is_true(obj: &Value, ctype: &str) -> bool {
    condition(obj, ctype).is_some_and(|c| c["status"] == "True")
}

/// The condition of `ctype`.
pub(crate) fn condition<'a>(obj: &'a Value, ctype: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ctype)
}

/// Evicts a Workload as Kueue's preemption or an admission check would
/// (`pkg/workload/evict/evict.go`): `Evicted=True` with `reason` and `message`, and for
/// `Preempted` also the `Preempted=True` condition (`InClusterQueue`). The job reconciler then
/// suspends the job, and once its pods are gone the reservation is released and the Workload
/// queues again. Returns false when there is no such Workload.
pub fn evict(sh: &Shared, namespace: &str, name: &str, reason: &str, message: &str) -> bool {
    let written = sh.store.modify("workloads", namespace, name, |w| {
        let g = w["metadata"]["generation"].clone();
        let mut st = w["status"].take();
        set_condition(&mut st, "Evicted", "True", reason, message, &g);
        if reason == "Preempted" {
            set_condition(&mut st, "Preempted", "True", "InClusterQueue", message, &g);
        }
        w["status"] = st;
        true
    });
    if let Some(w) = &written {
        // preemption.go records "Preempted"; other evictions "EvictedDueTo<reason>"
        // (workload_controller.go, e.g. EvictedDueToPodsReadyTimeout).
        let ev = if reason == "Preempted" {
            "Preempted".to_string()
        } else {
            format!("EvictedDueTo{reason}")
        };
        sh.record_event(w, "Workload", "Normal", &ev, message, ADMISSION);
    }
    written.is_some()
}

/// The Preempted message Kueue writes for a preemption within the ClusterQueue
/// (`pkg/scheduler/preemption/preemption.go`).
pub fn preempted_message(preemptor_uid: &str, preemptor_job_uid: &str, cq: &str) -> String {
    format!(
        "Preempted to accommodate a workload (UID: {preemptor_uid}, JobUID: {preemptor_job_uid}) due to prioritization in the ClusterQueue; preemptor path: /{cq}; preemptee path: /{cq}"
    )
}
