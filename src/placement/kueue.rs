//! Would Kueue admit this TFJob now, later, or never? A pure model of Kueue v0.19's admission of
//! the job's Workload against its ClusterQueue, over objects read by `cluster::queue`.
//!
//! Upstream behaviour modelled (kubernetes-sigs/kueue v0.19):
//! - pod sets: `pkg/controller/jobs/kubeflow/jobs/tfjob/tfjob_controller.go` (`OrderedReplicaTypes`:
//!   Chief, Master, PS, Worker, Evaluator, looked up under their exact keys) and
//!   `pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go` (`PodSets`: name = the
//!   type lowercased, count = replicas or 1);
//! - requests per pod: `pkg/workload/resources.go` (LimitRange defaults, then a limit stands in for
//!   a missing request) over the pod requests helper (sum of containers, max with init
//!   containers, plus overhead), × count; `pods` counts 1 per pod when the queue covers it;
//! - queue checks before quota: `pkg/controller/core/workload_controller.go` (`getQueueBlocker`:
//!   "LocalQueue X doesn't exist", "ClusterQueue X doesn't exist", "... is inactive") and
//!   `pkg/scheduler/scheduler.go` (`nominate`: "workload namespace doesn't match ClusterQueue
//!   selector"; a nil namespaceSelector selects nothing, `{}` everything);
//! - flavor assignment: `pkg/scheduler/flavorassigner/flavorassigner.go` (`findFlavorForPodSets`:
//!   flavors in order, untolerated taints and node affinity first; `fitsResourceQuota`: above the
//!   most the queue could ever get is "insufficient quota for R in flavor F, previously considered
//!   podsets requests (A) + current podset request (B) > maximum capacity (M)", ExceedsMaxQuota;
//!   above what is unused is "insufficient unused quota for R in flavor F, N more needed";
//!   "resource R unavailable in ClusterQueue", NoMatchingFlavor; `Assignment.Message`: one clause
//!   per pod set, reasons sorted and joined by ", ", clauses by "; "; `resolveNoFitReason`: the
//!   least severe reason among a group's flavors, the most severe across groups);
//! - borrowing: `pkg/cache/scheduler/resource_node.go` (`available`, `potentialAvailable`: a
//!   queue's nominal quota plus what its cohort can lend, capped by `borrowingLimit`; the part
//!   above `lendingLimit` is guaranteed to the queue);
//! - admission: `pkg/podset/podset.go` (`Merge`: the flavor's nodeLabels join the pods'
//!   nodeSelector, its tolerations are appended), which [`apply_flavors`] applies for placement.
//!
//! Left out: preemption (policies `Never` are the default; a job that needs preemption is
//! `queued`), fair sharing, TAS, admission checks, hierarchical cohorts, partial admission.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LimitRange, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::Serialize;

use super::Res;
use crate::cluster::queue::{ClusterQueue, LocalQueue, ResourceFlavor, ResourceGroup};
use crate::model::TFJob;

/// A quantity as the API sends it (a string; a number from a hand-written object), in
/// milli-units.
pub fn qty(v: &serde_json::Value) -> Option<i128> {
    match v {
        serde_json::Value::String(s) => super::parse_quantity(s),
        serde_json::Value::Number(n) => super::parse_quantity(&n.to_string()),
        _ => None,
    }
}

pub use crate::cluster::queue::POD_SET_ORDER;

/// Kueue's verdict for the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueVerdict {
    /// Admitted now: the quota is unused.
    Fits,
    /// Admitted once usage frees (or the queue is reactivated).
    Queued,
    /// More than the ClusterQueue can ever give, as configured.
    Never,
    Unknown,
}

impl QueueVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueVerdict::Fits => "fits",
            QueueVerdict::Queued => "queued",
            QueueVerdict::Never => "never",
            QueueVerdict::Unknown => "unknown",
        }
    }
}

/// An object the job's queue path needs that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    LocalQueue,
    ClusterQueue(String),
}

/// The first resource that holds the job back: what it needs in all, and what is unused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortfall {
    pub resource: String,
    pub flavor: String,
    /// milli-units
    pub need: i128,
    pub unused: i128,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    pub verdict: QueueVerdict,
    /// Kueue's own message (the Workload's QuotaReserved message it would write), or empty.
    pub message: String,
    pub missing: Option<Missing>,
    pub cluster_queue: Option<String>,
    /// Pod set name → resource → flavor (for fits and queued).
    pub flavors: BTreeMap<String, BTreeMap<String, String>>,
    pub shortfall: Option<Shortfall>,
}

