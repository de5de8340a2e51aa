//! References that leave pods stuck before or at container start: PriorityClass (admission
//! refuses the pod), PVCs (the VolumeBinding filter waits), ConfigMaps/Secrets in volumes and
//! env (kubelet: CreateContainerConfigError / FailedMount), imagePullSecrets, the
//! ServiceAccount (admission refuses the pod), a non-default scheduler, gang scheduling CRDs.

use std::collections::BTreeSet;

use super::verdict::JobPod;
use super::{ReferenceFinding, Severity, Snapshot};
use crate::model::TFJob;

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

/// Checks every object the job's pods refer to (once per name).
pub fn check_references(snap: &Snapshot, job: &TFJob, pods: &[JobPod]) -> Vec<ReferenceFinding> {
    let mut out = vec![];
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut push = |f: ReferenceFinding, out: &mut Vec<ReferenceFinding>| {
        if seen.insert((f.kind.clone(), f.name.clone() + &f.message)) {
            out.push(f);
        }
    };
    let ns = &snap.namespace;
    let mut specs: Vec<&JobPod> = vec![];
    let mut types = BTreeSet::new();
    for p in pods {
        if types.insert(&p.replica_type) {
            specs.push(p);
        }
    }
    for p in specs {
        let s = &p.spec;
        let who = format!("{} pods", p.replica_type);
        if let (Some(pc), Some(known)) = (s.priority_class_name.as_deref(), &snap.priority_classes)
            && !known.contains(pc)
            && pc != "system-cluster-critical"
            && pc != "system-node-critical"
        {
            push(
                finding(
                    "PriorityClass",
                    pc,
                    Severity::Error,
                    format!(
                        "no PriorityClass with name {pc} was found: the API server refuses {who} (create it or drop priorityClassName)"
                    ),
                ),
                &mut out,
            );
        }
        if let (Some(sa), Some(known)) = (s.service_account_name.as_deref(), &snap.service_accounts)
            && !known.contains(sa)
        {
            push(
                finding(
                    "ServiceAccount",
                    sa,
                    Severity::Error,
                    format!(
                        "error looking up service account {ns}/{sa}: serviceaccount {sa:?} not found: the operator's pod creations for {who} are refused"
                    ),
                ),
                &mut out,
            );
        }
        if let Some(sched) = s.scheduler_name.as_deref()
            && sched != "default-scheduler"
        {
            push(
                finding(
                    "Scheduler",
                    sched,
                    Severity::Warning,
                    format!(
                        "{who} use schedulerName {sched:?}: they stay Pending unless that scheduler runs in the cluster"
                    ),
                ),
                &mut out,
            );
        }
        for v in s.volumes.iter().flatten() {
            if let Some(claim) = &v.persistent_volume_claim
                && let Some(pvcs) = &snap.pvcs
            {
                let c = &claim.claim_name;
                match pvcs.get(c) {
                    None => push(
                        finding(
                            "PersistentVolumeClaim",
                            c,
                            Severity::Error,
                            format!("persistentvolumeclaim {c:?} not found: {who} stay Pending"),
                        ),
                        &mut out,
                    ),
                    Some(i) if i.phase != "Bound" && !i.wait_for_first_consumer => push(
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
                        &mut out,
                    ),
                    _ => {}
                }
            }
            if let Some(cm) = &v.config_map
                && !cm.optional.unwrap_or(false)
            {
                let keys: Vec<String> = cm.items.iter().flatten().map(|i| i.key.clone()).collect();
                check_keys(
                    &mut out,
                    &mut push,
                    "ConfigMap",
                    &cm.name,
                    &keys,
                    snap.config_maps.as_ref(),
                    &who,
                    "FailedMount",
                );
            }
            if let Some(sec) = &v.secret
                && !sec.optional.unwrap_or(false)
            {
                let name = sec.secret_name.clone().unwrap_or_default();
                let keys: Vec<String> = sec.items.iter().flatten().map(|i| i.key.clone()).collect();
                check_keys(
                    &mut out,
                    &mut push,
                    "Secret",
                    &name,
                    &keys,
                    snap.secrets.as_ref(),
                    &who,
                    "FailedMount",
                );
            }
        }
        for c in s
            .containers
            .iter()
            .chain(s.init_containers.iter().flatten())
        {
            for e in c.env.iter().flatten() {
                let Some(from) = &e.value_from else { continue };
                if let Some(r) = &from.config_map_key_ref
                    && !r.optional.unwrap_or(false)
                {
                    check_keys(
                        &mut out,
                        &mut push,
                        "ConfigMap",
                        &r.name,
                        std::slice::from_ref(&r.key),
                        snap.config_maps.as_ref(),
                        &who,
                        "CreateContainerConfigError",
                    );
                }
                if let Some(r) = &from.secret_key_ref
                    && !r.optional.unwrap_or(false)
                {
                    check_keys(
                        &mut out,
                        &mut push,
                        "Secret",
                        &r.name,
                        std::slice::from_ref(&r.key),
                        snap.secrets.as_ref(),
                        &who,
                        "CreateContainerConfigError",
                    );
                }
            }
            for ef in c.env_from.iter().flatten() {
                if let Some(r) = &ef.config_map_ref
                    && !r.optional.unwrap_or(false)
                {
                    check_keys(
                        &mut out,
                        &mut push,
                        "ConfigMap",
                        &r.name,
                        &[],
                        snap.config_maps.as_ref(),
                        &who,
                        "CreateContainerConfigError",
                    );
                }
                if let Some(r) = &ef.secret_ref
                    && !r.optional.unwrap_or(false)
                {
                    check_keys(
                        &mut out,
                        &mut push,
                        "Secret",
                        &r.name,
                        &[],
                        snap.secrets.as_ref(),
                        &who,
                        "CreateContainerConfigError",
                    );
                }
            }
        }
        for ips in s.image_pull_secrets.iter().flatten() {
            if let Some(secrets) = &snap.secrets
                && !secrets.contains_key(&ips.name)
            {
                push(
                    finding(
                        "Secret",
                        &ips.name,
                        Severity::Warning,
                        format!(
                            "imagePullSecret {:?} not found: pulls from a private registry fail for {who} (ErrImagePull)",
                            ips.name
                        ),
                    ),
                    &mut out,
                );
            }
        }
    }
    if let Some(sp) = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|r| r.scheduling_policy.as_ref())
    {
        let volcano = snap.crds.contains(VOLCANO_PODGROUP);
        let plugins = snap.crds.contains(SCHED_PLUGINS_PODGROUP);
        if !volcano && !plugins {
            push(
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
                &mut out,
            );
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn check_keys(
    out: &mut Vec<ReferenceFinding>,
    push: &mut impl FnMut(ReferenceFinding, &mut Vec<ReferenceFinding>),
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
        None => push(
            finding(
                kind,
                name,
                Severity::Error,
                format!("{lower} {name:?} not found: {who} cannot start ({effect})"),
            ),
            out,
        ),
        Some(have) => {
            for k in keys.iter().filter(|k| !have.contains(*k)) {
                push(
                    finding(
                        kind,
                        name,
                        Severity::Error,
                        format!(
                            "couldn't find key {k} in {kind} {name}: {who} cannot start ({effect})"
                        ),
                    ),
                    out,
                );
            }
        }
    }
}
