//! `get`: one job in full — conditions as a timeline, its replicas as `kubectl get pods` shows
//! them, services, recent events, the Secret-backed env each role receives (names and keys only)
//! and the shape of TF_CONFIG's cluster; `-o json|yaml` prints the TFJob as the API returned it.
//!
//! Requests, constant in the number of replicas: the job, one Table list of its pods (no specs,
//! see `cluster::podtable`), one list of its services, one list of the namespace's events about TFJobs
//! and one about Pods (field selectors), filtered to this job here.

use std::io::Write;

use k8s_openapi::api::core::v1::{Event, Pod, Service};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::Context;
use super::workload::jobset::{Phase, health, jobset_replica, read_jobset};
use super::workload::{jobset_pods, tfjob_names};
use crate::cluster::{self, Kube, Target};
use crate::cluster::{events, podtable};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::output::Output;
use crate::pipeline::jobset::model::JobSet;
use crate::print::jobview::{self, GetView};
use crate::print::{self, Format, TableFlags};

/// Which job and how.
#[derive(Debug, Clone)]
pub struct GetOptions {
    pub name: String,
    /// `Default` is the description; `Wide` the job's `list -o wide` row; the rest kubectl's
    /// printers on the object as the API returned it.
    pub format: Format,
    /// `--no-headers`, `--show-labels`, `-L` (for `-o wide` and custom columns).
    pub table: TableFlags,
    /// How many recent events to show.
    pub events: usize,
}

impl GetOptions {
    pub fn new(name: impl Into<String>) -> Self {
        GetOptions {
            name: name.into(),
            format: Format::Default,
            table: TableFlags::default(),
            events: 10,
        }
    }
}

/// `kubectl tfjob get TARGET…` in the context's namespace: one job in full, several in turn
/// ([`run_many`]); a JobSet is shown on its own.
pub async fn run(
    ctx: &Context,
    targets: &[Target],
    opts: GetOptions,
    out: &mut Output,
) -> Result<()> {
    if let [Target::JobSet(name)] = targets {
        let kube = ctx.kube().await?;
        let js = read_jobset(kube, name).await?;
        let pods = jobset_pods(kube, name).await?;
        return out.data(&describe(&js, &pods));
    }
    let names = tfjob_names(targets, "shown", "get")?;
    if let [name] = names.as_slice() {
        let opts = GetOptions {
            name: name.clone(),
            ..opts
        };
        return ctx
            .with_streams(out, async |kube, ns, data, notes| {
                get(kube, ns, &opts, data, notes).await
            })
            .await;
    }
    run_many(ctx, &names, opts, out).await
}

/// `kubectl tfjob get A B …`: each job's description in turn (a blank line between), or, for
/// the printers of objects, one `v1` List of them, as `kubectl get` prints several. A name
/// that is not found is said on stderr and the others are still shown; the command then fails
/// with the last such error.
async fn run_many(
    ctx: &Context,
    names: &[String],
    opts: GetOptions,
    out: &mut Output,
) -> Result<()> {
    ctx.with_streams(out, async |kube, ns, data, notes| {
        let io = |e: std::io::Error| Error::io("writing output", e);
        // Each error is said once: all but the last on stderr as they come, the last as the
        // command's own (its exit code).
        let mut errors: Vec<Error> = Vec::new();
        match &opts.format {
            Format::Default | Format::Wide => {
                for (i, name) in names.iter().enumerate() {
                    if i > 0 && matches!(opts.format, Format::Default) {
                        writeln!(data).map_err(io)?;
                    }
                    let one = GetOptions {
                        name: name.clone(),
                        ..opts.clone()
                    };
                    if let Err(e) = get(kube, ns, &one, data, notes).await {
                        errors.push(e);
                    }
                }
            }
            format => {
                let mut found = Vec::new();
                for name in names {
                    match super::workload::read_tfjob_object(kube, name).await {
                        Ok(obj) => found.push(obj),
                        Err(e) => errors.push(e),
                    }
                }
                // The List `list -o …` prints, as kubectl prints several objects.
                let list = crate::ops::list::as_list(&found);
                print::print(
                    format,
                    &list,
                    crate::ops::list::QUALIFIED_KIND,
                    opts.table.no_headers,
                    data,
                )?;
            }
        }
        super::end_with_errors(errors, notes)
    })
    .await
}

