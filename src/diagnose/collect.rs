//! The I/O half: read the snapshot with a fixed number of requests, and the command itself.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Event, Pod, Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, LogParams};

use super::checks::{referenced_secrets, scrub};
use super::{CrdState, Diagnosis, Snapshot};
use crate::cluster::budget::{Budget, DECORATION};
pub(super) use crate::cluster::crd::crd_state;
#[cfg(test)]
pub(super) use crate::cluster::operator::operator_state;
use crate::cluster::pod::PodFacts;
use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::gateway::BASE_URL_KEY;
use crate::model::{self, DEFAULT_CONTAINER_NAME, TFJob};
use crate::placement;
use zeroize::{Zeroize, Zeroizing};

/// At most this many pod logs are read, whatever the replica count.
pub const MAX_LOGS: usize = 3;

/// Reads everything [`diagnose`] looks at. The number of requests does not grow with the
/// replica count: CRD, the operator's Deployment (by label, then by name), TFJob, pods,
/// services, job events, pod events, one get per referenced Secret, and at most [`MAX_LOGS`]
/// logs, those within the shared [`DECORATION`] budget. Refused reads become notes or unknowns.
pub async fn collect(kube: &Kube, namespace: &str, name: &str, tail: i64) -> Result<Snapshot> {
    collect_within(kube, namespace, name, tail, Budget::new(DECORATION)).await
}

/// [`collect`], with the log excerpts under `budget` and [`DECORATION`] from when they start
/// (one attempt each, none once either is spent).
pub async fn collect_within(
    kube: &Kube,
    namespace: &str,
    name: &str,
    tail: i64,
    budget: Budget,
) -> Result<Snapshot> {
    let mut s = Snapshot::new(namespace, name, k8s_openapi::jiff::Timestamp::now());
    s.hints = kube.hints.clone();
    // Each step names itself, so a `--timeout` that runs out says where.
    let phase = |what: &str| {
        kube.deadline
            .phase(format!("diagnosing TFJob {namespace}/{name} ({what})"))
    };
    phase("reading the TFJob CRD");
    read_crd(kube, &mut s).await?;
    // The operator, anywhere; with only namespaced rights, try its usual namespace.
    phase("looking for the training-operator");
    s.operator = cluster::operator::current(kube).await?;
    phase("reading the job");
    read_job(kube, &mut s, namespace, name).await?;
    let Some(job) = s.job.clone() else {
        return Ok(s);
    };
    phase("reading its pods, services and events");
    read_objects(kube, &mut s, &job, namespace, name).await?;
    past_refusals(kube, &mut s, namespace).await;
    read_killed_events(kube, &mut s, &job, namespace).await;
    read_pod_events(kube, &mut s, &job, namespace).await?;
    // The real values, only to scrub them from the logs below; zeroed when dropped.
    let mut values = read_secrets(kube, &mut s, &job, namespace).await?;
    read_logs(kube, &mut s, namespace, tail, budget, &values).await?;
    values.iter_mut().for_each(|v| v.clear());
    Ok(s)
}

/// The CRD, as present, missing, or not readable (why).
async fn read_crd(kube: &Kube, s: &mut Snapshot) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(kube.client.clone());
    let action = Action::new("get", "customresourcedefinitions", None).named(model::CRD_NAME);
    s.crd = match cluster::retry(kube, || crds.get_opt(model::CRD_NAME)).await {
        Ok(None) => CrdState::Missing,
        Ok(Some(crd)) => crd_state(&crd),
        Err(e) => {
            let why = cluster::unknown_reason(e, &action, kube)?;
            CrdState::Unknown(why)
        }
    };

    Ok(())
}

