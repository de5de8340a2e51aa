//! Why a replica died, in one line, verdict first (`Worker-2: OOMKilled (limit 8Gi) after 41m,
//! 2 restarts`), and which replica failed first. Pure: the callers (`wait`, `diagnose`, `get`,
//! `--save`) hand in what they read; nothing here does I/O.
//!
//! The evidence, most specific first:
//! 1. the pod's own verdict: `status.reason: Evicted` with the kubelet's message (kubernetes
//!    `pkg/kubelet/eviction/helpers.go`: `Reason = "Evicted"`, `"The node was low on resource:
//!    %v. "`), or `NodeLost` (the node lifecycle controller's reason for pods of an
//!    unresponsive node, `pkg/controller/util/node/controller_utils.go`);
//! 2. the `DisruptionTarget` condition (`staging/src/k8s.io/api/core/v1/types.go`:
//!    `PodReasonPreemptionByScheduler`, `PodReasonTerminationByKubelet`,
//!    `PodReasonEvictionByEvictionAPI`, `PodReasonDeletionByTaintManager`);
//! 3. a node that is not Ready (the caller reads the Node);
//! 4. the container's termination: the kernel's `OOMKilled` first;
//! 5. the last log lines against [`SIGNATURES`];
//! 6. restarts past `--max-restarts` (a crash loop, whatever the back-off timer shows now);
//! 7. a non-zero exit code.
//!
//! When the pods are gone, the operator's `ExitedWithCode` events (`Pod: <ns>.<pod> exited with
//! code <n>`, training-operator `pkg/controller.v1/common/pod.go`) still name the replica.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ContainerStateTerminated, ContainerStatus, Event, PodCondition, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use crate::cluster::pod::canonical_replica_type;
use crate::model::{self, DEFAULT_CONTAINER_NAME};

/// Where a log signature comes from, for the table in `docs/failure-evidence.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Signature {
    /// The class named in the one-line verdict.
    pub class: &'static str,
    /// Substrings, any of which matches a line (case-sensitive: these are exact program
    /// output).
    pub patterns: &'static [&'static str],
    /// What it means, said after the class.
    pub meaning: &'static str,
    /// The upstream file that prints it.
    pub source: &'static str,
    /// A replica still running with this in its log is stuck (not merely slow to start).
    pub stalls: bool,
    /// The evidence line says what happened better than the class (`ValueError: bad shape`
    /// beats `PythonTraceback`): it heads the one-line verdict, the class follows.
    pub headline: bool,
}

