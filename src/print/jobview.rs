//! Pure view logic of the day-two commands (`logs`, `list`, `get`, `delete`): replica labels,
//! table rows and the kubectl-style formatting of their cells. No I/O here,
//! so every rule is unit-tested without a cluster; the tables themselves are printed by
//! `print::tables`.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;

use crate::cluster::pod::{Pod, PodFacts};
use crate::cluster::podtable::PodRow;
use crate::model::{self, ReplicaType, TFJob};
use crate::operator_pods;

// ---------------------------------------------------------------------------------------------
// Replicas

/// `worker-1` for the pod of replica 1 of type Worker, from the operator's labels; the pod name
/// when the labels are missing.
pub fn replica_label(pod: &Pod) -> String {
    match (pod.replica_type(), pod.replica_index()) {
        (Some(t), Some(i)) => format!("{}-{i}", t.to_lowercase()),
        _ => pod.pod_name().to_string(),
    }
}

/// Sort key of a replica label: type in the operator's order (Chief, Master, PS, Worker,
/// Evaluator), then numeric index.
pub fn replica_order(label: &str) -> (u8, String, u64) {
    let (t, i) = label.rsplit_once('-').unwrap_or((label, ""));
    let rank = ReplicaType::from_any_case(t).map_or(u8::MAX, |r| r as u8);
    (rank, t.to_string(), i.parse().unwrap_or(u64::MAX))
}

/// Whether a pod is selected by `--replica-type` / `--index`.
pub fn selected(pod: &Pod, replica_type: Option<&str>, index: Option<u32>) -> bool {
    let labels = pod.metadata.labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
    if let Some(t) = replica_type
        && !get(model::LABEL_REPLICA_TYPE).is_some_and(|v| v.eq_ignore_ascii_case(t))
    {
        return false;
    }
    if let Some(i) = index
        && get(model::LABEL_REPLICA_INDEX) != Some(i.to_string().as_str())
    {
        return false;
    }
    true
}

/// How many pods `--replica-type`/`--index` select out of the job's spec.
pub fn expected_replicas(job: &TFJob, replica_type: Option<&str>, index: Option<u32>) -> usize {
    let mut n = 0usize;
    for r in &operator_pods::expand(job).replicas {
        if replica_type.is_some_and(|t| !t.eq_ignore_ascii_case(r.key)) {
            continue;
        }
        let count = r.count.min(model::MAX_LISTED_PODS_PER_TYPE);
        n += match index {
            Some(i) => usize::from(i64::from(i) < i64::from(count)),
            None => count as usize,
        };
    }
    n
}

// ---------------------------------------------------------------------------------------------
// Log lines

const COLOURS: [&str; 6] = ["32", "33", "34", "35", "36", "31"];

/// The prefix of a log line: `[worker-1] `, coloured (ANSI, by `slot`) only for a terminal.
pub fn log_prefix(label: &str, slot: usize, colour: bool) -> String {
    if colour {
        format!("\x1b[{}m[{label}]\x1b[0m ", COLOURS[slot % COLOURS.len()])
    } else {
        format!("[{label}] ")
    }
}

// ---------------------------------------------------------------------------------------------
// Times

// The formatter itself lives in `duration`, with every other duration the plugin prints.
pub use crate::model::duration::human as human_duration;