/// The job, unless the CRD is missing.
async fn read_job(kube: &Kube, s: &mut Snapshot, namespace: &str, name: &str) -> Result<()> {
    if s.crd != CrdState::Missing {
        let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), namespace);
        match cluster::retry(kube, || jobs.get_opt(name)).await {
            Ok(job) => {
                if let Some(j) = &job {
                    cluster::secret::arm_redactor(kube, namespace, j.pod_specs()).await;
                }
                s.job = job
            }
            // No CRD (even if we could not see it) means no resource to get.
            Err(e) if cluster::status_code(&e) == Some(404) => {}
            Err(e) => {
                let action = Action::new("get", "tfjobs", Some(namespace)).named(name);
                return Err(cluster::explain(e, &action, kube));
            }
        }
    }
    Ok(())
}

/// Pods and services by the operator's labels, the nodes and queue they wait on, what the
/// Pending ones mount, the placement of Unschedulable ones, and the events on the job.
async fn read_objects(
    kube: &Kube,
    s: &mut Snapshot,
    job: &TFJob,
    namespace: &str,
    name: &str,
) -> Result<()> {
    let selector = model::job_selector(name);
    let lp = ListParams::default().labels(&selector);
    let pods: Api<Pod> = Api::namespaced(kube.client.clone(), namespace);
    match cluster::retry(kube, || pods.list(&lp)).await {
        Ok(list) => s.pods = list.items,
        Err(e) => note(
            s,
            cluster::unknown_reason(e, &Action::new("list", "pods", Some(namespace)), kube)?,
        ),
    }
    s.nodes_not_ready = nodes_not_ready(kube, &s.pods).await;
    s.queue = queue_facts(kube, namespace, job, s.pods.is_empty()).await?;
    // Pending pods: are they waiting for an object they mount that does not exist?
    if s.pods.iter().any(|p| p.pod_phase() == "Pending") {
        s.missing_objects = super::missing::missing_objects(
            kube,
            namespace,
            job,
            std::time::Duration::from_secs(10),
        )
        .await;
    }
    // Unschedulable pods, or a gang held with none made yet: ask the placement model whether
    // they wait or can never run, as `check` and `wait` do (ops::preflight), so a gang the
    // nodes can never hold is `never` here too. Read here because diagnose sits below ops; a
    // failed read only leaves the verdict out.
    let gang_held = s.pods.is_empty()
        && matches!(&s.queue.pod_group, Some(cluster::queue::Fact::Known(Some((_, pg)))) if pg.gang_waiting());
    if cluster::pod::any_unschedulable(&s.pods) || gang_held {
        s.placement = cluster::retry(kube, || placement::collect(&kube.client, namespace, job))
            .await
            .map_err(|e| tracing::debug!(error = %e, "pre-flight for an unschedulable pod failed"))
            .ok()
            .and_then(|snapshot| placement::live::unschedulable(snapshot, namespace, job))
            .map(|u| (u.verdict, u.reason));
    }
    let services: Api<Service> = Api::namespaced(kube.client.clone(), namespace);
    match cluster::retry(kube, || services.list(&lp)).await {
        Ok(list) => s.services = list.items,
        Err(e) => note(
            s,
            cluster::unknown_reason(e, &Action::new("list", "services", Some(namespace)), kube)?,
        ),
    }
    let events: Api<Event> = Api::namespaced(kube.client.clone(), namespace);
    // From the watch cache, as the pods' events (cluster::events).
    let on_job = ListParams::default()
        .fields(&format!(
            "involvedObject.name={name},involvedObject.kind={}",
            model::KIND
        ))
        .match_any();
    match cluster::retry(kube, || events.list(&on_job)).await {
        // A job deleted and recreated under the same name keeps its predecessor's events.
        Ok(list) => {
            let uid = job.metadata.uid.clone();
            s.job_events = sorted(
                list.items
                    .into_iter()
                    .filter(|e| {
                        cluster::events::same_uid(e.involved_object.uid.as_ref(), uid.as_ref())
                    })
                    .collect(),
            )
        }
        Err(e) => note(
            s,
            cluster::unknown_reason(e, &Action::new("list", "events", Some(namespace)), kube)?,
        ),
    }
    Ok(())
}

