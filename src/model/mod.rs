//! The `kubeflow.org/v1` TFJob, typed after Training Operator v1.9.4 (`tensorflow_types.go`,
//! `common_types.go`), plus the naming and label conventions the operator applies to the pods it
//! creates.
//!
//! Every optional field is an `Option` skipped when `None`, so what we send to the API server is
//! exactly what the user (or template) set: the operator applies its defaults in memory only and
//! never writes them back, and we do not want to either.
//!
//! Below it, the vocabulary the TFJob is written in: Kubernetes names ([`names`]), quantities
//! ([`quantity`]) and durations ([`duration`]); none of them imports anything of this crate.

pub mod duration;
pub mod names;
pub mod quantity;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The TFJob resource for kube's dynamic API, where the object is wanted as the API server
/// returned it (fields this crate's types do not model kept).
pub fn dynamic_resource() -> kube::core::ApiResource {
    kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(GROUP, VERSION, KIND),
        PLURAL,
    )
}

/// The extended resource NVIDIA's device plugin advertises GPUs as.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// API group of the TFJob CRD.
pub const GROUP: &str = "kubeflow.org";
/// The only served version.
pub const VERSION: &str = "v1";
/// `apiVersion` as written in manifests.
pub const API_VERSION: &str = "kubeflow.org/v1";
/// The kind.
pub const KIND: &str = "TFJob";

/// Annotation carrying a per-submission id, so a create retried after an ambiguous failure can
/// tell "my first attempt went through" from "someone else's job has that name"; `export NAME`
/// drops it (a JobSet made from a stored job is another submission).
pub const SUBMISSION_ANNOTATION: &str = "kubectl-tfjob.kubeflow.org/submission-id";

/// The effects a taint (and so a toleration) can have (k8s.io/kubernetes pkg/apis/core/validation
/// validation.go `validateTolerations`): one list for the `--toleration` flag and pod validation.
pub const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// The plural resource name (`kubectl get tfjobs`).
pub const PLURAL: &str = "tfjobs";
/// The CRD's name, for looking it up in the cluster.
pub const CRD_NAME: &str = "tfjobs.kubeflow.org";

/// The container the operator treats as the training process (ports, TF_CONFIG, exit codes).
pub const DEFAULT_CONTAINER_NAME: &str = "tensorflow";
/// The port name the operator looks for on the `tensorflow` container.
pub const DEFAULT_PORT_NAME: &str = "tfjob-port";
/// The port the operator appends when `tfjob-port` is missing.
pub const DEFAULT_PORT: i32 = 2222;

/// Label keys the operator puts on pods and services (`GenLabels`).
pub const LABEL_JOB_NAME: &str = "training.kubeflow.org/job-name";
pub const LABEL_OPERATOR_NAME: &str = "training.kubeflow.org/operator-name";
pub const LABEL_REPLICA_TYPE: &str = "training.kubeflow.org/replica-type";
pub const LABEL_REPLICA_INDEX: &str = "training.kubeflow.org/replica-index";
pub const LABEL_JOB_ROLE: &str = "training.kubeflow.org/job-role";
/// Value of [`LABEL_OPERATOR_NAME`] for TFJobs.
pub const OPERATOR_NAME: &str = "tfjob-controller";
/// Value of [`LABEL_JOB_ROLE`] on the master-role pod(s).
pub const JOB_ROLE_MASTER: &str = "master";

/// Cap for [`TFJob::pod_names`] per replica type.
pub const MAX_LISTED_PODS_PER_TYPE: i32 = 10_000;

/// The `managedBy` values the v1.9 webhook accepts.
pub const MANAGED_BY_VALUES: [&str; 2] = [
    "kubeflow.org/training-operator",
    "kueue.x-k8s.io/multikueue",
];
/// restartPolicy values the API documents (the operator does not enforce them).
pub const RESTART_POLICIES: [&str; 4] = ["Always", "OnFailure", "Never", "ExitCode"];
/// cleanPodPolicy values (`""` means unset).
pub const CLEAN_POD_POLICIES: [&str; 3] = ["All", "Running", "None"];
/// successPolicy values.
pub const SUCCESS_POLICIES: [&str; 2] = ["", "AllWorkers"];

