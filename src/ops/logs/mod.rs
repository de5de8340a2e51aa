//! `logs`: the `tensorflow` container (or another) of every replica pod, each line prefixed with
//! its replica, in arrival order; with `follow`, pods that start, restart or are recreated are
//! picked up and the command ends when the job finishes.
//!
//! Shape: one watch of the job (a TFJob, or a JobSet the plugin made: `ops::workload`'s
//! [`Workload`] gives its pod selector, replica labels and end) and one of its pods
//! (spec-less, by label) feed the main loop;
//! one task per pod instance (pod uid) streams its container's log instance after instance and
//! sends lines through a small bounded channel. Only the main loop writes, so a slow terminal
//! fills the channel, the tasks stop reading, and TCP flow control holds the API server back —
//! memory stays bounded whatever the log volume.
//!
//! Every request asks `timestamps=true`; a per-pod [`Cursor`] uses them to print a line once
//! across dropped streams and restarts (the crashed instance's tail is re-read with
//! `previous=true` from the last printed second). Requests: 2 watches, plus per pod one log
//! stream per container instance and one `previous` read per restart.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, LogParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{Semaphore, mpsc, watch};

use super::Context;
use crate::cluster::Kube;
use crate::cluster::Target;
use crate::cluster::client as kubeapi;
use crate::cluster::pod::{Pod, PodFacts};
use crate::error::{Error, Result};
use crate::model;
use crate::ops::workload::Workload;
use crate::output::Output;
use crate::print::jobview;
use cursor::Cursor;

/// How many streams `logs -f` follows when `--max-log-requests` is not given: every replica the
/// job has, up to this. kubectl's default of 5 is for a pod selector, which may match anything;
/// here the job bounds the streams (a 1 PS + 8 worker job is ordinary), as stern follows all it
/// selects. The cap only keeps a job of thousands from opening as many connections.
pub const MAX_FOLLOWED_BY_DEFAULT: usize = 256;

/// What to print. Plain data: the CLI layer fills it from flags.
#[derive(Debug, Clone)]
pub struct LogsOptions {
    /// The job: a TFJob, or a JobSet the plugin made.
    pub target: Target,
    /// Container; `tensorflow` when None.
    pub container: Option<String>,
    /// Only this replica type (any case).
    pub replica_type: Option<String>,
    /// Only this replica index.
    pub index: Option<u32>,
    /// Keep following until the job finishes.
    pub follow: bool,
    /// The previous (crashed) container instance instead of the current one.
    pub previous: bool,
    /// Only lines newer than this many seconds (first request of each container).
    pub since_seconds: Option<i64>,
    /// Only lines at or after this time (first request of each container).
    pub since_time: Option<Timestamp>,
    /// Only the last N lines of each container (first request).
    pub tail: Option<i64>,
    /// Keep the kubelet's RFC3339Nano timestamp on each line.
    pub timestamps: bool,
    /// `--max-log-requests`: concurrent log streams allowed; following more selected replicas
    /// than this is an error (as kubectl). `None`: every replica, up to
    /// [`MAX_FOLLOWED_BY_DEFAULT`].
    pub max_log_requests: Option<usize>,
    /// How long to wait for pods to exist and start before giving up.
    pub timeout: Duration,
    /// Colour the prefixes (the caller knows whether stdout is a terminal).
    pub colour: bool,
    /// `--save DIR`: the job's evidence written before the logs are printed, and again when a
    /// followed job ends.
    pub save: Option<super::evidence::SaveOptions>,
}

impl LogsOptions {
    /// Defaults as the CLI documents them.
    pub fn new(job: impl Into<String>) -> Self {
        LogsOptions {
            target: Target::TfJob(job.into()),
            container: None,
            replica_type: None,
            index: None,
            follow: false,
            previous: false,
            since_seconds: None,
            since_time: None,
            tail: None,
            timestamps: false,
            max_log_requests: None,
            timeout: Duration::from_secs(300),
            colour: false,
            save: None,
        }
    }

    /// The job's name.
    pub fn job(&self) -> &str {
        self.target.name()
    }

    fn container(&self) -> &str {
        self.container
            .as_deref()
            .unwrap_or(model::DEFAULT_CONTAINER_NAME)
    }
}

/// How the logs ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogsSummary {
    /// Lines written to stdout.
    pub lines: u64,
    /// Pod instances whose logs were read.
    pub pods: usize,
    /// The job's final condition when following ended because it finished.
    pub finished: Option<String>,
}

mod cursor;
mod follow;
mod stream;

use follow::{Follow, Printed};

