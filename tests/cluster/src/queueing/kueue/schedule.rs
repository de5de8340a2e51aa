//! The workload controller's queue checks and the scheduler's admission, one pass over every
//! pending Workload: `getQueueBlocker` (`pkg/controller/core/workload_controller.go`), then per
//! ClusterQueue in queue order (`pkg/cache/queue/cluster_queue.go` `baseCompareFunc`: priority,
//! then creation time, then UID), flavor assignment (`assign/`) and `admit`
//! (`pkg/scheduler/scheduler.go`); BestEffortFIFO goes on past a head that does not fit,
//! StrictFIFO stops there. Then the ClusterQueue and LocalQueue status
//! (`pkg/controller/core/{clusterqueue,localqueue}_controller.go`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::assign::{Assignment, ClusterQueue, PodSetRequest, Snapshot, assign};
use super::podsets::{Res, pod_set_requests, quantity};
use super::{ADMISSION, condition, is_true, set_condition};
use crate::state::Shared;
use crate::util::{parse_rfc3339, value_quantity_milli};

fn meta<'a>(o: &'a Value, k: &str) -> &'a str {
    o["metadata"][k].as_str().unwrap_or("")
}

fn stopped(o: &Value) -> bool {
    o["spec"]["stopPolicy"]
        .as_str()
        .is_some_and(|p| p != "None")
}

/// Flavor/resource usage of a reserved Workload from its `status.admission`.
fn usage_of(wl: &Value) -> Vec<(String, String, i128)> {
    let mut out = Vec::new();
    for a in wl["status"]["admission"]["podSetAssignments"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for (r, q) in a["resourceUsage"].as_object().into_iter().flatten() {
            if let (Some(f), Some(v)) = (a["flavors"][r].as_str(), value_quantity_milli(q)) {
                out.push((f.to_string(), r.clone(), v));
            }
        }
    }
    out
}

fn missing_flavors(cq: &Value, flavors: &BTreeMap<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for g in cq["spec"]["resourceGroups"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for f in g["flavors"].as_array().into_iter().flatten() {
            let n = f["name"].as_str().unwrap_or("");
            if !flavors.contains_key(n) && !out.iter().any(|x| x == n) {
                out.push(n.to_string());
            }
        }
    }
    out
}

/// The ClusterQueue's Active condition (`inactiveReason` in `pkg/cache/scheduler/clusterqueue.go`;
/// the missing-flavor list comma-joined, as the ClusterQueue controller integration test of
/// package core expects: "references missing ResourceFlavor(s): on-demand,spot,model-a,model-b.").
fn cq_active(cq: &Value, flavors: &BTreeMap<String, Value>) -> (bool, &'static str, String) {
    let mut reasons = Vec::new();
    let mut msgs = Vec::new();
    if stopped(cq) {
        reasons.push("Stopped");
        msgs.push("is stopped".to_string());
    }
    let missing = missing_flavors(cq, flavors);
    if !missing.is_empty() {
        reasons.push("FlavorNotFound");
        msgs.push(format!(
            "references missing ResourceFlavor(s): {}",
            missing.join(",")
        ));
    }
    match reasons.first() {
        None => (true, "Ready", "Can admit new workloads".into()),
        Some(r) => (
            false,
            r,
            format!("Can't admit new workloads: {}.", msgs.join(", ")),
        ),
    }
}

fn namespace_matches(sh: &Shared, cq: &Value, ns: &str) -> bool {
    // LabelSelectorAsSelector(nil) is labels.Nothing(): a ClusterQueue without a
    // namespaceSelector admits from no namespace; `{}` admits from all.
    let sel = &cq["spec"]["namespaceSelector"];
    if !sel.is_object() {
        return false;
    }
    let labels = sh
        .store
        .get("namespaces", "", ns)
        .map(|n| n["metadata"]["labels"].clone())
        .unwrap_or(json!({}));
    let get = |k: &str| labels[k].as_str().map(String::from);
    let ok_labels = sel["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| get(k).as_deref() == v.as_str());
    let ok_exprs = sel["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().unwrap_or("");
            let vals: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str())
                .collect();
            let have = get(key);
            match e["operator"].as_str().unwrap_or("") {
                "In" => have.is_some_and(|h| vals.contains(&h.as_str())),
                "NotIn" => have.is_none_or(|h| !vals.contains(&h.as_str())),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            }
        });
    ok_labels && ok_exprs
}

