//! TFJob → JobSet (issue 27), pure: the same pods, the same TF_CONFIG after expansion, success
//! and failure decided as the operator decides them as far as JobSet can say it, and a [`Note`]
//! for every TFJob feature it cannot carry. Facts: kubeflow/trainer v1.9.4
//! `pkg/controller.v1/tensorflow/tfjob_controller.go` (`UpdateJobStatus`, `SetClusterSpec`),
//! `pkg/controller.v1/common/{pod,job,service}.go`, `pkg/apis/kubeflow.org/v1/tensorflow_defaults.go`;
//! kubernetes-sigs/jobset v0.12.0 `api/jobset/v1alpha2/jobset_types.go`,
//! `pkg/controllers/jobset_controller.go`; kubernetes/api `batch/v1/types.go` (JobSpec).
//!
//! Layout: one replicatedJob per replica type, named with the lowercase type, `replicas: 1`,
//! and an Indexed Job with `completions = parallelism = replicas`, so a pod's completion index
//! is its TF task index and its hostname `<js>-<type>-0-<i>`.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{
    JobSpec, JobTemplateSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyRule, SuccessPolicy as JobSuccessPolicy, SuccessPolicyRule,
};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodTemplateSpec,
};
use kube::api::ObjectMeta;

use super::model::{JobSet, JobSetSpec, Network, ReplicatedJob, SuccessPolicy};
use super::tfconfig::{self, Addressing, INDEX_VAR, NAME_VAR, NAMESPACE_VAR, Replica, Source};
use super::{COMPLETION_INDEX_ANNOTATION, LABEL_JOBSET_NAME};
use crate::model::{DEFAULT_CONTAINER_NAME, ReplicaType, TFJob};
use crate::operator_pods;

/// `managedBy` values that mean something to a JobSet: MultiKueue's (jobset
/// `pkg/webhooks/jobset_webhook.go` accepts any domain-prefixed path; the operator's own value
/// would leave the JobSet to a controller that does not exist).
const MULTIKUEUE: &str = "kueue.x-k8s.io/multikueue";
/// Job `backoffLimit` when the TFJob set none: the operator never fails a job for restarts
/// then, while a Job's default is 6 (tfconfig.md §3; kubernetes/api JobSpec.backoffLimit).
pub const UNLIMITED_BACKOFF: i32 = i32::MAX;
/// The annotation kubectl apply writes about the TFJob; it does not describe the JobSet.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Something of the TFJob the JobSet does not do the same way: named, never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The TFJob field (or behaviour) concerned.
    pub field: String,
    pub message: String,
}

/// The exported JobSet and what it could not express.
#[derive(Debug, Clone)]
pub struct Exported {
    pub jobset: JobSet,
    pub notes: Vec<Note>,
}

/// Why a TFJob cannot be exported (exit 2: the input must change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: String,
    pub message: String,
}

fn note(notes: &mut Vec<Note>, field: impl Into<String>, message: impl Into<String>) {
    notes.push(Note {
        field: field.into(),
        message: message.into(),
    });
}

/// Replica types in the order the replicatedJobs are listed: the coordinating roles first,
/// then unknown keys (the operator makes pods for those too, and lists them in TF_CONFIG).
fn ordered_keys(job: &TFJob) -> Vec<(String, Option<ReplicaType>)> {
    let rank = |t: Option<ReplicaType>| match t {
        Some(ReplicaType::Chief) => 0,
        Some(ReplicaType::Master) => 1,
        Some(ReplicaType::PS) => 2,
        Some(ReplicaType::Worker) => 3,
        Some(ReplicaType::Evaluator) => 4,
        None => 5,
    };
    let mut keys: Vec<(String, Option<ReplicaType>)> = job
        .spec
        .tf_replica_specs
        .keys()
        .map(|k| (k.clone(), ReplicaType::from_any_case(k)))
        .collect();
    keys.sort_by_key(|(k, t)| (rank(*t), k.clone()));
    keys
}

