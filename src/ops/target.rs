//! What a NAME argument names (`cluster::Target`), for the day-two verbs: a TFJob, whose pods
//! the training-operator makes and labels and which each verb reads in its own first request,
//! or a JobSet that `export --to jobset` or `submit --to jobset` made, whose pods the JobSet and
//! Job controllers label (jobset.md §4: `replicatedJobsStatus`, its conditions, the
//! `jobset.sigs.k8s.io/jobset-name` pod label). `commands/` asks here which flags only a TFJob
//! takes; each verb's core (get, logs, delete, wait, diagnose, probe) branches once on the
//! target and takes from here what a JobSet is: its read, its pods and their tasks, its
//! progress, whether JobSet is served and its controller runs.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

use crate::cluster::{self, Action, Kube, Target};
use crate::error::{Error, Result};
use crate::pipeline::jobset::model::{JobSet, JobSetStatus};
use crate::pipeline::jobset::{self, COMPLETION_INDEX_ANNOTATION, LABEL_REPLICATED_JOB};

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

/// A JobSet pod's task, where the pod says it: the replicatedJob it belongs to and its Job's
/// completion index (the export names each replicatedJob after its replica type).
pub fn jobset_task(p: &Pod) -> (Option<&str>, Option<&str>) {
    let m = &p.metadata;
    let rjob = m.labels.as_ref().and_then(|l| l.get(LABEL_REPLICATED_JOB));
    let index = m
        .annotations
        .as_ref()
        .and_then(|a| a.get(COMPLETION_INDEX_ANNOTATION));
    (rjob.map(String::as_str), index.map(String::as_str))
}

/// `<rjob>-<index>` ([`jobset_task`]), `?` for what the pod does not say.
pub fn jobset_replica(p: &Pod) -> String {
    let (rjob, index) = jobset_task(p);
    format!("{}-{}", rjob.unwrap_or("?"), index.unwrap_or("?"))
}

/// The pods of JobSet `name`, listed once by its pod label.
pub async fn jobset_pods(kube: &Kube, name: &str) -> Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(kube.client.clone(), &kube.namespace);
    let lp = ListParams::default().labels(&jobset::pod_selector(name));
    cluster::retry(kube, || pods.list(&lp))
        .await
        .map(|l| l.items)
        .map_err(|e| cluster::explain(e, &Action::new("list", "pods", Some(&kube.namespace)), kube))
}

/// The JobSet's API.
pub(crate) fn jobsets(kube: &Kube) -> Api<JobSet> {
    Api::namespaced(kube.client.clone(), &kube.namespace)
}

/// The JobSet `name` does not exist in the namespace (exit 3, as kubectl's NotFound).
pub(crate) fn jobset_not_found(kube: &Kube, name: &str) -> Error {
    Error::NotFound(format!(
        "jobsets.jobset.x-k8s.io {name:?} not found in namespace {:?}",
        kube.namespace
    ))
}

/// The JobSet `name`, read once, if the plugin made it; said as kubectl says it when it is
/// not there or JobSet is not installed.
pub async fn read_jobset(kube: &Kube, name: &str) -> Result<JobSet> {
    let action = Action::new("get", "jobsets", Some(&kube.namespace)).named(name);
    let api = jobsets(kube);
    match cluster::retry(kube, || api.get_opt(name)).await {
        Ok(Some(js)) => ours(js, &kube.namespace),
        Ok(None) => Err(jobset_not_found(kube, name)),
        Err(e) if cluster::status_code(&e) == Some(404) => Err(jobset_not_served()),
        Err(e) => Err(cluster::explain(e, &action, kube)),
    }
}

/// The JobSet if the plugin made it (`export`/`submit --to jobset` annotate it), else a
/// Conflict (exit 3, as for any object that exists but is not the one asked for): the
/// day-two commands read a JobSet by the shape the export gives it, so another one is left
/// to kubectl.
pub(crate) fn ours(js: JobSet, namespace: &str) -> Result<JobSet> {
    if crate::pipeline::jobset::made_by_plugin(&js) {
        return Ok(js);
    }
    let name = js.metadata.name.clone().unwrap_or_default();
    Err(Error::Conflict {
        message: format!(
            "JobSet {namespace}/{name} was not made by kubectl-tfjob (no annotation {}={}): the jobset/NAME commands act only on JobSets that `export --to jobset` or `submit --to jobset` made",
            crate::pipeline::jobset::MADE_BY_ANNOTATION,
            crate::pipeline::jobset::MADE_FROM
        ),
        hint: Some(format!(
            "Use kubectl for it: kubectl get jobset {name} -n {namespace} -o yaml (or kubectl describe, kubectl delete jobset {name}, kubectl logs -l {})",
            crate::pipeline::jobset::pod_selector(&name)
        )),
    })
}

