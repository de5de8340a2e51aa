//! The Workload (issue 59): what a NAME argument names (`cluster::Target`), read once for the
//! verbs, one kind per arm. A TFJob, whose pods the training-operator makes and labels, is
//! read here; a JobSet that `export --to jobset` or `submit --to jobset` made is the
//! [`jobset`] arm (its reading, its one health verdict, its watch and its diagnosis).
//! [`Workload`] is the object read with one wording for "not there" and "not served" per
//! kind, and what both kinds answer alike: the selector of their pods, the pods, a pod's
//! replica, how many pods they expect, whether it has ended. `commands/` asks here which flags
//! only a TFJob takes; each verb's core branches once on the Workload for what differs (a
//! JobSet's health is [`jobset::health`]; a TFJob's is `ops::wait`'s).

pub mod jobset;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::Api;
use kube::api::{DynamicObject, ListParams};

use crate::cluster::{self, Action, Kube, Target};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::pipeline::jobset::model::JobSet;
use jobset::{Phase, jobset_replica, jobset_task, read_jobset};

/// The job a NAME names, read once.
#[derive(Debug, Clone)]
pub enum Workload {
    TfJob(TFJob),
    JobSet(JobSet),
}

impl Workload {
    /// Reads the target in the context's namespace: [`read_tfjob`] or [`read_jobset`].
    pub async fn read(kube: &Kube, target: &Target) -> Result<Workload> {
        match target {
            Target::TfJob(name) => read_tfjob(kube, name).await.map(Workload::TfJob),
            Target::JobSet(name) => read_jobset(kube, name).await.map(Workload::JobSet),
        }
    }

    pub fn name(&self) -> String {
        match self {
            Workload::TfJob(j) => j.metadata.name.clone(),
            Workload::JobSet(j) => j.metadata.name.clone(),
        }
        .unwrap_or_default()
    }