/// One pod set as Kueue builds it.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSet {
    /// Lowercased replica type.
    pub name: String,
    /// The key in tfReplicaSpecs.
    pub replica_type: String,
    pub count: i64,
    /// One pod's requests, milli-units.
    pub per_pod: Res,
    pub spec: PodSpec,
}

/// RuntimeClass name → its pod overhead (`overhead.podFixed`), for the classes that have one.
pub type Overheads = BTreeMap<String, BTreeMap<String, Quantity>>;

/// The Workload's pod sets. Lowercase keys give none (the operator accepts them; Kueue does not
/// see them), so a job whose keys are all lowercase gets no Workload at all. A pod set naming a
/// RuntimeClass with an overhead and having none of its own gets the class's, before the
/// LimitRange defaults (`AdjustResources`: `handlePodOverhead`, then `handlePodLimitRange`).
pub fn pod_sets(job: &TFJob, limit_ranges: &[LimitRange], overheads: &Overheads) -> Vec<PodSet> {
    POD_SET_ORDER
        .iter()
        .filter_map(|key| {
            let rs = job.spec.tf_replica_specs.get(*key)?;
            let mut spec = rs.template.spec.clone().unwrap_or_default();
            if spec.overhead.as_ref().is_none_or(BTreeMap::is_empty)
                && let Some(o) = spec
                    .runtime_class_name
                    .as_deref()
                    .and_then(|n| overheads.get(n))
            {
                spec.overhead = Some(o.clone());
            }
            super::apply_limit_ranges(&mut spec, limit_ranges);
            let mut per_pod = super::effective_requests(&spec);
            per_pod.retain(|_, v| *v != 0);
            Some(PodSet {
                name: key.to_lowercase(),
                replica_type: (*key).to_string(),
                count: i64::from(rs.replicas.unwrap_or(1).max(0)),
                per_pod,
                spec,
            })
        })
        .collect()
}

/// Replica keys Kueue would not see (not one of its exact-case types).
pub fn unseen_replica_keys(job: &TFJob) -> Vec<String> {
    job.spec
        .tf_replica_specs
        .keys()
        .filter(|k| !POD_SET_ORDER.contains(&k.as_str()))
        .cloned()
        .collect()
}

/// What the model reads.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub local_queue: &'a str,
    /// `None`: the LocalQueue does not exist.
    pub lq: Option<&'a LocalQueue>,
    /// `None`: the ClusterQueue the LocalQueue names does not exist.
    pub cq: Option<&'a ClusterQueue>,
    /// Every ClusterQueue readable (the cohort is taken from here; may include `cq`).
    pub all_cqs: &'a [ClusterQueue],
    pub flavors: &'a [ResourceFlavor],
    /// The namespace's labels, when read.
    pub ns_labels: Option<&'a BTreeMap<String, String>>,
}

fn fail(verdict: QueueVerdict, message: String, cq: Option<String>) -> Admission {
    Admission {
        verdict,
        message,
        missing: None,
        cluster_queue: cq,
        flavors: BTreeMap::new(),
        shortfall: None,
    }
}

/// Whether a queue object is stopped or marked inactive (its `Active` condition False).
fn inactive(stop: Option<&str>, conds: &[crate::cluster::queue::Cond]) -> bool {
    matches!(stop, Some("Hold" | "HoldAndDrain"))
        || crate::cluster::queue::find_cond(conds, "Active").is_some_and(|c| c.status == "False")
}

/// A label selector (matchLabels and matchExpressions In/NotIn/Exists/DoesNotExist) against
/// labels; `None` selects nothing, as the ClusterQueue field's doc says.
fn selects(selector: Option<&serde_json::Value>, labels: &BTreeMap<String, String>) -> bool {
    let Some(sel) = selector else { return false };
    let ml_ok = sel
        .get("matchLabels")
        .and_then(|m| m.as_object())
        .is_none_or(|m| {
            m.iter()
                .all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str())
        });
    let exprs = sel
        .get("matchExpressions")
        .and_then(|e| e.as_array())
        .cloned()
        .unwrap_or_default();
    ml_ok
        && exprs.iter().all(|e| {
            let key = e.get("key").and_then(|k| k.as_str()).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(|v| v.as_array())
                .map(|v| v.iter().filter_map(|s| s.as_str()).collect())
                .unwrap_or_default();
            let have = labels.get(key).map(String::as_str);
            match e.get("operator").and_then(|o| o.as_str()).unwrap_or("") {
                "In" => have.is_some_and(|h| values.contains(&h)),
                "NotIn" => have.is_none_or(|h| !values.contains(&h)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            }
        })
}

