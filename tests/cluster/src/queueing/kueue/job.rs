//! The TFJob side of Kueue: `ReconcileGenericJob` (`pkg/controller/jobframework/reconciler.go`)
//! for the `kubeflow.org/tfjob` integration: a Workload per queued job, the job started with
//! its pod sets' flavor info once admitted (`startJob`, `podset.Merge`), stopped again with
//! its templates restored when it runs unadmitted or is evicted, and Finished when the job is.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::podsets::{ORDERED_REPLICA_TYPES, pod_sets};
use super::{
    ADMISSION, FINALIZER, JOB_CONTROLLER, JOB_UID_LABEL, QUEUE_LABEL, condition, is_true,
    names::tfjob_workload_name, set_condition,
};
use crate::state::Shared;

fn meta<'a>(o: &'a Value, k: &str) -> &'a str {
    o["metadata"][k].as_str().unwrap_or("")
}

fn queue_name(job: &Value) -> Option<&str> {
    job["metadata"]["labels"][QUEUE_LABEL]
        .as_str()
        .filter(|q| !q.is_empty())
}

fn suspended(job: &Value) -> bool {
    job["spec"]["runPolicy"]["suspend"] == json!(true)
}

/// `KubeflowJob.IsActive`: any replica type with active pods.
fn active(job: &Value) -> bool {
    job["status"]["replicaStatuses"]
        .as_object()
        .is_some_and(|m| m.values().any(|r| r["active"].as_i64().unwrap_or(0) > 0))
}

