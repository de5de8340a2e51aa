//! References that leave pods stuck before or at container start: PriorityClass (admission
//! refuses the pod), PVCs (the VolumeBinding filter waits), ConfigMaps/Secrets in volumes and
//! env (kubelet: CreateContainerConfigError / FailedMount), imagePullSecrets, the
//! ServiceAccount (admission refuses the pod), a non-default scheduler, gang scheduling CRDs.
//! Also the Secrets a pod takes as env ([`secret_references`]), which `submit`'s readiness
//! requires with their keys and `diagnose` cross-checks.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::pods::{JobPod, RuntimeClassInfo};
use super::{ClusterState, ReferenceFinding, Severity};
use crate::model::TFJob;
use crate::model::quantity::parse_quantity;

/// How a pod spec needs an object (what fails without it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Via {
    /// `env[].valueFrom.{secretKeyRef,configMapKeyRef}`: CreateContainerConfigError.
    Env { container: String, env: String },
    /// `envFrom[].{secretRef,configMapRef}`: CreateContainerConfigError.
    EnvFrom { container: String, prefix: String },
    /// A `secret`, `configMap` or `persistentVolumeClaim` volume: FailedMount, or Pending for
    /// a claim.
    Volume { volume: String },
}

/// An object a pod cannot start without: a non-optional reference of its spec.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Need {
    /// `Secret`, `ConfigMap` or `PersistentVolumeClaim`.
    pub kind: &'static str,
    pub name: String,
    /// The keys it must hold (one for env, the listed items for a volume; none for envFrom).
    pub keys: Vec<String>,
    pub via: Via,
}

/// The one owner of "which Secrets, ConfigMaps and claims a pod spec needs": every
/// non-optional reference, init containers first. `submit`'s readiness, `check`'s references
/// and `diagnose` all read it.
pub fn pod_needs(spec: &PodSpec) -> Vec<Need> {
    let mut out = Vec::new();
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    for c in containers {
        for e in c.env.iter().flatten() {
            let Some(from) = &e.value_from else { continue };
            let via = || Via::Env {
                container: c.name.clone(),
                env: e.name.clone(),
            };
            if let Some(r) = &from.secret_key_ref
                && !r.optional.unwrap_or(false)
            {
                out.push(Need {
                    kind: "Secret",
                    name: r.name.clone(),
                    keys: vec![r.key.clone()],
                    via: via(),
                });
            }
            if let Some(r) = &from.config_map_key_ref
                && !r.optional.unwrap_or(false)
            {
                out.push(Need {
                    kind: "ConfigMap",
                    name: r.name.clone(),
                    keys: vec![r.key.clone()],
                    via: via(),
                });
            }
        }
        for ef in c.env_from.iter().flatten() {
            let via = || Via::EnvFrom {
                container: c.name.clone(),
                prefix: ef.prefix.clone().unwrap_or_default(),
            };
            if let Some(r) = &ef.secret_ref
                && !r.optional.unwrap_or(false)
            {
                out.push(Need {
                    kind: "Secret",
                    name: r.name.clone(),
                    keys: vec![],
                    via: via(),
                });
            }
            if let Some(r) = &ef.config_map_ref
                && !r.optional.unwrap_or(false)
            {
                out.push(Need {
                    kind: "ConfigMap",
                    name: r.name.clone(),
                    keys: vec![],
                    via: via(),
                });
            }
        }
    }
    for v in spec.volumes.iter().flatten() {
        let via = || Via::Volume {
            volume: v.name.clone(),
        };
        let keys = |items: &Option<Vec<k8s_openapi::api::core::v1::KeyToPath>>| {
            items.iter().flatten().map(|i| i.key.clone()).collect()
        };
        if let Some(sec) = &v.secret
            && !sec.optional.unwrap_or(false)
        {
            let name = sec.secret_name.clone().unwrap_or_default();
            out.push(Need {
                kind: "Secret",
                name,
                keys: keys(&sec.items),
                via: via(),
            });
        }
        if let Some(cm) = &v.config_map
            && !cm.optional.unwrap_or(false)
        {
            out.push(Need {
                kind: "ConfigMap",
                name: cm.name.clone(),
                keys: keys(&cm.items),
                via: via(),
            });
        }
        if let Some(claim) = &v.persistent_volume_claim {
            out.push(Need {
                kind: "PersistentVolumeClaim",
                name: claim.claim_name.clone(),
                keys: vec![],
                via: via(),
            });
        }
    }
    out
}