/// A refusal for want of a ServiceAccount created since is past: the operator's next retry
/// makes the pods. Its events are dropped, said as a note.
async fn past_refusals(kube: &Kube, s: &mut Snapshot, namespace: &str) {
    if let Some(sa) = super::refused::refusal(&s.job_events).and_then(|r| r.missing_service_account)
    {
        let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(kube.client.clone(), namespace);
        if let Ok(Some(_)) = cluster::retry(kube, || accounts.get_opt(&sa)).await {
            s.job_events.retain(|e| {
                super::refused::parse(e.message.as_deref().unwrap_or(""))
                    .is_none_or(|r| r.missing_service_account.as_deref() != Some(sa.as_str()))
                    || e.reason.as_deref() != Some(super::refused::FAILED_CREATE_POD)
            });
            s.notes.push(format!(
                "ServiceAccount {sa} exists now: the operator's earlier refused pod creates for it are past"
            ));
        }
    }
}

/// The pods the operator saw killed (137/143), and a failed job's pods that are gone: their
/// own events, whatever the uid.
async fn read_killed_events(kube: &Kube, s: &mut Snapshot, job: &TFJob, namespace: &str) {
    // The pods the operator saw killed (137/143): their events whatever the uid, since the
    // pod may be gone or recreated under its name (failure::from_operator_events).
    let mut killed = super::failure::killed_pods(&s.job_events);
    // A failed job's pods that are gone: taken away (a lost node, a preemption) before they
    // could exit, their own events are all that says why.
    if job.is_failed() {
        let present: BTreeSet<&str> = s.pods.iter().map(|p| p.pod_name()).collect();
        killed.extend(
            crate::operator_pods::expand(job)
                .pod_names()
                .into_iter()
                .filter(|n| !present.contains(n.as_str())),
        );
        killed.sort();
        killed.dedup();
    }
    let killed: Vec<cluster::events::PodRef> = killed
        .into_iter()
        .map(|name| cluster::events::PodRef { name, uid: None })
        .collect();
    if !killed.is_empty()
        && let Ok(read) = cluster::events::of_pods(kube, namespace, killed).await
    {
        s.killed_pod_events = sorted(read.events);
    }
}

/// Events pod by pod: the troubled pods first, then the expected pods that do not exist (an
/// earlier one's events), then the rest, as many as the cap allows.
async fn read_pod_events(
    kube: &Kube,
    s: &mut Snapshot,
    job: &TFJob,
    namespace: &str,
) -> Result<()> {
    if !s.pods.is_empty() {
        let mut refs: Vec<(u8, cluster::events::PodRef)> = s
            .pods
            .iter()
            .map(|p| {
                let troubled = !p.started() || p.restarts() > 0;
                let r = cluster::events::PodRef {
                    name: p.pod_name().to_string(),
                    uid: p.metadata.uid.clone(),
                };
                (if troubled { 0 } else { 2 }, r)
            })
            .collect();
        let present: BTreeSet<String> = refs.iter().map(|(_, r)| r.name.clone()).collect();
        refs.extend(
            crate::operator_pods::expand(job)
                .pod_names()
                .into_iter()
                .filter(|n| !present.contains(n))
                .map(|name| (1, cluster::events::PodRef { name, uid: None })),
        );
        refs.sort_by_key(|(rank, _)| *rank);
        let refs = refs.into_iter().map(|(_, r)| r).collect();
        match cluster::events::of_pods(kube, namespace, refs).await {
            Ok(read) => {
                s.pod_events = sorted(read.events);
                if read.unread > 0 {
                    s.notes.push(format!(
                        "events of {} more pods were not read (at most {} pods are, troubled ones first)",
                        read.unread,
                        cluster::events::MAX_PODS
                    ));
                }
            }
            Err(e) => note(
                s,
                cluster::unknown_reason(e, &Action::new("list", "events", Some(namespace)), kube)?,
            ),
        }
    }

    Ok(())
}

