//! The objects a job's pods cannot start without that do not exist now: `diagnose` and `wait`
//! (once pods are stuck; `ops` sits above this layer) name them first, with how to create them. Which objects a pod needs
//! has one owner, [`placement::refs::pod_needs`]; this reads whether each exists.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret};
use kube::api::Api;

use crate::cluster::budget::Budget;
use crate::cluster::{self, Kube};
use crate::model::TFJob;
use crate::placement::refs::{Via, create_hint, pod_needs};

/// At most this many distinct objects are looked up (one GET each): the count follows the
/// templates, never the replicas.
const MAX_LOOKUPS: usize = 16;

/// One object the pods need that is not there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingObject {
    /// `Secret`, `ConfigMap` or `PersistentVolumeClaim`.
    pub kind: &'static str,
    pub name: String,
    /// What fails without it, as the cluster says it (`FailedMount`, `Pending`, …).
    pub effect: &'static str,
    /// The replica types whose pods need it.
    pub replica_types: Vec<String>,
    /// How to create it.
    pub hint: String,
}

impl MissingObject {
    /// `ConfigMap default/train-config is missing: Worker pods cannot start (FailedMount)`.
    pub fn sentence(&self, namespace: &str) -> String {
        format!(
            "{} {namespace}/{} is missing: {} pods cannot start ({})",
            self.kind,
            self.name,
            self.replica_types.join(" and "),
            self.effect
        )
    }
}

/// Looks up every non-optional object the job's templates mount (volumes and claims; a
/// missing env reference is the kubelet's CreateContainerConfigError, which `wait` and
/// `diagnose` already end on as a pod that cannot start); a 404 is missing, any
/// other answer (forbidden, a timeout) is not evidence and says nothing. Each GET is one
/// attempt within `limit`.
pub async fn missing_objects(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    limit: Duration,
) -> Vec<MissingObject> {
    let mut wanted: Vec<MissingObject> = Vec::new();
    for (rtype, spec) in &job.spec.tf_replica_specs {
        let Some(pod) = spec.template.spec.as_ref() else {
            continue;
        };
        for need in pod_needs(pod) {
            if need.name.is_empty() || !matches!(need.via, Via::Volume { .. }) {
                continue;
            }
            let effect = match need.kind {
                "PersistentVolumeClaim" => "Pending: the scheduler waits for the claim",
                _ => "FailedMount",
            };
            match wanted
                .iter_mut()
                .find(|m| m.kind == need.kind && m.name == need.name)
            {
                Some(m) if !m.replica_types.contains(rtype) => m.replica_types.push(rtype.clone()),
                Some(_) => {}
                None => wanted.push(MissingObject {
                    kind: need.kind,
                    name: need.name.clone(),
                    effect,
                    replica_types: vec![rtype.clone()],
                    hint: create_hint(
                        need.kind,
                        &need.name,
                        &kube.hints.ns_flags(namespace),
                        &kube.hints.hint_suffix(),
                    ),
                }),
            }
        }
    }
    let mut missing = Vec::new();
    for m in wanted.into_iter().take(MAX_LOOKUPS) {
        let client = kube.client.clone();
        // Metadata only: the values are never read here.
        let lookup = async {
            let found = match m.kind {
                "Secret" => Api::<Secret>::namespaced(client, namespace)
                    .get_metadata_opt(&m.name)
                    .await?
                    .is_some(),
                "ConfigMap" => Api::<ConfigMap>::namespaced(client, namespace)
                    .get_metadata_opt(&m.name)
                    .await?
                    .is_some(),
                _ => Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                    .get_metadata_opt(&m.name)
                    .await?
                    .is_some(),
            };
            Ok::<_, kube::Error>(found)
        };
        let found = Budget::new(limit).attempt(lookup).await;
        match found {
            Some(Ok(false)) => missing.push(m),
            Some(Err(e)) if cluster::status_code(&e) == Some(404) => missing.push(m),
            Some(Ok(true)) => {}
            Some(Err(e)) => {
                tracing::debug!(kind = m.kind, name = %m.name, error = %e, "lookup failed")
            }
            None => tracing::debug!(kind = m.kind, name = %m.name, "lookup timed out"),
        }
    }
    missing
}
