//! `logs`: the `tensorflow` container (or another) of every replica pod, each line prefixed with
//! its replica, in arrival order; with `follow`, pods that start, restart or are recreated are
//! picked up and the command ends when the job finishes.
//!
//! Shape: one watch of the TFJob and one of its pods (spec-less, by label) feed the main loop;
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
use crate::cluster::client as kubeapi;
use crate::cluster::pod::{Pod, PodFacts};
use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::output::Output;
use crate::print::jobview::{self, Cursor};

/// How many streams `logs -f` follows when `--max-log-requests` is not given: every replica the
/// job has, up to this. kubectl's default of 5 is for a pod selector, which may match anything;
/// here the job bounds the streams (a 1 PS + 8 worker job is ordinary), as stern follows all it
/// selects. The cap only keeps a job of thousands from opening as many connections.
pub const MAX_FOLLOWED_BY_DEFAULT: usize = 256;

/// What to print. Plain data: the CLI layer fills it from flags.
#[derive(Debug, Clone)]
pub struct LogsOptions {
    /// The TFJob.
    pub job: String,
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
            job: job.into(),
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

enum Msg {
    Line {
        label: Arc<str>,
        slot: usize,
        text: String,
    },
    /// One log request answered (whatever it held).
    Read,
    /// A replica's log could not be read; the note says why.
    Unreadable(String),
    Done,
}

/// The longest piece of one log line printed at once: a line that never ends is printed in
/// pieces of this size, each with its replica's prefix, instead of being held whole.
pub const PIECE: usize = 64 * 1024;

/// Pure: where to cut a full buffer so no UTF-8 character is split (at most 3 bytes back).
fn cut_at_char(buf: &[u8]) -> usize {
    let mut cut = buf.len();
    while cut > 0 && buf.len() - cut < 4 && (buf[cut - 1] & 0xC0) == 0x80 {
        cut -= 1;
    }
    // `cut - 1` is now a lead byte (or ASCII): keep it only if its character is complete.
    if cut > 0 {
        let lead = buf[cut - 1];
        let want = match lead {
            b if b < 0x80 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            b if b >= 0xC0 => 2,
            _ => 1,
        };
        if buf.len() - (cut - 1) < want {
            return cut - 1;
        }
    }
    buf.len()
}

/// Log lines read in pieces of at most [`PIECE`] bytes: a line that ends is one piece (without
/// its `\n` or `\r\n`); a longer one is several.
struct Pieces<R> {
    reader: R,
    carry: Vec<u8>,
}

impl<R: futures::AsyncBufRead + Unpin> Pieces<R> {
    fn new(reader: R) -> Self {
        Pieces {
            reader,
            carry: Vec::new(),
        }
    }

    async fn next(&mut self) -> std::io::Result<Option<String>> {
        let mut buf = std::mem::take(&mut self.carry);
        loop {
            if let Some(i) = buf.iter().position(|&b| b == b'\n') {
                self.carry = buf.split_off(i + 1);
                buf.truncate(i);
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Ok(Some(String::from_utf8_lossy(&buf).into_owned()));
            }
            if buf.len() >= PIECE {
                let cut = cut_at_char(&buf[..PIECE]);
                self.carry = buf.split_off(cut);
                return Ok(Some(String::from_utf8_lossy(&buf).into_owned()));
            }
            let avail = self.reader.fill_buf().await?;
            if avail.is_empty() {
                return Ok((!buf.is_empty()).then(|| String::from_utf8_lossy(&buf).into_owned()));
            }
            let take = avail.len().min(PIECE + 1 - buf.len());
            buf.extend_from_slice(&avail[..take]);
            self.reader.consume_unpin(take);
        }
    }
}

/// The container instance a log request would reach, from the pod's status.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Instance {
    /// No node, or waiting with nothing to show: `reason` for the user.
    NotStarted(String),
    Running(String),
    Terminated(String),
    /// Waiting to restart; the last terminated instance is what the kubelet serves.
    BackOff(String),
}