/// How to create a missing object the pods need (`flags`: `-n NS` and the connection flags;
/// `suffix`: the connection flags alone, for cluster-scoped objects).
pub fn create_hint(kind: &str, name: &str, flags: &str, suffix: &str) -> String {
    match kind {
        "ServiceAccount" => format!("kubectl create serviceaccount {name} {flags}"),
        "PersistentVolumeClaim" => format!(
            "kubectl apply {flags} -f claim.yaml (a PersistentVolumeClaim named {name}), or fix claimName"
        ),
        "ConfigMap" => format!("kubectl create configmap {name} {flags} --from-file=PATH"),
        "Secret" => format!("kubectl create secret generic {name} {flags} --from-file=KEY=PATH"),
        "PriorityClass" => format!(
            "kubectl get priorityclass{suffix} lists the classes; kubectl create priorityclass {name} --value=1000{suffix}, or fix priorityClassName"
        ),
        "RuntimeClass" => format!(
            "kubectl get runtimeclass{suffix} lists the classes; fix runtimeClassName, or ask the cluster's admin for a RuntimeClass {name} (node.k8s.io/v1, with the runtime's handler)"
        ),
        _ => format!("create {kind} {name}"),
    }
}

const VOLCANO_PODGROUP: &str = "podgroups.scheduling.volcano.sh";
const SCHED_PLUGINS_PODGROUP: &str = "podgroups.scheduling.x-k8s.io";

fn finding(kind: &str, name: &str, severity: Severity, message: String) -> ReferenceFinding {
    ReferenceFinding {
        kind: kind.into(),
        name: name.into(),
        severity,
        message,
    }
}

/// What the RuntimeClass admission plugin refuses of a pod naming `class`, in its words
/// (plugin/pkg/admission/runtimeclass: `setOverhead` and `validateOverhead`, an overhead other
/// than the class's or one the class does not define; `setScheduling`, a node selector value
/// other than the class's for the same key). Quantities compare by value, as
/// `apiequality.Semantic` does.
fn runtime_class_refusals(spec: &PodSpec, class: &RuntimeClassInfo) -> Vec<String> {
    let mut out = vec![];
    if let Some(own) = spec.overhead.as_ref().filter(|o| !o.is_empty()) {
        match &class.overhead {
            Some(defined) if !same_quantities(own, defined) => out.push(format!(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead ({}; drop overhead from the pod template, the class sets it)",
                quantities(defined)
            )),
            Some(_) => {}
            None => out.push(
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead (drop overhead from the pod template)".into(),
            ),
        }
    }
    for (k, v) in &class.node_selector {
        if let Some(own) = spec.node_selector.as_ref().and_then(|m| m.get(k))
            && own != v
        {
            out.push(format!(
                "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {v}; pod.spec.nodeSelector[{k}] = {own}"
            ));
        }
    }
    out
}

type Quantities = std::collections::BTreeMap<String, Quantity>;

fn same_quantities(a: &Quantities, b: &Quantities) -> bool {
    a.len() == b.len()
        && a.iter().all(|(k, q)| {
            b.get(k).is_some_and(|r| {
                q.0 == r.0
                    || matches!((parse_quantity(&q.0), parse_quantity(&r.0)), (Some(x), Some(y)) if x == y)
            })
        })
}

fn quantities(q: &Quantities) -> String {
    if q.is_empty() {
        return "the class defines none".into();
    }
    let list: Vec<String> = q.iter().map(|(k, v)| format!("{k}: {}", v.0)).collect();
    format!("the class's is {}", list.join(", "))
}

/// The findings of [`check_references`], each said once per object and message.
#[derive(Default)]
struct Found {
    out: Vec<ReferenceFinding>,
    seen: BTreeSet<(String, String)>,
}

impl Found {
    fn push(&mut self, f: ReferenceFinding) {
        if self
            .seen
            .insert((f.kind.clone(), f.name.clone() + &f.message))
        {
            self.out.push(f);
        }
    }
}

/// Checks every object the job's pods refer to (once per name).
pub fn check_references(
    snap: &ClusterState,
    job: &TFJob,
    pods: &[JobPod],
) -> Vec<ReferenceFinding> {
    let mut found = Found::default();
    let mut types = BTreeSet::new();
    // One pod per replica type: the pods of a type share their template.
    for p in pods.iter().filter(|p| types.insert(&p.replica_type)) {
        let s = &p.spec;
        let who = format!("{} pods", p.replica_type);
        classes(snap, s, &who, &mut found);
        account_and_scheduler(snap, s, &who, &mut found);
        needs(snap, s, &who, &mut found);
        pull_secrets(snap, s, &who, &mut found);
    }
    gang_policy(snap, job, &mut found);
    found.out
}

