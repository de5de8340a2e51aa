//! The main loop of one `logs` run: the job's and its pods' watches, a reading task per pod
//! instance, and what came of them.

use futures::TryStreamExt;

use super::stream::{Instance, Msg, PodTask, instance};
use super::*;
use crate::model::TFJob;
use crate::pipeline::jobset::model::JobSet;

/// The job's pods as the watch shows them, one reading task per pod instance, and what came
/// of them: the state of one `logs` run.
pub(super) struct Follow<'a> {
    kube: &'a Kube,
    namespace: &'a str,
    opts: &'a LogsOptions,
    job: &'a Workload,
    expected: usize,
    sem: Arc<Semaphore>,
    tx: mpsc::Sender<Msg>,
    rx: mpsc::Receiver<Msg>,
    job_watch: futures::stream::BoxStream<'static, std::result::Result<Workload, watcher::Error>>,
    pod_events: futures::stream::BoxStream<
        'static,
        std::result::Result<watcher::Event<Pod>, watcher::Error>,
    >,
    /// A reading task per pod uid, told the pod's latest state (None: gone).
    tasks: HashMap<String, watch::Sender<Option<Arc<Pod>>>>,
    /// The prefix colour slot of each replica label.
    slots: BTreeMap<String, usize>,
    known: HashMap<String, Arc<Pod>>,
    /// A re-list being gathered.
    init: Option<HashMap<String, Arc<Pod>>>,
    running_tasks: usize,
    started_any: bool,
    /// Nothing is concluded about pods before the first list arrived.
    listed: bool,
    /// The job's final condition, once it ended.
    pub(super) finished: Option<String>,
    last_wait_note: String,
    reads: usize,
    unreadable: Vec<String>,
    summary: LogsSummary,
    failed_msg: Option<String>,
    restarts: crate::ops::wait::Tracker,
    restart_limits: crate::ops::wait::Limits,
    /// Ended by a crash loop.
    stopped: bool,
    deadline: tokio::time::Instant,
    done_tx: watch::Sender<bool>,
    done_rx: watch::Receiver<bool>,
}