/// The desired state of a TFJob.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kubeflow.org",
    version = "v1",
    kind = "TFJob",
    plural = "tfjobs",
    singular = "tfjob",
    namespaced,
    status = "TFJobStatus",
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.conditions[-1:].type"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct TFJobSpec {
    /// Policies for the job as a whole (cleanup, deadlines, gang scheduling, suspend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_policy: Option<RunPolicy>,

    /// `""` (worker-0 decides success) or `AllWorkers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_policy: Option<String>,

    /// Replica specs keyed by replica type. Kept as strings, not [`ReplicaType`], so that a
    /// miscased or unknown key survives parsing and can be reported by validation.
    #[serde(rename = "tfReplicaSpecs")]
    pub tf_replica_specs: BTreeMap<String, ReplicaSpec>,

    /// Sparse TF_CONFIG, and worker failures do not fail the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dynamic_worker: Option<bool>,
}

/// One replica type: how many pods, their template, and what to do when one exits.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSpec {
    /// Number of pods (the operator defaults it to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// Always, OnFailure, Never or ExitCode (the operator defaults it to Never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,

    /// The pod template.
    #[serde(default)]
    pub template: PodTemplateSpec,
}

/// `runPolicy`, shared by all Kubeflow v1 job kinds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPolicy {
    /// All, Running or None (the operator's default since v1.7 is None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_pod_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<SchedulingPolicy>,
    /// The CRD defaults this to false when runPolicy is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// `kubeflow.org/training-operator` or `kueue.x-k8s.io/multikueue` (v1.9+; immutable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
}

/// Gang-scheduling parameters (volcano / scheduler-plugins).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<i32>,
    /// Immutable once set (CEL rule in the CRD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

/// A JSON `null` read as the type's empty value (Go marshals a nil map or slice as `null`).
fn null_as_default<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// What the operator reports back.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TFJobStatus {
    /// Appended in order; the last one is the newest (and the `State` column).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<JobCondition>,
    /// Keyed by canonical replica type (`Worker`, `PS`, …). The operator writes `null` here
    /// when no pod exists (e.g. a job suspended from creation): the Go field
    /// (`ReplicaStatuses map[ReplicaType]*ReplicaStatus \`json:"replicaStatuses"\``, training-operator
    /// pkg/apis/kubeflow.org/v1/common_types.go) has no omitempty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub replica_statuses: BTreeMap<String, ReplicaStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconcile_time: Option<Time>,
}

/// One entry of `status.conditions`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobCondition {
    /// Created, Running, Restarting, Succeeded, Suspended or Failed.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

impl JobCondition {
    /// `status: "True"`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// Pod counts per replica type. Zero counts are omitted by the operator.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<i32>,
    /// Deprecated; never set by the TFJob controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    /// Never set by the TFJob controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

/// The state word for a job without any condition: no operator has reconciled it yet.
pub const STATE_NOT_RECONCILED: &str = "Pending";

/// Condition types the operator sets.
pub mod condition {
    pub const CREATED: &str = "Created";
    pub const RUNNING: &str = "Running";
    pub const RESTARTING: &str = "Restarting";
    pub const SUCCEEDED: &str = "Succeeded";
    pub const SUSPENDED: &str = "Suspended";
    pub const FAILED: &str = "Failed";
}

/// The replica types the operator knows. Keys in `tfReplicaSpecs` are strings; this is the
/// canonical set they should map to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReplicaType {
    Chief,
    Master,
    PS,
    Worker,
    Evaluator,
}

impl ReplicaType {
    /// All known types, in the order the operator's status logic visits them.
    pub const ALL: [ReplicaType; 5] = [
        ReplicaType::Chief,
        ReplicaType::Evaluator,
        ReplicaType::Master,
        ReplicaType::PS,
        ReplicaType::Worker,
    ];

    /// The exact-case key (`PS`, `Worker`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaType::Chief => "Chief",
            ReplicaType::Master => "Master",
            ReplicaType::PS => "PS",
            ReplicaType::Worker => "Worker",
            ReplicaType::Evaluator => "Evaluator",
        }
    }

    /// The lowercase form used in pod names, labels and TF_CONFIG.
    pub fn lower(self) -> &'static str {
        match self {
            ReplicaType::Chief => "chief",
            ReplicaType::Master => "master",
            ReplicaType::PS => "ps",
            ReplicaType::Worker => "worker",
            ReplicaType::Evaluator => "evaluator",
        }
    }

    /// Exact-case match only, as the webhook's Chief/Master check and status logic do.
    pub fn from_exact(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == key)
    }

    /// Case-insensitive match, as the operator's in-memory defaulting (`setTypeNameToCamelCase`).
    pub fn from_any_case(key: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(key))
    }

    /// Chief and Master are the "master role" when present.
    pub fn is_chief_like(self) -> bool {
        matches!(self, ReplicaType::Chief | ReplicaType::Master)
    }
}

