//! The one owner of queue facts: Kueue (is it served, the job's LocalQueue, ClusterQueue,
//! ResourceFlavors and Workload) and gang scheduling (the PodGroup the training-operator makes for
//! the job, Volcano's Queue). Reads only; what they mean is decided by `placement::kueue`,
//! `placement::gang`, `wait` and `diagnose`.
//!
//! A read the user may not make (403) is a [`Fact::Unknown`] with the `kubectl auth can-i` line,
//! never a refusal: queue objects are often cluster-scoped and a namespace user cannot see them.
//!
//! Wire shapes follow the upstream types (only the fields used are kept):
//! - Kueue v0.19 `kueue.x-k8s.io/v1beta2` (`apis/kueue/v1beta2/workload_types.go`,
//!   `clusterqueue_types.go`, `localqueue_types.go`, `resourceflavor_types.go`), the storage
//!   version, read without a conversion webhook;
//! - Volcano `scheduling.volcano.sh/v1beta1` PodGroup and Queue (volcano-sh/apis
//!   `pkg/apis/scheduling/v1beta1/types.go`), scheduler-plugins `scheduling.x-k8s.io/v1alpha1`
//!   PodGroup (`apis/scheduling/v1alpha1/types.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ListParams;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{Action, Kube};
use crate::error::Result;
use crate::model::TFJob;

/// The label that puts a job in a LocalQueue (Kueue `pkg/controller/constants/constants.go`
/// `QueueLabel`).
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// The label Kueue puts on a job's Workload (`JobUIDLabel`, same file).
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";
/// Kueue's Workload by its full name, as every hint says it: Kubernetes 1.36 serves a core
/// `Workload` kind (scheduling.k8s.io), so `kubectl get workloads` lists those, and Kueue
/// renamed its short name to `kwl`.
pub const KUEUE_WORKLOADS: &str = "workloads.kueue.x-k8s.io";

/// What Kueue's `waitForPodsReady` means for a TFJob, said wherever a job is queued by Kueue:
/// Kueue's kubeflow integration counts the job ready once its Running condition is true
/// (kueue `pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go`, `PodsReady`),
/// and the operator sets Running when one replica runs, so the rest may stay Pending.
pub const KUEUE_PODS_READY_NOTE: &str = "Kueue counts a TFJob as ready once its Running \
condition is true, which the operator sets when one replica runs: waitForPodsReady does not keep \
the job whole (the other replicas may stay Pending); `kubectl tfjob wait JOB` waits for every replica";
pub const KUEUE_VERSION: &str = "v1beta2";
pub const VOLCANO_GROUP: &str = "scheduling.volcano.sh";
pub const COSCHEDULING_GROUP: &str = "scheduling.x-k8s.io";
/// The schedulerName the operator gives pods under `--gang-scheduler-name=volcano`
/// (training-operator `pkg/controller.v1/common/job_controller.go` `GangSchedulerVolcano`).
pub const VOLCANO_SCHEDULER: &str = "volcano";
/// Bounded lists: one page of queue objects is plenty; more are left unread and said so.
const PAGE: u32 = 500;

/// A fact read from the cluster, or why it could not be.
#[derive(Debug, Clone, PartialEq)]
pub enum Fact<T> {
    Known(T),
    Unknown(String),
}

impl<T> Fact<T> {
    pub fn known(&self) -> Option<&T> {
        match self {
            Fact::Known(t) => Some(t),
            Fact::Unknown(_) => None,
        }
    }
}

/// Which system holds the job before its pods run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueSystem {
    Kueue,
    Volcano,
    Coscheduling,
}

impl QueueSystem {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueSystem::Kueue => "kueue",
            QueueSystem::Volcano => "volcano",
            QueueSystem::Coscheduling => "coscheduling",
        }
    }
}

/// Kueue's order of TFJob replica types, matched under their exact keys (Kueue
/// `pkg/controller/jobs/kubeflow/jobs/tfjob/tfjob_controller.go` `OrderedReplicaTypes`).
pub const POD_SET_ORDER: [&str; 5] = ["Chief", "Master", "PS", "Worker", "Evaluator"];

