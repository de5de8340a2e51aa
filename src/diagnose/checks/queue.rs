//! The Queue layer, between Controller and Objects: what Kueue (the job's Workload, its
//! LocalQueue and ClusterQueue) or a gang scheduler (the job's PodGroup) says about a job that
//! has no pods yet. Pure, over the facts `collect` read through `cluster::queue`.

use super::{Finding, Gate, Grade, Layer, Snapshot, ns_flags};
use crate::cluster::queue::{self as q, Fact, PodGroup, QueueSystem, Workload, cond_true};
use crate::model::TFJob;
use crate::placement::queue_state::{KueueState, kueue_state};

/// What `collect` read for the Queue layer.
#[derive(Debug, Clone, Default)]
pub struct QueueFacts {
    /// The job's Workload (Kueue label set and Kueue served).
    pub workload: Option<Fact<Option<Workload>>>,
    /// Kueue's API is served (`None`: not asked).
    pub kueue_served: Option<bool>,
    /// The ClusterQueue the job's LocalQueue points at (when read).
    pub cluster_queue: Option<String>,
    /// The job's position in its ClusterQueue, from the visibility API (from 0).
    pub position: Option<i64>,
    /// The PodGroup the operator made for the job, if a gang scheduler is in use.
    pub pod_group: Option<Fact<Option<(QueueSystem, PodGroup)>>>,
    /// The latest event message on that PodGroup.
    pub pod_group_event: Option<String>,
}

/// Whether the job is held in a queue right now (missing queue objects and `never` included):
/// later layers are then not reached.
pub(super) fn queue(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let Some(job) = &s.job else { return Ok(()) };
    match q::local_queue_name(job) {
        Some(lq) => kueue(s, job, lq, out),
        None => gang(s, out),
    }
}

/// A job naming a Kueue LocalQueue: whether Kueue serves it, and what its Workload says.
fn kueue(s: &Snapshot, job: &TFJob, lq: &str, out: &mut Vec<Finding>) -> Gate {
    let facts = &s.queue;
    if facts.kueue_served == Some(false) {
        out.push(
            Finding::new(
                Layer::Queue,
                Grade::Warning,
                format!("names Kueue LocalQueue {lq}, but Kueue's API is not served here: nothing queues the job"),
            )
            .next(format!("remove the {} label, or install Kueue", q::QUEUE_LABEL)),
        );
        return Ok(());
    }
    let wl = match &facts.workload {
        Some(Fact::Known(w)) => w.as_ref(),
        Some(Fact::Unknown(why)) => {
            out.push(Finding::new(
                Layer::Queue,
                Grade::Unknown,
                format!("queued in Kueue LocalQueue {lq}; its Workload is not readable: {why}"),
            ));
            return Err("Workload not readable".into());
        }
        None => None,
    };
    let (finding, gate) = held(s, job, lq, wl);
    out.push(finding);
    gate
}

/// The finding for the Workload's state (admitted, queued, never, evicted, …) and the gate.
fn held(s: &Snapshot, job: &TFJob, lq: &str, wl: Option<&Workload>) -> (Finding, Gate) {
    let ns = &s.namespace;
    let name = &s.job_name;
    let flags = ns_flags(s, ns);
    let facts = &s.queue;
    let wl_name = wl
        .and_then(|w| w.metadata.name.clone())
        .unwrap_or_else(|| "(none)".into());
    let evidence = wl.map(conditions_line).unwrap_or_default();
    let describe = |cq: &str| {
        format!(
            "see why: kubectl describe {} {wl_name} {flags}; kubectl describe clusterqueue {cq}{}",
            crate::cluster::queue::KUEUE_WORKLOADS,
            s.hints.hint_suffix()
        )
    };
    let position = facts
        .position
        .map(|p| format!(" (position {} in the ClusterQueue)", p + 1))
        .unwrap_or_default();
    match kueue_state(job, wl) {
        KueueState::NotHeld => {
            let admitted = wl.filter(|w| cond_true(&w.status.conditions, "Admitted"));
            let f = match (wl, admitted) {
                (_, Some(w)) => Finding::new(
                    Layer::Queue,
                    Grade::Ok,
                    format!(
                        "admitted by Kueue ClusterQueue {} (Workload {wl_name}, LocalQueue {lq})",
                        w.status
                            .admission
                            .as_ref()
                            .map(|a| a.cluster_queue.as_str())
                            .unwrap_or("?")
                    ),
                ),
                (Some(_), None) => Finding::new(
                    Layer::Queue,
                    Grade::Info,
                    format!("Workload {wl_name} in LocalQueue {lq}"),
                ),
                (None, None) => Finding::new(
                    Layer::Queue,
                    Grade::Warning,
                    format!(
                        "names Kueue LocalQueue {lq} but runs unsuspended without a Workload: Kueue's TFJob integration (kubeflow.org/tfjob) looks not enabled, so nothing queues it"
                    ),
                ),
            };
            (f, Ok(()))
        }
        KueueState::NoWorkload => {
            let unseen = crate::placement::kueue::unseen_replica_keys(job);
            let none_seen = unseen.len() == job.spec.tf_replica_specs.len();
            let f = if none_seen {
                Finding::new(
                    Layer::Queue,
                    Grade::Fail,
                    format!(
                        "suspended by Kueue with no Workload: Kueue reads none of its replica types ({}), so its Workload has no pod sets and is never created",
                        unseen.join(", ")
                    ),
                )
                .next("recreate the job with canonical replica keys (Worker, PS, Chief)")
            } else {
                Finding::new(
                    Layer::Queue,
                    Grade::Warning,
                    format!("suspended by Kueue (LocalQueue {lq}), no Workload yet"),
                )
                .next("Kueue's controller creates it within seconds; if none appears, check that the Kueue controller runs")
            };
            (f, Err("no Workload".to_string()))
        }
        KueueState::Queued { cq, why } => {
            let cq = cq.or(facts.cluster_queue.clone()).unwrap_or_else(|| "?".into());
            (
                Finding::new(
                    Layer::Queue,
                    Grade::Warning,
                    format!("queued in ClusterQueue {cq} (LocalQueue {lq}){position}: {why}"),
                )
                .evidence(evidence)
                .next(format!("Kueue admits it once quota frees; {}", describe(&cq))),
                Err("queued in Kueue".to_string()),
            )
        }
        KueueState::Missing(m) => (
            Finding::new(Layer::Queue, Grade::Fail, format!("{m}: Kueue keeps the job suspended"))
                .evidence(evidence)
                .next(format!("list the LocalQueues: kubectl get localqueues {flags}")),
            Err("queue missing".to_string()),
        ),
        KueueState::Never { cq, why } => {
            let cq = cq.or(facts.cluster_queue.clone()).unwrap_or_else(|| "?".into());
            (
                Finding::new(
                    Layer::Queue,
                    Grade::Fail,
                    format!("can never be admitted by ClusterQueue {cq} (LocalQueue {lq}) as configured: {why}"),
                )
                .evidence(evidence)
                .next(format!(
                    "lower the replicas or their requests, or ask for more quota; {}",
                    describe(&cq)
                )),
                Err("never admitted".to_string()),
            )
        }
        KueueState::Evicted { reason, why } => (
            Finding::new(
                Layer::Queue,
                Grade::Warning,
                format!("evicted by Kueue ({reason}): {why}; suspended and queued again"),
            )
            .evidence(evidence),
            Err("evicted by Kueue".to_string()),
        ),
        KueueState::Deactivated => (
            Finding::new(
                Layer::Queue,
                Grade::Warning,
                format!("Workload {wl_name} is deactivated (spec.active: false): Kueue will not admit it"),
            )
            .next(format!("reactivate it: kubectl tfjob resume {name} {flags}")),
            Err("deactivated in Kueue".to_string()),
        ),
    }
}