/// Prints the job to `out`.
pub async fn get(
    kube: &Kube,
    namespace: &str,
    opts: &GetOptions,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> Result<()> {
    let client = &kube.client;
    let obj = super::workload::read_tfjob_object(kube, &opts.name).await?;
    let io = |e: std::io::Error| Error::io("writing output", e);
    let value = serde_json::to_value(&obj).unwrap_or_default();
    match &opts.format {
        Format::Default | Format::Wide => {}
        other => {
            return print::print(
                other,
                &value,
                crate::ops::list::QUALIFIED_KIND,
                opts.table.no_headers,
                out,
            );
        }
    }
    let job: TFJob = serde_json::from_value(value.clone()).map_err(|e| {
        Error::Other(format!(
            "tfjob {} does not match the kubeflow.org/v1 TFJob shape: {e}",
            opts.name
        ))
    })?;
    let sel = model::job_selector(&opts.name);
    let mut pods = podtable::list(kube, Some(namespace), &sel).await?;
    // The same row `list` shows, with the same reasons (the scheduler's, Kueue's).
    crate::ops::list::mark_unschedulable(kube, Some(namespace), &mut pods).await;
    let mut row = {
        let refs: Vec<&podtable::PodRow> = pods.iter().collect();
        jobview::job_row(&job, &refs, Timestamp::now())
    };
    crate::ops::list::mark_reasons(
        kube,
        std::slice::from_ref(&job),
        &pods,
        std::slice::from_mut(&mut row),
    )
    .await;
    if matches!(opts.format, Format::Wide) {
        // The job's row of `list -o wide`, as `kubectl get tfjob NAME -o wide` is its row.
        let mut table = Vec::new();
        if !opts.table.no_headers {
            let mut h: Vec<String> = print::tables::list_headers(false, true)
                .into_iter()
                .map(String::from)
                .collect();
            h.extend(opts.table.extra_headers());
            table.push(h);
        }
        let mut cells = print::tables::row_cells(&row, false, true);
        cells.extend(opts.table.extra_cells(&print::labels_of(&value)));
        table.push(cells);
        return write!(out, "{}", print::tabwrite(&table)).map_err(io);
    }
    let progress = {
        let refs: Vec<&podtable::PodRow> = pods.iter().collect();
        crate::ops::list::progress(
            kube,
            &refs,
            crate::diagnose::MAX_LAST_LOG,
            false,
            &crate::ops::list::decoration(kube),
        )
        .await
    };
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let lp = ListParams::default().labels(&sel);
    let services = cluster::retry(kube, || services.list(&lp))
        .await
        .map_err(|e| Error::kube("listing services", e))?
        .items;
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    // From the watch cache, as the pods' events (cluster::events).
    let on_job = ListParams::default()
        .fields(&format!(
            "involvedObject.kind=TFJob,involvedObject.name={}",
            opts.name
        ))
        .match_any();
    let mut evs: Vec<Event> = cluster::retry(kube, || events.list(&on_job))
        .await
        .map_err(|e| Error::kube("listing events", e))?
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(opts.name.as_str()))
        .collect();
    // The pods' events pod by pod, the ones not ready or restarted first (cluster::events).
    let mut refs: Vec<&podtable::PodRow> = pods.iter().collect();
    refs.sort_by_key(|p| {
        let ready = p.ready.split_once('/').is_some_and(|(a, b)| a == b);
        p.status == "Running" && ready && p.restarts.starts_with('0')
    });
    let refs = refs
        .into_iter()
        .map(|p| events::PodRef {
            name: p.name.clone(),
            uid: None,
        })
        .collect();
    evs.extend(
        events::of_pods(kube, namespace, refs)
            .await
            .map_err(|e| Error::kube("listing events", e))?
            .events,
    );
    let view = GetView {
        job: &job,
        row,
        progress,
        pods: &pods,
        services: services
            .iter()
            .map(|s| {
                let ports: Vec<String> = s
                    .spec
                    .iter()
                    .flat_map(|sp| sp.ports.iter().flatten())
                    .map(|p| format!("{}/{}", p.port, p.protocol.as_deref().unwrap_or("TCP")))
                    .collect();
                let ip = s
                    .spec
                    .as_ref()
                    .and_then(|sp| sp.cluster_ip.clone())
                    .unwrap_or_else(|| "<none>".into());
                (s.name_any(), ip, ports.join(","))
            })
            .collect(),
        events: evs,
        max_events: opts.events,
        now: Timestamp::now(),
    };
    print::tables::get(&view, out).map_err(io)?;
    Ok(())
}