/// The log signatures, most specific first: the first one that matches the last lines wins.
pub const SIGNATURES: &[Signature] = &[
    Signature {
        class: "ResourceExhausted",
        patterns: &["OOM when allocating tensor"],
        meaning: "TensorFlow ran out of device (GPU) memory allocating a tensor",
        source: "tensorflow/tensorflow tensorflow/core/framework/op_kernel.cc (errors::ResourceExhausted(\"OOM when allocating tensor with shape\", …))",
        stalls: false,
        headline: false,
    },
    Signature {
        class: "NCCLError",
        patterns: &[
            // Not "NCCL WARN": NCCL warns routinely (debug.h WARN) in jobs that train fine.
            "NCCL error",
            "ncclUnhandledCudaError",
            "ncclSystemError",
            "ncclRemoteError",
        ],
        meaning: "the NCCL collective between GPUs failed",
        source: "NVIDIA/nccl src/init.cc (ncclGetErrorString)",
        stalls: false,
        headline: false,
    },
    Signature {
        class: "NoGPU",
        patterns: &["CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"],
        meaning: "the container sees no GPU (no nvidia.com/gpu limit, or no device plugin)",
        source: "tensorflow/tensorflow tensorflow/stream_executor/cuda/cuda_driver.cc (\"failed call to cuInit: \" with the CUresult name)",
        stalls: false,
        headline: false,
    },
    Signature {
        class: "CreateSessionWaiting",
        patterns: &["CreateSession still waiting for response from worker"],
        meaning: "the replica never reached a peer named in TF_CONFIG",
        source: "tensorflow/tensorflow tensorflow/core/distributed_runtime/master.cc (LOG(INFO) << \"CreateSession still waiting for response from worker: \")",
        stalls: true,
        headline: false,
    },
    Signature {
        class: "Unavailable",
        patterns: &["failed to connect to all addresses", "UnavailableError"],
        meaning: "gRPC could not reach a peer (a replica down, or its Service not resolving)",
        source: "grpc/grpc src/core/load_balancing/pick_first (\"failed to connect to all addresses\"); tensorflow/tensorflow tensorflow/python/framework/errors_impl.py (UnavailableError)",
        stalls: true,
        headline: false,
    },
    Signature {
        class: "CUDALibraryMissing",
        patterns: &[
            // Not a bare "libcudart.so": TensorFlow logs "Successfully opened dynamic library
            // libcudart.so.11.0" on every healthy GPU start.
            "Could not load dynamic library 'libcud",
            "libcuda.so.1: cannot open shared object file",
        ],
        meaning: "a CUDA library is missing from the image (a CPU image on a GPU job?)",
        source: "tensorflow/tensorflow tensorflow/stream_executor/platform/default/dso_loader.cc (\"Could not load dynamic library '…'; dlerror: …\")",
        stalls: false,
        headline: false,
    },
    Signature {
        class: "ArgumentError",
        patterns: &[
            ": error: the following arguments are required:",
            ": error: unrecognized arguments:",
            ": error: argument ",
        ],
        meaning: "the training script refused its command-line arguments (argparse exits 2)",
        source: "python/cpython Lib/argparse.py (ArgumentParser.error: \"%(prog)s: error: %(message)s\", exit status 2)",
        stalls: false,
        headline: true,
    },
    Signature {
        class: "PythonTraceback",
        patterns: &["Traceback (most recent call last):"],
        meaning: "the training script raised an exception",
        source: "python/cpython Python/traceback.c (\"Traceback (most recent call last):\\n\")",
        stalls: false,
        headline: true,
    },
];

/// How many of the last log lines are scanned: the cause is at the end, and a training log is
/// long.
pub const SCAN_LINES: usize = 200;

/// The most specific signature in the last [`SCAN_LINES`] lines of `log`, with the line that
/// showed it (trimmed, at most 200 characters). A stall signature (a peer not reached yet)
/// followed by a progress line is the past, not the cause: a worker that starts before its PS
/// logs `UnavailableError` once, then trains.
pub fn scan_log(log: &str) -> Option<(&'static Signature, String)> {
    // A `timestamps=true` log is read as its lines (a traceback's frames are indented).
    let lines: Vec<&str> = log
        .lines()
        .map(|l| crate::cluster::pod::split_timestamp(l).map_or(l, |(_, rest)| rest))
        .collect();
    let tail = &lines[lines.len().saturating_sub(SCAN_LINES)..];
    SIGNATURES.iter().find_map(|sig| {
        // The last line that matches: the one closest to the end is the one that ended it.
        let at = tail
            .iter()
            .rposition(|l| sig.patterns.iter().any(|p| l.contains(p)))?;
        if sig.stalls && tail[at + 1..].iter().any(|l| progressed(l)) {
            return None;
        }
        let line = if sig.class == "PythonTraceback" {
            exception_line(&tail[at + 1..]).unwrap_or(tail[at])
        } else {
            tail[at]
        };
        Some((sig, clip(line.trim(), 200)))
    })
}

/// How long a running replica may log that it has not reached a peer before that is its
/// failure: a worker that starts before its PS retries for a while, then trains.
pub const STALL_GRACE: std::time::Duration = std::time::Duration::from_secs(120);

/// When the trailing run of stall lines began: the kubelet's time of the first line showing a
/// stall signature after the last progress line, in a `timestamps=true` log. None without one
/// (no stall at the end, or lines without times).
pub fn stalled_since(log: &str) -> Option<Timestamp> {
    let lines: Vec<&str> = log.lines().collect();
    let tail = &lines[lines.len().saturating_sub(SCAN_LINES)..];
    let after_progress = tail
        .iter()
        .rposition(|l| progressed(l))
        .map_or(0, |i| i + 1);
    tail[after_progress..]
        .iter()
        .filter(|l| {
            SIGNATURES
                .iter()
                .filter(|s| s.stalls)
                .any(|s| s.patterns.iter().any(|p| l.contains(p)))
        })
        .find_map(|l| crate::cluster::pod::split_timestamp(l).map(|(t, _)| t))
}

