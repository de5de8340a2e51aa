//! Will it run? A pure model of kube-scheduler's filters and of the admission plugins that
//! refuse pods (LimitRanger, ResourceQuota), applied to the pods the training-operator will
//! create for a TFJob, over a [`ClusterState`] of the cluster. No I/O here except [`collect`].
//! [`live`] asks the same model about a job whose pods already exist and are Unschedulable.
//!
//! Upstream behaviour modelled (kubernetes/kubernetes):
//! - `pkg/scheduler/framework/plugins/noderesources/fit.go` (`fitsRequest`: pod count, then
//!   cpu/memory/ephemeral-storage/extended, "Insufficient X", "Too many pods") and
//!   `staging/src/k8s.io/component-helpers/resource/helpers.go` (`PodRequests`: sum of app
//!   containers, max with each init container, plus overhead);
//! - `pkg/apis/core/v1/defaults.go` (`SetDefaults_Pod`: a limit stands in for a missing request);
//! - `plugins/nodeunschedulable`, `plugins/nodename`, `plugins/tainttoleration`
//!   (`FindMatchingUntoleratedTaint` over NoSchedule/NoExecute), `plugins/nodeaffinity` with
//!   `component-helpers/scheduling/corev1/nodeaffinity` (In, NotIn, Exists, DoesNotExist, Gt, Lt);
//! - the default filter order (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
//!   NodeResourcesFit): a node is rejected by the first filter that fails;
//! - `plugin/pkg/admission/limitranger/admission.go` (defaults, then min/max per Container);
//! - `plugin/pkg/admission/resourcequota` + `pkg/quota/v1/evaluator/core/pods.go` (requests.*,
//!   limits.*, pods, count/pods; "must specify" for a constrained resource a container leaves out).
//!
//! # The report (`-o json`), a stable shape
//!
//! ```json
//! {
//!   "placement": {
//!     "verdict": "fits" | "waits" | "never" | "unknown",
//!     "reason": "one sentence for the whole job",
//!     "pods": [{"name": "job-worker-0", "replicaType": "Worker", "index": 0,
//!               "node": "node-a" | null, "verdict": "fits" | "waits" | "never" | "unknown",
//!               "reason": "…"}]
//!   },
//!   "quota": [{"name": "QUOTA", "resource": "requests.nvidia.com/gpu", "verdict": "…",
//!              "message": "exceeded quota: …"}],
//!   "references": [{"kind": "Secret", "name": "…", "severity": "error" | "warning",
//!                   "message": "…"}],
//!   "readiness": []
//! }
//! ```
//! - `fits`: every replica can be bound now, all at once.
//! - `waits`: they would all fit if the non-terminal pods already bound finished; the reason names
//!   the holders (e.g. "2 nvidia.com/gpu held by 3 pods on node-a").
//! - `never`: a replica fits on no node even when empty, or the whole job cannot fit at once, or
//!   admission refuses a pod (LimitRange, or a quota smaller than the job itself).
//! - `unknown`: nodes or pods could not be listed; the reason names the missing permission.
//!
//! Fields are only ever added, never renamed. `readiness` is filled by the caller.

mod admission;
pub mod autoscaler;
mod collect;
mod filters;
pub mod gang;
pub mod kueue;
pub mod live;
mod pods;
pub mod queue_state;
pub mod refs;
pub mod scope;
mod verdict;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota, Taint};
use serde::{Deserialize, Serialize};

pub use admission::{check_quotas, limit_range_violations};
pub use collect::collect;
pub use filters::{Res, effective_requests, fit_error_message, node_reject_reason};
pub use pods::{JobPod, RuntimeClassInfo, admitted_pods, apply_limit_ranges, job_pods};
// The one quantity parser is `crate::model::quantity`; re-exported for placement's callers.
pub use crate::model::quantity::{format_quantity, parse_quantity};
pub use refs::check_references;
pub use verdict::place;

/// What the whole job (or one pod) can expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Fits,
    Waits,
    Never,
    Unknown,
}