/// The pending Workloads of each ClusterQueue in queue order, and why the others are blocked.
pub(crate) struct Queues {
    /// ClusterQueue → pending Workloads (namespace, name, LocalQueue) in order.
    pub pending: BTreeMap<String, Vec<(String, String, String)>>,
}

/// pkg/workload/resources.go handlePodOverhead: a pod set naming a RuntimeClass and having no
/// overhead of its own counts the class's.
fn with_class_overhead<'a>(sh: &Shared, ps: &'a Value) -> std::borrow::Cow<'a, Value> {
    let spec = &ps["template"]["spec"];
    let class = spec["runtimeClassName"].as_str().unwrap_or("");
    let own = spec["overhead"].as_object().is_some_and(|o| !o.is_empty());
    if class.is_empty() || own {
        return std::borrow::Cow::Borrowed(ps);
    }
    match sh.store.get("runtimeclasses", "", class) {
        Some(rc) if rc["overhead"]["podFixed"].is_object() => {
            let mut copy = ps.clone();
            copy["template"]["spec"]["overhead"] = rc["overhead"]["podFixed"].clone();
            std::borrow::Cow::Owned(copy)
        }
        _ => std::borrow::Cow::Borrowed(ps),
    }
}

fn requests(sh: &Shared, wl: &Value, cq: &ClusterQueue) -> Vec<PodSetRequest> {
    let covers_pods = cq
        .groups
        .iter()
        .any(|g| g.covered.iter().any(|r| r == "pods"));
    wl["spec"]["podSets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|ps| {
            let ps = &*with_class_overhead(sh, ps);
            let mut r: Res = pod_set_requests(ps);
            let count = ps["count"].as_i64().unwrap_or(1);
            if covers_pods {
                r.insert("pods".into(), count as i128 * 1000);
            }
            PodSetRequest {
                name: ps["name"].as_str().unwrap_or("").to_string(),
                count,
                requests: r,
                tolerations: ps["template"]["spec"]["tolerations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                node_selector: ps["template"]["spec"]["nodeSelector"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect(),
            }
        })
        .collect()
}

fn write(sh: &Shared, wl: &Value, f: impl Fn(&mut Value, &Value) -> bool) -> bool {
    let out = sh
        .store
        .modify("workloads", meta(wl, "namespace"), meta(wl, "name"), |w| {
            let g = w["metadata"]["generation"].clone();
            let mut st = w["status"].take();
            if !st.is_object() {
                st = json!({});
            }
            let c = f(&mut st, &g);
            w["status"] = st;
            c
        });
    out.is_some_and(|o| o["metadata"]["resourceVersion"] != wl["metadata"]["resourceVersion"])
}

