//! The API server's and core Pod validation's rules the webhook does not cover, and the lints:
//! things a cluster accepts but that will not behave as meant. Each finding's severity says
//! which: Error only when the API server, its schema, or Pod validation of the pods the operator
//! creates from a replica template would refuse; Warning/Info otherwise.
//!
//! Every check tolerates any shape (a broken manifest may have a string where a map belongs):
//! the schema check reports wrong shapes, these rules report what they can still see.

use serde_json::{Map, Value};

use super::{Finding, Inputs, Severity, credentials, names, webhook};
use crate::model::quantity;
use crate::model::{
    API_VERSION, CLEAN_POD_POLICIES, DEFAULT_CONTAINER_NAME, KIND, RESTART_POLICIES, ReplicaType,
    SUCCESS_POLICIES,
};
use crate::pipeline::manifest::{join_index, join_key};

const GPU: &str = crate::model::GPU_RESOURCE;

/// Runs every rule: the webhook's, the API server's and the lints.
pub fn check(obj: &Value, inputs: &Inputs) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(root) = obj.as_object() else {
        out.push(Finding::new(
            Severity::Error,
            "document",
            "",
            "a TFJob manifest must be a mapping with apiVersion, kind, metadata and spec",
        ));
        return out;
    };
    identity(root, &mut out);
    if root
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != KIND)
    {
        return out; // another kind of object: its spec rules are not ours
    }
    webhook::check(root, &mut out);
    let name = names::job_name(root.get("metadata").and_then(Value::as_object));
    names::metadata(root.get("metadata"), "metadata", true, &mut out);
    let Some(spec) = root.get("spec").and_then(Value::as_object) else {
        if root.get("spec").is_none() {
            out.push(
                Finding::new(
                    Severity::Error,
                    "spec-required",
                    "spec",
                    "must be specified",
                )
                .with_hint(Some(
                    "add spec.tfReplicaSpecs with at least one replica type".into(),
                )),
            );
        }
        return out;
    };
    run_policy(spec, &mut out);
    let Some(replicas) = spec.get("tfReplicaSpecs") else {
        return out; // the webhook reports it
    };
    let Some(replicas) = replicas.as_object() else {
        return out; // schema reports the type
    };
    replica_keys(replicas, &mut out);
    evaluator_cleanup(spec, replicas, &mut out);
    super::queue_lint::check(root, replicas, &mut out);
    let mut total_known: i64 = 0;
    let mut longest: Option<(String, String)> = None; // (pod name, path)
    for (key, rs) in replicas {
        let path = join_key("spec.tfReplicaSpecs", key);
        let count = replica_spec(key, rs, &path, inputs, &mut out);
        if ReplicaType::from_any_case(key).is_some() {
            total_known += count.unwrap_or(1).max(0);
        }
        let n = count.unwrap_or(1);
        if let Some(name) = &name
            && n > 0
        {
            let pod = crate::model::pod_name(&name.effective, key, n - 1);
            if longest.as_ref().is_none_or(|(l, _)| pod.len() > l.len()) {
                longest = Some((pod, path.clone()));
            }
        }
    }
    if let (Some(name), Some((pod, _))) = (&name, &longest) {
        names::name_budget(name, pod, &mut out);
    }
    if !replicas.is_empty() && total_known == 1 {
        out.push(
            Finding::new(
                Severity::Info,
                "tf-config",
                "spec.tfReplicaSpecs",
                "one replica in total: the operator sets no TF_CONFIG, so TensorFlow runs single-node",
            )
            .with_hint(Some(
                "fine for single-node training; add workers (or a PS) for distributed training"
                    .into(),
            )),
        );
    }
    out
}

