//! `--save DIR` (issue 37): a job's evidence written before the operator's cleanPodPolicy
//! deletes it. `wait` and `submit --wait` save as soon as a replica terminates and again when
//! the wait ends; `logs` saves what is there. Each save writes `DIR/<job>-<UTC time>/`:
//! `<pod>/<container>.log` and `.previous.log` (the last `--save-limit` bytes), `job.yaml`,
//! `pods.yaml`, `events.yaml` and `summary.txt` with the failure classes. A later save of the
//! same command adds to the folder and keeps what an earlier one read of pods gone since.
//!
//! The folder is checked before anything is submitted ([`check_dir`]). Files: the job folder
//! is made new (`create_dir`, never an existing one), each file is written to a new name
//! (`create_new` with `O_NOFOLLOW`: no symlink followed, nothing that existed overwritten)
//! and renamed into place inside the folder this command made (a rename replaces a directory
//! entry, it follows no link); each folder is checked not to be a symlink before a file goes
//! in. A full disk (ENOSPC) ends the command with what was written. The layout, the log tail
//! and the summary's text are [`crate::print::evidence`].

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, LogParams};

use crate::cluster::budget::Budget;
use crate::cluster::{self, Kube};
use crate::diagnose::failure::{self, ReplicaFailure};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::print::evidence::{self as layout, LogEntry, Tail};

/// `--save DIR` and `--save-limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveOptions {
    pub dir: PathBuf,
    /// Bytes kept of each log (its end).
    pub limit: u64,
}

/// Upper bound of one log read.
const LOG_READ_LIMIT: Duration = Duration::from_secs(30);

/// Refuses (exit 2, naming `--save` and the path) a DIR that is not a writable folder, before
/// anything is sent: a missing DIR is made (with its parents), a file or an unwritable folder
/// is refused. The probe file is made with `create_new` and removed.
pub fn check_dir(opts: &SaveOptions) -> Result<()> {
    let dir = &opts.dir;
    let refuse = |why: String| {
        Error::Usage(format!(
            "--save {}: {why}; give a folder this user can write to",
            dir.display()
        ))
    };
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => return Err(refuse("is not a folder (it is a file)".into())),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| refuse(format!("cannot be created: {e}")))?
        }
        Err(e) => return Err(refuse(format!("cannot be read: {e}"))),
    }
    let probe = dir.join(format!(".kubectl-tfjob-write-check-{}", std::process::id()));
    match new_file(&probe) {
        Ok(f) => {
            drop(f);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(refuse(format!("is not writable: {e}"))),
    }
}

/// A new file, never an existing one, never through a symlink.
fn new_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW).mode(0o644);
    }
    o.open(path)
}

/// A folder that is a real folder, not a symlink to one.
fn real_dir(path: &Path) -> std::io::Result<()> {
    let m = std::fs::symlink_metadata(path)?;
    if m.file_type().is_symlink() || !m.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a folder of its own (a symlink or a file): nothing is written through it",
            path.display()
        )));
    }
    Ok(())
}

/// The saves of one command for one job.
pub struct Saver {
    opts: SaveOptions,
    namespace: String,
    job: String,
    max_restarts: u32,
    folder: Option<PathBuf>,
    /// Terminations already saved for (pod uid, container, restart count, state).
    terminations: BTreeSet<String>,
    /// Every log by path, as the last save left it.
    logs: BTreeMap<String, LogEntry>,
    /// The latest version of every pod seen (pods gone since stay).
    pods: BTreeMap<String, Pod>,
    events: BTreeMap<String, Event>,
    job_object: Option<TFJob>,
    failures: Vec<ReplicaFailure>,
    /// Files in place (relative), for the summary and a full disk's message.
    written: BTreeSet<String>,
    temp_counter: u32,
    /// Where the evidence is was said (at the first save).
    announced: bool,
}

impl Saver {
    pub fn new(opts: SaveOptions, namespace: &str, job: &str, max_restarts: u32) -> Self {
        Saver {
            opts,
            namespace: namespace.into(),
            job: job.into(),
            max_restarts,
            folder: None,
            terminations: BTreeSet::new(),
            logs: BTreeMap::new(),
            pods: BTreeMap::new(),
            events: BTreeMap::new(),
            job_object: None,
            failures: Vec::new(),
            written: BTreeSet::new(),
            temp_counter: 0,
            announced: false,
        }
    }

    /// The job's folder, once a save made it.
    pub fn folder(&self) -> Option<&Path> {
        self.folder.as_deref()
    }