fn admit(sh: &Shared, wl: &Value, cq: &str, a: &Assignment) {
    let assignments: Vec<Value> = a
        .pod_sets
        .iter()
        .map(|p| {
            let usage: serde_json::Map<String, Value> = p
                .usage
                .iter()
                .map(|(r, v)| (r.clone(), json!(quantity(r, *v))))
                .collect();
            json!({"name": p.name, "flavors": p.flavors, "resourceUsage": usage, "count": p.count})
        })
        .collect();
    let admission = json!({"clusterQueue": cq, "podSetAssignments": assignments});
    let cq = cq.to_string();
    let written = write(sh, wl, |st, g| {
        st["admission"] = admission.clone();
        if let Some(m) = st.as_object_mut() {
            m.remove("resourceRequests");
        }
        let prev = st["conditions"]
            .as_array()
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c["type"] == "Evicted" && c["status"] == "True")
            })
            .map(|c| c["message"].as_str().unwrap_or("").to_string());
        set_condition(
            st,
            "QuotaReserved",
            "True",
            "QuotaReserved",
            &format!("Quota reserved in ClusterQueue {cq}"),
            g,
        );
        set_condition(
            st,
            "Admitted",
            "True",
            "Admitted",
            "The workload is admitted",
            g,
        );
        if let Some(m) = prev {
            set_condition(
                st,
                "Evicted",
                "False",
                "QuotaReserved",
                &format!("Previously: {m}"),
                g,
            );
        }
        true
    });
    if written {
        let waited = parse_rfc3339(meta(wl, "creationTimestamp"))
            .map(|t| (crate::util::unix_now() - t).max(0))
            .unwrap_or(0);
        sh.record_event(
            wl,
            "Workload",
            "Normal",
            "QuotaReserved",
            &format!("Quota reserved in ClusterQueue {cq}, wait time since queued was {waited}s"),
            ADMISSION,
        );
        sh.record_event(
            wl,
            "Workload",
            "Normal",
            "Admitted",
            &format!("Admitted by ClusterQueue {cq}, wait time since reservation was 0s"),
            ADMISSION,
        );
    }
}

fn pending(
    sh: &Shared,
    wl: &Value,
    reason: &str,
    message: &str,
    requests: Option<&[PodSetRequest]>,
) {
    let rr: Option<Vec<Value>> = requests.map(|ps| {
        ps.iter()
            .map(|p| {
                let r: serde_json::Map<String, Value> = p
                    .requests
                    .iter()
                    .filter(|(k, _)| k.as_str() != "pods")
                    .map(|(k, v)| (k.clone(), json!(quantity(k, *v))))
                    .collect();
                json!({"name": p.name, "resources": r})
            })
            .collect()
    });
    let written = write(sh, wl, |st, g| {
        let mut c = set_condition(st, "QuotaReserved", "False", reason, message, g);
        if let Some(rr) = &rr
            && st["resourceRequests"] != json!(rr)
        {
            st["resourceRequests"] = json!(rr);
            c = true;
        }
        c
    });
    if written && requests.is_some() {
        // Warning "Pending" (the granular reason with the gate) on every failed attempt.
        sh.record_event(wl, "Workload", "Warning", reason, message, ADMISSION);
    }
}

