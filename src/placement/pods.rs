//! Expanding a TFJob into the pods the operator will create, as admission will see them: the
//! step both the placement verdict ([`super::verdict`]) and quota/LimitRange admission
//! ([`super::admission`]) start from. LimitRanger's Container defaults are applied here
//! (`plugin/pkg/admission/limitranger/admission.go` `defaultContainerResourceRequirements`:
//! limits from `default`, requests from `defaultRequest`, merged by
//! `mergePodResourceRequirements` into what a container leaves out; after `SetDefaults_Pod` and
//! `SetDefaults_LimitRangeItem`), since admission sees the pods with them; its min/max checks
//! stay in admission.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LimitRange, LimitRangeItem, PodSpec, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::filters::{Res, effective_requests};
use crate::model::TFJob;
use crate::operator_pods;

/// One pod the operator will create ([`crate::operator_pods`]: name `<job>-<type>-<i>`, the
/// operator's labels, restartPolicy, the default `tfjob-port`), with the namespace's
/// LimitRange defaults applied (`limitranger` admission).
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
pub fn job_pods(job: &TFJob, limit_ranges: &[LimitRange]) -> Vec<JobPod> {
    let model = operator_pods::expand(job);
    let mut out = vec![];
    for r in &model.replicas {
        // TF_CONFIG is left out: admission and the scheduler do not read env.
        let mut spec = model.pod_spec(r);
        apply_limit_ranges(&mut spec, limit_ranges);
        let requests = effective_requests(&spec);
        for i in 0..r.count {
            out.push(JobPod {
                name: model.pod_name(r, i),
                replica_type: r.type_name.clone(),
                index: i64::from(i),
                labels: model.pod_labels(r, i),
                spec: spec.clone(),
                requests: requests.clone(),
            });
        }
    }
    out
}

/// What the RuntimeClass admission plugin takes from a class (node.k8s.io/v1 RuntimeClass):
/// the pod overhead it sets (`overhead.podFixed`, present as an empty list when the class has
/// an `overhead` without it) and the node selector and tolerations it merges in
/// (`scheduling`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeClassInfo {
    pub overhead: Option<BTreeMap<String, Quantity>>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
}

/// The pods as the scheduler gets them: [`job_pods`], then what the RuntimeClass admission
/// plugin does to a pod naming a known class (plugin/pkg/admission/runtimeclass `Admit`:
/// `setOverhead` makes the class's overhead the pod's, which the scheduler adds to its
/// requests; `setScheduling` adds the class's node selector and tolerations). A conflicting
/// node selector or overhead is a refusal, said by [`super::refs`]; here the pod's own value
/// stays.
pub fn admitted_pods(
    job: &TFJob,
    limit_ranges: &[LimitRange],
    classes: Option<&BTreeMap<String, RuntimeClassInfo>>,
) -> Vec<JobPod> {
    let mut pods = job_pods(job, limit_ranges);
    let Some(classes) = classes else {
        return pods;
    };
    for p in &mut pods {
        let Some(class) = p
            .spec
            .runtime_class_name
            .as_deref()
            .and_then(|n| classes.get(n))
        else {
            continue;
        };
        if let Some(o) = &class.overhead
            && p.spec.overhead.as_ref().is_none_or(BTreeMap::is_empty)
        {
            p.spec.overhead = Some(o.clone());
        }
        if !class.node_selector.is_empty() {
            let selector = p.spec.node_selector.get_or_insert_with(Default::default);
            for (k, v) in &class.node_selector {
                selector.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        if !class.tolerations.is_empty() {
            let tolerations = p.spec.tolerations.get_or_insert_with(Vec::new);
            for t in &class.tolerations {
                if !tolerations.contains(t) {
                    tolerations.push(t.clone());
                }
            }
        }
        p.requests = effective_requests(&p.spec);
    }
    pods
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