/// A line that shows training going on (a step, an epoch, a loss), timestamped or not.
fn progressed(raw: &str) -> bool {
    let line = crate::cluster::pod::split_timestamp(raw).map_or(raw, |(_, rest)| rest);
    super::progress::read_line(line, None).is_some()
}

/// The exception a traceback ends with: after the indented frames (`  File …`, the source
/// line, carets), the first line back at the margin (`ValueError: bad shape`), as
/// `traceback.print_exception` writes it.
fn exception_line<'a>(after: &[&'a str]) -> Option<&'a str> {
    after
        .iter()
        .find(|l| !l.is_empty() && !l.starts_with([' ', '\t']))
        .copied()
}

/// A replica's failure, one line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaFailure {
    /// `Worker-2` (the replica type as the operator names it, and the index).
    pub replica: String,
    /// The pod, when known.
    pub pod: String,
    /// `OOMKilled`, `Evicted`, `PreemptionByScheduler`, `NodeLost`, a signature's class,
    /// `CrashLoop`, `Error`, `ExitCode`…
    pub class: String,
    /// The whole line: `Worker-2: OOMKilled (limit 8Gi) after 41m, 2 restarts`.
    pub line: String,
    /// The evidence behind it (the kubelet's message, the log line), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// When it happened, to find the first replica to fail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
    /// Still running (a stalled replica), not dead.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
}

/// What one pod shows, as any caller read it (the slim pod of `wait` has no spec: no limit).
#[derive(Debug, Clone, Copy)]
pub struct PodEvidence<'a> {
    pub meta: &'a ObjectMeta,
    pub status: Option<&'a PodStatus>,
    /// The training container's memory limit, when the spec was read.
    pub memory_limit: Option<&'a str>,
    /// The tail of the training container's log (the crashed instance's when it restarted).
    pub log: Option<&'a str>,
    /// The pod's node and its not-Ready condition (`Unknown: Kubelet stopped posting node
    /// status.`), when the caller read the node and it is not Ready (or gone).
    pub node_not_ready: Option<(&'a str, &'a str)>,
    /// Restarts of one container that make a crash loop (`--max-restarts`).
    pub max_restarts: u32,
    /// Now, to judge how long a running replica has logged a stall (a timestamped `log`).
    pub now: Option<Timestamp>,
}

impl<'a> PodEvidence<'a> {
    /// What the pod object alone shows: no spec limit, no log, no node read, no clock.
    pub fn bare(meta: &'a ObjectMeta, status: Option<&'a PodStatus>, max_restarts: u32) -> Self {
        PodEvidence {
            meta,
            status,
            memory_limit: None,
            log: None,
            node_not_ready: None,
            max_restarts,
            now: None,
        }
    }
}

/// `Worker-2` for a pod with the operator's labels; the pod name otherwise.
pub fn replica_label(meta: &ObjectMeta, job: Option<&str>) -> String {
    let labels = meta.labels.as_ref();
    let rtype = labels.and_then(|l| l.get(model::LABEL_REPLICA_TYPE));
    let index = labels.and_then(|l| l.get(model::LABEL_REPLICA_INDEX));
    match (rtype, index) {
        (Some(t), Some(i)) => format!("{}-{i}", canonical_replica_type(t)),
        _ => {
            let name = meta.name.as_deref().unwrap_or_default();
            job.and_then(|j| label_from_pod_name(name, j))
                .unwrap_or_else(|| name.to_string())
        }
    }
}

/// `Worker-1` from `<job>-worker-1` (the operator's pod name, `GenGeneralName`).
pub fn label_from_pod_name(pod: &str, job: &str) -> Option<String> {
    let rest = pod.strip_prefix(job)?.strip_prefix('-')?;
    let (rtype, index) = rest.rsplit_once('-')?;
    index.parse::<u32>().ok()?;
    Some(format!("{}-{index}", canonical_replica_type(rtype)))
}