/// Quota facts for one (flavor, resource) of a ClusterQueue.
#[derive(Debug, Clone, Copy, Default)]
struct Quota {
    nominal: i128,
    borrowing_limit: Option<i128>,
    lending_limit: Option<i128>,
}

fn quota_of(cq: &ClusterQueue, flavor: &str, resource: &str) -> Option<Quota> {
    cq.spec
        .resource_groups
        .iter()
        .flat_map(|g| &g.flavors)
        .filter(|f| f.name == flavor)
        .flat_map(|f| &f.resources)
        .find(|r| r.name == resource)
        .map(|r| Quota {
            nominal: qty(&r.nominal_quota).unwrap_or(0),
            borrowing_limit: r.borrowing_limit.as_ref().and_then(qty),
            lending_limit: r.lending_limit.as_ref().and_then(qty),
        })
}

/// Quota reserved now (`status.flavorsReservation`: what Kueue's cache counts).
fn usage_of(cq: &ClusterQueue, flavor: &str, resource: &str) -> i128 {
    cq.status
        .flavors_reservation
        .iter()
        .filter(|f| f.name == flavor)
        .flat_map(|f| &f.resources)
        .find(|r| r.name == resource)
        .and_then(|r| r.total.as_ref().and_then(qty))
        .unwrap_or(0)
}

/// (available now, the most it could ever get) for `cq` on (flavor, resource), as
/// `resource_node.go` computes them for a flat cohort.
fn capacity(cq: &ClusterQueue, all: &[ClusterQueue], flavor: &str, resource: &str) -> (i128, i128) {
    let Some(q) = quota_of(cq, flavor, resource) else {
        return (0, 0);
    };
    let usage = usage_of(cq, flavor, resource);
    let cohort = cq.spec.cohort_name.as_deref().filter(|c| !c.is_empty());
    let Some(cohort) = cohort else {
        return ((q.nominal - usage).max(0), q.nominal);
    };
    let name = cq.metadata.name.as_deref();
    // Guaranteed = the part the queue does not lend; the rest is the cohort's pool.
    let guaranteed = |q: &Quota| q.lending_limit.map_or(0, |l| (q.nominal - l).max(0));
    let mut pool = q.nominal - guaranteed(&q);
    let mut pool_used = (usage - guaranteed(&q)).max(0);
    for other in all.iter().filter(|o| {
        o.metadata.name.as_deref() != name && o.spec.cohort_name.as_deref() == Some(cohort)
    }) {
        if let Some(oq) = quota_of(other, flavor, resource) {
            let g = guaranteed(&oq);
            pool += oq.nominal - g;
            pool_used += (usage_of(other, flavor, resource) - g).max(0);
        }
    }
    let local_free = (guaranteed(&q) - usage).max(0);
    let pool_free = (pool - pool_used).max(0);
    let under_limit = q
        .borrowing_limit
        .map(|b| (q.nominal + b - usage - local_free).max(0));
    let available = local_free + under_limit.map_or(pool_free, |u| u.min(pool_free));
    let potential = {
        let most = guaranteed(&q) + pool;
        q.borrowing_limit.map_or(most, |b| most.min(q.nominal + b))
    };
    (available, potential)
}

/// Kueue's quantity strings in its messages (`pkg/resources/resource_formatter.go`).
fn fmt_q(resource: &str, milli: i128) -> String {
    if resource == "cpu" {
        return super::format_quantity("cpu", milli);
    }
    // Other resources count whole units, rounded up.
    let units = if milli % 1000 == 0 {
        milli
    } else {
        (milli / 1000 + 1) * 1000
    };
    super::format_quantity(resource, units)
}

/// How a flavor answered one pod set's group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    /// Nothing can make it fit (as configured).
    NoFit,
    /// Fits what the queue could get, not what is unused now.
    Wait,
    Fit,
}

/// The best flavor of a group so far: its mode, name and the group's requests.
type Best<'a> = (Mode, &'a str, Vec<(&'a String, i128)>);

/// Severity of a no-fit reason (`reasonSeverity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Severity {
    WaitingForQuota,
    ExceedsMaxQuota,
    NoMatchingFlavor,
}

