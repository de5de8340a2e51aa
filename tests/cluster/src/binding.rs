//! The simulated kube-scheduler's loop: keeps the queue of unbound pods and what each node has
//! given out, asks `scheduler`'s filters for a node, then binds (or records FailedScheduling)
//! and hands bound pods to the kubelet.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::controller::{Changes, Controller};
use crate::kubelet::{set_pod_condition, start_pod};
use crate::state::Shared;
use crate::store::{EventType, StoreEvent};
use crate::util::now_rfc3339;

type Key = (String, String);
type Res = BTreeMap<String, i128>;

fn pod_requests(pod: &Value) -> Res {
    crate::scheduler::pod_requests(pod)
}

fn terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

struct Scheduler {
    usage: HashMap<String, Res>,
    bound: HashMap<String, (String, Res)>,
    pending: BTreeSet<Key>,
    unschedulable: BTreeSet<Key>,
}

impl Scheduler {
    fn account(&mut self, pod: &Value) {
        let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let Some(node) = pod["spec"]["nodeName"].as_str() else {
            return;
        };
        if terminal(pod) {
            self.release(&uid);
            return;
        }
        if self.bound.contains_key(&uid) {
            return;
        }
        let req = pod_requests(pod);
        let u = self.usage.entry(node.to_string()).or_default();
        for (k, v) in &req {
            *u.entry(k.clone()).or_default() += v;
        }
        self.bound.insert(uid, (node.to_string(), req));
    }

    fn release(&mut self, uid: &str) {
        if let Some((node, req)) = self.bound.remove(uid)
            && let Some(u) = self.usage.get_mut(&node)
        {
            for (k, v) in req {
                *u.entry(k).or_default() -= v;
            }
        }
    }

    /// Picks a node or explains, kube-scheduler style, why none fits.
    fn fit(&self, sh: &Shared, pod: &Value, nodes: &[Value]) -> Result<String, String> {
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
        let n = nodes.len();
        for v in pod["spec"]["volumes"].as_array().into_iter().flatten() {
            if let Some(claim) = v["persistentVolumeClaim"]["claimName"].as_str() {
                let msg = match sh.store.get("persistentvolumeclaims", ns, claim) {
                    None => format!("persistentvolumeclaim {claim:?} not found"),
                    Some(pvc) if pvc["status"]["phase"] != "Bound" => {
                        "pod has unbound immediate PersistentVolumeClaims".to_string()
                    }
                    Some(_) => continue,
                };
                return Err(format!(
                    "0/{n} nodes are available: {msg}. preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
                ));
            }
        }
        crate::scheduler::pick(pod, nodes, &self.usage)
    }
}

/// Runs scheduler + kubelet until the cluster stops.
pub(crate) async fn run(sh: Arc<Shared>) {
    let changes = Changes::subscribe(&sh);
    let mut s = Scheduler {
        usage: HashMap::new(),
        bound: HashMap::new(),
        pending: BTreeSet::new(),
        unschedulable: BTreeSet::new(),
    };
    for p in sh.store.list("pods", None).0 {
        note_pod(&sh, &mut s, EventType::Added, &p);
    }
    let delay = Duration::from_millis(sh.scenario.timing.schedule_ms);
    changes.run(delay, Loop { sh, s }).await;
}

/// The scheduler in the shared controller loop: a pass is due while pods wait unbound, so an
/// unschedulable pod is retried every `schedule_ms`.
struct Loop {
    sh: Arc<Shared>,
    s: Scheduler,
}

impl Controller for Loop {
    fn note(&mut self, ev: &StoreEvent) {
        note(&self.sh, &mut self.s, ev);
    }
    fn lagged(&mut self) {
        resync(&self.sh, &mut self.s);
    }
    fn due(&mut self) -> bool {
        !self.s.pending.is_empty()
    }
    fn reconcile(&mut self) {
        schedule_pending(&self.sh, &mut self.s);
    }
}

fn resync(sh: &Arc<Shared>, s: &mut Scheduler) {
    s.usage.clear();
    s.bound.clear();
    for p in sh.store.list("pods", None).0 {
        s.account(&p);
        if p["spec"]["nodeName"].is_null()
            && p["spec"]["schedulerName"]
                .as_str()
                .unwrap_or("default-scheduler")
                == "default-scheduler"
        {
            s.pending.insert(key_of(&p));
        }
    }
}