fn identity(root: &Map<String, Value>, out: &mut Vec<Finding>) {
    match root.get("apiVersion").and_then(Value::as_str) {
        Some(API_VERSION) => {}
        Some(other) => out.push(
            Finding::new(
                Severity::Error,
                "api-version",
                "apiVersion",
                format!("is {other:?}; TFJob is served only as {API_VERSION}"),
            )
            .with_hint(Some(format!("apiVersion: {API_VERSION}"))),
        ),
        None => out.push(
            Finding::new(Severity::Error, "api-version", "apiVersion", "missing")
                .with_hint(Some(format!("apiVersion: {API_VERSION}"))),
        ),
    }
    match root.get("kind").and_then(Value::as_str) {
        Some(KIND) => {}
        Some(other) => {
            let hint = other
                .eq_ignore_ascii_case(KIND)
                .then(|| format!("kind: {KIND} (the case matters)"));
            out.push(
                Finding::new(
                    Severity::Error,
                    "kind",
                    "kind",
                    format!("is {other:?}, not a {KIND}; this plugin only handles TFJobs"),
                )
                .with_hint(hint),
            )
        }
        None => out.push(
            Finding::new(Severity::Error, "kind", "kind", "missing")
                .with_hint(Some(format!("kind: {KIND}"))),
        ),
    }
}

fn run_policy(spec: &Map<String, Value>, out: &mut Vec<Finding>) {
    if let Some(Value::String(p)) = spec.get("successPolicy")
        && !SUCCESS_POLICIES.contains(&p.as_str())
    {
        out.push(
            Finding::new(
                Severity::Warning,
                "success-policy",
                "spec.successPolicy",
                format!("{p:?} is not a success policy; the operator treats it as \"\" (worker-0 decides)"),
            )
            .with_hint(Some("use \"\" or AllWorkers".into())),
        );
    }
    let Some(rp) = spec.get("runPolicy").and_then(Value::as_object) else {
        return;
    };
    if let Some(Value::String(p)) = rp.get("cleanPodPolicy")
        && !p.is_empty()
        && !CLEAN_POD_POLICIES.contains(&p.as_str())
    {
        out.push(
            Finding::new(
                Severity::Warning,
                "clean-pod-policy",
                "spec.runPolicy.cleanPodPolicy",
                format!("{p:?} is not All, Running or None; the operator then deletes all pods"),
            )
            .with_hint(
                crate::model::names::closest(p, CLEAN_POD_POLICIES)
                    .map(|c| format!("did you mean {c}?")),
            ),
        );
    }
    for f in [
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
    ] {
        if let Some(n) = rp.get(f).and_then(Value::as_i64)
            && n < 0
        {
            // Neither the CRD schema nor the webhook bounds these, so the server stores the
            // job; the operator then misbehaves (a negative backoff fails at once).
            out.push(Finding::new(
                Severity::Warning,
                "run-policy",
                join_key("spec.runPolicy", f),
                format!("must be zero or more, got {n}; the API server accepts it but the operator cannot honour it"),
            ));
        }
    }
    if rp
        .get("activeDeadlineSeconds")
        .is_some_and(Value::is_number)
    {
        out.push(Finding::new(
            Severity::Info,
            "active-deadline",
            "spec.runPolicy.activeDeadlineSeconds",
            "the operator checks the deadline only when another event (a pod change) makes it reconcile (kubeflow/trainer#3358), so a job may run past it",
        ));
    }
    if let Some(mr) = rp
        .get("schedulingPolicy")
        .and_then(|s| s.get("minResources"))
        .and_then(Value::as_object)
    {
        for (k, v) in mr {
            quantity_check(
                v,
                &join_key("spec.runPolicy.schedulingPolicy.minResources", k),
                out,
            );
        }
    }
}

