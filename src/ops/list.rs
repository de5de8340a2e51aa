//! `list`: TFJobs as a kubectl-style table (or json/yaml/name), from exactly two requests —
//! one list of TFJobs and one Table list of their pods by label — whatever the number of jobs
//! and replicas. `watch` then prints a row per change of a job (one pod Table list of that job
//! per change).

use std::collections::HashMap;
use std::io::Write;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::jobview::{self, JobRow};
use crate::model::{self, TFJob};
use crate::ops::podtable::{self, PodRow};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListFormat {
    #[default]
    Table,
    Wide,
    Json,
    Yaml,
    /// `tfjob.kubeflow.org/NAME`.
    Name,
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Every namespace (adds NAMESPACE); the `namespace` argument is then ignored.
    pub all_namespaces: bool,
    /// Label selector on the TFJobs.
    pub selector: Option<String>,
    pub format: ListFormat,
    pub no_headers: bool,
    /// After the list, print a row per change until interrupted.
    pub watch: bool,
}

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

fn rows(jobs: &[TFJob], pods: &[PodRow], now: Timestamp) -> Vec<JobRow> {
    let mut by_job: HashMap<(&str, &str), Vec<&PodRow>> = HashMap::new();
    for p in pods {
        if let Some(j) = p.job() {
            by_job.entry((p.namespace.as_str(), j)).or_default().push(p);
        }
    }
    jobs.iter()
        .map(|j| {
            let ns = j.metadata.namespace.as_deref().unwrap_or_default();
            let name = j.metadata.name.as_deref().unwrap_or_default();
            let ps = by_job.get(&(ns, name)).map(Vec::as_slice).unwrap_or(&[]);
            jobview::job_row(j, ps, now)
        })
        .collect()
}

/// Prints the TFJobs of `namespace` (or all) to `out`; notes (`No resources found`) to `err`.
pub async fn list(
    kube: &Kube,
    namespace: &str,
    opts: &ListOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<()> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(model::GROUP, model::VERSION, model::KIND),
        model::PLURAL,
    );
    let api: Api<DynamicObject> = if opts.all_namespaces {
        Api::all_with(kube.client.clone(), &ar)
    } else {
        Api::namespaced_with(kube.client.clone(), namespace, &ar)
    };
    let mut lp = ListParams::default();
    if let Some(s) = &opts.selector {
        lp = lp.labels(s);
    }
    let list = cluster::retry(kube, || api.list(&lp))
        .await
        .map_err(|e| Error::kube("listing tfjobs", e))?;
    let rv = list.metadata.resource_version.clone().unwrap_or_default();
    let mut jobs = list.items;
    sort_jobs(&mut jobs);
    let io = |e: std::io::Error| Error::io("writing the list", e);
    let wide = opts.format == ListFormat::Wide;
    match opts.format {
        ListFormat::Json => {
            let s = serde_json::to_string_pretty(&as_list(&jobs)).unwrap_or_default();
            writeln!(out, "{s}").map_err(io)?;
        }
        ListFormat::Yaml => {
            let s = serde_saphyr::to_string(&as_list(&jobs)).unwrap_or_default();
            write!(out, "{s}").map_err(io)?;
        }
        ListFormat::Name => {
            for j in &jobs {
                writeln!(out, "tfjob.kubeflow.org/{}", j.name_any()).map_err(io)?;
            }
        }
        ListFormat::Table | ListFormat::Wide => {
            if jobs.is_empty() && !opts.watch {
                // kubectl's wording, on stderr.
                if opts.all_namespaces {
                    writeln!(err, "No resources found").map_err(io)?;
                } else {
                    writeln!(err, "No resources found in {namespace} namespace.").map_err(io)?;
                }
                return Ok(());
            }
            let ns = (!opts.all_namespaces).then_some(namespace);
            let pods = if jobs.is_empty() {
                Vec::new()
            } else {
                podtable::list(kube, ns, &pod_selector()).await?
            };
            let typed_jobs = jobs.iter().map(typed).collect::<Result<Vec<_>>>()?;
            let rows = rows(&typed_jobs, &pods, Timestamp::now());
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| jobview::row_cells(r, opts.all_namespaces, wide))
                .collect();
            let headers = jobview::list_headers(opts.all_namespaces, wide);
            let h = (!opts.no_headers).then_some(headers.as_slice());
            write!(out, "{}", jobview::table(h, &cells)).map_err(io)?;
        }
    }
    out.flush().map_err(io)?;
    if opts.watch {
        watch(kube, &api, namespace, opts, rv, out).await?;
    }
    Ok(())
}

/// Prints one row per change from `rv` on, until the stream cannot be resumed.
async fn watch(
    kube: &Kube,
    api: &Api<DynamicObject>,
    namespace: &str,
    opts: &ListOptions,
    mut rv: String,
    out: &mut dyn Write,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io("writing the list", e);
    let wide = opts.format == ListFormat::Wide;
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
            match opts.format {
                ListFormat::Json => {
                    writeln!(
                        out,
                        "{}",
                        serde_json::to_string_pretty(&raw(&job)).unwrap_or_default()
                    )
                    .map_err(io)?;
                }
                ListFormat::Yaml => {
                    let s = serde_saphyr::to_string(&raw(&job)).unwrap_or_default();
                    write!(out, "---\n{s}").map_err(io)?;
                }
                ListFormat::Name => {
                    writeln!(out, "tfjob.kubeflow.org/{}", job.name_any()).map_err(io)?
                }
                ListFormat::Table | ListFormat::Wide => {
                    let ns = job.namespace().unwrap_or_else(|| namespace.to_string());
                    let sel = model::job_selector(&job.name_any());
                    let pods = podtable::list(kube, Some(&ns), &sel).await?;
                    let refs: Vec<&PodRow> = pods.iter().collect();
                    let row = jobview::job_row(&typed(&job)?, &refs, Timestamp::now());
                    let cells = vec![jobview::row_cells(&row, opts.all_namespaces, wide)];
                    write!(out, "{}", jobview::table(None, &cells)).map_err(io)?;
                }
            }
            out.flush().map_err(io)?;
        }
    }
}
