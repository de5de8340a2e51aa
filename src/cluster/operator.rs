//! Is a training-operator running? Its Deployment is looked up by the upstream label (one
//! server-side filtered list), then by the upstream name in the upstream namespace (one GET):
//! never a list of every Deployment in the cluster, whose cost grows with the cluster. What is not
//! found, or may not be read (a namespace-scoped role, as in multi-tenant Kubeflow), is no
//! evidence that nothing runs: callers warn, and `wait` decides from the job itself.
//!
//! The training-operator v1.9 manifests (kubeflow/training-operator `manifests/base/deployment.yaml`,
//! installed by the `overlays/standalone` kustomization) create Deployment `training-operator` in
//! namespace `kubeflow`, with `control-plane: kubeflow-training-operator` on the Deployment, its
//! selector and its pod template. (The repository was renamed kubeflow/trainer; its v2 manifests,
//! `manifests/base/controller/deployment.yaml`, label `app.kubernetes.io/name: kubeflow-trainer`
//! and serve TrainJob, not TFJob, so they are deliberately not matched.)

use k8s_openapi::api::apps::v1::Deployment;

/// The label the upstream manifests put on the operator's Deployment and pods.
pub(crate) const OPERATOR_LABEL: (&str, &str) = ("control-plane", "kubeflow-training-operator");
/// The upstream Deployment name.
pub(crate) const OPERATOR_DEPLOYMENT: &str = "training-operator";
/// The namespace the standalone overlay installs into.
pub(crate) const OPERATOR_NAMESPACE: &str = "kubeflow";
/// How long a job may have no status before "nothing reconciles it" is the answer, when the
/// operator cannot be seen: a running operator writes Created within seconds of the create.
pub const RECONCILE_GRACE: std::time::Duration = std::time::Duration::from_secs(30);
/// Label-selected Deployments read in one page: more than one install is already unusual.
const PAGE: u32 = 50;

/// Whether a training-operator Deployment is running somewhere in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorState {
    Running {
        namespace: String,
        name: String,
    },
    NotReady {
        namespace: String,
        name: String,
        ready: i32,
        desired: i32,
    },
    /// No Deployment with the upstream label in any namespace, none under the upstream name.
    NotFound,
    /// Could not tell (e.g. no permission to list Deployments); the text says why.
    Unknown(String),
}

impl OperatorState {
    /// The state without its detail: what `diagnose` puts as a finding's summary when the
    /// detail goes in its evidence. [`Display`](std::fmt::Display) is this plus the detail.
    pub fn headline(&self) -> String {
        match self {
            OperatorState::Running { .. } => "training-operator running".into(),
            OperatorState::NotReady {
                namespace, name, ..
            } => format!("training-operator {namespace}/{name} is not ready"),
            OperatorState::NotFound => "no training-operator Deployment found".into(),
            OperatorState::Unknown(_) => {
                "cannot tell whether the training-operator is running".into()
            }
        }
    }
}

/// The one wording of the operator's state, used by `wait`, `diagnose` and `submit`'s readiness.
impl std::fmt::Display for OperatorState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headline = self.headline();
        match self {
            OperatorState::Running { namespace, name } => {
                write!(f, "{headline} ({namespace}/{name})")
            }
            OperatorState::NotReady { ready, desired, .. } => {
                write!(f, "{headline} ({ready}/{desired} replicas ready)")
            }
            OperatorState::NotFound => write!(
                f,
                "{headline} (none labelled {} in any namespace, no {OPERATOR_NAMESPACE}/{OPERATOR_DEPLOYMENT})",
                operator_selector()
            ),
            OperatorState::Unknown(why) => write!(f, "{headline} ({why})"),
        }
    }
}