fn replica_keys(replicas: &Map<String, Value>, out: &mut Vec<Finding>) {
    if replicas.is_empty() {
        // Accepted by the webhook (it loops over no replica types) and by the schema.
        out.push(
            Finding::new(
                Severity::Warning,
                "replica-specs",
                "spec.tfReplicaSpecs",
                "is empty: the job would create no pods",
            )
            .with_hint(Some("add Worker (and PS or Chief) replicas".into())),
        );
    }
    for key in replicas.keys() {
        let path = join_key("spec.tfReplicaSpecs", key);
        match (ReplicaType::from_exact(key), ReplicaType::from_any_case(key)) {
            (Some(t), _) => {
                if t == ReplicaType::Master {
                    out.push(
                        Finding::new(
                            Severity::Info,
                            "replica-type",
                            path,
                            "Master is kept for backwards compatibility; it behaves like Chief",
                        )
                        .with_hint(Some("rename the key to Chief".into())),
                    );
                }
            }
            (None, Some(t)) => out.push(
                Finding::new(
                    Severity::Warning,
                    "replica-type-case",
                    path,
                    format!(
                        "replica type {key:?} is not in canonical case; the operator maps it to {t}, but tools matching the exact key (status, this plugin's wait) will not"
                    ),
                )
                .with_hint(Some(format!("rename the key to {t}"))),
            ),
            (None, None) => {
                let all = ReplicaType::ALL.map(|t| t.as_str());
                let hint = crate::model::names::closest(key, all)
                    .map(|c| format!("did you mean {c}?"))
                    .unwrap_or_else(|| format!("use one of {}", all.join(", ")));
                // The webhook does not check keys: the job is stored and its pods created.
                out.push(
                    Finding::new(
                        Severity::Warning,
                        "replica-type",
                        path,
                        format!(
                            "unknown replica type {key:?}: the operator would create its pods but never count them for Running/Succeeded; valid types are {}",
                            all.join(", ")
                        ),
                    )
                    .with_hint(Some(hint)),
                )
            }
        }
    }
    roles(replicas, out);
}

/// An Evaluator beside the replicas that decide success: when the Chief (or worker 0) succeeds
/// the job is Succeeded at once, and a cleanPodPolicy of Running or All deletes the Evaluator
/// still running its last evaluation (training-operator `DeletePodsAndServices`;
/// kubeflow/trainer#1658). `None` (the default since v1.7) lets it finish.
fn evaluator_cleanup(
    spec: &Map<String, Value>,
    replicas: &Map<String, Value>,
    out: &mut Vec<Finding>,
) {
    let has = |t: ReplicaType| {
        replicas
            .keys()
            .any(|k| ReplicaType::from_any_case(k) == Some(t))
    };
    if !has(ReplicaType::Evaluator) {
        return;
    }
    let policy = spec
        .get("runPolicy")
        .and_then(|r| r.get("cleanPodPolicy"))
        .and_then(Value::as_str);
    let Some(policy @ ("Running" | "All")) = policy else {
        return;
    };
    let decider = if has(ReplicaType::Chief) {
        "the Chief"
    } else if has(ReplicaType::Master) {
        "the Master"
    } else {
        "worker 0"
    };
    out.push(
        Finding::new(
            Severity::Warning,
            "evaluator-cleanup",
            "spec.runPolicy.cleanPodPolicy",
            format!(
                "{policy}: when {decider} succeeds the job is Succeeded at once and the operator deletes the Evaluator while it may still be evaluating (kubeflow/trainer#1658)"
            ),
        )
        .with_hint(Some(
            "set cleanPodPolicy: None and delete the job when the Evaluator is done".into(),
        )),
    );
}