    /// The kind, as messages name it (`tfjob`, `jobset`).
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::TfJob(_) => "tfjob",
            Workload::JobSet(_) => "jobset",
        }
    }

    /// Whether it has ended: its last condition, and a sentence when it failed. A TFJob ends
    /// Succeeded or Failed (the operator's conditions), a JobSet Completed or Failed (its
    /// controller's).
    pub fn ended(&self) -> Option<Ended> {
        match self {
            Workload::TfJob(j) if j.is_finished() => Some(Ended {
                condition: j.state(),
                failure: j.is_failed().then(|| {
                    let why = j
                        .condition(model::condition::FAILED)
                        .and_then(|c| c.message.clone());
                    format!(
                        "TFJob {} failed: {}",
                        self.name(),
                        why.as_deref().unwrap_or("(no message)")
                    )
                }),
            }),
            Workload::TfJob(_) => None,
            Workload::JobSet(js) => match jobset::health(js, &[], &[], &[]).phase {
                Phase::Completed => Some(Ended {
                    condition: "Completed".into(),
                    failure: None,
                }),
                Phase::Failed(why) => Some(Ended {
                    condition: "Failed".into(),
                    failure: Some(format!("JobSet {} failed: {why}", self.name())),
                }),
                Phase::AllReady | Phase::Waiting(_) => None,
            },
        }
    }

    /// The specs of its pod templates (for the Secrets their environment reads).
    pub fn pod_specs(&self) -> Vec<&PodSpec> {
        match self {
            Workload::TfJob(j) => j.pod_specs().collect(),
            Workload::JobSet(j) => j
                .spec
                .replicated_jobs
                .iter()
                .filter_map(|r| r.template.spec.as_ref()?.template.spec.as_ref())
                .collect(),
        }
    }

    /// A pod's replica as `logs` prefixes its lines (`worker-1`): the operator's labels, or
    /// the replicatedJob and completion index ([`jobset_replica`]).
    pub fn pod_label(&self, pod: &cluster::pod::Pod) -> String {
        match self {
            Workload::TfJob(_) => crate::print::jobview::replica_label(pod),
            Workload::JobSet(_) => jobset_replica(&pod.metadata),
        }
    }

    /// Whether `--replica-type` / `--index` select the pod: by the operator's labels, or by
    /// a JobSet pod's replicatedJob and completion index.
    pub fn selects(
        &self,
        pod: &cluster::pod::Pod,
        replica_type: Option<&str>,
        index: Option<u32>,
    ) -> bool {
        match self {
            Workload::TfJob(_) => crate::print::jobview::selected(pod, replica_type, index),
            Workload::JobSet(_) => {
                let (rjob, at) = jobset_task(&pod.metadata);
                replica_type.is_none_or(|t| rjob.is_some_and(|r| t.eq_ignore_ascii_case(r)))
                    && index.is_none_or(|i| at == Some(i.to_string().as_str()))
            }
        }
    }

    /// How many pods `--replica-type` / `--index` select when every replica runs (at most
    /// [`model::MAX_LISTED_PODS_PER_TYPE`] per type, so a hostile count stays bounded). A
    /// JobSet runs each replicatedJob's Jobs (`replicas`, the CRD's default 1) times each
    /// Job's `parallelism` (the Job API's default 1) pods.
    pub fn expected_selected(&self, replica_type: Option<&str>, index: Option<u32>) -> usize {
        let js = match self {
            Workload::TfJob(j) => {
                return crate::print::jobview::expected_replicas(j, replica_type, index);
            }
            Workload::JobSet(js) => js,
        };
        js.spec
            .replicated_jobs
            .iter()
            .filter(|r| replica_type.is_none_or(|t| t.eq_ignore_ascii_case(&r.name)))
            .map(|r| {
                let jobs = r.replicas.unwrap_or(1).max(0) as usize;
                let per_job =
                    r.template
                        .spec
                        .as_ref()
                        .and_then(|s| s.parallelism)
                        .unwrap_or(1)
                        .clamp(0, model::MAX_LISTED_PODS_PER_TYPE) as usize;
                let per_job = match index {
                    Some(i) => usize::from((i as usize) < per_job),
                    None => per_job,
                };
                jobs.saturating_mul(per_job)
            })
            .fold(0, usize::saturating_add)
    }

    /// The label selector of its pods (and, for a TFJob, of the operator's Services).
    pub fn selector(&self) -> String {
        match self {
            Workload::TfJob(_) => model::job_selector(&self.name()),
            Workload::JobSet(_) => crate::pipeline::jobset::pod_selector(&self.name()),
        }
    }

    /// How many pods it runs when every replica runs: a TFJob's operator pods
    /// ([`crate::operator_pods`]), a JobSet's Jobs times each Job's parallelism
    /// ([`Workload::expected_selected`]).
    pub fn expected_pods(&self) -> usize {
        match self {
            Workload::TfJob(j) => crate::operator_pods::expand(j)
                .expected()
                .values()
                .map(|n| (*n).max(0) as usize)
                .sum(),
            Workload::JobSet(_) => self.expected_selected(None, None),
        }
    }

    /// Its pods, listed once by [`Workload::selector`].
    pub async fn pods(&self, kube: &Kube) -> Result<Vec<Pod>> {
        list_pods(kube, &self.selector()).await
    }
}

/// The pods of JobSet `name`, listed once by its pod label.
pub async fn jobset_pods(kube: &Kube, name: &str) -> Result<Vec<Pod>> {
    list_pods(kube, &crate::pipeline::jobset::pod_selector(name)).await
}

async fn list_pods(kube: &Kube, selector: &str) -> Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(kube.client.clone(), &kube.namespace);
    let lp = ListParams::default().labels(selector);
    cluster::retry(kube, || pods.list(&lp))
        .await
        .map(|l| l.items)
        .map_err(|e| cluster::explain(e, &Action::new("list", "pods", Some(&kube.namespace)), kube))
}

/// A job that has ended ([`Workload::ended`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// Its last condition (`Succeeded`, `Failed`, `Completed`).
    pub condition: String,
    /// When it failed, the sentence that says so with the controller's words.
    pub failure: Option<String>,
}

