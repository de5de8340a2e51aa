//! Expanding a TFJob into the pods the operator will create, as admission will see them: the
//! step both the placement verdict ([`super::verdict`]) and quota/LimitRange admission
//! ([`super::admission`]) start from. LimitRanger's Container defaults are applied here
//! (`plugin/pkg/admission/limitranger/admission.go`, after `SetDefaults_Pod` and
//! `SetDefaults_LimitRangeItem`), since admission sees the pods with them; its min/max checks
//! stay in admission.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerPort, LimitRange, LimitRangeItem, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::filters::{Res, effective_requests};
use crate::model::{self, TFJob};

/// One pod the operator will create, as it fills the template (`pkg/core/pod.go`,
/// `tfjob_controller.go`): name `<job>-<type>-<i>`, the operator's labels, restartPolicy
/// (ExitCode → Never), the default `tfjob-port` on the `tensorflow` container, and the
/// namespace's LimitRange defaults applied (`limitranger` admission).
#[derive(Debug, Clone, PartialEq)]
pub struct JobPod {
    pub name: String,
    pub replica_type: String,
    pub index: i64,
    pub labels: BTreeMap<String, String>,
    pub spec: PodSpec,
    /// Effective requests after defaulting.
    pub requests: Res,
}

/// The pods of `job`, in the operator's replica-type order then index order.
pub fn job_pods(
    job: &TFJob,
    limit_ranges: &[k8s_openapi::api::core::v1::LimitRange],
) -> Vec<JobPod> {
    let name = job.metadata.name.as_deref().unwrap_or("");
    let mut out = vec![];
    for (key, rs) in &job.spec.tf_replica_specs {
        let rtype = model::ReplicaType::from_any_case(key)
            .map(|t| t.as_str().to_string())
            .unwrap_or_else(|| key.clone());
        let mut spec = rs.template.spec.clone().unwrap_or_default();
        spec.restart_policy = Some(
            match rs.restart_policy.as_deref().unwrap_or("Never") {
                "ExitCode" => "Never",
                other => other,
            }
            .to_string(),
        );
        let idx = spec
            .containers
            .iter()
            .position(|c| c.name == model::DEFAULT_CONTAINER_NAME)
            .unwrap_or(0);
        if let Some(c) = spec.containers.get_mut(idx) {
            let ports = c.ports.get_or_insert_with(Vec::new);
            if !ports
                .iter()
                .any(|p| p.name.as_deref() == Some(model::DEFAULT_PORT_NAME))
            {
                ports.push(ContainerPort {
                    name: Some(model::DEFAULT_PORT_NAME.into()),
                    container_port: model::DEFAULT_PORT,
                    ..Default::default()
                });
            }
        }
        apply_limit_ranges(&mut spec, limit_ranges);
        let requests = effective_requests(&spec);
        let mut labels: BTreeMap<String, String> = rs
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        labels.insert(model::LABEL_JOB_NAME.into(), name.replace('/', "-"));
        labels.insert(
            model::LABEL_OPERATOR_NAME.into(),
            model::OPERATOR_NAME.into(),
        );
        labels.insert(model::LABEL_REPLICA_TYPE.into(), rtype.to_lowercase());
        for i in 0..i64::from(rs.replicas.unwrap_or(1).max(0)) {
            let mut l = labels.clone();
            l.insert(model::LABEL_REPLICA_INDEX.into(), i.to_string());
            out.push(JobPod {
                name: model::pod_name(name, &rtype, i),
                replica_type: rtype.clone(),
                index: i,
                labels: l,
                spec: spec.clone(),
                requests: requests.clone(),
            });
        }
    }
    out
}

type List = BTreeMap<String, Quantity>;

/// `SetDefaults_LimitRangeItem` for Container items.
fn defaulted(item: &LimitRangeItem) -> (List, List) {
    let mut def = item.default.clone().unwrap_or_default();
    let mut req = item.default_request.clone().unwrap_or_default();
    for (k, v) in item.max.iter().flatten() {
        def.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for (k, v) in &def {
        req.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for (k, v) in item.min.iter().flatten() {
        req.entry(k.clone()).or_insert_with(|| v.clone());
    }
    (def, req)
}

/// API defaulting then LimitRanger's Container defaults, in place.
pub fn apply_limit_ranges(spec: &mut PodSpec, limit_ranges: &[LimitRange]) {
    let items: Vec<&LimitRangeItem> = limit_ranges
        .iter()
        .filter_map(|l| l.spec.as_ref())
        .flat_map(|s| s.limits.iter())
        .filter(|i| i.type_ == "Container")
        .collect();
    let all = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten());
    for c in all {
        let r = c.resources.get_or_insert_with(Default::default);
        // SetDefaults_Pod: limits stand in for missing requests.
        if let Some(lim) = r.limits.clone() {
            let req = r.requests.get_or_insert_with(Default::default);
            for (k, v) in lim {
                req.entry(k).or_insert(v);
            }
        }
        for item in &items {
            let (def, defreq) = defaulted(item);
            if !def.is_empty() {
                let lim = r.limits.get_or_insert_with(Default::default);
                for (k, v) in def {
                    lim.entry(k).or_insert(v);
                }
            }
            if !defreq.is_empty() {
                let req = r.requests.get_or_insert_with(Default::default);
                for (k, v) in defreq {
                    req.entry(k).or_insert(v);
                }
            }
        }
    }
}
