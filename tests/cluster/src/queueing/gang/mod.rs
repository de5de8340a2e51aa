//! Gang schedulers for the operator's PodGroups: a Volcano v1.15 stand-in (`volcano.rs`) and a
//! scheduler-plugins v0.34 coscheduling stand-in (`coscheduling.rs`). Each pass recomputes from
//! the store after a burst of changes to PodGroups, Queues, pods or nodes. Only one PodGroup
//! kind is installed at a time (the store keys objects by plural, and both are `podgroups`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::GangScheduler;
use crate::controller::{Changes, Controller};
use crate::state::Shared;

mod coscheduling;
mod volcano;

/// Installs the PodGroup CRD (and Volcano's Queue CRD with the `default` and `root` queues
/// the Volcano scheduler creates, `newDefaultAndRootQueue`).
pub(crate) fn install(sh: &Shared) {
    let Some(g) = sh.scenario.gang_scheduler else {
        return;
    };
    let crds = match g {
        GangScheduler::Volcano => super::crds::volcano(),
        GangScheduler::SchedulerPlugins => super::crds::coscheduling(),
    };
    for crd in crds {
        let _ = sh.store.create(
            "customresourcedefinitions",
            "",
            crate::crd::with_established_status(crd),
        );
    }
    if g == GangScheduler::Volcano {
        for (name, parent) in [("root", None), ("default", Some("root"))] {
            // With the CRD's defaults, as the API server stores them.
            let mut spec = json!({"reclaimable": true, "weight": 1, "dequeueStrategy": "traverse"});
            if let Some(p) = parent {
                spec["parent"] = json!(p);
            }
            let _ = sh.store.create(
                "queues",
                "",
                json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec, "status": {"state": "Open"}}),
            );
        }
    }
}

/// Runs the scenario's gang scheduler until the cluster stops.
pub(crate) async fn run(sh: Arc<Shared>) {
    let Some(g) = sh.scenario.gang_scheduler else {
        return;
    };
    if !sh.scenario.gang_scheduler_running {
        return;
    }
    let changes = Changes::subscribe(&sh);
    let delay = Duration::from_millis(sh.scenario.timing.schedule_ms);
    pass(&sh, g);
    changes.run(delay, Loop { sh, g, due: false }).await;
}

/// The gang scheduler in the shared controller loop: a change to a kind it watches makes one
/// whole pass (a Volcano session, a coscheduling cycle) due.
struct Loop {
    sh: Arc<Shared>,
    g: GangScheduler,
    due: bool,
}

impl Controller for Loop {
    fn note(&mut self, ev: &crate::store::StoreEvent) {
        // An unwatched change (the events a session records among them) makes nothing due: a
        // pass on every change would make every recorded event start another session.
        if matches!(
            ev.resource.as_str(),
            "podgroups" | "queues" | "pods" | "nodes"
        ) {
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
        pass(&self.sh, self.g);
    }
}

fn pass(sh: &Arc<Shared>, g: GangScheduler) {
    match g {
        GangScheduler::Volcano => volcano::session(sh),
        GangScheduler::SchedulerPlugins => coscheduling::cycle(sh),
    }
}

/// Non-terminal pods bound to nodes: what each node has given out (`scheduler::Res`).
pub(super) fn node_usage(sh: &Shared) -> std::collections::HashMap<String, crate::scheduler::Res> {
    let mut usage: std::collections::HashMap<String, crate::scheduler::Res> = Default::default();
    for p in sh.store.list("pods", None).0 {
        let Some(node) = p["spec"]["nodeName"].as_str() else {
            continue;
        };
        if matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")) {
            continue;
        }
        let u = usage.entry(node.to_string()).or_default();
        for (k, v) in crate::scheduler::pod_requests(&p) {
            *u.entry(k).or_default() += v;
        }
    }
    usage
}

/// Binds a pod as a scheduler does (nodeName, PodScheduled=True, Scheduled event) and hands
/// it to the kubelet.
pub(super) fn bind(sh: &Arc<Shared>, pod: &Value, node: &str, scheduler: &str) {
    let (ns, name) = (
        pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        pod["metadata"]["name"].as_str().unwrap_or("").to_string(),
    );
    let uid = pod["metadata"]["uid"].clone();
    let n2 = node.to_string();
    let now = crate::util::now_rfc3339();
    let bound = sh.store.modify("pods", &ns, &name, move |p| {
        if p["metadata"]["uid"] != uid || p["spec"]["nodeName"].is_string() {
            return false;
        }
        p["spec"]["nodeName"] = json!(n2);
        crate::kubelet::set_pod_condition(p, "PodScheduled", "True", None, None, &now);
        true
    });
    if let Some(b) = bound
        && b["spec"]["nodeName"] == json!(node)
    {
        sh.record_event(
            &b,
            "Pod",
            "Normal",
            "Scheduled",
            &format!("Successfully assigned {ns}/{name} to {node}"),
            scheduler,
        );
        crate::kubelet::start_pod(sh.clone(), b);
    }
}

/// Marks a pod unschedulable (PodScheduled=False/Unschedulable) with a FailedScheduling event.
pub(super) fn unschedulable(sh: &Shared, pod: &Value, msg: &str, scheduler: &str) {
    let (ns, name) = (
        pod["metadata"]["namespace"].as_str().unwrap_or(""),
        pod["metadata"]["name"].as_str().unwrap_or(""),
    );
    let m = msg.to_string();
    let now = crate::util::now_rfc3339();
    let changed = sh.store.modify("pods", ns, name, move |p| {
        let same = p["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled"))
            .is_some_and(|c| c["message"] == json!(m));
        if same || p["spec"]["nodeName"].is_string() {
            return false;
        }
        crate::kubelet::set_pod_condition(
            p,
            "PodScheduled",
            "False",
            Some("Unschedulable"),
            Some(&m),
            &now,
        );
        true
    });
    if changed
        .is_some_and(|p| p["metadata"]["resourceVersion"] != pod["metadata"]["resourceVersion"])
    {
        sh.record_event(pod, "Pod", "Warning", "FailedScheduling", msg, scheduler);
    }
}

/// The pods a gang scheduler owns: schedulerName `name`, unbound or bound, of `group`.
pub(super) fn group_pods(
    sh: &Shared,
    ns: &str,
    scheduler: &str,
    in_group: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    sh.store
        .list("pods", Some(ns))
        .0
        .into_iter()
        .filter(|p| p["spec"]["schedulerName"] == json!(scheduler) && in_group(p))
        .collect()
}
