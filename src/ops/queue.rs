//! The queue step of `check` and `submit`: read the job's Kueue queue path (LocalQueue,
//! ClusterQueue, its cohort, the flavors) through `cluster::queue`, ask the pure model
//! (`placement::kueue`) and turn the answer into the report's `queue` object, warnings, and the
//! refusals that come before any write: a missing LocalQueue or ClusterQueue (exit 3), a job
//! the ClusterQueue can never admit (exit 4). A job that names Volcano gets the gang step instead:
//! its PodGroup's minResources against the Volcano Queue (`placement::gang`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use serde::Serialize;

use crate::cluster::queue::{self as q, Fact, QueueSystem};
use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::model::TFJob;
use crate::output::Output;
use crate::placement::format_quantity;
use crate::placement::gang::{self, GangVerdict};
use crate::placement::kueue::{self, Missing, QueueVerdict};

/// The report's `queue` object (`check -o json`). Fields are only ever added.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueReport {
    pub system: Option<&'static str>,
    pub verdict: QueueVerdict,
    pub local_queue: Option<String>,
    pub cluster_queue: Option<String>,
    pub reason: String,
    /// Kueue's own message, as it would write it on the Workload's QuotaReserved condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Workloads pending in the LocalQueue now (the visibility API, when it answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_ahead: Option<usize>,
    /// Workloads holding the ClusterQueue's quota (`namespace/name`), when readable.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_by: Vec<String>,
    /// Pod set → resource → flavor, for fits and queued.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub flavors: BTreeMap<String, BTreeMap<String, String>>,
}

impl QueueReport {
    fn none() -> Self {
        QueueReport {
            system: None,
            verdict: QueueVerdict::Fits,
            local_queue: None,
            cluster_queue: None,
            reason: "no queue or gang scheduler holds this job".into(),
            message: None,
            pending_ahead: None,
            held_by: vec![],
            flavors: BTreeMap::new(),
        }
    }
}

/// What the queue step found.
#[derive(Debug)]
pub struct Assessed {
    pub report: QueueReport,
    /// The job as Kueue would admit it (the chosen flavors' node labels and tolerations), for
    /// the placement model.
    pub admitted: Option<TFJob>,
    /// A refusal: missing queue objects (exit 3) or never (exit 4).
    pub refusal: Option<Error>,
    pub warnings: Vec<String>,
}

impl Assessed {
    fn plain(report: QueueReport) -> Self {
        Assessed {
            report,
            admitted: None,
            refusal: None,
            warnings: vec![],
        }
    }

    /// The job the placement model should look at.
    pub fn placement_job<'a>(&'a self, job: &'a TFJob) -> &'a TFJob {
        self.admitted.as_ref().unwrap_or(job)
    }
}

fn unknown(system: QueueSystem, lq: Option<&str>, reason: String) -> Assessed {
    let mut a = Assessed::plain(QueueReport {
        system: Some(system.as_str()),
        verdict: QueueVerdict::Unknown,
        local_queue: lq.map(str::to_string),
        reason: reason.clone(),
        ..QueueReport::none()
    });
    a.warnings.push(format!(
        "cannot tell whether the queue admits the job: {reason}"
    ));
    a
}

/// Reads what the job's queue system needs and judges it. Only reads; a refused read is an
/// `unknown` verdict, never an error.
/// A job that names no queue system itself is still Volcano's when the operator runs with
/// `--gang-scheduler-name=volcano`: the operator then makes its PodGroup in
/// `schedulingPolicy.queue` (else `default`) and sets the pods' schedulerName, whatever the
/// templates say (training-operator `pkg/controller.v1/common/job.go` / `scheduling.go`).
pub async fn assess(kube: &Kube, ns: &str, job: &TFJob) -> Result<Assessed> {
    match q::system_of(job) {
        Some(QueueSystem::Kueue) => assess_kueue(kube, ns, job).await,
        Some(QueueSystem::Volcano) => assess_gang(kube, job).await,
        _ => match crate::cluster::operator::gang_scheduler(kube).await? {
            Fact::Known(Some(g)) if g == q::VOLCANO_SCHEDULER => assess_gang(kube, job).await,
            _ => unqueued(kube, ns).await,
        },
    }
}