/// Age of a timestamp as kubectl prints it, `<unknown>` when absent.
pub fn age(ts: Option<Timestamp>, now: Timestamp) -> String {
    match ts {
        Some(t) => human_duration(now.duration_since(t)),
        None => "<unknown>".into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Tables

/// Requested `nvidia.com/gpu` of a job: replicas × the limit (else request) of each container.
pub fn gpus(job: &TFJob) -> i64 {
    let mut total = 0i64;
    for r in &operator_pods::expand(job).replicas {
        let per_pod: i64 = r
            .spec
            .template
            .spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .filter_map(|c| {
                let r = c.resources.as_ref()?;
                let q = r
                    .limits
                    .as_ref()
                    .and_then(|l| l.get("nvidia.com/gpu"))
                    .or_else(|| r.requests.as_ref()?.get("nvidia.com/gpu"))?;
                q.0.parse::<i64>().ok()
            })
            .sum();
        total += per_pod * i64::from(r.count);
    }
    total
}

/// The job's replicas in the operator's role order ([`replica_order`]).
fn in_role_order<'a>(pods: &'a operator_pods::OperatorJob) -> Vec<&'a operator_pods::Replica<'a>> {
    let mut replicas: Vec<_> = pods.replicas.iter().collect();
    replicas.sort_by_key(|r| replica_order(&format!("{}-0", r.key)));
    replicas
}

/// `PS 1/1 Worker 2/3`: running (as `kubectl get pods` shows Running) over desired, per role in
/// the operator's order.
pub fn role_counts(job: &TFJob, running: &BTreeMap<String, i32>) -> String {
    let pods = operator_pods::expand(job);
    let mut parts = Vec::new();
    for r in in_role_order(&pods) {
        let n = running.get(&r.lower).copied().unwrap_or(0);
        parts.push(format!("{} {n}/{}", r.type_name, r.count));
    }
    parts.join(" ")
}

/// A finished job's outcome per role, from the operator's `status.replicaStatuses`: its pods are
/// Completed (or deleted by cleanPodPolicy), so running/desired would read `Worker 0/2` for a job
/// that succeeded. `Worker 2/2 succeeded`, `Worker 1/2 failed`; a role with neither count (a PS
/// the operator stopped when the workers finished) is `PS stopped`.
pub fn role_outcomes(job: &TFJob) -> String {
    let statuses = job.status.as_ref().map(|s| &s.replica_statuses);
    let pods = operator_pods::expand(job);
    let mut parts = Vec::new();
    for r in in_role_order(&pods) {
        let (k, name, desired) = (r.key, &r.type_name, r.count);
        let st = statuses.and_then(|m| {
            m.get(k).or_else(|| {
                m.iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(k))
                    .map(|(_, v)| v)
            })
        });
        let failed = st.and_then(|s| s.failed).unwrap_or(0);
        let succeeded = st.and_then(|s| s.succeeded).unwrap_or(0);
        parts.push(if failed > 0 {
            format!("{name} {failed}/{desired} failed")
        } else if succeeded > 0 {
            format!("{name} {succeeded}/{desired} succeeded")
        } else {
            format!("{name} stopped")
        });
    }
    parts.join(" ")
}