fn finished_condition(job: &Value) -> Option<(&'static str, String)> {
    for (t, reason) in [("Succeeded", "Succeeded"), ("Failed", "Failed")] {
        if let Some(c) = job["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == t && c["status"] == "True")
        {
            return Some((reason, c["message"].as_str().unwrap_or("").to_string()));
        }
    }
    None
}

/// The Workload of `job`: by the job-uid label or a controller reference to it.
fn workload_of<'a>(job: &Value, workloads: &'a [Value]) -> Option<&'a Value> {
    let uid = meta(job, "uid");
    workloads.iter().find(|w| {
        meta(w, "namespace") == meta(job, "namespace")
            && (w["metadata"]["labels"][JOB_UID_LABEL] == json!(uid)
                || w["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|o| o["uid"] == json!(uid) && o["controller"] == json!(true)))
    })
}

/// The job owning a Workload.
pub(super) fn job_of(sh: &Shared, wl: &Value) -> Option<Value> {
    let o = wl["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["kind"] == "TFJob" && o["controller"] == json!(true))?;
    let job = sh
        .store
        .get("tfjobs", meta(wl, "namespace"), o["name"].as_str()?)?;
    (job["metadata"]["uid"] == o["uid"]).then_some(job)
}

/// The job's priority as Kueue takes it (`kubeflowjob_controller.go` `PriorityClass`,
/// `pkg/util/priority/priority.go`): the scheduling policy's class, else the first replica
/// template naming one (Chief, Master, PS, Worker, Evaluator), else the globalDefault class.
fn priority(sh: &Shared, job: &Value) -> (i64, Option<String>) {
    let named = job["spec"]["runPolicy"]["schedulingPolicy"]["priorityClass"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(String::from)
        .or_else(|| {
            ORDERED_REPLICA_TYPES.iter().find_map(|rt| {
                job["spec"]["tfReplicaSpecs"][rt]["template"]["spec"]["priorityClassName"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(String::from)
            })
        });
    if let Some(n) = named
        && let Some(pc) = sh.store.get("priorityclasses", "", &n)
    {
        return (pc["value"].as_i64().unwrap_or(0), Some(n));
    }
    let global = sh
        .store
        .list("priorityclasses", None)
        .0
        .into_iter()
        .find(|p| p["globalDefault"] == json!(true));
    match global {
        Some(p) => (
            p["value"].as_i64().unwrap_or(0),
            Some(meta(&p, "name").to_string()),
        ),
        None => (0, None),
    }
}

fn new_workload(sh: &Shared, job: &Value, queue: &str, pod_sets: Vec<Value>) -> Value {
    let (name, ns, uid) = (meta(job, "name"), meta(job, "namespace"), meta(job, "uid"));
    let mut annotations = serde_json::Map::new();
    for (k, v) in job["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
    {
        if k.starts_with("provreq.kueue.x-k8s.io/") {
            annotations.insert(k.clone(), v.clone());
        }
    }
    let (prio, class) = priority(sh, job);
    let mut spec =
        json!({"queueName": queue, "podSets": pod_sets, "priority": prio, "active": true});
    if let Some(c) = class {
        spec["priorityClassRef"] =
            json!({"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": c});
    }
    let mut md = json!({
        "name": tfjob_workload_name(name, uid),
        "namespace": ns,
        "labels": {JOB_UID_LABEL: uid},
        "finalizers": [FINALIZER],
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}],
    });
    if !annotations.is_empty() {
        md["annotations"] = json!(annotations);
    }
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": md, "spec": spec})
}

fn event(sh: &Shared, obj: &Value, kind: &str, reason: &str, msg: &str) {
    let component = if kind == "Workload" {
        ADMISSION
    } else {
        JOB_CONTROLLER
    };
    sh.record_event(obj, kind, "Normal", reason, msg, component);
}

/// Sets `runPolicy.suspend` and, when stopping, puts back each replica template's labels,
/// annotations, nodeSelector and tolerations from the Workload's pod sets
/// (`RestorePodSetsInfo`), taking off what admission added.
fn set_suspend(sh: &Shared, job: &Value, suspend: bool, restore_from: Option<&Value>) -> bool {
    let (ns, name) = (meta(job, "namespace"), meta(job, "name"));
    let restore = restore_from.cloned();
    sh.store
        .modify("tfjobs", ns, name, move |j| {
            j["spec"]["runPolicy"]["suspend"] = json!(suspend);
            if let Some(wl) = &restore {
                for ps in wl["spec"]["podSets"].as_array().into_iter().flatten() {
                    let Some(rt) = ORDERED_REPLICA_TYPES
                        .iter()
                        .find(|rt| rt.to_lowercase() == ps["name"].as_str().unwrap_or(""))
                    else {
                        continue;
                    };
                    let t = &mut j["spec"]["tfReplicaSpecs"][rt]["template"];
                    if !t.is_object() {
                        continue;
                    }
                    for (part, key) in [
                        ("metadata", "labels"),
                        ("metadata", "annotations"),
                        ("spec", "nodeSelector"),
                        ("spec", "tolerations"),
                    ] {
                        let orig = &ps["template"][part][key];
                        if orig.is_null() {
                            if let Some(m) = t[part].as_object_mut() {
                                m.remove(key);
                            }
                        } else {
                            t[part][key] = orig.clone();
                        }
                    }
                }
            }
            true
        })
        .is_some()
}

fn write_status(sh: &Shared, wl: &Value, f: impl Fn(&mut Value, &Value) -> bool) -> Option<Value> {
    let mut changed = false;
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
    if let Some(o) = &out
        && o["metadata"]["resourceVersion"] != wl["metadata"]["resourceVersion"]
    {
        changed = true;
    }
    changed.then(|| out.unwrap())
}

/// One pass of the job reconciler over every TFJob carrying a queue-name label.
pub(super) fn reconcile_jobs(sh: &Shared) {
    let workloads = sh.store.list("workloads", None).0;
    for job in sh.store.list("tfjobs", None).0 {
        let Some(queue) = queue_name(&job) else {
            continue;
        };
        if job["metadata"].get("deletionTimestamp").is_some() {
            continue;
        }
        reconcile_job(sh, &job, queue, workload_of(&job, &workloads));
    }
}

fn reconcile_job(sh: &Shared, job: &Value, queue: &str, wl: Option<&Value>) {
    let ns = meta(job, "namespace");
    if let Some((reason, msg)) = finished_condition(job) {
        // reconciler.go step 3: the Workload is declared finished and its quota released.
        if let Some(wl) = wl
            && !is_true(wl, "Finished")
        {
            write_status(sh, wl, |st, g| {
                set_condition(st, "Finished", "True", reason, &msg, g)
            });
            let _ = sh.store.modify("workloads", ns, meta(wl, "name"), |w| {
                let Some(f) = w["metadata"]["finalizers"].as_array_mut() else {
                    return false;
                };
                f.retain(|x| x != FINALIZER);
                true
            });
            event(
                sh,
                job,
                "TFJob",
                "FinishedWorkload",
                &format!("Workload '{ns}/{}' is declared finished", meta(wl, "name")),
            );
        }
        return;
    }
    let Some(wl) = wl else {
        if !suspended(job) {
            // A job that carries admission's podset label lost its Workload by hand
            // ("Workload is deleted"); otherwise it never had one.
            let was_admitted = ORDERED_REPLICA_TYPES.iter().any(|rt| {
                job["spec"]["tfReplicaSpecs"][rt]["template"]["metadata"]["labels"]
                    ["kueue.x-k8s.io/podset"]
                    .is_string()
            });
            let msg = if was_admitted {
                "Workload is deleted"
            } else {
                "Missing Workload; unable to restore pod templates"
            };
            if set_suspend(sh, job, true, None) {
                event(sh, job, "TFJob", "Stopped", msg);
            }
            return;
        }
        if active(job) {
            // "Job is suspended but still has active pods, waiting".
            return;
        }
        let sets = pod_sets(job);
        if sets.is_empty() {
            // The API server refuses a Workload without pod sets ("spec.podSets in body
            // should have at least 1 items"): the job stays suspended with no Workload.
            return;
        }
        let w = new_workload(sh, job, queue, sets);
        if let Ok(created) = sh.store.create("workloads", ns, w) {
            write_status(sh, &created, |st, g| {
                set_condition(
                    st,
                    "PodsReady",
                    "False",
                    "WaitForStart",
                    "Not all pods are ready or succeeded",
                    g,
                )
            });
            event(
                sh,
                job,
                "TFJob",
                "CreatedWorkload",
                &format!("Created Workload: {ns}/{}", meta(&created, "name")),
            );
        }
        return;
    };
    let wname = meta(wl, "name").to_string();
    let reserved = is_true(wl, "QuotaReserved");
    let admitted = reserved && is_true(wl, "Admitted");
    let evicted = is_true(wl, "Evicted");
    if !reserved && suspended(job) {
        // QueueNameChange and updateWorkloadToMatchJob for a suspended job without quota.
        let sets = pod_sets(job);
        let same_sets = counts(&sets)
            == counts(
                wl["spec"]["podSets"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
            );
        if wl["spec"]["queueName"] != json!(queue) || !same_sets {
            let q = queue.to_string();
            let _ = sh.store.modify("workloads", ns, &wname, move |w| {
                w["spec"]["queueName"] = json!(q);
                if !same_sets {
                    w["spec"]["podSets"] = json!(sets);
                }
                true
            });
            if !same_sets {
                event(
                    sh,
                    job,
                    "TFJob",
                    "UpdatedWorkload",
                    &format!("Updated not matching Workload for suspended job: {ns}/{wname}"),
                );
            }
            return;
        }
    }
    if evicted && reserved {
        let msg = condition(wl, "Evicted")
            .and_then(|c| c["message"].as_str())
            .unwrap_or("")
            .to_string();
        let reason = condition(wl, "Evicted")
            .and_then(|c| c["reason"].as_str())
            .unwrap_or("")
            .to_string();
        if !suspended(job) {
            if set_suspend(sh, job, true, Some(wl)) {
                event(sh, job, "TFJob", "Stopped", &msg);
            }
            return;
        }
        if active(job) {
            return;
        }
        // Step 6: the job has stopped; the reservation goes and the Workload queues again.
        let gate = sh
            .scenario
            .kueue
            .as_ref()
            .is_some_and(|k| k.unadmitted_workloads_observability);
        write_status(sh, wl, |st, g| {
            if let Some(m) = st.as_object_mut() {
                m.remove("admission");
            }
            set_condition(
                st,
                "QuotaReserved",
                "False",
                if gate { "PendingEvaluation" } else { "Pending" },
                &msg,
                g,
            );
            set_condition(
                st,
                "Admitted",
                "False",
                "NoReservation",
                "The workload has no reservation",
                g,
            );
            let requeued = if reason == "Preempted" || reason == "NodeFailures" {
                "True"
            } else {
                "False"
            };
            set_condition(st, "Requeued", requeued, &reason, &msg, g);
            true
        });
        return;
    }
    if !admitted && !suspended(job) {
        // Step 7: "Running job is not admitted by a cluster queue, suspending".
        if set_suspend(sh, job, true, Some(wl)) {
            event(sh, job, "TFJob", "Stopped", "Not admitted by cluster queue");
        }
        return;
    }
    if admitted {
        let running = job["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Running" && c["status"] == "True");
        write_status(sh, wl, |st, g| {
            if running {
                set_condition(
                    st,
                    "PodsReady",
                    "True",
                    "Started",
                    "All pods reached readiness and the workload is running",
                    g,
                )
            } else {
                set_condition(
                    st,
                    "PodsReady",
                    "False",
                    "WaitForStart",
                    "Not all pods are ready or succeeded",
                    g,
                )
            }
        });
    }
}

fn counts(sets: &[Value]) -> Vec<(String, i64)> {
    sets.iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or("").to_string(),
                p["count"].as_i64().unwrap_or(1),
            )
        })
        .collect()
}

/// `startJob` for every admitted Workload whose job is suspended (just admitted, or
/// suspended by hand: Kueue starts it again, a Kueue-managed job cannot be paused that way).
pub(super) fn start_admitted(sh: &Shared) {
    for wl in sh.store.list("workloads", None).0 {
        if !(is_true(&wl, "QuotaReserved") && is_true(&wl, "Admitted"))
            || is_true(&wl, "Evicted")
            || is_true(&wl, "Finished")
        {
            continue;
        }
        let Some(job) = job_of(sh, &wl) else {
            continue;
        };
        if !suspended(&job) || finished_condition(&job).is_some() {
            continue;
        }
        start(sh, &job, &wl);
    }
}

/// Unsuspends the job, merging each admitted pod set's info into its replica template
/// (`RunWithPodSetsInfo`, `podset.Merge`): podset and queue labels, the workload
/// annotation, the flavors' nodeLabels into nodeSelector and their tolerations appended.
/// A nodeSelector key already set to another value is a permanent conflict (`podset.go`
/// `BadPodSetsUpdateError` around `pkg/util/maps` `HaveConflict`'s text): the Workload is
/// Finished with reason FailedToStart.
fn start(sh: &Shared, job: &Value, wl: &Value) {
    let (ns, name) = (
        meta(job, "namespace").to_string(),
        meta(job, "name").to_string(),
    );
    let cq = wl["status"]["admission"]["clusterQueue"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let lq = wl["spec"]["queueName"].as_str().unwrap_or("").to_string();
    let wname = meta(wl, "name").to_string();
    let mut infos: BTreeMap<String, (BTreeMap<String, String>, Vec<Value>)> = BTreeMap::new();
    for a in wl["status"]["admission"]["podSetAssignments"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let mut labels = BTreeMap::new();
        let mut tols = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for f in a["flavors"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(_, f)| f.as_str())
        {
            if !seen.insert(f.to_string()) {
                continue;
            }
            if let Some(rf) = sh.store.get("resourceflavors", "", f) {
                for (k, v) in rf["spec"]["nodeLabels"].as_object().into_iter().flatten() {
                    labels.insert(k.clone(), v.as_str().unwrap_or("").to_string());
                }
                tols.extend(
                    rf["spec"]["tolerations"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                );
            }
        }
        infos.insert(a["name"].as_str().unwrap_or("").to_string(), (labels, tols));
    }
    let mut conflict: Option<String> = None;
    let mut next = job.clone();
    for rt in ORDERED_REPLICA_TYPES {
        let Some((labels, tols)) = infos.get(&rt.to_lowercase()) else {
            continue;
        };
        let t = &mut next["spec"]["tfReplicaSpecs"][rt]["template"];
        if !t.is_object() {
            continue;
        }
        t["metadata"]["labels"]["kueue.x-k8s.io/podset"] = json!(rt.to_lowercase());
        t["metadata"]["labels"]["kueue.x-k8s.io/local-queue-name"] = json!(lq);
        if is_dns1123_label(&cq) {
            t["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"] = json!(cq);
        }
        t["metadata"]["annotations"]["kueue.x-k8s.io/workload"] = json!(wname);
        for (k, v) in labels {
            match t["spec"]["nodeSelector"][k].as_str() {
                Some(cur) if cur != v => {
                    conflict.get_or_insert(format!(
                        "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key={k}, value1={cur}, value2={v}"
                    ));
                }
                _ => t["spec"]["nodeSelector"][k] = json!(v),
            }
        }
        if !tols.is_empty() {
            if !t["spec"]["tolerations"].is_array() {
                t["spec"]["tolerations"] = json!([]);
            }
            let list = t["spec"]["tolerations"].as_array_mut().unwrap();
            for tol in tols {
                if !list.contains(tol) {
                    list.push(tol.clone());
                }
            }
        }
    }
    if let Some(msg) = conflict {
        write_status(sh, wl, |st, g| {
            set_condition(st, "Finished", "True", "FailedToStart", &msg, g)
        });
        return;
    }
    next["spec"]["runPolicy"]["suspend"] = json!(false);
    let spec = next["spec"].clone();
    let written = sh.store.modify("tfjobs", &ns, &name, move |j| {
        j["spec"] = spec.clone();
        true
    });
    if written.is_some() {
        event(
            sh,
            job,
            "TFJob",
            "Started",
            &format!("Admitted by clusterQueue {cq}"),
        );
    }
}

fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}
