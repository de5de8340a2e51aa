//! Is the cluster ready for this job? Reads only (plus an access review, which stores nothing):
//! the CRD served, the operator running, the namespace, the right to create tfjobs, every
//! referenced Secret and key, and whether the name is taken. `submit` refuses on any failure
//! before its first write; `check` reports the same findings.

use std::collections::BTreeSet;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};

use crate::cluster::{self, Action, Kube, OperatorState};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};

/// What the readiness checks found.
#[derive(Default)]
pub struct Readiness {
    pub failures: Vec<Error>,
    pub warnings: Vec<String>,
    /// The installed CRD's v1 openAPIV3Schema, when readable.
    pub live_schema: Option<serde_json::Value>,
    /// The TFJob of the same name, when `--replace` allows it to exist.
    pub existing: Option<TFJob>,
    /// The gateway Secret's `base-url` value, when it has one.
    pub stored_base_url: Option<String>,
    /// The label by which istio injects sidecars into the target namespace, when it does (read
    /// from the namespace GET readiness makes anyway).
    pub istio_injection: Option<String>,
}

/// The istio lint's finding, when the target namespace does inject sidecars: then it is a
/// warning (offline, or where nothing injects, it stays information). Message and hint.
pub fn istio_warning(
    report: &crate::pipeline::validate::Report,
    namespace: &str,
    injection: Option<&str>,
) -> Option<(String, String)> {
    let label = injection?;
    let paths: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.rule == "istio")
        .map(|f| f.path.as_str())
        .collect();
    if paths.is_empty() {
        return None;
    }
    Some((
        format!(
            "namespace {namespace} injects istio sidecars ({label}) and {} do not opt out: the istio-proxy sidecar breaks the replicas' gRPC rendezvous",
            paths.join(", ")
        ),
        format!(
            "add {}: \"false\" to each replica's template metadata.annotations (or pass --inject-gateway-env, which adds it)",
            crate::gateway::ISTIO_INJECT_ANNOTATION
        ),
    ))
}

/// Combines several readiness failures into one error (exit code of the first kind). The
/// deadline running out is the command's answer (exit 5): the other checks were cut by it, so
/// what they would have found is unknown, not "not ready".
pub fn combine(mut failures: Vec<Error>) -> Error {
    if let Some(i) = failures.iter().position(|f| matches!(f, Error::Timeout(_))) {
        return failures.swap_remove(i);
    }
    if failures.len() == 1 {
        return failures.remove(0);
    }
    let mut message = format!(
        "the cluster is not ready for this job ({} problems):",
        failures.len()
    );
    for (i, f) in failures.iter().enumerate() {
        message.push_str(&format!("\n  {}. {f}", i + 1));
        if let Some(hint) = f.hint() {
            message.push_str(&format!("\n     → {hint}"));
        }
    }
    Error::NotReady {
        message,
        hint: Some("Nothing was created.".into()),
    }
}

pub async fn check_readiness(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    gateway: &crate::gateway::GatewayConfig,
    replace: bool,
) -> Readiness {
    // generateName: the server picks a fresh name, so nothing can exist under it.
    let name = job.metadata.name.clone();
    let (crd, operator, ns, access, secrets, existing) = tokio::join!(
        cluster::crd::require_served(kube),
        find_operator(kube),
        check_namespace(kube, namespace),
        check_access(kube, namespace),
        check_secrets(kube, namespace, job, gateway),
        check_existing(kube, namespace, name.as_deref(), replace),
    );
    let mut r = Readiness::default();
    let crd_ok = match crd {
        Ok(schema) => {
            r.live_schema = schema;
            true
        }
        Err(e) => {
            r.failures.push(e);
            false
        }
    };
    match operator {
        OperatorCheck::Ready => {}
        OperatorCheck::NotReady(e) => r.failures.push(e),
        // Without the CRD nothing serves TFJobs whatever runs: its failure (whose hint installs
        // the operator) says it, and a warning that "goes on" just before that refusal would not.
        OperatorCheck::Unknown(why) if crd_ok => r.warnings.push(why),
        OperatorCheck::Unknown(_) => {}
    }
    match ns {
        Ok(injection) => r.istio_injection = injection,
        Err(e) => r.failures.push(e),
    }
    if let Err(e) = access {
        r.failures.push(e);
    }
    match secrets {
        Ok(stored) => r.stored_base_url = stored,
        Err(e) => r.failures.push(e),
    }
    // Without the CRD the GET for an existing job is meaningless (404 for the resource).
    if crd_ok {
        match existing {
            Ok(existing) => r.existing = existing,
            Err(e) => r.failures.push(e),
        }
    }
    r
}