    /// Whether `pods` show a container termination (or a failed pod) no save has seen yet:
    /// the moment to save, before the operator reacts to it.
    pub fn new_termination<'a, I>(&mut self, pods: I) -> bool
    where
        I: IntoIterator<Item = &'a crate::cluster::pod::Pod>,
    {
        let mut new = false;
        for p in pods {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let status = p.status.as_ref();
            if status.and_then(|s| s.phase.as_deref()) == Some("Failed") {
                new |= self.terminations.insert(format!("{uid}/pod-failed"));
            }
            for cs in status
                .and_then(|s| s.container_statuses.as_ref())
                .into_iter()
                .flatten()
            {
                let ended = cs.state.as_ref().is_some_and(|s| s.terminated.is_some());
                let last = cs
                    .last_state
                    .as_ref()
                    .is_some_and(|s| s.terminated.is_some());
                if ended || last {
                    new |= self
                        .terminations
                        .insert(format!("{uid}/{}/{}/{ended}", cs.name, cs.restart_count));
                }
            }
        }
        new
    }

    /// One save: reads the job, its pods, their events and logs, and writes them with the
    /// summary. Unreadable pieces are listed in the summary; only a write that fails ends it.
    pub async fn save(
        &mut self,
        kube: &Kube,
        trigger: &str,
        end: Instant,
        err: &mut dyn Write,
    ) -> Result<()> {
        let folder = self.ensure_folder()?;
        let mut problems = Vec::new();
        let present = self.read_job_and_pods(kube, &mut problems).await;
        // A key a container logged is scrubbed from what is written: every Secret value the
        // pods' environment takes is registered before the first file is written.
        let specs = present
            .iter()
            .filter_map(|p| p.spec.as_ref())
            .chain(self.job_object.iter().flat_map(TFJob::pod_specs));
        problems.extend(cluster::secret::register_env_secrets(kube, &self.namespace, specs).await);
        let tails = self.save_logs(kube, &folder, &present, end).await?;
        self.read_events(kube, &mut problems).await;
        self.classify(&present, &tails);
        self.write_files(&folder, trigger, &problems, err)
    }