fn main_status(status: &PodStatus) -> Option<&ContainerStatus> {
    let cs = status.container_statuses.as_deref()?;
    cs.iter()
        .find(|c| c.name == DEFAULT_CONTAINER_NAME)
        .or_else(|| cs.first())
}

/// The memory limit of the training container (`tensorflow`, else the first): the limit an
/// OOM kill is measured against.
pub fn memory_limit(spec: Option<&k8s_openapi::api::core::v1::PodSpec>) -> Option<&str> {
    spec.and_then(|sp| {
        sp.containers
            .iter()
            .find(|c| c.name == DEFAULT_CONTAINER_NAME)
            .or_else(|| sp.containers.first())
    })
    .and_then(|c| c.resources.as_ref()?.limits.as_ref()?.get("memory"))
    .map(|q| q.0.as_str())
}

/// The termination that explains the container (a crash, an OOM kill): the current one if it
/// failed, else the last one. The runtime check reads crashes through it too.
pub fn failed_termination(cs: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    let current = cs.state.as_ref().and_then(|s| s.terminated.as_ref());
    if let Some(t) =
        current.filter(|t| t.exit_code != 0 || t.reason.as_deref() == Some("OOMKilled"))
    {
        return Some(t);
    }
    if cs.restart_count > 0 {
        return cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
    }
    None
}

fn running_now(cs: &ContainerStatus) -> bool {
    cs.state.as_ref().is_some_and(|s| s.running.is_some())
}

/// How long a container runs after its last failure before the kubelet forgets its crash
/// back-off: twice its longest back-off (`MaxContainerBackOff`, 300s), by client-go
/// `util/flowcontrol/backoff.go` `hasExpired` ("consider stable if it's ok for twice the
/// maxDuration"). Restarts older than that are history, not a crash loop.
pub const BACKOFF_RESET_SECS: i64 = 600;

/// A container that restarted and has run since for longer than [`BACKOFF_RESET_SECS`] (from
/// its last failure's end, else its current start): recovered, by the kubelet's reckoning.
/// The one rule `diagnose`, `probe`, `wait` and `list` judge restarts by.
pub fn recovered(cs: &ContainerStatus, now: Timestamp) -> bool {
    let Some(running) = cs.state.as_ref().and_then(|s| s.running.as_ref()) else {
        return false;
    };
    let since = cs
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.finished_at.as_ref())
        .or(running.started_at.as_ref());
    since.is_some_and(|t| now.duration_since(t.0).as_secs() > BACKOFF_RESET_SECS)
}

/// `after 41m` (how long the instance ran), when both ends are known.
fn ran_for(t: &ContainerStateTerminated) -> String {
    match (&t.started_at, &t.finished_at) {
        (Some(s), Some(f)) => format!(
            " after {}",
            crate::model::duration::coarse(f.0.duration_since(s.0).as_secs().max(0))
        ),
        _ => String::new(),
    }
}

fn restarts_text(n: i32) -> String {
    match n {
        0 => String::new(),
        1 => ", 1 restart".into(),
        n => format!(", {n} restarts"),
    }
}

/// The first line of `s` in at most `max` characters: its start and its end when longer, since
/// a gRPC or Python error puts the cause last (`…: Connection refused`).
fn clip(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or_default().trim();
    let n = first.chars().count();
    if n <= max {
        return first.to_string();
    }
    let head = max * 3 / 5;
    let tail = max.saturating_sub(head + 1);
    let start: String = first.chars().take(head).collect();
    let end: String = first.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// The pod's failure, if it failed (or is stuck). `None` for a healthy or pending pod. The
/// most telling evidence first: the pod's own verdict, a disruption it was told of, its node,
/// the OOM killer, a log signature, a crash loop, a plain exit.
pub fn classify(ev: PodEvidence<'_>, job: Option<&str>) -> Option<ReplicaFailure> {
    let who = Who {
        replica: replica_label(ev.meta, job),
        pod: ev.meta.name.clone().unwrap_or_default(),
    };
    let status = ev.status;
    let main = status.and_then(main_status);
    let restarts = main.map(|c| c.restart_count).unwrap_or(0);
    let disruption = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True");
    if let Some(f) = status.and_then(|s| pod_verdict(&who, s, disruption, restarts)) {
        return Some(f);
    }
    if let Some(c) = disruption {
        return disrupted(&who, c, restarts);
    }
    if let Some(f) = node_lost(&who, &ev) {
        return Some(f);
    }
    let main = main?;
    let term = failed_termination(main);
    let c = Main {
        main,
        term,
        restarts,
        at: term.and_then(|t| t.finished_at.as_ref()).map(|t| t.0),
    };
    oom_killed(&who, &ev, c)
        .or_else(|| signature(&who, &ev, c))
        .or_else(|| crash_loop(&who, &ev, c))
        .or_else(|| exited(&who, c))
}

/// The training container as the last rungs read it: its status, its failed termination, its
/// restarts and when it ended.
#[derive(Clone, Copy)]
struct Main<'a> {
    main: &'a ContainerStatus,
    term: Option<&'a ContainerStateTerminated>,
    restarts: i32,
    at: Option<Timestamp>,
}