/// Exports `job`. `namespace` is where it will be created when the job names none (`-n`);
/// without either, addresses read the pod's namespace at run time.
pub fn export(job: &TFJob, namespace: Option<&str>) -> Result<Exported, Vec<Refusal>> {
    let mut notes = Vec::new();
    let mut refusals = Vec::new();
    let meta = &job.metadata;
    let namespace = meta.namespace.as_deref().or(namespace);
    let addressing = Addressing {
        jobset: match &meta.name {
            Some(n) => Source::Literal(n.clone()),
            None => Source::Var(NAME_VAR),
        },
        namespace: match namespace {
            Some(ns) => Source::Literal(ns.to_string()),
            None => Source::Var(NAMESPACE_VAR),
        },
    };
    let keys = ordered_keys(job);
    // The operator's pods ([`operator_pods`]): counts, ports, pod specs with the default port.
    let model = operator_pods::expand(job);
    let replica = |k: &str| {
        model
            .replicas
            .iter()
            .find(|r| r.key == k)
            .expect("one replica per key")
    };
    let replicas_of = |k: &str| i64::from(replica(k).count);
    let types: Vec<Replica> = keys
        .iter()
        .map(|(k, _)| Replica {
            lower: replica(k).lower.replace('/', "-"),
            replicas: replicas_of(k),
            port: i64::from(replica(k).port),
        })
        .collect();
    let distributed = model.distributed;
    let dynamic = job.spec.enable_dynamic_worker == Some(true);
    let run = job.spec.run_policy.clone().unwrap_or_default();

    // Who decides success (UpdateJobStatus): a chief or master; else the workers, worker 0
    // alone unless successPolicy is AllWorkers.
    let chief = keys
        .iter()
        .find(|(k, t)| t.is_some_and(ReplicaType::is_chief_like) && replicas_of(k) > 0);
    let worker = keys
        .iter()
        .find(|(k, t)| *t == Some(ReplicaType::Worker) && replicas_of(k) > 0);
    let all_workers = job.spec.success_policy.as_deref() == Some("AllWorkers");
    let target = chief.or(worker).map(|(k, _)| k.to_lowercase());
    let worker0_decides = chief.is_none() && worker.is_some() && !all_workers;

    let mut rjobs = Vec::new();
    for ((key, _), r) in keys.iter().zip(&types) {
        let spec = &job.spec.tf_replica_specs[key];
        let path = format!("spec.tfReplicaSpecs.{key}");
        if r.replicas <= 0 {
            note(
                &mut notes,
                format!("{path}.replicas"),
                "0 replicas: no replicatedJob (an Indexed Job needs at least one completion); TF_CONFIG still lists the type, empty",
            );
            continue;
        }
        let replicas = i32::try_from(r.replicas).unwrap_or(i32::MAX);
        let policy = spec.restart_policy.as_deref().unwrap_or("Never");
        let (pod_policy, backoff, failure_policy) =
            restart_mapping(policy, run.backoff_limit, &path, &mut notes);
        // The operator's pod spec (with its default tfjob-port), under the Job's restartPolicy.
        let mut pod = model.pod_spec(replica(key));
        pod.restart_policy = Some(pod_policy.into());
        if distributed
            && let Some(c) = pod
                .containers
                .iter_mut()
                .find(|c| c.name == DEFAULT_CONTAINER_NAME)
        {
            let value = if dynamic {
                tfconfig::sparse_tf_config(&addressing, &types, &r.lower)
            } else {
                tfconfig::tf_config(&addressing, &types, &r.lower)
            };
            let cpath = format!("{path}.template.spec.containers[{DEFAULT_CONTAINER_NAME}]");
            set_tf_config(c, &addressing, value, &cpath, &mut notes, &mut refusals);
        }
        let template = PodTemplateSpec {
            metadata: spec.template.metadata.clone(),
            spec: Some(pod),
        };
        let job_success =
            (worker0_decides && Some(key) == worker.map(|(k, _)| k)).then(|| JobSuccessPolicy {
                rules: vec![SuccessPolicyRule {
                    succeeded_indexes: Some("0".into()),
                    succeeded_count: None,
                }],
            });
        rjobs.push(indexed_job(
            &r.lower,
            replicas,
            (backoff, failure_policy, job_success),
            run.active_deadline_seconds,
            template,
        ));
    }

    if worker0_decides {
        note(
            &mut notes,
            "spec.successPolicy",
            "worker 0 decides success as with the operator, through the worker Job's successPolicy (succeededIndexes \"0\"): Kubernetes 1.31 or newer (JobSuccessPolicy)",
        );
    }
    if target.is_none() {
        note(
            &mut notes,
            "spec.tfReplicaSpecs",
            "no chief, master or worker: the operator never marks such a TFJob Succeeded; the JobSet completes when every pod exits 0",
        );
    }
    behaviour_notes(job, &run, &mut notes);

    let (metadata, managed_by) = metadata(meta, &run, &mut notes);
    let jobset = JobSet {
        metadata,
        spec: JobSetSpec {
            replicated_jobs: rjobs,
            // The webhook's defaults, written out: TF_CONFIG's addresses depend on them, and
            // DNS records must exist before pods are Ready, as TF dials its peers at start.
            network: Some(Network {
                enable_dns_hostnames: Some(true),
                subdomain: None,
                publish_not_ready_addresses: Some(true),
            }),
            success_policy: Some(SuccessPolicy {
                operator: "All".into(),
                target_replicated_jobs: target.into_iter().collect(),
            }),
            failure_policy: None,
            suspend: run.suspend,
            managed_by,
            ttl_seconds_after_finished: run.ttl_seconds_after_finished,
        },
        status: None,
    };
    if refusals.is_empty() {
        Ok(Exported { jobset, notes })
    } else {
        Err(refusals)
    }
}

