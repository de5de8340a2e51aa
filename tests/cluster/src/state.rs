//! Shared state of one test cluster: the store, the scenario, faults, the request log.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::scenario::{Fault, Rbac, Scenario};
use crate::store::Store;
use crate::util::{new_uid, now_rfc3339};

/// One HTTP request the server answered (or reset).
#[derive(Debug, Clone)]
pub struct Request {
    /// HTTP method.
    pub method: String,
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection ("get" for non-resource paths).
    pub verb: String,
    /// Resource plural ("" for non-resource paths such as /version).
    pub resource: String,
    /// API group of the resource ("" for core).
    pub group: String,
    /// Subresource (status, log) or "".
    pub subresource: String,
    /// Namespace, if namespaced.
    pub namespace: Option<String>,
    /// Object name, if any.
    pub name: Option<String>,
    /// URL path.
    pub path: String,
    /// Raw query string.
    pub query: String,
    /// Response status (0 when the connection was reset).
    pub status: u16,
    /// Bytes in the response body when the body is whole (gets, lists, errors); `None` for
    /// streams (watches, followed logs) and resets. How tests count what a command reads.
    pub response_bytes: Option<u64>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// Request body parsed as JSON/YAML, when there was one.
    pub body: Option<Value>,
    /// Content-Type header.
    pub content_type: String,
    /// User-Agent header.
    pub user_agent: String,
    /// Authenticated user name ("" when the request was rejected as unauthenticated).
    pub user: String,
    /// When the request arrived.
    pub at: Instant,
    /// Milliseconds since the cluster started.
    pub at_ms: u64,
}