/// Why nothing reconciles a job that has no condition yet, in the one wording `wait`, `list` and
/// `get` use (pure): an operator that is installed but not ready is the cause at once; one that
/// cannot be found or seen is the cause only once the job has had no status for
/// [`RECONCILE_GRACE`] (`age`, seconds since its creation), since a running operator writes
/// Created within seconds. `None` while a running operator may simply not have got to it.
pub fn not_reconciling(operator: &OperatorState, age: Option<u64>) -> Option<String> {
    not_reconciling_after(operator, age, RECONCILE_GRACE)
}

/// [`not_reconciling`] with the grace `wait --pending-timeout` sets.
pub fn not_reconciling_after(
    operator: &OperatorState,
    age: Option<u64>,
    grace: std::time::Duration,
) -> Option<String> {
    match operator {
        OperatorState::Running { .. } => None,
        OperatorState::NotReady { .. } => Some(operator.to_string()),
        OperatorState::NotFound | OperatorState::Unknown(_) => {
            let old = age.filter(|a| *a >= grace.as_secs())?;
            Some(format!(
                "it has no status {old}s after its creation ({operator})"
            ))
        }
    }
}

/// Whether a Deployment runs the training-operator: the upstream label (on the Deployment or
/// its pod template), else the upstream name, else an image called `training-operator` (forks
/// and Helm charts that relabel it).
pub(crate) fn is_operator(d: &Deployment) -> bool {
    let has_label = |labels: Option<&std::collections::BTreeMap<String, String>>| {
        labels
            .is_some_and(|l| l.get(OPERATOR_LABEL.0).map(String::as_str) == Some(OPERATOR_LABEL.1))
    };
    let template = d.spec.as_ref().map(|s| &s.template);
    let labelled = has_label(d.metadata.labels.as_ref())
        || has_label(
            template
                .and_then(|t| t.metadata.as_ref())
                .and_then(|m| m.labels.as_ref()),
        );
    let named = d.metadata.name.as_deref() == Some(OPERATOR_DEPLOYMENT);
    let by_image = template.and_then(|t| t.spec.as_ref()).is_some_and(|p| {
        p.containers.iter().any(|c| {
            c.image
                .as_deref()
                .is_some_and(|i| i.contains("training-operator"))
        })
    });
    labelled || named || by_image
}

/// The operator's state from a list of Deployments: a ready one wins, else the first found.
pub fn operator_state(deployments: &[Deployment]) -> OperatorState {
    let mut not_ready = None;
    for state in deployments.iter().filter(|d| is_operator(d)).map(state_of) {
        match state {
            OperatorState::Running { .. } => return state,
            other => {
                not_ready.get_or_insert(other);
            }
        }
    }
    not_ready.unwrap_or(OperatorState::NotFound)
}

/// One operator Deployment: running with a ready replica, or not.
fn state_of(d: &Deployment) -> OperatorState {
    let namespace = d.metadata.namespace.clone().unwrap_or_default();
    let name = d.metadata.name.clone().unwrap_or_default();
    let ready = d
        .status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0);
    let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    if ready >= 1 {
        OperatorState::Running { namespace, name }
    } else {
        OperatorState::NotReady {
            namespace,
            name,
            ready,
            desired,
        }
    }
}

/// The label selector of the upstream manifests.
pub fn operator_selector() -> String {
    format!("{}={}", OPERATOR_LABEL.0, OPERATOR_LABEL.1)
}

