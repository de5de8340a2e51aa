//! Quota and flavor assignment, pure: what Kueue's scheduler decides for one Workload
//! against one ClusterQueue given what is reserved now.
//!
//! - Quota tree (`pkg/cache/scheduler/resource_node.go`): a ClusterQueue's guaranteed quota is
//!   `nominal - lendingLimit` (0 without a lendingLimit); a cohort holds the rest of every
//!   member's nominal quota and the usage past the members' guaranteed quota. `available` and
//!   `potentialAvailable` follow that file, borrowingLimit included.
//! - Flavors (`pkg/scheduler/flavorassigner/flavorassigner.go`): pod sets in order, each
//!   resource group's flavors in the listed order, every requested resource of the group
//!   checked per flavor; the first flavor that fits is taken, else the best (needs preemption
//!   over no fit) and every tried flavor's reason is kept. A pod set that only needs
//!   preemption keeps its flavor and later pod sets count its request; one with no fit ends
//!   the assignment. `Assignment.Message` joins the reasons sorted, per pod set.

use std::collections::BTreeMap;

use serde_json::Value;

use super::podsets::{Res, quantity};
use crate::util::value_quantity_milli;

/// One resource's quota in one flavor of a ClusterQueue (milli-units).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Quota {
    /// `nominalQuota`.
    pub nominal: i128,
    /// `borrowingLimit` (None: unlimited within the cohort).
    pub borrowing_limit: Option<i128>,
    /// `lendingLimit` (None: all unused nominal quota may be lent).
    pub lending_limit: Option<i128>,
}

/// One `resourceGroups[]` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    /// `coveredResources`.
    pub covered: Vec<String>,
    /// `flavors[]` in order: name and per-resource quota.
    pub flavors: Vec<(String, BTreeMap<String, Quota>)>,
}

/// The parts of a ClusterQueue admission reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterQueue {
    /// Name.
    pub name: String,
    /// `cohortName` (`cohort` in v1beta1).
    pub cohort: Option<String>,
    /// `resourceGroups`.
    pub groups: Vec<Group>,
}

impl ClusterQueue {
    /// Reads a stored ClusterQueue object.
    pub fn from_object(cq: &Value) -> Self {
        let q = |v: &Value| value_quantity_milli(v);
        let groups = cq["spec"]["resourceGroups"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| Group {
                covered: strings(&g["coveredResources"]),
                flavors: g["flavors"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|f| {
                        let rs = f["resources"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|r| {
                                (
                                    r["name"].as_str().unwrap_or("").to_string(),
                                    Quota {
                                        nominal: q(&r["nominalQuota"]).unwrap_or(0),
                                        borrowing_limit: q(&r["borrowingLimit"]),
                                        lending_limit: q(&r["lendingLimit"]),
                                    },
                                )
                            })
                            .collect();
                        (f["name"].as_str().unwrap_or("").to_string(), rs)
                    })
                    .collect(),
            })
            .collect();
        ClusterQueue {
            name: cq["metadata"]["name"].as_str().unwrap_or("").to_string(),
            cohort: cq["spec"]["cohortName"]
                .as_str()
                .filter(|c| !c.is_empty())
                .map(String::from),
            groups,
        }
    }

    fn quota(&self, flavor: &str, res: &str) -> Quota {
        self.groups
            .iter()
            .flat_map(|g| g.flavors.iter())
            .find(|(f, _)| f == flavor)
            .and_then(|(_, rs)| rs.get(res).cloned())
            .unwrap_or_default()
    }

    /// Every (flavor, resource) the queue lists, in spec order.
    pub fn flavor_resources(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for g in &self.groups {
            for (f, _) in &g.flavors {
                let mut rs = g.covered.clone();
                rs.sort();
                for r in rs {
                    out.push((f.clone(), r));
                }
            }
        }
        out
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(String::from))
        .collect()
}