/// The taint a flavor has that the pod set does not tolerate (NoSchedule/NoExecute), and
/// whether the pod set's nodeSelector, on the flavor's own label keys, matches its labels.
fn flavor_rejects(spec: &PodSpec, flavor: &ResourceFlavor, name: &str) -> Option<String> {
    let mut tolerations = spec.tolerations.clone().unwrap_or_default();
    tolerations.extend(flavor.spec.tolerations.iter().cloned());
    for t in flavor
        .spec
        .node_taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
    {
        if !tolerations
            .iter()
            .any(|tol| super::filters::tolerates(tol, t))
        {
            let value = t.value.as_deref().unwrap_or_default();
            return Some(format!(
                "untolerated taint {{{} {value} {}}} in flavor {name}",
                t.key, t.effect
            ));
        }
    }
    let labels = &flavor.spec.node_labels;
    let mismatch = spec
        .node_selector
        .iter()
        .flatten()
        .any(|(k, v)| labels.get(k).is_some_and(|have| have != v));
    mismatch.then(|| format!("flavor {name} doesn't match node affinity"))
}

/// The model. `job` must carry its namespace (for the selector's message only).
pub fn admit(input: Input<'_>, pod_sets: &[PodSet]) -> Admission {
    let (cq, cq_name) = match queues(&input) {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
    let mut assigner = Assigner {
        input: &input,
        cq,
        covers_pods: cq
            .spec
            .resource_groups
            .iter()
            .any(|g| g.covered_resources.iter().any(|r| r == "pods")),
        assumed: BTreeMap::new(),
        shortfall: None,
    };
    let mut clauses = Vec::new();
    let mut worst = Mode::Fit;
    let mut severity = None::<Severity>;
    let mut flavors_out = BTreeMap::new();
    for ps in pod_sets {
        let mut got = assigner.pod_set(ps);
        if !got.reasons.is_empty() && got.mode != Mode::Fit {
            got.reasons.sort();
            clauses.push(format!(
                "couldn't assign flavors to pod set {}: {}",
                ps.name,
                got.reasons.join(", ")
            ));
        }
        worst = worst.min(got.mode);
        if got.mode != Mode::Fit {
            severity = severity.max(got.severity);
        }
        flavors_out.insert(ps.name.clone(), got.chosen);
        // A pod set with no fit at all ends the assignment.
        if got.mode == Mode::NoFit {
            break;
        }
    }
    let verdict = match (worst, severity) {
        (Mode::Fit, _) => QueueVerdict::Fits,
        (_, Some(Severity::ExceedsMaxQuota | Severity::NoMatchingFlavor)) => QueueVerdict::Never,
        _ => QueueVerdict::Queued,
    };
    Admission {
        verdict,
        message: clauses.join("; "),
        missing: None,
        cluster_queue: Some(cq_name),
        flavors: flavors_out,
        shortfall: assigner.shortfall,
    }
}

/// The LocalQueue and its ClusterQueue exist, are active, and the ClusterQueue selects the
/// namespace: the ClusterQueue and its name, else the refusal as Kueue words it.
fn queues<'a>(input: &Input<'a>) -> Result<(&'a ClusterQueue, String), Box<Admission>> {
    let Some(lq) = input.lq else {
        let mut a = fail(
            QueueVerdict::Never,
            format!("LocalQueue {} doesn't exist", input.local_queue),
            None,
        );
        a.missing = Some(Missing::LocalQueue);
        return Err(Box::new(a));
    };
    let cq_name = lq.spec.cluster_queue.clone();
    let Some(cq) = input.cq else {
        let mut a = fail(
            QueueVerdict::Never,
            format!("ClusterQueue {cq_name} doesn't exist"),
            Some(cq_name.clone()),
        );
        a.missing = Some(Missing::ClusterQueue(cq_name));
        return Err(Box::new(a));
    };
    if inactive(lq.spec.stop_policy.as_deref(), &lq.status.conditions) {
        return Err(Box::new(fail(
            QueueVerdict::Queued,
            format!("LocalQueue {} is inactive", input.local_queue),
            Some(cq_name),
        )));
    }
    if inactive(cq.spec.stop_policy.as_deref(), &cq.status.conditions) {
        return Err(Box::new(fail(
            QueueVerdict::Queued,
            format!("ClusterQueue {cq_name} is inactive"),
            Some(cq_name),
        )));
    }
    // A nil selector selects no namespace; one we cannot evaluate (namespace unread) passes.
    let selected = match (cq.spec.namespace_selector.as_ref(), input.ns_labels) {
        (None, _) => false,
        (Some(sel), Some(labels)) => selects(Some(sel), labels),
        (Some(_), None) => true,
    };
    if !selected {
        return Err(Box::new(fail(
            QueueVerdict::Never,
            "workload namespace doesn't match ClusterQueue selector".into(),
            Some(cq_name),
        )));
    }
    Ok((cq, cq_name))
}