/// The State `list` shows: `Queued` for a job Kueue holds suspended (its LocalQueue label set,
/// suspended, not finished), read from the job alone so `list` costs no extra request.
pub fn list_state(job: &TFJob) -> Option<String> {
    (local_queue_name(job).is_some() && job.is_suspended() && !job.is_finished())
        .then(|| "Queued".to_string())
}

/// The LocalQueue the job names, if any (an empty label is no label, as Kueue reads it).
pub fn local_queue_name(job: &TFJob) -> Option<&str> {
    job.metadata
        .labels
        .as_ref()?
        .get(QUEUE_LABEL)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

/// The scheduler named on the job's pod templates (the first one set).
pub fn scheduler_name(job: &TFJob) -> Option<&str> {
    job.spec
        .tf_replica_specs
        .values()
        .filter_map(|r| r.template.spec.as_ref()?.scheduler_name.as_deref())
        .find(|s| !s.is_empty() && *s != "default-scheduler")
}

/// The system the job itself asks for: the Kueue label first (Kueue decides admission, a gang
/// then decides placement), else a gang scheduler named on its templates. A gang set by the
/// operator's `--gang-scheduler-name` alone shows only once its PodGroup exists.
pub fn system_of(job: &TFJob) -> Option<QueueSystem> {
    if local_queue_name(job).is_some() {
        return Some(QueueSystem::Kueue);
    }
    match scheduler_name(job)? {
        VOLCANO_SCHEDULER => Some(QueueSystem::Volcano),
        _ => None,
    }
}

/// A status condition (metav1.Condition).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Cond {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: Option<String>,
}

pub fn find_cond<'a>(conds: &'a [Cond], type_: &str) -> Option<&'a Cond> {
    conds.iter().find(|c| c.type_ == type_)
}

