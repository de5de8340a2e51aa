//! The controller layer: the training-operator runs and has reconciled the job.

use super::*;

pub(super) fn controller(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let ns = &s.namespace;
    let operator = operator(s);
    let Some(job) = &s.job else {
        out.push(operator);
        out.push(
            Finding::new(
                Layer::Controller,
                Grade::Fail,
                format!("TFJob {ns}/{} not found", s.job_name),
            )
            .next(format!(
                "list the jobs: kubectl get tfjobs {}",
                ns_flags(s, ns)
            )),
        );
        return Err("TFJob not found".into());
    };
    let (status, gate) = job_status(s, job);
    if operator.verdict == Grade::Ok && status.verdict == Grade::Ok {
        let mut merged = operator;
        merged.summary = format!("{}; {}", merged.summary, status.summary);
        out.push(merged);
    } else {
        out.push(operator);
        out.push(status);
    }
    ended(s, job, out);
    creation_failures(s, job, out);
    gate
}

/// The training-operator as found: running, not ready, not found (with or without a sign that
/// something reconciled the job), or not readable.
fn operator(s: &Snapshot) -> Finding {
    let reconciled = s
        .job
        .as_ref()
        .is_some_and(|j| j.condition(condition::CREATED).is_some());
    match &s.operator {
        OperatorState::Running { .. } => Finding::new(
            Layer::Controller,
            Grade::Ok,
            s.operator.to_string(),
        ),
        OperatorState::NotReady {
            namespace, name, ..
        } => Finding::new(
            Layer::Controller,
            Grade::Fail,
            s.operator.to_string(),
        )
        .next(format!(
            "see why: kubectl describe deployment {name} {flags}; kubectl logs deploy/{name} {flags}",
            flags = ns_flags(s, namespace)
        )),
        OperatorState::NotFound if reconciled => Finding::new(
            Layer::Controller,
            Grade::Warning,
            "no training-operator Deployment found in any namespace, yet the job was reconciled \
             (Created): the operator runs under another name or outside a Deployment",
        ),
        // Not seeing it is no evidence that nothing runs: the job's status decides below.
        OperatorState::NotFound => Finding::new(
            Layer::Controller,
            Grade::Warning,
            s.operator.headline(),
        )
        .evidence(format!(
            "looked for Deployments labelled {} in every namespace, and for {}/{}",
            crate::cluster::operator::operator_selector(),
            crate::cluster::operator::OPERATOR_NAMESPACE,
            crate::cluster::operator::OPERATOR_DEPLOYMENT
        ))
        .next(install_operator_hint()),
        OperatorState::Unknown(why) => Finding::new(
            Layer::Controller,
            Grade::Unknown,
            s.operator.headline(),
        )
        .evidence(why.clone()),
    }
}

