//! The one reader of training progress from the pods' logs (issue 59): `list -o wide`, `get`
//! and `top` ask it for the replicas they show. `diagnose` and `wait` judge progress from the
//! lines they already hold, through the same parser (`diagnose::progress`).

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use regex::Regex;

use crate::cluster::budget::Budget;
use crate::cluster::{self, Kube};
use crate::diagnose::progress::{self, Progress};

/// Logs read at once.
const PARALLEL: usize = 8;

/// A running replica whose lines are read: the caller's key for it, and where the lines are.
pub struct Trainer<K> {
    pub key: K,
    pub namespace: String,
    pub pod: String,
    pub container: String,
}

/// Whether replicas of this type log steps (workers, chiefs, masters; not a PS).
pub fn logs_steps(replica_type: &str) -> bool {
    progress::logs_steps(&cluster::pod::canonical_replica_type(replica_type))
}

/// Each trainer's progress from its recent lines (`None`: no step in them), read within
/// `budget`, a few at once, in the order given. Best effort (issue 49): a replica whose lines
/// cannot be read in the budget is left out.
pub async fn read<K>(
    kube: &Kube,
    trainers: Vec<Trainer<K>>,
    pattern: Option<&Regex>,
    budget: &Budget,
) -> Vec<(K, Option<Progress>)> {
    futures::stream::iter(trainers.into_iter().map(|t| async move {
        let api: Api<Pod> = Api::namespaced(kube.client.clone(), &t.namespace);
        let log = budget
            .attempt(cluster::bounded::recent_lines(&api, &t.pod, &t.container))
            .await?
            .ok()?;
        Some((t.key, progress::of_log(&log, pattern)))
    }))
    .buffered(PARALLEL)
    .filter_map(|r| async move { r })
    .collect()
    .await
}