enum OperatorCheck {
    Ready,
    NotReady(Error),
    /// Could not tell (RBAC, not found under a recognizable name): warn only.
    Unknown(String),
}

/// The operator as [`cluster::operator::current`] sees it. Only a Deployment seen with no ready
/// replica refuses: one not found or not readable is no evidence that nothing reconciles.
async fn find_operator(kube: &Kube) -> OperatorCheck {
    let grace = cluster::operator::RECONCILE_GRACE.as_secs();
    match cluster::operator::current(kube).await {
        Ok(OperatorState::Running { .. }) => OperatorCheck::Ready,
        Ok(state @ OperatorState::NotFound) => OperatorCheck::Unknown(format!(
            "{state}; going on, since an operator may run under another name: `wait` says so if \
             the job has no status {grace}s after its creation"
        )),
        Ok(OperatorState::Unknown(why)) => OperatorCheck::Unknown(format!(
            "could not look for the training-operator Deployment ({why}); going on: `wait` says so \
             if the job has no status {grace}s after its creation"
        )),
        Ok(OperatorState::NotReady {
            namespace: ns,
            name: dname,
            ..
        }) => OperatorCheck::NotReady(Error::not_ready(
            format!(
                "the training-operator Deployment {ns}/{dname} has no ready replicas: nothing would reconcile the job, and its admission webhook would reject it"
            ),
            format!(
                "Look at why: kubectl describe deployment {dname} {flags}; kubectl logs deployment/{dname} {flags}",
                flags = kube.hints.ns_flags(&ns)
            ),
        )),
        Err(e) => OperatorCheck::NotReady(e),
    }
}

/// The namespace exists (or may not be read, which the next request will tell); the label by
/// which istio injects sidecars there, if any.
pub(crate) async fn check_namespace(kube: &Kube, namespace: &str) -> Result<Option<String>> {
    let namespaces: Api<Namespace> = Api::all(kube.client.clone());
    match cluster::retry(kube, || namespaces.get_opt(namespace)).await {
        Ok(Some(ns)) => Ok(ns
            .metadata
            .labels
            .as_ref()
            .and_then(crate::gateway::istio_injecting_label)),
        Ok(None) => Err(Error::not_ready(
            format!("namespace {namespace:?} does not exist"),
            format!(
                "Create it with `kubectl create namespace {namespace}{}`, or pass -n with an existing one.",
                kube.hints.hint_suffix()
            ),
        )),
        // Many users may not read namespaces; the create would tell anyway.
        Err(e) if cluster::forbidden::refused(&e).is_some() => Ok(None),
        Err(e) => Err(cluster::explain(
            e,
            &Action::new("get", "namespaces", None).named(namespace),
            kube,
        )),
    }
}