/// The replica a failure is told of.
struct Who {
    replica: String,
    pod: String,
}

impl Who {
    /// `Worker-2: <class><rest>`.
    fn mk(
        &self,
        class: &str,
        rest: String,
        evidence: Option<String>,
        at: Option<Timestamp>,
    ) -> Option<ReplicaFailure> {
        Some(ReplicaFailure {
            replica: self.replica.clone(),
            pod: self.pod.clone(),
            class: class.to_string(),
            line: format!("{}: {class}{rest}", self.replica),
            evidence,
            at,
            running: false,
        })
    }
}

/// The pod's own verdict: evicted by the kubelet, or its node lost.
fn pod_verdict(
    who: &Who,
    s: &PodStatus,
    disruption: Option<&PodCondition>,
    restarts: i32,
) -> Option<ReplicaFailure> {
    let message = s.message.as_deref().map(|m| clip(m, 300));
    match s.reason.as_deref() {
        Some("Evicted") => {
            let by = disruption
                .and_then(|c| c.reason.as_deref())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let at = disruption
                .and_then(|c| c.last_transition_time.as_ref())
                .map(|t| t.0);
            let what = message
                .as_deref()
                .map(|m| format!(": {}", m.trim_end()))
                .unwrap_or_default();
            return who.mk(
                "Evicted",
                format!(" by the kubelet{by}{what}{}", restarts_text(restarts)),
                message,
                at,
            );
        }
        Some("NodeLost") => {
            let what = message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            return who.mk("NodeLost", what, message, None);
        }
        _ => {}
    }
    None
}

/// A disruption the pod was told about before it was killed.
fn disrupted(who: &Who, c: &PodCondition, restarts: i32) -> Option<ReplicaFailure> {
    let reason = c
        .reason
        .clone()
        .unwrap_or_else(|| "DisruptionTarget".into());
    let what = match reason.as_str() {
        "PreemptionByScheduler" => "preempted by the scheduler for a higher-priority pod",
        "TerminationByKubelet" => "terminated by the kubelet (node shutdown or pressure)",
        "EvictionByEvictionAPI" => "evicted through the Eviction API (a drain or an autoscaler)",
        "DeletionByTaintManager" => {
            "deleted by the taint manager (its node is NotReady or tainted NoExecute)"
        }
        "DeletionByPodGC" => "deleted by the pod garbage collector (its node is gone)",
        _ => "disrupted",
    };
    let message = c.message.as_deref().map(|m| clip(m, 300));
    who.mk(
        &reason,
        format!(" ({what}){}", restarts_text(restarts)),
        message,
        c.last_transition_time.as_ref().map(|t| t.0),
    )
}

/// Its node is gone or not Ready (a pod that succeeded is past caring).
fn node_lost(who: &Who, ev: &PodEvidence<'_>) -> Option<ReplicaFailure> {
    let status = ev.status;
    if let Some((node, why)) = ev.node_not_ready {
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
        if phase != "Succeeded" {
            return who.mk(
                "NodeLost",
                format!(" (node {node} is not Ready: {})", clip(why, 200)),
                Some(why.to_string()),
                None,
            );
        }
    }
    None
}