impl Request {
    /// True for writes that change state: non-dry-run create/update/patch/delete/deletecollection.
    pub fn is_write(&self) -> bool {
        !self.dry_run
            && matches!(
                self.verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
            && self.resource != "selfsubjectaccessreviews"
    }
}

/// (resource, namespace, name, subresource, field manager).
pub(crate) type ApplyKey = (String, String, String, String, String);

/// (involved uid, reason, message).
type EventKey = (String, String, String);

pub(crate) struct FaultState {
    pub fault: Fault,
    pub seen: u32,
    pub fired: u32,
}

/// What faults decided for one request.
#[derive(Default, Debug)]
pub(crate) struct FaultDecision {
    pub latency: Duration,
    pub reset: bool,
    pub drop_reply: bool,
    pub endless_body: bool,
    pub status: Option<Fault>,
    pub close_after_events: Option<usize>,
    pub gone_on_rewatch: bool,
    pub hold: bool,
}

/// Everything the server and simulated components share.
pub struct Shared {
    /// Object store.
    pub store: Store,
    /// The JSON of stored objects, for lists (encoded.rs).
    pub(crate) encoded: crate::encoded::Encoded,
    /// The scenario the cluster started from.
    pub scenario: Scenario,
    pub(crate) faults: Mutex<Vec<FaultState>>,
    pub(crate) requests: Mutex<Vec<Request>>,
    /// Every request as it arrives, before any fault's latency (status 0: not yet answered).
    pub(crate) arrived: Mutex<Vec<Request>>,
    pub(crate) rbac: Mutex<Rbac>,
    /// When the cluster started.
    pub started: Instant,
    /// Container logs by (namespace, pod, container), per container instance.
    pub(crate) logs: crate::logs::LogStore,
    pub(crate) condition_log: Mutex<Vec<(String, String, Instant)>>,
    pub(crate) port: Mutex<u16>,
    /// (involved uid, reason, message) → (namespace, event name), so repeats aggregate in O(1).
    event_index: Mutex<HashMap<EventKey, (String, String)>>,
    /// Last server-side-applied configuration per (resource, namespace, name, subresource, manager).
    pub(crate) applied: Mutex<HashMap<ApplyKey, serde_json::Value>>,
    /// Images whose pull fails (starts as the scenario's; `TestCluster::set_missing_images`).
    pub(crate) missing_images: Mutex<Vec<String>>,
    /// Images whose registry times out (`TestCluster::set_unreachable_images`).
    pub(crate) unreachable_images: Mutex<Vec<String>>,
    /// What each container got as its environment at its last start (expansion.rs).
    pub(crate) container_env: Mutex<crate::expansion::EnvMap>,
    /// Current operator mode (starts as the scenario's; `TestCluster::set_operator_mode`).
    pub(crate) mode: tokio::sync::watch::Sender<crate::scenario::OperatorMode>,
    /// Flipped to true when the cluster shuts down; components exit.
    pub(crate) stop: tokio::sync::watch::Sender<bool>,
    /// While set, the operator leaves an ended job's pods for its cleanPodPolicy
    /// (`TestCluster::hold_cleanup`), so a test can order "saved" before "deleted".
    pub(crate) cleanup_held: std::sync::atomic::AtomicBool,
    /// Held by the operator for one reconcile pass and by whatever changes what a pass does
    /// (mode, cleanup hold): once such a change returns, no pass begun before it is still
    /// writing, so a test's next step sees the operator as it was told to be.
    pub(crate) operator_pass: Mutex<()>,
    /// Replicas (namespace, pod name) already disrupted: an eviction or a preemption takes one
    /// pod away, and the pod the operator recreates under the same name runs on.
    pub(crate) disrupted: Mutex<std::collections::HashSet<(String, String)>>,
    /// Bumped by `TestCluster::release`: every request a `hold` fault holds goes on.
    pub(crate) released: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn new(scenario: Scenario) -> Self {
        let initial_mode = scenario.operator;
        let initial_missing = scenario.missing_images.clone();
        let initial_unreachable = scenario.unreachable_images.clone();
        let faults = scenario
            .faults
            .iter()
            .cloned()
            .map(|fault| FaultState {
                fault,
                seen: 0,
                fired: 0,
            })
            .collect();
        Shared {
            encoded: Default::default(),
            container_env: Mutex::new(HashMap::new()),
            store: Store::new(scenario.watch_history),
            rbac: Mutex::new(scenario.rbac.clone()),
            scenario,
            faults: Mutex::new(faults),
            requests: Mutex::new(Vec::new()),
            arrived: Mutex::new(Vec::new()),
            started: Instant::now(),
            logs: Default::default(),
            condition_log: Mutex::new(Vec::new()),
            port: Mutex::new(0),
            event_index: Mutex::new(HashMap::new()),
            stop: tokio::sync::watch::channel(false).0,
            mode: tokio::sync::watch::channel(initial_mode).0,
            missing_images: Mutex::new(initial_missing),
            unreachable_images: Mutex::new(initial_unreachable),
            applied: Mutex::new(HashMap::new()),
            cleanup_held: std::sync::atomic::AtomicBool::new(false),
            operator_pass: Mutex::new(()),
            disrupted: Mutex::new(Default::default()),
            released: tokio::sync::watch::channel(0).0,
        }
    }

    pub(crate) fn set_faults(&self, faults: Vec<Fault>) {
        *self.faults.lock().unwrap() = faults
            .into_iter()
            .map(|fault| FaultState {
                fault,
                seen: 0,
                fired: 0,
            })
            .collect();
    }