fn instance(pod: &Pod, container: &str) -> Instance {
    let status = pod.status.as_ref();
    let cs = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|v| v.iter().find(|c| c.name == container));
    let Some(cs) = cs else {
        let sched = pod.not_scheduled();
        return Instance::NotStarted(match sched {
            Some(c) => format!(
                "{}: {}",
                c.reason.as_deref().unwrap_or("Unschedulable"),
                c.message.as_deref().unwrap_or("")
            ),
            None => "Pending".into(),
        });
    };
    let id = cs.container_id.clone().unwrap_or_default();
    let state = cs.state.as_ref();
    if state.and_then(|s| s.running.as_ref()).is_some() {
        return Instance::Running(id);
    }
    if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
        return Instance::Terminated(t.container_id.clone().unwrap_or(id));
    }
    let last = cs
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.container_id.clone());
    let reason = state
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.reason.clone())
        .unwrap_or_else(|| "ContainerCreating".into());
    match last {
        Some(l) => Instance::BackOff(l),
        None => Instance::NotStarted(reason),
    }
}

fn last_terminated(pod: &Pod, container: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == container)?
        .last_state
        .as_ref()?
        .terminated
        .as_ref()?
        .container_id
        .clone()
}

struct PodTask {
    /// The typed Pod API: `log_stream` needs k8s-openapi's `Pod`.
    pods: Api<k8s_openapi::api::core::v1::Pod>,
    name: String,
    label: Arc<str>,
    slot: usize,
    opts: LogsOptions,
    state: watch::Receiver<Option<Arc<Pod>>>,
    tx: mpsc::Sender<Msg>,
    sem: Arc<Semaphore>,
    /// Set when the job finished: a task with nothing left to read ends.
    job_done: watch::Receiver<bool>,
    /// `--request-timeout`: one log request, its body included, as kubectl bounds it
    /// (client-go's http.Client Timeout covers reading the body).
    request_timeout: Option<Duration>,
}

/// How one log request ended without an error.
#[derive(Debug, PartialEq, Eq)]
enum ReadEnd {
    /// The stream ended (the instance stopped, the log was read whole, or it dropped).
    Ended,
    /// `--request-timeout` ran out while the body was still coming.
    TimedOut(Duration),
}

impl PodTask {
    /// Reads one answer, sending the lines the cursor has not seen. Returns whether it ended
    /// cleanly (false: an error worth a retry).
    async fn read(
        &self,
        lp: &LogParams,
        cursor: &mut Cursor,
    ) -> std::result::Result<ReadEnd, kube::Error> {
        let _permit = self.sem.acquire().await;
        let Some(limit) = self.request_timeout else {
            return self.read_all(lp, cursor).await.map(|()| ReadEnd::Ended);
        };
        match tokio::time::timeout(limit, self.read_all(lp, cursor)).await {
            Ok(r) => r.map(|()| ReadEnd::Ended),
            Err(_) => Ok(ReadEnd::TimedOut(limit)),
        }
    }

    async fn read_all(
        &self,
        lp: &LogParams,
        cursor: &mut Cursor,
    ) -> std::result::Result<(), kube::Error> {
        let stream = self.pods.log_stream(&self.name, lp).await?;
        let mut lines = Pieces::new(stream);
        cursor.begin();
        while let Some(line) = lines.next().await.map_err(kube::Error::ReadEvents)? {
            let text = match crate::cluster::pod::split_timestamp(&line) {
                Some((ts, rest)) => {
                    if !cursor.accept(ts) {
                        continue;
                    }
                    if self.opts.timestamps {
                        line.clone()
                    } else {
                        rest.to_string()
                    }
                }
                None => line.clone(),
            };
            let msg = Msg::Line {
                label: self.label.clone(),
                slot: self.slot,
                text,
            };
            if self.tx.send(msg).await.is_err() {
                return Ok(());
            }
        }
        Ok(())
    }

    fn params(&self, cursor: &Cursor, first: bool, previous: bool) -> LogParams {
        let mut lp = LogParams {
            container: Some(self.opts.container().to_string()),
            follow: self.opts.follow && !previous,
            previous,
            timestamps: true,
            ..Default::default()
        };
        if let Some(since) = cursor.resume_from() {
            lp.since_time = Some(since);
        } else if first {
            lp.since_seconds = self.opts.since_seconds;
            lp.since_time = self.opts.since_time;
            lp.tail_lines = self.opts.tail;
        }
        lp
    }