/// The referenced Secrets: existence and key names kept in the snapshot, their values returned
/// only to scrub them from the logs.
async fn read_secrets(
    kube: &Kube,
    s: &mut Snapshot,
    job: &TFJob,
    namespace: &str,
) -> Result<Zeroizing<Vec<String>>> {
    let secrets: Api<Secret> = Api::namespaced(kube.client.clone(), namespace);
    let mut values: Zeroizing<Vec<String>> = Zeroizing::new(Vec::new());
    for secret_name in referenced_secrets(Some(job), &s.pods) {
        match cluster::retry(kube, || secrets.get_opt(&secret_name)).await {
            Ok(found) => {
                let found = found.map(|sec| {
                    values.extend(raw_values(&sec));
                    without_values(sec)
                });
                s.secrets.insert(secret_name, found);
            }
            Err(e) => {
                let action = Action::new("get", "secrets", Some(namespace)).named(&secret_name);
                note(s, cluster::unknown_reason(e, &action, kube)?);
            }
        }
    }

    Ok(values)
}

/// Logs: crashing pods first, then running ones (a 401 loop may not crash), capped. They
/// decorate the verdict: one attempt each under the shared budget, never retried.
async fn read_logs(
    kube: &Kube,
    s: &mut Snapshot,
    namespace: &str,
    tail: i64,
    budget: Budget,
    values: &[String],
) -> Result<()> {
    let pods_api: Api<Pod> = Api::namespaced(kube.client.clone(), namespace);
    // The decoration budget starts once the verdict's reads are done.
    let budget = budget.min(Budget::new(DECORATION));
    for (pod_name, container, previous) in log_targets(&s.pods) {
        let tail_lines = if tail > 0 { tail } else { 20 };
        let params = |previous: bool| LogParams {
            container: Some(container.clone()),
            tail_lines: Some(tail_lines),
            previous,
            limit_bytes: Some(LOG_EXCERPT_BYTES as i64),
            ..LogParams::default()
        };
        let read = |lp: LogParams| {
            let (api, pod) = (&pods_api, &pod_name);
            async move { cluster::bounded::read_log(api, pod, &lp, LOG_EXCERPT_BYTES).await }
        };
        let mut got = budget.attempt(read(params(previous))).await;
        // No previous instance (400): the current one is the crashed one. A kubelet that
        // cannot serve logs (5xx) cannot serve the other either.
        if previous
            && matches!(&got, Some(Err(e)) if cluster::status_code(e).is_none_or(|c| c < 500))
        {
            got = budget.attempt(read(params(false))).await;
        }
        match got {
            Some(Ok(text)) => {
                let text = scrub(&text, values);
                s.logs.insert(pod_name, text);
            }
            Some(Err(e)) => {
                let action = Action::new("get", "pods/log", Some(namespace)).named(&pod_name);
                let why = match cluster::status_code(&e) {
                    // The API server proxies pods/log to the kubelet; a 5xx is the kubelet (or
                    // the way to it) failing, e.g. `no preferred addresses found`.
                    Some(code) if code >= 500 => {
                        s.kubelet_logs_failed = true;
                        format!(
                            "the kubelet could not serve the log of pod {pod_name} ({})",
                            kube_message(&e)
                        )
                    }
                    _ => cluster::unknown_reason(e, &action, kube)?,
                };
                note(s, why);
            }
            None => {
                note(
                    s,
                    format!(
                        "the log of pod {pod_name} was not read: the {}s budget for log excerpts was spent",
                        DECORATION.as_secs()
                    ),
                );
                break;
            }
        }
    }
    Ok(())
}

/// How long each running replica has been silent (issue 37), for `diagnose`: its last log
/// line's time, one cheap request each (`tailLines=1&timestamps=true`), at most
/// [`MAX_LAST_LOG`] pods, each once under `budget`. Skipped when the kubelet could not serve
/// a log to [`collect_within`] (it would not serve these either); the first failure ends it.
pub async fn read_last_logs(kube: &Kube, s: &mut Snapshot, budget: Budget) {
    if s.kubelet_logs_failed {
        return;
    }
    let pods_api: Api<Pod> = Api::namespaced(kube.client.clone(), &s.namespace);
    let budget = budget.min(Budget::new(DECORATION));
    for (pod_name, container) in running_targets(&s.pods) {
        // The last lines, not only the last one: progress is read from them too (issue 49).
        let read = cluster::bounded::recent_lines(&pods_api, &pod_name, &container);
        match budget.attempt(read).await {
            Some(Ok(text)) => {
                s.recent_log.insert(pod_name, scrub(&text, &[]));
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, pod = %pod_name, "last log line not read");
                break;
            }
            None => break,
        }
    }
}

