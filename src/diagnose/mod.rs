//! `diagnose`: why a TFJob does not run, layer by layer.
//!
//! [`collect`] reads everything once (a fixed number of requests, whatever the replica count)
//! into a [`Snapshot`]; [`diagnose`] is a pure function from that snapshot to [`Finding`]s, in
//! layer order (CRD → controller → objects → scheduling → runtime), each with its evidence and the
//! next step. `wait` reuses both when a wait ends without reaching its target, and [`missing`]
//! (the objects the pods mount that do not exist) while its pods stay Pending. Nothing here
//! imports `ops`: `ops` calls down into diagnose, never the reverse. The text report is
//! printed by `print::diagnosis`, above this module: diagnose imports no printer.
//!
//! Secret values never reach the output: [`collect`] reads the referenced Secrets' values only to
//! scrub them from the pod logs it fetches (held in buffers zeroed on drop), and keeps each Secret
//! in the snapshot with its key names and a placeholder value. [`diagnose`] sees no values, and
//! redacts `Bearer <token>` from every string it emits.

mod checks;
mod collect;
pub mod failure;
pub mod gpu_use;
pub mod inpod;
pub mod missing;
pub mod progress;
pub mod refused;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Event, Pod, Secret, Service};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use crate::model::TFJob;
pub use checks::QueueFacts;

pub use collect::{MAX_LAST_LOG, collect, collect_within, outcome, read_last_logs};

/// The CRD and operator facts come from [`crate::cluster`], which owns them for every command.
pub use crate::cluster::{CrdState, OperatorState};

/// Everything `diagnose` looks at, fetched once by [`collect`].
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub namespace: String,
    pub job_name: String,
    pub now: Timestamp,
    pub crd: CrdState,
    pub operator: OperatorState,
    pub job: Option<TFJob>,
    pub pods: Vec<Pod>,
    pub services: Vec<Service>,
    /// Events whose involvedObject is the TFJob.
    pub job_events: Vec<Event>,
    /// Events on the job's pods.
    pub pod_events: Vec<Event>,
    /// Every event, whatever the pod's uid, of the pods the operator saw killed (exit 137 or
    /// 143): an eviction or a preemption said by the kubelet or the scheduler outlives the pod
    /// and its successor of the same name.
    pub killed_pod_events: Vec<Event>,
    /// Secrets referenced by the job's pods and templates (`None` = not found). A Secret that
    /// could not be read (forbidden) is absent from the map, and the cross-check is skipped.
    pub secrets: BTreeMap<String, Option<Secret>>,
    /// Pod name → tail of its `tensorflow` container log (crashing pods first, a few at most).
    pub logs: BTreeMap<String, String>,
    /// What could not be read, to show as notes (e.g. "events: forbidden").
    pub notes: Vec<String>,
    /// The user's connection flags (no token), repeated in every suggested command.
    pub hints: crate::cluster::ConnectionOptions,
    /// The placement model's verdict when pods are Unschedulable (`waits` or `never`, with its
    /// reason); `None` when it was not asked or had nothing to add.
    pub placement: Option<(crate::placement::Verdict, String)>,
    /// Objects the pods mount that do not exist (read only while a pod is Pending).
    pub missing_objects: Vec<missing::MissingObject>,
    /// The job's Workload and queues, or its PodGroup (the Queue layer).
    pub queue: QueueFacts,
    /// Restarts of one container that make a crash loop (`--max-restarts`, default 3).
    pub max_restarts: u32,
    /// Nodes of the job's pods that are not Ready (or gone), with why (issue 37).
    pub nodes_not_ready: BTreeMap<String, String>,
    /// Running pod name → the last [`crate::cluster::bounded::RECENT_LINES`] lines of its training container,
    /// timestamped (`tailLines=200&timestamps=true`, one request each, a few pods at most): its
    /// last line's age and its progress are read from them.
    pub recent_log: BTreeMap<String, String>,
    /// `--progress-pattern`: a regex with a `step` group, read before the built-in shapes.
    pub progress_pattern: Option<regex::Regex>,
    /// A log read answered 5xx: the kubelet (or the way to it) cannot serve logs.
    pub kubelet_logs_failed: bool,
}