/// What the operator's status logic and TensorFlow make of the roles present.
fn roles(replicas: &Map<String, Value>, out: &mut Vec<Finding>) {
    let typed = |t: ReplicaType| {
        replicas
            .iter()
            .find(|(k, _)| ReplicaType::from_any_case(k) == Some(t))
    };
    let count = |v: &Value| v.get("replicas").map_or(Some(1), Value::as_i64);
    for t in [
        ReplicaType::Chief,
        ReplicaType::Master,
        ReplicaType::Evaluator,
    ] {
        if let Some((key, spec)) = typed(t)
            && let Some(n) = count(spec).filter(|n| *n > 1)
        {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "replica-count",
                    format!("{}.replicas", join_key("spec.tfReplicaSpecs", key)),
                    format!(
                        "{n} {t} replicas: TensorFlow's cluster spec allows one {} task",
                        t.lower()
                    ),
                )
                .with_hint(Some(
                    "set replicas: 1 (add Workers for more capacity)".into(),
                )),
            );
        }
    }
    let has_chief = typed(ReplicaType::Chief).is_some() || typed(ReplicaType::Master).is_some();
    if !replicas.is_empty() && !has_chief && typed(ReplicaType::Worker).is_none() {
        out.push(
            Finding::new(
                Severity::Warning,
                "no-worker",
                "spec.tfReplicaSpecs",
                "no Chief and no Worker: the operator decides Running and Succeeded from those, so this job never reports either",
            )
            .with_hint(Some("add a Worker (or Chief) replica".into())),
        );
    }
}

/// Checks one replica spec; returns its `replicas` when it is an integer.
fn replica_spec(
    key: &str,
    rs: &Value,
    path: &str,
    inputs: &Inputs,
    out: &mut Vec<Finding>,
) -> Option<i64> {
    let containers_path = format!("{path}.template.spec.containers");
    let Some(rs) = rs.as_object() else {
        return None; // the webhook reports a null spec
    };
    let replicas = match rs.get("replicas") {
        Some(Value::Number(n)) => match n.as_i64() {
            Some(r) if r < 0 => {
                // No minimum in the CRD and none in the webhook: stored, then no pods.
                out.push(
                    Finding::new(
                        Severity::Warning,
                        "replicas",
                        format!("{path}.replicas"),
                        format!("must be zero or more, got {r}"),
                    )
                    .with_hint(Some(
                        "use 0 to create no pods of this type, or remove the replica type".into(),
                    )),
                );
                Some(r)
            }
            Some(r) if r > i64::from(i32::MAX) => None, // schema reports the range
            Some(r) => {
                if r > 1000 {
                    out.push(Finding::new(
                        Severity::Warning,
                        "replicas",
                        format!("{path}.replicas"),
                        format!(
                            "{r} replicas: the operator creates one pod and one service per replica"
                        ),
                    ));
                }
                Some(r)
            }
            None => None,
        },
        _ => None,
    };
    if let Some(Value::String(p)) = rs.get("restartPolicy")
        && !RESTART_POLICIES.contains(&p.as_str())
    {
        let hint = crate::model::names::closest(p, RESTART_POLICIES)
            .map(|c| format!("did you mean {c}?"))
            .unwrap_or_else(|| format!("use one of {}", RESTART_POLICIES.join(", ")));
        out.push(
            Finding::new(
                Severity::Error,
                "restart-policy",
                format!("{path}.restartPolicy"),
                format!(
                    "{p:?} is not a restart policy ({}); the operator copies it into the pods, which the API server then rejects",
                    RESTART_POLICIES.join("|")
                ),
            )
            .with_hint(Some(hint)),
        );
    }
    let template = rs.get("template");
    let tmeta = template.and_then(|t| t.get("metadata"));
    names::metadata(tmeta, &format!("{path}.template.metadata"), false, out);
    let pod = template.and_then(|t| t.get("spec"));
    if inputs.gateway.istio_opt_out && !inputs.will_inject {
        istio(tmeta, pod, path, out);
    }
    if let Some(p) = pod.and_then(|p| p.get("restartPolicy"))
        && p.is_string()
    {
        out.push(
            Finding::new(
                Severity::Warning,
                "pod-restart-policy",
                format!("{path}.template.spec.restartPolicy"),
                "the operator overwrites the pod template's restartPolicy with the replica's and emits a warning event",
            )
            .with_hint(Some(format!("move it to {path}.restartPolicy"))),
        );
    }
    empty_dir_media(pod, &format!("{path}.template.spec.volumes"), out);
    pod_quantities(pod, &format!("{path}.template.spec"), out);
    if let Some(list) = pod
        .and_then(|p| p.get("containers"))
        .and_then(Value::as_array)
    {
        for (i, c) in list.iter().enumerate() {
            if let Some(c) = c.as_object() {
                container(c, &join_index(&containers_path, i), key, inputs, out);
            }
        }
        let init = pod
            .and_then(|p| p.get("initContainers"))
            .and_then(Value::as_array);
        if replicas.unwrap_or(1) > 0
            && !list.is_empty()
            && list
                .iter()
                .chain(init.into_iter().flatten())
                .all(best_effort)
        {
            out.push(
                Finding::new(
                    Severity::Info,
                    "best-effort",
                    format!("{containers_path}[*].resources"),
                    format!(
                        "no container asks for CPU or memory: the {key} pods are BestEffort (placed with no room reserved, evicted first when the node runs short)"
                    ),
                )
                .with_hint(Some(format!(
                    "set {0}.cpu and {0}.memory in the values (--{0}-cpu, --{0}-memory, or --cpu/--memory for every role)",
                    key.to_ascii_lowercase()
                ))),
            );
        }
    }
    replicas
}