/// What the job's own status says of its reconciliation (managed elsewhere, suspended, not
/// reconciled, or Created and where it is now), and the gate for the layers below.
fn job_status(s: &Snapshot, job: &TFJob) -> (Finding, Gate) {
    let ns = &s.namespace;
    let name = &s.job_name;
    let age = age_secs(s.now, job.metadata.creation_timestamp.as_ref());
    let run_policy = job.spec.run_policy.as_ref();
    let managed_by = run_policy.and_then(|p| p.managed_by.as_deref());
    // The spec is what the operator acts on; the condition may lag a resume.
    let suspended = job.is_suspended();
    let kueue_queue = job
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(KUEUE_QUEUE_LABEL));

    // The job's own progress, merged into the operator line when both are fine.
    let mut gate = Ok(());
    let created = job.condition(condition::CREATED);
    let status = if let Some(m) = managed_by.filter(|m| *m != OWN_MANAGER) {
        let known = MANAGED_BY_VALUES.contains(&m);
        gate = Err(format!("job managed by {m}"));
        Finding::new(
            Layer::Controller,
            if created.is_some() { Grade::Info } else { Grade::Warning },
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
        // Under Kueue the suspension is the queue's (the Queue layer says why).
        let f = Finding::new(
            Layer::Controller,
            if kueue_queue.is_some() {
                Grade::Info
            } else {
                Grade::Warning
            },
            "job is suspended (runPolicy.suspend: true): the operator deletes its pods and creates none",
        );
        match kueue_queue {
            // Kueue suspends queued jobs itself and resumes them on admission.
            Some(queue) => f
                .evidence(format!("queued in Kueue LocalQueue {queue:?} ({KUEUE_QUEUE_LABEL})"))
                .next(format!(
                    "Kueue resumes it once admitted; see why it waits: kubectl get {} {flags}; kubectl describe localqueue {queue} {flags}",
                    crate::cluster::queue::KUEUE_WORKLOADS,
                    flags = ns_flags(s, ns)
                )),
            None => f.next(format!(
                "resume it: kubectl tfjob resume {name} {}",
                ns_flags(s, ns)
            )),
        }
    } else if created.is_none() {
        // With an operator seen not ready nothing will pick the job up, however young it is;
        // otherwise the job gets the time `wait` gives it.
        let operator_down = matches!(s.operator, OperatorState::NotReady { .. });
        let grace = crate::cluster::operator::RECONCILE_GRACE.as_secs() as i64;
        match age {
            Some(a) if a < grace && !operator_down => {
                gate = Err("not reconciled yet".into());
                Finding::new(
                    Layer::Controller,
                    Grade::Info,
                    format!("job is {a}s old and has no Created condition yet; the operator may still be picking it up"),
                )
                .next(format!("run diagnose again in a few seconds: kubectl tfjob diagnose {name} {}", ns_flags(s, ns)))
            }
            _ => {
                gate = Err("the operator has not reconciled the job".into());
                let mut f = Finding::new(
                    Layer::Controller,
                    Grade::Fail,
                    format!(
                        "no Created condition {}after creation: the training-operator is not reconciling this job",
                        // A young job fails here only because no operator is ready; its
                        // age ("0s after creation") would read as the cause.
                        age.filter(|a| *a >= RECONCILE_GRACE_SECS)
                            .map(|a| format!("{} ", human(a)))
                            .unwrap_or_default()
                    ),
                );
                f = match &s.operator {
                    OperatorState::Running { namespace, name } => f
                        .evidence(format!("the operator Deployment {namespace}/{name} is running; it may watch other namespaces or lack the tfjob scheme"))
                        .next(format!("check its log: kubectl logs deploy/{name} {} | grep -i {}", ns_flags(s, namespace), s.job_name)),
                    OperatorState::NotReady { .. } => f.evidence(format!(
                        "no training-operator is running (see above): nothing reconciles this job, so it stays {}",
                        crate::model::STATE_NOT_RECONCILED
                    )),
                    OperatorState::NotFound | OperatorState::Unknown(_) => f.next(install_operator_hint()),
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
        Finding::new(Layer::Controller, Grade::Ok, summary)
    };
    (status, gate)
}

/// A Failed job's cause and next step, or a Restarting one's.
fn ended(s: &Snapshot, job: &TFJob, out: &mut Vec<Finding>) {
    let ns = &s.namespace;
    if let Some(failed) = job.condition(condition::FAILED).filter(|c| c.is_true()) {
        let message = failed.message.clone().unwrap_or_default();
        let next = if message.contains("backoff limit") {
            "fix the cause in the Runtime findings; the job stopped after runPolicy.backoffLimit restarts".to_string()
        } else if message.contains("deadline") {
            "the job ran longer than runPolicy.activeDeadlineSeconds: raise it or make training shorter".to_string()
        } else {
            // The logs of the replica that failed first, while its pod is there.
            let first = crate::diagnose::failures(s).into_iter().next();
            let present = |name: &str| s.pods.iter().any(|p| pod_name(p) == name);
            let pod = first
                .as_ref()
                .map(|f| f.pod.clone())
                .filter(|p| !p.is_empty())
                .or_else(|| {
                    s.pods
                        .iter()
                        .find(|p| pod_phase(p) == "Failed")
                        .map(pod_name)
                });
            let logs = match pod {
                Some(p) if present(&p) => format!(
                    " (logs: kubectl logs {p} -c {DEFAULT_CONTAINER_NAME} {})",
                    ns_flags(s, ns)
                ),
                Some(p) => format!(" ({p} is gone with its logs; --save DIR keeps them next time)"),
                None => String::new(),
            };
            format!(
                "fix the cause in the Runtime findings{logs}, then delete and resubmit it: {}",
                s.delete_command()
            )
        };
        out.push(
            Finding::new(
                Layer::Controller,
                Grade::Fail,
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
                Grade::Warning,
                format!(
                    "job is Restarting: {}",
                    r.message.as_deref().unwrap_or("a replica failed")
                ),
            )
            .next("see the Runtime findings for why the replica failed"),
        );
    }
}

/// The operator's FailedCreatePod/FailedCreateService events, while something is missing.
fn creation_failures(s: &Snapshot, job: &TFJob, out: &mut Vec<Finding>) {
    let ns = &s.namespace;
    let name = &s.job_name;
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
                Grade::Fail,
                format!(
                    "the operator cannot create {what}: {}",
                    first_line(&messages[0])
                ),
            )
            .replicas(names_in(&messages, &missing));
            for m in messages.iter().skip(1).take(4) {
                f = f.evidence(format!("{reason}: {}", first_line(m)));
            }
            let refusal = (reason == "FailedCreatePod")
                .then(|| crate::diagnose::refused::refusal(&s.job_events))
                .flatten();
            f = f.next(if let Some(sa) = refusal.as_ref().and_then(|r| r.missing_service_account.as_deref()) {
                // An object missing, not a pod that will not run: the operator retries the
                // create, and the pods come once the account exists.
                format!(
                    "create the ServiceAccount the pods name: kubectl create serviceaccount {sa} {}",
                    ns_flags(s, ns)
                )
            } else if messages.iter().any(|m| m.contains("webhook")) {
                "an admission webhook refuses them: fix what its message names, or the webhook"
                    .to_string()
            } else if messages.iter().any(|m| m.contains("forbidden")) {
                "a policy refuses them (PodSecurity, RBAC or a LimitRange): change the pod template to satisfy it".to_string()
            } else {
                format!("see all events: kubectl describe tfjob {name} {}", ns_flags(s, ns))
            });
            out.push(f);
        }
    }
}

/// The names of a list of objects.
pub(super) fn names<K: kube::Resource>(items: &[K]) -> BTreeSet<&str> {
    items
        .iter()
        .filter_map(|o| o.meta().name.as_deref())
        .collect()
}

/// Expected pod and service names that do not exist.
pub(super) fn missing_objects(s: &Snapshot, job: &TFJob) -> Vec<String> {
    let (pods, svcs) = (names(&s.pods), names(&s.services));
    crate::operator_pods::expand(job)
        .pod_names()
        .into_iter()
        .filter(|n| !pods.contains(n.as_str()) || !svcs.contains(n.as_str()))
        .collect()
}