/// RESTARTS of a job: the sum of its pods' container restarts (kubectl's RESTARTS cell starts
/// with the count, `2 (5s ago)`), marked `(CrashLoopBackOff)` when a pod is in back-off, so a
/// worker restarting for hours does not look healthy.
pub fn restarts(pods: &[&PodRow]) -> String {
    let total: u64 = pods.iter().map(|p| u64::from(restart_count(p))).sum();
    if pods.iter().any(|p| p.status == "CrashLoopBackOff") {
        format!("{total} (CrashLoopBackOff)")
    } else {
        total.to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// list rows

/// One line of `list`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobRow {
    pub namespace: String,
    pub name: String,
    /// The last condition type, as the CRD's State column.
    pub state: String,
    pub age: String,
    /// startTime to completionTime (or now); `-` before the operator started it.
    pub duration: String,
    /// `PS 1/1 Worker 2/3`; a finished job's outcome per role ([`role_outcomes`]).
    pub replicas: String,
    /// [`restarts`].
    pub restarts: String,
    pub gpus: i64,
    /// Distinct nodes of its pods (wide).
    pub nodes: String,
    /// Where its first running worker is (wide): `Worker-0 step 620/5,000`, or `-`.
    pub progress: String,
    /// The first replica not Running/Completed, with kubectl's STATUS (wide).
    pub reason: String,
}

/// The row's REASON when it is a problem, not a stage every pod passes through (Pending,
/// ContainerCreating, `Init:0/1`, …): `Worker-0: CrashLoopBackOff`.
pub fn problem(row: &JobRow) -> Option<&str> {
    const PASSING: [&str; 5] = [
        "<none>",
        "Pending",
        "ContainerCreating",
        "PodInitializing",
        "Running",
    ];
    let status = row
        .reason
        .split_once(": ")
        .map_or(row.reason.as_str(), |(_, s)| s);
    // A pod deleted while its job runs (a lost node, a drain) is a replica gone; after the job
    // ends it is the operator's cleanPodPolicy at work.
    let finished = matches!(row.state.as_str(), "Succeeded" | "Failed");
    (!row.reason.is_empty()
        && !PASSING.contains(&status)
        && (!finished || status != "Terminating")
        && !status
            .strip_prefix("Init:")
            .is_some_and(|n| n.contains('/')))
    .then_some(row.reason.as_str())
}

fn time_of(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> Option<Timestamp> {
    t.map(|t| t.0)
}

/// The count kubectl's RESTARTS cell starts with (`2 (5s ago)`); 0 when it is not a number.
fn restart_count(p: &PodRow) -> u32 {
    p.restarts
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Seconds since the last restart, from kubectl's RESTARTS cell (`4 (2m30s ago)`, written by
/// apimachinery's `duration.HumanDuration`: units y, d, h, m, s).
fn restarted_ago(cell: &str) -> Option<i64> {
    let ago = cell.split_once('(')?.1.strip_suffix(" ago)")?;
    let (mut total, mut n, mut any) = (0i64, 0i64, false);
    for c in ago.chars() {
        if let Some(d) = c.to_digit(10) {
            n = n.checked_mul(10)?.checked_add(i64::from(d))?;
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'y' => 365 * 86_400,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(unit)?)?;
        (n, any) = (0, true);
    }
    any.then_some(total)
}

/// Builds the row of `job` from its pods' Table rows.
pub fn job_row(job: &TFJob, pods: &[&PodRow], now: Timestamp) -> JobRow {
    let mut running: BTreeMap<String, i32> = BTreeMap::new();
    let mut nodes: Vec<String> = Vec::new();
    let mut stuck: Vec<(String, String)> = Vec::new();
    for p in pods {
        let rtype = p
            .labels
            .get(model::LABEL_REPLICA_TYPE)
            .map(|t| t.to_lowercase())
            .unwrap_or_default();
        // A replica restarting over and over runs only between two back-offs: judged by its
        // restarts, as diagnose, wait and probe judge a crash loop, not by the moment sampled.
        let restarts = restart_count(p);
        let recovered = p.status == "Running"
            && restarted_ago(&p.restarts)
                .is_some_and(|s| s > crate::diagnose::failure::BACKOFF_RESET_SECS);
        let looping = restarts >= crate::diagnose::DEFAULT_MAX_RESTARTS
            && p.status != "Completed"
            && !recovered;
        if p.status == "Running" && !looping {
            *running.entry(rtype.clone()).or_default() += 1;
        } else if p.status != "Completed" {
            let idx = p
                .labels
                .get(model::LABEL_REPLICA_INDEX)
                .cloned()
                .unwrap_or_default();
            // Named as diagnose, wait and PROGRESS name it (`Worker-1`), in the same row.
            let label = format!(
                "{}-{idx}",
                crate::cluster::pod::canonical_replica_type(&rtype)
            );
            // kubectl's word where it already says so; where the moment hides it, the loop.
            let status = if looping && p.status != "CrashLoopBackOff" {
                format!("CrashLoop ({restarts} restarts, now {})", p.status)
            } else {
                p.status.clone()
            };
            stuck.push((label, status));
        }
        if !p.node.is_empty() && p.node != "<none>" && !nodes.contains(&p.node) {
            nodes.push(p.node.clone());
        }
    }
    nodes.sort();
    stuck.sort_by_key(|(l, _)| replica_order(l));
    let status = job.status.as_ref();
    let start = time_of(status.and_then(|s| s.start_time.as_ref()));
    let end = time_of(status.and_then(|s| s.completion_time.as_ref())).unwrap_or(now);
    JobRow {
        namespace: job.metadata.namespace.clone().unwrap_or_default(),
        name: job.metadata.name.clone().unwrap_or_default(),
        state: crate::cluster::queue::list_state(job).unwrap_or_else(|| {
            job.last_condition()
                .map(|c| c.type_.clone())
                .unwrap_or_default()
        }),
        age: age(time_of(job.metadata.creation_timestamp.as_ref()), now),
        duration: start.map_or_else(|| "-".into(), |s| human_duration(end.duration_since(s))),
        replicas: if job.is_finished() {
            role_outcomes(job)
        } else {
            role_counts(job, &running)
        },
        restarts: restarts(pods),
        gpus: gpus(job),
        nodes: if nodes.is_empty() {
            "<none>".into()
        } else {
            nodes.join(",")
        },
        progress: "-".into(),
        reason: stuck
            .first()
            .map(|(l, r)| format!("{l}: {r}"))
            .unwrap_or_else(|| "<none>".into()),
    }
}

// ---------------------------------------------------------------------------------------------
// get

/// Everything `get` shows, fetched by `ops::get` and printed by `print::tables::get`.
pub struct GetView<'a> {
    pub job: &'a TFJob,
    /// The job's row of `list`, with its reasons ([`job_row`] and the callers' marks).
    pub row: JobRow,
    /// Where each running worker is (`Worker-0`, `step 120/1,000 …`), read from its lines.
    pub progress: Vec<(String, String)>,
    pub pods: &'a [PodRow],
    /// (name, cluster IP, ports).
    pub services: Vec<(String, String, String)>,
    pub events: Vec<k8s_openapi::api::core::v1::Event>,
    pub max_events: usize,
    pub now: Timestamp,
}

pub fn event_time(e: &k8s_openapi::api::core::v1::Event) -> Option<Timestamp> {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
}

/// The Secret-backed env of each role: `NAME ← secret S key K` (never a value), plus `envFrom`
/// Secrets. Literal env values are not shown at all.
pub fn gateway_env(job: &TFJob) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut keys: Vec<&String> = job.spec.tf_replica_specs.keys().collect();
    keys.sort_by_key(|k| replica_order(&format!("{k}-0")));
    for k in keys {
        let spec = &job.spec.tf_replica_specs[k];
        let mut lines = Vec::new();
        for c in spec.template.spec.iter().flat_map(|s| s.containers.iter()) {
            for e in c.env.iter().flatten() {
                if let Some(r) = e
                    .value_from
                    .as_ref()
                    .and_then(|v| v.secret_key_ref.as_ref())
                {
                    lines.push(format!(
                        "{}: {} <- secret {} key {}",
                        c.name, e.name, r.name, r.key
                    ));
                }
            }
            for f in c.env_from.iter().flatten() {
                if let Some(s) = &f.secret_ref {
                    lines.push(format!(
                        "{}: every key of secret {}{}",
                        c.name,
                        s.name,
                        f.prefix
                            .as_deref()
                            .map(|p| format!(" (prefix {p})"))
                            .unwrap_or_default()
                    ));
                }
            }
        }
        out.push((k.clone(), lines));
    }
    out
}

/// TF_CONFIG's `cluster` in short, from the operator's pods ([`operator_pods`]): per replica
/// type, its count and first address; only set when the job is distributed.
pub fn tf_config_shape(job: &TFJob) -> String {
    let model = operator_pods::expand(job);
    if !model.distributed {
        return "not set (a single replica; the operator sets TF_CONFIG only for distributed jobs)"
            .into();
    }
    let mut parts = Vec::new();
    for r in in_role_order(&model) {
        let n = r.count;
        parts.push(format!(
            "{}: {n} ({}{})",
            r.lower,
            model.address(r, 0),
            if n > 1 { ", …" } else { "" }
        ));
    }
    format!("cluster {{ {} }}", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::SignedDuration;

    /// A replica past the restart threshold is a crash loop in REASON whatever STATUS the
    /// moment shows, until it has run past the kubelet's back-off reset (10 minutes): then
    /// the kubelet recovered it, as `diagnose`, `probe` and `wait` judge it.
    #[test]
    fn a_crash_loop_is_named_until_the_kubelet_has_recovered_it() {
        let job: TFJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "j", "namespace": "ns"},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
                "containers": [{"name": "tensorflow", "image": "i"}]}}}}}}))
        .unwrap();
        let row = |status: &str, restarts: &str| {
            let p = PodRow {
                namespace: "ns".into(),
                name: "j-worker-0".into(),
                labels: [
                    (model::LABEL_REPLICA_TYPE.to_string(), "worker".to_string()),
                    (model::LABEL_REPLICA_INDEX.to_string(), "0".to_string()),
                ]
                .into(),
                status: status.into(),
                restarts: restarts.into(),
                ..Default::default()
            };
            job_row(&job, &[&p], Timestamp::now()).reason
        };
        assert_eq!(
            row("Running", "4 (2m10s ago)"),
            "Worker-0: CrashLoop (4 restarts, now Running)"
        );
        assert_eq!(
            row("Error", "4 (3h ago)"),
            "Worker-0: CrashLoop (4 restarts, now Error)"
        );
        assert_eq!(row("Running", "4 (12m ago)"), "<none>");
        assert_eq!(row("Running", "2 (5s ago)"), "<none>");
        assert_eq!(restarted_ago("4 (1d2h ago)"), Some(93_600));
        assert_eq!(restarted_ago("0"), None);
    }

    #[test]
    fn durations_read_like_kubectl() {
        let d = SignedDuration::from_secs;
        assert_eq!(human_duration(d(45)), "45s");
        assert_eq!(human_duration(d(200)), "3m20s");
        assert_eq!(human_duration(d(3600 * 5)), "5h");
        assert_eq!(human_duration(d(3600 * 51)), "2d3h");
        assert_eq!(human_duration(d(86400 * 40)), "40d");
    }

    #[test]
    fn prefixes_are_plain_unless_on_a_terminal() {
        assert_eq!(log_prefix("worker-1", 0, false), "[worker-1] ");
        assert!(log_prefix("worker-1", 0, true).starts_with("\x1b[32m[worker-1]"));
        assert!(replica_order("ps-0") < replica_order("worker-0"));
        assert!(replica_order("worker-2") < replica_order("worker-10"));
    }
}