/// A container with no cpu or memory in its requests or limits (a pod of only such
/// containers is BestEffort: kubernetes `pkg/apis/core/helper/qos` `GetPodQOS`).
fn best_effort(c: &Value) -> bool {
    let res = c.get("resources");
    ["requests", "limits"].iter().all(|k| {
        res.and_then(|r| r.get(*k))
            .and_then(Value::as_object)
            .is_none_or(|m| !m.contains_key("cpu") && !m.contains_key("memory"))
    })
}

/// A sidecar asked for (the annotation "true", or an istio-proxy container) is a warning; no
/// opt-out is information, since offline nothing says whether the namespace injects.
fn istio(tmeta: Option<&Value>, pod: Option<&Value>, path: &str, out: &mut Vec<Finding>) {
    let inject = tmeta
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(crate::gateway::ISTIO_INJECT_ANNOTATION));
    let sidecar_container = pod
        .and_then(|p| p.get("containers"))
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("name").and_then(Value::as_str) == Some(crate::gateway::ISTIO_PROXY_CONTAINER)
            })
        });
    let asked = matches!(inject, Some(Value::String(s)) if s == "true")
        || matches!(inject, Some(Value::Bool(true)));
    if asked || sidecar_container {
        // Asked for in so many words: whatever the namespace says, istio injects (or the
        // sidecar is already there), and `probe` then finds the rendezvous broken.
        let what = if asked {
            format!(
                "{}: \"true\" asks istio for a sidecar",
                crate::gateway::ISTIO_INJECT_ANNOTATION
            )
        } else {
            "the template carries an istio-proxy container".to_string()
        };
        out.push(
            Finding::new(
                Severity::Warning,
                "istio-sidecar",
                format!("{path}.template.metadata.annotations"),
                format!("{what}: the istio-proxy sidecar intercepts the replicas' gRPC traffic and breaks their rendezvous (TF_CONFIG peers on port 2222)"),
            )
            .with_hint(Some(format!(
                "set {}: \"false\" and drop any istio-proxy container, or exclude the port with traffic.sidecar.istio.io/excludeInboundPorts: \"2222\"",
                crate::gateway::ISTIO_INJECT_ANNOTATION
            ))),
        );
    } else if !matches!(inject, Some(Value::String(s)) if s == "false")
        && !matches!(inject, Some(Value::Bool(false)))
    {
        // Offline nothing says whether the target namespace injects sidecars (most have no
        // mesh), so this is information, not a warning `--strict` would fail on; online,
        // submit and check make it a warning where the namespace injects
        // (readiness::istio_warning).
        out.push(
            Finding::new(
                Severity::Info,
                "istio",
                format!("{path}.template.metadata.annotations"),
                "istio sidecar injection is not disabled; if the target namespace injects sidecars (label istio-injection=enabled or istio.io/rev), the sidecar breaks the replicas' gRPC rendezvous",
            )
            .with_hint(Some("add sidecar.istio.io/inject: \"false\" (templates get it unless --allow-istio-sidecar; submit -f adds it with --inject-gateway-env)".into())),
        );
    }
}