impl fmt::Display for ReplicaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReplicaType {
    type Err = String;

    /// Accepts any case (`worker`, `ps`), like the operator does.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_any_case(s).ok_or_else(|| {
            format!(
                "unknown replica type {s:?}; expected one of PS, Worker, Chief, Master, Evaluator"
            )
        })
    }
}

/// Pod (and headless service) name the operator gives replica `idx` of `rtype`:
/// `<job>-<lowercase rtype>-<idx>`, with `/` replaced by `-` (`GenGeneralName`).
pub fn pod_name(job: &str, rtype: &str, idx: i64) -> String {
    format!("{}-{}-{}", job, rtype.to_lowercase(), idx).replace('/', "-")
}

/// Label selector (as a string for list calls) matching every pod and service of a job.
pub fn job_selector(name: &str) -> String {
    format!(
        "{LABEL_JOB_NAME}={},{LABEL_OPERATOR_NAME}={OPERATOR_NAME}",
        name.replace('/', "-")
    )
}

/// [`job_selector`] narrowed to one replica type.
pub fn replica_selector(name: &str, rtype: &str) -> String {
    format!(
        "{},{LABEL_REPLICA_TYPE}={}",
        job_selector(name),
        rtype.to_lowercase()
    )
}

impl TFJob {
    /// The pod specs of its replica templates (for the Secrets their environment reads).
    pub fn pod_specs(&self) -> impl Iterator<Item = &k8s_openapi::api::core::v1::PodSpec> {
        self.spec
            .tf_replica_specs
            .values()
            .filter_map(|r| r.template.spec.as_ref())
    }