impl Snapshot {
    /// The exact command that deletes this job (before it is resubmitted), reaching the same
    /// cluster as the command the user ran.
    pub fn delete_command(&self) -> String {
        format!(
            "kubectl tfjob delete {} {}",
            self.job_name,
            self.hints.ns_flags(&self.namespace)
        )
    }

    /// An empty snapshot for a job, as a starting point (tests, and `collect`).
    pub fn new(namespace: &str, job_name: &str, now: Timestamp) -> Self {
        Snapshot {
            namespace: namespace.to_string(),
            job_name: job_name.to_string(),
            now,
            crd: CrdState::Unknown("not checked".into()),
            operator: OperatorState::Unknown("not checked".into()),
            job: None,
            pods: Vec::new(),
            services: Vec::new(),
            job_events: Vec::new(),
            pod_events: Vec::new(),
            killed_pod_events: Vec::new(),
            secrets: BTreeMap::new(),
            logs: BTreeMap::new(),
            notes: Vec::new(),
            hints: Default::default(),
            placement: None,
            missing_objects: Vec::new(),
            queue: QueueFacts::default(),
            max_restarts: DEFAULT_MAX_RESTARTS,
            nodes_not_ready: BTreeMap::new(),
            recent_log: BTreeMap::new(),
            progress_pattern: None,
            kubelet_logs_failed: false,
        }
    }
}

/// The default `--max-restarts` of `diagnose`, `wait` and `probe`: one restart is routine (a
/// worker that starts before its PS), three is a loop.
pub const DEFAULT_MAX_RESTARTS: u32 = 3;

/// Each replica's failure class from a snapshot, the first to fail first (issue 37): the pods
/// it holds, with their logs and nodes, then the operator's `ExitedWithCode` events for
/// replicas whose pods are gone. Pure.
pub fn failures(s: &Snapshot) -> Vec<failure::ReplicaFailure> {
    let mut out = pod_failures(s);
    failure::merge(&mut out, from_events(s).0);
    failure::order(&mut out);
    out
}

/// Replicas the operator's and the pods' events say were killed or taken away, whose pod the
/// operator made again under the same name and which runs now, in a job not ended: a restart
/// the job recovered from (`UpdateJobStatus` keeps such a job Restarting, not Failed), said as
/// a warning, never a failure. Pure.
pub fn recovered(s: &Snapshot) -> Vec<failure::ReplicaFailure> {
    let mut out = from_events(s).1;
    // What the pods themselves say of a replica comes first, as in [`failures`].
    let from_pods = pod_failures(s);
    out.retain(|f| !from_pods.iter().any(|g| g.pod == f.pod));
    out
}

/// What each pod of the snapshot says of its replica: its status, with its logs and node.
fn pod_failures(s: &Snapshot) -> Vec<failure::ReplicaFailure> {
    use crate::cluster::pod::PodFacts;
    s.pods
        .iter()
        .filter_map(|p| {
            let limit = failure::memory_limit(p.spec.as_ref());
            let node = p.spec.as_ref().and_then(|sp| sp.node_name.as_deref());
            let node_not_ready =
                node.and_then(|n| s.nodes_not_ready.get(n).map(|why| (n, why.as_str())));
            failure::classify(
                failure::PodEvidence {
                    meta: &p.metadata,
                    status: p.status.as_ref(),
                    memory_limit: limit,
                    // A running replica's recent lines carry the kubelet's times, which say
                    // how long it has been stalled; a crashed one's excerpt is its end.
                    log: s
                        .recent_log
                        .get(p.pod_name())
                        .filter(|_| p.started())
                        .or_else(|| s.logs.get(p.pod_name()))
                        .map(String::as_str),
                    node_not_ready,
                    max_restarts: s.max_restarts,
                    now: Some(s.now),
                },
                Some(&s.job_name),
            )
        })
        .collect()
}