/// The kernel's OOM killer.
fn oom_killed(
    who: &Who,
    ev: &PodEvidence<'_>,
    Main {
        term, restarts, at, ..
    }: Main<'_>,
) -> Option<ReplicaFailure> {
    if let Some(t) = term.filter(|t| t.reason.as_deref() == Some("OOMKilled")) {
        let limit = ev.memory_limit.unwrap_or("unknown");
        return who.mk(
            "OOMKilled",
            format!(
                " (limit {limit}, exit code {}){}{}",
                t.exit_code,
                ran_for(t),
                restarts_text(restarts)
            ),
            None,
            at,
        );
    }
    None
}

/// A signature in the log of a container that died (or is stuck while running).
fn signature(
    who: &Who,
    ev: &PodEvidence<'_>,
    Main {
        main,
        term,
        restarts,
        at,
    }: Main<'_>,
) -> Option<ReplicaFailure> {
    let replica = &who.replica;
    let signature = ev.log.and_then(scan_log);
    if let Some((sig, line)) = &signature {
        if let Some(t) = term {
            let mut f = who.mk(
                sig.class,
                format!(
                    " ({}; exit code {}){}{}",
                    sig.meaning,
                    t.exit_code,
                    ran_for(t),
                    restarts_text(restarts)
                ),
                Some(line.clone()),
                at,
            )?;
            if sig.headline {
                // `Worker-1: ValueError: bad shape (PythonTraceback: the training script …)`
                f.line = format!(
                    "{replica}: {line} ({}: {}; exit code {}){}{}",
                    sig.class,
                    sig.meaning,
                    t.exit_code,
                    ran_for(t),
                    restarts_text(restarts)
                );
            }
            return Some(f);
        }
        // A replica still running is stuck once it has not reached a peer for the grace
        // period; before that it may be waiting for a peer that is starting (issue 46).
        let young = match (ev.now, ev.log.and_then(stalled_since)) {
            (Some(now), Some(since)) => {
                now.duration_since(since).as_secs() < STALL_GRACE.as_secs() as i64
            }
            _ => false,
        };
        if sig.stalls && running_now(main) && !young {
            let mut f = who.mk(
                sig.class,
                format!(" (still running: {})", sig.meaning),
                Some(line.clone()),
                None,
            )?;
            f.running = true;
            return Some(f);
        }
    }
    None
}

/// A crash loop, whatever the back-off timer shows right now.
fn crash_loop(
    who: &Who,
    ev: &PodEvidence<'_>,
    Main {
        main,
        term,
        restarts,
        at,
    }: Main<'_>,
) -> Option<ReplicaFailure> {
    let looping = main
        .state
        .as_ref()
        .and_then(|s| s.waiting.as_ref())
        .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"));
    if ev.now.is_some_and(|now| recovered(main, now)) {
        return None;
    }
    if restarts >= ev.max_restarts.max(1) as i32 || looping {
        let last = term
            .map(|t| {
                format!(
                    ", last exit code {} ({})",
                    t.exit_code,
                    t.reason.as_deref().unwrap_or("Error")
                )
            })
            .unwrap_or_default();
        return who.mk(
            "CrashLoop",
            format!(
                " ({} restart{}{last})",
                restarts,
                if restarts == 1 { "" } else { "s" }
            ),
            None,
            at,
        );
    }
    None
}

/// A plain non-zero exit of a container that is down now.
fn exited(
    who: &Who,
    Main {
        main, restarts, at, ..
    }: Main<'_>,
) -> Option<ReplicaFailure> {
    let t = main.state.as_ref().and_then(|s| s.terminated.as_ref())?;
    if t.exit_code == 0 {
        return None;
    }
    let reason = t.reason.clone().unwrap_or_else(|| "Error".into());
    let class = if reason == "Error" {
        "ExitCode"
    } else {
        reason.as_str()
    };
    let reason_text = if reason == "Error" {
        String::new()
    } else {
        format!(", {reason}")
    };
    who.mk(
        class,
        format!(
            " {}{reason_text}{}{}",
            t.exit_code,
            ran_for(t),
            restarts_text(restarts)
        ),
        None,
        at,
    )
}

