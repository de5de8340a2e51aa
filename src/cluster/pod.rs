//! Pod facts, one owner each: a pod's name, phase, replica (type and index, from the operator's
//! labels), whether it has started, its containers' restarts, and whether the scheduler refused it (`PodScheduled=False`,
//! reason `Unschedulable`). [`PodFacts`] answers them for the slim [`Pod`] every follower keeps
//! and for the full `k8s_openapi` Pod `diagnose` and `top` read, so no command parses a pod's
//! status on its own. And the one way to wait until a set of pods is gone ([`pods_gone`]),
//! which `delete --wait` and `submit --replace` share.
//!
//! Upstream: `PodScheduled`, `Unschedulable` and `SchedulingGated` are `v1.PodScheduled`,
//! `v1.PodReasonUnschedulable` and `v1.PodReasonSchedulingGated` (kubernetes
//! `staging/src/k8s.io/api/core/v1/types.go`); kube-scheduler writes the condition with
//! `Status: False` in `handleSchedulingFailure` (`pkg/scheduler/schedule_one.go`); the replica labels are the training-operator's
//! (`training.kubeflow.org/replica-type`, `…/replica-index`).

use std::collections::HashSet;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde::{Deserialize, Serialize};

use crate::model::{self, ReplicaType};

/// A pod as the followers (`wait`, `logs -f`, `delete`) keep it: metadata and status, without
/// the spec. The operator puts the whole cluster's addresses into every pod's TF_CONFIG, so at
/// 2,000 workers each spec is ~90 KB and keeping full pods would cost ~180 MB; the spec is
/// skipped while deserializing, and managedFields are dropped before a pod is stored.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Pod {
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PodStatus>,
}

impl k8s_openapi::Resource for Pod {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for Pod {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Splits the kubelet's `timestamps=true` prefix (RFC3339NanoFixed then a space) off a log line.
pub fn split_timestamp(line: &str) -> Option<(k8s_openapi::jiff::Timestamp, &str)> {
    let (ts, rest) = line.split_once(' ')?;
    Some((ts.parse().ok()?, rest))
}

/// The kubelet's waiting reasons that keep a container from running until something changes
/// (an image, a Secret, the process itself), as opposed to `ContainerCreating`.
pub const STUCK_WAITING_REASONS: [&str; 7] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
];

/// The facts of a pod, for either shape of it.
pub trait PodFacts {
    fn meta(&self) -> &ObjectMeta;
    fn pod_status(&self) -> Option<&PodStatus>;

    /// The pod's name (empty when unnamed).
    fn pod_name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or_default()
    }

    /// The phase, `Pending` until the kubelet reports one.
    fn pod_phase(&self) -> &str {
        self.pod_status()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending")
    }

    /// The replica type, from the operator's label, in canonical case (`Worker`).
    fn replica_type(&self) -> Option<String> {
        let label = self
            .meta()
            .labels
            .as_ref()?
            .get(model::LABEL_REPLICA_TYPE)?;
        Some(canonical_replica_type(label))
    }

    /// The replica index, from the operator's label, as written.
    fn replica_index(&self) -> Option<&str> {
        self.meta()
            .labels
            .as_ref()?
            .get(model::LABEL_REPLICA_INDEX)
            .map(String::as_str)
    }

    /// Running, not being deleted, and every container started: a container that restarts is
    /// waiting or terminated for a while, and a pod with a deletionTimestamp counts as failed for
    /// the operator (training-operator `pkg/core/status.go`).
    fn started(&self) -> bool {
        let Some(status) = self.pod_status() else {
            return false;
        };
        let containers = status.container_statuses.as_deref().unwrap_or_default();
        self.meta().deletion_timestamp.is_none()
            && !self.node_stopped_reporting()
            && self.pod_phase() == "Running"
            && !containers.is_empty()
            && containers.iter().all(|cs| {
                cs.started != Some(false) && cs.state.as_ref().is_some_and(|s| s.running.is_some())
            })
    }

    /// Its node stopped reporting: the node lifecycle controller turns `Ready` False on every
    /// pod of a NotReady node and leaves the rest of the status, the containers' last state
    /// included (kubernetes `pkg/controller/util/node/controller_utils.go` `MarkPodsNotReady`).
    /// The kubelet never writes `Ready` False with `ContainersReady` True but for readiness
    /// gates (`pkg/kubelet/status/generate.go` `GeneratePodReadyCondition`), so that pair,
    /// without the gates' reason, is the mark.
    fn node_stopped_reporting(&self) -> bool {
        let conds = self.pod_status().and_then(|s| s.conditions.as_deref());
        let cond = |t: &str| conds.into_iter().flatten().find(|c| c.type_ == t);
        cond("Ready").is_some_and(|c| {
            c.status == "False" && c.reason.as_deref() != Some("ReadinessGatesNotReady")
        }) && cond("ContainersReady").is_some_and(|c| c.status == "True")
    }