/// Reads the operator's state: Deployments carrying the upstream label in any namespace
/// (server-side filtered), else Deployment `training-operator` in `kubeflow`. A refused or failed
/// read becomes [`OperatorState::Unknown`] with the reason; a cluster that cannot be reached, or
/// rejects our credentials, is an error. The one owner of this fact: `submit`, `check`, `wait`
/// and `diagnose` all ask here.
pub async fn current(kube: &super::Kube) -> crate::error::Result<OperatorState> {
    use kube::api::{Api, ListParams};
    let selector = operator_selector();
    // From the watch cache (resourceVersion=0): a Deployment's readiness a moment stale is
    // harmless here, and the cache spares etcd.
    let lp = ListParams::default()
        .labels(&selector)
        .limit(PAGE)
        .match_any();
    let all: Api<Deployment> = Api::all(kube.client.clone());
    let action = super::Action::new("list", "deployments", None);
    // `None`: listed, and no labelled one; `Some(why)`: could not list.
    let unlisted = match super::retry(kube, || all.list(&lp)).await {
        Ok(list) => match operator_state(&list.items) {
            OperatorState::NotFound => None,
            found => return Ok(found),
        },
        Err(e) => Some(super::unknown_reason(e, &action, kube)?),
    };
    let upstream: Api<Deployment> = Api::namespaced(kube.client.clone(), OPERATOR_NAMESPACE);
    let get = super::Action::new("get", "deployments", Some(OPERATOR_NAMESPACE))
        .named(OPERATOR_DEPLOYMENT);
    let by_name = match super::retry(kube, || upstream.get_opt(OPERATOR_DEPLOYMENT)).await {
        Ok(found) => found,
        Err(e) => {
            let why = super::unknown_reason(e, &get, kube)?;
            return Ok(OperatorState::Unknown(unlisted.unwrap_or(why)));
        }
    };
    Ok(match (by_name, unlisted) {
        (Some(d), _) => state_of(&d),
        (None, None) => OperatorState::NotFound,
        // Not under its upstream name says nothing about the namespaces we could not list.
        (None, Some(why)) => OperatorState::Unknown(why),
    })
}

/// The `--gang-scheduler-name` the operator runs with (training-operator
/// `cmd/training-operator.v1/main.go`: `volcano` or `scheduler-plugins`; with it set the
/// operator makes a PodGroup per job and gives the pods that scheduler whatever the templates
/// say), read from its Deployment's container args (`--flag=value` or `--flag value`). Pure.
pub fn gang_scheduler_of(deployments: &[Deployment]) -> Option<String> {
    deployments
        .iter()
        .filter(|d| is_operator(d))
        .flat_map(|d| d.spec.iter().flat_map(|s| s.template.spec.iter()))
        .flat_map(|p| &p.containers)
        .find_map(|c| {
            let args: Vec<&str> = c
                .command
                .iter()
                .chain(c.args.iter())
                .flatten()
                .map(String::as_str)
                .collect();
            args.iter().enumerate().find_map(|(i, a)| {
                let v = match a.strip_prefix("--gang-scheduler-name") {
                    Some(rest) if rest.starts_with('=') => rest[1..].to_string(),
                    Some("") => args.get(i + 1)?.to_string(),
                    _ => return None,
                };
                Some(v).filter(|v| !v.is_empty())
            })
        })
}