    /// The most recent entry of the given condition type, if any.
    pub fn condition(&self, type_: &str) -> Option<&JobCondition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .rev()
            .find(|c| c.type_ == type_)
    }

    /// Whether the condition of that type is present with status True.
    pub fn has_condition(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(JobCondition::is_true)
    }

    /// The last condition in the list: what `kubectl get tfjobs` shows as State.
    pub fn last_condition(&self) -> Option<&JobCondition> {
        self.status.as_ref()?.conditions.last()
    }

    /// What `wait` and `diagnose` both call the job's state: the last condition's type (the
    /// `State` column of `kubectl get tfjobs`), or [`STATE_NOT_RECONCILED`] before the operator
    /// wrote any condition (kubectl shows an empty column then).
    pub fn state(&self) -> String {
        self.last_condition()
            .map(|c| c.type_.clone())
            .unwrap_or_else(|| STATE_NOT_RECONCILED.into())
    }

    /// Succeeded or Failed is True. Both are terminal for the operator.
    pub fn is_finished(&self) -> bool {
        self.has_condition(condition::SUCCEEDED) || self.has_condition(condition::FAILED)
    }

    /// Failed is True.
    pub fn is_failed(&self) -> bool {
        self.has_condition(condition::FAILED)
    }

    /// `runPolicy.suspend: true` in the spec (what the user or Kueue asked; the `Suspended`
    /// condition is the operator's answer): the operator deletes the pods and creates none.
    pub fn is_suspended(&self) -> bool {
        self.spec.run_policy.as_ref().and_then(|p| p.suspend) == Some(true)
    }

    /// The replica types present, canonicalized (case-insensitive) as the operator does;
    /// unknown keys are skipped.
    pub fn replica_types(&self) -> Vec<ReplicaType> {
        let mut v: Vec<ReplicaType> = self
            .spec
            .tf_replica_specs
            .keys()
            .filter_map(|k| ReplicaType::from_any_case(k))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The spec of a replica type, matching keys case-insensitively.
    pub fn replica_spec(&self, rtype: ReplicaType) -> Option<&ReplicaSpec> {
        self.spec
            .tf_replica_specs
            .iter()
            .find(|(k, _)| ReplicaType::from_any_case(k) == Some(rtype))
            .map(|(_, v)| v)
    }

    /// `replicas` for a type, with the operator's default of 1 when unset; 0 if the type is absent.
    pub fn replicas(&self, rtype: ReplicaType) -> i32 {
        self.replica_spec(rtype)
            .map(|s| s.replicas.unwrap_or(1))
            .unwrap_or(0)
    }

    /// The operator sets TF_CONFIG only when the replica sum over known types is not 1.
    pub fn is_distributed(&self) -> bool {
        let total: i64 = self
            .spec
            .tf_replica_specs
            .iter()
            .filter(|(k, _)| ReplicaType::from_any_case(k).is_some())
            .map(|(_, s)| i64::from(s.replicas.unwrap_or(1)))
            .sum();
        total != 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::{CustomResourceExt, Resource};

    #[test]
    fn a_null_replica_statuses_reads_as_none() {
        // As the operator writes it for a job suspended from creation.
        let st: TFJobStatus = serde_json::from_value(serde_json::json!({
            "conditions": [{"type": "Suspended", "status": "True"}], "replicaStatuses": null}))
        .unwrap();
        assert!(st.replica_statuses.is_empty());
        let st: TFJobStatus =
            serde_json::from_value(serde_json::json!({"conditions": null})).unwrap();
        assert!(st.conditions.is_empty());
    }

    fn job_with(conditions: &[(&str, &str)]) -> TFJob {
        let mut job = TFJob::new("mnist", TFJobSpec::default());
        job.status = Some(TFJobStatus {
            conditions: conditions
                .iter()
                .map(|(t, s)| JobCondition {
                    type_: t.to_string(),
                    status: s.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        job
    }

    #[test]
    fn resource_identity_matches_the_crd() {
        assert_eq!(TFJob::api_version(&()), API_VERSION);
        assert_eq!(TFJob::kind(&()), KIND);
        assert_eq!(TFJob::plural(&()), PLURAL);
        let crd = TFJob::crd();
        assert_eq!(crd.metadata.name.as_deref(), Some(CRD_NAME));
        let v = &crd.spec.versions[0];
        assert!(v.subresources.as_ref().unwrap().status.is_some());
        let cols = v.additional_printer_columns.as_ref().unwrap();
        assert_eq!(cols[0].json_path, ".status.conditions[-1:].type");
    }

    #[test]
    fn none_fields_are_not_serialized() {
        let mut job = TFJob::new("x", TFJobSpec::default());
        job.spec
            .tf_replica_specs
            .insert("Worker".into(), ReplicaSpec::default());
        let v = serde_json::to_value(&job).unwrap();
        assert_eq!(
            v["spec"],
            serde_json::json!({"tfReplicaSpecs": {"Worker": {"template": {}}}})
        );
        assert!(v.get("status").is_none());
    }

    #[test]
    fn conditions_and_finish() {
        let job = job_with(&[
            ("Created", "True"),
            ("Running", "False"),
            ("Succeeded", "True"),
        ]);
        assert!(job.is_finished());
        assert_eq!(job.last_condition().unwrap().type_, "Succeeded");
        assert!(!job.condition("Running").unwrap().is_true());
        assert!(!job_with(&[("Created", "True")]).is_finished());
        assert!(job_with(&[("Failed", "True")]).is_failed());
    }

    #[test]
    fn names_and_selectors() {
        assert_eq!(pod_name("mnist", "Worker", 0), "mnist-worker-0");
        assert_eq!(pod_name("a/b", "PS", 2), "a-b-ps-2");
        assert_eq!(
            job_selector("mnist"),
            "training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=tfjob-controller"
        );
        assert!(replica_selector("m", "PS").ends_with("training.kubeflow.org/replica-type=ps"));
    }

    #[test]
    fn replica_types_canonicalize_case() {
        assert_eq!(
            "worker".parse::<ReplicaType>().unwrap(),
            ReplicaType::Worker
        );
        assert_eq!(ReplicaType::from_exact("worker"), None);
        assert!("Launcher".parse::<ReplicaType>().is_err());
        let mut job = TFJob::new("j", TFJobSpec::default());
        for k in ["ps", "Worker", "Bogus"] {
            job.spec
                .tf_replica_specs
                .insert(k.into(), ReplicaSpec::default());
        }
        assert_eq!(
            job.replica_types(),
            vec![ReplicaType::PS, ReplicaType::Worker]
        );
        assert_eq!(job.replicas(ReplicaType::Worker), 1);
        assert_eq!(job.replicas(ReplicaType::Chief), 0);
        assert!(job.is_distributed());
    }
}