/// `(pod, exit code)` of an operator's `ExitedWithCode` event: `Pod: <ns>.<pod> exited with
/// code <n>` (training-operator `pkg/controller.v1/common/pod.go`).
fn exited_with_code(e: &Event) -> Option<(&str, i32)> {
    if e.reason.as_deref() != Some("ExitedWithCode") {
        return None;
    }
    let rest = e.message.as_deref()?.strip_prefix("Pod: ")?;
    let (pod, code) = rest.split_once(" exited with code ")?;
    // `<ns>.<pod>`: a namespace has no dot, a pod name may.
    let pod = pod.split_once('.').map_or(pod, |(_, p)| p);
    Some((pod, code.trim().parse().ok()?))
}

/// The pods the operator's events say were killed (exit 137 or 143), whose own events may say
/// by whom.
pub fn killed_pods(job_events: &[Event]) -> Vec<String> {
    let mut pods: Vec<String> = job_events
        .iter()
        .filter_map(exited_with_code)
        .filter(|(_, code)| matches!(code, 137 | 143))
        .map(|(pod, _)| pod.to_string())
        .collect();
    pods.sort();
    pods.dedup();
    pods
}

/// Who took a pod away, from its own surviving events: the kubelet's `Evicted`
/// (`pkg/kubelet/eviction/eviction_manager.go`), the scheduler's `Preempted`
/// (`pkg/scheduler/framework/preemption/preemption.go`), the taint manager's
/// `TaintManagerEviction` (`pkg/controller/tainteviction/taint_eviction.go`). The class is the
/// `DisruptionTarget` reason the pod carried, as [`classify`] names it while the pod exists.
fn disrupted_by<'a>(pod: &str, pod_events: &'a [Event]) -> Option<(&'static str, &'a Event)> {
    pod_events
        .iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(pod))
        .filter_map(|e| {
            let class = match e.reason.as_deref()? {
                "Evicted" => "Evicted",
                "Preempted" => "PreemptionByScheduler",
                "TaintManagerEviction" => "DeletionByTaintManager",
                _ => return None,
            };
            Some((class, e))
        })
        .next_back()
}

/// The replicas named by the operator's `ExitedWithCode` events with a non-zero code (their
/// pods may be gone), latest event per pod. A kill (137, 143) whose pod's own events say who
/// took it away (`pod_events`, any uid) is classed by them, not guessed from the code.
pub fn from_operator_events(
    events: &[Event],
    pod_events: &[Event],
    namespace: &str,
    job: &str,
) -> Vec<ReplicaFailure> {
    let mut by_pod: BTreeMap<String, ReplicaFailure> = BTreeMap::new();
    for e in events {
        let Some((pod, code)) = exited_with_code(e) else {
            continue;
        };
        if code == 0
            || !e
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with(&format!("Pod: {namespace}.")))
        {
            continue;
        }
        let replica = label_from_pod_name(pod, job).unwrap_or_else(|| pod.to_string());
        if matches!(code, 137 | 143)
            && let Some((class, by)) = disrupted_by(pod, pod_events)
        {
            by_pod.entry(pod.to_string()).or_insert(taken_away(
                replica,
                pod,
                class,
                by,
                Some(code),
            ));
            continue;
        }
        let hint = match code {
            137 => " (SIGKILL: the OOM killer, an eviction or a preemption)",
            143 => " (SIGTERM)",
            _ => "",
        };
        let at = e
            .first_timestamp
            .as_ref()
            .map(|t| t.0)
            .or_else(|| e.event_time.as_ref().map(|t| t.0));
        by_pod.entry(pod.to_string()).or_insert(ReplicaFailure {
            replica: replica.clone(),
            pod: pod.to_string(),
            class: "ExitCode".into(),
            line: format!(
                "{replica}: ExitCode {code}{hint}, from the operator's events; its pod and logs are gone"
            ),
            evidence: e.message.clone(),
            at,
            running: false,
        });
    }
    // Pods taken away before they exited (a lost node's, deleted by the taint manager; the
    // operator counts a deleted running pod as failed): only their events are left.
    let mut disrupted: Vec<&str> = pod_events
        .iter()
        .filter_map(|e| e.involved_object.name.as_deref())
        .collect();
    disrupted.sort();
    disrupted.dedup();
    for pod in disrupted {
        if by_pod.contains_key(pod) {
            continue;
        }
        let Some((class, by)) = disrupted_by(pod, pod_events) else {
            continue;
        };
        let replica = label_from_pod_name(pod, job).unwrap_or_else(|| pod.to_string());
        by_pod.insert(pod.to_string(), taken_away(replica, pod, class, by, None));
    }
    by_pod.into_values().collect()
}