/// The most of one log `diagnose` reads for its excerpt (the last lines it asks for are far
/// less; a server that ignores `limitBytes` is cut here).
const LOG_EXCERPT_BYTES: usize = 256 * 1024;

/// Running pods whose last log line's age is read: at most this many.
pub const MAX_LAST_LOG: usize = 8;

/// Pure: (pod, training container) of the Running pods, at most [`MAX_LAST_LOG`].
pub(super) fn running_targets(pods: &[Pod]) -> Vec<(String, String)> {
    pods.iter()
        .filter(|p| p.pod_phase() == "Running")
        .filter_map(|p| {
            let name = p.metadata.name.clone()?;
            let spec = p.spec.as_ref()?;
            let container = spec
                .containers
                .iter()
                .find(|c| c.name == DEFAULT_CONTAINER_NAME)
                .or(spec.containers.first())?
                .name
                .clone();
            Some((name, container))
        })
        .take(MAX_LAST_LOG)
        .collect()
}

/// Pure: the kubelet's RFC3339Nano timestamp of the last line of a `timestamps=true` answer
/// (`None` without a line).
pub(super) fn last_line_time(text: &str) -> Option<k8s_openapi::jiff::Timestamp> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    line.split_once(' ')
        .map_or(line, |(ts, _)| ts)
        .trim()
        .parse()
        .ok()
}

/// The API server's message for a failed request, else the error itself.
fn kube_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("HTTP {}: {}", status.code, status.message),
        other => other.to_string(),
    }
}

fn note(s: &mut Snapshot, why: String) {
    s.notes.push(why);
}

/// Oldest first, so "the last one" is the newest.
fn sorted(mut events: Vec<Event>) -> Vec<Event> {
    events.sort_by_key(|e| {
        e.last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or(e.event_time.as_ref().map(|t| t.0))
    });
    events
}

/// The values to scrub from logs (not the base URL, which is not secret).
fn raw_values(secret: &Secret) -> Vec<String> {
    let not_url = |k: &String| k.as_str() != BASE_URL_KEY;
    secret
        .data
        .iter()
        .flatten()
        .filter(|(k, _)| not_url(k))
        .map(|(_, v)| {
            let text = Zeroizing::new(String::from_utf8_lossy(&v.0).into_owned());
            // Read, so no output of this process shows it (or its base64) from here on.
            crate::output::redact::register(text.trim().as_bytes());
            text.trim().to_string()
        })
        .chain(
            secret
                .string_data
                .iter()
                .flatten()
                .filter(|(k, _)| not_url(k))
                .map(|(_, v)| v.trim().to_string()),
        )
        .filter(|v| v.len() >= 6)
        .collect()
}

/// The Secret with each value replaced by one placeholder byte (empty stays empty): enough for
/// `secret_state`, useless to anyone reading the snapshot.
pub(super) fn without_values(mut secret: Secret) -> Secret {
    if let Some(data) = secret.data.as_mut() {
        for v in data.values_mut() {
            let empty = v.0.is_empty();
            v.0.zeroize();
            *v = ByteString(if empty { Vec::new() } else { b"*".to_vec() });
        }
    }
    if let Some(data) = secret.string_data.as_mut() {
        for v in data.values_mut() {
            let empty = v.is_empty();
            v.zeroize();
            *v = if empty { String::new() } else { "*".into() };
        }
    }
    secret.metadata.managed_fields = None;
    secret.metadata.annotations = None; // last-applied-configuration can hold the data
    secret
}