    async fn run(mut self) {
        let container = self.opts.container().to_string();
        let mut cursor = Cursor::default();
        let mut done: Vec<String> = Vec::new();
        let mut first = true;
        let mut failures = 0u32;
        loop {
            // Wait for an instance we have not finished reading.
            let pick = |p: &Option<Arc<Pod>>| -> Option<Instance> {
                let inst = instance(p.as_ref()?, &container);
                match &inst {
                    Instance::Running(id) | Instance::Terminated(id) | Instance::BackOff(id)
                        if !done.contains(id) =>
                    {
                        Some(inst)
                    }
                    _ => None,
                }
            };
            let inst = loop {
                let cur = self.state.borrow_and_update().clone();
                if cur.is_none() {
                    let _ = self.tx.send(Msg::Done).await;
                    return;
                }
                if let Some(i) = pick(&cur) {
                    break i;
                }
                if (!self.opts.follow && !first) || *self.job_done.borrow() {
                    let _ = self.tx.send(Msg::Done).await;
                    return;
                }
                tokio::select! {
                    r = self.state.changed() => if r.is_err() {
                        let _ = self.tx.send(Msg::Done).await;
                        return;
                    },
                    _ = self.job_done.changed() => {}
                }
            };
            let (id, previous) = match (&inst, self.opts.previous) {
                (_, true) => (String::new(), true),
                (Instance::Running(id) | Instance::Terminated(id) | Instance::BackOff(id), _) => {
                    (id.clone(), false)
                }
                (Instance::NotStarted(_), _) => unreachable!("not picked"),
            };
            let lp = self.params(&cursor, first, previous);
            first = false;
            let read = self.read(&lp, &mut cursor).await;
            if let Ok(ReadEnd::TimedOut(limit)) = read
                && (previous || !self.opts.follow)
            {
                // Read whole is what was asked, and it did not end in time: say so, once.
                let _ = self
                    .tx
                    .send(Msg::Unreadable(format!(
                        "{}: the log did not end within --request-timeout {}; what came is \
                         printed above",
                        self.label,
                        crate::duration::go(limit)
                    )))
                    .await;
                let _ = self.tx.send(Msg::Done).await;
                return;
            }
            if let Err(e) = read {
                // 400 while the container is between states: wait for the next status.
                failures += 1;
                if failures > 5 || kubeapi::status_code(&e).is_some_and(|c| c != 400) {
                    let _ = self
                        .tx
                        .send(Msg::Unreadable(format!(
                            "{}: {}",
                            self.label,
                            crate::error::chain(&e)
                        )))
                        .await;
                    let _ = self.tx.send(Msg::Done).await;
                    return;
                }
                let _ = tokio::time::timeout(Duration::from_secs(1), self.state.changed()).await;
                continue;
            }
            failures = 0;
            let _ = self.tx.send(Msg::Read).await;
            if previous || !self.opts.follow {
                let _ = self.tx.send(Msg::Done).await;
                return;
            }
            // The stream ended: the instance stopped, or the connection dropped. The pod watch
            // may trail the log by a moment, so give it a bounded wait before reconnecting
            // (a reconnect is harmless: the cursor skips what was printed).
            let settled = tokio::time::timeout(Duration::from_secs(2), async {
                loop {
                    let cur = self.state.borrow_and_update().clone();
                    match cur.as_ref().map(|p| instance(p, &container)) {
                        Some(Instance::Running(r)) if r == id => {}
                        _ => return cur,
                    }
                    if self.state.changed().await.is_err() {
                        return None;
                    }
                }
            })
            .await;
            let Ok(cur) = settled else {
                continue; // still running: the stream dropped, resume from the cursor
            };
            done.push(id.clone());
            // Restarted: re-read the crashed instance from the last printed second, so lines it
            // wrote after our stream ended are not lost.
            if let Some(p) = cur
                && last_terminated(&p, &container).as_deref() == Some(id.as_str())
            {
                let lp = self.params(&cursor, false, true);
                let _ = self.read(&lp, &mut cursor).await;
            }
        }
    }
}