    /// Restarts of the pod's containers, summed (init containers not counted).
    fn restarts(&self) -> i32 {
        self.pod_status()
            .and_then(|s| s.container_statuses.as_ref())
            .map(|c| c.iter().map(|cs| cs.restart_count).sum())
            .unwrap_or(0)
    }

    /// The `PodScheduled` condition, whatever its status: none until the scheduler (or a
    /// scheduling gate) has judged the pod.
    fn pod_scheduled(&self) -> Option<&PodCondition> {
        self.pod_status().and_then(pod_scheduled)
    }

    /// The `PodScheduled=False` condition, whatever its reason (`Unschedulable`, a gate, …).
    fn not_scheduled(&self) -> Option<&PodCondition> {
        self.pod_status().and_then(not_scheduled)
    }

    /// The scheduler found no node for it (`PodScheduled=False`, reason `Unschedulable`).
    fn unschedulable(&self) -> Option<&PodCondition> {
        self.pod_status().and_then(unschedulable)
    }
}

impl PodFacts for Pod {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn pod_status(&self) -> Option<&PodStatus> {
        self.status.as_ref()
    }
}

impl PodFacts for k8s_openapi::api::core::v1::Pod {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn pod_status(&self) -> Option<&PodStatus> {
        self.status.as_ref()
    }
}

/// What a pod of a node that stopped reporting is ([`PodFacts::node_stopped_reporting`]).
pub const NODE_STOPPED: &str = "not Ready: its node stopped reporting (kubectl get nodes); its containers' state is the last the kubelet sent";

/// `Terminating (DeletionByTaintManager: Taint manager: deleting due to NoExecute taint …)`: a
/// pod being deleted, with why when its `DisruptionTarget` condition says (kubectl shows
/// `Terminating`, or `Unknown` when the pod's node is unreachable).
pub fn terminating<P: PodFacts>(pod: &P) -> String {
    let why = pod
        .pod_status()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
        .map(|c| match (&c.reason, &c.message) {
            (Some(r), Some(m)) => format!(" ({r}: {m})"),
            (Some(r), None) => format!(" ({r})"),
            (None, Some(m)) => format!(" ({m})"),
            (None, None) => String::new(),
        })
        .unwrap_or_default();
    format!("Terminating{why}")
}

/// A replica type as the operator names it (`ps` → `PS`); unknown types as given.
pub fn canonical_replica_type(rtype: &str) -> String {
    ReplicaType::from_any_case(rtype)
        .map(|t| t.as_str().to_string())
        .unwrap_or_else(|| rtype.to_string())
}

/// The `PodScheduled` condition of a status, whatever its status.
pub fn pod_scheduled(status: &PodStatus) -> Option<&PodCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled")
}

/// The `PodScheduled=False` condition of a status.
pub fn not_scheduled(status: &PodStatus) -> Option<&PodCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
}

/// The condition saying the scheduler found no node (`PodScheduled=False/Unschedulable`).
pub fn unschedulable(status: &PodStatus) -> Option<&PodCondition> {
    not_scheduled(status).filter(|c| c.reason.as_deref() == Some("Unschedulable"))
}

/// Whether any of these pods has been found Unschedulable.
/// A cause's first sentence, for a line of its own: the scheduler's `0/N nodes are available:
/// REASONS.` as `0/N nodes: REASONS`, the kubelet's eviction without its thresholds. Pure.
pub fn first_sentence(message: &str) -> String {
    let message = message.trim();
    message
        .split_once(". ")
        .map_or(message, |(first, _)| first)
        .trim_end_matches('.')
        .replacen(" nodes are available: ", " nodes: ", 1)
}

/// The widest a cause may be in a table cell.
pub const CELL_WIDTH: usize = 80;

/// An event's message as a table cell shows it (issue 61 item 11): its first sentence, the
/// scheduler's `0/N nodes are available: REASONS.` (kube-scheduler's `FitError`, whose
/// `preemption: …` sentence follows) as `0/N nodes: REASONS`, at most [`CELL_WIDTH`]
/// characters. `diagnose` keeps the whole message. Pure.
pub fn brief(message: &str) -> String {
    let first = first_sentence(message);
    if first.chars().count() <= CELL_WIDTH {
        return first;
    }
    let mut cut: String = first.chars().take(CELL_WIDTH - 1).collect();
    cut.push('…');
    cut
}

pub fn any_unschedulable<'a, P: PodFacts + 'a>(pods: impl IntoIterator<Item = &'a P>) -> bool {
    pods.into_iter().any(|p| p.unschedulable().is_some())
}

