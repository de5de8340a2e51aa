//! The pure diagnosis: one function per layer, each adding findings and saying whether the
//! next layers can be judged at all.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Container, ContainerStateTerminated, ContainerStatus, Event, Pod, PodSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{CrdState, Diagnosis, Finding, Layer, OperatorState, Snapshot, Verdict};
use crate::cluster::install_operator_hint;
use crate::cluster::secret::{self, SecretState};
use crate::gateway::DEFAULT_SECRET_KEY;
use crate::model::{
    self, DEFAULT_CONTAINER_NAME, LABEL_REPLICA_TYPE, MANAGED_BY_VALUES, TFJob, condition,
};

/// How long the operator may take to add the Created condition before we call it stuck.
pub const RECONCILE_GRACE_SECS: i64 = 10;
/// The sidecar that breaks the replicas' gRPC rendezvous.
pub const ISTIO_SIDECAR: &str = "istio-proxy";
const OWN_MANAGER: &str = "kubeflow.org/training-operator";
/// At most this many pod names per replica type in one finding (`replicas` comes from the user).
const MAX_NAMED_PODS: i32 = 100;
/// The label that puts a job in a Kueue queue (Kueue then owns `suspend`).
const KUEUE_QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// Why a layer could not be judged.
type Gate = Result<(), String>;

