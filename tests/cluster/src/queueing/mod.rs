//! What holds a TFJob before it runs: a Kueue stand-in (`kueue/`, v0.19.2 with the
//! `kubeflow.org/tfjob` integration) and gang scheduling (`gang/`: the training-operator's
//! PodGroups for Volcano or scheduler-plugins, and stand-ins for both schedulers), after the
//! reference notes `queueing/queueing.md`. The CRDs they serve are minimal copies written here
//! (`crds.rs`), not the upstream files.

use serde::{Deserialize, Serialize};

pub(crate) mod crds;
pub(crate) mod gang;
pub(crate) mod kueue;

/// The Kueue installation of a scenario (`kueue:`). Absent: no Kueue at all.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct KueueConfig {
    /// Kueue's Configuration `integrations.frameworks`. The default is Kueue's own when the
    /// list is empty (`apis/config/v1beta2/defaults.go`: `batch/job` only), so a TFJob's
    /// queue-name label does nothing until `kubeflow.org/tfjob` is listed, as with the
    /// shipped manifests (`config/components/manager/controller_manager_config.yaml`).
    pub frameworks: Vec<String>,
    /// The controller runs (admits, creates Workloads). False: the webhooks still answer
    /// (TFJobs are stored suspended) but nothing else happens, as with a crashed manager.
    pub controller: bool,
    /// Feature gate `UnadmittedWorkloadsObservability` (beta, off in v0.19): granular reasons
    /// (`WaitingForQuota`, `ExceedsMaxQuota`, `NoMatchingFlavor`, `Misconfigured`,
    /// `Suspended`) instead of `Pending`/`Inadmissible`.
    pub unadmitted_workloads_observability: bool,
    /// Serve the aggregated `visibility.kueue.x-k8s.io/v1beta2` API (pending positions).
    pub visibility: bool,
    /// The webhook Service has endpoints. False: the manager pod is not ready, and with
    /// `failurePolicy: Fail` every TFJob create in a managed namespace fails with 500
    /// `failed calling webhook "mtfjob.kb.io" … no endpoints available for service
    /// "kueue-webhook-service"` (only when TFJobs are managed).
    pub webhook: bool,
}

/// The API groups of the queueing kinds (Kueue, Volcano, scheduler-plugins).
pub(crate) fn is_queueing_group(group: &str) -> bool {
    matches!(
        group,
        crds::KUEUE_GROUP | crds::VOLCANO_GROUP | crds::COSCHED_GROUP
    )
}

/// The framework name of the TFJob integration (`tfjob_controller.go` `FrameworkName`).
pub const TFJOB_FRAMEWORK: &str = "kubeflow.org/tfjob";

impl Default for KueueConfig {
    fn default() -> Self {
        KueueConfig {
            frameworks: vec!["batch/job".into()],
            controller: true,
            unadmitted_workloads_observability: false,
            visibility: true,
            webhook: true,
        }
    }
}

impl KueueConfig {
    /// Kueue with the TFJob integration enabled.
    pub fn with_tfjob() -> Self {
        KueueConfig {
            frameworks: vec!["batch/job".into(), TFJOB_FRAMEWORK.into()],
            ..Default::default()
        }
    }
    /// Whether TFJobs are managed (else Kueue registers a no-op webhook and no controller,
    /// `pkg/controller/jobframework/setup.go`).
    pub fn manages_tfjobs(&self) -> bool {
        self.frameworks.iter().any(|f| f == TFJOB_FRAMEWORK)
    }
}

/// The training-operator's `--gang-scheduler-name` (`cmd/training-operator.v1/main.go`):
/// `volcano` selects Volcano PodGroups, any other value scheduler-plugins PodGroups.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GangScheduler {
    /// `scheduling.volcano.sh/v1beta1` PodGroups, pods created once the group is Inqueue.
    Volcano,
    /// `scheduling.x-k8s.io/v1alpha1` PodGroups, pods created at once; the pods'
    /// schedulerName is `scheduler-plugins-scheduler` (the Helm chart's default name).
    SchedulerPlugins,
}

impl GangScheduler {
    /// The operator's `--gang-scheduler-name` value for it.
    pub fn flag_value(self) -> &'static str {
        match self {
            GangScheduler::Volcano => "volcano",
            GangScheduler::SchedulerPlugins => "scheduler-plugins",
        }
    }

    /// The schedulerName the operator writes into pod templates that name none.
    pub fn scheduler_name(self) -> &'static str {
        match self {
            GangScheduler::Volcano => "volcano",
            GangScheduler::SchedulerPlugins => "scheduler-plugins-scheduler",
        }
    }
}
