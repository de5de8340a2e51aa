//! Gang scheduling in the training-operator v1.9.4 (`--gang-scheduler-name`): the PodGroup
//! `SyncPodGroup` builds on every reconcile (`pkg/controller.v1/common/scheduling.go`,
//! minResources by `CalcPGMinResources` in `common/util.go`), the Volcano delay
//! (`pkg/controller.v1/control/podgroup_control.go` `DelayPodCreationDueToPodGroup`: no
//! pods while the group's phase is empty or Pending), the pod decoration of
//! `common/pod.go`, and the PodGroup deleted on finish and suspend (`common/job.go`).

use super::*;
use crate::queueing::GangScheduler;
use crate::queueing::kueue::podsets::quantity;

/// Volcano's group annotation on pods (`KubeGroupNameAnnotationKey`).
pub(super) const VOLCANO_GROUP_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// Volcano's task annotation (`volcano.sh/task-spec`).
const VOLCANO_TASK_ANNOTATION: &str = "volcano.sh/task-spec";
/// scheduler-plugins' pod label (`PodGroupLabel`).
pub(super) const COSCHED_LABEL: &str = "scheduling.x-k8s.io/pod-group";

pub(super) fn mode(sh: &Shared) -> Option<GangScheduler> {
    sh.scenario.gang_scheduler
}

fn priority_value(sh: &Shared, class: Option<&str>) -> i64 {
    class
        .and_then(|c| sh.store.get("priorityclasses", "", c))
        .and_then(|pc| pc["value"].as_i64())
        .unwrap_or(0)
}

/// `CalcPGMinResources`: replica types by their template's PriorityClass value, highest first
/// (ties: upstream iterates a Go map, here by name), pods counted until minMember, each pod's
/// container requests (its limits when it has no requests at all); init containers ignored.
fn min_resources(sh: &Shared, specs: &BTreeMap<String, Value>, min_member: i64) -> Value {
    let mut order: Vec<(&String, &Value)> = specs.iter().collect();
    order.sort_by_key(|(_, rs)| {
        -priority_value(sh, rs["template"]["spec"]["priorityClassName"].as_str())
    });
    let mut total: BTreeMap<String, i128> = BTreeMap::new();
    let mut counted = 0;
    'outer: for (_, rs) in order {
        for _ in 0..replicas(rs) {
            if counted >= min_member {
                break 'outer;
            }
            counted += 1;
            for c in rs["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let res = &c["resources"];
                let from = if res["requests"].as_object().is_some_and(|m| !m.is_empty()) {
                    &res["requests"]
                } else {
                    &res["limits"]
                };
                for (k, q) in from.as_object().into_iter().flatten() {
                    if let Some(v) = crate::util::value_quantity_milli(q) {
                        *total.entry(k.clone()).or_default() += v;
                    }
                }
            }
        }
    }
    let m: serde_json::Map<String, Value> = total
        .into_iter()
        .map(|(k, v)| {
            let q = quantity(&k, v);
            (k, json!(q))
        })
        .collect();
    json!(m)
}

/// The PodGroup the operator wants for the job now.
fn desired(sh: &Shared, job: &Value, specs: &BTreeMap<String, Value>, g: GangScheduler) -> Value {
    let sp = &job["spec"]["runPolicy"]["schedulingPolicy"];
    let total: i64 = specs.values().map(replicas).sum();
    let min_member = sp["minAvailable"].as_i64().unwrap_or(total);
    let min_res = if sp["minResources"].is_object() {
        sp["minResources"].clone()
    } else {
        min_resources(sh, specs, min_member)
    };
    let name = job["metadata"]["name"].clone();
    let mut md = json!({"name": name, "namespace": job["metadata"]["namespace"], "ownerReferences": [owner_ref(job)]});
    if job["metadata"]["annotations"].is_object() {
        md["annotations"] = job["metadata"]["annotations"].clone();
    }
    match g {
        GangScheduler::Volcano => {
            let mut spec = json!({"minMember": min_member, "minResources": min_res,
                "queue": sp["queue"].as_str().filter(|q| !q.is_empty()).unwrap_or("default")});
            if let Some(pc) = sp["priorityClass"].as_str().filter(|p| !p.is_empty()) {
                spec["priorityClassName"] = json!(pc);
            }
            json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": md, "spec": spec})
        }
        GangScheduler::SchedulerPlugins => {
            let mut spec = json!({"minMember": min_member, "minResources": min_res});
            if let Some(t) = sp["scheduleTimeoutSeconds"].as_i64() {
                spec["scheduleTimeoutSeconds"] = json!(t);
            }
            json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": md, "spec": spec})
        }
    }
}