/// An emptyDir medium the kubelet does not know. The API server stores any medium (it checks
/// only `sizeLimit`); the kubelet's emptydir plugin then fails the mount ("unknown storage
/// medium", kubernetes `pkg/volume/emptydir/empty_dir.go` `SetUpAt`) and the pod never starts.
fn empty_dir_media(pod: Option<&Value>, path: &str, out: &mut Vec<Finding>) {
    const MEDIA: [&str; 3] = ["", "Memory", "HugePages"];
    let volumes = pod.and_then(|p| p.get("volumes")).and_then(Value::as_array);
    for (i, v) in volumes.into_iter().flatten().enumerate() {
        let Some(Value::String(m)) = v.pointer("/emptyDir/medium") else {
            continue;
        };
        if MEDIA.contains(&m.as_str()) || m.starts_with("HugePages-") {
            continue;
        }
        let hint = crate::model::names::closest(m, MEDIA[1..].iter().copied())
            .map(|c| format!("did you mean {c}?"))
            .unwrap_or_else(|| "use Memory, HugePages or leave medium out".into());
        out.push(
            Finding::new(
                Severity::Warning,
                "empty-dir-medium",
                format!("{}.emptyDir.medium", join_index(path, i)),
                format!("{m:?} is stored, but the kubelet knows only Memory, HugePages and HugePages-<size>: the pod will not start"),
            )
            .with_hint(Some(hint)),
        );
    }
}

fn container(
    c: &Map<String, Value>,
    cpath: &str,
    key: &str,
    inputs: &Inputs,
    out: &mut Vec<Finding>,
) {
    let is_tf = c.get("name").and_then(Value::as_str) == Some(DEFAULT_CONTAINER_NAME);
    // Resources.
    let res = c.get("resources").and_then(Value::as_object);
    let mut gpu_limit: Option<&Value> = None;
    let mut gpu_request: Option<&Value> = None;
    for kind in ["limits", "requests"] {
        let Some(m) = res.and_then(|r| r.get(kind)).and_then(Value::as_object) else {
            continue;
        };
        for (k, v) in m {
            let qpath = join_key(&format!("{cpath}.resources.{kind}"), k);
            quantity_check(v, &qpath, out);
            // One warning per container: on the limit, or the request when there is no limit.
            let has_limit = res
                .and_then(|r| r.get("limits"))
                .and_then(|l| l.get("memory"))
                .is_some();
            if k == "memory" && (kind == "limits" || !has_limit) {
                decimal_memory(v, &qpath, out);
            }
            if k == GPU {
                if kind == "limits" {
                    gpu_limit = Some(v);
                } else {
                    gpu_request = Some(v);
                }
                if let Some(q) = qty_value(v)
                    && q.fract() != 0.0
                {
                    out.push(
                        Finding::new(
                            Severity::Error,
                            "gpu",
                            qpath,
                            format!(
                                "GPUs are whole devices; {} is not a whole number",
                                qty_text(v)
                            ),
                        )
                        .with_hint(Some(format!("{GPU}: 1"))),
                    );
                }
            }
        }
    }
    // request = limit for GPUs (and every resource that cannot be overcommitted) is core Pod
    // validation's rule, owned by podrules::resources.
    let gpus = gpu_limit.or(gpu_request).and_then(qty_value).unwrap_or(0.0);
    if is_tf && let Some(Value::String(image)) = c.get("image") {
        let tag = image_tag(image);
        let gpu_tag = tag.is_some_and(|t| t.contains("gpu"));
        // Parameter servers hold variables on CPU; sharing the workers' GPU image is normal.
        let ps = ReplicaType::from_any_case(key) == Some(ReplicaType::PS);
        if gpu_tag && gpus == 0.0 && !ps {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "gpu-image",
                    format!("{cpath}.image"),
                    format!("the image tag {:?} is a GPU build but the container asks for no GPU, so it runs on CPU", tag.unwrap_or_default()),
                )
                .with_hint(Some(format!("add resources.limits[{GPU}]: 1 (render: --gpus 1), or use the CPU image"))),
            );
        }
        let stock_tf = image
            .split(['@', ':'])
            .next()
            .is_some_and(|r| r.trim_start_matches("docker.io/") == "tensorflow/tensorflow");
        if stock_tf && !gpu_tag && gpus > 0.0 {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "gpu-image",
                    format!("{cpath}.image"),
                    "the container asks for a GPU but the tensorflow/tensorflow tag is not a -gpu build, so the GPU sits idle",
                )
                .with_hint(Some("use a tag ending in -gpu, e.g. tensorflow/tensorflow:2.13.0-gpu".into())),
            );
        }
    }
    env_checks(c, cpath, is_tf, inputs, out);
    credentials::command_args(c, cpath, inputs, out);
}