/// `kubectl tfjob logs TARGET`: the replicas' logs (a TFJob's or a JobSet's alike), in the
/// context's namespace.
pub async fn run(ctx: &Context, opts: LogsOptions, out: &mut Output) -> Result<()> {
    ctx.with_streams(out, async |kube, ns, data, notes| {
        logs(kube, ns, &opts, data, notes).await
    })
    .await
}

/// Prints the logs of the job's replicas to `out`; progress and waiting reasons to `err`.
/// Ends with `Error::JobFailed` when following a job that fails (as `wait` does),
/// `Error::Timeout` when no selected pod started within `opts.timeout`.
pub async fn logs(
    kube: &Kube,
    namespace: &str,
    opts: &LogsOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<LogsSummary> {
    let kind = opts.target.kind().to_ascii_lowercase();
    kube.deadline
        .phase(format!("reading {kind} {namespace}/{}", opts.job()));
    let job = read_job(kube, opts).await?;
    // What an interrupt or the deadline names from here on.
    let how = if opts.follow { "following" } else { "reading" };
    kube.deadline.phase(format!(
        "{how} the logs of {kind} {namespace}/{}",
        opts.job()
    ));
    // A key a container printed is scrubbed from stdout and from saved files alike: reading
    // the job registered every value its pods' environment takes from Secrets (ops::workload).
    let save_until = crate::cluster::budget::after(opts.timeout);
    let mut saver = opts.save.clone().map(|s| {
        super::evidence::Saver::new(
            s,
            namespace,
            opts.job(),
            crate::ops::wait::DEFAULT_MAX_RESTARTS,
        )
    });
    if let Some(saver) = saver.as_mut() {
        saver.save(kube, "logs --save", save_until, err).await?;
    }
    let (expected, allowed) = streams(&job, opts)?;

    let mut follow = Follow::new(kube, namespace, opts, &job, expected, allowed);
    match follow.print(out, err).await? {
        Printed::PodsGone => return Err(pods_gone(kube, namespace, &job, opts, saver.as_ref())),
        Printed::NotStarted(why) => return Err(not_started(kube, namespace, &job, opts, &why)),
        Printed::Done => {}
    }
    // A followed job that ended: its evidence once more, before the operator's cleanup.
    if opts.follow
        && follow.finished.is_some()
        && let Some(saver) = saver.as_mut()
    {
        saver
            .save(kube, "the followed job ended", save_until, err)
            .await?;
    }
    follow.end()
}

/// The job, read within `--timeout`: following, it bounds waiting for the pods, so it bounds
/// reading the job too (an API server that does not answer ends the command then, not when the
/// retries give up).
async fn read_job(kube: &Kube, opts: &LogsOptions) -> Result<Workload> {
    let read = Workload::read(kube, &opts.target);
    // Without -f, --timeout is the command's own deadline already: a second timer of the same
    // length would race it for which words end the command.
    if !opts.follow {
        return read.await;
    }
    kube.deadline
        .within(opts.timeout, read)
        .await
        .ok_or_else(|| {
            Error::Timeout(format!(
                "{} {} could not be read within {} (--timeout): the API server did not answer",
                opts.target.kind().to_ascii_lowercase(),
                opts.job(),
                crate::model::duration::go(opts.timeout)
            ))
        })?
}

/// How many replicas the selection expects, and how many streams may be read at once; a
/// selection that matches nothing, or a follow of more streams than allowed, is refused.
fn streams(job: &Workload, opts: &LogsOptions) -> Result<(usize, usize)> {
    let expected = job.expected_selected(opts.replica_type.as_deref(), opts.index);
    if expected == 0 {
        return Err(Error::Usage(format!(
            "{} {} has no replica matching{}{}",
            job.kind(),
            opts.job(),
            opts.replica_type
                .as_deref()
                .map(|t| format!(" --replica-type {t}"))
                .unwrap_or_default(),
            opts.index
                .map(|i| format!(" --index {i}"))
                .unwrap_or_default()
        )));
    }
    // kubectl (polymorphichelpers/logs): following more streams than allowed is an error.
    let allowed = opts.max_log_requests.unwrap_or(MAX_FOLLOWED_BY_DEFAULT);
    if opts.follow && expected > allowed {
        return Err(Error::Usage(format!(
            "you are attempting to follow {expected} log streams, but maximum allowed concurrency is {allowed}, use --max-log-requests to increase the limit"
        )));
    }
    Ok((expected, allowed))
}

/// Without -f, no selected pod has started: nothing to read yet. `kubectl logs` answers a pod
/// still waiting to start at once (`is waiting to start: ContainerCreating`), so this does too:
/// exit 3, as `probe` says of a replica not running, with the commands that wait and explain.
fn not_started(
    kube: &Kube,
    namespace: &str,
    job: &Workload,
    opts: &LogsOptions,
    why: &str,
) -> Error {
    let flags = kube.hints.ns_flags(namespace);
    let target = match job {
        Workload::TfJob(_) => opts.job().to_string(),
        _ => format!("{}/{}", job.kind().to_ascii_lowercase(), opts.job()),
    };
    Error::NotReady {
        message: format!(
            "no pod of {} {} has started yet{}",
            job.kind(),
            opts.job(),
            if why.is_empty() {
                String::new()
            } else {
                format!(": {why}")
            }
        ),
        hint: Some(format!(
            "`kubectl tfjob logs {target} {flags} -f` waits for them (up to --timeout); `kubectl tfjob diagnose {target} {flags}` says why they wait."
        )),
    }
}

/// A finished job whose selected pods are gone: their logs went with them (the operator's
/// cleanPodPolicy deletes the pods of an ended job, training-operator
/// `pkg/controller.v1/common/job.go` DeletePodsAndServices). Said, with where to look instead
/// and how to keep them next time.
fn pods_gone(
    kube: &Kube,
    namespace: &str,
    job: &Workload,
    opts: &LogsOptions,
    saver: Option<&super::evidence::Saver>,
) -> Error {
    let name = opts.job();
    let flags = kube.hints.ns_flags(namespace);
    let state = job.ended().map(|e| e.condition).unwrap_or_default();
    let Workload::TfJob(tfjob) = job else {
        return Error::NotReady {
            message: format!(
                "jobset {name} has finished ({state}) and its pods are gone: their logs went with them, there is no log to print"
            ),
            hint: Some(format!(
                "`kubectl tfjob diagnose jobset/{name} {flags}` says what is left of it."
            )),
        };
    };
    let policy = tfjob
        .spec
        .run_policy
        .as_ref()
        .and_then(|r| r.clean_pod_policy.as_deref())
        .filter(|p| matches!(*p, "All" | "Running"))
        .map(|p| format!(" (runPolicy.cleanPodPolicy {p} deletes the pods of an ended job)"))
        .unwrap_or_default();
    let now = saver.and_then(|s| s.folder());
    let mut kept = match now {
        Some(folder) => format!(
            "What is left (the job, its events, the failure classes) was saved in {}. ",
            folder.display()
        ),
        None => String::new(),
    };
    // An earlier `--save` into the same folder may hold the logs the cleanup deleted.
    if let Some(dir) = opts.save.as_ref().map(|s| &s.dir)
        && let Some((folder, logs)) = earlier_save(dir, name, now)
    {
        kept.push_str(&format!(
            "The logs saved before the cleanup are in {} ({logs} log file(s)). ",
            folder.display()
        ));
    }
    Error::NotReady {
        message: format!(
            "tfjob {name} has finished ({state}) and its pods are gone{policy}: their logs went with them, there is no log to print"
        ),
        hint: Some(format!(
            "{kept}`kubectl tfjob diagnose {name} {flags}` names the failed replicas from the operator's events. Next time `kubectl tfjob wait {name} {flags} --save DIR` (or `submit --wait --save DIR`, `logs -f --save DIR`) keeps the logs before the cleanup."
        )),
    }
}

/// The newest `<job>-<time>` folder under `dir` that holds saved logs (`<pod>/<container>.log`),
/// other than `skip` (the one just written), with how many logs it has.
fn earlier_save(
    dir: &std::path::Path,
    job: &str,
    skip: Option<&std::path::Path>,
) -> Option<(std::path::PathBuf, usize)> {
    let prefix = format!("{job}-");
    let mut found: Vec<(std::path::PathBuf, usize)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && Some(p.as_path()) != skip
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
        })
        .filter_map(|p| {
            let logs = std::fs::read_dir(&p)
                .ok()?
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .flat_map(|pod| std::fs::read_dir(pod.path()).into_iter().flatten())
                .filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                .count();
            (logs > 0).then_some((p, logs))
        })
        .collect();
    // The folder names end in the UTC time: the greatest name is the newest.
    found.sort();
    found.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_save_with_logs_is_found_and_the_new_one_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let make = |name: &str, log: bool| {
            let pod = dir.path().join(name).join("j-worker-0");
            std::fs::create_dir_all(&pod).unwrap();
            if log {
                std::fs::write(pod.join("tensorflow.log"), "x").unwrap();
            }
            dir.path().join(name)
        };
        let old = make("j-20261201T100000Z", true);
        let newer = make("j-20261202T100000Z", true);
        let empty = make("j-20261203T100000Z", false);
        make("other-20261204T100000Z", true);
        assert_eq!(
            earlier_save(dir.path(), "j", Some(&empty)),
            Some((newer.clone(), 1))
        );
        assert_eq!(earlier_save(dir.path(), "j", Some(&newer)), Some((old, 1)));
        assert_eq!(earlier_save(dir.path(), "nobody", None), None);
    }
}
