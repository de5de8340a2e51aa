//! `diagnose jobset/NAME` (issue 27): layer by layer, as for a TFJob, by what JobSet and the
//! Job controller write: the JobSet API and controller, the JobSet's conditions, each child
//! Job's conditions and `FailedCreate` events (a pod the API server refused), then each pod's
//! scheduling and container state. The verdict is pure ([`verdict`]); [`run`] collects.

use crate::ops::Context;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Api;
use kube::api::ListParams;

use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::output::Output;
use crate::pipeline::jobset::model::JobSet;

/// What was found, and how the command ends.
#[derive(Debug, PartialEq, Eq)]
pub struct Findings {
    pub lines: Vec<String>,
    /// `None`: nothing wrong (exit 0); else the failure to end with (exit 4).
    pub failure: Option<String>,
}

/// Pure: the findings over what was read.
pub fn verdict(js: &JobSet, jobs: &[Job], pods: &[Pod], events: &[Event]) -> Findings {
    let name = js.metadata.name.clone().unwrap_or_default();
    let mut lines = Vec::new();
    let mut failure = None;
    match crate::ops::target::progress(js) {
        crate::ops::target::Progress::Failed(why) => {
            lines.push(format!("JobSet: Failed ({why})"));
            failure = Some(format!("JobSet {name} failed: {why}"));
        }
        crate::ops::target::Progress::Completed => lines.push("JobSet: Completed".into()),
        crate::ops::target::Progress::AllReady => {
            lines.push("JobSet: every replicatedJob's pods are ready".into())
        }
        crate::ops::target::Progress::Waiting(rows) => lines.push(format!(
            "JobSet: {}{}",
            rows.iter()
                .map(|(r, have, want)| format!("{r} {have}/{want} Jobs ready"))
                .collect::<Vec<_>>()
                .join(", "),
            if js.is_suspended() {
                " (suspended)"
            } else {
                ""
            }
        )),
    }
    for j in jobs {
        let jname = j.metadata.name.clone().unwrap_or_default();
        for c in j.status.iter().flat_map(|s| s.conditions.iter().flatten()) {
            if c.status == "True" && c.type_ == "Failed" {
                lines.push(format!(
                    "Job {jname}: Failed ({}: {})",
                    c.reason.as_deref().unwrap_or(""),
                    c.message.as_deref().unwrap_or("")
                ));
            }
        }
        if let Some(e) = events.iter().rev().find(|e| {
            e.involved_object.name.as_deref() == Some(jname.as_str())
                && e.reason.as_deref() == Some("FailedCreate")
        }) {
            let msg = e.message.clone().unwrap_or_default();
            lines.push(format!("Job {jname}: its pods are refused: {msg}"));
            failure.get_or_insert(format!("the pods of Job {jname} are refused: {msg}"));
        }
    }
    let mut rows: Vec<(String, String)> = Vec::new();
    for p in pods {
        let pname = p.metadata.name.clone().unwrap_or_default();
        let st = p.status.clone().unwrap_or_default();
        if let Some(c) = cluster::pod::unschedulable(&st) {
            let msg = c.message.clone().unwrap_or_default();
            rows.push((pname.clone(), format!("Unschedulable: {msg}")));
            failure.get_or_insert(format!("pod {pname} cannot be scheduled: {msg}"));
            continue;
        }
        for cs in st.container_statuses.iter().flatten() {
            if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref())
                && let Some(reason) = w.reason.as_deref()
                && cluster::pod::STUCK_WAITING_REASONS.contains(&reason)
            {
                let msg = w.message.clone().unwrap_or_default();
                rows.push((
                    pname.clone(),
                    format!("container {}: {reason} {msg}", cs.name),
                ));
                failure.get_or_insert(format!("pod {pname}: container {} is {reason}", cs.name));
            }
        }
    }
    rows.sort();
    for (p, what) in rows {
        lines.push(format!("Pod {p}: {what}"));
    }
    if failure.is_none() && lines.len() == 1 {
        lines.push(format!("{} pods, none stuck", pods.len()));
    }
    Findings { lines, failure }
}

/// `kubectl tfjob diagnose jobset/NAME`: the JobSet API and controller first (a missing
/// controller is why nothing moves), then the JobSet, resolved once.
pub async fn run(ctx: &Context, name: &str, out: &mut Output) -> Result<()> {
    let kube = ctx.kube().await?;
    let ns = kube.namespace.clone();
    let (failures, warnings) = crate::ops::target::check_jobset(kube, &ns).await;
    for w in &warnings {
        out.note_line(&format!("warning: {w}"));
    }
    if !failures.is_empty() {
        return Err(crate::ops::readiness::combine(failures));
    }
    let js = crate::ops::target::read_jobset(kube, name).await?;
    let lp = ListParams::default().labels(&crate::pipeline::jobset::pod_selector(name));
    // Events about Jobs (FailedCreate): the namespace's, filtered here by the Jobs' names.
    let job_events = ListParams::default().fields("involvedObject.kind=Job");
    let (jobs, pods, events) = tokio::join!(
        list::<Job>(kube, &lp, "jobs"),
        list::<Pod>(kube, &lp, "pods"),
        list::<Event>(kube, &job_events, "events"),
    );
    let v = verdict(&js, &jobs?, &pods?, &events.unwrap_or_default());
    for l in &v.lines {
        out.data_line(l)?;
    }
    match v.failure {
        Some(f) => Err(Error::JobFailed(f)),
        None => Ok(()),
    }
}

async fn list<K>(kube: &Kube, lp: &ListParams, resource: &'static str) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(kube.client.clone(), &kube.namespace);
    cluster::retry(kube, || api.list(lp))
        .await
        .map(|l| l.items)
        .map_err(|e| {
            cluster::explain(
                e,
                &Action::new("list", resource, Some(&kube.namespace)),
                kube,
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refused_pod_create_is_the_verdict_and_names_its_job() {
        let js: JobSet = serde_json::from_value(json!({"apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet", "metadata": {"name": "x"},
            "spec": {"replicatedJobs": [{"name": "worker", "replicas": 1, "template": {}}]}}))
        .unwrap();
        let job: Job = serde_json::from_value(json!({"metadata": {"name": "x-worker-0"}})).unwrap();
        let ev: Event = serde_json::from_value(json!({"metadata": {"name": "e"},
            "involvedObject": {"kind": "Job", "name": "x-worker-0"}, "reason": "FailedCreate",
            "message": "Error creating: pods \"x-worker-0-0-abcde\" is forbidden: error looking up service account default/trainer"}))
        .unwrap();
        let v = verdict(&js, &[job], &[], &[ev]);
        assert_eq!(v.lines[0], "JobSet: worker 0/1 Jobs ready");
        assert!(
            v.lines[1].starts_with("Job x-worker-0: its pods are refused: Error creating"),
            "{:?}",
            v.lines
        );
        assert!(
            v.failure
                .unwrap()
                .contains("service account default/trainer")
        );
        let healthy = verdict(&js, &[], &[], &[]);
        assert_eq!(healthy.failure, None);
        assert_eq!(healthy.lines[1], "0 pods, none stuck");
    }
}