fn guaranteed(q: &Quota) -> i128 {
    q.lending_limit.map(|l| (q.nominal - l).max(0)).unwrap_or(0)
}

/// (ClusterQueue, flavor, resource) → quota reserved now (milli-units).
pub type Usage = BTreeMap<(String, String, String), i128>;

/// Every ClusterQueue and what is reserved in each.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// By name.
    pub queues: BTreeMap<String, ClusterQueue>,
    /// Reserved quota.
    pub usage: Usage,
}

impl Snapshot {
    fn used(&self, cq: &str, f: &str, r: &str) -> i128 {
        self.usage
            .get(&(cq.to_string(), f.to_string(), r.to_string()))
            .copied()
            .unwrap_or(0)
    }

    fn members(&self, cohort: &str) -> impl Iterator<Item = &ClusterQueue> {
        self.queues
            .values()
            .filter(move |q| q.cohort.as_deref() == Some(cohort))
    }

    /// The cohort's (subtree quota, usage) for a flavor/resource: what members lend, and
    /// what they use past their guaranteed quota (`accumulateFromChild`).
    fn cohort_node(&self, cohort: &str, f: &str, r: &str) -> (i128, i128) {
        self.members(cohort).fold((0, 0), |(sq, u), m| {
            let q = m.quota(f, r);
            let g = guaranteed(&q);
            (
                sq + q.nominal - g,
                u + (self.used(&m.name, f, r) - g).max(0),
            )
        })
    }

    /// `available`: what the queue can still take in this flavor/resource.
    pub fn available(&self, cq: &ClusterQueue, f: &str, r: &str) -> i128 {
        let q = cq.quota(f, r);
        let used = self.used(&cq.name, f, r);
        let Some(cohort) = &cq.cohort else {
            return q.nominal - used;
        };
        let g = guaranteed(&q);
        let (sq, cu) = self.cohort_node(cohort, f, r);
        let mut parent = sq - cu;
        if let Some(bl) = q.borrowing_limit {
            let stored = q.nominal - g;
            let used_in_parent = (used - g).max(0);
            parent = parent.min(stored - used_in_parent + bl);
        }
        (g - used).max(0) + parent
    }

    /// `potentialAvailable`: the most the queue could ever get (no usage anywhere).
    pub fn potential(&self, cq: &ClusterQueue, f: &str, r: &str) -> i128 {
        let q = cq.quota(f, r);
        let Some(cohort) = &cq.cohort else {
            return q.nominal;
        };
        let (sq, _) = self.cohort_node(cohort, f, r);
        let mut a = guaranteed(&q) + sq;
        if let Some(bl) = q.borrowing_limit {
            a = a.min(q.nominal + bl);
        }
        a
    }

    /// Reserves an admitted assignment.
    pub fn add(&mut self, cq: &str, a: &Assignment) {
        for ps in &a.pod_sets {
            for (r, v) in &ps.usage {
                if let Some(f) = ps.flavors.get(r) {
                    *self
                        .usage
                        .entry((cq.to_string(), f.clone(), r.clone()))
                        .or_default() += v;
                }
            }
        }
    }

    /// Quota borrowed from the cohort: usage past nominal.
    pub fn borrowed(&self, cq: &ClusterQueue, f: &str, r: &str) -> i128 {
        if cq.cohort.is_none() {
            return 0;
        }
        (self.used(&cq.name, f, r) - cq.quota(f, r).nominal).max(0)
    }
}

/// How well a pod set (or flavor) fits, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// Can never fit as configured (or no flavor matches).
    NoFit,
    /// Fits the maximum capacity but not what is unused now.
    Preempt,
    /// Fits now.
    Fit,
}

/// A pod set as admission sees it.
#[derive(Debug, Clone, Default)]
pub struct PodSetRequest {
    /// Pod set name.
    pub name: String,
    /// Pods.
    pub count: i64,
    /// Total requests (milli-units), `pods` included when the queue covers it.
    pub requests: Res,
    /// The template's tolerations.
    pub tolerations: Vec<Value>,
    /// The template's nodeSelector.
    pub node_selector: BTreeMap<String, String>,
}

