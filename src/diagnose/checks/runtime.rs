//! The runtime layer: images, crashes, the gateway key, sidecars, mounts (Secrets: `secrets.rs`).

use super::*;

pub(super) fn runtime(s: &Snapshot, out: &mut Vec<Finding>, gate: &Gate) {
    let before = out.len();
    let ns = &s.namespace;
    // Pods of jobs not yet reached are still worth a look if they exist (e.g. after a Failed).
    let pods: &[Pod] = &s.pods;

    image_problems(s, pods, out);
    secret_problems(s, pods, out);
    config_errors_without_secret_cause(s, pods, out, before);
    disruptions(s, out);
    recovered(s, out);
    crashes(s, pods, out);
    gateway_unauthorized(s, pods, out);
    template_checks(s, out);
    istio_sidecars(s, pods, out);
    mount_failures(s, out);

    let found = out.len() > before;
    if out[before..].iter().any(|f| f.verdict == Grade::Fail) {
        return;
    }
    if let Err(why) = gate {
        if !found {
            out.push(Finding::new(
                Layer::Runtime,
                Grade::Info,
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
    if found {
        // One grade per layer (issue 61 item 11): its warnings are its answer, not an `[ok]`
        // row beside them; the pods' state becomes their first line of evidence.
        out[before].evidence.insert(0, summary);
        return;
    }
    let verdict = if running + succeeded == total && total > 0 {
        Grade::Ok
    } else {
        Grade::Info
    };
    let mut f = Finding::new(Layer::Runtime, verdict, summary);
    if verdict == Grade::Info && total > 0 {
        f = f.next(format!(
            "watch them start: kubectl get pods {} -l {}",
            ns_flags(s, ns),
            model::job_selector(&s.job_name)
        ));
    }
    // The overall state first, then the warnings.
    out.insert(before, f);
}

/// Every container status of a pod (init containers first), with the pod.
pub(super) fn statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    let st = pod.status.as_ref();
    st.into_iter()
        .flat_map(|s| s.init_container_statuses.iter().flatten())
        .chain(
            st.into_iter()
                .flat_map(|s| s.container_statuses.iter().flatten()),
        )
}

pub(super) fn waiting(cs: &ContainerStatus) -> Option<(&str, &str)> {
    let w = cs.state.as_ref()?.waiting.as_ref()?;
    Some((
        w.reason.as_deref().unwrap_or_default(),
        w.message.as_deref().unwrap_or_default(),
    ))
}

pub(super) fn image_problems(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
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
                Grade::Fail,
                format!("invalid image name {image:?} (InvalidImageName)"),
            )
            .next("fix the image reference: [registry/]repository[:tag|@sha256:digest], lowercase, no spaces or scheme")
        } else {
            Finding::new(
                Layer::Runtime,
                Grade::Fail,
                format!("cannot pull image {image} ({} pod{})", names.len(), plural(names.len())),
            )
            .next(format!(
                "check that {image} exists and the tag is right (docker manifest inspect {image}); for a private registry resubmit with --image-pull-secret NAME (the pod templates' imagePullSecrets)"
            ))
        };
        for m in messages.into_iter().take(3) {
            f = f.evidence(m);
        }
        out.push(f.replicas(names));
    }
}

/// A pod the kubelet evicted, the scheduler preempted, a drain evicted, or whose node was lost
/// has its own verdict (issue 37): said as such, not as a crash with "fix the error in the log".
fn disrupted(pod: &Pod) -> bool {
    let st = pod.status.as_ref();
    st.and_then(|s| s.reason.as_deref())
        .is_some_and(|r| r == "Evicted" || r == "NodeLost")
        || st
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "DisruptionTarget" && c.status == "True")
}