/// Volcano's PodGroup validating webhook (`validate_podgroup.go`): the queue must exist and
/// be Open. A refusal is only logged by the operator.
fn volcano_refuses(sh: &Shared, pg: &Value) -> bool {
    let q = pg["spec"]["queue"].as_str().unwrap_or("default");
    sh.store
        .get("queues", "", q)
        .is_none_or(|q| q["status"]["state"].as_str().is_some_and(|s| s != "Open"))
}

/// `SyncPodGroup`, then whether pod creation waits (Volcano, phase empty or Pending, or no
/// PodGroup at all). Returns true when the reconcile must stop before pods.
pub(super) fn sync(
    sh: &Shared,
    job: &Value,
    specs: &BTreeMap<String, Value>,
    status: &mut Value,
) -> bool {
    let Some(g) = mode(sh) else {
        return false;
    };
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("");
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    let want = desired(sh, job, specs, g);
    let pg = match sh.store.get("podgroups", ns, name) {
        Some(cur) => {
            let mut spec = want["spec"].clone();
            if g == GangScheduler::Volcano {
                // An existing group's queue is kept.
                spec["queue"] = cur["spec"]["queue"].clone();
            }
            sh.store
                .modify("podgroups", ns, name, move |p| {
                    p["spec"] = spec.clone();
                    true
                })
                .or(Some(cur))
        }
        None if g == GangScheduler::Volcano && volcano_refuses(sh, &want) => None,
        None => sh.store.create("podgroups", ns, want).ok(),
    };
    let delay = g == GangScheduler::Volcano
        && pg
            .as_ref()
            .is_none_or(|p| matches!(p["status"]["phase"].as_str().unwrap_or(""), "" | "Pending"));
    if delay || pg.is_none() {
        // Only lastReconcileTime moves (whole seconds, so the write settles).
        status["lastReconcileTime"] = json!(now_rfc3339());
        return true;
    }
    false
}

/// Deletes the job's PodGroup (finished, suspended, past backoff or deadline).
pub(super) fn delete(sh: &Shared, job: &Value) {
    if mode(sh).is_none() {
        return;
    }
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("");
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    if sh.store.get("podgroups", ns, name).is_none() {
        return;
    }
    sh.record_event(
        job,
        "TFJob",
        "Normal",
        "JobTerminated",
        "Job has been terminated. Deleting PodGroup",
        COMPONENT,
    );
    if sh.store.delete("podgroups", ns, name).is_ok() {
        sh.record_event(
            job,
            "TFJob",
            "Normal",
            "SuccessfulDeletePodGroup",
            &format!("Deleted PodGroup: {name}"),
            COMPONENT,
        );
    }
}

/// `createNewPod`'s gang decoration: schedulerName when the template names none (a
/// different one is kept, with a Warning), and the group annotations or label.
pub(super) fn decorate(sh: &Shared, job: &Value, rtype: &str, pod: &mut Value) {
    let Some(g) = mode(sh) else {
        return;
    };
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    match pod["spec"]["schedulerName"].as_str() {
        None | Some("") => pod["spec"]["schedulerName"] = json!(g.scheduler_name()),
        Some(s) if s != g.scheduler_name() => sh.record_event(
            job,
            "TFJob",
            "Warning",
            "SetPodTemplateSchedulerName",
            "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten",
            COMPONENT,
        ),
        Some(_) => {}
    }
    match g {
        GangScheduler::Volcano => {
            if !pod["metadata"]["annotations"].is_object() {
                pod["metadata"]["annotations"] = json!({});
            }
            pod["metadata"]["annotations"][VOLCANO_GROUP_ANNOTATION] = json!(name);
            pod["metadata"]["annotations"][VOLCANO_TASK_ANNOTATION] = json!(rtype.to_lowercase());
        }
        GangScheduler::SchedulerPlugins => {
            pod["metadata"]["labels"][COSCHED_LABEL] = json!(name);
        }
    }
}