/// The JobSet API is not served here: install JobSet (server-side: the CRD is over 256 KiB).
pub fn jobset_not_served() -> Error {
    Error::not_ready(
        format!(
            "this cluster does not serve {}/{} (the JobSet CRD {} is not installed)",
            jobset::GROUP,
            jobset::VERSION,
            jobset::CRD_NAME
        ),
        "Install JobSet: kubectl apply --server-side -f https://github.com/kubernetes-sigs/jobset/releases/download/v0.12.0/manifests.yaml",
    )
}

/// Where the upstream manifests install the controller (jobset `config/components/manager`).
pub const CONTROLLER_NAMESPACE: &str = "jobset-system";
pub const CONTROLLER_DEPLOYMENT: &str = "jobset-controller-manager";

/// The JobSet API answers (a list of one) and its controller's Deployment has a ready replica.
/// A Deployment not found or not readable is a warning: it may run under another name.
pub(crate) async fn check_jobset(kube: &Kube, namespace: &str) -> (Vec<Error>, Vec<String>) {
    let api: Api<JobSet> = Api::namespaced(kube.client.clone(), namespace);
    let deps: Api<Deployment> = Api::namespaced(kube.client.clone(), CONTROLLER_NAMESPACE);
    let lp = ListParams::default().limit(1);
    let (served, controller) = tokio::join!(
        cluster::retry(kube, || api.list(&lp)),
        cluster::retry(kube, || deps.get_opt(CONTROLLER_DEPLOYMENT)),
    );
    let mut failures = Vec::new();
    let mut warnings = Vec::new();
    match served {
        Ok(_) => {}
        Err(e) if cluster::status_code(&e) == Some(404) => failures.push(jobset_not_served()),
        Err(e) if cluster::status_code(&e) == Some(403) => {}
        Err(e) => failures.push(cluster::explain(
            e,
            &Action::new("list", "jobsets", Some(namespace)),
            kube,
        )),
    }
    match controller {
        Ok(Some(d)) => {
            let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0);
            if ready == 0 {
                failures.push(Error::not_ready(
                    format!(
                        "the JobSet controller Deployment {CONTROLLER_NAMESPACE}/{CONTROLLER_DEPLOYMENT} has no ready replicas: nothing would create the JobSet's Jobs, and its webhooks would refuse it"
                    ),
                    format!(
                        "Look at why: kubectl describe deployment {CONTROLLER_DEPLOYMENT} {flags}; kubectl logs deployment/{CONTROLLER_DEPLOYMENT} {flags}",
                        flags = kube.hints.ns_flags(CONTROLLER_NAMESPACE)
                    ),
                ));
            }
        }
        Ok(None) => warnings.push(format!(
            "no JobSet controller Deployment {CONTROLLER_NAMESPACE}/{CONTROLLER_DEPLOYMENT}; going on, since it may run under another name"
        )),
        Err(e) => warnings.push(format!(
            "could not read the JobSet controller Deployment ({}); going on",
            crate::error::chain(&e)
        )),
    }
    (failures, warnings)
}

/// What a JobSet's status says about "every pod runs".
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// Every replicatedJob's Jobs are ready (or succeeded).
    AllReady,
    Completed,
    Failed(String),
    /// Per replicatedJob: (name, ready + succeeded Jobs, Jobs wanted).
    Waiting(Vec<(String, i64, i64)>),
}

/// Pure: the JobSet's state by Kueue's `PodsReady` test, which the JobSet controller's
/// `allJobsReady` shares: Σ replicas == Σ (ready + succeeded) over
/// `status.replicatedJobsStatus` (kueue `pkg/controller/jobs/jobset/jobset_controller.go`;
/// jobset `pkg/controllers/jobset_controller.go`), with Completed and Failed not True.
pub fn progress(js: &JobSet) -> Progress {
    let empty = JobSetStatus::default();
    let status = js.status.as_ref().unwrap_or(&empty);
    let cond = |t: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == t && c.status == "True")
    };
    if let Some(c) = cond("Failed") {
        return Progress::Failed(format!("{}: {}", c.reason, c.message));
    }
    if cond("Completed").is_some() {
        return Progress::Completed;
    }
    let rows: Vec<(String, i64, i64)> = js
        .spec
        .replicated_jobs
        .iter()
        .map(|r| {
            let have = status
                .replicated_jobs_status
                .iter()
                .find(|s| s.name == r.name)
                .map(|s| i64::from(s.ready) + i64::from(s.succeeded))
                .unwrap_or(0);
            (r.name.clone(), have, i64::from(r.replicas.unwrap_or(1)))
        })
        .collect();
    let suspended = js.is_suspended();
    if !suspended && rows.iter().all(|(_, have, want)| have >= want) {
        Progress::AllReady
    } else {
        Progress::Waiting(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