/// Kueue's flavor assignment over the pod sets in order: the quota the earlier pod sets took
/// is assumed for the later ones (`flavorassigner`).
struct Assigner<'i, 'a> {
    input: &'i Input<'a>,
    cq: &'a ClusterQueue,
    covers_pods: bool,
    /// (flavor, resource) → what earlier pod sets took.
    assumed: BTreeMap<(String, String), i128>,
    /// The first quota a pod set waits for.
    shortfall: Option<Shortfall>,
}

/// One pod set's assignment.
struct PodSetFit {
    mode: Mode,
    severity: Option<Severity>,
    reasons: Vec<String>,
    /// resource → flavor.
    chosen: BTreeMap<String, String>,
}

/// One resource group's answer: the best flavor, the least severe reason among those tried,
/// and the first quota it waits for.
struct GroupFit<'a> {
    best: Option<Best<'a>>,
    severity: Option<Severity>,
    short: Option<Shortfall>,
}

impl<'a> Assigner<'_, 'a> {
    fn pod_set(&mut self, ps: &PodSet) -> PodSetFit {
        let mut total: Res = ps
            .per_pod
            .iter()
            .map(|(k, v)| (k.clone(), v.saturating_mul(i128::from(ps.count))))
            .collect();
        if self.covers_pods {
            total.insert("pods".into(), i128::from(ps.count) * 1000);
        }
        total.retain(|_, v| *v != 0);
        let mut fit = PodSetFit {
            mode: Mode::Fit,
            severity: None,
            reasons: Vec::new(),
            chosen: BTreeMap::new(),
        };
        let mut done: Vec<usize> = Vec::new();
        for res in total.keys() {
            let Some(gi) = self
                .cq
                .spec
                .resource_groups
                .iter()
                .position(|g| g.covered_resources.contains(res))
            else {
                fit.reasons
                    .push(format!("resource {res} unavailable in ClusterQueue"));
                fit.mode = Mode::NoFit;
                fit.severity = fit.severity.max(Some(Severity::NoMatchingFlavor));
                continue;
            };
            if done.contains(&gi) {
                continue;
            }
            done.push(gi);
            let cq: &'a ClusterQueue = self.cq;
            let group = &cq.spec.resource_groups[gi];
            let wanted: Vec<(&String, i128)> = total
                .iter()
                .filter(|(r, _)| group.covered_resources.contains(r))
                .map(|(r, v)| (r, *v))
                .collect();
            let g = self.group(ps, group, &wanted, &mut fit.reasons);
            match g.best {
                Some((mode, fname, wanted)) if mode != Mode::NoFit => {
                    for (res, val) in wanted {
                        fit.chosen.insert(res.clone(), fname.to_string());
                        *self
                            .assumed
                            .entry((fname.to_string(), res.clone()))
                            .or_default() += val;
                    }
                    if mode == Mode::Wait {
                        fit.mode = fit.mode.min(Mode::Wait);
                        fit.severity = fit.severity.max(Some(Severity::WaitingForQuota));
                        if self.shortfall.is_none() {
                            self.shortfall = g.short;
                        }
                    }
                }
                _ => {
                    fit.mode = Mode::NoFit;
                    fit.severity = fit
                        .severity
                        .max(g.severity.or(Some(Severity::NoMatchingFlavor)));
                }
            }
        }
        fit
    }

    /// The flavors of one resource group in order, the first that fits ending the search.
    fn group<'g>(
        &self,
        ps: &PodSet,
        group: &'g ResourceGroup,
        wanted: &[(&'g String, i128)],
        reasons: &mut Vec<String>,
    ) -> GroupFit<'g> {
        let mut out = GroupFit {
            best: None,
            severity: None,
            short: None,
        };
        for f in &group.flavors {
            let fname = f.name.as_str();
            let Some(flavor) = self
                .input
                .flavors
                .iter()
                .find(|rf| rf.metadata.name.as_deref() == Some(fname))
            else {
                reasons.push(format!("flavor {fname} not found"));
                out.severity = min_sev(out.severity, Severity::NoMatchingFlavor);
                continue;
            };
            if let Some(why) = flavor_rejects(&ps.spec, flavor, fname) {
                reasons.push(why);
                out.severity = min_sev(out.severity, Severity::NoMatchingFlavor);
                continue;
            }
            let mut mode = Mode::Fit;
            let mut sev = None::<Severity>;
            for (res, val) in wanted {
                let key = (fname.to_string(), (*res).clone());
                let before = self.assumed.get(&key).copied().unwrap_or(0);
                let sum = before + val;
                let (available, potential) = capacity(self.cq, self.input.all_cqs, fname, res);
                if sum > potential {
                    reasons.push(format!(
                        "insufficient quota for {res} in flavor {fname}, previously considered podsets requests ({}) + current podset request ({}) > maximum capacity ({})",
                        fmt_q(res, before),
                        fmt_q(res, *val),
                        fmt_q(res, potential)
                    ));
                    mode = Mode::NoFit;
                    sev = sev.max(Some(Severity::ExceedsMaxQuota));
                } else if sum > available {
                    reasons.push(format!(
                        "insufficient unused quota for {res} in flavor {fname}, {} more needed",
                        fmt_q(res, sum - available)
                    ));
                    mode = mode.min(Mode::Wait);
                    sev = sev.max(Some(Severity::WaitingForQuota));
                    out.short.get_or_insert(Shortfall {
                        resource: (*res).clone(),
                        flavor: fname.to_string(),
                        need: sum,
                        unused: available,
                    });
                }
            }
            if let Some(s) = sev {
                out.severity = min_sev(out.severity, s);
            }
            if out.best.as_ref().is_none_or(|(m, _, _)| mode > *m) {
                out.best = Some((mode, fname, wanted.to_vec()));
            }
            if mode == Mode::Fit {
                break;
            }
        }
        out
    }
}