/// A replica's failure told by the event of whoever took its pod away, with the exit code the
/// operator saw when it saw one.
fn taken_away(
    replica: String,
    pod: &str,
    class: &str,
    by: &Event,
    code: Option<i32>,
) -> ReplicaFailure {
    let said = by.message.as_deref().map(|m| clip(m, 300));
    let said_text = said.as_deref().unwrap_or("no message");
    let line = match code {
        Some(code) => format!(
            "{replica}: {class} (exit code {code}; {said_text}), from its events; the pod that ran is gone"
        ),
        None => format!("{replica}: {class} ({said_text}), from its events; its pod is gone"),
    };
    ReplicaFailure {
        replica,
        pod: pod.to_string(),
        class: class.into(),
        line,
        evidence: said,
        at: by
            .last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or_else(|| by.event_time.as_ref().map(|t| t.0)),
        running: false,
    }
}

/// Dead replicas in the order they failed (unknown times last, then by name), stalled ones
/// after them. The first is the job's headline.
pub fn order(failures: &mut [ReplicaFailure]) {
    failures.sort_by(|a, b| {
        (a.running, a.at.is_none(), a.at, &a.replica).cmp(&(
            b.running,
            b.at.is_none(),
            b.at,
            &b.replica,
        ))
    });
}

/// Merges `more` (e.g. from events) into `into`, keeping what `into` already says per pod.
pub fn merge(into: &mut Vec<ReplicaFailure>, more: Vec<ReplicaFailure>) {
    for f in more {
        if !into.iter().any(|g| g.pod == f.pod && !f.pod.is_empty()) {
            into.push(f);
        }
    }
}

/// One restart a replica shows: the kubelet keeps the last termination only; earlier ones are
/// counted, and the kubelet's `BackOff` events say when they were.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartEntry {
    pub replica: String,
    pub container: String,
    /// `#3` of the container's restarts.
    pub number: i32,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished: Option<Timestamp>,
}

/// The restart ledger of one pod, oldest first: one line per restart the cluster still shows.
/// `backoff_events` are the kubelet's `BackOff` events on the pod with their count (earlier
/// restarts leave only those).
pub fn ledger(
    meta: &ObjectMeta,
    status: Option<&PodStatus>,
    job: Option<&str>,
    backoff_events: &[(Option<Timestamp>, i32)],
) -> Vec<String> {
    let replica = replica_label(meta, job);
    let mut out = Vec::new();
    for cs in status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.restart_count > 0)
    {
        let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
        let earlier = cs.restart_count - i32::from(last.is_some());
        let container = if cs.name == DEFAULT_CONTAINER_NAME {
            String::new()
        } else {
            format!(" container {}", cs.name)
        };
        if earlier > 0 {
            let seen: i32 = backoff_events.iter().map(|(_, n)| *n).sum();
            let first = backoff_events.iter().filter_map(|(t, _)| *t).min();
            let when = first
                .map(|t| {
                    format!(
                        ", the first back-off at {}",
                        t.strftime("%Y-%m-%dT%H:%M:%SZ")
                    )
                })
                .unwrap_or_default();
            out.push(format!(
                "{replica}{container} restarts #1–#{earlier}: details not kept by the kubelet ({seen} back-off event{}{when})",
                if seen == 1 { "" } else { "s" }
            ));
        }
        if let Some(t) = last {
            out.push(format!(
                "{replica}{container} restart #{}: {} exit code {}{}",
                cs.restart_count,
                t.reason.as_deref().unwrap_or("Error"),
                t.exit_code,
                t.finished_at
                    .as_ref()
                    .map(|f| format!(" at {}", f.0.strftime("%Y-%m-%dT%H:%M:%SZ")))
                    .unwrap_or_default()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
