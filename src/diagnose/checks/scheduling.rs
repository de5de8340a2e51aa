//! The scheduling layer: why pods are not placed on nodes.

use super::*;

pub(super) fn scheduling(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
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
            Grade::Fail,
            format!("pods refused by a ResourceQuota: {}", first_line(&quota[0])),
        )
        .replicas(names_in(&quota, &missing))
        .next(format!(
            "see the quota: kubectl describe resourcequota {}; lower the replicas' requests (or replicas), or ask for more quota",
            ns_flags(s, ns)
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
                if custom { Grade::Fail } else { Grade::Warning },
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
                format!("check the control plane: kubectl get pods {} | grep scheduler", ns_flags(s, "kube-system"))
            })
            .replicas(names),
        );
    }
    for (msg, pods) in &groups {
        let names: Vec<String> = pods.iter().map(|p| pod_name(p)).collect();
        let mut f = Finding::new(
            Layer::Scheduling,
            Grade::Fail,
            format!("{} unschedulable: {msg}", describe_pods(pods)),
        )
        .replicas(names.clone());
        let (evidence, mut next) = scheduling_advice(msg, pods, s);
        // The placement model's word on the whole job (kubectl tfjob check's verdict).
        match &s.placement {
            Some((crate::placement::Verdict::Never, why)) => {
                f = f.evidence(format!(
                    "the job can never run on this cluster as it is: {why}"
                ));
            }
            Some((crate::placement::Verdict::Waits, why)) => {
                f = f.evidence(format!("the job waits for capacity: {why}"));
                next = format!(
                    "wait for those pods to finish, or free the capacity; otherwise {next}"
                );
            }
            _ => {}
        }
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
            Grade::Ok,
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

pub(super) fn is_scheduled(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some()
        || pod.pod_scheduled().is_some_and(|c| c.status == "True")
        || pod_phase(pod) != "Pending"
}

/// Seconds a Pending pod may go without any scheduler verdict.
pub(super) const UNSEEN_SECS: i64 = 30;

/// The schedulerName of a Pending pod no scheduler has judged for a while.
pub(super) fn unseen_by_scheduler(pod: &Pod, now: k8s_openapi::jiff::Timestamp) -> Option<String> {
    if pod_phase(pod) != "Pending" || is_scheduled(pod) {
        return None;
    }
    if pod.pod_scheduled().is_some() {
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
pub(super) fn unschedulable(pod: &Pod, events: &[Event]) -> Option<String> {
    if pod_phase(pod) != "Pending" || is_scheduled(pod) {
        return None;
    }
    if let Some(c) = pod.not_scheduled() {
        let message = c.message.clone().unwrap_or_default();
        if c.reason.as_deref() == Some("SchedulingGated") {
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
    event_message(events, &pod_name(pod), "FailedScheduling")
}

pub(super) fn scheduling_advice(msg: &str, pods: &[&Pod], s: &Snapshot) -> (Vec<String>, String) {
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
            format!(
                "request fewer GPUs (lower nvidia.com/gpu, e.g. --gpus) or add GPU nodes; check `kubectl describe nodes{}` for nvidia.com/gpu capacity",
                conn_suffix(s)
            ),
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
                "add a toleration for {} to the replicas' pod templates (spec.tfReplicaSpecs.<type>.template.spec.tolerations), or remove the taint; see `kubectl describe nodes{} | grep Taints`",
                taints.first().map(String::as_str).unwrap_or("the taint"),
                conn_suffix(s)
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
                "make the claim(s) {} Bound: kubectl get pvc {} (create the PVC, or a PV / StorageClass that can satisfy it)",
                if list.is_empty() {
                    "used by the pods".to_string()
                } else {
                    list
                },
                ns_flags(s, ns)
            ),
        );
    }
    if msg.contains("Insufficient cpu") || msg.contains("Insufficient memory") {
        return (
            evidence,
            format!(
                "lower the replicas' cpu/memory requests or add nodes; see `kubectl describe nodes{}` (Allocated resources)",
                conn_suffix(s)
            ),
        );
    }
    if msg.contains("node affinity") || msg.contains("node selector") {
        return (
            evidence,
            format!(
                "no node matches the pods' nodeSelector/affinity: compare with `kubectl get nodes --show-labels{}`",
                conn_suffix(s)
            ),
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
        format!(
            "see the scheduler's events: kubectl describe pod {first} {}",
            ns_flags(s, ns)
        ),
    )
}