/// `kubectl tfjob logs NAME`: the replicas' logs, in the context's namespace.
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
    let client = &kube.client;
    let jobs: Api<TFJob> = Api::namespaced(client.clone(), namespace);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    // --timeout bounds waiting for the pods, so it bounds reading the job too: an API server
    // that does not answer ends the command then, not when the retries give up.
    let job = tokio::time::timeout(
        opts.timeout,
        cluster::retry(kube, || jobs.get_opt(&opts.job)),
    )
    .await
    .map_err(|_| {
        Error::Timeout(format!(
            "tfjob {} could not be read within {} (--timeout): the API server did not answer",
            opts.job,
            crate::duration::go(opts.timeout)
        ))
    })?
    .map_err(|e| cluster::tfjob_error(format!("reading tfjob {}", opts.job), e))?;
    let Some(job) = job else {
        return Err(cluster::notfound::tfjob(kube, namespace, &opts.job).await);
    };
    // A key a container printed is scrubbed from stdout and from saved files alike: the
    // values the pods' environment takes from Secrets are registered before any line.
    let mut secrets_read = std::collections::BTreeSet::new();
    let specs = job
        .spec
        .tf_replica_specs
        .values()
        .filter_map(|r| r.template.spec.as_ref());
    for why in
        cluster::secret::register_env_secrets(kube, namespace, specs, &mut secrets_read).await
    {
        tracing::info!("{why}");
    }
    let save_until = std::time::Instant::now() + opts.timeout;
    let mut saver = opts.save.clone().map(|s| {
        super::evidence::Saver::new(
            s,
            namespace,
            &opts.job,
            crate::ops::wait::DEFAULT_MAX_RESTARTS,
        )
        .with_secrets_read(secrets_read.clone())
    });
    if let Some(saver) = saver.as_mut() {
        saver.save(kube, "logs --save", save_until, err).await?;
    }
    let expected = jobview::expected_replicas(&job, opts.replica_type.as_deref(), opts.index);
    if expected == 0 {
        return Err(Error::Usage(format!(
            "tfjob {} has no replica matching{}{}",
            opts.job,
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
    let sem = Arc::new(Semaphore::new(if opts.follow {
        allowed.max(1)
    } else {
        1 // one after another: each replica's lines stay together
    }));

    let job_watch = watcher(
        jobs,
        watcher::Config::default().fields(&format!("metadata.name={}", opts.job)),
    )
    .default_backoff()
    .applied_objects()
    .boxed();
    let pod_events = watcher(
        pods.clone(),
        watcher::Config::default().labels(&model::job_selector(&opts.job)),
    )
    .default_backoff()
    .boxed();
    let mut job_watch = job_watch;
    let mut pod_events = pod_events;

    let (tx, mut rx) = mpsc::channel::<Msg>(64);
    let mut tasks: HashMap<String, watch::Sender<Option<Arc<Pod>>>> = HashMap::new();
    let mut slots: BTreeMap<String, usize> = BTreeMap::new();
    let mut known: HashMap<String, Arc<Pod>> = HashMap::new();
    let mut init: Option<HashMap<String, Arc<Pod>>> = None;
    let mut running_tasks = 0usize;
    let mut started_any = false;
    // Nothing is concluded about pods before the first list arrived.
    let mut listed = false;
    let mut finished: Option<String> = None;
    let mut last_wait_note = String::new();
    let mut reads = 0usize;
    let mut unreadable: Vec<String> = Vec::new();
    let mut summary = LogsSummary {
        lines: 0,
        pods: 0,
        finished: None,
    };
    let mut failed_msg: Option<String> = None;
    let mut restarts = crate::ops::wait::Tracker::default();
    let mut stopped = false;
    let restart_limits = crate::ops::wait::Limits::from(&crate::ops::wait::WaitOptions::default());
    let deadline = tokio::time::Instant::now() + opts.timeout;
    let (done_tx, done_rx) = watch::channel(false);
    if job.is_finished() {
        finished = job.last_condition().map(|c| c.type_.clone());
    }
    let io = |e: std::io::Error| Error::io("writing logs", e);

    loop {
        // Dispatch pods to tasks (new uid → new task; gone → channel closed).
        let mut waiting: Vec<(String, String)> = Vec::new();
        let mut ordered: Vec<&Arc<Pod>> = known.values().collect();
        ordered.sort_by_key(|p| jobview::replica_order(&jobview::replica_label(p)));
        for p in ordered {
            if !jobview::selected(p, opts.replica_type.as_deref(), opts.index) {
                continue;
            }
            let uid = p.uid().unwrap_or_default();
            let label = jobview::replica_label(p);
            if let Some(s) = tasks.get(&uid) {
                s.send_replace(Some(p.clone()));
                continue;
            }
            let inst = instance(p, opts.container());
            if let Instance::NotStarted(reason) = &inst {
                waiting.push((label.clone(), reason.clone()));
                if !opts.previous {
                    continue;
                }
            }
            let n = slots.len();
            let slot = *slots.entry(label.clone()).or_insert(n);
            let (stx, srx) = watch::channel(Some(p.clone()));
            tasks.insert(uid, stx);
            let task = PodTask {
                pods: Api::namespaced(client.clone(), namespace),
                name: p.name_any(),
                label: Arc::from(label.as_str()),
                slot,
                opts: opts.clone(),
                state: srx,
                tx: tx.clone(),
                sem: sem.clone(),
                job_done: done_rx.clone(),
                request_timeout: kube.request_timeout,
            };
            running_tasks += 1;
            summary.pods += 1;
            started_any = true;
            tokio::spawn(task.run());
        }
        // Say why we wait, once per change. A finished job's missing pods are not awaited:
        // they are gone (said below), not about to be created.
        let missing = expected.saturating_sub(tasks.len() + waiting.len());
        if listed && finished.is_none() && (!waiting.is_empty() || (missing > 0 && !started_any)) {
            let mut note = String::new();
            if missing > 0 && !started_any {
                note = format!(
                    "waiting for {missing} pod(s) of tfjob {} to be created",
                    opts.job
                );
            }
            for (l, r) in &waiting {
                if !note.is_empty() {
                    note.push_str("; ");
                }
                note.push_str(&format!("{l} is not running yet ({r})"));
            }
            if note != last_wait_note {
                writeln!(err, "{note}").map_err(io)?;
                last_wait_note = note;
            }
        }
        let job_done = finished.is_some();
        let unstarted = missing + waiting.len();
        if running_tasks == 0 && listed {
            if job_done && !started_any {
                // Nothing to print is not an empty log: say where the logs went.
                return Err(pods_gone(kube, namespace, &job, opts, saver.as_ref()));
            }
            if (opts.follow && job_done)
                || (!opts.follow && started_any && (unstarted == 0 || job_done))
            {
                break;
            }
        }
        // The timeout bounds waiting for pods to start, not a job that runs and prints.
        let timing_out = unstarted > 0 && !(opts.follow && started_any) && !job_done;
        if timing_out && tokio::time::Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "no pod of tfjob {} started within {}s{}",
                opts.job,
                opts.timeout.as_secs(),
                if last_wait_note.is_empty() {
                    String::new()
                } else {
                    format!(": {last_wait_note}")
                }
            )));
        }
        tokio::select! {
            m = rx.recv() => match m {
                Some(Msg::Line { label, slot, text }) => {
                    let prefix = jobview::log_prefix(&crate::print::terminal::escape(&label), slot, opts.colour);
                    writeln!(out, "{prefix}{text}").map_err(io)?;
                    summary.lines += 1;
                }
                Some(Msg::Read) => reads += 1,
                Some(Msg::Unreadable(n)) => {
                    writeln!(err, "{n}").map_err(io)?;
                    unreadable.push(n);
                }
                Some(Msg::Done) => running_tasks -= 1,
                None => break,
            },
            ev = pod_events.next() => match ev {
                Some(Ok(watcher::Event::Init)) => init = Some(HashMap::new()),
                Some(Ok(watcher::Event::InitApply(p))) => {
                    if let Some(m) = init.as_mut() {
                        m.insert(p.uid().unwrap_or_default(), Arc::new(p));
                    }
                }
                Some(Ok(watcher::Event::InitDone)) => {
                    // A re-list: pods missing from it are gone.
                    if let Some(m) = init.take() {
                        known = m;
                        listed = true;
                        tasks.retain(|uid, s| {
                            let keep = known.contains_key(uid);
                            if !keep { s.send_replace(None); }
                            keep
                        });
                    }
                }
                Some(Ok(watcher::Event::Apply(p))) => {
                    known.insert(p.uid().unwrap_or_default(), Arc::new(p));
                    // Followed, the job also ends as `wait` ends it: a crash loop or a pod
                    // that fails for good; a restart is shown, not an end.
                    if opts.follow && finished.is_none() {
                        let pods: Vec<Arc<Pod>> = known.values().cloned().collect();
                        let failed = crate::ops::wait::restarts::pods_failed(
                            &job,
                            &pods,
                            &mut restarts,
                            restart_limits,
                            crate::ops::wait::Now::current(),
                        );
                        // On stderr, so stdout stays the log: where one instance's lines
                        // end and the restarted one's begin.
                        for r in restarts.take_restarted() {
                            writeln!(err, "{}", r.marker()).map_err(io)?;
                        }
                        if let Some(m) = failed {
                            failed_msg = Some(m);
                            finished = Some(model::condition::FAILED.to_string());
                            stopped = true;
                        }
                    }
                }
                Some(Ok(watcher::Event::Delete(p))) => {
                    let uid = p.uid().unwrap_or_default();
                    known.remove(&uid);
                    if let Some(s) = tasks.get(&uid) {
                        s.send_replace(None);
                    }
                }
                Some(Err(e)) => tracing::debug!("pod watch: {e}"),
                None => break,
            },
            j = job_watch.next(), if finished.is_none() => match j {
                Some(Ok(j)) if j.is_finished() => {
                    let last = j.last_condition().map(|c| c.type_.clone()).unwrap_or_default();
                    if j.is_failed() {
                        failed_msg = Some(format!(
                            "TFJob {} failed: {}",
                            opts.job,
                            j.condition(model::condition::FAILED)
                                .and_then(|c| c.message.clone())
                                .unwrap_or_else(|| "(no message)".into())
                        ));
                    }
                    finished = Some(last);
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => tracing::debug!("tfjob watch: {e}"),
                None => {}
            },
            _ = tokio::time::sleep_until(deadline), if timing_out => {}
        }
        if finished.is_some() {
            done_tx.send_replace(true);
        }
        // Ended by a crash loop: the other replicas still run and their streams would never
        // end, so stop here (the operator's Failed, by contrast, ends them with the pods).
        if stopped {
            break;
        }
    }
    out.flush().map_err(io)?;
    // A followed job that ended: its evidence once more, before the operator's cleanup.
    if opts.follow
        && finished.is_some()
        && let Some(saver) = saver.as_mut()
    {
        saver
            .save(kube, "the followed job ended", save_until, err)
            .await?;
    }
    // kubectl logs exits non-zero when it could read nothing; so does this, naming why.
    if reads == 0 && !unreadable.is_empty() {
        return Err(Error::Other(format!(
            "no log of tfjob {} could be read ({} replica(s) failed: {})",
            opts.job,
            unreadable.len(),
            unreadable.join("; ")
        )));
    }
    summary.finished = finished;
    if opts.follow
        && let Some(m) = failed_msg
    {
        return Err(Error::JobFailed(m));
    }
    Ok(summary)
}

