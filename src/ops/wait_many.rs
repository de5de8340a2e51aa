//! `wait` for several jobs (`wait a b`, `-l SELECTOR`, `--all`): a layer over the one-job
//! [`wait::follow`], run for every job at once under the same `--timeout`.
//!
//! kubectl's semantics (k8s.io/kubectl pkg/cmd/wait/wait.go `RunWait`): every job is reported
//! (`tfjob.kubeflow.org/NAME condition met` for each one met), a selector that matches nothing is
//! `no matching resources found`, and the command fails if any job does. kubectl waits for the
//! objects one after the other and stops at the first failure; here they are followed at once
//! (a wait's deadline is shared anyway), every failure is printed, and the exit code is that of
//! the first failing job in the order the jobs were named (then by name, for `-l`/`--all`).

use super::Context;
use std::io::Write;

use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::core::DynamicObject;
use tokio::sync::mpsc;

use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::model;
use crate::ops::wait::{self, WaitJobOptions, WaitOptions};
use crate::output::{Output, ReportFormat};

/// Which jobs to wait for.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// The jobs named on the line, parsed once by `commands/wait.rs`.
    pub names: Vec<cluster::Target>,
    /// `-l`.
    pub selector: Option<String>,
    /// `--all` (this namespace).
    pub all: bool,
}

/// `kubectl tfjob wait`'s options: which jobs, how long and for what, and how to report.
#[derive(Debug, Clone, Default)]
pub struct WaitManyOptions {
    pub targets: Targets,
    pub wait: WaitOptions,
    /// Text (live progress on a terminal, a line per change otherwise) or NDJSON.
    pub format: ReportFormat,
}

/// `kubectl tfjob wait NAME… | -l SELECTOR | --all`.
pub async fn run(ctx: &Context, opts: WaitManyOptions, out: &mut Output) -> Result<()> {
    let WaitManyOptions {
        targets,
        wait: opts,
        format,
    } = opts;
    let opts = &opts;
    if !targets.names.is_empty() && (targets.selector.is_some() || targets.all) {
        return Err(Error::Usage(
            "name cannot be provided when a selector or --all is specified".into(),
        ));
    }
    if targets.selector.is_some() && targets.all {
        return Err(Error::Usage(
            "--all and -l/--selector cannot be used together".into(),
        ));
    }
    if targets.names.is_empty() && targets.selector.is_none() && !targets.all {
        return Err(Error::Usage(
            "wait needs a job: NAME…, -l SELECTOR or --all".into(),
        ));
    }
    // One job by name: the one-job wait as it always was (live progress on a terminal), or
    // a JobSet followed by its status.
    if let [target] = targets.names.as_slice() {
        if let cluster::Target::JobSet(name) = target {
            let kube = ctx.kube().await?;
            let js = crate::ops::workload::jobset::read_jobset(kube, name).await?;
            let api = crate::ops::workload::jobset::jobsets(kube);
            let once = opts.timeout.is_zero();
            return crate::ops::workload::jobset::follow(kube, &api, &js, opts.wait_for, once, out)
                .await;
        }
        let one = WaitJobOptions {
            name: target.name().to_string(),
            wait: opts.clone(),
            format,
        };
        return wait::run(ctx, one, out).await;
    }
    let mut names = Vec::new();
    for t in &targets.names {
        let n = t.name().to_string();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let kube = ctx.kube().await?;
    let namespace = kube.namespace.clone();
    if names.is_empty() {
        kube.deadline.phase(format!(
            "listing the TFJobs of namespace {namespace} to wait for"
        ));
        names = select(kube, &namespace, targets.selector.as_deref()).await?;
        if names.is_empty() {
            return Err(Error::NotFound("no matching resources found".into()));
        }
    }
    follow_all(kube, &namespace, &names, opts, format, out).await
}

/// The names of the TFJobs `selector` (None: all) matches in `namespace`, sorted.
async fn select(kube: &Kube, namespace: &str, selector: Option<&str>) -> Result<Vec<String>> {
    let ar = model::dynamic_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(kube.client.clone(), namespace, &ar);
    let mut lp = ListParams::default();
    if let Some(s) = selector {
        lp = lp.labels(s);
    }
    let list = cluster::retry(kube, || api.list(&lp))
        .await
        .map_err(|e| cluster::tfjob_error("listing tfjobs", e))?;
    let mut names: Vec<String> = list.items.iter().map(|j| j.name_any()).collect();
    names.sort();
    Ok(names)
}

#[derive(Clone, Copy)]
enum Stream {
    Out,
    Err,
}

/// A job's stdout or stderr: whole lines go to the one writer that owns the real streams, so
/// lines of different jobs never mix.
struct Lines {
    stream: Stream,
    tx: mpsc::UnboundedSender<(Stream, String)>,
    buf: Vec<u8>,
}

impl Write for Lines {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            // The receiver lives until every job is done; a failed send has nowhere to go.
            let _ = self
                .tx
                .send((self.stream, String::from_utf8_lossy(&line).into_owned()));
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let rest = String::from_utf8_lossy(&self.buf).into_owned();
            let _ = self.tx.send((self.stream, rest));
        }
    }
}

async fn follow_all(
    kube: &Kube,
    namespace: &str,
    names: &[String],
    opts: &WaitOptions,
    format: ReportFormat,
    out: &mut Output,
) -> Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let waits: Vec<_> = names
        .iter()
        .map(|name| {
            let mut job_out = Output::new(
                Lines {
                    stream: Stream::Out,
                    tx: tx.clone(),
                    buf: Vec::new(),
                },
                Lines {
                    stream: Stream::Err,
                    tx: tx.clone(),
                    buf: Vec::new(),
                },
            );
            async move {
                let r = wait::follow(kube, namespace, name, opts, format, &mut job_out).await;
                drop(job_out);
                r
            }
        })
        .collect();
    drop(tx);
    let all = futures::future::join_all(waits);
    tokio::pin!(all);
    let mut closed = false;
    let mut write = |out: &mut Output, (stream, line): (Stream, String)| match stream {
        Stream::Out if !closed => {
            if let Err(Error::BrokenPipe) = out.data(&line) {
                closed = true;
            }
        }
        Stream::Out => {}
        Stream::Err => out.note(&line),
    };
    let results = loop {
        tokio::select! {
            results = &mut all => break results,
            Some(item) = rx.recv() => write(out, item),
        }
    };
    while let Ok(item) = rx.try_recv() {
        write(out, item);
    }
    if closed {
        return Err(Error::BrokenPipe);
    }
    let (gone, others): (Vec<_>, Vec<_>) = names
        .iter()
        .zip(results)
        .filter_map(|(n, r)| r.err().map(|e| (n, e)))
        .partition(|(_, e)| wait::is_namespace_gone(e, namespace));
    // Jobs that went with their namespace are one failure, said once, and the command's.
    let mut failures = others.into_iter();
    let first = if gone.is_empty() {
        failures.next()
    } else {
        let jobs: Vec<String> = gone.iter().map(|(n, _)| n.to_string()).collect();
        Some((
            gone[0].0,
            Error::JobFailed(wait::namespace_gone_message(namespace, &jobs)),
        ))
    };
    // Every failure is reported; the first one is the command's error (printed last by main).
    for (name, err) in failures {
        out.note_line(&format!("error: tfjob/{name}: {err}"));
    }
    match first {
        Some((_, err)) => Err(err),
        None => Ok(()),
    }
}