/// One replica type as a replicatedJob of one Indexed Job, a completion per replica.
fn indexed_job(
    name: &str,
    replicas: i32,
    (backoff, failure_policy, success): (i32, Option<PodFailurePolicy>, Option<JobSuccessPolicy>),
    active_deadline_seconds: Option<i64>,
    template: PodTemplateSpec,
) -> ReplicatedJob {
    ReplicatedJob {
        name: name.to_string(),
        group_name: None,
        replicas: Some(1),
        template: JobTemplateSpec {
            metadata: None,
            spec: Some(JobSpec {
                completion_mode: Some("Indexed".into()),
                completions: Some(replicas),
                parallelism: Some(replicas),
                backoff_limit: Some(backoff),
                pod_failure_policy: failure_policy,
                success_policy: success,
                active_deadline_seconds,
                template,
                ..Default::default()
            }),
        },
    }
}

/// The JobSet's metadata from the TFJob's (without kubectl's last-applied record, marked as
/// this tool's), and its managedBy: MultiKueue's is kept, the training-operator's is not.
fn metadata(
    meta: &ObjectMeta,
    run: &crate::model::RunPolicy,
    notes: &mut Vec<Note>,
) -> (ObjectMeta, Option<String>) {
    let labels = meta.labels.clone().unwrap_or_default();
    let mut annotations: BTreeMap<String, String> = meta.annotations.clone().unwrap_or_default();
    if annotations.remove(LAST_APPLIED).is_some() {
        note(
            notes,
            format!("metadata.annotations.{LAST_APPLIED}"),
            "dropped: it records the TFJob as last applied, not the JobSet",
        );
    }
    // Marks the JobSet as the plugin's, for the day-two commands (jobset/mod.rs).
    annotations.insert(
        super::MADE_BY_ANNOTATION.to_string(),
        super::MADE_FROM.to_string(),
    );
    let managed_by = match run.managed_by.as_deref() {
        Some(MULTIKUEUE) => Some(MULTIKUEUE.to_string()),
        Some(other) => {
            note(
                notes,
                "spec.runPolicy.managedBy",
                format!(
                    "{other:?} names the training-operator; the JobSet is left to the JobSet controller"
                ),
            );
            None
        }
        None => None,
    };
    let metadata = ObjectMeta {
        name: meta.name.clone(),
        generate_name: meta.generate_name.clone(),
        namespace: meta.namespace.clone(),
        labels: (!labels.is_empty()).then_some(labels),
        annotations: (!annotations.is_empty()).then_some(annotations),
        ..Default::default()
    };
    (metadata, managed_by)
}