pub fn cond_true(conds: &[Cond], type_: &str) -> bool {
    find_cond(conds, type_).is_some_and(|c| c.status == "True")
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Workload {
    pub metadata: ObjectMeta,
    pub spec: WorkloadSpec,
    pub status: WorkloadStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadSpec {
    pub queue_name: String,
    /// Defaults to true (CRD default); `false` is Kueue's own "suspended by the user".
    pub active: Option<bool>,
    pub pod_sets: Vec<PodSetSpec>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSetSpec {
    pub name: String,
    pub count: i32,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadStatus {
    pub conditions: Vec<Cond>,
    pub admission: Option<Admission>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Admission {
    pub cluster_queue: String,
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSetAssignment {
    pub name: String,
    pub flavors: BTreeMap<String, String>,
    pub resource_usage: BTreeMap<String, serde_json::Value>,
    pub count: Option<i32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LocalQueue {
    pub metadata: ObjectMeta,
    pub spec: LocalQueueSpec,
    pub status: QueueStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LocalQueueSpec {
    pub cluster_queue: String,
    pub stop_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueStatus {
    pub conditions: Vec<Cond>,
    pub pending_workloads: Option<i64>,
    pub admitted_workloads: Option<i64>,
    pub reserving_workloads: Option<i64>,
    pub flavors_reservation: Vec<FlavorUsage>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterQueue {
    pub metadata: ObjectMeta,
    pub spec: ClusterQueueSpec,
    pub status: QueueStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterQueueSpec {
    /// `cohortName` in v1beta2 (`cohort` in v1beta1).
    pub cohort_name: Option<String>,
    pub resource_groups: Vec<ResourceGroup>,
    pub namespace_selector: Option<serde_json::Value>,
    pub stop_policy: Option<String>,
    pub queueing_strategy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceGroup {
    pub covered_resources: Vec<String>,
    pub flavors: Vec<FlavorQuotas>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FlavorQuotas {
    pub name: String,
    pub resources: Vec<ResourceQuota>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceQuota {
    pub name: String,
    pub nominal_quota: serde_json::Value,
    pub borrowing_limit: Option<serde_json::Value>,
    pub lending_limit: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FlavorUsage {
    pub name: String,
    pub resources: Vec<ResourceUsage>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceUsage {
    pub name: String,
    pub total: Option<serde_json::Value>,
    pub borrowed: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceFlavor {
    pub metadata: ObjectMeta,
    pub spec: ResourceFlavorSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceFlavorSpec {
    pub node_labels: BTreeMap<String, String>,
    pub node_taints: Vec<Taint>,
    pub tolerations: Vec<Toleration>,
}

/// A PodGroup of either kind (Volcano or scheduler-plugins): the fields both share.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroup {
    pub metadata: ObjectMeta,
    pub spec: PodGroupSpec,
    pub status: PodGroupStatus,
}

impl PodGroup {
    /// The one wording of a gang that holds its job (`wait`, `diagnose`, `list`, `get`):
    /// `gang waiting: volcano PodGroup NAME in queue Q is Pending: WORDS`.
    pub fn waiting_line(&self, system: QueueSystem, name: &str, words: Option<&str>) -> String {
        let queue = self
            .spec
            .queue
            .as_deref()
            .map(|q| format!(" in queue {q}"))
            .unwrap_or_default();
        let phase = match self.phase() {
            "" => "unprocessed",
            p => p,
        };
        let words = words.map(|w| format!(": {w}")).unwrap_or_default();
        format!(
            "gang waiting: {} PodGroup {name}{queue} is {phase}{words}",
            system.as_str()
        )
    }

    /// The phase as written (`""` before any gang scheduler has looked at it).
    pub fn phase(&self) -> &str {
        self.status.phase.as_deref().unwrap_or("")
    }

    /// Still held as a gang: not yet looked at, Pending or Inqueue (Volcano's phases before
    /// Running; scheduler-plugins' PodGroup controller uses Pending too).
    pub fn gang_waiting(&self) -> bool {
        matches!(self.phase(), "" | "Pending" | "Inqueue")
    }

    /// The PodGroup's own words: the newest condition with a message.
    pub fn latest_message(&self) -> Option<String> {
        self.status
            .conditions
            .iter()
            .rev()
            .find(|c| !c.message.is_empty())
            .map(|c| c.message.clone())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroupSpec {
    pub min_member: Option<i32>,
    pub queue: Option<String>,
    pub min_resources: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroupStatus {
    pub phase: Option<String>,
    pub conditions: Vec<Cond>,
    pub running: Option<i32>,
}

/// A Volcano Queue (cluster-scoped).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolcanoQueue {
    pub metadata: ObjectMeta,
    pub spec: VolcanoQueueSpec,
    pub status: VolcanoQueueStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolcanoQueueSpec {
    pub capability: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolcanoQueueStatus {
    pub state: Option<String>,
    pub allocated: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
struct List<T> {
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

fn kueue_action(verb: &'static str, resource: &'static str, ns: Option<&str>) -> Action {
    Action {
        group: KUEUE_GROUP,
        ..Action::new(verb, resource, ns)
    }
}

/// One GET of `path` into `T`; `Ok(None)` on 404. Retried under the shared policy.
async fn get_json<T: DeserializeOwned>(
    kube: &Kube,
    path: &str,
    lp: Option<&ListParams>,
) -> std::result::Result<Option<T>, kube::Error> {
    let build = || match lp {
        Some(lp) => kube::core::Request::new(path).list(lp),
        None => hyper::Request::get(path)
            .body(Vec::new())
            .map_err(kube::core::request::Error::BuildRequest),
    };
    let answer = super::retry(kube, || async {
        let req = build().map_err(kube::Error::BuildRequest)?;
        kube.client.request::<T>(req).await
    })
    .await;
    match answer {
        Ok(t) => Ok(Some(t)),
        Err(e) if super::is_not_found(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A read whose refusal is a fact ("unknown"), and whose transport failure ends the command.
async fn read<T: DeserializeOwned>(
    kube: &Kube,
    path: &str,
    lp: Option<&ListParams>,
    action: Action,
) -> Result<Fact<Option<T>>> {
    match get_json(kube, path, lp).await {
        Ok(t) => Ok(Fact::Known(t)),
        Err(e) => Ok(Fact::Unknown(super::unknown_reason(e, &action, kube)?)),
    }
}

/// Whether the API server serves Kueue's v1beta2 API (its CRDs installed): one discovery GET.
pub async fn kueue_served(kube: &Kube) -> Result<Fact<bool>> {
    let path = format!("/apis/{KUEUE_GROUP}/{KUEUE_VERSION}");
    let action = Action::new("get", "apis", None).named(KUEUE_GROUP);
    Ok(
        match read::<serde_json::Value>(kube, &path, None, action).await? {
            Fact::Known(v) => Fact::Known(v.is_some()),
            Fact::Unknown(why) => Fact::Unknown(why),
        },
    )
}

pub async fn local_queue(kube: &Kube, ns: &str, name: &str) -> Result<Fact<Option<LocalQueue>>> {
    let path = format!("/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/namespaces/{ns}/localqueues/{name}");
    read(
        kube,
        &path,
        None,
        kueue_action("get", "localqueues", Some(ns)).named(name),
    )
    .await
}

pub async fn cluster_queue(kube: &Kube, name: &str) -> Result<Fact<Option<ClusterQueue>>> {
    let path = format!("/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/clusterqueues/{name}");
    read(
        kube,
        &path,
        None,
        kueue_action("get", "clusterqueues", None).named(name),
    )
    .await
}

async fn list<T: DeserializeOwned>(
    kube: &Kube,
    path: &str,
    selector: Option<&str>,
    action: Action,
) -> Result<Fact<Vec<T>>> {
    let mut lp = ListParams::default().limit(PAGE);
    if let Some(s) = selector {
        lp = lp.labels(s);
    }
    Ok(
        match read::<List<T>>(kube, path, Some(&lp), action).await? {
            Fact::Known(l) => Fact::Known(l.map(|l| l.items).unwrap_or_default()),
            Fact::Unknown(why) => Fact::Unknown(why),
        },
    )
}

/// The LocalQueues of a namespace (what a job that names none bypasses).
pub async fn local_queues(kube: &Kube, ns: &str) -> Result<Fact<Vec<LocalQueue>>> {
    let path = format!("/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/namespaces/{ns}/localqueues");
    list(
        kube,
        &path,
        None,
        kueue_action("list", "localqueues", Some(ns)),
    )
    .await
}

/// Every ClusterQueue (for the cohort a queue borrows from).
pub async fn cluster_queues(kube: &Kube) -> Result<Fact<Vec<ClusterQueue>>> {
    let path = format!("/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/clusterqueues");
    list(
        kube,
        &path,
        None,
        kueue_action("list", "clusterqueues", None),
    )
    .await
}

pub async fn resource_flavors(kube: &Kube) -> Result<Fact<Vec<ResourceFlavor>>> {
    let path = format!("/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/resourceflavors");
    list(
        kube,
        &path,
        None,
        kueue_action("list", "resourceflavors", None),
    )
    .await
}

/// The job's Workload: by Kueue's `job-uid` label, else by a controller ownerReference to the
/// job (Kueue `pkg/controller/jobframework/reconciler.go` finds it both ways). `None`: none yet.
pub async fn workload_for(kube: &Kube, ns: &str, job_uid: &str) -> Result<Fact<Option<Workload>>> {
    let path = format!("/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/namespaces/{ns}/workloads");
    let action = kueue_action("list", "workloads", Some(ns));
    let by_label = list::<Workload>(
        kube,
        &path,
        Some(&format!("{JOB_UID_LABEL}={job_uid}")),
        action.clone(),
    )
    .await?;
    let found = match by_label {
        Fact::Known(found) => found,
        Fact::Unknown(why) => return Ok(Fact::Unknown(why)),
    };
    if let Some(w) = pick_workload(found) {
        return Ok(Fact::Known(Some(w)));
    }
    let all = list::<Workload>(kube, &path, None, action).await?;
    Ok(match all {
        Fact::Known(items) => Fact::Known(pick_workload(
            items
                .into_iter()
                .filter(|w| {
                    w.metadata.owner_references.iter().flatten().any(|o| {
                        o.uid == job_uid && o.kind == "TFJob" && o.controller == Some(true)
                    })
                })
                .collect(),
        )),
        Fact::Unknown(w) => Fact::Unknown(w),
    })
}

/// Of several Workloads for one job (an old one finishing, a replacement), the live one.
fn pick_workload(mut items: Vec<Workload>) -> Option<Workload> {
    items.sort_by_key(|w| {
        (
            w.metadata.deletion_timestamp.is_some(),
            cond_true(&w.status.conditions, "Finished"),
            std::cmp::Reverse(w.metadata.creation_timestamp.clone()),
        )
    });
    items.into_iter().next()
}

/// Workloads holding quota in ClusterQueue `cq` (admitted or reserving, not finished), for
/// naming what holds it. Cluster-wide: often not readable by a namespace user.
pub async fn holders(kube: &Kube, cq: &str) -> Result<Fact<Vec<Workload>>> {
    let path = format!("/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/workloads");
    Ok(
        match list::<Workload>(kube, &path, None, kueue_action("list", "workloads", None)).await? {
            Fact::Known(items) => Fact::Known(
                items
                    .into_iter()
                    .filter(|w| {
                        w.status
                            .admission
                            .as_ref()
                            .is_some_and(|a| a.cluster_queue == cq)
                            && cond_true(&w.status.conditions, "QuotaReserved")
                            && !cond_true(&w.status.conditions, "Finished")
                    })
                    .collect(),
            ),
            Fact::Unknown(w) => Fact::Unknown(w),
        },
    )
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct PendingWorkload {
    metadata: ObjectMeta,
    position_in_cluster_queue: Option<i64>,
    position_in_local_queue: Option<i64>,
}

/// A pending workload's place, from the visibility API (`visibility.kueue.x-k8s.io/v1beta2`,
/// Kueue `apis/visibility/v1beta2/types.go`): (position in the ClusterQueue counted from 0,
/// workloads pending in the LocalQueue). `None` when the API is absent or refuses: the
/// Workload's conditions are then all there is.
pub async fn pending_position(
    kube: &Kube,
    ns: &str,
    lq: &str,
    workload: Option<&str>,
) -> Option<(Option<i64>, usize)> {
    let path = format!(
        "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{lq}/pendingworkloads"
    );
    let summary: List<PendingWorkload> = get_json(kube, &path, None).await.ok()??;
    let position = workload.and_then(|w| {
        summary
            .items
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(w))
            .and_then(|p| p.position_in_cluster_queue.or(p.position_in_local_queue))
    });
    Some((position, summary.items.len()))
}

/// The PodGroup the training-operator made for job `name` (it names it after the job,
/// `pkg/controller.v1/common/scheduling.go` `SyncPodGroup`), Volcano's first. `None`: no CRD
/// served or no such group.
pub async fn pod_group(
    kube: &Kube,
    ns: &str,
    name: &str,
) -> Result<Fact<Option<(QueueSystem, PodGroup)>>> {
    let mut unknown = None;
    for (system, group, version) in [
        (QueueSystem::Volcano, VOLCANO_GROUP, "v1beta1"),
        (QueueSystem::Coscheduling, COSCHEDULING_GROUP, "v1alpha1"),
    ] {
        let path = format!("/apis/{group}/{version}/namespaces/{ns}/podgroups/{name}");
        let action = Action {
            group,
            ..Action::new("get", "podgroups", Some(ns)).named(name)
        };
        match read::<PodGroup>(kube, &path, None, action).await? {
            Fact::Known(Some(pg)) => return Ok(Fact::Known(Some((system, pg)))),
            Fact::Known(None) => {}
            Fact::Unknown(w) => unknown = Some(w),
        }
    }
    Ok(match unknown {
        Some(w) => Fact::Unknown(w),
        None => Fact::Known(None),
    })
}

pub async fn volcano_queue(kube: &Kube, name: &str) -> Result<Fact<Option<VolcanoQueue>>> {
    let path = format!("/apis/{VOLCANO_GROUP}/v1beta1/queues/{name}");
    let action = Action {
        group: VOLCANO_GROUP,
        ..Action::new("get", "queues", None).named(name)
    };
    read(kube, &path, None, action).await
}

/// The latest event message on the job's PodGroup (Volcano records why a group is not
/// enqueued only there: `pkg/scheduler/cache/cache.go` `RecordJobStatusEvent`, the enqueue
/// action's Normal `Unschedulable`). `None` when there is none or it is not readable.
pub async fn pod_group_event(kube: &Kube, ns: &str, name: &str) -> Option<String> {
    use k8s_openapi::api::core::v1::Event;
    let api: kube::api::Api<Event> = kube::api::Api::namespaced(kube.client.clone(), ns);
    let lp = ListParams::default()
        .fields(&format!(
            "involvedObject.kind=PodGroup,involvedObject.name={name}"
        ))
        .limit(PAGE);
    let list = super::retry(kube, || api.list(&lp)).await.ok()?;
    list.items
        .into_iter()
        .filter(|e| e.message.as_deref().is_some_and(|m| !m.is_empty()))
        .max_by_key(|e| {
            e.last_timestamp
                .as_ref()
                .map(|t| t.0)
                .or(e.event_time.as_ref().map(|t| t.0))
        })
        .and_then(|e| e.message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(labels: serde_json::Value, scheduler: Option<&str>) -> TFJob {
        let mut spec = json!({"containers": [{"name": "tensorflow", "image": "i"}]});
        if let Some(s) = scheduler {
            spec["schedulerName"] = json!(s);
        }
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "j", "labels": labels},
            "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": spec}}}}
        }))
        .unwrap()
    }

    #[test]
    fn the_label_wins_then_the_templates_scheduler() {
        assert_eq!(
            system_of(&job(json!({QUEUE_LABEL: "team-a"}), Some("volcano"))),
            Some(QueueSystem::Kueue)
        );
        assert_eq!(
            system_of(&job(json!({}), Some("volcano"))),
            Some(QueueSystem::Volcano)
        );
        // An empty label is no label (Kueue ignores the job).
        assert_eq!(system_of(&job(json!({QUEUE_LABEL: ""}), None)), None);
    }

    #[test]
    fn a_v1beta2_workload_and_cluster_queue_parse() {
        let w: Workload = serde_json::from_value(json!({
            "metadata": {"name": "tfjob-j-51bee", "labels": {JOB_UID_LABEL: "u"}},
            "spec": {"queueName": "team-a", "podSets": [{"name": "worker", "count": 3, "template": {}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                "message": "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100, 3 more needed"}]}
        }))
        .unwrap();
        assert_eq!(w.spec.pod_sets[0].count, 3);
        assert_eq!(
            find_cond(&w.status.conditions, "QuotaReserved")
                .unwrap()
                .reason,
            "Pending"
        );
        let cq: ClusterQueue = serde_json::from_value(json!({
            "metadata": {"name": "gpu-cq"},
            "spec": {"cohortName": "org", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": "2"}]}]}]},
            "status": {"flavorsReservation": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "5", "borrowed": "0"}]}]}
        }))
        .unwrap();
        let q = &cq.spec.resource_groups[0].flavors[0].resources[0];
        assert_eq!(q.nominal_quota, json!(8));
        assert_eq!(q.borrowing_limit, Some(json!("2")));
        assert_eq!(cq.spec.cohort_name.as_deref(), Some("org"));
    }
}
