//! `list`: TFJobs as a kubectl-style table (or any of kubectl's printers, [`crate::print`]),
//! from exactly two requests —
//! one list of TFJobs and one Table list of their pods by label — whatever the number of jobs
//! and replicas. `watch` then prints a row per change of a job (one pod Table list of that job
//! per change).

use std::collections::HashMap;
use std::io::Write;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::core::DynamicObject;

use super::Context;
use crate::cluster::podtable::{self, PodRow};
use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::output::Output;
use crate::print::jobview::{self, JobRow};
use crate::print::{self, Format, TableFlags};

/// What to list.
#[derive(Debug, Clone)]
pub struct ListOptions {
    /// Every namespace (adds NAMESPACE); the `namespace` argument is then ignored.
    pub all_namespaces: bool,
    /// Label selector on the TFJobs.
    pub selector: Option<String>,
    pub format: Format,
    /// `--no-headers`, `--show-labels`, `-L`.
    pub table: TableFlags,
    /// `--sort-by` (a relaxed JSONPath).
    pub sort_by: Option<String>,
    /// After the list, print a row per change until interrupted.
    pub watch: bool,
    /// Only these jobs (`list a b`, as `kubectl get tfjobs a b`); empty: every job.
    pub names: Vec<String>,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            all_namespaces: false,
            selector: None,
            format: Format::Default,
            table: TableFlags::default(),
            sort_by: None,
            watch: false,
            names: Vec::new(),
        }
    }
}

/// The qualified kind `-o name` prints.
pub const QUALIFIED_KIND: &str = "tfjob.kubeflow.org";

fn sort_jobs(jobs: &mut [DynamicObject]) {
    // kubectl prints the server's order, which is etcd's key order: namespace, then name.
    jobs.sort_by_key(|j| (j.namespace(), j.name_any()));
}

/// One job as the API returned it, every field kept (the typed [`TFJob`] would drop fields this
/// tool does not model). List items may come without apiVersion/kind; kubectl prints them with.
fn raw(job: &DynamicObject) -> serde_json::Value {
    let mut v = serde_json::to_value(job).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.entry("apiVersion").or_insert(model::API_VERSION.into());
        m.entry("kind").or_insert(model::KIND.into());
    }
    v
}

/// The typed view the table is computed from.
fn typed(job: &DynamicObject) -> Result<TFJob> {
    serde_json::from_value(raw(job)).map_err(|e| {
        Error::Other(format!(
            "tfjob {}/{} does not have the kubeflow.org/v1 shape: {e}",
            job.namespace().unwrap_or_default(),
            job.name_any()
        ))
    })
}

/// Removes every time field (`creationTimestamp`, `startTime`, `lastTransitionTime`, a managed
/// field's `time`, …) whose value does not parse as RFC 3339, returning each as (path, value):
/// the typed views cannot hold it, and kubectl shows such a time as `<invalid>`.
fn drop_unparsable_times(v: &mut serde_json::Value, at: &str) -> Vec<(String, String)> {
    let mut bad = Vec::new();
    match v {
        serde_json::Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let path = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                let is_time = k == "time" || k.ends_with("Time") || k.ends_with("Timestamp");
                match m.get_mut(&k) {
                    Some(serde_json::Value::String(s))
                        if is_time && s.parse::<Timestamp>().is_err() =>
                    {
                        bad.push((path, s.clone()));
                        m.remove(&k);
                    }
                    Some(child) => bad.extend(drop_unparsable_times(child, &path)),
                    None => {}
                }
            }
        }
        serde_json::Value::Array(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                bad.extend(drop_unparsable_times(child, &format!("{at}[{i}]")));
            }
        }
        _ => {}
    }
    bad
}

/// `{"apiVersion":"v1","kind":"List",...}` as kubectl prints several objects, the items as the
/// API returned them.
pub fn as_list(jobs: &[DynamicObject]) -> serde_json::Value {
    let items: Vec<serde_json::Value> = jobs.iter().map(raw).collect();
    serde_json::json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}})
}

fn pod_selector() -> String {
    format!(
        "{},{}={}",
        model::LABEL_JOB_NAME,
        model::LABEL_OPERATOR_NAME,
        model::OPERATOR_NAME
    )
}