/// [`gang_scheduler_of`] the operator's Deployment (one label-selected list): `Known(None)`
/// when no operator Deployment names one, `Unknown` when they cannot be read.
pub async fn gang_scheduler(
    kube: &super::Kube,
) -> crate::error::Result<super::queue::Fact<Option<String>>> {
    use kube::api::{Api, ListParams};
    let lp = ListParams::default()
        .labels(&operator_selector())
        .limit(PAGE)
        .match_any();
    let all: Api<Deployment> = Api::all(kube.client.clone());
    let action = super::Action::new("list", "deployments", None);
    Ok(match super::retry(kube, || all.list(&lp)).await {
        Ok(list) => super::queue::Fact::Known(gang_scheduler_of(&list.items)),
        Err(e) => super::queue::Fact::Unknown(super::unknown_reason(e, &action, kube)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_reconciles_is_said_at_once_for_an_operator_down_and_after_the_grace_otherwise() {
        let down = OperatorState::NotReady {
            namespace: "kubeflow".into(),
            name: "training-operator".into(),
            ready: 0,
            desired: 1,
        };
        assert_eq!(
            not_reconciling(&down, None).as_deref(),
            Some("training-operator kubeflow/training-operator is not ready (0/1 replicas ready)")
        );
        let up = OperatorState::Running {
            namespace: "kubeflow".into(),
            name: "training-operator".into(),
        };
        assert_eq!(not_reconciling(&up, Some(3600)), None);
        let unseen = OperatorState::Unknown("forbidden".into());
        let grace = RECONCILE_GRACE.as_secs();
        assert_eq!(not_reconciling(&unseen, Some(grace - 1)), None);
        assert_eq!(not_reconciling(&unseen, None), None);
        assert_eq!(
            not_reconciling(&unseen, Some(grace)).as_deref(),
            Some(
                "it has no status 30s after its creation (cannot tell whether the training-operator is running (forbidden))"
            )
        );
    }
    use serde_json::json;

    #[test]
    fn the_gang_scheduler_is_read_from_the_operators_args() {
        let dep = |args: serde_json::Value| -> Deployment {
            serde_json::from_value(json!({"metadata": {"name": "training-operator",
                "labels": {"control-plane": "kubeflow-training-operator"}},
                "spec": {"selector": {}, "template": {"spec": {"containers": [
                    {"name": "m", "command": ["/manager"], "args": args}]}}}}))
            .unwrap()
        };
        assert_eq!(
            gang_scheduler_of(&[dep(json!(["--gang-scheduler-name=volcano"]))]).as_deref(),
            Some("volcano")
        );
        assert_eq!(
            gang_scheduler_of(&[dep(json!(["--gang-scheduler-name", "scheduler-plugins"]))])
                .as_deref(),
            Some("scheduler-plugins")
        );
        assert_eq!(gang_scheduler_of(&[dep(json!(["--x"]))]), None);
    }

    #[test]
    fn each_state_reads_as_one_sentence_with_its_detail() {
        let running = OperatorState::Running {
            namespace: "kubeflow".into(),
            name: "training-operator".into(),
        };
        assert_eq!(
            running.to_string(),
            "training-operator running (kubeflow/training-operator)"
        );
        let not_ready = OperatorState::NotReady {
            namespace: "ops".into(),
            name: "tfo".into(),
            ready: 0,
            desired: 2,
        };
        assert_eq!(
            not_ready.to_string(),
            "training-operator ops/tfo is not ready (0/2 replicas ready)"
        );
        assert_eq!(
            OperatorState::NotFound.to_string(),
            "no training-operator Deployment found (none labelled \
             control-plane=kubeflow-training-operator in any namespace, no kubeflow/training-operator)"
        );
        let unknown = OperatorState::Unknown("deployments.apps is forbidden".into());
        assert_eq!(
            unknown.to_string(),
            "cannot tell whether the training-operator is running (deployments.apps is forbidden)"
        );
        // The headline is the sentence without its detail, as diagnose's summaries show it.
        for state in [running, not_ready, OperatorState::NotFound, unknown] {
            let text = state.to_string();
            assert!(
                text.starts_with(&format!("{} (", state.headline())),
                "{text}"
            );
        }
    }

    fn dep(v: serde_json::Value) -> Deployment {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn found_by_label_then_name_then_image() {
        let by_deployment_label = dep(
            json!({"metadata": {"name": "x", "labels": {"control-plane": "kubeflow-training-operator"}}}),
        );
        let by_pod_label = dep(
            json!({"metadata": {"name": "x"}, "spec": {"selector": {}, "template": {
            "metadata": {"labels": {"control-plane": "kubeflow-training-operator"}}}}}),
        );
        let by_name = dep(json!({"metadata": {"name": "training-operator"}}));
        let by_image = dep(
            json!({"metadata": {"name": "x"}, "spec": {"selector": {}, "template": {
            "spec": {"containers": [{"name": "m", "image": "kubeflow/training-operator:v1-855e096"}]}}}}),
        );
        let other = dep(json!({"metadata": {"name": "web", "labels": {"control-plane": "other"}}}));
        for d in [&by_deployment_label, &by_pod_label, &by_name, &by_image] {
            assert!(is_operator(d), "{:?}", d.metadata);
        }
        assert!(!is_operator(&other));
        assert_eq!(operator_state(&[other]), OperatorState::NotFound);
    }
}