/// A job that names no queue, in a namespace whose jobs Kueue may queue: said, since the
/// verdict then leaves out the quota the namespace's LocalQueues stand for. Kueue may still
/// queue it (`manageJobsWithoutQueueName`, or a LocalQueue named `default` with its
/// LocalQueueDefaulting), which no read here can tell, so it is a warning, not a verdict.
async fn unqueued(kube: &Kube, ns: &str) -> Result<Assessed> {
    let mut a = Assessed::plain(QueueReport::none());
    if !matches!(q::kueue_served(kube).await?, Fact::Known(true)) {
        return Ok(a);
    }
    let Fact::Known(queues) = q::local_queues(kube, ns).await? else {
        return Ok(a);
    };
    let mut names: Vec<String> = queues
        .iter()
        .filter_map(|lq| lq.metadata.name.clone())
        .collect();
    names.sort();
    let Some(first) = names.first().cloned() else {
        return Ok(a);
    };
    let shown = if names.len() > 3 {
        format!("{} and {} more", names[..3].join(", "), names.len() - 3)
    } else {
        names.join(", ")
    };
    a.warnings.push(format!(
        "namespace {ns} has Kueue LocalQueue{} {shown}, but the job names none (label {}): \
         the verdict leaves out their quota, and unless Kueue queues such jobs itself the job \
         bypasses it; pass --local-queue {first} to queue it",
        if names.len() == 1 { "" } else { "s" },
        q::QUEUE_LABEL
    ));
    Ok(a)
}

async fn assess_kueue(kube: &Kube, ns: &str, job: &TFJob) -> Result<Assessed> {
    let lq_name = q::local_queue_name(job).unwrap_or_default().to_string();
    let flags = kube.hints.ns_flags(ns);
    match q::kueue_served(kube).await? {
        Fact::Known(false) => {
            let mut a = Assessed::plain(QueueReport {
                system: Some("kueue"),
                verdict: QueueVerdict::Unknown,
                local_queue: Some(lq_name.clone()),
                reason: format!(
                    "the job names LocalQueue {lq_name} ({}) but this cluster does not serve Kueue's API (kueue.x-k8s.io/v1beta2): nothing will queue it, it runs at once",
                    q::QUEUE_LABEL
                ),
                ..QueueReport::none()
            });
            a.warnings.push(a.report.reason.clone());
            return Ok(a);
        }
        Fact::Unknown(why) => return Ok(unknown(QueueSystem::Kueue, Some(&lq_name), why)),
        Fact::Known(true) => {}
    }
    let lq = match q::local_queue(kube, ns, &lq_name).await? {
        Fact::Known(lq) => lq,
        Fact::Unknown(why) => return Ok(unknown(QueueSystem::Kueue, Some(&lq_name), why)),
    };
    let Some(lq) = lq else {
        return no_local_queue(kube, ns, &lq_name).await;
    };
    let cq_name = lq.spec.cluster_queue.clone();
    let cq = match q::cluster_queue(kube, &cq_name).await? {
        Fact::Known(cq) => cq,
        Fact::Unknown(why) => {
            let mut a = unknown(QueueSystem::Kueue, Some(&lq_name), why);
            a.report.cluster_queue = Some(cq_name);
            return Ok(a);
        }
    };
    let all_cqs = match cq.as_ref().and_then(|c| c.spec.cohort_name.as_ref()) {
        Some(_) => q::cluster_queues(kube)
            .await?
            .known()
            .cloned()
            .unwrap_or_default(),
        None => vec![],
    };
    let flavors = resource_flavors(kube, cq.as_ref()).await?;
    let ns_labels = namespace_labels(kube, ns).await;
    let limit_ranges = limit_ranges(kube, ns).await;
    let overheads = runtime_class_overheads(kube, job).await;
    let pod_sets = kueue::pod_sets(job, &limit_ranges, &overheads);
    let admission = kueue::admit(
        kueue::Input {
            local_queue: &lq_name,
            lq: Some(&lq),
            cq: cq.as_ref(),
            all_cqs: &all_cqs,
            flavors: &flavors,
            ns_labels: ns_labels.as_ref(),
        },
        &pod_sets,
    );
    let mut report = QueueReport {
        system: Some("kueue"),
        verdict: admission.verdict,
        local_queue: Some(lq_name.clone()),
        cluster_queue: Some(cq_name.clone()),
        reason: kueue::sentence(&admission, &lq_name),
        message: (!admission.message.is_empty()).then(|| admission.message.clone()),
        pending_ahead: None,
        held_by: vec![],
        flavors: admission.flavors.clone(),
    };
    let mut a = Assessed::plain(report.clone());
    if pod_sets.is_empty() {
        a.report.verdict = QueueVerdict::Never;
        a.report.reason = format!(
            "Kueue reads none of this job's replica types ({}): its Workload would have no pod sets and the job would stay suspended",
            kueue::POD_SET_ORDER.join(", ")
        );
        a.refusal = Some(Error::WontRun {
            message: a.report.reason.clone(),
            hint: Some(
                "Rename the replica keys to their canonical case (Worker, PS, Chief).".into(),
            ),
        });
        return Ok(a);
    }
    match (&admission.missing, admission.verdict) {
        (Some(Missing::ClusterQueue(cq)), _) => {
            // Kueue keeps the job suspended for good: never, whatever the quota sums say.
            a.report.verdict = QueueVerdict::Never;
            a.report.reason = format!("ClusterQueue {cq} (of LocalQueue {lq_name}) doesn't exist");
            a.refusal = Some(Error::NotReady {
                message: format!(
                    "LocalQueue {ns}/{lq_name} points at ClusterQueue {cq}, which doesn't exist: Kueue would keep the job suspended"
                ),
                hint: Some(format!(
                    "Ask a cluster admin to create ClusterQueue {cq}, or use another LocalQueue (`kubectl get localqueues {flags}`)."
                )),
            });
        }
        (_, QueueVerdict::Never) => {
            a.refusal = Some(Error::WontRun {
                message: format!(
                    "TFJob {ns}/{} can never be admitted by ClusterQueue {cq_name} (LocalQueue {lq_name}) as it is configured: {}",
                    job.metadata.name.as_deref().unwrap_or_default(),
                    admission.message
                ),
                hint: Some(format!(
                    "Lower the replicas or their requests, or ask for more quota (`kubectl describe clusterqueue {cq_name}{}`).",
                    kube.hints.hint_suffix()
                )),
            });
        }
        (_, QueueVerdict::Queued) => {
            queued(kube, ns, &lq_name, &cq_name, &mut report).await?;
            a.report = report;
            a.warnings.push(format!(
                "{} (Kueue admits it once quota frees)",
                a.report.reason
            ));
        }
        _ => {}
    }
    if matches!(a.report.verdict, QueueVerdict::Fits | QueueVerdict::Queued) {
        let mut admitted = job.clone();
        kueue::apply_flavors(&mut admitted, &admission, &flavors);
        a.admitted = Some(admitted);
    }
    Ok(a)
}