    /// Counts the request against every matching fault and returns the combined effect.
    pub(crate) fn decide_faults(
        &self,
        method: &str,
        verb: &str,
        resource: &str,
        sub: &str,
        ns: Option<&str>,
        name: Option<&str>,
    ) -> FaultDecision {
        let mut d = FaultDecision::default();
        let mut faults = self.faults.lock().unwrap();
        for fs in faults.iter_mut() {
            let m = &fs.fault.matches;
            let ok = |want: &Option<String>, have: &str| {
                want.as_deref()
                    .is_none_or(|w| w == "*" || w.eq_ignore_ascii_case(have))
            };
            if !(ok(&m.verb, verb)
                && ok(&m.resource, resource)
                && ok(&m.subresource, sub)
                && ok(&m.namespace, ns.unwrap_or(""))
                && ok(&m.name, name.unwrap_or(""))
                && ok(&m.method, method))
            {
                continue;
            }
            fs.seen += 1;
            if fs.seen <= fs.fault.skip {
                continue;
            }
            if fs.fault.times != 0 && fs.fired >= fs.fault.times {
                continue;
            }
            fs.fired += 1;
            let f = &fs.fault;
            if let Some(ms) = f.latency_ms {
                d.latency += Duration::from_millis(ms);
            }
            d.reset |= f.reset;
            d.drop_reply |= f.drop_reply;
            d.endless_body |= f.endless_body;
            if f.status.is_some() && d.status.is_none() {
                d.status = Some(f.clone());
            }
            if f.close_after_events.is_some() {
                d.close_after_events = f.close_after_events;
            }
            d.gone_on_rewatch |= f.gone_on_rewatch;
            d.hold |= f.hold;
        }
        d
    }

    /// True when the scenario's RBAC denies this.
    pub(crate) fn denied(&self, user: &str, verb: &str, resource: &str, ns: Option<&str>) -> bool {
        let rbac = self.rbac.lock().unwrap();
        rbac.deny.iter().any(|r| {
            let ok = |want: &Option<String>, have: &str| {
                want.as_deref().is_none_or(|w| w == "*" || w == have)
            };
            ok(&r.user, user)
                && ok(&r.verb, verb)
                && ok(&r.resource, resource)
                && ok(&r.namespace, ns.unwrap_or(""))
        })
    }

    pub(crate) fn log_request(&self, r: Request) {
        self.requests.lock().unwrap().push(r);
    }

    /// Records a core/v1 Event about `involved`, aggregating repeats like client-go's
    /// event correlator (same object+reason+message → count++).
    pub fn record_event(
        &self,
        involved: &Value,
        kind: &str,
        event_type: &str,
        reason: &str,
        message: &str,
        component: &str,
    ) {
        let ns = involved["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let name = involved["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let uid = involved["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let now = now_rfc3339();
        let ikey = (uid.clone(), reason.to_string(), message.to_string());
        let existing = self.event_index.lock().unwrap().get(&ikey).cloned();
        if let Some((ens, ename)) = existing {
            let now2 = now.clone();
            let updated = self.store.modify("events", &ens, &ename, move |e| {
                let c = e["count"].as_i64().unwrap_or(1);
                e["count"] = json!(c + 1);
                e["lastTimestamp"] = json!(now2);
                true
            });
            if updated.is_some() {
                return;
            }
        }
        let suffix: String = new_uid().replace('-', "").chars().rev().take(16).collect();
        let api_version = involved["apiVersion"].as_str().unwrap_or("v1");
        let mut ev = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": format!("{name}.{suffix}"), "namespace": ns},
            "involvedObject": {
                "kind": kind, "namespace": ns, "name": name, "uid": uid,
                "apiVersion": api_version,
                "resourceVersion": involved["metadata"]["resourceVersion"],
            },
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": event_type,
            "eventTime": null,
            "reportingComponent": component,
            "reportingInstance": "",
        });
        if component == "kubelet"
            && let Some(node) = involved["spec"]["nodeName"].as_str()
        {
            ev["source"]["host"] = json!(node);
            ev["reportingInstance"] = json!(node);
        }
        if kind == "Pod" && component == "kubelet" {
            // kubelet events name the container they are about.
            if let Some(c) = involved["__fieldPath"].as_str() {
                ev["involvedObject"]["fieldPath"] = json!(c);
            }
        }
        let ename = ev["metadata"]["name"].as_str().unwrap_or("").to_string();
        if self.store.create("events", &ns, ev).is_ok() {
            self.event_index.lock().unwrap().insert(ikey, (ns, ename));
        }
    }
}