/// The pods of each job, by (namespace, job name).
fn by_job(pods: &[PodRow]) -> HashMap<(&str, &str), Vec<&PodRow>> {
    let mut by_job: HashMap<(&str, &str), Vec<&PodRow>> = HashMap::new();
    for p in pods {
        if let Some(j) = p.job() {
            by_job.entry((p.namespace.as_str(), j)).or_default().push(p);
        }
    }
    by_job
}

fn rows(jobs: &[TFJob], pods: &[PodRow], now: Timestamp) -> Vec<JobRow> {
    let by_job = by_job(pods);
    jobs.iter()
        .map(|j| {
            let ns = j.metadata.namespace.as_deref().unwrap_or_default();
            let name = j.metadata.name.as_deref().unwrap_or_default();
            let ps = by_job.get(&(ns, name)).map(Vec::as_slice).unwrap_or(&[]);
            jobview::job_row(j, ps, now)
        })
        .collect()
}

/// `kubectl tfjob list`: the context's namespace (or all, `-A`).
pub async fn run(ctx: &Context, opts: ListOptions, out: &mut Output) -> Result<()> {
    ctx.with_streams(out, async |kube, ns, data, notes| {
        list(kube, ns, &opts, data, notes).await
    })
    .await
}

/// Prints the TFJobs of `namespace` (or all) to `out`; notes (`No resources found`) to `err`.
pub async fn list(
    kube: &Kube,
    namespace: &str,
    opts: &ListOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<()> {
    let ar = model::dynamic_resource();
    let api: Api<DynamicObject> = if opts.all_namespaces {
        Api::all_with(kube.client.clone(), &ar)
    } else {
        Api::namespaced_with(kube.client.clone(), namespace, &ar)
    };
    let mut lp = ListParams::default();
    if let Some(s) = &opts.selector {
        lp = lp.labels(s);
    }
    // Read as JSON: one job with a time that does not parse must not take every row with it.
    let path = if opts.all_namespaces {
        format!(
            "/apis/{}/{}/{}",
            model::GROUP,
            model::VERSION,
            model::PLURAL
        )
    } else {
        format!(
            "/apis/{}/{}/namespaces/{namespace}/{}",
            model::GROUP,
            model::VERSION,
            model::PLURAL
        )
    };
    let list = cluster::retry(kube, || async {
        let req = kube::core::Request::new(&path)
            .list(&lp)
            .map_err(kube::Error::BuildRequest)?;
        kube.client
            .request::<kube::core::ObjectList<serde_json::Value>>(req)
            .await
    })
    .await
    .map_err(|e| cluster::tfjob_error("listing tfjobs", e))?;
    let rv = list.metadata.resource_version.clone().unwrap_or_default();
    let mut invalid_age: std::collections::HashSet<(String, String)> = Default::default();
    let mut jobs = Vec::with_capacity(list.items.len());
    for mut item in list.items {
        let bad = drop_unparsable_times(&mut item, "");
        let ns = item["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = item["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for (field, value) in &bad {
            writeln!(
                err,
                "Warning: tfjob {ns}/{name}: {field} {value:?} is not a time; shown as <invalid> (left out of -o output)"
            )
            .map_err(|e| Error::io("writing the list", e))?;
        }
        if bad.iter().any(|(f, _)| f == "metadata.creationTimestamp") {
            invalid_age.insert((ns.clone(), name.clone()));
        }
        jobs.push(serde_json::from_value::<DynamicObject>(item).map_err(|e| {
            Error::Other(format!("tfjob {ns}/{name} is not a Kubernetes object: {e}"))
        })?);
    }
    sort_jobs(&mut jobs);
    if let Some(expr) = &opts.sort_by {
        jobs = sort_jobs_by(jobs, expr)?;
    }
    // Named jobs: those rows, and each missing name said as every verb says it (after the
    // rows, as kubectl prints its NotFound errors after what it found).
    let named = |j: &DynamicObject| opts.names.is_empty() || opts.names.contains(&j.name_any());
    jobs.retain(named);
    let missing: Vec<&String> = opts
        .names
        .iter()
        .filter(|n| !jobs.iter().any(|j| j.name_any() == **n))
        .collect();
    let io = |e: std::io::Error| Error::io("writing the list", e);
    let wide = matches!(opts.format, Format::Wide);
    let none_found = |err: &mut dyn Write| {
        // kubectl's wording, on stderr.
        if opts.all_namespaces {
            writeln!(err, "No resources found")
        } else {
            writeln!(err, "No resources found in {namespace} namespace.")
        }
    };
    // The initial table's column widths, which `-w` rows keep so they line up with the header.
    let mut widths = Vec::new();
    match &opts.format {
        Format::Default | Format::Wide if jobs.is_empty() && !missing.is_empty() => {}
        Format::Default | Format::Wide => {
            if jobs.is_empty() && !opts.watch {
                none_found(err).map_err(io)?;
                return Ok(());
            }
            let ns = (!opts.all_namespaces).then_some(namespace);
            let mut pods = if jobs.is_empty() {
                Vec::new()
            } else {
                podtable::list(kube, ns, &pod_selector()).await?
            };
            mark_unschedulable(kube, ns, &mut pods).await;
            let typed_jobs = jobs.iter().map(typed).collect::<Result<Vec<_>>>()?;
            let mut rows = rows(&typed_jobs, &pods, Timestamp::now());
            mark_reasons(kube, &typed_jobs, &pods, &mut rows).await;
            if wide {
                mark_progress(kube, &pods, &mut rows).await;
            }
            for (r, j) in rows.iter_mut().zip(&jobs) {
                if invalid_age.contains(&(j.namespace().unwrap_or_default(), j.name_any())) {
                    r.age = "<invalid>".into();
                }
            }
            let mut table: Vec<Vec<String>> = Vec::new();
            if !opts.table.no_headers {
                let mut h: Vec<String> = print::tables::list_headers(opts.all_namespaces, wide)
                    .into_iter()
                    .map(String::from)
                    .collect();
                h.extend(opts.table.extra_headers());
                table.push(h);
            }
            for (r, j) in rows.iter().zip(&jobs) {
                let mut cells = print::tables::row_cells(r, opts.all_namespaces, wide);
                cells.extend(opts.table.extra_cells(&labels(j)));
                table.push(cells);
            }
            write!(out, "{}", print::tabwrite(&table)).map_err(io)?;
            widths = print::column_widths(&table);
        }
        Format::Name if jobs.is_empty() && !opts.watch => {
            none_found(err).map_err(io)?;
            return Ok(());
        }
        other => {
            print::print(
                other,
                &as_list(&jobs),
                QUALIFIED_KIND,
                opts.table.no_headers,
                out,
            )?;
        }
    }
    out.flush().map_err(io)?;
    if !missing.is_empty() {
        let mut errors = Vec::new();
        for name in missing {
            errors.push(cluster::notfound::tfjob(kube, namespace, name).await);
        }
        return super::end_with_errors(errors, err);
    }
    if opts.watch {
        watch(kube, &api, namespace, opts, rv, widths, out).await?;
    }
    Ok(())
}

/// Where each running worker, chief or master is, from its recent lines (`diagnose`'s
/// progress shapes), at most [`crate::diagnose::MAX_LAST_LOG`] of them within the decoration
/// budget: (`Worker-0`, `step 120/1,000 (12.3/s, ETA 1m), loss 0.41`). Best effort (issue 49):
/// a replica whose lines cannot be read is left out.
pub(crate) async fn progress(
    kube: &Kube,
    pods: &[&podtable::PodRow],
    max: usize,
    short: bool,
    budget: &crate::cluster::budget::Budget,
) -> Vec<(String, String)> {
    let mut trainers: Vec<(String, &podtable::PodRow)> = pods
        .iter()
        .copied()
        .filter(|p| p.status == "Running")
        .filter_map(|p| {
            let t = p.labels.get(model::LABEL_REPLICA_TYPE)?;
            let i = p.labels.get(model::LABEL_REPLICA_INDEX)?;
            super::progress::logs_steps(t).then(|| {
                let label = format!("{}-{i}", crate::cluster::pod::canonical_replica_type(t));
                (label, p)
            })
        })
        .collect();
    trainers.sort_by_key(|(l, _)| jobview::replica_order(&l.to_lowercase()));
    let asked = trainers
        .into_iter()
        .take(max)
        .map(|(label, p)| super::progress::Trainer {
            key: label,
            namespace: p.namespace.clone(),
            pod: p.name.clone(),
            container: model::DEFAULT_CONTAINER_NAME.into(),
        })
        .collect();
    super::progress::read(kube, asked, None, budget)
        .await
        .into_iter()
        .map(|(label, progress)| {
            let at = match (progress, short) {
                (Some(p), false) => p.summary(),
                // A table cell: where it is, nothing more.
                (Some(p), true) => p.position(),
                (None, _) => crate::diagnose::progress::NO_STEP_YET.into(),
            };
            (label, at)
        })
        .collect()
}

/// The decoration budget of a day-two read: 2 s, within the command's deadline.
pub(crate) fn decoration(kube: &Kube) -> crate::cluster::budget::Budget {
    use crate::cluster::budget::{Budget, DECORATION};
    Budget::within(DECORATION, &kube.deadline)
}

/// Running jobs whose first worker's recent lines `list -o wide` reads for PROGRESS.
const PROGRESS_ASKED: usize = 20;

/// `-o wide`'s PROGRESS (issue 49): where the first running worker (or chief) of each
/// unfinished job is, `Worker-0 step 620/5,000`, read from its recent lines as `get` and `diagnose` read
/// them; at most [`PROGRESS_ASKED`] jobs within the 2 s decoration budget, `-` for the rest.
async fn mark_progress(kube: &Kube, pods: &[PodRow], rows: &mut [JobRow]) {
    let budget = decoration(kube);
    let by_job = by_job(pods);
    let mut asked = 0;
    for row in rows.iter_mut() {
        let Some(mine) = by_job.get(&(row.namespace.as_str(), row.name.as_str())) else {
            continue;
        };
        if !mine.iter().any(|p| p.status == "Running") {
            continue;
        }
        // Whatever the operator's condition says yet: a running worker's lines decide.
        if matches!(row.state.as_str(), "Succeeded" | "Failed") || asked >= PROGRESS_ASKED {
            continue;
        }
        asked += 1;
        if let Some((replica, at)) = progress(kube, mine, 1, true, &budget)
            .await
            .into_iter()
            .next()
        {
            row.progress = format!("{replica} {at}");
        }
    }
}

/// How many Queued jobs `list` asks Kueue about (one Workload list each); the rest keep
/// `<none>`: a list must not cost a request per row.
const QUEUED_ASKED: usize = 20;

/// What REASON says beyond kubectl's STATUS, in one order for `list` and `get` (one story with
/// `wait` and `diagnose`): Kueue's hold, nothing reconciling it, a gang that waits, a replica
/// taken away whose pod is gone.
pub(crate) async fn mark_reasons(
    kube: &Kube,
    jobs: &[TFJob],
    pods: &[PodRow],
    rows: &mut [JobRow],
) {
    mark_queued(kube, jobs, rows).await;
    mark_unreconciled(kube, jobs, rows).await;
    mark_gang(kube, jobs, pods, rows).await;
    mark_taken_away(kube, rows).await;
}

/// A failed job whose replica was preempted, evicted or lost with its node has often no pod
/// left to show it (the operator's cleanPodPolicy, the taint manager): the event outlives the
/// pod, and names the replica and why as `wait` and `diagnose` name it
/// (`Worker-1: PreemptionByScheduler: …`). One list of events per such reason, made only when
/// a failed row has no REASON. Best effort, as [`mark_unschedulable`].
async fn mark_taken_away(kube: &Kube, rows: &mut [JobRow]) {
    let bare = |r: &JobRow| r.state == "Failed" && r.reason == "<none>";
    if !rows.iter().any(bare) {
        return;
    }
    let mut namespaces: Vec<&str> = rows
        .iter()
        .filter(|r| bare(r))
        .map(|r| r.namespace.as_str())
        .collect();
    namespaces.dedup();
    let ns = (namespaces.len() == 1).then(|| namespaces[0].to_string());
    for (reason, shown) in [
        ("Preempted", "PreemptionByScheduler"),
        ("TaintManagerEviction", "DeletionByTaintManager"),
        ("Evicted", "Evicted"),
    ] {
        if !rows.iter().any(bare) {
            return;
        }
        let latest = latest_events(kube, ns.as_deref(), reason).await;
        for row in rows.iter_mut().filter(|r| bare(r)) {
            let mut found: Vec<(String, &str)> = latest
                .iter()
                .filter(|((ns, _), _)| *ns == row.namespace)
                .filter_map(|((_, pod), (_, msg))| {
                    crate::diagnose::failure::label_from_pod_name(pod, &row.name)
                        .map(|l| (l, msg.as_str()))
                })
                .collect();
            found.sort_by_key(|(l, _)| crate::print::jobview::replica_order(l));
            if let Some((label, msg)) = found.first() {
                row.reason = format!("{label}: {shown}: {}", cluster::pod::brief(msg));
            }
        }
    }
}

/// A job Kueue holds (State `Queued`) says why in REASON, from its Workload, as `wait` and
/// `diagnose` say it (`placement::queue_state`). Best effort: without Kueue's API or the right
/// to read Workloads, the REASON stays `<none>`.
pub(crate) async fn mark_queued(kube: &Kube, jobs: &[TFJob], rows: &mut [JobRow]) {
    use crate::placement::queue_state::{held_reason, kueue_state};
    let asks = jobs
        .iter()
        .zip(rows.iter())
        .enumerate()
        .filter(|(_, (_, r))| r.state == "Queued" && r.reason == "<none>")
        .take(QUEUED_ASKED)
        .map(|(i, (j, _))| async move {
            let ns = j.metadata.namespace.as_deref().unwrap_or_default();
            let uid = j.metadata.uid.as_deref().unwrap_or_default();
            let wl = match cluster::queue::workload_for(kube, ns, uid).await {
                Ok(cluster::queue::Fact::Known(wl)) => wl,
                _ => return (i, None),
            };
            (i, held_reason(&kueue_state(j, wl.as_ref())))
        });
    for (i, reason) in futures::future::join_all(asks).await {
        if let Some(reason) = reason {
            rows[i].reason = reason;
        }
    }
}

/// How many jobs `list` asks about their PodGroup (one or two GETs each).
const GANGS_ASKED: usize = 20;

/// A reconciled job with no pods that a gang scheduler's PodGroup holds says so in REASON, in
/// the words `wait` and `diagnose` use (`PodGroup::waiting_line`). Best effort within the
/// decoration budget; at most [`GANGS_ASKED`] jobs. Whether the gang can ever be placed is
/// `diagnose`'s and `wait`'s to say: it costs a read of every node and bound pod.
pub(crate) async fn mark_gang(kube: &Kube, jobs: &[TFJob], pods: &[PodRow], rows: &mut [JobRow]) {
    use crate::cluster::queue::{self as q, Fact};
    let by_job = by_job(pods);
    let asks = jobs
        .iter()
        .zip(rows.iter())
        .enumerate()
        .filter(|(_, (j, r))| {
            let ns = j.metadata.namespace.as_deref().unwrap_or_default();
            let name = j.metadata.name.as_deref().unwrap_or_default();
            r.reason == "<none>"
                && j.last_condition().is_some()
                && !j.is_finished()
                && !j.is_suspended()
                && q::local_queue_name(j).is_none()
                && !by_job.contains_key(&(ns, name))
        })
        .take(GANGS_ASKED)
        .map(|(i, (j, _))| async move {
            let ns = j.metadata.namespace.as_deref().unwrap_or_default();
            let name = j.metadata.name.as_deref().unwrap_or_default();
            match q::pod_group(kube, ns, name).await {
                Ok(Fact::Known(Some((system, pg)))) if pg.gang_waiting() => {
                    let words = pg.latest_message();
                    (i, Some(pg.waiting_line(system, name, words.as_deref())))
                }
                _ => (i, None),
            }
        });
    let Some(said) = decoration(kube)
        .attempt(futures::future::join_all(asks))
        .await
    else {
        return;
    };
    for (i, line) in said {
        if let Some(line) = line {
            rows[i].reason = line;
        }
    }
}

/// A job no operator has reconciled (no condition) says why in REASON when nothing will
/// (`cluster::operator::not_reconciling`, the words `wait` ends with): the operator installed
/// but not ready, or none to be seen and the job older than the grace. One lookup of the
/// operator for the whole list, made only when such a row exists; best effort within the
/// decoration budget, so a list never waits on it.
pub(crate) async fn mark_unreconciled(kube: &Kube, jobs: &[TFJob], rows: &mut [JobRow]) {
    let unreconciled = |j: &TFJob| j.last_condition().is_none();
    if !jobs.iter().any(unreconciled) {
        return;
    }
    let Some(Ok(operator)) = decoration(kube)
        .attempt(cluster::operator::current(kube))
        .await
    else {
        return;
    };
    let now = Timestamp::now();
    for (job, row) in jobs.iter().zip(rows.iter_mut()) {
        if !unreconciled(job) || row.reason != "<none>" {
            continue;
        }
        let age = job
            .metadata
            .creation_timestamp
            .as_ref()
            .and_then(|t| u64::try_from(now.duration_since(t.0).as_secs()).ok());
        if let Some(cause) = cluster::operator::not_reconciling(&operator, age) {
            row.reason = format!("nothing reconciles it: {cause}");
        }
    }
}

/// kubectl's STATUS hides some causes: a pod waiting for a node is `Pending`, an evicted one
/// `ContainerStatusUnknown` or `Error`, a lost node's `Terminating`. One list of the events of
/// that reason (small, unlike the pods, whose TF_CONFIG grows with the job), made only when such
/// a row exists, gives the cause as `diagnose` names it: `Unschedulable: <the scheduler's
/// message>`, `Evicted: <the kubelet's>`, `Preempted: …`, `DeletionByTaintManager: …`. Best
/// effort: without the events (RBAC, API error) the STATUS stays kubectl's.
pub(crate) async fn mark_unschedulable(kube: &Kube, namespace: Option<&str>, pods: &mut [PodRow]) {
    let waiting = |p: &PodRow| p.status == "Pending" && (p.node.is_empty() || p.node == "<none>");
    let gone = |p: &PodRow| {
        matches!(
            p.status.as_str(),
            "ContainerStatusUnknown" | "Error" | "Terminating" | "Unknown" | "Evicted"
        ) || p.status.starts_with("ExitCode:")
    };
    type Explains<'a> = &'a dyn Fn(&PodRow) -> bool;
    // (event reason, the cause shown, which rows it explains), most specific first.
    let causes: [(&str, &str, Explains); 4] = [
        ("FailedScheduling", "Unschedulable", &waiting),
        ("Evicted", "Evicted", &gone),
        // Named as the pod's DisruptionTarget condition names it, as wait and diagnose do.
        ("Preempted", "PreemptionByScheduler", &gone),
        ("TaintManagerEviction", "DeletionByTaintManager", &gone),
    ];
    for (reason, shown, explains) in causes {
        if !pods.iter().any(explains) {
            continue;
        }
        let latest = latest_events(kube, namespace, reason).await;
        for p in pods.iter_mut().filter(|p| explains(p)) {
            if let Some((uid, msg)) = latest.get(&(p.namespace.clone(), p.name.clone()))
                && (uid.is_empty() || p.uid.is_empty() || *uid == p.uid)
            {
                // A table cell: the cause's first sentence (`diagnose` has the whole).
                p.status = format!("{shown}: {}", cluster::pod::brief(msg));
            }
        }
    }
}

/// The latest (pod uid, message) of each pod's events of `reason`, by (namespace, pod); empty
/// when the events cannot be read.
async fn latest_events(
    kube: &Kube,
    namespace: Option<&str>,
    reason: &str,
) -> HashMap<(String, String), (String, String)> {
    use k8s_openapi::api::core::v1::Event;
    let api: Api<Event> = match namespace {
        Some(ns) => Api::namespaced(kube.client.clone(), ns),
        None => Api::all(kube.client.clone()),
    };
    let lp = ListParams::default().fields(&format!("involvedObject.kind=Pod,reason={reason}"));
    let Ok(events) = cluster::retry(kube, || api.list(&lp)).await else {
        return HashMap::new();
    };
    let when = |e: &Event| {
        e.last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or_else(|| e.event_time.as_ref().map(|t| t.0))
            .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
    };
    let mut latest: HashMap<(String, String), &Event> = HashMap::new();
    for e in &events.items {
        let key = (
            e.involved_object.namespace.clone().unwrap_or_default(),
            e.involved_object.name.clone().unwrap_or_default(),
        );
        match latest.get(&key) {
            Some(prev) if when(prev) > when(e) => {}
            _ => {
                latest.insert(key, e);
            }
        }
    }
    latest
        .into_iter()
        .filter_map(|(k, e)| {
            let uid = e.involved_object.uid.clone().unwrap_or_default();
            Some((k, (uid, e.message.clone()?)))
        })
        .collect()
}

fn labels(job: &DynamicObject) -> std::collections::BTreeMap<String, String> {
    job.labels().clone()
}

/// `--sort-by`: kubectl refuses a path no job has (sorter.go), and otherwise sorts stably on
/// top of the server's order.
fn sort_jobs_by(jobs: Vec<DynamicObject>, expr: &str) -> Result<Vec<DynamicObject>> {
    if !jobs.is_empty() {
        let e = print::jsonpath::relaxed(expr).map_err(Error::Usage)?;
        let jp = print::JsonPath::parse(&e)
            .map_err(|err| Error::Usage(format!("error parsing jsonpath {e}, {err}")))?;
        let found = jobs.iter().any(|j| {
            jp.find(&raw(j))
                .is_ok_and(|g| g.first().is_some_and(|v| !v.is_empty()))
        });
        if !found {
            return Err(Error::Invalid(format!(
                "couldn't find any field with path \"{e}\" in the list of objects"
            )));
        }
    }
    print::sort_by(jobs, expr, raw)
}

/// Prints one row per change from `rv` on, until the stream cannot be resumed.
async fn watch(
    kube: &Kube,
    api: &Api<DynamicObject>,
    namespace: &str,
    opts: &ListOptions,
    mut rv: String,
    mut widths: Vec<usize>,
    out: &mut dyn Write,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io("writing the list", e);
    let wide = matches!(opts.format, Format::Wide);
    let mut wp = WatchParams::default();
    if let Some(s) = &opts.selector {
        wp = wp.labels(s);
    }
    loop {
        let mut stream = api
            .watch(&wp, &rv)
            .await
            .map_err(|e| Error::kube("watching tfjobs", e))?
            .boxed();
        while let Some(ev) = stream
            .try_next()
            .await
            .map_err(|e| Error::kube("watching tfjobs", e))?
        {
            let job = match ev {
                WatchEvent::Added(j) | WatchEvent::Modified(j) | WatchEvent::Deleted(j) => j,
                WatchEvent::Bookmark(b) => {
                    rv = b.metadata.resource_version;
                    continue;
                }
                WatchEvent::Error(e) => {
                    return Err(Error::Other(format!(
                        "the tfjob watch ended: {} ({}); run the list again",
                        e.message, e.code
                    )));
                }
            };
            rv = job.resource_version().unwrap_or_default();
            if !opts.names.is_empty() && !opts.names.contains(&job.name_any()) {
                continue;
            }
            match &opts.format {
                Format::Yaml => {
                    let s = serde_saphyr::to_string(&raw(&job)).unwrap_or_default();
                    write!(out, "---\n{s}").map_err(io)?;
                }
                Format::Default | Format::Wide => {
                    let ns = job.namespace().unwrap_or_else(|| namespace.to_string());
                    let sel = model::job_selector(&job.name_any());
                    let mut pods = podtable::list(kube, Some(&ns), &sel).await?;
                    mark_unschedulable(kube, Some(&ns), &mut pods).await;
                    let refs: Vec<&PodRow> = pods.iter().collect();
                    let row = jobview::job_row(&typed(&job)?, &refs, Timestamp::now());
                    let mut cells = print::tables::row_cells(&row, opts.all_namespaces, wide);
                    cells.extend(opts.table.extra_cells(&labels(&job)));
                    // kubectl sizes each watch row on its own, so its rows drift from the
                    // header; these keep the widths printed so far (growing when a cell is
                    // wider), so they line up with it.
                    let rows = [cells];
                    for (w, n) in widths.iter_mut().zip(print::column_widths(&rows)) {
                        *w = (*w).max(n);
                    }
                    if widths.len() < rows[0].len() {
                        widths = print::column_widths(&rows);
                    }
                    write!(out, "{}", print::tabwrite_with(&widths, &rows)).map_err(io)?;
                }
                other => {
                    print::print(other, &raw(&job), QUALIFIED_KIND, true, out)?;
                }
            }
            out.flush().map_err(io)?;
        }
    }
}