/// Evictions, preemptions, lost nodes, and replicas that run but whose log shows they never
/// reached their peers: one finding each, from the failure classifier.
pub(super) fn disruptions(s: &Snapshot, out: &mut Vec<Finding>) {
    let ns_flags = ns_flags(s, &s.namespace);
    for f in crate::diagnose::failures(s) {
        let disruption = matches!(
            f.class.as_str(),
            "Evicted"
                | "NodeLost"
                | "PreemptionByScheduler"
                | "TerminationByKubelet"
                | "EvictionByEvictionAPI"
                | "DeletionByTaintManager"
                | "DeletionByPodGC"
        );
        if !disruption && !f.running {
            continue;
        }
        // Next steps in this tool's own verbs and flags, where one fits.
        let job = &s.job_name;
        let next = match f.class.as_str() {
            "Evicted" | "TerminationByKubelet" => format!(
                "a pod whose memory request equals its limit is evicted last: resubmit without --memory-request (--worker-memory sets the limit), or give the node room; events: kubectl describe pod {} {ns_flags}",
                f.pod
            ),
            "PreemptionByScheduler" => "give the job a PriorityClass at least as high as what preempted it (--pod-priority-class), or run it where it is not preempted; then resubmit".to_string(),
            "NodeLost" | "DeletionByTaintManager" | "DeletionByPodGC" => format!(
                "the node is gone or NotReady (kubectl get nodes): once a node can take it, kubectl tfjob restart {job} {ns_flags}"
            ),
            "EvictionByEvictionAPI" => format!(
                "a drain or an autoscaler evicted it: kubectl tfjob restart {job} {ns_flags}, and protect the job with a PodDisruptionBudget"
            ),
            _ => format!(
                "a peer named in TF_CONFIG is not answering: check from inside the pods with kubectl tfjob probe {job} {ns_flags}, and follow the replicas with kubectl tfjob logs {job} -f {ns_flags}"
            ),
        };
        let mut finding = Finding::new(Layer::Runtime, Grade::Fail, f.line.clone()).next(next);
        if let Some(e) = &f.evidence {
            finding = finding.evidence(truncate(e, 300));
        }
        out.push(finding.replicas(vec![f.pod.clone()]));
    }
}

/// A replica killed or taken away (an eviction, a preemption, an exit the operator restarts)
/// whose pod the operator made again and which runs: a warning with what happened, as a
/// container restart the kubelet recovers from is (`crashes`).
fn recovered(s: &Snapshot, out: &mut Vec<Finding>) {
    for f in crate::diagnose::recovered(s) {
        let mut finding = Finding::new(
            Layer::Runtime,
            Grade::Warning,
            format!(
                "restarted (running again): {}; the operator made its pod again",
                f.line
            ),
        )
        .next(format!(
            "nothing to do unless it repeats; follow it with kubectl tfjob logs {} -f {}",
            s.job_name,
            ns_flags(s, &s.namespace)
        ));
        if let Some(e) = &f.evidence {
            finding = finding.evidence(truncate(e, 300));
        }
        out.push(finding.replicas(vec![f.pod.clone()]));
    }
}

