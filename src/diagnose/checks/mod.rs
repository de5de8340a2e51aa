//! The pure diagnosis: one function per layer, each adding findings and saying whether the
//! next layers can be judged at all. One file per layer (`crd`, `controller`, `objects`,
//! `scheduling`, `runtime` with its `secrets`); this file holds the driver, the shared pod/event helpers and the
//! scrubbing of secret values, which the layers reach through `use super::*`.

use crate::cluster::pod::PodFacts;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

mod controller;
mod crd;
mod objects;
mod queue;
mod runtime;
mod scheduling;
mod secrets;

use controller::*;
use crd::*;
use objects::*;
pub use queue::QueueFacts;
pub(crate) use queue::is_missing_queue;
use runtime::*;
use scheduling::*;
pub(super) use secrets::referenced_secrets;
use secrets::*;

use super::refused::is_quota;
use super::{CrdState, Diagnosis, Finding, Grade, Layer, OperatorState, Snapshot};
use crate::cluster::install_operator_hint;
use crate::cluster::secret::{self, SecretState};
use crate::gateway::DEFAULT_SECRET_KEY;
use crate::model::{
    self, DEFAULT_CONTAINER_NAME, LABEL_REPLICA_TYPE, MANAGED_BY_VALUES, TFJob, condition,
};

/// How long the operator may take to add the Created condition before we call it stuck.
pub const RECONCILE_GRACE_SECS: i64 = 10;
/// The sidecar that breaks the replicas' gRPC rendezvous.
pub const ISTIO_SIDECAR: &str = crate::gateway::ISTIO_PROXY_CONTAINER;
const OWN_MANAGER: &str = "kubeflow.org/training-operator";
/// At most this many pod names per replica type in one finding (`replicas` comes from the user).
const MAX_NAMED_PODS: i32 = 100;
/// The label that puts a job in a Kueue queue (Kueue then owns `suspend`).
const KUEUE_QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// `-n NS` plus the user's other connection flags, in their order, for a suggested command.
fn ns_flags(s: &Snapshot, namespace: &str) -> String {
    s.hints.ns_flags(namespace)
}

/// The user's connection flags without `-n`, for cluster-scoped commands (`""` or ` --context x`).
fn conn_suffix(s: &Snapshot) -> String {
    s.hints.hint_suffix()
}

/// Why a layer could not be judged.
type Gate = Result<(), String>;

pub fn diagnose(s: &Snapshot) -> Diagnosis {
    let mut out = Vec::new();
    let mut gate = crd(s, &mut out);
    let controller_reached = gate.is_ok();
    if gate.is_ok() {
        gate = controller(s, &mut out);
    } else {
        not_reached(&mut out, Layer::Controller, &gate);
    }
    // Kueue or a gang may hold a job the controller has reconciled (and Kueue suspended).
    if controller_reached && s.job.is_some() {
        let held = queue::queue(s, &mut out);
        if held.is_err() {
            gate = held;
        }
    }
    if gate.is_ok() {
        gate = objects(s, &mut out);
        // A missing object the pods mount is the root cause of whatever the scheduler or the
        // kubelet says about them: named first, with how to create it.
        for m in &s.missing_objects {
            out.push(
                Finding::new(Layer::Objects, Grade::Fail, m.sentence(&s.namespace))
                    .next(format!("create it, and the pods start: {}", m.hint)),
            );
        }
    } else {
        not_reached(&mut out, Layer::Objects, &gate);
    }
    if gate.is_ok() {
        gate = scheduling(s, &mut out);
    } else {
        not_reached(&mut out, Layer::Scheduling, &gate);
    }
    // Template-level runtime checks (TF_CONFIG, base URL, Secrets) apply even before pods run.
    runtime(s, &mut out, &gate);
    // Running is not training: a replica whose step stopped while its peers go on (issue 49).
    let progress = super::progress_of(s);
    for stall in super::progress::stalls(&progress, s.now, super::progress::STALL_AFTER) {
        out.push(
            Finding::new(Layer::Runtime, Grade::Warning, stall).next(format!(
                "read its last lines: kubectl tfjob logs {} --tail 50 {}",
                s.job_name,
                s.hints.ns_flags(&s.namespace)
            )),
        );
    }

    for f in &mut out {
        redact_finding(f);
    }
    let state = match &s.job {
        None => "NotFound".to_string(),
        // The same word `wait` shows for the same state.
        Some(job) => crate::placement::queue_state::list_state(job).unwrap_or_else(|| job.state()),
    };
    Diagnosis {
        job: s.job_name.clone(),
        namespace: s.namespace.clone(),
        state,
        pods: pod_phases(&s.pods),
        pod_counts: pod_counts(&s.pods),
        notes: s.notes.iter().map(|n| redact_bearer(n)).collect(),
        findings: out,
        failures: super::failures(s)
            .into_iter()
            .map(|mut f| {
                f.line = redact_bearer(&f.line);
                f.evidence = f.evidence.map(|e| redact_bearer(&e));
                f
            })
            .collect(),
        restart_ledger: super::restart_ledger(s),
        last_log: super::last_log_ages(s),
        progress: progress
            .iter()
            .map(|(replica, p)| format!("{replica}: {}", p.summary()))
            .collect(),
    }
}

fn not_reached(out: &mut Vec<Finding>, layer: Layer, gate: &Gate) {
    let why = gate.as_ref().err().map(String::as_str).unwrap_or("");
    out.push(Finding::new(
        layer,
        Grade::Info,
        format!("not reached ({why})"),
    ));
}