/// The failures read from events, split into (still failed, recovered): recovered when the job
/// has not ended and a pod of that name runs now ([`PodFacts::started`]).
///
/// [`PodFacts::started`]: crate::cluster::pod::PodFacts::started
fn from_events(s: &Snapshot) -> (Vec<failure::ReplicaFailure>, Vec<failure::ReplicaFailure>) {
    use crate::cluster::pod::PodFacts;
    let ended = s.job.as_ref().is_some_and(|j| j.is_finished());
    failure::from_operator_events(
        &s.job_events,
        &s.killed_pod_events,
        &s.namespace,
        &s.job_name,
    )
    .into_iter()
    .partition(|f| ended || !s.pods.iter().any(|p| p.pod_name() == f.pod && p.started()))
}

/// Every replica of an unfinished job has its pod and runs ([`PodFacts::started`]): when the
/// in-pod checks can ask the replicas about each other.
///
/// [`PodFacts::started`]: crate::cluster::pod::PodFacts::started
pub fn every_replica_runs(s: &Snapshot) -> bool {
    use crate::cluster::pod::PodFacts;
    let Some(job) = &s.job else { return false };
    !job.is_finished()
        && crate::operator_pods::expand(job)
            .pod_names()
            .iter()
            .all(|n| s.pods.iter().any(|p| p.pod_name() == n && p.started()))
}

/// A running replica whose last log line is this old is called silent.
pub const SILENT_AFTER: i64 = 5 * 60;

/// The replica label (`Worker-1`) of a pod of the snapshot, else the pod's name.
fn replica_of(s: &Snapshot, pod: &str) -> String {
    s.pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(pod))
        .map(|p| failure::replica_label(&p.metadata, Some(&s.job_name)))
        .unwrap_or_else(|| pod.to_string())
}

/// Pure: each running replica's last log line's age, by replica (`Worker-1 silent for 12m`
/// past [`SILENT_AFTER`], `Worker-0 logged 4s ago` before, `PS-0 has printed nothing`).
pub fn last_log_ages(s: &Snapshot) -> Vec<String> {
    let mut out: Vec<(String, String)> = s
        .recent_log
        .iter()
        .map(|(pod, text)| {
            let replica = replica_of(s, pod);
            let line = match collect::last_line_time(text) {
                None => format!("{replica} has printed nothing"),
                Some(t) => {
                    let secs = s.now.duration_since(t).as_secs().max(0);
                    let age = crate::model::duration::coarse(secs);
                    if secs >= SILENT_AFTER {
                        format!("{replica} silent for {age}")
                    } else {
                        format!("{replica} logged {age} ago")
                    }
                }
            };
            (replica, line)
        })
        .collect();
    out.sort();
    out.into_iter().map(|(_, l)| l).collect()
}