/// The TFJob `name` in the context's namespace, read once; said as every verb says it when it
/// is not there ([`cluster::notfound`]) or the CRD is not served ([`cluster::tfjob_error`]).
pub async fn read_tfjob(kube: &Kube, name: &str) -> Result<TFJob> {
    let api = Api::namespaced(kube.client.clone(), &kube.namespace);
    let job: TFJob = read_tfjob_as(kube, api, name).await?;
    arm(kube, &Workload::TfJob(job.clone())).await;
    Ok(job)
}

/// [`read_tfjob`] as the API returned it, for the printers (`-o json` prints every field,
/// those the typed model does not know included).
pub async fn read_tfjob_object(kube: &Kube, name: &str) -> Result<DynamicObject> {
    let api = Api::namespaced_with(
        kube.client.clone(),
        &kube.namespace,
        &model::dynamic_resource(),
    );
    let job: DynamicObject = read_tfjob_as(kube, api, name).await?;
    // The printers take the object as it came; the redactor needs its pod templates.
    let specs: Vec<PodSpec> = job.data["spec"]["tfReplicaSpecs"]
        .as_object()
        .into_iter()
        .flat_map(|r| r.values())
        .filter_map(|r| serde_json::from_value(r["template"]["spec"].clone()).ok())
        .collect();
    cluster::secret::arm_redactor(kube, &kube.namespace, &specs).await;
    Ok(job)
}

/// Every Secret value the job's pods can see is registered with the redactor the moment the
/// job is read ([`cluster::secret::arm_redactor`]): by construction, not per verb.
async fn arm(kube: &Kube, job: &Workload) {
    cluster::secret::arm_redactor(kube, &kube.namespace, job.pod_specs()).await;
}

/// The one GET of a TFJob by name, typed or raw, with the one wording for "not there".
async fn read_tfjob_as<K>(kube: &Kube, api: Api<K>, name: &str) -> Result<K>
where
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    match cluster::retry(kube, || api.get_opt(name)).await {
        Ok(Some(job)) => Ok(job),
        Ok(None) => Err(cluster::notfound::tfjob(kube, &kube.namespace, name).await),
        Err(e) => Err(cluster::tfjob_error(format!("reading tfjob {name}"), e)),
    }
}

/// A pod's replica as diagnose, wait and probe name it (`Worker-1`): from the operator's
/// labels, else from a JobSet pod's replicatedJob and completion index, else its name.
pub fn replica_of(pod: &Pod) -> String {
    let meta = &pod.metadata;
    let operator = meta
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(model::LABEL_REPLICA_TYPE));
    match jobset_task(meta) {
        (Some(rjob), Some(index)) if !operator => {
            format!("{}-{index}", cluster::pod::canonical_replica_type(rjob))
        }
        _ => crate::diagnose::failure::replica_label(meta, None),
    }
}

/// The TFJob names among `targets`; a JobSet is refused (exit 2, before any request) unless
/// it is the only one, which the caller handles: `done` says what the verb does with it
/// (`shown`, `deleted`), `command` names the verb.
pub fn tfjob_names(targets: &[Target], done: &str, command: &str) -> Result<Vec<String>> {
    targets
        .iter()
        .map(|t| match t {
            Target::TfJob(name) => Ok(name.clone()),
            Target::JobSet(name) => Err(Error::Usage(format!(
                "jobset/{name} is {done} on its own: `kubectl tfjob {command} jobset/{name}`"
            ))),
        })
        .collect()
}

/// Refuses, before any request, a flag that only a TFJob takes (exit 2): the evidence of
/// `--save`, the training progress of `--for training`, diagnose's `--probe`. `instead` says
/// what to run for the JobSet; empty when nothing does.
pub fn tfjob_only(target: &Target, flag: &str, given: bool, instead: &str) -> Result<()> {
    let Target::JobSet(_) = target else {
        return Ok(());
    };
    if !given {
        return Ok(());
    }
    let mut message = format!("{flag} is for a TFJob; it is not taken for a JobSet");
    if !instead.is_empty() {
        message.push_str(&format!(": {instead}"));
    }
    Err(Error::Usage(message))
}