/// The outcome for one pod set.
#[derive(Debug, Clone, Default)]
pub struct PodSetAssignment {
    /// Pod set name.
    pub name: String,
    /// Pods.
    pub count: i64,
    /// resource → chosen flavor.
    pub flavors: BTreeMap<String, String>,
    /// resource → total (milli-units).
    pub usage: Res,
    /// Reasons from every flavor tried, when it does not fit.
    pub reasons: Vec<String>,
    /// Worst mode over its resource groups.
    pub mode: Option<Mode>,
    /// True when a reason is about maximum capacity (never fits as configured).
    pub over_max: bool,
}

/// The flavor assignment of a whole Workload.
#[derive(Debug, Clone, Default)]
pub struct Assignment {
    /// Per pod set, in order (stops after a pod set with no fit).
    pub pod_sets: Vec<PodSetAssignment>,
}

impl Assignment {
    /// True when every pod set fits now.
    pub fn fits(&self) -> bool {
        !self.pod_sets.is_empty() && self.pod_sets.iter().all(|p| p.mode == Some(Mode::Fit))
    }
    /// The worst mode.
    pub fn mode(&self) -> Mode {
        self.pod_sets
            .iter()
            .filter_map(|p| p.mode)
            .min()
            .unwrap_or(Mode::NoFit)
    }
    /// `Assignment.Message`.
    pub fn message(&self) -> String {
        self.pod_sets
            .iter()
            .filter(|p| p.mode != Some(Mode::Fit))
            .map(|p| {
                let mut rs = p.reasons.clone();
                rs.sort();
                format!(
                    "couldn't assign flavors to pod set {}: {}",
                    p.name,
                    rs.join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
    /// The granular reason (gate `UnadmittedWorkloadsObservability`): never as configured,
    /// no flavor matches at all, or waiting for quota to free.
    pub fn granular_reason(&self) -> &'static str {
        match self.mode() {
            Mode::NoFit if self.pod_sets.iter().any(|p| p.over_max) => "ExceedsMaxQuota",
            Mode::NoFit => "NoMatchingFlavor",
            _ => "WaitingForQuota",
        }
    }
}

fn taint_text(t: &Value) -> String {
    let (k, v, e) = (
        t["key"].as_str().unwrap_or(""),
        t["value"].as_str().unwrap_or(""),
        t["effect"].as_str().unwrap_or(""),
    );
    // corev1.Taint.ToString: key=value:effect, "=value" left out when empty.
    if v.is_empty() {
        format!("{k}:{e}")
    } else {
        format!("{k}={v}:{e}")
    }
}

fn tolerated(tols: &[Value], t: &Value) -> bool {
    tols.iter().any(|tol| {
        let eff = tol["effect"].as_str().unwrap_or("");
        if !eff.is_empty() && eff != t["effect"].as_str().unwrap_or("") {
            return false;
        }
        let key = tol["key"].as_str().unwrap_or("");
        if !key.is_empty() && key != t["key"].as_str().unwrap_or("") {
            return false;
        }
        match tol["operator"].as_str().unwrap_or("Equal") {
            "Exists" => true,
            _ => tol["value"].as_str().unwrap_or("") == t["value"].as_str().unwrap_or(""),
        }
    })
}

/// Assigns flavors to every pod set of a Workload in `cq`. `flavors` are the stored
/// ResourceFlavor specs by name (a missing one is "flavor X not found").
pub fn assign(
    snap: &Snapshot,
    cq: &ClusterQueue,
    pod_sets: &[PodSetRequest],
    flavors: &BTreeMap<String, Value>,
) -> Assignment {
    let mut out = Assignment::default();
    // Requests of earlier pod sets of this workload, per (flavor, resource).
    let mut earlier: BTreeMap<(String, String), i128> = BTreeMap::new();
    for ps in pod_sets {
        let mut psa = PodSetAssignment {
            name: ps.name.clone(),
            count: ps.count,
            usage: ps.requests.clone(),
            mode: Some(Mode::Fit),
            ..Default::default()
        };
        let wanted: Vec<&String> = ps
            .requests
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, _)| k)
            .collect();
        for r in &wanted {
            if !cq.groups.iter().any(|g| g.covered.contains(r)) {
                psa.reasons
                    .push(format!("resource {r} unavailable in ClusterQueue"));
                psa.mode = Some(Mode::NoFit);
            }
        }
        if psa.mode == Some(Mode::Fit) {
            for g in &cq.groups {
                let rs: Vec<&String> = wanted
                    .iter()
                    .copied()
                    .filter(|r| g.covered.contains(r))
                    .collect();
                if rs.is_empty() {
                    continue;
                }
                let mut best: Option<(Mode, &str)> = None;
                for (f, _) in &g.flavors {
                    let Some(spec) = flavors.get(f) else {
                        psa.reasons.push(format!("flavor {f} not found"));
                        best = best.or(Some((Mode::NoFit, f)));
                        continue;
                    };
                    if let Some(t) = spec["nodeTaints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|t| !tolerated(&ps.tolerations, t))
                    {
                        psa.reasons
                            .push(format!("untolerated taint {} in flavor {f}", taint_text(t)));
                        best = best.or(Some((Mode::NoFit, f)));
                        continue;
                    }
                    let clash = spec["nodeLabels"].as_object().is_some_and(|ls| {
                        ls.iter().any(|(k, v)| {
                            ps.node_selector
                                .get(k)
                                .is_some_and(|want| Some(want.as_str()) != v.as_str())
                        })
                    });
                    if clash {
                        psa.reasons
                            .push(format!("flavor {f} doesn't match node affinity"));
                        best = best.or(Some((Mode::NoFit, f)));
                        continue;
                    }
                    let mut mode = Mode::Fit;
                    for r in &rs {
                        let prev = earlier
                            .get(&(f.clone(), (*r).clone()))
                            .copied()
                            .unwrap_or(0);
                        let cur = ps.requests[*r];
                        let val = prev + cur;
                        let max = snap.potential(cq, f, r);
                        let avail = snap.available(cq, f, r);
                        if val > max {
                            psa.reasons.push(format!(
                                "insufficient quota for {r} in flavor {f}, previously considered podsets requests ({}) + current podset request ({}) > maximum capacity ({})",
                                quantity(r, prev),
                                quantity(r, cur),
                                quantity(r, max)
                            ));
                            psa.over_max = true;
                            mode = Mode::NoFit;
                        } else if val > avail {
                            psa.reasons.push(format!(
                                "insufficient unused quota for {r} in flavor {f}, {} more needed",
                                quantity(r, val - avail)
                            ));
                            mode = mode.min(Mode::Preempt);
                        }
                    }
                    if mode == Mode::Fit {
                        best = Some((Mode::Fit, f));
                        break;
                    }
                    if best.is_none_or(|(m, _)| mode > m) {
                        best = Some((mode, f));
                    }
                }
                let (mode, f) = best.unwrap_or((Mode::NoFit, ""));
                if mode != Mode::NoFit {
                    for r in &rs {
                        psa.flavors.insert((*r).clone(), f.to_string());
                        *earlier.entry((f.to_string(), (*r).clone())).or_default() +=
                            ps.requests[*r];
                    }
                }
                psa.mode = psa.mode.min(Some(mode));
                if mode == Mode::Fit {
                    // A flavor that fits says nothing about the flavors tried before it.
                    continue;
                }
            }
        }
        if psa.mode == Some(Mode::Fit) {
            psa.reasons.clear();
        }
        let stop = psa.mode == Some(Mode::NoFit);
        out.pod_sets.push(psa);
        if stop {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests;