/// One pass: queue blockers, deactivation, admission, queue status. Returns the queues.
pub(super) fn schedule(sh: &Shared) -> Queues {
    let gate = sh
        .scenario
        .kueue
        .as_ref()
        .is_some_and(|k| k.unadmitted_workloads_observability);
    let flavors: BTreeMap<String, Value> = sh
        .store
        .list("resourceflavors", None)
        .0
        .into_iter()
        .map(|f| (meta(&f, "name").to_string(), f["spec"].clone()))
        .collect();
    let cqs: BTreeMap<String, Value> = sh
        .store
        .list("clusterqueues", None)
        .0
        .into_iter()
        .map(|c| (meta(&c, "name").to_string(), c))
        .collect();
    let mut snap = Snapshot::default();
    for (n, c) in &cqs {
        snap.queues.insert(n.clone(), ClusterQueue::from_object(c));
    }
    let workloads = sh.store.list("workloads", None).0;
    for w in &workloads {
        if is_true(w, "QuotaReserved") && !is_true(w, "Finished") {
            let cq = w["status"]["admission"]["clusterQueue"]
                .as_str()
                .unwrap_or("")
                .to_string();
            for (f, r, v) in usage_of(w) {
                *snap.usage.entry((cq.clone(), f, r)).or_default() += v;
            }
        }
    }
    let mut queues: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for w in &workloads {
        if is_true(w, "Finished") {
            continue;
        }
        let reserved = is_true(w, "QuotaReserved");
        let active = w["spec"]["active"] != json!(false);
        if !active {
            // Deactivation (`spec.active=false`): evicted, then released by the job reconciler.
            if reserved && !is_true(w, "Evicted") {
                super::evict(
                    sh,
                    meta(w, "namespace"),
                    meta(w, "name"),
                    "Deactivated",
                    "The workload is deactivated",
                );
            }
            continue;
        }
        if condition(w, "Evicted")
            .is_some_and(|c| c["reason"] == "Deactivated" && c["status"] == "True")
            && !reserved
            && condition(w, "Requeued").is_none_or(|c| c["reason"] != "Reactivated")
        {
            write(sh, w, |st, g| {
                set_condition(
                    st,
                    "Requeued",
                    "True",
                    "Reactivated",
                    "The workload was reactivated",
                    g,
                )
            });
        }
        if reserved {
            // stopPolicy HoldAndDrain evicts what the queue admitted (Hold only stops new
            // admissions): `reconcileOnLocalQueueActiveState` / `...ClusterQueueActiveState`.
            let lq = sh.store.get(
                "localqueues",
                meta(w, "namespace"),
                w["spec"]["queueName"].as_str().unwrap_or(""),
            );
            let cq = w["status"]["admission"]["clusterQueue"]
                .as_str()
                .and_then(|n| cqs.get(n));
            let drain =
                |o: Option<&Value>| o.is_some_and(|o| o["spec"]["stopPolicy"] == "HoldAndDrain");
            if !is_true(w, "Evicted") {
                let (ns, name) = (meta(w, "namespace"), meta(w, "name"));
                if drain(lq.as_ref()) {
                    super::evict(
                        sh,
                        ns,
                        name,
                        "LocalQueueStopped",
                        "The LocalQueue is stopped",
                    );
                } else if drain(cq) {
                    super::evict(
                        sh,
                        ns,
                        name,
                        "ClusterQueueStopped",
                        "The ClusterQueue is stopped",
                    );
                }
            }
            continue;
        }
        let ns = meta(w, "namespace");
        let lq_name = w["spec"]["queueName"].as_str().unwrap_or("");
        let (misconfigured, suspended) = if gate {
            ("Misconfigured", "Suspended")
        } else {
            ("Inadmissible", "Inadmissible")
        };
        let Some(lq) = sh.store.get("localqueues", ns, lq_name) else {
            pending(
                sh,
                w,
                misconfigured,
                &format!("LocalQueue {lq_name} doesn't exist"),
                None,
            );
            continue;
        };
        if stopped(&lq) {
            pending(
                sh,
                w,
                suspended,
                &format!("LocalQueue {lq_name} is inactive"),
                None,
            );
            continue;
        }
        let cq_name = lq["spec"]["clusterQueue"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let Some(cq) = cqs.get(&cq_name) else {
            pending(
                sh,
                w,
                misconfigured,
                &format!("ClusterQueue {cq_name} doesn't exist"),
                None,
            );
            continue;
        };
        if !cq_active(cq, &flavors).0 {
            pending(
                sh,
                w,
                suspended,
                &format!("ClusterQueue {cq_name} is inactive"),
                None,
            );
            continue;
        }
        queues.entry(cq_name).or_default().push(w);
    }
    let mut out = Queues {
        pending: BTreeMap::new(),
    };
    for (cq_name, mut ws) in queues {
        ws.sort_by_key(|w| super::order_key(w));
        let cq_obj = &cqs[&cq_name];
        let cq = snap.queues[&cq_name].clone();
        let strict = cq_obj["spec"]["queueingStrategy"] == "StrictFIFO";
        let mut blocked = false;
        let mut still = Vec::new();
        for w in ws {
            let entry = (
                meta(w, "namespace").to_string(),
                meta(w, "name").to_string(),
                w["spec"]["queueName"].as_str().unwrap_or("").to_string(),
            );
            if blocked {
                still.push(entry);
                continue;
            }
            let reqs = requests(sh, w, &cq);
            if !namespace_matches(sh, cq_obj, &entry.0) {
                pending(
                    sh,
                    w,
                    if gate { "Misconfigured" } else { "Pending" },
                    "workload namespace doesn't match ClusterQueue selector",
                    Some(&reqs),
                );
                still.push(entry);
                blocked = strict;
                continue;
            }
            let a = assign(&snap, &cq, &reqs, &flavors);
            if a.fits() {
                snap.add(&cq_name, &a);
                admit(sh, w, &cq_name, &a);
            } else {
                let reason = if gate { a.granular_reason() } else { "Pending" };
                pending(sh, w, reason, &a.message(), Some(&reqs));
                still.push(entry);
                blocked = strict;
            }
        }
        out.pending.insert(cq_name, still);
    }
    write_queue_status(sh, &cqs, &flavors, &snap, &out);
    out
}

fn flavor_usage(
    cq: &ClusterQueue,
    snap: &Snapshot,
    admitted: &Snapshot,
    with_borrowed: bool,
) -> (Value, Value) {
    let mut by_flavor: Vec<(String, Vec<Value>, Vec<Value>)> = Vec::new();
    for (f, r) in cq.flavor_resources() {
        let key = (cq.name.clone(), f.clone(), r.clone());
        let res_r = snap.usage.get(&key).copied().unwrap_or(0);
        let res_a = admitted.usage.get(&key).copied().unwrap_or(0);
        let mut e_r = json!({"name": r, "total": quantity(&r, res_r)});
        let mut e_a = json!({"name": r, "total": quantity(&r, res_a)});
        if with_borrowed {
            e_r["borrowed"] = json!(quantity(&r, snap.borrowed(cq, &f, &r)));
            e_a["borrowed"] = json!(quantity(&r, admitted.borrowed(cq, &f, &r)));
        }
        match by_flavor.iter_mut().find(|(n, _, _)| *n == f) {
            Some((_, a, b)) => {
                a.push(e_r);
                b.push(e_a);
            }
            None => by_flavor.push((f, vec![e_r], vec![e_a])),
        }
    }
    let reservation: Vec<Value> = by_flavor
        .iter()
        .map(|(n, r, _)| json!({"name": n, "resources": r}))
        .collect();
    let usage: Vec<Value> = by_flavor
        .iter()
        .map(|(n, _, a)| json!({"name": n, "resources": a}))
        .collect();
    (json!(reservation), json!(usage))
}

fn write_queue_status(
    sh: &Shared,
    cqs: &BTreeMap<String, Value>,
    flavors: &BTreeMap<String, Value>,
    snap: &Snapshot,
    queues: &Queues,
) {
    // Recount after this pass's admissions, from the store.
    let workloads = sh.store.list("workloads", None).0;
    let live: Vec<&Value> = workloads
        .iter()
        .filter(|w| !is_true(w, "Finished"))
        .collect();
    let mut admitted_snap = Snapshot {
        queues: snap.queues.clone(),
        usage: Default::default(),
    };
    let mut reserved_snap = admitted_snap.clone();
    let mut per_lq: BTreeMap<(String, String), (Snapshot, Snapshot, i64, i64)> = BTreeMap::new();
    for w in &live {
        if !is_true(w, "QuotaReserved") {
            continue;
        }
        let cq = w["status"]["admission"]["clusterQueue"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let adm = is_true(w, "Admitted");
        let lq_key = (
            meta(w, "namespace").to_string(),
            w["spec"]["queueName"].as_str().unwrap_or("").to_string(),
        );
        let e = per_lq
            .entry(lq_key)
            .or_insert_with(|| (Snapshot::default(), Snapshot::default(), 0, 0));
        e.2 += 1;
        if adm {
            e.3 += 1;
        }
        for (f, r, v) in usage_of(w) {
            let k = (cq.clone(), f, r);
            *reserved_snap.usage.entry(k.clone()).or_default() += v;
            *e.0.usage.entry(k.clone()).or_default() += v;
            if adm {
                *admitted_snap.usage.entry(k.clone()).or_default() += v;
                *e.1.usage.entry(k).or_default() += v;
            }
        }
    }
    for (name, obj) in cqs {
        let cq = &snap.queues[name];
        let (reservation, usage) = flavor_usage(cq, &reserved_snap, &admitted_snap, true);
        let reserving = live
            .iter()
            .filter(|w| {
                is_true(w, "QuotaReserved")
                    && w["status"]["admission"]["clusterQueue"] == json!(name)
            })
            .count();
        let admitted = live
            .iter()
            .filter(|w| {
                is_true(w, "Admitted") && w["status"]["admission"]["clusterQueue"] == json!(name)
            })
            .count();
        let pending = queues.pending.get(name).map(Vec::len).unwrap_or(0)
            + live
                .iter()
                .filter(|w| {
                    !is_true(w, "QuotaReserved")
                        && condition(w, "QuotaReserved").is_some_and(|c| {
                            c["message"] == json!(format!("ClusterQueue {name} is inactive"))
                        })
                })
                .count();
        let (ok, reason, msg) = cq_active(obj, flavors);
        let _ = sh.store.modify("clusterqueues", "", name, |c| {
            let g = c["metadata"]["generation"].clone();
            let mut st = c["status"].take();
            if !st.is_object() {
                st = json!({});
            }
            let before = st.clone();
            st["flavorsReservation"] = reservation.clone();
            st["flavorsUsage"] = usage.clone();
            st["pendingWorkloads"] = json!(pending);
            st["reservingWorkloads"] = json!(reserving);
            st["admittedWorkloads"] = json!(admitted);
            set_condition(
                &mut st,
                "Active",
                if ok { "True" } else { "False" },
                reason,
                &msg,
                &g,
            );
            let changed = st != before;
            c["status"] = st;
            changed
        });
    }
    for lq in sh.store.list("localqueues", None).0 {
        let (ns, name) = (
            meta(&lq, "namespace").to_string(),
            meta(&lq, "name").to_string(),
        );
        let cq_name = lq["spec"]["clusterQueue"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let key = (ns.clone(), name.clone());
        let (ok, reason, msg) = match cqs.get(&cq_name) {
            _ if stopped(&lq) => (false, "Stopped", "LocalQueue is stopped"),
            None => (
                false,
                "ClusterQueueDoesNotExist",
                "Can't submit new workloads to clusterQueue",
            ),
            Some(c) if !cq_active(c, flavors).0 => (
                false,
                "ClusterQueueIsInactive",
                "Can't submit new workloads to clusterQueue",
            ),
            Some(_) => (true, "Ready", "Can submit new workloads to localQueue"),
        };
        let pending = queues
            .pending
            .get(&cq_name)
            .map(|v| v.iter().filter(|(n, _, q)| *n == ns && *q == name).count())
            .unwrap_or(0);
        let (reservation, usage, reserving, admitted) =
            match (snap.queues.get(&cq_name), per_lq.get(&key)) {
                (Some(cq), Some((r, a, nr, na))) => {
                    let (x, y) = flavor_usage(cq, r, a, false);
                    (x, y, *nr, *na)
                }
                (Some(cq), None) => {
                    let (x, y) =
                        flavor_usage(cq, &Snapshot::default(), &Snapshot::default(), false);
                    (x, y, 0, 0)
                }
                _ => (json!([]), json!([]), 0, 0),
            };
        let _ = sh.store.modify("localqueues", &ns, &name, |l| {
            let g = l["metadata"]["generation"].clone();
            let mut st = l["status"].take();
            if !st.is_object() {
                st = json!({});
            }
            let before = st.clone();
            st["pendingWorkloads"] = json!(pending);
            st["reservingWorkloads"] = json!(reserving);
            st["admittedWorkloads"] = json!(admitted);
            st["flavorsReservation"] = reservation.clone();
            st["flavorsUsage"] = usage.clone();
            set_condition(
                &mut st,
                "Active",
                if ok { "True" } else { "False" },
                reason,
                msg,
                &g,
            );
            let changed = st != before;
            l["status"] = st;
            changed
        });
    }
}