/// A gang: a PodGroup still Pending with no pods holds the job (Volcano creates none until
/// the group is Inqueue).
fn gang(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let name = &s.job_name;
    let flags = ns_flags(s, &s.namespace);
    let facts = &s.queue;
    let Some(Fact::Known(Some((system, pg)))) = &facts.pod_group else {
        out.push(Finding::new(
            Layer::Queue,
            Grade::Ok,
            "no queue or gang scheduler holds the job",
        ));
        return Ok(());
    };
    let phase = pg.phase().to_string();
    let words = pg.latest_message().or(facts.pod_group_event.clone());
    if s.pods.is_empty() && pg.gang_waiting() {
        let words = words.or_else(|| {
            phase
                .is_empty()
                .then(|| "no gang scheduler has looked at it (is it running?)".to_string())
        });
        let summary = pg.waiting_line(*system, name, words.as_deref());
        let mut f = Finding::new(Layer::Queue, Grade::Warning, summary)
            .evidence(format!(
                "minMember {}; the operator creates the pods once the group is admitted",
                pg.spec.min_member.unwrap_or_default()
            ))
            .next(format!(
                "see its events: kubectl describe podgroups.{} {name} {flags}",
                group_of(*system)
            ));
        // The placement model's word on the whole gang (`check`'s verdict): one the nodes can
        // never hold waits for ever, which is no wait but the failure (exit 4, as `check`).
        if let Some((crate::placement::Verdict::Never, why)) = &s.placement {
            let waiting = std::mem::replace(
                &mut f.summary,
                format!("the job can never run on this cluster as it is: {why}"),
            );
            f.verdict = Grade::Fail;
            f.evidence.insert(0, waiting);
        }
        out.push(f);
        return Err("gang waiting".into());
    }
    out.push(Finding::new(
        Layer::Queue,
        Grade::Ok,
        format!("{} PodGroup {name} is {phase}", system.as_str()),
    ));
    Ok(())
}

fn group_of(system: QueueSystem) -> &'static str {
    match system {
        QueueSystem::Coscheduling => q::COSCHEDULING_GROUP,
        _ => q::VOLCANO_GROUP,
    }
}

/// "Workload W: QuotaReserved=False (Pending), Admitted=…": the conditions Kueue set.
fn conditions_line(w: &Workload) -> String {
    let conds: Vec<String> = w
        .status
        .conditions
        .iter()
        .filter(|c| {
            matches!(
                c.type_.as_str(),
                "QuotaReserved" | "Admitted" | "Evicted" | "Finished" | "PodsReady"
            )
        })
        .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason))
        .collect();
    format!(
        "Workload {}: {}",
        w.metadata.name.as_deref().unwrap_or_default(),
        if conds.is_empty() {
            "no conditions yet".into()
        } else {
            conds.join(", ")
        }
    )
}

/// A Queue-layer failure that means an object is missing (exit 3, as `wait` says).
pub(crate) fn is_missing_queue(s: &Snapshot) -> bool {
    let Some(job) = &s.job else { return false };
    let wl = match &s.queue.workload {
        Some(Fact::Known(w)) => w.as_ref(),
        _ => None,
    };
    matches!(kueue_state(job, wl), KueueState::Missing(_))
}
