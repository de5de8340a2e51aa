//! The runtime layer's Secret checks: every `secretKeyRef`/`envFrom` of the job's templates and pods
//! against the Secrets that exist, and config errors the Secrets do not explain.

use super::*;

// Which Secrets a pod spec needs is a cluster fact, owned by `cluster::secret`.
pub(super) use crate::placement::refs::{SecretRef, secret_references as secret_refs};

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

pub(super) fn has_config_error(pod: &Pod) -> bool {
    statuses(pod).any(|cs| waiting(cs).is_some_and(|(r, _)| r == "CreateContainerConfigError"))
}

pub(super) fn secret_problems(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
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
                    &s.hints,
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
                format!(
                    "{} --overwrite",
                    secret::create_command(&r.secret, key, ns, &s.hints)
                ),
            ),
            (Some(key), SecretState::EmptyValue) => (
                format!("key {key:?} of Secret {:?} is empty", r.secret),
                format!(
                    "{} --overwrite",
                    secret::create_command(&r.secret, key, ns, &s.hints)
                ),
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
            Grade::Warning
        } else {
            Grade::Fail
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
pub(super) struct SecretProblem {
    problem: String,
    fix: String,
    envs: BTreeSet<String>,
    users: BTreeSet<String>,
}

/// CreateContainerConfigError that the Secret cross-check did not explain (e.g. a ConfigMap).
pub(super) fn config_errors_without_secret_cause(
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
                Grade::Fail,
                format!("CreateContainerConfigError: {message}"),
            )
            .next(if message.contains("configmap") {
                format!(
                    "create the ConfigMap it names in namespace {}, or fix the reference",
                    s.namespace
                )
            } else if message.contains("secret") || message.contains("Secret") {
                format!(
                    "create the Secret/key it names: kubectl tfjob secret create NAME {} [--key K]",
                    ns_flags(s, &s.namespace)
                )
            } else {
                format!("kubectl describe pod {first} {}", ns_flags(s, &s.namespace))
            })
            .replicas(names),
        );
    }
}