/// The refusal for a LocalQueue that does not exist, with the classic mistake named: a label
/// that names the ClusterQueue instead.
async fn no_local_queue(kube: &Kube, ns: &str, lq_name: &str) -> Result<Assessed> {
    let flags = kube.hints.ns_flags(ns);
    // The classic mistake: the label names the ClusterQueue instead of a LocalQueue.
    let is_cq = matches!(q::cluster_queue(kube, lq_name).await?, Fact::Known(Some(_)));
    let message = format!(
        "LocalQueue {ns}/{lq_name} doesn't exist (label {}): Kueue would keep the job suspended (QuotaReserved False, \"LocalQueue {lq_name} doesn't exist\")",
        q::QUEUE_LABEL
    );
    let hint = if is_cq {
        format!(
            "{lq_name} is a ClusterQueue: the label names a LocalQueue in the job's namespace that points at it. List them with `kubectl get localqueues {flags}`, or ask an admin to create one: spec.clusterQueue: {lq_name}."
        )
    } else {
        format!(
            "List the LocalQueues with `kubectl get localqueues {flags}` and pass one with --local-queue."
        )
    };
    let mut a = Assessed::plain(QueueReport {
        system: Some("kueue"),
        verdict: QueueVerdict::Never,
        local_queue: Some(lq_name.to_string()),
        reason: format!("LocalQueue {lq_name} doesn't exist"),
        ..QueueReport::none()
    });
    a.refusal = Some(Error::NotReady {
        message,
        hint: Some(hint),
    });
    Ok(a)
}