pub(super) fn crashes(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
    let ns = &s.namespace;
    struct Crash {
        pods: Vec<String>,
        restarts: i32,
        looping: bool,
        /// Still down (looping or terminated), not merely restarted earlier.
        current: bool,
        /// Every container of the group has run past the kubelet's back-off reset since.
        recovered: bool,
        message: Option<String>,
        limit: Option<String>,
        rtype: String,
    }
    // (container, exit code, reason) → crash
    let mut groups: BTreeMap<(String, i32, String), Crash> = BTreeMap::new();
    for pod in pods.iter().filter(|p| !disrupted(p)) {
        for cs in statuses(pod) {
            let looping = waiting(cs).is_some_and(|(r, _)| r == "CrashLoopBackOff");
            let Some(t) = crate::diagnose::failure::failed_termination(cs) else {
                if looping {
                    groups
                        .entry((cs.name.clone(), -1, "CrashLoopBackOff".into()))
                        .or_insert_with(|| Crash {
                            pods: vec![],
                            restarts: 0,
                            looping,
                            current: true,
                            recovered: false,
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
                    recovered: true,
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
            c.recovered &= crate::diagnose::failure::recovered(cs, s.now);
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
        // A container that restarted and now runs again is a warning, not the blocker; one that
        // restarted --max-restarts times is a crash loop whatever the back-off timer shows
        // right now (issue 37: the verdict must not flip between two looks), until it has run
        // past the kubelet's back-off reset: then the kubelet recovered it.
        let verdict = if c.current || (c.restarts >= s.max_restarts.max(1) as i32 && !c.recovered) {
            Grade::Fail
        } else {
            Grade::Warning
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
                "give the {} replicas more memory (resubmit with {}, resources.limits.memory{}), or lower the batch size",
                c.rtype,
                // submit's per-role flags (values `workerMemory`, …); --memory for the rest.
                match c.rtype.to_lowercase().as_str() {
                    r @ ("worker" | "ps" | "chief" | "evaluator") => format!("--{r}-memory"),
                    _ => "--memory".to_string(),
                },
                c.limit.as_deref().map(|l| format!(", now {l}")).unwrap_or_default()
            ))
        } else {
            let state = if c.looping {
                "CrashLoopBackOff"
            } else if c.current {
                "crashed"
            } else if verdict == Grade::Fail {
                "crash loop (running between restarts)"
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
                "fix the error in the log; full log: kubectl logs {first} -c {container} {}{}",
                ns_flags(s, ns),
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

pub(super) fn exit_hint(code: i32) -> &'static str {
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
pub(super) fn is_unauthorized(line: &str) -> bool {
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

pub(super) fn gateway_unauthorized(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
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
                &s.namespace,
                &s.hints
            )
        ),
        None => format!(
            "kubectl tfjob secret create NAME {} [--key K] --overwrite --verify",
            ns_flags(s, &s.namespace)
        ),
    };
    let mut f = Finding::new(
        Layer::Runtime,
        Grade::Fail,
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
            "store a valid key, checked against the gateway first: {fix}; containers read it when they (re)start: then kubectl tfjob restart {} {}",
            s.job_name,
            ns_flags(s, &s.namespace)
        ))
        .replicas(hits.into_iter().map(|(p, _)| p).collect()),
    );
}

/// Checks on the pod templates (and pods): TF_CONFIG, base URLs.
pub(super) fn template_checks(s: &Snapshot, out: &mut Vec<Finding>) {
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
            if distributed { Grade::Fail } else { Grade::Warning },
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
                    Grade::Warning,
                    "TF_CONFIG is missing from the tensorflow container of a distributed job's pods",
                )
                .evidence("the operator appends TF_CONFIG when it creates the pods; these were made by something else")
                .next(format!("delete the pods so the operator recreates them: kubectl delete pod {} -l {}", ns_flags(s, &s.namespace), model::job_selector(name)))
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
                        Grade::Warning,
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

pub(super) fn istio_sidecars(s: &Snapshot, pods: &[Pod], out: &mut Vec<Finding>) {
    let with: Vec<String> = pods
        .iter()
        .filter(|p| container_of(p, ISTIO_SIDECAR).is_some())
        .map(pod_name)
        .collect();
    if with.is_empty() {
        return;
    }
    let distributed = s.job.as_ref().is_none_or(TFJob::is_distributed);
    out.push(
        Finding::new(
            Layer::Runtime,
            if distributed { Grade::Fail } else { Grade::Warning },
            format!(
                "istio-proxy sidecar injected into {} pod{}: it intercepts the replicas' gRPC traffic and breaks their rendezvous",
                with.len(),
                plural(with.len())
            ),
        )
        .next(format!(
            "set the annotation sidecar.istio.io/inject: \"false\" on every replica's pod template (kubectl tfjob submit does unless --allow-istio-sidecar), then delete and resubmit it: {}",
            s.delete_command()
        ))
        .replicas(with),
    );
}

pub(super) fn mount_failures(s: &Snapshot, out: &mut Vec<Finding>) {
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
                Grade::Fail,
                format!("volume cannot be mounted: {}", first_line(&message)),
            )
            .next(format!(
                "create what the message names, or see kubectl describe pod {first} {}",
                ns_flags(s, &s.namespace)
            ))
            .replicas(names),
        );
    }
}