/// Which logs to read: (pod, container, previous instance?), crashing pods first, at most
/// [`MAX_LOGS`].
pub(super) fn log_targets(pods: &[Pod]) -> Vec<(String, String, bool)> {
    let mut crashing = Vec::new();
    let mut running = Vec::new();
    for pod in pods {
        let Some(name) = pod.metadata.name.clone() else {
            continue;
        };
        let Some(spec) = pod.spec.as_ref() else {
            continue;
        };
        let container = spec
            .containers
            .iter()
            .find(|c| c.name == DEFAULT_CONTAINER_NAME)
            .or(spec.containers.first())
            .map(|c| c.name.clone())
            .unwrap_or_else(|| DEFAULT_CONTAINER_NAME.into());
        let status = pod.status.as_ref();
        let cs = status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|v| v.iter().find(|c| c.name == container));
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
        let restarted = cs.is_some_and(|c| c.restart_count > 0);
        let waiting_now = cs
            .and_then(|c| c.state.as_ref())
            .is_some_and(|st| st.waiting.is_some());
        let failed_now = cs
            .and_then(|c| c.state.as_ref())
            .and_then(|st| st.terminated.as_ref())
            .is_some_and(|t| t.exit_code != 0);
        if restarted || failed_now || phase == "Failed" {
            // A container waiting to restart has no current log: read the one that crashed.
            crashing.push((name, container, restarted && waiting_now));
        } else if phase == "Running" {
            running.push((name, container, false));
        }
    }
    crashing.into_iter().chain(running).take(MAX_LOGS).collect()
}

/// The command's outcome from the findings: success unless something failed.
/// At most this many nodes are read to tell a lost node (issue 37).
const MAX_NODES_READ: usize = 5;

/// The nodes of pods that look cut off (Ready=False while Running, or marked for deletion by
/// the taint manager) that are not Ready or are gone: one GET per such node, a few at most. A
/// node that cannot be read (no cluster-scope rights) is left out.
async fn nodes_not_ready(kube: &Kube, pods: &[Pod]) -> BTreeMap<String, String> {
    let suspect = |p: &Pod| {
        let conds = p.status.as_ref().and_then(|s| s.conditions.as_ref());

        conds.into_iter().flatten().any(|c| {
            (c.type_ == "Ready" && c.status != "True" && p.pod_phase() == "Running")
                || (c.type_ == "DisruptionTarget"
                    && c.reason.as_deref() == Some("DeletionByTaintManager"))
        })
    };
    let names: BTreeSet<String> = pods
        .iter()
        .filter(|p| suspect(p))
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .take(MAX_NODES_READ)
        .collect();
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(kube.client.clone());
    let mut out = BTreeMap::new();
    for name in names {
        match nodes.get_opt(&name).await {
            Ok(None) => {
                out.insert(name, "the node no longer exists".to_string());
            }
            Ok(Some(n)) => {
                let ready = n
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
                if let Some(c) = ready.filter(|c| c.status != "True") {
                    out.insert(
                        name,
                        format!(
                            "{}: {}",
                            c.status,
                            c.message
                                .as_deref()
                                .or(c.reason.as_deref())
                                .unwrap_or("not Ready")
                        ),
                    );
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, node = %name, "reading the node of a cut-off pod")
            }
        }
    }
    out
}