/// The PriorityClass and RuntimeClass the pods name (admission refuses a missing one).
fn classes(snap: &ClusterState, s: &PodSpec, who: &str, found: &mut Found) {
    if let (Some(pc), Some(known)) = (s.priority_class_name.as_deref(), &snap.priority_classes)
        && !known.contains(pc)
        && pc != "system-cluster-critical"
        && pc != "system-node-critical"
    {
        found.push(
            finding(
                "PriorityClass",
                pc,
                Severity::Error,
                format!(
                    "no PriorityClass with name {pc} was found: the API server refuses {who} (create it or drop priorityClassName)"
                ),
            ),
                        );
    }
    // plugin/pkg/admission/runtimeclass: a pod naming a RuntimeClass that does not exist
    // is forbidden ("pod rejected: RuntimeClass … not found").
    if let Some(rc) = s.runtime_class_name.as_deref().filter(|n| !n.is_empty()) {
        match &snap.runtime_classes {
            Some(known) if !known.contains_key(rc) => found.push(
                finding(
                    "RuntimeClass",
                    rc,
                    Severity::Error,
                    format!(
                        "pod rejected: RuntimeClass {rc:?} not found: the API server refuses {who} (kubectl get runtimeclass lists the classes)"
                    ),
                ),
                                ),
            Some(known) => {
                for refusal in known
                    .get(rc)
                    .map(|class| runtime_class_refusals(s, class))
                    .unwrap_or_default()
                {
                    found.push(
                        finding(
                            "RuntimeClass",
                            rc,
                            Severity::Error,
                            format!("{refusal}: the API server refuses {who}"),
                        ),
                                                );
                }
            }
            None => found.push(
                finding(
                    "RuntimeClass",
                    rc,
                    Severity::Warning,
                    format!(
                        "unknown whether RuntimeClass {rc:?} exists (runtimeclasses cannot be listed): if it does not, the API server refuses {who}"
                    ),
                ),
                                ),
        }
    }
    if let (Some(pc), None) = (s.priority_class_name.as_deref(), &snap.priority_classes)
        && !pc.is_empty()
    {
        found.push(
            finding(
                "PriorityClass",
                pc,
                Severity::Warning,
                format!(
                    "unknown whether PriorityClass {pc:?} exists (priorityclasses cannot be listed): if it does not, the API server refuses {who}"
                ),
            ),
                        );
    }
}

/// The ServiceAccount (the operator's creates are refused without it) and the scheduler.
fn account_and_scheduler(snap: &ClusterState, s: &PodSpec, who: &str, found: &mut Found) {
    let ns = &snap.namespace;
    if let (Some(sa), Some(known)) = (s.service_account_name.as_deref(), &snap.service_accounts)
        && !known.contains(sa)
    {
        found.push(
            finding(
                "ServiceAccount",
                sa,
                Severity::Error,
                format!(
                    "error looking up service account {ns}/{sa}: serviceaccount {sa:?} not found: the operator's pod creations for {who} are refused"
                ),
            ),
                        );
    }
    if let Some(sched) = s.scheduler_name.as_deref()
        && sched != "default-scheduler"
    {
        found.push(
            finding(
                "Scheduler",
                sched,
                Severity::Warning,
                format!(
                    "{who} use schedulerName {sched:?}: they stay Pending unless that scheduler runs in the cluster"
                ),
            ),
                        );
    }
}

/// The Secrets, ConfigMaps and claims the containers and volumes need.
fn needs(snap: &ClusterState, s: &PodSpec, who: &str, found: &mut Found) {
    for need in pod_needs(s) {
        let effect = match need.via {
            Via::Volume { .. } => "FailedMount",
            _ => "CreateContainerConfigError",
        };
        let known = match need.kind {
            "Secret" => snap.secrets.as_ref(),
            "ConfigMap" => snap.config_maps.as_ref(),
            _ => None,
        };
        if need.kind != "PersistentVolumeClaim" {
            check_keys(found, need.kind, &need.name, &need.keys, known, who, effect);
            continue;
        }
        let Some(pvcs) = &snap.pvcs else { continue };
        let c = &need.name;
        match pvcs.get(c) {
            None => found.push(
                finding(
                    "PersistentVolumeClaim",
                    c,
                    Severity::Error,
                    format!("persistentvolumeclaim {c:?} not found: {who} stay Pending"),
                ),
                                ),
            Some(i) if i.phase != "Bound" && !i.wait_for_first_consumer => found.push(
                finding(
                    "PersistentVolumeClaim",
                    c,
                    Severity::Warning,
                    format!(
                        "persistentvolumeclaim {c:?} is {}: {who} stay Pending (pod has unbound immediate PersistentVolumeClaims)",
                        if i.phase.is_empty() {
                            "Pending"
                        } else {
                            &i.phase
                        }
                    ),
                ),
                                ),
            _ => {}
        }
    }
}