fn env_checks(
    c: &Map<String, Value>,
    cpath: &str,
    is_tf: bool,
    inputs: &Inputs,
    out: &mut Vec<Finding>,
) {
    let env = c.get("env").and_then(Value::as_array);
    let mut names = Vec::new();
    for (i, e) in env.into_iter().flatten().enumerate() {
        let Some(e) = e.as_object() else { continue };
        let epath = join_index(&format!("{cpath}.env"), i);
        let Some(name) = e.get("name").and_then(Value::as_str) else {
            continue;
        };
        names.push(name);
        let Some(value) = e.get("value").and_then(Value::as_str) else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        if name == "TF_CONFIG" {
            out.push(
                Finding::new(
                    Severity::Warning,
                    "tf-config-env",
                    format!("{epath}.name"),
                    "the operator appends its own TF_CONFIG after yours, and the last definition wins, so this one is ignored (on a single-replica job, none is added and yours applies)",
                )
                .with_hint(Some("remove it; the operator builds TF_CONFIG from tfReplicaSpecs".into())),
            );
        }
        credentials::env_var(name, value, &epath, inputs, out);
        if name.ends_with("BASE_URL") {
            let v1 = value.trim_end_matches('/').ends_with("/v1");
            if name == "OPENAI_BASE_URL" && !v1 {
                out.push(
                    Finding::new(
                        Severity::Warning,
                        "base-url",
                        format!("{epath}.value"),
                        "the openai SDK expects OPENAI_BASE_URL to end in /v1",
                    )
                    .with_hint(Some(format!("{}/v1", value.trim_end_matches('/')))),
                );
            } else if name != "OPENAI_BASE_URL" && v1 {
                out.push(
                    Finding::new(
                        Severity::Warning,
                        "base-url",
                        format!("{epath}.value"),
                        format!("{name} ends in /v1; SDKs append /v1 themselves, giving .../v1/v1 and 404s"),
                    )
                    .with_hint(Some(value.trim_end_matches('/').trim_end_matches("/v1").to_string())),
                );
            }
        }
    }
    if is_tf && inputs.gateway.enabled && !inputs.will_inject {
        let want = inputs.gateway.api_key_env();
        if !names.contains(&want.as_str()) {
            out.push(
                Finding::new(
                    Severity::Info,
                    "gateway-env",
                    format!("{cpath}.env"),
                    format!("no {want}: the training code will not find the gateway key"),
                )
                .with_hint(Some(
                    "templates get it from the Secret (see --api-secret); submit -f sends the manifest as written unless --inject-gateway-env".into(),
                )),
            );
        }
    }
}

fn qty_value(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => quantity::parse_approx(s).ok(),
        _ => None,
    }
}