fn key_of(p: &Value) -> Key {
    (
        p["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        p["metadata"]["name"].as_str().unwrap_or("").to_string(),
    )
}

fn note(sh: &Arc<Shared>, s: &mut Scheduler, ev: &StoreEvent) {
    match ev.resource.as_str() {
        "pods" => {
            // The quota controller's job: keep status.used in step with the pods.
            crate::admission::refresh_quotas(sh, &ev.namespace);
            note_pod(sh, s, ev.kind, &ev.object)
        }
        "nodes" | "persistentvolumeclaims" => {
            let u = std::mem::take(&mut s.unschedulable);
            s.pending.extend(u);
        }
        _ => {}
    }
}

fn note_pod(sh: &Arc<Shared>, s: &mut Scheduler, kind: EventType, p: &Value) {
    let uid = p["metadata"]["uid"].as_str().unwrap_or("").to_string();
    match kind {
        EventType::Deleted => {
            s.release(&uid);
            s.unschedulable.remove(&key_of(p));
            let u = std::mem::take(&mut s.unschedulable);
            s.pending.extend(u);
        }
        _ => {
            if p["spec"]["nodeName"].is_string() {
                let was_bound = s.bound.contains_key(&uid);
                s.account(p);
                if was_bound && terminal(p) {
                    let u = std::mem::take(&mut s.unschedulable);
                    s.pending.extend(u);
                }
                // Pods created already bound still need a kubelet, unless a test inserted
                // them with a status of its own (phase other than Pending), which is kept.
                if kind == EventType::Added
                    && p["status"]["containerStatuses"].is_null()
                    && p["status"]["phase"]
                        .as_str()
                        .is_none_or(|ph| ph == "Pending")
                {
                    start_pod(sh.clone(), p.clone());
                }
            } else if kind == EventType::Added
                && p["spec"]["schedulerName"]
                    .as_str()
                    .unwrap_or("default-scheduler")
                    == "default-scheduler"
                && p["status"]["phase"]
                    .as_str()
                    .is_none_or(|ph| ph == "Pending")
            {
                s.pending.insert(key_of(p));
            }
        }
    }
}

fn schedule_pending(sh: &Arc<Shared>, s: &mut Scheduler) {
    let nodes = sh.store.list("nodes", None).0;
    for key in std::mem::take(&mut s.pending) {
        let Some(pod) = sh.store.get("pods", &key.0, &key.1) else {
            continue;
        };
        if pod["spec"]["nodeName"].is_string() {
            continue;
        }
        let now = now_rfc3339();
        match s.fit(sh, &pod, &nodes) {
            Ok(node) => {
                let n2 = node.clone();
                let uid = pod["metadata"]["uid"].clone();
                let bound = sh.store.modify("pods", &key.0, &key.1, move |p| {
                    if p["metadata"]["uid"] != uid {
                        return false;
                    }
                    p["spec"]["nodeName"] = json!(n2);
                    set_pod_condition(p, "PodScheduled", "True", None, None, &now);
                    true
                });
                if let Some(bound) = bound {
                    s.account(&bound);
                    s.unschedulable.remove(&key);
                    sh.record_event(
                        &bound,
                        "Pod",
                        "Normal",
                        "Scheduled",
                        &format!("Successfully assigned {}/{} to {node}", key.0, key.1),
                        "default-scheduler",
                    );
                    start_pod(sh.clone(), bound);
                }
            }
            Err(msg) => {
                let m2 = msg.clone();
                let changed = sh.store.modify("pods", &key.0, &key.1, move |p| {
                    let cur = p["status"]["conditions"]
                        .as_array()
                        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned());
                    if cur.is_some_and(|c| c["message"] == json!(m2)) {
                        return false;
                    }
                    set_pod_condition(
                        p,
                        "PodScheduled",
                        "False",
                        Some("Unschedulable"),
                        Some(&m2),
                        &now,
                    );
                    true
                });
                if let Some(p) = changed {
                    sh.record_event(
                        &p,
                        "Pod",
                        "Warning",
                        "FailedScheduling",
                        &msg,
                        "default-scheduler",
                    );
                }
                s.unschedulable.insert(key);
            }
        }
    }
}