impl Verdict {
    /// The word used in the JSON and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Fits => "fits",
            Verdict::Waits => "waits",
            Verdict::Never => "never",
            Verdict::Unknown => "unknown",
        }
    }
}

/// A node as the filters see it (what the collector keeps of a Node object).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// Its `Ready` condition when not True (`Unknown: Kubelet stopped posting node status.`):
    /// kube-scheduler does not read it (only the taints the node lifecycle controller adds for
    /// it), so it changes no verdict, but a pod placed there will not start.
    pub not_ready: Option<String>,
    /// `status.allocatable` in milli-units; `pods` holds the pod count limit × 1000.
    pub allocatable: Res,
}

/// A non-terminal pod bound to a node: only what placement needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoundPod {
    pub namespace: String,
    pub name: String,
    pub node: String,
    /// Effective requests (milli-units), as the scheduler counts them.
    pub requests: Res,
    /// What it belongs to (`TFJob team-b/bert`), to name who holds a resource; empty if unknown.
    pub owner: String,
}

/// What the non-terminal pods bound to one node hold, summed: a cluster's 150,000 pods cost
/// the model one entry per node, not one per pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeUsage {
    /// Pods bound to the node.
    pub pods: usize,
    /// Their effective requests, summed (milli-units).
    pub requests: Res,
    /// Per resource: the sum of the positive requests and how many pods make it (what a
    /// "2 nvidia.com/gpu held by 3 pods on node-a" reason says).
    pub held: BTreeMap<String, (i128, usize)>,
    /// Per extended resource (a GPU, not cpu or memory, which every pod holds): the pods of each
    /// owner holding some, to say whose jobs hold what a job waits for.
    pub holders: BTreeMap<String, BTreeMap<String, usize>>,
}

/// Resources every pod holds some of: naming their holders would name everything.
fn core_resource(r: &str) -> bool {
    matches!(r, "cpu" | "memory" | "pods" | "ephemeral-storage") || r.starts_with("hugepages-")
}

impl NodeUsage {
    /// Adds the sums of another read of the same node.
    fn absorb(&mut self, other: NodeUsage) {
        self.pods += other.pods;
        for (k, v) in other.requests {
            *self.requests.entry(k).or_default() += v;
        }
        for (k, (v, n)) in other.held {
            let h = self.held.entry(k).or_default();
            h.0 += v;
            h.1 += n;
        }
        for (k, by) in other.holders {
            let mine = self.holders.entry(k).or_default();
            for (owner, n) in by {
                *mine.entry(owner).or_default() += n;
            }
        }
    }

    /// Adds (`sign` 1) or takes out (`sign` -1) one pod's requests.
    fn apply(&mut self, requests: &Res, sign: i128, owner: &str) {
        self.pods = self.pods.saturating_add_signed(sign as isize);
        for (k, v) in requests {
            // Looked up before inserting: a cluster's pods name the same few resources.
            match self.requests.get_mut(k) {
                Some(sum) => *sum += sign * v,
                None => {
                    self.requests.insert(k.clone(), sign * v);
                }
            }
            if *v > 0 {
                let h = match self.held.get_mut(k) {
                    Some(h) => h,
                    None => self.held.entry(k.clone()).or_default(),
                };
                h.0 += sign * v;
                h.1 = h.1.saturating_add_signed(sign as isize);
                if !owner.is_empty() && !core_resource(k) {
                    let by = self.holders.entry(k.clone()).or_default();
                    let n = by.entry(owner.to_string()).or_default();
                    *n = n.saturating_add_signed(sign as isize);
                    if *n == 0 {
                        by.remove(owner);
                    }
                }
            }
        }
    }
}

/// The bound pods as placement reads them: usage per node, plus the few pods kept whole so a
/// caller can take them out again (the job's own pods, when the job already exists).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoundPods {
    by_node: BTreeMap<String, NodeUsage>,
    kept: Vec<BoundPod>,
}