// A JobSet (`get jobset/NAME`): state, conditions, per-replicatedJob counts (in Jobs), pods.

/// The text `get jobset/NAME` prints (pure), its strings from the cluster escaped for a terminal.
pub fn describe(js: &JobSet, pods: &[Pod]) -> String {
    crate::print::terminal::escape(&describe_raw(js, pods)).into_owned()
}

fn describe_raw(js: &JobSet, pods: &[Pod]) -> String {
    let status = js.status.clone().unwrap_or_default();
    // The one verdict diagnose gives, over what get read (the JobSet and its pods).
    let health = health(js, &[], pods, &[]);
    let mut s = format!(
        "Name:       {}\nNamespace:  {}\nKind:       JobSet (jobset.x-k8s.io/v1alpha2)\nState:      {}\n",
        js.metadata.name.as_deref().unwrap_or(""),
        js.metadata.namespace.as_deref().unwrap_or(""),
        match health.phase {
            Phase::AllReady => "Running (every pod ready)".to_string(),
            Phase::Completed => "Completed".to_string(),
            Phase::Failed(why) => format!("Failed ({why})"),
            Phase::Waiting(_) if js.is_suspended() => "Suspended".to_string(),
            Phase::Waiting(_) => "Pending".to_string(),
        }
    );
    if let Some(problem) = &health.failure {
        s.push_str(&format!("Problem:    {problem}\n"));
    }
    s.push_str("Conditions:\n");
    for c in &status.conditions {
        s.push_str(&format!(
            "  {:<10} {:<6} {}: {}\n",
            c.type_, c.status, c.reason, c.message
        ));
    }
    s.push_str(
        "Replicated jobs (counted in Jobs):\n  NAME        JOBS  READY  SUCCEEDED  FAILED\n",
    );
    for r in &js.spec.replicated_jobs {
        let st = status
            .replicated_jobs_status
            .iter()
            .find(|x| x.name == r.name);
        let n = |f: fn(&crate::pipeline::jobset::model::ReplicatedJobStatus) -> i32| {
            st.map(f).unwrap_or(0)
        };
        s.push_str(&format!(
            "  {:<11} {:<5} {:<6} {:<10} {}\n",
            r.name,
            r.replicas.unwrap_or(1),
            n(|x| x.ready),
            n(|x| x.succeeded),
            n(|x| x.failed)
        ));
    }
    s.push_str("Pods:\n  REPLICA      NAME                                PHASE      NODE\n");
    let mut rows: Vec<(String, String, String, String)> = pods
        .iter()
        .map(|p| {
            (
                jobset_replica(&p.metadata),
                p.metadata.name.clone().unwrap_or_default(),
                p.status
                    .as_ref()
                    .and_then(|x| x.phase.clone())
                    .unwrap_or_default(),
                p.spec
                    .as_ref()
                    .and_then(|x| x.node_name.clone())
                    .unwrap_or_else(|| "<none>".into()),
            )
        })
        .collect();
    rows.sort();
    for (r, n, ph, node) in rows {
        s.push_str(&format!("  {r:<12} {n:<35} {ph:<10} {node}\n"));
    }
    s
}