fn qty_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The pod's quantities outside its containers, each checked as the containers' are: the
/// API server refuses a malformed one in any of them as it decodes the pod (`quantities must
/// match the regular expression …`, and the TFJob CRD's own pattern before that).
fn pod_quantities(pod: Option<&Value>, path: &str, out: &mut Vec<Finding>) {
    let Some(pod) = pod else { return };
    fn each(m: Option<&Value>, at: String, out: &mut Vec<Finding>) {
        for (k, v) in m.and_then(Value::as_object).into_iter().flatten() {
            quantity_check(v, &join_key(&at, k), out);
        }
    }
    for kind in ["limits", "requests"] {
        each(
            pod.pointer(&format!("/resources/{kind}")),
            format!("{path}.resources.{kind}"),
            out,
        );
    }
    each(pod.get("overhead"), format!("{path}.overhead"), out);
    for (i, v) in pod
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let vp = join_index(&format!("{path}.volumes"), i);
        if let Some(q) = v.pointer("/emptyDir/sizeLimit") {
            quantity_check(q, &format!("{vp}.emptyDir.sizeLimit"), out);
        }
        for kind in ["limits", "requests"] {
            each(
                v.pointer(&format!(
                    "/ephemeral/volumeClaimTemplate/spec/resources/{kind}"
                )),
                format!("{vp}.ephemeral.volumeClaimTemplate.spec.resources.{kind}"),
                out,
            );
        }
    }
}

fn quantity_check(v: &Value, path: &str, out: &mut Vec<Finding>) {
    let parsed = match v {
        Value::String(s) => quantity::parse_approx(s),
        Value::Number(n) if n.is_f64() => Err(format!(
            "{n} is a YAML float; the API server accepts only integers or strings here"
        )),
        Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0)),
        _ => return, // schema reports other types
    };
    match parsed {
        Ok(q) if q < 0.0 => out.push(Finding::new(
            Severity::Error,
            "quantity",
            path,
            format!("{} is negative", qty_text(v)),
        )),
        Ok(_) => {}
        Err(why) => {
            let hint = match v {
                Value::Number(n) => Some(format!("quote it: \"{n}\"")),
                _ => Some("e.g. cpu: \"500m\" or \"2\", memory: \"8Gi\"".into()),
            };
            out.push(
                Finding::new(
                    Severity::Error,
                    "quantity",
                    path,
                    format!("invalid quantity: {why}"),
                )
                .with_hint(hint),
            )
        }
    }
}

/// `8G` is 8×10⁹ bytes, not the 8 GiB (8×2³⁰) a user of `free -g` or a GPU's spec sheet means:
/// 7% less, enough for an OOMKill. Kubernetes accepts both (`k`, `M`, `G`, `T`, `P`, `E` are
/// decimal, `Ki` … `Ei` binary: apimachinery's resource.Quantity), so it is a warning.
fn decimal_memory(v: &Value, path: &str, out: &mut Vec<Finding>) {
    let Some(s) = v.as_str() else { return };
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &s[digits.len()..];
    let binary = match suffix {
        "k" => "Ki",
        "M" => "Mi",
        "G" => "Gi",
        "T" => "Ti",
        "P" => "Pi",
        "E" => "Ei",
        _ => return,
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return;
    }
    out.push(
        Finding::new(
            Severity::Warning,
            "memory-decimal-unit",
            path,
            format!(
                "memory {s} is in decimal units ({digits}×10^{} bytes); did you mean {digits}{binary}?",
                match suffix {
                    "k" => 3,
                    "M" => 6,
                    "G" => 9,
                    "T" => 12,
                    "P" => 15,
                    _ => 18,
                }
            ),
        )
        .with_hint(Some(format!(
            "write {digits}{binary} for {digits} {}B (binary), or keep {s} if decimal is meant",
            &binary[..1]
        ))),
    );
}

fn image_tag(image: &str) -> Option<&str> {
    let no_digest = image.split('@').next()?;
    let last = no_digest.rsplit('/').next()?;
    last.split_once(':').map(|(_, t)| t)
}