/// Returns once no pod matching `selector` that `counts` accepts is left: one watch, whatever
/// the number of pods. `progress` hears each new count once the first list is in. A failing
/// watch is retried with backoff; the caller bounds the whole with its timeout.
pub async fn pods_gone(
    pods: Api<Pod>,
    selector: &str,
    counts: impl Fn(&Pod) -> bool,
    mut progress: impl FnMut(usize) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    let mut stream = watcher(pods, watcher::Config::default().labels(selector))
        .default_backoff()
        .boxed();
    let mut present: HashSet<String> = HashSet::new();
    let mut init: Option<HashSet<String>> = None;
    let mut listed = false;
    let mut last_said = usize::MAX;
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(watcher::Event::Init) => init = Some(HashSet::new()),
            Ok(watcher::Event::InitApply(p)) => {
                if let Some(s) = init.as_mut()
                    && counts(&p)
                {
                    s.insert(p.name_any());
                }
            }
            Ok(watcher::Event::InitDone) => {
                present = init.take().unwrap_or_default();
                listed = true;
            }
            Ok(watcher::Event::Apply(p)) => {
                if counts(&p) {
                    present.insert(p.name_any());
                }
            }
            Ok(watcher::Event::Delete(p)) => {
                present.remove(&p.name_any());
            }
            Err(e) => tracing::debug!("pod watch: {e}"),
        }
        if listed {
            if present.is_empty() {
                return Ok(());
            }
            if present.len() != last_said {
                progress(present.len())?;
                last_said = present.len();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cell_keeps_the_first_sentence_of_a_cause() {
        use super::brief;
        assert_eq!(
            brief(
                "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
            ),
            "0/3 nodes: 3 Insufficient nvidia.com/gpu"
        );
        assert_eq!(
            brief(
                "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."
            ),
            "The node was low on resource: memory"
        );
        let long = brief(&format!(
            "0/9 nodes are available: {}.",
            "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, ".repeat(3)
        ));
        assert_eq!(long.chars().count(), super::CELL_WIDTH);
        assert!(
            long.ends_with('…') && long.starts_with("0/9 nodes: 1 node(s)"),
            "{long}"
        );
    }

    use super::*;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_the_schedulers_refusal_is_unschedulable() {
        let refused = pod(serde_json::json!({
            "metadata": {"name": "tf-worker-1", "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1"}},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
                "status": "False", "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}]}
        }));
        assert_eq!(refused.pod_name(), "tf-worker-1");
        assert_eq!(refused.replica_type().as_deref(), Some("Worker"));
        assert_eq!(refused.replica_index(), Some("1"));
        assert!(refused.unschedulable().is_some());
        assert!(!refused.started());
        assert!(any_unschedulable([&refused]));

        // Not scheduled for another reason (a scheduling gate): not the scheduler's refusal.
        let gated = pod(serde_json::json!({
            "metadata": {"name": "g"},
            "status": {"conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "SchedulingGated"}]}
        }));
        assert!(gated.not_scheduled().is_some());
        assert!(gated.unschedulable().is_none());
        assert_eq!(gated.pod_phase(), "Pending");
        assert!(!any_unschedulable([&gated]));
    }

    #[test]
    fn scheduled_and_restarts_read_the_status() {
        // No PodScheduled yet: no scheduler (or gate) has judged the pod.
        let fresh = pod(serde_json::json!({"metadata": {"name": "f"}}));
        assert!(fresh.pod_scheduled().is_none());
        assert_eq!(fresh.restarts(), 0);
        let bound = pod(serde_json::json!({
            "metadata": {"name": "b"},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"},
                               {"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [
                    {"name": "tensorflow", "image": "i", "imageID": "", "ready": true,
                     "restartCount": 2},
                    {"name": "sidecar", "image": "i", "imageID": "", "ready": true,
                     "restartCount": 1}]}
        }));
        assert_eq!(
            bound.pod_scheduled().map(|c| c.status.as_str()),
            Some("True")
        );
        assert!(bound.not_scheduled().is_none());
        assert_eq!(bound.restarts(), 3);
    }

    #[test]
    fn started_needs_every_container_running_and_no_deletion() {
        let running = serde_json::json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "tensorflow", "image": "i", "imageID": "", "ready": true,
                 "restartCount": 0, "started": true, "state": {"running": {}}}]}
        });
        assert!(pod(running.clone()).started());
        let mut deleting = running.clone();
        deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        assert!(!pod(deleting).started());
        let mut waiting = running.clone();
        waiting["status"]["containerStatuses"][0]["state"] =
            serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}});
        assert!(!pod(waiting).started());
        // The node lifecycle controller's mark: Ready False, ContainersReady still True.
        let mut lost = running.clone();
        lost["status"]["conditions"] = serde_json::json!([
            {"type": "ContainersReady", "status": "True"},
            {"type": "Ready", "status": "False"}]);
        assert!(pod(lost.clone()).node_stopped_reporting());
        assert!(!pod(lost).started());
        // A readiness gate not met is the kubelet's own verdict, not a lost node.
        let mut gated = running;
        gated["status"]["conditions"] = serde_json::json!([
            {"type": "ContainersReady", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "ReadinessGatesNotReady"}]);
        assert!(!pod(gated.clone()).node_stopped_reporting());
        assert!(pod(gated).started());
    }
}