/// Asks the API server whether we may create tfjobs here (SelfSubjectAccessReview stores nothing).
async fn check_access(kube: &Kube, namespace: &str) -> Result<()> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(kube.client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(model::GROUP.into()),
                resource: Some(model::PLURAL.into()),
                verb: Some("create".into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let action = Action::new("create", "tfjobs", Some(namespace));
    let params = PostParams::default();
    match cluster::retry(kube, || reviews.create(&params, &review)).await {
        Ok(answer) => match answer.status {
            Some(s) if !s.allowed => Err(Error::NotReady {
                message: format!(
                    "you may not create tfjobs in namespace {namespace:?}{}",
                    s.reason.map(|r| format!(": {r}")).unwrap_or_default()
                ),
                hint: Some(format!(
                    "Confirm with `{}`, and ask a cluster admin for a Role granting create on tfjobs.kubeflow.org.",
                    action.can_i(&kube.hints)
                )),
            }),
            _ => Ok(()),
        },
        // A server without the review API (or denying it) leaves the answer to the dry run.
        Err(e) => {
            tracing::debug!(error = %e, "access review unavailable");
            Ok(())
        }
    }
}

/// Every Secret/key the job's containers reference must exist (the gateway's first), and every
/// Secret they take whole with `envFrom`. Returns the base URL stored in the gateway Secret, if
/// any.
pub(crate) async fn check_secrets(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    gateway: &crate::gateway::GatewayConfig,
) -> Result<Option<String>> {
    // (Secret, key); no key means an envFrom of the whole Secret, which only has to exist.
    let mut refs: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    if gateway.enabled {
        refs.insert((
            gateway.secret_name.clone(),
            Some(gateway.secret_key.clone()),
        ));
    }
    for pod in job
        .spec
        .tf_replica_specs
        .values()
        .filter_map(|s| s.template.spec.as_ref())
    {
        refs.extend(
            crate::placement::refs::secret_references(pod)
                .into_iter()
                .map(|r| (r.secret, r.key)),
        );
    }
    // A key check reads the Secret anyway: one request per Secret name is enough for envFrom.
    let keyed: BTreeSet<String> = refs
        .iter()
        .filter(|(_, key)| key.is_some())
        .map(|(name, _)| name.clone())
        .collect();
    refs.retain(|(name, key)| key.is_some() || !keyed.contains(name));
    let mut failures = Vec::new();
    let mut stored = None;
    for (name, key) in refs {
        let checked = match &key {
            Some(key) => cluster::secret::check_secret(kube, namespace, &name, key).await,
            None => cluster::secret::require_secret(kube, namespace, &name).await,
        };
        match checked {
            Ok(secret) if gateway.enabled && name == gateway.secret_name => {
                stored = cluster::secret::stored_base_url(&secret);
            }
            Ok(_) => {}
            // The gateway's Secret is required only because this tool adds the env: say how
            // to do without it.
            Err(Error::NotReady { message, hint })
                if gateway.enabled && name == gateway.secret_name =>
            {
                failures.push(Error::NotReady {
                    message,
                    hint: Some(format!(
                        "{}{}or pass --no-api-env if the job needs no model-gateway key.",
                        hint.as_deref().unwrap_or(""),
                        if hint.is_some() { "; " } else { "" }
                    )),
                })
            }
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        Ok(stored)
    } else {
        Err(combine(failures))
    }
}

async fn check_existing(
    kube: &Kube,
    namespace: &str,
    name: Option<&str>,
    replace: bool,
) -> Result<Option<TFJob>> {
    let Some(name) = name else {
        return Ok(None);
    };
    let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), namespace);
    let action = Action::new("get", "tfjobs", Some(namespace)).named(name);
    match cluster::retry(kube, || jobs.get_opt(name)).await {
        Ok(None) => Ok(None),
        Ok(Some(job)) if replace => Ok(Some(job)),
        Ok(Some(job)) => Err(Error::Conflict {
            message: format!(
                "TFJob {namespace}/{name} already exists (state: {})",
                job.last_condition()
                    .map(|c| c.type_.as_str())
                    .unwrap_or("no status yet")
            ),
            hint: Some(format!(
                "Pass --replace to delete it and create the new one, or choose another --name. Inspect it with `kubectl tfjob diagnose {name} {}`.",
                kube.hints.ns_flags(namespace)
            )),
        }),
        // 404 for the resource itself means no CRD, which the CRD check reports.
        Err(e) if cluster::is_not_found(&e) => Ok(None),
        Err(e) => Err(cluster::explain(e, &action, kube)),
    }
}