#[cfg(test)]
mod tests {
    use super::jobset::*;
    use super::*;
    use crate::pipeline::jobset::{COMPLETION_INDEX_ANNOTATION, LABEL_REPLICATED_JOB};

    #[test]
    fn only_a_jobset_with_the_export_annotation_is_the_plugins() {
        let mut js: JobSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "x"}, "spec": {"replicatedJobs": []}
        }))
        .unwrap();
        let err = ours(js.clone(), "ns").unwrap_err();
        assert_eq!(err.exit_code(), crate::error::ExitCode::NotReady);
        assert!(
            err.to_string()
                .contains("JobSet ns/x was not made by kubectl-tfjob")
        );
        assert!(err.hint().unwrap().contains("kubectl get jobset x -n ns"));
        js.metadata.annotations = Some(
            [(
                crate::pipeline::jobset::MADE_BY_ANNOTATION.to_string(),
                "other".to_string(),
            )]
            .into(),
        );
        assert!(
            ours(js.clone(), "ns").is_err(),
            "another value is not the mark"
        );
        js.metadata.annotations = Some(
            [(
                crate::pipeline::jobset::MADE_BY_ANNOTATION.to_string(),
                crate::pipeline::jobset::MADE_FROM.to_string(),
            )]
            .into(),
        );
        assert!(ours(js, "ns").is_ok());
    }

    fn pod(labels: serde_json::Value, annotations: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p-0", "labels": labels, "annotations": annotations}
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_names_its_replica_by_either_kinds_labels() {
        let operator = pod(
            serde_json::json!({model::LABEL_REPLICA_TYPE: "worker", model::LABEL_REPLICA_INDEX: "1"}),
            serde_json::json!({}),
        );
        assert_eq!(replica_of(&operator), "Worker-1");
        let exported = pod(
            serde_json::json!({LABEL_REPLICATED_JOB: "ps"}),
            serde_json::json!({COMPLETION_INDEX_ANNOTATION: "0"}),
        );
        assert_eq!(replica_of(&exported), "PS-0");
        assert_eq!(jobset_replica(&exported.metadata), "ps-0");
        let neither = pod(serde_json::json!({}), serde_json::json!({}));
        assert_eq!(replica_of(&neither), "p-0");
    }

    #[test]
    fn both_kinds_count_the_pods_they_run() {
        let tfjob: TFJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "t"},
            "spec": {"tfReplicaSpecs": {
                "PS": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}},
                "Worker": {"replicas": 3, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}
            }}
        }))
        .unwrap();
        let tfjob = Workload::TfJob(tfjob);
        assert_eq!(tfjob.expected_pods(), 4, "PS defaults to one replica");
        assert_eq!(tfjob.selector(), model::job_selector("t"));
        let js: JobSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
            "spec": {"replicatedJobs": [
                {"name": "ps", "template": {"spec": {"template": {}}}},
                {"name": "worker", "replicas": 2, "template": {"spec": {"parallelism": 2, "template": {}}}}
            ]}
        }))
        .unwrap();
        let js = Workload::JobSet(js);
        assert_eq!(js.expected_pods(), 5, "1 ps Job, 2 worker Jobs of 2 pods");
        assert_eq!(js.selector(), crate::pipeline::jobset::pod_selector("j"));
        assert_eq!(js.name(), "j");
    }

    #[test]
    fn a_tfjob_only_flag_is_refused_for_a_jobset_alone() {
        let js = Target::JobSet("j".into());
        let tf = Target::TfJob("j".into());
        assert!(tfjob_only(&tf, "--save", true, "").is_ok());
        assert!(tfjob_only(&js, "--save", false, "").is_ok());
        let err =
            tfjob_only(&js, "--probe", true, "run `kubectl tfjob probe jobset/j`").unwrap_err();
        assert_eq!(err.exit_code(), crate::error::ExitCode::Invalid);
        assert_eq!(
            err.to_string(),
            "--probe is for a TFJob; it is not taken for a JobSet: run `kubectl tfjob probe jobset/j`"
        );
    }
}