/// Pure: each running replica's training progress read from its recent log lines, by replica
/// label (`worker-0`), replicas without a step left out.
pub fn progress_of(s: &Snapshot) -> Vec<(String, progress::Progress)> {
    let mut out: Vec<(String, progress::Progress)> = s
        .recent_log
        .iter()
        .filter_map(|(pod, text)| {
            let p = progress::of_log(text, s.progress_pattern.as_ref())?;
            let replica = replica_of(s, pod);
            Some((replica, p))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Every pod's restart ledger, oldest first per replica (issue 37), with the kubelet's BackOff
/// events for the restarts whose details the kubelet no longer keeps.
pub fn restart_ledger(s: &Snapshot) -> Vec<String> {
    use crate::cluster::pod::PodFacts;
    s.pods
        .iter()
        .flat_map(|p| {
            let backoffs: Vec<(Option<Timestamp>, i32)> = s
                .pod_events
                .iter()
                .filter(|e| {
                    e.reason.as_deref() == Some("BackOff")
                        && e.involved_object.name.as_deref() == Some(p.pod_name())
                        && e.message
                            .as_deref()
                            .is_some_and(|m| m.contains("restarting failed container"))
                })
                .map(|e| {
                    (
                        e.first_timestamp.as_ref().map(|t| t.0),
                        e.count.unwrap_or(1),
                    )
                })
                .collect();
            failure::ledger(&p.metadata, p.status.as_ref(), Some(&s.job_name), &backoffs)
        })
        .collect()
}

/// The layers, checked in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Crd,
    Controller,
    /// Kueue's Workload and queues, or a gang's PodGroup (issue 23).
    Queue,
    Objects,
    Scheduling,
    Runtime,
    /// What the training process sees inside its pod (`diagnose --probe`, `ops::probe`).
    InPod,
}

impl Layer {
    pub const ALL: [Layer; 7] = [
        Layer::Crd,
        Layer::Controller,
        Layer::Queue,
        Layer::Objects,
        Layer::Scheduling,
        Layer::Runtime,
        Layer::InPod,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Layer::Crd => "CRD",
            Layer::Controller => "Controller",
            Layer::Queue => "Queue",
            Layer::Objects => "Objects",
            Layer::Scheduling => "Scheduling",
            Layer::Runtime => "Runtime",
            Layer::InPod => "In-pod",
        }
    }
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grade {
    Ok,
    Info,
    Warning,
    Fail,
    Unknown,
}

impl Grade {
    /// Severity order: ok < info < unknown < warning < fail.
    pub fn rank(self) -> u8 {
        match self {
            Grade::Ok => 0,
            Grade::Info => 1,
            Grade::Unknown => 2,
            Grade::Warning => 3,
            Grade::Fail => 4,
        }
    }
}

/// One verdict about one layer, with what shows it and what to do. JSON keys are camelCase, as
/// kubectl's and `check -o json`'s.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub layer: Layer,
    pub verdict: Grade,
    pub summary: String,
    pub evidence: Vec<String>,
    pub next_step: Option<String>,
    /// The pods this finding is about.
    pub replicas: Vec<String>,
    /// The last lines of the relevant container log, when there is one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

impl Finding {
    pub fn new(layer: Layer, verdict: Grade, summary: impl Into<String>) -> Self {
        Finding {
            layer,
            verdict,
            summary: summary.into(),
            evidence: Vec::new(),
            next_step: None,
            replicas: Vec::new(),
            log: Vec::new(),
        }
    }

    fn evidence(mut self, line: impl Into<String>) -> Self {
        self.evidence.push(line.into());
        self
    }

    pub fn next(mut self, step: impl Into<String>) -> Self {
        self.next_step = Some(step.into());
        self
    }

    fn replicas(mut self, pods: Vec<String>) -> Self {
        self.replicas = pods;
        self
    }
}

/// The findings for one job (JSON: camelCase keys, pod counts as numbers).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    pub job: String,
    pub namespace: String,
    /// The type of the last condition (the `State` column), `Unknown` without one, `NotFound`
    /// when the TFJob does not exist.
    pub state: String,
    /// Pod phases at a glance, e.g. `3 Pending, 1 Running` (empty without pods), for the text.
    #[serde(skip)]
    pub pods: String,
    /// The same as numbers by phase, for `-o json`: `{"Pending": 3, "Running": 1}`.
    #[serde(rename = "pods")]
    pub pod_counts: std::collections::BTreeMap<String, usize>,
    /// What could not be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub findings: Vec<Finding>,
    /// Each failed (or stalled) replica in one line, the first to fail first (issue 37).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<failure::ReplicaFailure>,
    /// Each restart the cluster still shows, oldest first per replica.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub restart_ledger: Vec<String>,
    /// Each running replica's last log line's age (`Worker-1 silent for 12m`): a replica that
    /// runs and says nothing is stalled, whatever its phase says.
    #[serde(rename = "lastLog", skip_serializing_if = "Vec::is_empty")]
    pub last_log: Vec<String>,
    /// Each running replica's training progress read from its log (`worker-0: step 4,100/10,000
    /// (12.3/s, ETA 12m), loss 0.41`), issue 49.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<String>,
}

impl Diagnosis {
    /// The most severe verdict (Ok when there are no findings).
    pub fn worst(&self) -> Grade {
        self.findings
            .iter()
            .map(|f| f.verdict)
            .max_by_key(|v| v.rank())
            .unwrap_or(Grade::Ok)
    }

    /// The first Fail, in layer order: the root cause to fix first.
    pub fn first_failure(&self) -> Option<&Finding> {
        self.findings.iter().find(|f| f.verdict == Grade::Fail)
    }
}

/// Pure: the findings for one snapshot.
pub fn diagnose(s: &Snapshot) -> Diagnosis {
    checks::diagnose(s)
}