// ---------------------------------------------------------------------------------------------
// Helpers

// Name and phase are the pod facts of crate::cluster::pod; owned here as Strings for findings.
fn pod_name(pod: &Pod) -> String {
    pod.pod_name().to_string()
}

fn pod_phase(pod: &Pod) -> &str {
    pod.pod_phase()
}

fn replica_type(pod: &Pod) -> String {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_REPLICA_TYPE).cloned())
        .unwrap_or_else(|| "replica".into())
}

fn container_of<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
}

fn spec_image(pod: &Pod, container: &str) -> Option<String> {
    container_of(pod, container).and_then(|c| c.image.clone())
}

/// The largest request or limit of a resource over the pod's containers.
fn resource_of(pod: &Pod, resource: &str) -> Option<String> {
    pod.spec.as_ref()?.containers.iter().find_map(|c| {
        let r = c.resources.as_ref()?;
        r.limits
            .as_ref()
            .and_then(|l| l.get(resource))
            .or_else(|| r.requests.as_ref().and_then(|l| l.get(resource)))
            .map(|q| q.0.clone())
    })
}

/// "3 worker pods" / "worker pod tf-worker-0" for a group.
fn describe_pods(pods: &[&Pod]) -> String {
    let types: BTreeSet<String> = pods.iter().map(|p| replica_type(p)).collect();
    let kind = if types.len() == 1 {
        types.into_iter().next().unwrap_or_default()
    } else {
        types.into_iter().collect::<Vec<_>>().join("/")
    };
    if pods.len() == 1 {
        format!("{kind} pod {}", pod_name(pods[0]))
    } else {
        format!("{} {kind} pods", pods.len())
    }
}

fn pod_counts(pods: &[Pod]) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for p in pods {
        *counts.entry(pod_phase(p).to_string()).or_default() += 1;
    }
    counts
}

fn pod_phases(pods: &[Pod]) -> String {
    pod_counts(pods)
        .into_iter()
        .map(|(phase, n)| format!("{n} {phase}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Distinct Warning messages with this reason, newest first.
fn warning_messages(events: &[Event], reason: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for e in events.iter().rev() {
        if e.reason.as_deref() == Some(reason)
            && e.type_.as_deref().unwrap_or("Warning") == "Warning"
            && let Some(m) = &e.message
            && !v.contains(m)
        {
            v.push(m.clone());
        }
    }
    v
}

fn event_message(events: &[Event], object: &str, reason: &str) -> Option<String> {
    events
        .iter()
        .rev()
        .find(|e| {
            e.involved_object.name.as_deref() == Some(object) && e.reason.as_deref() == Some(reason)
        })
        .and_then(|e| e.message.clone())
}

/// The names from `candidates` that the messages mention, or all of them when none is named.
fn names_in(messages: &[String], candidates: &[String]) -> Vec<String> {
    let named: Vec<String> = candidates
        .iter()
        .filter(|c| messages.iter().any(|m| m.contains(&format!("\"{c}\""))))
        .cloned()
        .collect();
    if named.is_empty() {
        candidates.to_vec()
    } else {
        named
    }
}

/// `{key: value}` groups in a scheduler message (taints).
fn braced(msg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = msg;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        let t = rest[start..=start + len].to_string();
        if !out.contains(&t) {
            out.push(t);
        }
        rest = &rest[start + len + 1..];
    }
    out
}

/// Up to 20 names, then how many more.
fn name_list(names: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut s = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" … and {} more", names.len() - SHOWN));
    }
    s
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

pub(super) fn age_secs(now: k8s_openapi::jiff::Timestamp, t: Option<&Time>) -> Option<i64> {
    t.map(|t| (now.as_second() - t.0.as_second()).max(0))
}

// The formatter lives in `duration`, with every other duration the plugin prints.
pub(super) use crate::model::duration::coarse as human;

// ---------------------------------------------------------------------------------------------
// Keeping secret values out of the output

/// Replaces each of `values` (the real Secret values, which only [`super::collect`] holds, in
/// zeroed-on-drop buffers) with `<redacted>` in `text`, then any `Bearer <token>`. Used on pod
/// logs as they are read, before they enter the snapshot.
pub(super) fn scrub(text: &str, values: &[String]) -> String {
    let mut out = text.to_string();
    for v in values {
        if out.contains(v.as_str()) {
            out = out.replace(v.as_str(), "<redacted>");
        }
    }
    redact_bearer(&out)
}

/// `Bearer <token>` → `Bearer <redacted>`, whatever the token.
fn redact_bearer(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("Bearer ") {
        let (head, tail) = rest.split_at(i + "Bearer ".len());
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
            .unwrap_or(tail.len());
        if end > 0 {
            out.push_str("<redacted>");
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The snapshot holds no Secret values (collect keeps key names and a placeholder, and has
/// scrubbed the logs), so findings only need tokens from other sources (events, notes)
/// redacted: `Bearer <token>`, whatever the token.
fn redact_finding(f: &mut Finding) {
    f.summary = redact_bearer(&f.summary);
    for e in &mut f.evidence {
        *e = redact_bearer(e);
    }
    if let Some(n) = &mut f.next_step {
        *n = redact_bearer(n);
    }
    for l in &mut f.log {
        *l = redact_bearer(l);
    }
}