    /// The job and its pods there now (kept with those earlier saves saw).
    async fn read_job_and_pods(&mut self, kube: &Kube, problems: &mut Vec<String>) -> Vec<Pod> {
        let (ns, name) = (self.namespace.clone(), self.job.clone());
        let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), &ns);
        match cluster::retry(kube, || jobs.get_opt(&name)).await {
            Ok(Some(job)) => self.job_object = Some(job),
            Ok(None) => problems.push(format!("the job: TFJob {ns}/{name} is gone")),
            Err(e) => problems.push(format!("the job: {}", crate::error::chain(&e))),
        }
        // Its pods.
        let pods_api: Api<Pod> = Api::namespaced(kube.client.clone(), &ns);
        let lp = ListParams::default().labels(&model::job_selector(&name));
        let present: Vec<Pod> = match cluster::retry(kube, || pods_api.list(&lp)).await {
            Ok(list) => list.items,
            Err(e) => {
                problems.push(format!("the pods: {}", crate::error::chain(&e)));
                Vec::new()
            }
        };
        for p in &present {
            self.pods
                .insert(p.metadata.name.clone().unwrap_or_default(), p.clone());
        }
        present
    }

    /// Logs of the pods there now (those gone keep what an earlier save read), written as
    /// read. Returns the last lines of each pod's training container, for its failure class.
    async fn save_logs(
        &mut self,
        kube: &Kube,
        folder: &std::path::Path,
        present: &[Pod],
        end: Instant,
    ) -> Result<BTreeMap<String, String>> {
        let pods_api: Api<Pod> = Api::namespaced(kube.client.clone(), &self.namespace);
        let mut tails: BTreeMap<String, String> = BTreeMap::new();
        for p in present {
            let pod = p.metadata.name.clone().unwrap_or_default();
            for cs in p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .into_iter()
                .flatten()
            {
                let ended = cs.state.as_ref().is_some_and(|s| s.terminated.is_some());
                let started = ended || cs.state.as_ref().is_some_and(|s| s.running.is_some());
                let mut reads = Vec::new();
                if started || cs.restart_count > 0 {
                    reads.push((false, ended));
                }
                if cs
                    .last_state
                    .as_ref()
                    .is_some_and(|s| s.terminated.is_some())
                {
                    reads.push((true, true));
                }
                for (previous, final_) in reads {
                    let Some(path) = layout::log_path(&pod, &cs.name, previous) else {
                        continue;
                    };
                    // An ended instance saved whole needs no second read.
                    if matches!(
                        self.logs.get(&path),
                        Some(LogEntry::Saved { final_: true, .. })
                    ) {
                        continue;
                    }
                    let entry = match read_log(&pods_api, &pod, &cs.name, previous, &self.opts, end)
                        .await
                    {
                        Ok((bytes, dropped)) => {
                            let bytes = layout::scrubbed(&bytes);
                            if cs.name == model::DEFAULT_CONTAINER_NAME {
                                let text = String::from_utf8_lossy(&bytes);
                                let lines: Vec<&str> = text.lines().collect();
                                let tail = lines[lines.len().saturating_sub(50)..].join("\n");
                                // The crashed instance explains a restarted container.
                                if previous || !tails.contains_key(&pod) {
                                    tails.insert(pod.clone(), tail);
                                }
                            }
                            self.write(folder, &path, &bytes)?;
                            LogEntry::Saved { dropped, final_ }
                        }
                        Err(why) => LogEntry::Unreadable(why),
                    };
                    // A log read before stays: a later failure (the pod deleted) loses nothing.
                    let keep = matches!(self.logs.get(&path), Some(LogEntry::Saved { .. }))
                        && matches!(entry, LogEntry::Unreadable(_));
                    if !keep {
                        self.logs.insert(path, entry);
                    }
                }
            }
        }
        Ok(tails)
    }

    /// Events: the job's and its pods', added to those earlier saves read.
    async fn read_events(&mut self, kube: &Kube, problems: &mut Vec<String>) {
        let (ns, name) = (self.namespace.clone(), self.job.clone());
        let events: Api<Event> = Api::namespaced(kube.client.clone(), &ns);
        let on_job = ListParams::default().fields(&format!(
            "involvedObject.name={name},involvedObject.kind={}",
            model::KIND
        ));
        let mut job_events = Vec::new();
        match cluster::retry(kube, || events.list(&on_job)).await {
            Ok(list) => job_events = list.items,
            Err(e) => problems.push(format!("the job's events: {}", crate::error::chain(&e))),
        }
        let refs: Vec<cluster::events::PodRef> = self
            .pods
            .values()
            .map(|p| cluster::events::PodRef {
                name: p.metadata.name.clone().unwrap_or_default(),
                uid: p.metadata.uid.clone(),
            })
            .collect();
        match cluster::events::of_pods(kube, &ns, refs).await {
            Ok(read) => job_events.extend(read.events),
            Err(e) => problems.push(format!("the pods' events: {}", crate::error::chain(&e))),
        }
        for e in job_events {
            let key = e
                .metadata
                .uid
                .clone()
                .or_else(|| e.metadata.name.clone())
                .unwrap_or_default();
            self.events.insert(key, e);
        }
    }

    /// Failure classes: the pods there now, then what earlier saves said of pods gone, then the
    /// operator's events.
    fn classify(&mut self, present: &[Pod], tails: &BTreeMap<String, String>) {
        let (ns, name) = (self.namespace.clone(), self.job.clone());
        let mut classes: Vec<ReplicaFailure> = present
            .iter()
            .filter_map(|p| {
                let limit = failure::memory_limit(p.spec.as_ref());
                failure::classify(
                    failure::PodEvidence {
                        meta: &p.metadata,
                        status: p.status.as_ref(),
                        memory_limit: limit,
                        log: p
                            .metadata
                            .name
                            .as_ref()
                            .and_then(|n| tails.get(n))
                            .map(String::as_str),
                        node_not_ready: None,
                        max_restarts: self.max_restarts,
                        now: None,
                    },
                    Some(&name),
                )
            })
            .collect();
        failure::merge(&mut classes, std::mem::take(&mut self.failures));
        let all_events: Vec<Event> = self.events.values().cloned().collect();
        failure::merge(
            &mut classes,
            failure::from_operator_events(&all_events, &all_events, &ns, &name),
        );
        failure::order(&mut classes);
        self.failures = classes;
    }

    /// The objects, then the summary last (it lists what is in place), and one line on `err`.
    fn write_files(
        &mut self,
        folder: &std::path::Path,
        trigger: &str,
        problems: &[String],
        err: &mut dyn Write,
    ) -> Result<()> {
        let (ns, name) = (self.namespace.clone(), self.job.clone());
        if let Some(job) = &self.job_object {
            let yaml = layout::job_yaml(job);
            self.write(folder, layout::JOB, yaml.as_bytes())?;
        }
        let pods: Vec<Pod> = self.pods.values().cloned().collect();
        self.write(folder, layout::PODS, layout::pods_yaml(&pods).as_bytes())?;
        let mut events: Vec<Event> = self.events.values().cloned().collect();
        events.sort_by_key(|e| {
            e.last_timestamp
                .as_ref()
                .map(|t| t.0)
                .or(e.event_time.as_ref().map(|t| t.0))
        });
        self.write(
            folder,
            layout::EVENTS,
            layout::events_yaml(&events).as_bytes(),
        )?;
        let logs: Vec<(String, LogEntry)> = self
            .logs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let files: Vec<String> = [layout::JOB, layout::PODS, layout::EVENTS]
            .into_iter()
            .filter(|f| self.written.contains(*f))
            .map(String::from)
            .collect();
        let state = self.job_object.as_ref().map(|j| {
            (
                j.state(),
                j.last_condition()
                    .and_then(|c| c.message.clone())
                    .unwrap_or_default(),
            )
        });
        let text = layout::summary(&layout::Summary {
            job: &name,
            namespace: &ns,
            saved_at: k8s_openapi::jiff::Timestamp::now(),
            trigger,
            state,
            failures: &self.failures,
            logs: &logs,
            files: &files,
            problems,
            limit: self.opts.limit,
        });
        self.write(folder, layout::SUMMARY, text.as_bytes())?;
        let unreadable = logs
            .iter()
            .filter(|(_, e)| matches!(e, LogEntry::Unreadable(_)))
            .count();
        let saved = logs.len() - unreadable;
        // Said once, at the first save: later saves refresh the same folder (issue 61 item 11).
        if !self.announced {
            self.announced = true;
            let _ = writeln!(
                err,
                "Evidence saved in {} ({trigger}): {saved} log(s){}, the job, its pods and events, summary.txt; kept up to date until the wait ends",
                folder.display(),
                if unreadable > 0 {
                    format!(", {unreadable} unreadable (listed in summary.txt)")
                } else {
                    String::new()
                }
            );
        }
        Ok(())
    }

    /// The job's folder, made new under DIR on the first save.
    fn ensure_folder(&mut self) -> Result<PathBuf> {
        if let Some(f) = &self.folder {
            return Ok(f.clone());
        }
        let base = layout::folder_name(&self.job, k8s_openapi::jiff::Timestamp::now());
        let mut n = 1;
        loop {
            let name = if n == 1 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            let path = self.opts.dir.join(name);
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    real_dir(&path).map_err(|e| self.failed(&path, e))?;
                    self.folder = Some(path.clone());
                    return Ok(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(self.failed(&path, e)),
            }
        }
    }

    /// Writes `rel` (one or two components) in `folder`: a new file, then renamed into place.
    fn write(&mut self, folder: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
        let target = folder.join(rel);
        let parent = target.parent().unwrap_or(folder).to_path_buf();
        if parent != folder {
            match std::fs::create_dir(&parent) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(self.failed(&parent, e)),
            }
        }
        real_dir(folder).map_err(|e| self.failed(folder, e))?;
        real_dir(&parent).map_err(|e| self.failed(&parent, e))?;
        self.temp_counter += 1;
        let file = target
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = parent.join(format!(".{file}.part{}", self.temp_counter));
        let result = new_file(&temp).and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_data()
        });
        if let Err(e) = result {
            let _ = std::fs::remove_file(&temp);
            return Err(self.failed(&target, e));
        }
        if let Err(e) = std::fs::rename(&temp, &target) {
            let _ = std::fs::remove_file(&temp);
            return Err(self.failed(&target, e));
        }
        self.written.insert(rel.to_string());
        Ok(())
    }

    /// A write that failed: a full disk names what is in place; anything else names the path.
    fn failed(&self, path: &Path, e: std::io::Error) -> Error {
        let written = if self.written.is_empty() {
            "nothing".to_string()
        } else {
            self.written.iter().cloned().collect::<Vec<_>>().join(", ")
        };
        let folder = self
            .folder
            .as_deref()
            .unwrap_or(&self.opts.dir)
            .display()
            .to_string();
        if e.raw_os_error() == Some(28) {
            return Error::Other(format!(
                "--save: the disk is full (ENOSPC) writing {}; written in {folder} before it: {written}. Free space or give --save another folder",
                path.display()
            ));
        }
        Error::Other(format!(
            "--save: could not write {}: {e}; written in {folder} before it: {written}",
            path.display()
        ))
    }
}