impl BoundPods {
    /// Counts `pod` on its node; `keep` also remembers it for [`BoundPods::remove_kept`].
    pub fn add(&mut self, pod: BoundPod, keep: bool) {
        self.add_usage(&pod.node, &pod.requests, &pod.owner);
        if keep {
            self.kept.push(pod);
        }
    }

    /// Counts a pod that is not kept, by its node and effective requests.
    pub fn add_usage(&mut self, node: &str, requests: &Res, owner: &str) {
        match self.by_node.get_mut(node) {
            Some(u) => u.apply(requests, 1, owner),
            None => self
                .by_node
                .entry(node.to_string())
                .or_default()
                .apply(requests, 1, owner),
        }
    }

    /// Takes the kept pods matching `drop` out of the counts. Only kept pods can be removed:
    /// the others were summed as they were read.
    pub fn remove_kept(&mut self, drop: impl Fn(&BoundPod) -> bool) {
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.kept)
            .into_iter()
            .partition(|p| drop(p));
        self.kept = kept;
        for p in gone {
            if let Some(u) = self.by_node.get_mut(&p.node) {
                u.apply(&p.requests, -1, &p.owner);
                if u.pods == 0 {
                    self.by_node.remove(&p.node);
                }
            }
        }
    }

    /// Adds what `other` counted (pods read from other nodes).
    pub fn merge(&mut self, other: BoundPods) {
        for (node, usage) in other.by_node {
            match self.by_node.get_mut(&node) {
                Some(mine) => mine.absorb(usage),
                None => {
                    self.by_node.insert(node, usage);
                }
            }
        }
        self.kept.extend(other.kept);
    }

    /// Node name → what its pods hold.
    pub fn by_node(&self) -> &BTreeMap<String, NodeUsage> {
        &self.by_node
    }
}

impl FromIterator<BoundPod> for BoundPods {
    fn from_iter<I: IntoIterator<Item = BoundPod>>(pods: I) -> Self {
        let mut b = BoundPods::default();
        pods.into_iter().for_each(|p| b.add(p, true));
        b
    }
}

/// A PersistentVolumeClaim's state as far as binding goes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PvcInfo {
    /// `status.phase` (Pending, Bound, Lost).
    pub phase: String,
    /// Its StorageClass binds on first consumer, so Pending is expected.
    pub wait_for_first_consumer: bool,
}

/// Everything the model reads, collected once. `None` for a list means it could not be read
/// (forbidden); the string in `missing_permissions` says which.
#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    pub namespace: String,
    pub nodes: Option<Vec<NodeInfo>>,
    /// The non-terminal pods bound to the nodes that were read: every candidate node
    /// ([`scope`]), or those read before a placement for the whole job was found.
    pub bound_pods: Option<BoundPods>,
    /// Candidate nodes whose pods were not read because a placement was found first: the
    /// model places nothing there.
    pub unread: BTreeSet<String>,
    /// Pods in the job's namespace that count against quota (non-terminal), with their usage.
    pub limit_ranges: Vec<LimitRange>,
    pub quotas: Vec<ResourceQuota>,
    /// PriorityClass names (None: not readable).
    pub priority_classes: Option<BTreeSet<String>>,
    /// RuntimeClasses by name, with what their admission plugin takes (None: not readable).
    pub runtime_classes: Option<BTreeMap<String, RuntimeClassInfo>>,
    pub pvcs: Option<BTreeMap<String, PvcInfo>>,
    /// ConfigMap name → keys (None: not readable).
    pub config_maps: Option<BTreeMap<String, BTreeSet<String>>>,
    /// Secret name → keys, never values (None: not readable).
    pub secrets: Option<BTreeMap<String, BTreeSet<String>>>,
    pub service_accounts: Option<BTreeSet<String>>,
    /// Names of CRDs present (e.g. `podgroups.scheduling.volcano.sh`).
    pub crds: BTreeSet<String>,
    /// The cluster-autoscaler's status ConfigMap shows a running autoscaler with a node group
    /// it may grow ([`autoscaler::judge`]).
    pub autoscaler: bool,
    /// The status ConfigMap exists but rules the autoscaler out: why, for the `never` message.
    pub autoscaler_ruled_out: Option<String>,
    /// Karpenter has a NodePool (`karpenter.sh/v1`): it launches nodes for pending pods.
    pub karpenter: bool,
    /// e.g. "list nodes (cluster-wide)", "list pods (all namespaces)".
    pub missing_permissions: Vec<String>,
}

