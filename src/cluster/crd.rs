//! The `tfjobs.kubeflow.org` CRD: present, serving v1, established.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use kube::runtime::wait::{Condition, conditions::is_crd_established};

use super::{Action, Kube, install_operator_hint};
use crate::error::{Error, Result};
use crate::model;

/// What the cluster says about the `tfjobs.kubeflow.org` CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrdState {
    Missing,
    Present {
        established: bool,
        served_versions: Vec<String>,
    },
    /// Could not tell (e.g. RBAC hides CRDs); the text says why.
    Unknown(String),
}

/// Whether the API server has accepted the CRD (its `Established` condition), as kube-runtime
/// decides it.
pub(crate) fn is_established(crd: &CustomResourceDefinition) -> bool {
    is_crd_established().matches_object(Some(crd))
}

/// The facts `diagnose` reports about a CRD it read.
pub fn crd_state(crd: &CustomResourceDefinition) -> CrdState {
    CrdState::Present {
        established: is_established(crd),
        served_versions: crd
            .spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.clone())
            .collect(),
    }
}

/// Readiness for a write: the CRD is installed, established and serves v1. Returns its v1
/// `openAPIV3Schema` when readable, so the job can be checked against the live schema.
pub async fn require_served(kube: &Kube) -> Result<Option<serde_json::Value>> {
    let crds: Api<CustomResourceDefinition> = Api::all(kube.client.clone());
    let action = Action::new("get", "customresourcedefinitions", None).named(model::CRD_NAME);
    match super::retry(kube, || crds.get_opt(model::CRD_NAME)).await {
        Ok(Some(crd)) => {
            let v1 = crd.spec.versions.iter().find(|v| v.name == model::VERSION);
            let Some(v1) = v1.filter(|v| v.served) else {
                let served: Vec<&str> = crd
                    .spec
                    .versions
                    .iter()
                    .filter(|v| v.served)
                    .map(|v| v.name.as_str())
                    .collect();
                return Err(Error::not_ready(
                    format!(
                        "the CRD {} does not serve {} (it serves: {}); this training-operator is too old or too new for TFJob v1",
                        model::CRD_NAME,
                        model::VERSION,
                        if served.is_empty() {
                            "nothing".into()
                        } else {
                            served.join(", ")
                        }
                    ),
                    install_operator_hint(),
                ));
            };
            if !is_established(&crd) {
                return Err(Error::not_ready(
                    format!(
                        "the CRD {} exists but is not Established yet",
                        model::CRD_NAME
                    ),
                    format!(
                        "Check it with `kubectl get crd {} -o yaml{}`, or wait a few seconds.",
                        model::CRD_NAME,
                        kube.hints.hint_suffix()
                    ),
                ));
            }
            let schema = v1
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| serde_json::to_value(s).ok());
            Ok(schema)
        }
        Ok(None) => Err(Error::not_ready(
            format!(
                "the TFJob CRD ({}) is not installed: no training-operator serves TFJobs in this cluster",
                model::CRD_NAME
            ),
            install_operator_hint(),
        )),
        // Reading CRDs is often not granted to users; fall back to discovery, which is.
        Err(e) if super::status_code(&e) == Some(403) => {
            match kube
                .client
                .list_api_group_resources(&format!("{}/{}", model::GROUP, model::VERSION))
                .await
            {
                Ok(list) if list.resources.iter().any(|r| r.name == model::PLURAL) => Ok(None),
                Ok(_) | Err(_) => Err(Error::not_ready(
                    format!(
                        "the API server does not serve {}/{} {}: the TFJob CRD is not installed",
                        model::GROUP,
                        model::VERSION,
                        model::PLURAL
                    ),
                    install_operator_hint(),
                )),
            }
        }
        Err(e) => Err(super::explain(e, &action, kube)),
    }
}
