//! Which nodes' pods the verdict needs, pure (issue 63). Reading every bound pod of a large
//! cluster costs the API server most of a `check` (it encodes each one), yet only the pods on
//! nodes where some pod of the job could ever go can change the verdict: on the others the job's
//! pods are refused even when the node is empty, by a filter that does not depend on what runs
//! there (taints, affinity, capacity). [`super::collect`] reads the nodes first, asks
//! [`candidates`] which ones matter and in what order, reads their pods in [`batches`], and
//! stops as soon as [`fits_on_read`] finds a placement for the whole job: "not now" and
//! "never" still read every candidate.
//!
//! kube-scheduler itself stops early on large clusters: it looks for feasible nodes only until
//! it has `numFeasibleNodesToFind` of them (at least `minFeasibleNodesToFind` = 100,
//! kubernetes `pkg/scheduler/schedule_one.go`), so the node a pod lands on there is not the
//! best over the whole cluster either. Below 100 candidates every one is read at once, so small
//! clusters get the same placement, node for node, as with a full read.

use super::filters::{Res, node_reject_reason};
use super::pods::JobPod;
use super::verdict::demand_key;
use super::{ClusterState, NodeInfo, Verdict, place};

/// kube-scheduler's `minFeasibleNodesToFind`: the first batch, so a cluster with fewer
/// candidates reads them all in one go.
pub const FIRST_BATCH: usize = 100;

/// The nodes (indices into `nodes`) where at least one of `pods` passes every filter when the
/// node is empty, ordered so that a placement is found early: the nodes that can hold the most
/// demanding pod first (a GPU worker before a CPU-only parameter server), then the list order.
pub fn candidates(nodes: &[NodeInfo], pods: &[JobPod]) -> Vec<usize> {
    // One pod per distinct shape, most demanding first: replicas of a type share a spec.
    let mut shapes: Vec<&JobPod> = vec![];
    for p in pods {
        if !shapes.iter().any(|s| s.replica_type == p.replica_type) {
            shapes.push(p);
        }
    }
    shapes.sort_by_key(|p| std::cmp::Reverse(demand_key(p)));
    let empty = Res::new();
    let mut ranked: Vec<(usize, usize)> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            shapes
                .iter()
                .position(|p| node_reject_reason(&p.spec, &p.requests, n, &empty, 0).is_none())
                .map(|rank| (rank, i))
        })
        .collect();
    ranked.sort();
    ranked.into_iter().map(|(_, i)| i).collect()
}

/// The sizes of the successive reads of `n` candidates: [`FIRST_BATCH`], then doubling, so a
/// job that does not fit costs a handful of model runs, not one per node.
pub fn batches(n: usize) -> Vec<usize> {
    let mut out = vec![];
    let (mut done, mut next) = (0, FIRST_BATCH);
    while done < n {
        let size = next.min(n - done);
        out.push(size);
        done += size;
        next = next.saturating_mul(2);
    }
    out
}

/// Whether the whole job can be bound now on the nodes whose pods were read (`snapshot.unread`
/// left out): the point where reading more cannot change a `fits`.
pub fn fits_on_read(snapshot: &ClusterState, pods: &[JobPod]) -> bool {
    place(snapshot, pods).verdict == Verdict::Fits
}