/// restartPolicy → (pod restartPolicy, Job backoffLimit, podFailurePolicy), after the
/// operator's `SetRestartPolicy` and `ReconcilePods` (tfconfig.md §3).
fn restart_mapping(
    policy: &str,
    backoff_limit: Option<i32>,
    path: &str,
    notes: &mut Vec<Note>,
) -> (&'static str, i32, Option<PodFailurePolicy>) {
    match policy {
        // The operator fails the TFJob on the first failed pod.
        "Never" => ("Never", 0, None),
        // Pod Never; exit codes 1–127 of `tensorflow` fail the job, others (≥128, a signal)
        // get a new pod (IsRetryableExitCode).
        "ExitCode" => (
            "Never",
            backoff_limit.unwrap_or(UNLIMITED_BACKOFF),
            Some(PodFailurePolicy {
                rules: vec![PodFailurePolicyRule {
                    action: "FailJob".into(),
                    on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                        container_name: Some(DEFAULT_CONTAINER_NAME.into()),
                        operator: "In".into(),
                        values: (1..=127).collect(),
                    }),
                    on_pod_conditions: None,
                }],
            }),
        ),
        other => {
            if other == "Always" {
                note(
                    notes,
                    format!("{path}.restartPolicy"),
                    "Always: a Job's pods may only restart OnFailure, so a container that exits 0 is not started again",
                );
            }
            if backoff_limit.is_some() {
                note(
                    notes,
                    "spec.runPolicy.backoffLimit",
                    "counts restarts per replica type (each Job), not over the whole TFJob",
                );
            }
            (
                "OnFailure",
                backoff_limit.unwrap_or(UNLIMITED_BACKOFF),
                None,
            )
        }
    }
}

/// The user's env first, then the variables TF_CONFIG refers to, then TF_CONFIG, as the
/// operator appends it after the user's entries.
fn set_tf_config(
    c: &mut Container,
    addressing: &Addressing,
    value: String,
    cpath: &str,
    notes: &mut Vec<Note>,
    refusals: &mut Vec<Refusal>,
) {
    let env = c.env.get_or_insert_with(Vec::new);
    if let Some(first) = env.iter().position(|e| e.name == "TF_CONFIG") {
        // The kubelet expands `$(TF_CONFIG)` in a later entry to the value above it: the
        // user's, since the operator appends its own last (kubernetes
        // third_party/forked/golang/expansion; training-operator setClusterSpec). Such a
        // reader keeps the user's entry where it is; otherwise it is dropped as dead.
        let reader = env[first + 1..]
            .iter()
            .filter(|e| e.name != "TF_CONFIG")
            .find(|e| e.value.as_deref().is_some_and(refers_to_tf_config))
            .map(|e| e.name.clone());
        match reader {
            Some(reader) => note(
                notes,
                format!("{cpath}.env.TF_CONFIG"),
                format!(
                    "kept where it is: {reader} reads it by $(TF_CONFIG), as in the operator's pods; the operator's TF_CONFIG follows it and wins"
                ),
            ),
            None => {
                env.retain(|e| e.name != "TF_CONFIG");
                note(
                    notes,
                    format!("{cpath}.env.TF_CONFIG"),
                    "replaced by the one the operator would set (it appends its own after yours)",
                );
            }
        }
    }
    let mut wanted = vec![(
        INDEX_VAR,
        format!("metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"),
    )];
    if addressing.jobset == Source::Var(NAME_VAR) {
        wanted.push((NAME_VAR, format!("metadata.labels['{LABEL_JOBSET_NAME}']")));
    }
    if addressing.namespace == Source::Var(NAMESPACE_VAR) {
        wanted.push((NAMESPACE_VAR, "metadata.namespace".into()));
    }
    for (name, field_path) in wanted {
        let var = EnvVar {
            name: name.into(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path,
                }),
                ..Default::default()
            }),
        };
        match env.iter().find(|e| e.name == name) {
            Some(e) if *e == var => {}
            Some(_) => refusals.push(Refusal {
                field: format!("{cpath}.env.{name}"),
                message: format!(
                    "TF_CONFIG's export reads {name} as {}; rename your variable",
                    var.value_from
                        .as_ref()
                        .and_then(|v| v.field_ref.as_ref())
                        .map(|f| f.field_path.as_str())
                        .unwrap_or_default()
                ),
            }),
            None => env.push(var),
        }
    }
    env.push(EnvVar {
        name: "TF_CONFIG".into(),
        value: Some(value),
        value_from: None,
    });
}