pub fn outcome(s: &Snapshot, d: &Diagnosis) -> Result<()> {
    if s.crd == CrdState::Missing {
        return Err(Error::not_ready(
            format!("the {} CRD is not installed", model::CRD_NAME),
            crate::cluster::install_operator_hint(),
        ));
    }
    if s.job.is_none() {
        return Err(Error::NotFound(format!(
            "{}; list them with `kubectl get tfjobs -n {}`",
            crate::cluster::notfound::message(&s.namespace, &s.job_name),
            s.namespace
        )));
    }
    match d.first_failure() {
        None => Ok(()),
        // A LocalQueue or ClusterQueue that does not exist: exit 3, as `wait` says.
        Some(f) if f.layer == super::Layer::Queue && super::checks::is_missing_queue(s) => {
            Err(Error::NotReady {
                message: format!("{}: {}", f.layer.label(), f.summary),
                hint: f.next_step.clone(),
            })
        }
        // Nothing reconciles the job: the cluster is not ready (exit 3), as `wait` says.
        Some(f) if f.layer == super::Layer::Controller && stalled(s) => Err(Error::NotReady {
            message: format!("{}: {}", f.layer.label(), f.summary),
            hint: f.next_step.clone(),
        }),
        // A pod the API server refuses for want of its ServiceAccount: an object missing
        // (exit 3), as `wait` says; any other refused create will not run (exit 4).
        Some(f)
            if f.layer == super::Layer::Controller
                && super::refused::refusal(&s.job_events)
                    .is_some_and(|r| r.missing_service_account.is_some()) =>
        {
            Err(Error::NotReady {
                message: format!("{}: {}", f.layer.label(), f.summary),
                hint: f.next_step.clone(),
            })
        }
        // An object the pods mount is missing: the cluster is not ready (exit 3), as `wait`
        // says.
        Some(f)
            if f.layer == super::Layer::Objects
                && s.missing_objects
                    .iter()
                    .any(|m| m.sentence(&s.namespace) == f.summary) =>
        {
            Err(Error::NotReady {
                message: format!("{}: {}", f.layer.label(), f.summary),
                hint: f.next_step.clone(),
            })
        }
        // The most specific finding last (issue 37): the first replica to fail and why, when
        // the failure is the job's own (not a layer above its pods).
        Some(f) => Err(Error::JobFailed(
            match d
                .failures
                .first()
                .filter(|_| matches!(f.layer, super::Layer::Runtime | super::Layer::Controller))
            {
                Some(first) => first.line.clone(),
                None => format!("{}: {}", f.layer.label(), f.summary),
            },
        )),
    }
}

/// The job has no status, or is unfinished while its operator is seen not ready: a controller
/// failure is then the missing operator's, not the job's.
fn stalled(s: &Snapshot) -> bool {
    let Some(job) = &s.job else { return false };
    let unreconciled = job
        .status
        .as_ref()
        .is_none_or(|st| st.conditions.is_empty());
    let operator_down = matches!(s.operator, crate::cluster::OperatorState::NotReady { .. });
    unreconciled || (operator_down && !job.is_finished())
}

/// The Queue layer's reads: the job's Workload (and position) when it names a LocalQueue, else
/// its PodGroup when it has no pods yet. Bounded: at most five requests.
async fn queue_facts(
    kube: &Kube,
    ns: &str,
    job: &TFJob,
    no_pods: bool,
) -> Result<super::QueueFacts> {
    use crate::cluster::queue as q;
    let mut facts = super::QueueFacts::default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    if let Some(lq) = q::local_queue_name(job) {
        facts.kueue_served = q::kueue_served(kube).await?.known().copied();
        if facts.kueue_served == Some(false) {
            return Ok(facts);
        }
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let wl = q::workload_for(kube, ns, uid).await?;
        let wl_name = wl
            .known()
            .and_then(|w| w.as_ref())
            .and_then(|w| w.metadata.name.clone());
        facts.position = q::pending_position(kube, ns, lq, wl_name.as_deref())
            .await
            .and_then(|(p, _)| p);
        facts.workload = Some(wl);
        if let q::Fact::Known(Some(l)) = q::local_queue(kube, ns, lq).await? {
            facts.cluster_queue = Some(l.spec.cluster_queue);
        }
    } else if no_pods && !job.is_finished() && !job.is_suspended() {
        // Only a job without pods can be held by its gang (Volcano creates none until then).
        let pg = q::pod_group(kube, ns, name).await?;
        if matches!(pg, q::Fact::Known(Some(_))) {
            facts.pod_group_event = q::pod_group_event(kube, ns, name).await;
        }
        facts.pod_group = Some(pg);
    }
    Ok(facts)
}