impl<'a> Follow<'a> {
    pub(super) fn new(
        kube: &'a Kube,
        namespace: &'a str,
        opts: &'a LogsOptions,
        job: &'a Workload,
        expected: usize,
        allowed: usize,
    ) -> Self {
        let pods: Api<Pod> = Api::namespaced(kube.client.clone(), namespace);
        let by_name = watcher::Config::default().fields(&format!("metadata.name={}", opts.job()));
        let job_watch = match job {
            Workload::TfJob(_) => {
                let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), namespace);
                let w = watcher(jobs, by_name).default_backoff().applied_objects();
                w.map_ok(Workload::TfJob).boxed()
            }
            Workload::JobSet(_) => {
                let jobsets: Api<JobSet> = Api::namespaced(kube.client.clone(), namespace);
                let w = watcher(jobsets, by_name)
                    .default_backoff()
                    .applied_objects();
                w.map_ok(Workload::JobSet).boxed()
            }
        };
        let pod_events = watcher(pods, watcher::Config::default().labels(&job.selector()))
            .default_backoff()
            .boxed();
        let (tx, rx) = mpsc::channel::<Msg>(64);
        let (done_tx, done_rx) = watch::channel(false);
        Follow {
            kube,
            namespace,
            opts,
            job,
            expected,
            sem: Arc::new(Semaphore::new(if opts.follow {
                allowed.max(1)
            } else {
                1 // one after another: each replica's lines stay together
            })),
            tx,
            rx,
            job_watch,
            pod_events,
            tasks: HashMap::new(),
            slots: BTreeMap::new(),
            known: HashMap::new(),
            init: None,
            running_tasks: 0,
            started_any: false,
            listed: false,
            finished: job.ended().map(|e| e.condition),
            last_wait_note: String::new(),
            reads: 0,
            unreadable: Vec::new(),
            summary: LogsSummary {
                lines: 0,
                pods: 0,
                finished: None,
            },
            failed_msg: None,
            restarts: crate::ops::wait::Tracker::starting_at(Timestamp::now()),
            restart_limits: crate::ops::wait::Limits::from(
                &crate::ops::wait::WaitOptions::default(),
            ),
            stopped: false,
            deadline: tokio::time::Instant::from_std(crate::cluster::budget::after(opts.timeout)),
            done_tx,
            done_rx,
        }
    }

    /// Prints until every stream ended (or, following, the job ended), or finds the job ended
    /// with none of its selected pods left to read.
    pub(super) async fn print(
        &mut self,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<Printed> {
        let io = |e: std::io::Error| Error::io("writing logs", e);
        loop {
            let waiting = self.dispatch();
            // A finished job's missing pods are not awaited: they are gone (said by the
            // caller), not about to be created.
            let missing = self
                .expected
                .saturating_sub(self.tasks.len() + waiting.len());
            self.say_waiting(&waiting, missing, err).map_err(io)?;
            let job_done = self.finished.is_some();
            let unstarted = missing + waiting.len();
            if self.running_tasks == 0 && self.listed {
                if job_done && !self.started_any {
                    // Nothing to print is not an empty log: say where the logs went.
                    return Ok(Printed::PodsGone);
                }
                // Without -f, as `kubectl logs` answers for a pod still waiting to start: the
                // logs of the replicas that started, the others named on stderr (said above);
                // none started is exit 3 at once, with the command that waits for them.
                if (self.opts.follow && job_done) || (!self.opts.follow && self.started_any) {
                    break;
                }
                if !self.opts.follow && !job_done && unstarted > 0 {
                    return Ok(Printed::NotStarted(self.last_wait_note.clone()));
                }
            }
            // The timeout bounds waiting for pods to start, not a job that runs and prints.
            let timing_out = unstarted > 0 && !(self.opts.follow && self.started_any) && !job_done;
            if timing_out && tokio::time::Instant::now() >= self.deadline {
                return Err(self.timed_out());
            }
            tokio::select! {
                m = self.rx.recv() => match m {
                    Some(m) => self.on_message(m, out, err).map_err(io)?,
                    None => break,
                },
                ev = self.pod_events.next() => match ev {
                    Some(ev) => self.on_pod_event(ev, err).map_err(io)?,
                    None => break,
                },
                // Without -f the job matters only while a listed pod has not started (its
                // end stops the wait); a watch not polled sends nothing, so a read of running
                // pods costs the same requests whatever the timing.
                j = self.job_watch.next(), if self.finished.is_none()
                    && (self.opts.follow || (self.listed && unstarted > 0)) => {
                    if let Some(j) = j {
                        self.on_job(j);
                    }
                }
                _ = tokio::time::sleep_until(self.deadline), if timing_out => {}
            }
            if self.finished.is_some() {
                self.done_tx.send_replace(true);
            }
            // Ended by a crash loop: the other replicas still run and their streams would
            // never end, so stop here (the operator's Failed, by contrast, ends them with the
            // pods).
            if self.stopped {
                break;
            }
        }
        out.flush().map_err(io)?;
        Ok(Printed::Done)
    }

    /// Gives each selected pod instance its reading task (a new uid: a new task; a known one
    /// is told the pod's state). Returns the selected pods not started yet, with why.
    fn dispatch(&mut self) -> Vec<(String, String)> {
        let opts = self.opts;
        let mut waiting: Vec<(String, String)> = Vec::new();
        let mut ordered: Vec<Arc<Pod>> = self.known.values().cloned().collect();
        ordered.sort_by_key(|p| jobview::replica_order(&self.job.pod_label(p)));
        for p in ordered {
            if !self
                .job
                .selects(&p, opts.replica_type.as_deref(), opts.index)
            {
                continue;
            }
            let uid = p.uid().unwrap_or_default();
            let label = self.job.pod_label(&p);
            if let Some(s) = self.tasks.get(&uid) {
                s.send_replace(Some(p.clone()));
                continue;
            }
            let inst = instance(&p, opts.container());
            if let Instance::NotStarted(reason) = &inst {
                waiting.push((label.clone(), reason.clone()));
                if !opts.previous {
                    continue;
                }
            }
            let n = self.slots.len();
            let slot = *self.slots.entry(label.clone()).or_insert(n);
            let (stx, srx) = watch::channel(Some(p.clone()));
            self.tasks.insert(uid, stx);
            let task = PodTask {
                pods: Api::namespaced(self.kube.client.clone(), self.namespace),
                name: p.name_any(),
                label: Arc::from(label.as_str()),
                slot,
                opts: opts.clone(),
                state: srx,
                tx: self.tx.clone(),
                sem: self.sem.clone(),
                job_done: self.done_rx.clone(),
                request_timeout: self.kube.request_timeout,
            };
            self.running_tasks += 1;
            self.summary.pods += 1;
            self.started_any = true;
            tokio::spawn(task.run());
        }
        waiting
    }

    /// Says why the command waits, once per change.
    fn say_waiting(
        &mut self,
        waiting: &[(String, String)],
        missing: usize,
        err: &mut dyn Write,
    ) -> std::io::Result<()> {
        if !self.listed
            || self.finished.is_some()
            || (waiting.is_empty() && (missing == 0 || self.started_any))
        {
            return Ok(());
        }
        let mut note = String::new();
        if missing > 0 && !self.started_any {
            note = format!(
                "waiting for {missing} pod(s) of {} {} to be created",
                self.job.kind(),
                self.opts.job()
            );
        }
        for (l, r) in waiting {
            if !note.is_empty() {
                note.push_str("; ");
            }
            note.push_str(&format!("{l} is not running yet ({r})"));
        }
        if note != self.last_wait_note {
            writeln!(err, "{note}")?;
            self.last_wait_note = note;
        }
        Ok(())
    }

    fn timed_out(&self) -> Error {
        Error::Timeout(format!(
            "no pod of {} {} started within {}s{}",
            self.job.kind(),
            self.opts.job(),
            self.opts.timeout.as_secs(),
            if self.last_wait_note.is_empty() {
                String::new()
            } else {
                format!(": {}", self.last_wait_note)
            }
        ))
    }

    fn on_message(
        &mut self,
        m: Msg,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> std::io::Result<()> {
        match m {
            Msg::Line { label, slot, text } => {
                let prefix = jobview::log_prefix(
                    &crate::print::terminal::escape(&label),
                    slot,
                    self.opts.colour,
                );
                writeln!(out, "{prefix}{text}")?;
                self.summary.lines += 1;
            }
            Msg::Read => self.reads += 1,
            Msg::Unreadable(n) => {
                writeln!(err, "{n}")?;
                self.unreadable.push(n);
            }
            Msg::Done => self.running_tasks -= 1,
        }
        Ok(())
    }

    fn on_pod_event(
        &mut self,
        ev: std::result::Result<watcher::Event<Pod>, watcher::Error>,
        err: &mut dyn Write,
    ) -> std::io::Result<()> {
        match ev {
            Ok(watcher::Event::Init) => self.init = Some(HashMap::new()),
            Ok(watcher::Event::InitApply(p)) => {
                if let Some(m) = self.init.as_mut() {
                    m.insert(p.uid().unwrap_or_default(), Arc::new(p));
                }
            }
            Ok(watcher::Event::InitDone) => {
                // A re-list: pods missing from it are gone.
                if let Some(m) = self.init.take() {
                    self.known = m;
                    self.listed = true;
                    let known = &self.known;
                    self.tasks.retain(|uid, s| {
                        let keep = known.contains_key(uid);
                        if !keep {
                            s.send_replace(None);
                        }
                        keep
                    });
                }
            }
            Ok(watcher::Event::Apply(p)) => {
                self.known.insert(p.uid().unwrap_or_default(), Arc::new(p));
                // Followed, the job also ends as `wait` ends it: a crash loop or a pod that
                // fails for good; a restart is shown, not an end.
                // A JobSet's own failurePolicy decides its end: its Failed condition says it.
                if self.opts.follow
                    && self.finished.is_none()
                    && let Workload::TfJob(tfjob) = self.job
                {
                    let pods: Vec<Arc<Pod>> = self.known.values().cloned().collect();
                    let failed = crate::ops::wait::restarts::pods_failed(
                        tfjob,
                        &pods,
                        &mut self.restarts,
                        self.restart_limits,
                        crate::ops::wait::Now::current(),
                    );
                    // On stderr, so stdout stays the log: where one instance's lines end and
                    // the restarted one's begin.
                    for r in self.restarts.take_restarted() {
                        writeln!(err, "{}", r.marker())?;
                    }
                    if let Some(m) = failed {
                        self.failed_msg = Some(m);
                        self.finished = Some(model::condition::FAILED.to_string());
                        self.stopped = true;
                    }
                }
            }
            Ok(watcher::Event::Delete(p)) => {
                let uid = p.uid().unwrap_or_default();
                self.known.remove(&uid);
                if let Some(s) = self.tasks.get(&uid) {
                    s.send_replace(None);
                }
            }
            Err(e) => tracing::debug!("pod watch: {e}"),
        }
        Ok(())
    }

    fn on_job(&mut self, j: std::result::Result<Workload, watcher::Error>) {
        match j.map(|j| j.ended()) {
            Ok(Some(ended)) => {
                if ended.failure.is_some() {
                    self.failed_msg = ended.failure;
                }
                self.finished = Some(ended.condition);
            }
            Ok(None) => {}
            Err(e) => tracing::debug!("job watch: {e}"),
        }
    }

    /// How the run ended: kubectl logs exits non-zero when it could read nothing, and so does
    /// this, naming why; a followed job that failed is the job's failure.
    pub(super) fn end(self) -> Result<LogsSummary> {
        if self.reads == 0 && !self.unreadable.is_empty() {
            // Each replica's reason was said as it came (issue 61 item 11: each fact once).
            return Err(Error::Other(format!(
                "no log of {} {} could be read ({} replica(s), each with its reason above)",
                self.job.kind(),
                self.opts.job(),
                self.unreadable.len()
            )));
        }
        if self.opts.follow
            && let Some(m) = self.failed_msg
        {
            return Err(Error::JobFailed(m));
        }
        Ok(LogsSummary {
            finished: self.finished,
            ..self.summary
        })
    }
}

/// How [`Follow::print`] ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Printed {
    Done,
    /// The job ended and none of its selected pods is left to read.
    PodsGone,
    /// Without -f: no selected pod has started yet; why, as said on stderr.
    NotStarted(String),
}