pub fn diagnose(s: &Snapshot) -> Diagnosis {
    let mut out = Vec::new();
    let mut gate = crd(s, &mut out);
    if gate.is_ok() {
        gate = controller(s, &mut out);
    } else {
        not_reached(&mut out, Layer::Controller, &gate);
    }
    if gate.is_ok() {
        gate = objects(s, &mut out);
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

    let secrets = secret_values(s);
    for f in &mut out {
        scrub_finding(f, &secrets);
    }
    let state = match &s.job {
        None => "NotFound".to_string(),
        Some(job) => job
            .last_condition()
            .map(|c| c.type_.clone())
            .unwrap_or_else(|| "Unknown".into()),
    };
    Diagnosis {
        job: s.job_name.clone(),
        namespace: s.namespace.clone(),
        state,
        pods: pod_phases(&s.pods),
        notes: s.notes.iter().map(|n| scrub(n, &secrets)).collect(),
        findings: out,
    }
}

fn not_reached(out: &mut Vec<Finding>, layer: Layer, gate: &Gate) {
    let why = gate.as_ref().err().map(String::as_str).unwrap_or("");
    out.push(Finding::new(
        layer,
        Verdict::Info,
        format!("not reached ({why})"),
    ));
}

// ---------------------------------------------------------------------------------------------
// 1. CRD

fn crd(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let name = model::CRD_NAME;
    match &s.crd {
        CrdState::Missing => {
            out.push(
                Finding::new(
                    Layer::Crd,
                    Verdict::Fail,
                    format!("CRD {name} is not installed: no training-operator serves TFJobs here"),
                )
                .next(install_operator_hint()),
            );
            Err("CRD missing".into())
        }
        CrdState::Present {
            established,
            served_versions,
        } => {
            let serves = served_versions.join(", ");
            if !served_versions.iter().any(|v| v == model::VERSION) {
                out.push(
                    Finding::new(
                        Layer::Crd,
                        Verdict::Fail,
                        format!(
                            "CRD {name} does not serve v1 (serves: {})",
                            if serves.is_empty() {
                                "nothing"
                            } else {
                                &serves
                            }
                        ),
                    )
                    .evidence("TFJob kubeflow.org/v1 is served only by training-operator v1.x")
                    .next(install_operator_hint()),
                );
                return Err("CRD does not serve v1".into());
            }
            if !established {
                out.push(
                    Finding::new(
                        Layer::Crd,
                        Verdict::Fail,
                        format!("CRD {name} is not Established yet"),
                    )
                    .next(format!(
                        "check its conditions: kubectl get crd {name} -o jsonpath='{{.status.conditions}}'"
                    )),
                );
                return Err("CRD not established".into());
            }
            out.push(Finding::new(
                Layer::Crd,
                Verdict::Ok,
                format!("{name} established, serves {serves}"),
            ));
            Ok(())
        }
        CrdState::Unknown(why) => {
            out.push(
                Finding::new(
                    Layer::Crd,
                    Verdict::Unknown,
                    format!("cannot tell whether {name} is installed"),
                )
                .evidence(why.clone()),
            );
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Controller

fn controller(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let ns = &s.namespace;
    let reconciled = s
        .job
        .as_ref()
        .is_some_and(|j| j.condition(condition::CREATED).is_some());
    let operator = match &s.operator {
        OperatorState::Running { namespace, name } => Finding::new(
            Layer::Controller,
            Verdict::Ok,
            format!("training-operator running ({namespace}/{name})"),
        ),
        OperatorState::NotReady {
            namespace,
            name,
            ready,
            desired,
        } => Finding::new(
            Layer::Controller,
            Verdict::Fail,
            format!("training-operator {namespace}/{name} is not ready ({ready}/{desired} replicas ready)"),
        )
        .next(format!(
            "see why: kubectl -n {namespace} describe deployment {name}; kubectl -n {namespace} logs deploy/{name}"
        )),
        OperatorState::NotFound if reconciled => Finding::new(
            Layer::Controller,
            Verdict::Warning,
            "no training-operator Deployment found in any namespace, yet the job was reconciled \
             (Created): the operator runs under another name or outside a Deployment",
        ),
        OperatorState::NotFound => Finding::new(
            Layer::Controller,
            Verdict::Fail,
            "no training-operator Deployment found in any namespace",
        )
        .evidence("looked for a Deployment whose pods run a training-operator image or carry control-plane: kubeflow-training-operator")
        .next(install_operator_hint()),
        OperatorState::Unknown(why) => Finding::new(
            Layer::Controller,
            Verdict::Unknown,
            "cannot tell whether the training-operator is running",
        )
        .evidence(why.clone()),
    };

    let Some(job) = &s.job else {
        out.push(operator);
        out.push(
            Finding::new(
                Layer::Controller,
                Verdict::Fail,
                format!("TFJob {ns}/{} not found", s.job_name),
            )
            .next(format!("list the jobs: kubectl get tfjobs -n {ns}")),
        );
        return Err("TFJob not found".into());
    };
    let name = &s.job_name;
    let age = age_secs(s.now, job.metadata.creation_timestamp.as_ref());
    let run_policy = job.spec.run_policy.as_ref();
    let managed_by = run_policy.and_then(|p| p.managed_by.as_deref());
    // The spec is what the operator acts on; the condition may lag a resume.
    let suspended = run_policy.and_then(|p| p.suspend).unwrap_or(false);
    let kueue_queue = job
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(KUEUE_QUEUE_LABEL));

    // The job's own progress, merged into the operator line when both are fine.
    let mut gate = Ok(());
    let created = job.condition(condition::CREATED);
    let status_finding = if let Some(m) = managed_by.filter(|m| *m != OWN_MANAGER) {
        let known = MANAGED_BY_VALUES.contains(&m);
        gate = Err(format!("job managed by {m}"));
        Finding::new(
            Layer::Controller,
            if created.is_some() { Verdict::Info } else { Verdict::Warning },
            format!("runPolicy.managedBy is {m:?}: the training-operator skips this job and {m} must run it"),
        )
        .evidence(if known {
            format!("{m} dispatches the job (Kueue MultiKueue runs it on a worker cluster)")
        } else {
            format!("{m} is not a value the training-operator's webhook accepts")
        })
        .next("check that controller (e.g. Kueue's MultiKueue admission), or recreate the job without runPolicy.managedBy")
    } else if suspended {
        gate = Err("job suspended".into());
        let f = Finding::new(
            Layer::Controller,
            Verdict::Warning,
            "job is suspended (runPolicy.suspend: true): the operator deletes its pods and creates none",
        );
        match kueue_queue {
            // Kueue suspends queued jobs itself and resumes them on admission.
            Some(queue) => f
                .evidence(format!("queued in Kueue LocalQueue {queue:?} ({KUEUE_QUEUE_LABEL})"))
                .next(format!(
                    "Kueue resumes it once admitted; see why it waits: kubectl get workloads -n {ns}; kubectl describe localqueue {queue} -n {ns}"
                )),
            None => f.next(format!(
                "resume it: kubectl patch tfjob {name} -n {ns} --type merge -p '{{\"spec\":{{\"runPolicy\":{{\"suspend\":false}}}}}}'"
            )),
        }
    } else if created.is_none() {
        match age {
            Some(a) if a < RECONCILE_GRACE_SECS => {
                gate = Err("not reconciled yet".into());
                Finding::new(
                    Layer::Controller,
                    Verdict::Info,
                    format!("job is {a}s old and has no Created condition yet; the operator may still be picking it up"),
                )
                .next(format!("run diagnose again in a few seconds: kubectl tfjob diagnose {name} -n {ns}"))
            }
            _ => {
                gate = Err("the operator has not reconciled the job".into());
                let mut f = Finding::new(
                    Layer::Controller,
                    Verdict::Fail,
                    format!(
                        "no Created condition {}after creation: the training-operator is not reconciling this job",
                        age.map(|a| format!("{} ", human(a))).unwrap_or_default()
                    ),
                );
                f = match &s.operator {
                    OperatorState::Running { namespace, name } => f
                        .evidence(format!("the operator Deployment {namespace}/{name} is running; it may watch other namespaces or lack the tfjob scheme"))
                        .next(format!("check its log: kubectl -n {namespace} logs deploy/{name} | grep -i {}", s.job_name)),
                    OperatorState::NotFound | OperatorState::NotReady { .. } => {
                        f.evidence("no training-operator is running (see above)")
                    }
                    OperatorState::Unknown(_) => f.next(install_operator_hint()),
                };
                f
            }
        }
    } else {
        let since = created
            .and_then(|c| c.last_transition_time.as_ref())
            .or(job.metadata.creation_timestamp.as_ref());
        let mut summary = format!(
            "job Created{}",
            age_secs(s.now, since)
                .map(|a| format!(" {} ago", human(a)))
                .unwrap_or_default()
        );
        if let Some(last) = job
            .last_condition()
            // Failed gets a finding of its own below.
            .filter(|c| {
                c.is_true() && c.type_ != condition::CREATED && c.type_ != condition::FAILED
            })
        {
            summary.push_str(&format!(", now {}", last.type_));
        }
        Finding::new(Layer::Controller, Verdict::Ok, summary)
    };
    if operator.verdict == Verdict::Ok && status_finding.verdict == Verdict::Ok {
        let mut merged = operator;
        merged.summary = format!("{}; {}", merged.summary, status_finding.summary);
        out.push(merged);
    } else {
        out.push(operator);
        out.push(status_finding);
    }

    if let Some(failed) = job.condition(condition::FAILED).filter(|c| c.is_true()) {
        let message = failed.message.clone().unwrap_or_default();
        let next = if message.contains("backoff limit") {
            "fix the cause in the Runtime findings; the job stopped after runPolicy.backoffLimit restarts".to_string()
        } else if message.contains("deadline") {
            "the job ran longer than runPolicy.activeDeadlineSeconds: raise it or make training shorter".to_string()
        } else {
            format!(
                "fix the cause in the Runtime findings (logs: kubectl logs {} -c {DEFAULT_CONTAINER_NAME} -n {ns}), then delete and resubmit the job",
                s.pods
                    .iter()
                    .find(|p| pod_phase(p) == "Failed")
                    .map(pod_name)
                    .or_else(|| job.pod_names().first().cloned())
                    .unwrap_or_else(|| "POD".into())
            )
        };
        out.push(
            Finding::new(
                Layer::Controller,
                Verdict::Fail,
                format!("job Failed: {message}"),
            )
            .evidence(format!(
                "reason {}",
                failed.reason.as_deref().unwrap_or("(none)")
            ))
            .next(next),
        );
    } else if let Some(r) = job
        .last_condition()
        .filter(|c| c.type_ == condition::RESTARTING && c.is_true())
    {
        out.push(
            Finding::new(
                Layer::Controller,
                Verdict::Warning,
                format!(
                    "job is Restarting: {}",
                    r.message.as_deref().unwrap_or("a replica failed")
                ),
            )
            .next("see the Runtime findings for why the replica failed"),
        );
    }

    // Creation failures matter only while something is still missing.
    let missing = missing_objects(s, job);
    if !missing.is_empty() {
        for reason in ["FailedCreatePod", "FailedCreateService"] {
            let messages: Vec<String> = warning_messages(&s.job_events, reason)
                .into_iter()
                .filter(|m| !is_quota(m))
                .collect();
            if messages.is_empty() {
                continue;
            }
            let what = if reason == "FailedCreatePod" {
                "pods"
            } else {
                "services"
            };
            let mut f = Finding::new(
                Layer::Controller,
                Verdict::Fail,
                format!(
                    "the operator cannot create {what}: {}",
                    first_line(&messages[0])
                ),
            )
            .replicas(names_in(&messages, &missing));
            for m in messages.iter().skip(1).take(4) {
                f = f.evidence(format!("{reason}: {}", first_line(m)));
            }
            f = f.next(if messages.iter().any(|m| m.contains("webhook")) {
                "an admission webhook refuses them: fix what its message names, or the webhook"
                    .to_string()
            } else if messages.iter().any(|m| m.contains("forbidden")) {
                "a policy refuses them (PodSecurity, RBAC or a LimitRange): change the pod template to satisfy it".to_string()
            } else {
                format!("see all events: kubectl describe tfjob {name} -n {ns}")
            });
            out.push(f);
        }
    }
    gate
}

/// The names of a list of objects.
fn names<K: kube::Resource>(items: &[K]) -> BTreeSet<&str> {
    items
        .iter()
        .filter_map(|o| o.meta().name.as_deref())
        .collect()
}

/// Expected pod and service names that do not exist.
fn missing_objects(s: &Snapshot, job: &TFJob) -> Vec<String> {
    let (pods, svcs) = (names(&s.pods), names(&s.services));
    job.pod_names()
        .into_iter()
        .filter(|n| !pods.contains(n.as_str()) || !svcs.contains(n.as_str()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 3. Objects

fn objects(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let Some(job) = &s.job else {
        return Err("TFJob not found".into());
    };
    let expected = job.pod_names();
    let (pods, svcs) = (names(&s.pods), names(&s.services));
    let missing_pods: Vec<String> = expected
        .iter()
        .filter(|n| !pods.contains(n.as_str()))
        .cloned()
        .collect();
    let missing_svcs: Vec<String> = expected
        .iter()
        .filter(|n| !svcs.contains(n.as_str()))
        .cloned()
        .collect();
    let n = expected.len();
    let counts = format!(
        "{}/{n} pods, {}/{n} services",
        n - missing_pods.len(),
        n - missing_svcs.len()
    );
    if missing_pods.is_empty() && missing_svcs.is_empty() {
        out.push(Finding::new(Layer::Objects, Verdict::Ok, counts));
        return Ok(());
    }
    let finished = job.is_finished();
    let young = job
        .condition(condition::CREATED)
        .and_then(|c| c.last_transition_time.as_ref())
        .or(job.metadata.creation_timestamp.as_ref())
        .and_then(|t| age_secs(s.now, Some(t)))
        .is_some_and(|a| a < RECONCILE_GRACE_SECS);
    let verdict = if finished || young {
        Verdict::Info
    } else {
        Verdict::Fail
    };
    let mut summary = counts;
    if finished {
        summary.push_str(" (the job is finished; cleanPodPolicy removes pods)");
    } else if young {
        summary.push_str(" (the operator is still creating them)");
    }
    let mut f = Finding::new(Layer::Objects, verdict, summary);
    if !missing_pods.is_empty() {
        f = f.evidence(format!("missing pods: {}", name_list(&missing_pods)));
    }
    if !missing_svcs.is_empty() {
        f = f.evidence(format!(
            "missing headless services: {} (replicas find each other through them)",
            name_list(&missing_svcs)
        ));
    }
    if verdict == Verdict::Fail {
        f = f.next(format!(
            "the operator has not created them; see its events: kubectl describe tfjob {} -n {}",
            s.job_name, s.namespace
        ));
    }
    let mut affected = missing_pods.clone();
    for n in &missing_svcs {
        if !affected.contains(n) {
            affected.push(n.clone());
        }
    }
    out.push(f.replicas(affected));
    if s.pods.is_empty() {
        Err("no pods".into())
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Scheduling

fn scheduling(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let ns = &s.namespace;
    let before = out.len();
    // Quota refusals never produce a pod: they are FailedCreatePod events on the TFJob.
    let quota: Vec<String> = warning_messages(&s.job_events, "FailedCreatePod")
        .into_iter()
        .filter(|m| is_quota(m))
        .collect();
    let missing = s
        .job
        .as_ref()
        .map(|j| missing_objects(s, j))
        .unwrap_or_default();
    if !quota.is_empty() && !missing.is_empty() {
        let mut f = Finding::new(
            Layer::Scheduling,
            Verdict::Fail,
            format!("pods refused by a ResourceQuota: {}", first_line(&quota[0])),
        )
        .replicas(names_in(&quota, &missing))
        .next(format!(
            "see the quota: kubectl describe resourcequota -n {ns}; lower the replicas' requests (or replicas), or ask for more quota"
        ));
        for m in quota.iter().skip(1).take(3) {
            f = f.evidence(first_line(m).to_string());
        }
        out.push(f);
    }

    // Unschedulable pods, grouped by the scheduler's message.
    let mut groups: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    // Pods no scheduler has looked at, by schedulerName.
    let mut unseen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pod in &s.pods {
        if let Some(msg) = unschedulable(pod, &s.pod_events) {
            groups.entry(msg).or_default().push(pod);
        } else if let Some(scheduler) = unseen_by_scheduler(pod, s.now) {
            unseen.entry(scheduler).or_default().push(pod_name(pod));
        }
    }
    for (scheduler, names) in unseen {
        let custom = scheduler != "default-scheduler";
        out.push(
            Finding::new(
                Layer::Scheduling,
                if custom { Verdict::Fail } else { Verdict::Warning },
                format!(
                    "{} pod{} not picked up by scheduler {scheduler:?} after {UNSEEN_SECS}s",
                    names.len(),
                    plural(names.len())
                ),
            )
            .evidence("no PodScheduled condition and no FailedScheduling event")
            .next(if custom {
                format!(
                    "is {scheduler} installed and running? (gang scheduling sets schedulerName; install it or drop schedulerName)"
                )
            } else {
                "check the control plane: kubectl get pods -n kube-system | grep scheduler".into()
            })
            .replicas(names),
        );
    }
    for (msg, pods) in &groups {
        let names: Vec<String> = pods.iter().map(|p| pod_name(p)).collect();
        let mut f = Finding::new(
            Layer::Scheduling,
            Verdict::Fail,
            format!("{} unschedulable: {msg}", describe_pods(pods)),
        )
        .replicas(names.clone());
        let (evidence, next) = scheduling_advice(msg, pods, s);
        for e in evidence {
            f = f.evidence(e);
        }
        out.push(f.next(next));
    }

    let scheduled = s.pods.iter().filter(|p| is_scheduled(p)).count();
    if out.len() == before {
        if s.pods.is_empty() {
            return Err("no pods".into());
        }
        out.push(Finding::new(
            Layer::Scheduling,
            Verdict::Ok,
            format!("{scheduled}/{} pods scheduled", s.pods.len()),
        ));
        return Ok(());
    }
    if scheduled == 0 {
        Err("pods not scheduled".into())
    } else {
        Ok(())
    }
}

fn is_scheduled(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some()
        || conditions(pod)
            .iter()
            .any(|(t, st, _, _)| t == "PodScheduled" && st == "True")
        || pod_phase(pod) != "Pending"
}

/// Seconds a Pending pod may go without any scheduler verdict.
const UNSEEN_SECS: i64 = 30;

/// The schedulerName of a Pending pod no scheduler has judged for a while.
fn unseen_by_scheduler(pod: &Pod, now: k8s_openapi::jiff::Timestamp) -> Option<String> {
    if pod_phase(pod) != "Pending" || is_scheduled(pod) {
        return None;
    }
    if conditions(pod).iter().any(|(t, ..)| t == "PodScheduled") {
        return None;
    }
    let age = age_secs(now, pod.metadata.creation_timestamp.as_ref())?;
    (age >= UNSEEN_SECS).then(|| {
        pod.spec
            .as_ref()
            .and_then(|s| s.scheduler_name.clone())
            .unwrap_or_else(|| "default-scheduler".into())
    })
}

/// The scheduler's complaint for a Pending pod it could not place, if any.
fn unschedulable(pod: &Pod, events: &[Event]) -> Option<String> {
    if pod_phase(pod) != "Pending" || is_scheduled(pod) {
        return None;
    }
    for (t, st, reason, message) in conditions(pod) {
        if t == "PodScheduled" && st == "False" {
            if reason == "SchedulingGated" {
                return Some(format!(
                    "scheduling gated ({})",
                    if message.is_empty() {
                        "spec.schedulingGates"
                    } else {
                        &message
                    }
                ));
            }
            if !message.is_empty() {
                return Some(message);
            }
        }
    }
    let name = pod_name(pod);
    events
        .iter()
        .rev()
        .find(|e| {
            e.involved_object.name.as_deref() == Some(name.as_str())
                && e.reason.as_deref() == Some("FailedScheduling")
        })
        .and_then(|e| e.message.clone())
}

fn scheduling_advice(msg: &str, pods: &[&Pod], s: &Snapshot) -> (Vec<String>, String) {
    let ns = &s.namespace;
    let mut evidence = Vec::new();
    let first = pods.first().map(|p| pod_name(p)).unwrap_or_default();
    if msg.contains("nvidia.com/gpu") {
        let asked: BTreeSet<String> = pods
            .iter()
            .filter_map(|p| resource_of(p, "nvidia.com/gpu"))
            .collect();
        for a in asked {
            evidence.push(format!("each pod requests nvidia.com/gpu: {a}"));
        }
        return (
            evidence,
            "request fewer GPUs (lower nvidia.com/gpu, e.g. --gpus) or add GPU nodes; check `kubectl describe nodes` for nvidia.com/gpu capacity".into(),
        );
    }
    if msg.contains("untolerated taint") {
        let taints = braced(msg);
        return (
            taints
                .iter()
                .map(|t| format!("nodes carry the taint {t}"))
                .collect(),
            format!(
                "add a toleration for {} to the replicas' pod templates (spec.tfReplicaSpecs.<type>.template.spec.tolerations), or remove the taint; see `kubectl describe nodes | grep Taints`",
                taints.first().map(String::as_str).unwrap_or("the taint")
            ),
        );
    }
    if msg.contains("PersistentVolumeClaim") || msg.contains("persistentvolumeclaim") {
        let claims: BTreeSet<String> = pods
            .iter()
            .flat_map(|p| {
                p.spec
                    .iter()
                    .flat_map(|s| s.volumes.iter().flatten())
                    .filter_map(|v| {
                        v.persistent_volume_claim
                            .as_ref()
                            .map(|c| c.claim_name.clone())
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let list = claims.into_iter().collect::<Vec<_>>().join(", ");
        if !list.is_empty() {
            evidence.push(format!("claims used: {list}"));
        }
        return (
            evidence,
            format!(
                "make the claim(s) {} Bound: kubectl get pvc -n {ns} (create the PVC, or a PV / StorageClass that can satisfy it)",
                if list.is_empty() {
                    "used by the pods".to_string()
                } else {
                    list
                }
            ),
        );
    }
    if msg.contains("Insufficient cpu") || msg.contains("Insufficient memory") {
        return (
            evidence,
            "lower the replicas' cpu/memory requests or add nodes; see `kubectl describe nodes` (Allocated resources)".into(),
        );
    }
    if msg.contains("node affinity") || msg.contains("node selector") {
        return (
            evidence,
            "no node matches the pods' nodeSelector/affinity: compare with `kubectl get nodes --show-labels`".into(),
        );
    }
    if msg.starts_with("scheduling gated") {
        return (
            evidence,
            "something (e.g. Kueue) holds the pods with schedulingGates; check that it admits the job".into(),
        );
    }
    (
        evidence,
        format!("see the scheduler's events: kubectl describe pod {first} -n {ns}"),
    )
}

// ---------------------------------------------------------------------------------------------
// 5. Runtime

fn runtime(s: &Snapshot, out: &mut Vec<Finding>, gate: &Gate) {
    let before = out.len();
    let ns = &s.namespace;
    // Pods of jobs not yet reached are still worth a look if they exist (e.g. after a Failed).
    let pods: &[Pod] = &s.pods;

    image_problems(s, pods, out);
    secret_problems(s, pods, out);
    config_errors_without_secret_cause(s, pods, out, before);
    crashes(s, pods, out);
    gateway_unauthorized(s, pods, out);
    template_checks(s, out);
    istio_sidecars(s, pods, out);
    mount_failures(s, out);

    let found = out.len() > before;
    if out[before..].iter().any(|f| f.verdict == Verdict::Fail) {
        return;
    }
    if let Err(why) = gate {
        if !found {
            out.push(Finding::new(
                Layer::Runtime,
                Verdict::Info,
                format!("not reached ({why})"),
            ));
        }
        return;
    }
    let running = pods.iter().filter(|p| pod_phase(p) == "Running").count();
    let succeeded = pods.iter().filter(|p| pod_phase(p) == "Succeeded").count();
    let total = pods.len();
    let summary = if total == 0 {
        "no pods to inspect".to_string()
    } else if succeeded == total {
        format!("{total}/{total} pods Succeeded")
    } else if running + succeeded == total && !found {
        format!("{running}/{total} pods Running, no restarts or errors")
    } else if running + succeeded == total {
        format!("{running}/{total} pods Running")
    } else {
        format!(
            "{running}/{total} pods Running ({}); no errors yet",
            pod_phases(pods)
        )
    };
    let verdict = if running + succeeded == total && total > 0 {
        Verdict::Ok
    } else {
        Verdict::Info
    };
    let mut f = Finding::new(Layer::Runtime, verdict, summary);
    if verdict == Verdict::Info && total > 0 {
        f = f.next(format!(
            "watch them start: kubectl get pods -n {ns} -l {}",
            model::job_selector(&s.job_name)
        ));
    }
    // The overall state first, then the warnings.
    out.insert(before, f);
}

/// Every container status of a pod (init containers first), with the pod.
fn statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    let st = pod.status.as_ref();
    st.into_iter()
        .flat_map(|s| s.init_container_statuses.iter().flatten())
        .chain(
            st.into_iter()
                .flat_map(|s| s.container_statuses.iter().flatten()),
        )
}

fn waiting(cs: &ContainerStatus) -> Option<(&str, &str)> {
    let w = cs.state.as_ref()?.waiting.as_ref()?;
    Some((
        w.reason.as_deref().unwrap_or_default(),
        w.message.as_deref().unwrap_or_default(),
    ))
}

fn image_problems(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
    // (reason class, image) → (pods, messages)
    let mut groups: BTreeMap<(bool, String), (Vec<String>, BTreeSet<String>)> = BTreeMap::new();
    for pod in pods {
        for cs in statuses(pod) {
            let Some((reason, message)) = waiting(cs) else {
                continue;
            };
            let invalid = reason == "InvalidImageName";
            if !(invalid || reason == "ErrImagePull" || reason == "ImagePullBackOff") {
                continue;
            }
            let image = if cs.image.is_empty() {
                spec_image(pod, &cs.name).unwrap_or_default()
            } else {
                cs.image.clone()
            };
            let entry = groups.entry((invalid, image.clone())).or_default();
            let name = pod_name(pod);
            if !entry.0.contains(&name) {
                entry.0.push(name.clone());
            }
            let detail = if message.is_empty() {
                // ImagePullBackOff's own message is terse; the kubelet's Failed event says why.
                event_message(&s.pod_events, &name, "Failed").unwrap_or_default()
            } else {
                message.to_string()
            };
            if !detail.is_empty() {
                entry.1.insert(format!("{reason}: {detail}"));
            } else {
                entry.1.insert(reason.to_string());
            }
        }
    }
    for ((invalid, image), (names, messages)) in groups {
        let mut f = if invalid {
            Finding::new(
                Layer::Runtime,
                Verdict::Fail,
                format!("invalid image name {image:?} (InvalidImageName)"),
            )
            .next("fix the image reference: [registry/]repository[:tag|@sha256:digest], lowercase, no spaces or scheme")
        } else {
            Finding::new(
                Layer::Runtime,
                Verdict::Fail,
                format!("cannot pull image {image} ({} pod{})", names.len(), plural(names.len())),
            )
            .next(format!(
                "check that {image} exists and the tag is right (docker manifest inspect {image}); for a private registry add imagePullSecrets to the pod templates"
            ))
        };
        for m in messages.into_iter().take(3) {
            f = f.evidence(m);
        }
        out.push(f.replicas(names));
    }
}

/// A `secretKeyRef` (or `envFrom.secretRef`) of a container.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SecretRef {
    secret: String,
    /// `None` for envFrom (the whole Secret).
    key: Option<String>,
    env: String,
    container: String,
}

fn secret_refs(spec: &PodSpec) -> Vec<SecretRef> {
    let mut out = Vec::new();
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    for c in containers {
        for e in c.env.iter().flatten() {
            if let Some(r) = e
                .value_from
                .as_ref()
                .and_then(|v| v.secret_key_ref.as_ref())
                && !r.optional.unwrap_or(false)
            {
                out.push(SecretRef {
                    secret: r.name.clone(),
                    key: Some(r.key.clone()),
                    env: e.name.clone(),
                    container: c.name.clone(),
                });
            }
        }
        for ef in c.env_from.iter().flatten() {
            if let Some(r) = ef.secret_ref.as_ref()
                && !r.optional.unwrap_or(false)
            {
                out.push(SecretRef {
                    secret: r.name.clone(),
                    key: None,
                    env: format!("envFrom (prefix {:?})", ef.prefix.as_deref().unwrap_or("")),
                    container: c.name.clone(),
                });
            }
        }
    }
    out
}

/// Secret names referenced by the job's templates and pods (what `collect` must read).
pub fn referenced_secrets(job: Option<&TFJob>, pods: &[Pod]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Some(job) = job {
        for spec in job.spec.tf_replica_specs.values() {
            if let Some(ps) = &spec.template.spec {
                names.extend(secret_refs(ps).into_iter().map(|r| r.secret));
            }
        }
    }
    for pod in pods {
        if let Some(ps) = &pod.spec {
            names.extend(secret_refs(ps).into_iter().map(|r| r.secret));
        }
    }
    names
}

fn has_config_error(pod: &Pod) -> bool {
    statuses(pod).any(|cs| waiting(cs).is_some_and(|(r, _)| r == "CreateContainerConfigError"))
}

fn secret_problems(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
    let ns = &s.namespace;
    // (ref) → pods using it (empty when only a template uses it)
    let mut refs: BTreeMap<SecretRef, Vec<String>> = BTreeMap::new();
    if let Some(job) = &s.job {
        for spec in job.spec.tf_replica_specs.values() {
            if let Some(ps) = &spec.template.spec {
                for r in secret_refs(ps) {
                    refs.entry(r).or_default();
                }
            }
        }
    }
    for pod in pods {
        if let Some(ps) = &pod.spec {
            for r in secret_refs(ps) {
                refs.entry(r).or_default().push(pod_name(pod));
            }
        }
    }
    // (secret, key) → problem, env vars, pods
    let mut problems: BTreeMap<(String, Option<String>), SecretProblem> = BTreeMap::new();
    for (r, users) in &refs {
        let Some(found) = s.secrets.get(&r.secret) else {
            continue; // unreadable: say nothing rather than guess
        };
        let (problem, fix) = match (
            &r.key,
            secret::secret_state(found.as_ref(), r.key.as_deref().unwrap_or("")),
        ) {
            (_, SecretState::MissingSecret) => (
                format!("Secret {:?} not found in namespace {ns}", r.secret),
                secret::create_command(
                    &r.secret,
                    r.key.as_deref().unwrap_or(DEFAULT_SECRET_KEY),
                    ns,
                ),
            ),
            (None, _) => continue, // envFrom needs only the Secret
            (Some(key), SecretState::MissingKey { present }) => (
                format!(
                    "Secret {:?} has no key {key:?} (it has: {})",
                    r.secret,
                    if present.is_empty() {
                        "no keys".to_string()
                    } else {
                        present.join(", ")
                    }
                ),
                format!("{} --overwrite", secret::create_command(&r.secret, key, ns)),
            ),
            (Some(key), SecretState::EmptyValue) => (
                format!("key {key:?} of Secret {:?} is empty", r.secret),
                format!("{} --overwrite", secret::create_command(&r.secret, key, ns)),
            ),
            (_, SecretState::Ready) => continue,
        };
        let entry = problems
            .entry((r.secret.clone(), r.key.clone()))
            .or_insert_with(|| SecretProblem {
                problem,
                fix,
                envs: BTreeSet::new(),
                users: BTreeSet::new(),
            });
        entry
            .envs
            .insert(format!("env {} of container {}", r.env, r.container));
        entry.users.extend(users.iter().cloned());
    }
    for SecretProblem {
        problem,
        fix,
        envs,
        users,
    } in problems.into_values()
    {
        let blocked: Vec<String> = users
            .iter()
            .filter(|n| {
                pods.iter()
                    .any(|p| &pod_name(p) == *n && has_config_error(p))
            })
            .cloned()
            .collect();
        // Pods already running got the value before it went missing: a warning for the next
        // start. Otherwise the containers cannot start (now, or once scheduled).
        let all_running = !users.is_empty()
            && users.iter().all(|u| {
                pods.iter()
                    .any(|p| &pod_name(p) == u && pod_phase(p) == "Running")
            });
        let verdict = if blocked.is_empty() && all_running {
            Verdict::Warning
        } else {
            Verdict::Fail
        };
        let mut f = Finding::new(
            Layer::Runtime,
            verdict,
            if !blocked.is_empty() {
                format!("{problem}: containers stuck in CreateContainerConfigError")
            } else if all_running {
                format!("{problem}: the running pods started earlier, but a restart will fail")
            } else {
                format!("{problem}: the containers cannot start once scheduled")
            },
        );
        for e in envs {
            f = f.evidence(format!("referenced by {e}"));
        }
        f = f.next(format!(
            "create it (the key is read from a prompt, never from argv): {fix}"
        ));
        out.push(f.replicas(if blocked.is_empty() {
            users.into_iter().collect()
        } else {
            blocked
        }));
    }
}

/// One missing Secret or key, and who needs it.
struct SecretProblem {
    problem: String,
    fix: String,
    envs: BTreeSet<String>,
    users: BTreeSet<String>,
}

/// CreateContainerConfigError that the Secret cross-check did not explain (e.g. a ConfigMap).
fn config_errors_without_secret_cause(
    s: &Snapshot,
    pods: &[Pod],
    out: &mut Vec<Finding>,
    since: usize,
) {
    let explained: BTreeSet<String> = out[since..]
        .iter()
        .flat_map(|f| f.replicas.iter().cloned())
        .collect();
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pod in pods {
        let name = pod_name(pod);
        if explained.contains(&name) {
            continue;
        }
        for cs in statuses(pod) {
            if let Some(("CreateContainerConfigError", message)) = waiting(cs) {
                groups
                    .entry(message.to_string())
                    .or_default()
                    .push(name.clone());
                break;
            }
        }
    }
    for (message, names) in groups {
        let first = names[0].clone();
        out.push(
            Finding::new(
                Layer::Runtime,
                Verdict::Fail,
                format!("CreateContainerConfigError: {message}"),
            )
            .next(if message.contains("configmap") {
                format!("create the ConfigMap it names in namespace {}, or fix the reference", s.namespace)
            } else if message.contains("secret") || message.contains("Secret") {
                format!("create the Secret/key it names: kubectl tfjob secret create NAME -n {} [--key K]", s.namespace)
            } else {
                format!("kubectl describe pod {first} -n {}", s.namespace)
            })
            .replicas(names),
        );
    }
}

/// The termination that explains a crash: the current one if it failed, else the last one.
fn failed_termination(cs: &ContainerStatus) -> Option<&ContainerStateTerminated> {
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

fn crashes(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
    let ns = &s.namespace;
    struct Crash {
        pods: Vec<String>,
        restarts: i32,
        looping: bool,
        /// Still down (looping or terminated), not merely restarted earlier.
        current: bool,
        message: Option<String>,
        limit: Option<String>,
        rtype: String,
    }
    // (container, exit code, reason) → crash
    let mut groups: BTreeMap<(String, i32, String), Crash> = BTreeMap::new();
    for pod in pods {
        for cs in statuses(pod) {
            let looping = waiting(cs).is_some_and(|(r, _)| r == "CrashLoopBackOff");
            let Some(t) = failed_termination(cs) else {
                if looping {
                    groups
                        .entry((cs.name.clone(), -1, "CrashLoopBackOff".into()))
                        .or_insert_with(|| Crash {
                            pods: vec![],
                            restarts: 0,
                            looping,
                            current: true,
                            message: waiting(cs).map(|(_, m)| m.to_string()),
                            limit: None,
                            rtype: replica_type(pod),
                        })
                        .pods
                        .push(pod_name(pod));
                }
                continue;
            };
            let reason = t.reason.clone().unwrap_or_else(|| "Error".into());
            let c = groups
                .entry((cs.name.clone(), t.exit_code, reason))
                .or_insert_with(|| Crash {
                    pods: vec![],
                    restarts: 0,
                    looping: false,
                    current: false,
                    message: t.message.clone().filter(|m| !m.trim().is_empty()),
                    limit: container_of(pod, &cs.name).and_then(|c| {
                        c.resources
                            .as_ref()?
                            .limits
                            .as_ref()?
                            .get("memory")
                            .map(|q| q.0.clone())
                    }),
                    rtype: replica_type(pod),
                });
            c.pods.push(pod_name(pod));
            c.restarts = c.restarts.max(cs.restart_count);
            c.looping |= looping;
            let running = cs.state.as_ref().is_some_and(|st| st.running.is_some());
            c.current |= looping || !running;
        }
    }
    for ((container, code, reason), c) in groups {
        let first = c.pods[0].clone();
        let who = if c.pods.len() == 1 {
            first.clone()
        } else {
            format!("{} {} pods", c.pods.len(), c.rtype)
        };
        let restarts = if c.restarts > 0 {
            format!(", {} restart{}", c.restarts, plural(c.restarts as usize))
        } else {
            String::new()
        };
        // A container that restarted and now runs again is a warning, not the blocker.
        let verdict = if c.current {
            Verdict::Fail
        } else {
            Verdict::Warning
        };
        let mut f = if reason == "OOMKilled" {
            Finding::new(
                Layer::Runtime,
                verdict,
                format!(
                    "OOMKilled: container {container} of {who} ran out of memory (limit {}){restarts}",
                    c.limit.as_deref().unwrap_or("none set")
                ),
            )
            .next(format!(
                "give the {} replicas more memory (resources.limits.memory{}), or lower the batch size",
                c.rtype,
                c.limit.as_deref().map(|l| format!(", now {l}")).unwrap_or_default()
            ))
        } else {
            let state = if c.looping {
                "CrashLoopBackOff"
            } else if c.current {
                "crashed"
            } else {
                "restarted (running again)"
            };
            let code_text = if code < 0 {
                "exit code unknown".to_string()
            } else {
                format!("exit code {code} ({reason}{})", exit_hint(code))
            };
            Finding::new(
                Layer::Runtime,
                verdict,
                format!("{state}: container {container} of {who}: {code_text}{restarts}"),
            )
            .next(format!(
                "fix the error in the log; full log: kubectl logs {first} -c {container} -n {ns}{}",
                if c.restarts > 0 { " --previous" } else { "" }
            ))
        };
        if let Some(m) = &c.message {
            f = f.evidence(format!("termination message: {}", first_line(m)));
        }
        if let Some((pod, log)) = c
            .pods
            .iter()
            .find_map(|p| s.logs.get(p).map(|l| (p.clone(), l)))
        {
            f = f.evidence(format!("log of {pod} ({container}):"));
            f.log = log.lines().map(str::to_string).collect();
        }
        out.push(f.replicas(c.pods));
    }
}

fn exit_hint(code: i32) -> &'static str {
    match code {
        1 => "",
        126 => ": command not executable",
        127 => ": command not found in the image",
        137 => ": killed by SIGKILL (memory or liveness)",
        139 => ": segmentation fault",
        143 => ": terminated by SIGTERM",
        _ => "",
    }
}

/// A log line that shows the gateway answering 401.
fn is_unauthorized(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let has_401 = lower.match_indices("401").any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + 3..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    });
    // A bare "401" is common in training logs (step 401, 0.401); ask for HTTP context.
    (has_401
        && [
            "unauthorized",
            "http",
            "status code",
            "status_code",
            "error code",
            "code: 401",
            "code=401",
            "api key",
            "api_key",
            "authentication",
        ]
        .iter()
        .any(|w| lower.contains(w)))
        || lower.contains("401 unauthorized")
        || lower.contains("invalid api key")
        || lower.contains("incorrect api key")
}

fn gateway_unauthorized(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
    let mut hits: Vec<(String, String)> = Vec::new();
    for (pod, log) in &s.logs {
        if let Some(line) = log.lines().find(|l| is_unauthorized(l)) {
            hits.push((pod.clone(), line.trim().to_string()));
        }
    }
    if hits.is_empty() {
        return;
    }
    // The Secret behind the key env var, for the exact fix.
    let key_ref = pods
        .iter()
        .filter(|p| hits.iter().any(|(n, _)| *n == pod_name(p)))
        .chain(pods.iter())
        .filter_map(|p| p.spec.as_ref())
        .flat_map(secret_refs)
        .find(|r| r.env.ends_with("_API_KEY") && r.key.is_some());
    let fix = match &key_ref {
        Some(r) => format!(
            "{} --overwrite --verify",
            secret::create_command(
                &r.secret,
                r.key.as_deref().unwrap_or_default(),
                &s.namespace
            )
        ),
        None => format!(
            "kubectl tfjob secret create NAME -n {} [--key K] --overwrite --verify",
            s.namespace
        ),
    };
    let mut f = Finding::new(
        Layer::Runtime,
        Verdict::Fail,
        if key_ref.is_some() {
            "the model gateway rejected the API key (HTTP 401)"
        } else {
            "a server rejected the job's credentials (HTTP 401 in the log)"
        },
    );
    if let Some(r) = &key_ref {
        f = f.evidence(format!(
            "the key comes from Secret {:?} key {:?} (env {})",
            r.secret,
            r.key.as_deref().unwrap_or_default(),
            r.env
        ));
    }
    for (pod, line) in hits.iter().take(3) {
        f = f.evidence(format!("{pod}: {}", truncate(line, 200)));
    }
    out.push(
        f.next(format!(
            "store a valid key, checked against the gateway first: {fix}; containers read it when they (re)start, so delete the pods or resubmit the job"
        ))
        .replicas(hits.into_iter().map(|(p, _)| p).collect()),
    );
}

/// Checks on the pod templates (and pods): TF_CONFIG, base URLs.
fn template_checks(s: &Snapshot, out: &mut Vec<Finding>) {
    let Some(job) = &s.job else {
        return;
    };
    let distributed = job.is_distributed();
    let name = &s.job_name;
    for (key, spec) in &job.spec.tf_replica_specs {
        let containers = spec
            .template
            .spec
            .as_ref()
            .map(|p| p.containers.as_slice())
            .unwrap_or_default();
        if containers.is_empty() || containers.iter().any(|c| c.name == DEFAULT_CONTAINER_NAME) {
            continue;
        }
        let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
        let pods: Vec<String> = (0..spec.replicas.unwrap_or(1).clamp(0, MAX_NAMED_PODS))
            .map(|i| model::pod_name(name, key, i64::from(i)))
            .collect();
        let mut f = Finding::new(
            Layer::Runtime,
            if distributed { Verdict::Fail } else { Verdict::Warning },
            if distributed {
                format!("{key} pods have no container named {DEFAULT_CONTAINER_NAME}: they get no TF_CONFIG, so the replicas cannot find each other")
            } else {
                format!("{key} pods have no container named {DEFAULT_CONTAINER_NAME}: the operator finds no port for their service and ignores their exit code")
            },
        )
        .evidence(format!("containers: {}", names.join(", ")));
        f = f.next(format!(
            "name the training container {DEFAULT_CONTAINER_NAME:?} in spec.tfReplicaSpecs.{key}.template.spec.containers, then resubmit"
        ));
        out.push(f.replicas(pods));
    }
    if distributed {
        let lacking: Vec<String> = s
            .pods
            .iter()
            .filter(|p| {
                container_of(p, DEFAULT_CONTAINER_NAME)
                    .is_some_and(|c| !c.env.iter().flatten().any(|e| e.name == "TF_CONFIG"))
            })
            .map(pod_name)
            .collect();
        if !lacking.is_empty() {
            out.push(
                Finding::new(
                    Layer::Runtime,
                    Verdict::Warning,
                    "TF_CONFIG is missing from the tensorflow container of a distributed job's pods",
                )
                .evidence("the operator appends TF_CONFIG when it creates the pods; these were made by something else")
                .next(format!("delete the pods so the operator recreates them: kubectl delete pod -n {} -l {}", s.namespace, model::job_selector(name)))
                .replicas(lacking),
            );
        }
    }

    // *_BASE_URL ending in /v1: clients append /v1 themselves → /v1/v1 → 404.
    let mut seen = BTreeSet::new();
    for (key, spec) in &job.spec.tf_replica_specs {
        let Some(ps) = &spec.template.spec else {
            continue;
        };
        for c in ps.containers.iter() {
            for e in c.env.iter().flatten() {
                let Some(value) = &e.value else { continue };
                // The OpenAI SDK is the one client that wants /v1 in its base URL.
                if !e.name.ends_with("_BASE_URL") || e.name == "OPENAI_BASE_URL" {
                    continue;
                }
                let trimmed = value.trim_end_matches('/');
                if !trimmed.ends_with("/v1") || !seen.insert((e.name.clone(), value.clone())) {
                    continue;
                }
                out.push(
                    Finding::new(
                        Layer::Runtime,
                        Verdict::Warning,
                        format!("{}={value} ends in /v1: clients append /v1 themselves, so requests go to …/v1/v1 and get 404", e.name),
                    )
                    .evidence(format!("in container {} of the {key} template", c.name))
                    .next(format!(
                        "drop the trailing /v1: --api-base-url {}",
                        trimmed.trim_end_matches("/v1")
                    )),
                );
            }
        }
    }
}

fn istio_sidecars(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
    let with: Vec<String> = pods
        .iter()
        .filter(|p| {
            p.spec.as_ref().is_some_and(|ps| {
                ps.containers
                    .iter()
                    .chain(ps.init_containers.iter().flatten())
                    .any(|c| c.name == ISTIO_SIDECAR)
            })
        })
        .map(pod_name)
        .collect();
    if with.is_empty() {
        return;
    }
    let distributed = s.job.as_ref().is_none_or(TFJob::is_distributed);
    out.push(
        Finding::new(
            Layer::Runtime,
            if distributed { Verdict::Fail } else { Verdict::Warning },
            format!(
                "istio-proxy sidecar injected into {} pod{}: it intercepts the replicas' gRPC traffic and breaks their rendezvous",
                with.len(),
                plural(with.len())
            ),
        )
        .next(format!(
            "set the annotation sidecar.istio.io/inject: \"false\" on every replica's pod template (kubectl tfjob submit does unless --allow-istio-sidecar), then delete and resubmit {}",
            s.job_name
        ))
        .replicas(with),
    );
}

fn mount_failures(s: &Snapshot, out: &mut Vec<Finding>) {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &s.pod_events {
        if e.reason.as_deref() != Some("FailedMount") {
            continue;
        }
        let Some(pod) = e.involved_object.name.clone() else {
            continue;
        };
        // Only while the pod is still waiting for it.
        let waiting_pod = s
            .pods
            .iter()
            .any(|p| pod_name(p) == pod && pod_phase(p) == "Pending");
        if !waiting_pod {
            continue;
        }
        let names = groups
            .entry(e.message.clone().unwrap_or_default())
            .or_default();
        if !names.contains(&pod) {
            names.push(pod);
        }
    }
    for (message, names) in groups {
        let first = names[0].clone();
        out.push(
            Finding::new(
                Layer::Runtime,
                Verdict::Fail,
                format!("volume cannot be mounted: {}", first_line(&message)),
            )
            .next(format!(
                "create what the message names, or see kubectl describe pod {first} -n {}",
                s.namespace
            ))
            .replicas(names),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn pod_name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn pod_phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
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

/// (type, status, reason, message) of every pod condition.
fn conditions(pod: &Pod) -> Vec<(String, String, String, String)> {
    pod.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .map(|c| {
            (
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
        .collect()
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

fn pod_phases(pods: &[Pod]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for p in pods {
        *counts.entry(pod_phase(p)).or_default() += 1;
    }
    counts
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

fn is_quota(message: &str) -> bool {
    message.contains("exceeded quota")
        || message.contains("must specify limits") && message.contains("quota")
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

/// 45s, 3m, 2h, 5d — as kubectl's AGE column.
pub(super) fn human(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

// ---------------------------------------------------------------------------------------------
// Keeping secret values out of the output

/// Every non-trivial Secret value the snapshot holds, longest first. The gateway base URL that
/// `secret create --base-url` stores beside the key is not secret and is left readable.
fn secret_values(s: &Snapshot) -> Vec<String> {
    let mut v: Vec<String> = s
        .secrets
        .values()
        .flatten()
        .flat_map(|sec| {
            sec.data
                .iter()
                .flatten()
                .filter(|(k, _)| k.as_str() != secret::BASE_URL_KEY)
                .map(|(_, b)| String::from_utf8_lossy(&b.0).into_owned())
                .chain(
                    sec.string_data
                        .iter()
                        .flatten()
                        .filter(|(k, _)| k.as_str() != secret::BASE_URL_KEY)
                        .map(|(_, s)| s.clone()),
                )
                .collect::<Vec<_>>()
        })
        .map(|s| s.trim().to_string())
        .filter(|s| s.len() >= 6)
        .collect();
    v.sort_by_key(|s| std::cmp::Reverse(s.len()));
    v.dedup();
    v
}

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

fn scrub_finding(f: &mut Finding, values: &[String]) {
    f.summary = scrub(&f.summary, values);
    for e in &mut f.evidence {
        *e = scrub(e, values);
    }
    if let Some(n) = &mut f.next_step {
        *n = scrub(n, values);
    }
    for l in &mut f.log {
        *l = scrub(l, values);
    }
}