/// The imagePullSecrets: a missing one fails private pulls.
fn pull_secrets(snap: &ClusterState, s: &PodSpec, who: &str, found: &mut Found) {
    for ips in s.image_pull_secrets.iter().flatten() {
        if let Some(secrets) = &snap.secrets
            && !secrets.contains_key(&ips.name)
        {
            found.push(
                finding(
                    "Secret",
                    &ips.name,
                    Severity::Warning,
                    format!(
                        "imagePullSecret {:?} not found: pulls from a private registry fail for {who} (ErrImagePull)",
                        ips.name
                    ),
                ),
                                );
        }
    }
}

/// A schedulingPolicy with no gang scheduler installed is ignored by the operator.
fn gang_policy(snap: &ClusterState, job: &TFJob, found: &mut Found) {
    if let Some(sp) = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|r| r.scheduling_policy.as_ref())
    {
        let volcano = snap.crds.contains(VOLCANO_PODGROUP);
        let plugins = snap.crds.contains(SCHED_PLUGINS_PODGROUP);
        if !volcano && !plugins {
            found.push(
                finding(
                    "CustomResourceDefinition",
                    VOLCANO_PODGROUP,
                    Severity::Warning,
                    format!(
                        "runPolicy.schedulingPolicy is set{} but neither Volcano ({VOLCANO_PODGROUP}) nor scheduler-plugins ({SCHED_PLUGINS_PODGROUP}) is installed: the operator only creates a PodGroup when started with gang scheduling, otherwise the policy is ignored",
                        sp.queue
                            .as_deref()
                            .map(|q| format!(" (queue {q:?})"))
                            .unwrap_or_default()
                    ),
                ),
                            );
        }
    }
}

fn check_keys(
    found: &mut Found,
    kind: &str,
    name: &str,
    keys: &[String],
    known: Option<&std::collections::BTreeMap<String, BTreeSet<String>>>,
    who: &str,
    effect: &str,
) {
    let Some(known) = known else { return };
    let lower = kind.to_lowercase();
    match known.get(name) {
        None => found.push(finding(
            kind,
            name,
            Severity::Error,
            format!("{lower} {name:?} not found: {who} cannot start ({effect})"),
        )),
        Some(have) => {
            for k in keys.iter().filter(|k| !have.contains(*k)) {
                found.push(finding(
                    kind,
                    name,
                    Severity::Error,
                    format!(
                        "couldn't find key {k} in {kind} {name}: {who} cannot start ({effect})"
                    ),
                ));
            }
        }
    }
}

/// A Secret a container cannot start without: a non-optional `secretKeyRef` (one key) or
/// `envFrom.secretRef` (the whole Secret). The kubelet holds such a container in
/// CreateContainerConfigError until the Secret (and key) exist.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SecretRef {
    pub secret: String,
    /// `None` for envFrom (the whole Secret).
    pub key: Option<String>,
    pub env: String,
    pub container: String,
}

/// Every Secret a pod spec's containers take as env (`secretKeyRef`, `envFrom`), init
/// containers first: what `submit`'s readiness check requires and what `diagnose`
/// cross-checks. Read from [`pod_needs`], the one owner of a pod's references.
pub fn secret_references(spec: &PodSpec) -> Vec<SecretRef> {
    pod_needs(spec)
        .into_iter()
        .filter(|n| n.kind == "Secret")
        .filter_map(|n| match n.via {
            Via::Env { container, env } => Some(SecretRef {
                secret: n.name,
                key: n.keys.into_iter().next(),
                env,
                container,
            }),
            Via::EnvFrom { container, prefix } => Some(SecretRef {
                secret: n.name,
                key: None,
                env: format!("envFrom (prefix {prefix:?})"),
                container,
            }),
            Via::Volume { .. } => None,
        })
        .collect()
}
