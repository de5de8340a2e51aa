//! Beyond TFJob (issue 27): the same distributed TensorFlow job as a kubernetes-sigs JobSet
//! (`jobset.x-k8s.io/v1alpha2`), for clusters where the training-operator is gone.
//!
//! - [`model`]: the JobSet types (what is exported and what a client reads back).
//! - [`tfconfig`]: the TF_CONFIG the operator would give each pod, written with `$(VAR)`
//!   references the kubelet expands, addressed by JobSet's DNS names.
//! - [`export`]: TFJob → JobSet, pure, with every TFJob feature it cannot carry named.
//! - [`validate`]: the JobSet webhook's rules, the schema and core Pod validation on what is
//!   exported.
//!
//! Layer: beside `render` (it takes the prepared TFJob); imports `model`, `validate` and
//! `error`, never `ops` or `cluster`.

pub mod export;
pub mod model;
pub mod tfconfig;
pub mod validate;

pub use model::{JobSet, JobSetSpec};

/// API group of the JobSet CRD.
pub const GROUP: &str = "jobset.x-k8s.io";
/// The served version.
pub const VERSION: &str = "v1alpha2";
/// `apiVersion` as written in manifests.
pub const API_VERSION: &str = "jobset.x-k8s.io/v1alpha2";
/// The kind.
pub const KIND: &str = "JobSet";
/// The plural resource name.
pub const PLURAL: &str = "jobsets";
/// The CRD's name.
pub const CRD_NAME: &str = "jobsets.jobset.x-k8s.io";

/// Label (and annotation) the JobSet controller puts on every Job and pod of a set
/// (jobset `pkg/controllers/jobset_controller.go` `labelAndAnnotateObject`; `api/jobset/v1alpha2`
/// `JobSetNameKey`). The headless Service selects on it.
pub const LABEL_JOBSET_NAME: &str = "jobset.sigs.k8s.io/jobset-name";
/// The replicatedJob a Job or pod belongs to (`ReplicatedJobNameKey`).
pub const LABEL_REPLICATED_JOB: &str = "jobset.sigs.k8s.io/replicatedjob-name";
/// The annotation the Job controller sets on every Indexed-Job pod
/// (kubernetes `pkg/controller/job/indexed_job_utils.go` `addCompletionIndexAnnotation`).
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Kueue's queue label, read on the JobSet's own metadata (kueue
/// `pkg/controller/constants/constants.go` `QueueLabel`).
pub const KUEUE_QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// The annotation every JobSet `export` and `submit --to jobset` write (value [`MADE_FROM`]):
/// the day-two commands act only on JobSets that carry it, as the plugin knows their shape
/// (one replicatedJob per TF replica type, TF_CONFIG by `$(VAR)`). An annotation, not the
/// `app.kubernetes.io/managed-by` label, so a user's own label is never overwritten.
pub const MADE_BY_ANNOTATION: &str = "kubectl-tfjob.kubeflow.org/exported-from";
/// What the JobSet was made from.
pub const MADE_FROM: &str = "TFJob";

/// Whether the plugin made this JobSet (pure).
pub fn made_by_plugin(js: &JobSet) -> bool {
    js.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(MADE_BY_ANNOTATION))
        .is_some_and(|v| v == MADE_FROM)
}

/// Job name the controller gives Job `job_index` of a replicatedJob
/// (jobset `pkg/util/placement/placement.go` `GenJobName`: `"%s-%s-%d"`).
pub fn job_name(jobset: &str, rjob: &str, job_index: i64) -> String {
    format!("{jobset}-{rjob}-{job_index}")
}

/// A pod's hostname: the Job controller's `<job-name>-<index>` (kubernetes
/// `pkg/controller/job/job_controller.go`), the same string as placement.go `GenPodName`.
pub fn pod_hostname(jobset: &str, rjob: &str, job_index: i64, pod_index: i64) -> String {
    format!("{}-{pod_index}", job_name(jobset, rjob, job_index))
}

/// Selector for every pod of a JobSet (what the headless Service and Kueue select on).
pub fn pod_selector(jobset: &str) -> String {
    format!("{LABEL_JOBSET_NAME}={jobset}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_gen_job_name_and_the_job_controllers_hostname() {
        assert_eq!(job_name("tf", "worker", 0), "tf-worker-0");
        assert_eq!(pod_hostname("tf", "worker", 0, 2), "tf-worker-0-2");
        assert_eq!(pod_selector("tf"), "jobset.sigs.k8s.io/jobset-name=tf");
    }
}