/// One pod of the job and where it would go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodPlacement {
    pub name: String,
    pub replica_type: String,
    pub index: i64,
    pub node: Option<String>,
    pub verdict: Verdict,
    pub reason: String,
}

/// The job's placement verdict and each pod's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    pub verdict: Verdict,
    pub reason: String,
    pub pods: Vec<PodPlacement>,
}

/// A ResourceQuota (or LimitRange) finding: pods would be refused at creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaFinding {
    /// The ResourceQuota or LimitRange name.
    pub name: String,
    /// The resource concerned (`requests.nvidia.com/gpu`, `pods`, `limits.memory`…).
    pub resource: String,
    /// `waits` when freeing what is used would make room, `never` when the job alone exceeds it.
    pub verdict: Verdict,
    /// The API server's own wording (`exceeded quota: …`, `failed quota: …`, `maximum cpu …`).
    pub message: String,
}

/// How bad a reference finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A reference that leaves pods stuck (missing Secret, PVC, PriorityClass…).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceFinding {
    pub kind: String,
    pub name: String,
    pub severity: Severity,
    pub message: String,
}

/// One readiness finding as `check` reports it (the `readiness` array of its JSON report, and
/// its text report's first section); the caller turns its readiness checks into these.
#[derive(Debug, Clone, Serialize)]
pub struct ReadinessFinding {
    /// `error` (submit would stop, exit 3) or `warning`.
    pub severity: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The whole pre-flight report; `readiness` is the caller's (kept as free JSON values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Forecast {
    pub placement: Placement,
    pub quota: Vec<QuotaFinding>,
    pub references: Vec<ReferenceFinding>,
    pub readiness: Vec<serde_json::Value>,
}

impl Forecast {
    /// The verdict the commands act on: placement combined with quota (a quota the job alone
    /// exceeds is `never`; one that used capacity exceeds is `waits`). References do not change it.
    pub fn verdict(&self) -> Verdict {
        self.placement.verdict
    }

    /// Whether an autoscaler may add nodes (then `never` is only a warning).
    pub fn autoscaled(snapshot: &ClusterState) -> bool {
        Self::autoscaler(snapshot).is_some()
    }

    /// Which autoscaler may add nodes, in words, as found.
    pub fn autoscaler(snapshot: &ClusterState) -> Option<&'static str> {
        if snapshot.autoscaler {
            Some("the cluster-autoscaler is present (kube-system/cluster-autoscaler-status)")
        } else if snapshot.karpenter {
            Some("Karpenter is present (a karpenter.sh/v1 NodePool)")
        } else {
            None
        }
    }
}

/// The pre-flight: placement, quota and references for `job` over `snapshot`. Pure.
pub fn check(snapshot: &ClusterState, job: &crate::model::TFJob) -> Forecast {
    let pods = admitted_pods(
        job,
        &snapshot.limit_ranges,
        snapshot.runtime_classes.as_ref(),
    );
    let mut quota = limit_range_violations(&pods, &snapshot.limit_ranges);
    quota.extend(check_quotas(&pods, &snapshot.quotas));
    let mut placement = place(snapshot, &pods);
    // Admission decides before the scheduler sees anything: a refused pod never appears.
    if let Some(worst) = quota.iter().map(|q| q.verdict).max()
        && (worst > placement.verdict || worst == Verdict::Never)
        && placement.verdict != Verdict::Never
    {
        placement.verdict = worst;
        placement.reason = quota
            .iter()
            .find(|q| q.verdict == worst)
            .map(|q| format!("the API server would refuse pod creation: {}", q.message))
            .unwrap_or_default();
    }
    let references = check_references(snapshot, job, &pods);
    Forecast {
        placement,
        quota,
        references,
        readiness: vec![],
    }
}