/// One container log, once (a kubelet that cannot serve it answers 5xx, and a retry would
/// not help), its last `opts.limit` bytes; `Err` says why in the summary's words.
async fn read_log(
    api: &Api<Pod>,
    pod: &str,
    container: &str,
    previous: bool,
    opts: &SaveOptions,
    end: Instant,
) -> std::result::Result<(Vec<u8>, u64), String> {
    let lp = LogParams {
        container: Some(container.to_string()),
        previous,
        ..Default::default()
    };
    let limit = LOG_READ_LIMIT.min(end.saturating_duration_since(Instant::now()));
    if limit.is_zero() {
        return Err("not read: --timeout ran out".into());
    }
    let read = async {
        let mut stream = api.log_stream(pod, &lp).await.map_err(|e| explain(&e))?;
        let mut tail = Tail::new(opts.limit);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = stream
                .read(&mut buf)
                .await
                .map_err(|e| format!("the log stream broke: {e}"))?;
            if n == 0 {
                break;
            }
            tail.push(&buf[..n]);
        }
        Ok(tail.finish())
    };
    match Budget::new(limit).attempt(read).await {
        Some(r) => r,
        None => Err(format!("not read within {}s", limit.as_secs())),
    }
}

/// Why a log read failed, as the summary says it.
fn explain(e: &kube::Error) -> String {
    let message = match e {
        kube::Error::Api(s) => format!("HTTP {}: {}", s.code, s.message),
        other => crate::error::chain(other),
    };
    match cluster::status_code(e) {
        Some(404) => format!("the pod is already gone ({message})"),
        Some(code) if code >= 500 => {
            format!(
                "the kubelet could not serve it (the API server proxies pods/log to it): {message}"
            )
        }
        Some(400) => format!("no such container instance ({message})"),
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_or_unwritable_dir_is_refused_and_a_missing_one_made() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let e = check_dir(&SaveOptions {
            dir: file.clone(),
            limit: 10,
        })
        .unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        assert!(e.to_string().contains("--save "), "{e}");
        assert!(e.to_string().contains("is not a folder"), "{e}");
        let made = tmp.path().join("a/b");
        check_dir(&SaveOptions {
            dir: made.clone(),
            limit: 10,
        })
        .unwrap();
        assert!(made.is_dir());
        // The probe leaves nothing behind.
        assert_eq!(std::fs::read_dir(&made).unwrap().count(), 0);
    }

    #[test]
    fn a_full_disk_names_what_was_written_before_it() {
        let tmp = tempfile::tempdir().unwrap();
        let mut saver = Saver::new(
            SaveOptions {
                dir: tmp.path().to_path_buf(),
                limit: 10,
            },
            "default",
            "j",
            3,
        );
        let folder = saver.ensure_folder().unwrap();
        saver
            .write(&folder, "j-ps-0/tensorflow.log", b"ps\n")
            .unwrap();
        saver.write(&folder, "job.yaml", b"kind: TFJob\n").unwrap();
        let e = saver.failed(
            &folder.join("pods.yaml"),
            std::io::Error::from_raw_os_error(28),
        );
        let text = e.to_string();
        assert!(text.contains("the disk is full (ENOSPC) writing"), "{text}");
        assert!(text.contains("pods.yaml"), "{text}");
        assert!(text.contains("j-ps-0/tensorflow.log, job.yaml"), "{text}");
        // Written once more (a later save): the earlier file is replaced by a complete one,
        // no partial file is left.
        saver
            .write(&folder, "job.yaml", b"kind: TFJob # 2\n")
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(folder.join("job.yaml")).unwrap(),
            "kind: TFJob # 2\n"
        );
        let names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
        // A second saver of the same job in the same second gets a folder of its own.
        let mut other = Saver::new(
            SaveOptions {
                dir: tmp.path().to_path_buf(),
                limit: 10,
            },
            "default",
            "j",
            3,
        );
        assert_ne!(other.ensure_folder().unwrap(), folder);
    }

    #[cfg(unix)]
    #[test]
    fn no_file_is_written_through_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, "keep").unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert!(new_file(&link).is_err());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        let dir_link = tmp.path().join("dirlink");
        std::os::unix::fs::symlink(tmp.path(), &dir_link).unwrap();
        assert!(real_dir(&dir_link).is_err());
        assert!(real_dir(tmp.path()).is_ok());
    }
}