/// The ResourceFlavors; unreadable ones are taken as empty flavors of the ClusterQueue's
/// groups (match any node, add nothing).
async fn resource_flavors(
    kube: &Kube,
    cq: Option<&q::ClusterQueue>,
) -> Result<Vec<q::ResourceFlavor>> {
    Ok(match q::resource_flavors(kube).await? {
        Fact::Known(f) => f,
        Fact::Unknown(_) => cq
            .iter()
            .flat_map(|c| &c.spec.resource_groups)
            .flat_map(|g| &g.flavors)
            .map(|f| q::ResourceFlavor {
                metadata: kube::api::ObjectMeta {
                    name: Some(f.name.clone()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect(),
    })
}

/// A queued job's report with where it stands: the workloads pending ahead in its LocalQueue
/// and those holding the ClusterQueue's quota.
async fn queued(
    kube: &Kube,
    ns: &str,
    lq_name: &str,
    cq_name: &str,
    report: &mut QueueReport,
) -> Result<()> {
    if let Some((_, pending)) = q::pending_position(kube, ns, lq_name, None).await {
        report.pending_ahead = Some(pending);
    }
    if let Fact::Known(holders) = q::holders(kube, cq_name).await? {
        report.held_by = holders
            .iter()
            .map(|w| {
                format!(
                    "{}/{}",
                    w.metadata.namespace.as_deref().unwrap_or_default(),
                    w.metadata.name.as_deref().unwrap_or_default()
                )
            })
            .collect();
    }
    if !report.held_by.is_empty() {
        report
            .reason
            .push_str(&format!("; quota held by {}", report.held_by.join(", ")));
    }
    if let Some(n) = report.pending_ahead {
        report.reason.push_str(&format!(
            "; {n} workload{} pending ahead in LocalQueue {lq_name}",
            if n == 1 { "" } else { "s" }
        ));
    }
    Ok(())
}

/// The namespace's labels (for the ClusterQueue's namespaceSelector); `None` when unreadable.
async fn namespace_labels(kube: &Kube, ns: &str) -> Option<BTreeMap<String, String>> {
    let api: Api<Namespace> = Api::all(kube.client.clone());
    let n = cluster::retry(kube, || api.get_opt(ns)).await.ok()??;
    Some(n.metadata.labels.unwrap_or_default())
}

async fn limit_ranges(kube: &Kube, ns: &str) -> Vec<k8s_openapi::api::core::v1::LimitRange> {
    let api: Api<k8s_openapi::api::core::v1::LimitRange> = Api::namespaced(kube.client.clone(), ns);
    let lp = kube::api::ListParams::default();
    cluster::retry(kube, || api.list(&lp))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

/// The pod overhead of each RuntimeClass the job's templates name, as Kueue reads it
/// (pkg/workload/resources.go `handlePodOverhead`: a class that cannot be read is skipped, and
/// the pod set keeps no overhead).
async fn runtime_class_overheads(kube: &Kube, job: &TFJob) -> kueue::Overheads {
    use k8s_openapi::api::node::v1::RuntimeClass;
    let api: Api<RuntimeClass> = Api::all(kube.client.clone());
    let names: std::collections::BTreeSet<&str> = job
        .spec
        .tf_replica_specs
        .values()
        .filter_map(|r| r.template.spec.as_ref()?.runtime_class_name.as_deref())
        .filter(|n| !n.is_empty())
        .collect();
    let mut out = BTreeMap::new();
    for name in names {
        if let Ok(Some(rc)) = cluster::retry(kube, || api.get_opt(name)).await
            && let Some(fixed) = rc.overhead.and_then(|o| o.pod_fixed)
        {
            out.insert(name.to_string(), fixed);
        }
    }
    out
}

/// After the create: Kueue's mutating webhook suspends a labelled job on create
/// (`pkg/controller/jobframework/base_webhook.go` `ApplyDefaultForSuspend`). A labelled job
/// stored unsuspended means the `kubeflow.org/tfjob` integration is off (as in Kueue v0.19's
/// shipped configuration): the label does nothing and the job runs unqueued.
pub fn note_unmanaged(created: &TFJob, out: &mut Output) {
    let Some(lq) = q::local_queue_name(created) else {
        return;
    };
    if !created.is_suspended() {
        out.note_line(&format!(
            "warning: the job names Kueue LocalQueue {lq} but was stored unsuspended: Kueue's TFJob integration (kubeflow.org/tfjob in its Configuration's integrations.frameworks) looks not enabled, so nothing queues the job; it runs at once"
        ));
    }
}

/// `submit`'s queue step, before any write: refusals stop it, the rest is said on stderr.
/// `--skip-capacity-check` turns `never` into a warning, as it does for placement.
pub async fn gate(
    kube: &Kube,
    ns: &str,
    job: &TFJob,
    capacity: bool,
    out: &mut Output,
) -> Result<Assessed> {
    let mut a = assess(kube, ns, job).await?;
    for w in &a.warnings {
        out.note_line(&format!("warning: {w}"));
    }
    if let Some(e) = a.refusal.take() {
        let never = matches!(e, Error::WontRun { .. });
        if !never || capacity {
            return Err(nothing_created(e));
        }
        out.note_line(&format!("warning: {e} (--skip-capacity-check)"));
    }
    Ok(a)
}

/// A refusal as `submit` says it: `check` judges the same job but never creates anything, so
/// only the refusal that stops a write says nothing was written.
fn nothing_created(e: Error) -> Error {
    match e {
        Error::NotReady { message, hint } => Error::NotReady {
            message: format!("{message}; nothing was created"),
            hint,
        },
        Error::WontRun { message, hint } => Error::WontRun {
            message: format!("{message}; nothing was created"),
            hint,
        },
        other => other,
    }
}

/// The text report's line.
pub fn render_text(r: &QueueReport) -> String {
    match r.system {
        None => "Queue: none\n".into(),
        Some(system) => {
            let mut text = format!("Queue ({system}): {} — {}\n", r.verdict.as_str(), r.reason);
            if system == "kueue" {
                text.push_str(&format!("  note: {}\n", q::KUEUE_PODS_READY_NOTE));
            }
            text
        }
    }
}

// The gang step for a job that names Volcano: its PodGroup's minResources against the Volcano
// Queue (`placement::gang`), read through `cluster::queue`.
async fn assess_gang(kube: &Kube, job: &TFJob) -> Result<Assessed> {
    let g = gang::gang_of(job);
    let base = QueueReport {
        system: Some("volcano"),
        verdict: QueueVerdict::Unknown,
        local_queue: None,
        cluster_queue: None,
        reason: String::new(),
        message: None,
        pending_ahead: None,
        held_by: vec![],
        flavors: Default::default(),
    };
    let queue = match q::volcano_queue(kube, &g.queue).await? {
        Fact::Known(queue) => queue,
        Fact::Unknown(why) => {
            return Ok(Assessed {
                report: QueueReport {
                    reason: format!("Volcano queue {}: {why}", g.queue),
                    ..base
                },
                admitted: None,
                refusal: None,
                warnings: vec![format!("cannot read Volcano queue {}: {why}", g.queue)],
            });
        }
    };
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let (verdict, reason, refusal) = match gang::judge(&g, queue.as_ref()) {
        GangVerdict::Fits => (
            QueueVerdict::Fits,
            format!("gang of {} fits Volcano queue {}", g.min_member, g.queue),
            None,
        ),
        GangVerdict::Waits(res, need, free) => (
            QueueVerdict::Queued,
            format!(
                "gang waits in Volcano queue {}: needs {} {res}, {} free in the queue",
                g.queue,
                format_quantity(&res, need),
                format_quantity(&res, free)
            ),
            None,
        ),
        GangVerdict::Never(res, need, cap) => {
            let reason = format!(
                "gang needs {} {res}, more than Volcano queue {}'s capability ({})",
                format_quantity(&res, need),
                g.queue,
                format_quantity(&res, cap)
            );
            let e = Error::WontRun {
                message: format!("TFJob {name} can never be enqueued: {reason}"),
                hint: Some("Lower the replicas (or schedulingPolicy.minAvailable), or use a queue with more capability (--queue).".into()),
            };
            (QueueVerdict::Never, reason, Some(e))
        }
        GangVerdict::Refused(why) => {
            let e = Error::NotReady {
                message: format!(
                    "Volcano would refuse the job's PodGroup ({why}), so the operator would create no pods"
                ),
                hint: Some(format!(
                    "List the queues with `kubectl get queues.scheduling.volcano.sh{}` and pass one with --queue.",
                    kube.hints.hint_suffix()
                )),
            };
            (QueueVerdict::Never, why, Some(e))
        }
    };
    Ok(Assessed {
        warnings: (verdict == QueueVerdict::Queued)
            .then(|| reason.clone())
            .into_iter()
            .collect(),
        report: QueueReport {
            verdict,
            reason,
            ..base
        },
        admitted: None,
        refusal,
    })
}
