//! `wait`, `get`, `delete` and `logs` on `jobset/NAME` (issue 27): the day-two commands for
//! JobSets, by what JobSet itself writes (jobset.md §4: `replicatedJobsStatus`, conditions,
//! the `jobset.sigs.k8s.io/jobset-name` pod label). The TFJob paths are untouched.

use super::Context;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, ListParams, LogParams, Preconditions, PropagationPolicy};

use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::output::Output;
use crate::pipeline::jobset::model::JobSet;
use crate::pipeline::jobset::{COMPLETION_INDEX_ANNOTATION, LABEL_REPLICATED_JOB};

/// A bound on one pod's log read.
const LOG_LIMIT_BYTES: i64 = 16 * 1024 * 1024;

fn api(kube: &Kube) -> Api<JobSet> {
    Api::namespaced(kube.client.clone(), &kube.namespace)
}

async fn read(kube: &Kube, name: &str) -> Result<JobSet> {
    let action = Action::new("get", "jobsets", Some(&kube.namespace)).named(name);
    let jobsets = api(kube);
    match cluster::retry(kube, || jobsets.get_opt(name)).await {
        Ok(Some(js)) => ours(js, &kube.namespace),
        Ok(None) => Err(Error::NotFound(format!(
            "jobsets.jobset.x-k8s.io {name:?} not found in namespace {:?}",
            kube.namespace
        ))),
        Err(e) if cluster::status_code(&e) == Some(404) => Err(super::export::jobset_not_served()),
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

/// `wait jobset/NAME --for TARGET`: until the JobSet reaches `target` (exit 0, judged by
/// [`super::jobset_submit::verdict`]), it fails (4) or `timeout` passes (5).
pub async fn wait(
    ctx: &Context,
    name: &str,
    target: crate::ops::wait::WaitFor,
    timeout: Duration,
    out: &mut Output,
) -> Result<()> {
    let kube = ctx.kube().await?;
    let first = read(kube, name).await?;
    super::jobset_submit::follow(kube, &api(kube), &first, target, timeout, out).await
}

async fn pods(kube: &Kube, name: &str) -> Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(kube.client.clone(), &kube.namespace);
    let lp = ListParams::default().labels(&crate::pipeline::jobset::pod_selector(name));
    cluster::retry(kube, || pods.list(&lp))
        .await
        .map(|l| l.items)
        .map_err(|e| cluster::explain(e, &Action::new("list", "pods", Some(&kube.namespace)), kube))
}

/// `<rjob>-<index>`: a JobSet pod as TF knows it (its task).
fn replica(p: &Pod) -> String {
    let m = &p.metadata;
    let label = |k: &str| m.labels.as_ref().and_then(|l| l.get(k)).cloned();
    let ann = m
        .annotations
        .as_ref()
        .and_then(|a| a.get(COMPLETION_INDEX_ANNOTATION))
        .cloned();
    format!(
        "{}-{}",
        label(LABEL_REPLICATED_JOB).unwrap_or_else(|| "?".into()),
        ann.unwrap_or_else(|| "?".into())
    )
}

/// `get jobset/NAME`: state, conditions, per-replicatedJob counts (in Jobs), the pods.
pub async fn get(ctx: &Context, name: &str, out: &mut Output) -> Result<()> {
    let kube = ctx.kube().await?;
    let js = read(kube, name).await?;
    let pods = pods(kube, name).await?;
    out.data(&describe(&js, &pods))
}

/// The text `get` prints (pure), its strings from the cluster escaped for a terminal.
pub fn describe(js: &JobSet, pods: &[Pod]) -> String {
    crate::print::terminal::escape(&describe_raw(js, pods)).into_owned()
}

fn describe_raw(js: &JobSet, pods: &[Pod]) -> String {
    let status = js.status.clone().unwrap_or_default();
    let mut s = format!(
        "Name:       {}\nNamespace:  {}\nKind:       JobSet (jobset.x-k8s.io/v1alpha2)\nState:      {}\n",
        js.metadata.name.as_deref().unwrap_or(""),
        js.metadata.namespace.as_deref().unwrap_or(""),
        match super::jobset_submit::progress(js) {
            super::jobset_submit::Progress::AllReady => "Running (every pod ready)".to_string(),
            super::jobset_submit::Progress::Completed => "Completed".to_string(),
            super::jobset_submit::Progress::Failed(why) => format!("Failed ({why})"),
            super::jobset_submit::Progress::Waiting(_) if js.is_suspended() =>
                "Suspended".to_string(),
            super::jobset_submit::Progress::Waiting(_) => "Pending".to_string(),
        }
    );
    s.push_str("Conditions:\n");
    for c in &status.conditions {
        s.push_str(&format!(
            "  {:<10} {:<6} {}: {}\n",
            c.type_, c.status, c.reason, c.message
        ));
    }
    s.push_str(
        "Replicated jobs (counted in Jobs):\n  NAME        JOBS  READY  SUCCEEDED  FAILED\n",
    );
    for r in &js.spec.replicated_jobs {
        let st = status
            .replicated_jobs_status
            .iter()
            .find(|x| x.name == r.name);
        let n = |f: fn(&crate::pipeline::jobset::model::ReplicatedJobStatus) -> i32| {
            st.map(f).unwrap_or(0)
        };
        s.push_str(&format!(
            "  {:<11} {:<5} {:<6} {:<10} {}\n",
            r.name,
            r.replicas.unwrap_or(1),
            n(|x| x.ready),
            n(|x| x.succeeded),
            n(|x| x.failed)
        ));
    }
    s.push_str("Pods:\n  REPLICA      NAME                                PHASE      NODE\n");
    let mut rows: Vec<(String, String, String, String)> = pods
        .iter()
        .map(|p| {
            (
                replica(p),
                p.metadata.name.clone().unwrap_or_default(),
                p.status
                    .as_ref()
                    .and_then(|x| x.phase.clone())
                    .unwrap_or_default(),
                p.spec
                    .as_ref()
                    .and_then(|x| x.node_name.clone())
                    .unwrap_or_else(|| "<none>".into()),
            )
        })
        .collect();
    rows.sort();
    for (r, n, ph, node) in rows {
        s.push_str(&format!("  {r:<12} {n:<35} {ph:<10} {node}\n"));
    }
    s
}

/// `delete jobset/NAME`: one DELETE, foreground (its Jobs and pods go first), then until it
/// is gone or `timeout`.
pub async fn delete(
    ctx: &Context,
    name: &str,
    wait: bool,
    timeout: Duration,
    out: &mut Output,
) -> Result<()> {
    let kube = ctx.kube().await?;
    let js = read(kube, name).await?;
    // The uid as precondition: a JobSet made again under the name since the read (maybe not
    // the plugin's) is never the one deleted.
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        preconditions: js.metadata.uid.clone().map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    let action = Action::new("delete", "jobsets", Some(&kube.namespace)).named(name);
    let jobsets = api(kube);
    let ns = kube.namespace.clone();
    let check = format!("kubectl get jobset {name} {}", kube.hints.ns_flags(&ns));
    crate::error::on_interrupt_write("JobSet", &ns, name, "deleted", &check);
    let deleted = cluster::retry(kube, || jobsets.delete(name, &dp)).await;
    crate::error::on_interrupt_settled();
    match deleted {
        Ok(_) => {}
        Err(e) if cluster::status_code(&e) == Some(404) => {
            return Err(Error::NotFound(format!(
                "jobsets.jobset.x-k8s.io {name:?} not found in namespace {:?}",
                kube.namespace
            )));
        }
        Err(e) => return Err(cluster::explain(e, &action, kube)),
    }
    if wait {
        gone(kube, &jobsets, name, timeout).await?;
    }
    out.data_line(&format!("jobset.jobset.x-k8s.io \"{name}\" deleted"))
}

/// Until the JobSet is gone (its Jobs and pods first, foreground): a watch on it by name,
/// re-watched after a drop and relisted after 410 Gone by kube-runtime's watcher, under one
/// deadline. A relist that no longer finds it is gone too.
async fn gone(kube: &Kube, jobsets: &Api<JobSet>, name: &str, timeout: Duration) -> Result<()> {
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let watch = async {
        let mut events = std::pin::pin!(watcher(jobsets.clone(), cfg).default_backoff());
        let mut listed = false;
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Init) => listed = false,
                Ok(watcher::Event::InitApply(_)) => listed = true,
                Ok(watcher::Event::InitDone) if !listed => return,
                Ok(watcher::Event::Delete(_)) => return,
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "jobset watch error (retried)"),
            }
        }
    };
    tokio::time::timeout(timeout, watch).await.map_err(|_| {
        Error::Timeout(format!(
            "JobSet {}/{name} is still there after {}s",
            kube.namespace,
            timeout.as_secs()
        ))
    })
}

/// `logs jobset/NAME`: each pod's `container` log, every line prefixed `[<rjob>-<index>]`.
pub async fn logs(ctx: &Context, name: &str, container: &str, out: &mut Output) -> Result<()> {
    let kube = ctx.kube().await?;
    read(kube, name).await?;
    let mut pods = pods(kube, name).await?;
    pods.sort_by_key(replica);
    let api: Api<Pod> = Api::namespaced(kube.client.clone(), &kube.namespace);
    for p in pods {
        let pname = p.metadata.name.clone().unwrap_or_default();
        let lp = LogParams {
            container: Some(container.to_string()),
            limit_bytes: Some(LOG_LIMIT_BYTES),
            ..Default::default()
        };
        let read = || cluster::bounded::read_log(&api, &pname, &lp, LOG_LIMIT_BYTES as usize);
        match cluster::retry(kube, read).await {
            Ok(text) => {
                let prefix = crate::print::terminal::escape(&replica(&p)).into_owned();
                for line in text.lines() {
                    out.data_line(&format!("[{prefix}] {line}"))?;
                }
            }
            Err(e) => out.note_line(&format!(
                "warning: no log for {pname}: {}",
                crate::error::chain(&e)
            )),
        }
    }
    Ok(())
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
}