/// Whether an env value refers to `$(TF_CONFIG)` under the kubelet's expansion rules (`$$` is
/// an escape, not a reference).
fn refers_to_tf_config(value: &str) -> bool {
    let hit = std::cell::Cell::new(false);
    tfconfig::expand(value, |name| {
        if name == "TF_CONFIG" {
            hit.set(true);
        }
        None
    });
    hit.get()
}

/// What the operator does that a JobSet does not, whatever the replica types.
fn behaviour_notes(job: &TFJob, run: &crate::model::RunPolicy, notes: &mut Vec<Note>) {
    match run.clean_pod_policy.as_deref().filter(|p| !p.is_empty()) {
        None | Some("None") => note(
            notes,
            "spec.runPolicy.cleanPodPolicy",
            format!(
                "{}: pods still running when the TFJob ends (PS) are kept by the operator; a finished JobSet deletes its unfinished Jobs and their pods (as Running)",
                run.clean_pod_policy
                    .as_deref()
                    .filter(|p| !p.is_empty())
                    .map_or("unset (the operator's default None)".to_string(), |p| p
                        .to_string())
            ),
        ),
        Some("All") => note(
            notes,
            "spec.runPolicy.cleanPodPolicy",
            "All: a finished JobSet keeps its finished Jobs' pods until it is deleted (set ttlSecondsAfterFinished to delete it all)",
        ),
        _ => {}
    }
    let name = job.metadata.name.as_deref().unwrap_or("<name>");
    note(
        notes,
        "services",
        format!(
            "the operator's Service per replica ({name}-worker-0, …) is not made: JobSet makes one headless Service named after the JobSet, pods resolve as {name}-worker-0-0.{name}.<namespace>.svc; whatever reached the old names (TensorBoard, notebooks) must change"
        ),
    );
    note(
        notes,
        "labels",
        "pods no longer carry training.kubeflow.org/{job-name,replica-type,replica-index,job-role,operator-name}; select them by jobset.sigs.k8s.io/jobset-name, jobset.sigs.k8s.io/replicatedjob-name and batch.kubernetes.io/job-completion-index",
    );
    note(
        notes,
        "restarts",
        "a failed Job fails the whole JobSet (no failurePolicy); the operator restarts or fails single pods and never recreates the set",
    );
    if job.spec.enable_dynamic_worker == Some(true) {
        note(
            notes,
            "spec.enableDynamicWorker",
            "a failed worker now fails the JobSet (the operator ignored worker failures); TF_CONFIG keeps the sparse form",
        );
    }
    if run.active_deadline_seconds.is_some() {
        note(
            notes,
            "spec.runPolicy.activeDeadlineSeconds",
            "set on each Job, whose clock starts when that Job does (reason DeadlineExceeded)",
        );
    }
    if let Some(sp) = &run.scheduling_policy {
        let set: Vec<&str> = [
            ("minAvailable", sp.min_available.is_some()),
            ("queue", sp.queue.is_some()),
            ("minResources", sp.min_resources.is_some()),
            ("priorityClass", sp.priority_class.is_some()),
            (
                "scheduleTimeoutSeconds",
                sp.schedule_timeout_seconds.is_some(),
            ),
        ]
        .into_iter()
        .filter_map(|(f, on)| on.then_some(f))
        .collect();
        if !set.is_empty() {
            note(
                notes,
                "spec.runPolicy.schedulingPolicy",
                format!(
                    "{}: gang scheduling (a Volcano or scheduler-plugins PodGroup) has no JobSet field; queue with Kueue instead (label {})",
                    set.join(", "),
                    super::KUEUE_QUEUE_LABEL
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests;