/// A finished job whose selected pods are gone: their logs went with them (the operator's
/// cleanPodPolicy deletes the pods of an ended job, training-operator
/// `pkg/controller.v1/common/job.go` DeletePodsAndServices). Said, with where to look instead
/// and how to keep them next time.
fn pods_gone(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    opts: &LogsOptions,
    saver: Option<&super::evidence::Saver>,
) -> Error {
    let name = &opts.job;
    let flags = kube.hints.ns_flags(namespace);
    let policy = job
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
            "tfjob {name} has finished ({}) and its pods are gone{policy}: their logs went with them, there is no log to print",
            job.state()
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

    #[test]
    fn a_cut_never_splits_a_character() {
        assert_eq!(cut_at_char(b"abc"), 3);
        let e = "é".as_bytes(); // 2 bytes
        assert_eq!(cut_at_char(&[b'a', e[0]]), 1);
        assert_eq!(cut_at_char(&[b'a', e[0], e[1]]), 3);
        let euro = "€".as_bytes(); // 3 bytes
        assert_eq!(cut_at_char(&[b'a', euro[0], euro[1]]), 1);
    }

    #[tokio::test]
    async fn an_endless_line_comes_in_bounded_pieces() {
        let mut text = "short\r\n".to_string();
        text.push_str(&"x".repeat(PIECE * 2 + 10));
        text.push_str("\nlast");
        let mut p = Pieces::new(futures::io::Cursor::new(text.into_bytes()));
        assert_eq!(p.next().await.unwrap().unwrap(), "short");
        assert_eq!(p.next().await.unwrap().unwrap().len(), PIECE);
        assert_eq!(p.next().await.unwrap().unwrap().len(), PIECE);
        assert_eq!(p.next().await.unwrap().unwrap(), "x".repeat(10));
        assert_eq!(p.next().await.unwrap().unwrap(), "last");
        assert!(p.next().await.unwrap().is_none());
    }
}