fn min_sev(have: Option<Severity>, new: Severity) -> Option<Severity> {
    Some(have.map_or(new, |h| h.min(new)))
}

/// What Kueue does to the pods at admission (`podset.Merge`): each replica type's chosen
/// flavors' nodeLabels join its nodeSelector and their tolerations are appended, so the
/// placement model sees the pods as they will be created.
pub fn apply_flavors(job: &mut TFJob, admission: &Admission, flavors: &[ResourceFlavor]) {
    for (key, rs) in job.spec.tf_replica_specs.iter_mut() {
        let Some(chosen) = admission.flavors.get(&key.to_lowercase()) else {
            continue;
        };
        if !POD_SET_ORDER.contains(&key.as_str()) {
            continue;
        }
        let mut names: Vec<&String> = chosen.values().collect();
        names.sort();
        names.dedup();
        let spec = rs.template.spec.get_or_insert_with(Default::default);
        for name in names {
            let Some(f) = flavors
                .iter()
                .find(|f| f.metadata.name.as_deref() == Some(name.as_str()))
            else {
                continue;
            };
            if !f.spec.node_labels.is_empty() {
                let sel = spec.node_selector.get_or_insert_with(Default::default);
                for (k, v) in &f.spec.node_labels {
                    sel.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            if !f.spec.tolerations.is_empty() {
                spec.tolerations
                    .get_or_insert_with(Vec::new)
                    .extend(f.spec.tolerations.iter().cloned());
            }
        }
    }
}

/// The one sentence: "queued in ClusterQueue gpu-cq (LocalQueue team-a): needs 8 nvidia.com/gpu,
/// 3 unused in flavor a100".
pub fn sentence(a: &Admission, local_queue: &str) -> String {
    let cq = a.cluster_queue.as_deref().unwrap_or("?");
    let short = a.shortfall.as_ref().map(|s| {
        format!(
            "needs {} {}, {} unused in flavor {}",
            fmt_q(&s.resource, s.need),
            s.resource,
            fmt_q(&s.resource, s.unused),
            s.flavor
        )
    });
    match a.verdict {
        QueueVerdict::Fits => {
            format!("fits in ClusterQueue {cq} (LocalQueue {local_queue}): admitted now")
        }
        QueueVerdict::Queued => format!(
            "queued in ClusterQueue {cq} (LocalQueue {local_queue}): {}",
            short.unwrap_or_else(|| a.message.clone())
        ),
        QueueVerdict::Never if a.missing.is_some() => a.message.clone(),
        QueueVerdict::Never => format!(
            "never admitted by ClusterQueue {cq} (LocalQueue {local_queue}) as configured: {}",
            a.message
        ),
        QueueVerdict::Unknown => a.message.clone(),
    }
}

#[cfg(test)]
mod tests;
