//! The pure half of `--save DIR` (issue 37): where each piece of a job's evidence goes in its
//! folder, the bounded tail kept of a log, what is written of the job and its pods (Secret
//! values never: a pod holds `secretKeyRef` references, not values, and any value this process
//! has read is scrubbed by [`crate::output::redact`]), and `summary.txt`. The I/O is
//! `ops::evidence`.

use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::jiff::Timestamp;

use crate::diagnose::failure::ReplicaFailure;
use crate::model::TFJob;

/// The default `--save-limit`: the last 10 MiB of each log.
pub const DEFAULT_LIMIT: u64 = 10 * 1024 * 1024;

/// The summary's file name.
pub const SUMMARY: &str = "summary.txt";
/// The job as YAML.
pub const JOB: &str = "job.yaml";
/// The job's pods as a YAML List.
pub const PODS: &str = "pods.yaml";
/// The job's and its pods' events as a YAML List.
pub const EVENTS: &str = "events.yaml";

/// `<job>-<UTC time>`, e.g. `tf-dist-train-20261204T203200Z` (no `:`, which some file systems
/// refuse).
pub fn folder_name(job: &str, at: Timestamp) -> String {
    format!("{job}-{}", at.strftime("%Y%m%dT%H%M%SZ"))
}

/// A name that is one path component: not empty, no separator, not `.` or `..`, no NUL. Pod
/// and container names are DNS labels already; this is the guard that keeps a file inside its
/// folder whatever the server sent.
pub fn component(name: &str) -> Option<&str> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && name.len() <= 253;
    ok.then_some(name)
}

/// `<pod>/<container>.log`, or `.previous.log` for the instance before the last restart;
/// `None` when a name is not one path component.
pub fn log_path(pod: &str, container: &str, previous: bool) -> Option<String> {
    let (pod, container) = (component(pod)?, component(container)?);
    let suffix = if previous { ".previous.log" } else { ".log" };
    Some(format!("{pod}/{container}{suffix}"))
}

/// The last `limit` bytes of a stream, kept while it is read (memory stays at the limit plus
/// the chunk being pushed: a ring, so dropping the front costs only what is dropped), starting
/// at a line's beginning once anything was dropped.
#[derive(Debug, Default)]
pub struct Tail {
    buf: std::collections::VecDeque<u8>,
    /// Bytes dropped from the front.
    pub dropped: u64,
    limit: usize,
}

impl Tail {
    pub fn new(limit: u64) -> Self {
        Tail {
            buf: std::collections::VecDeque::new(),
            dropped: 0,
            limit: usize::try_from(limit).unwrap_or(usize::MAX).max(1),
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        // A chunk longer than the limit keeps only its end.
        let skip = chunk.len().saturating_sub(self.limit);
        if skip > 0 {
            self.dropped += (skip + self.buf.len()) as u64;
            self.buf.clear();
        }
        self.buf.extend(&chunk[skip..]);
        self.trim();
    }

    fn trim(&mut self) {
        if self.buf.len() > self.limit {
            let cut = self.buf.len() - self.limit;
            self.buf.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// What is kept: after a cut, from the first whole line, under a line saying what was left
    /// out.
    pub fn finish(mut self) -> (Vec<u8>, u64) {
        self.trim();
        let buf: Vec<u8> = std::mem::take(&mut self.buf).into();
        if self.dropped == 0 {
            return (buf, 0);
        }
        let start = buf.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
        let dropped = self.dropped + start as u64;
        let mut out = format!(
            "[kubectl-tfjob: the first {dropped} bytes of this log were left out: --save-limit keeps the last {} bytes]\n",
            self.limit
        )
        .into_bytes();
        out.extend_from_slice(&buf[start..]);
        (out, dropped)
    }
}

/// Text as written to a file: every secret value this process has read replaced
/// ([`crate::output::redact`]).
pub fn scrubbed(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let clean = crate::output::redact::redact(&text);
    if clean == text {
        bytes.to_vec()
    } else {
        clean.into_bytes()
    }
}

/// The job as YAML, without managedFields (server bookkeeping).
pub fn job_yaml(job: &TFJob) -> String {
    let mut job = job.clone();
    job.metadata.managed_fields = None;
    scrub_text(super::manifest::to_yaml(&job))
}

/// Objects as one YAML `v1/List`, without managedFields.
pub fn list_yaml<T: serde::Serialize>(items: &[T]) -> String {
    let items: Vec<serde_json::Value> = items
        .iter()
        .filter_map(|i| serde_json::to_value(i).ok())
        .map(|mut v| {
            if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                m.remove("managedFields");
            }
            v
        })
        .collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    scrub_text(serde_saphyr::to_string(&list).unwrap_or_default())
}

/// The pods as a YAML List: env values from a Secret stay `secretKeyRef` references (a pod
/// never holds them); literal values are kept, scrubbed of any secret this process read.
pub fn pods_yaml(pods: &[Pod]) -> String {
    list_yaml(pods)
}

/// The events as a YAML List, oldest first.
pub fn events_yaml(events: &[Event]) -> String {
    list_yaml(events)
}

fn scrub_text(text: String) -> String {
    crate::output::redact::redact(&text)
}

/// One log the summary accounts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEntry {
    /// Written; `dropped` bytes before the kept tail; `final_` when the instance had ended.
    Saved { dropped: u64, final_: bool },
    /// Could not be read: why (the kubelet unreachable, the pod already gone, …).
    Unreadable(String),
}

/// What `summary.txt` says.
pub struct Summary<'a> {
    pub job: &'a str,
    pub namespace: &'a str,
    pub saved_at: Timestamp,
    /// What made this save: `Worker-1 terminated`, `the job reached Failed`, ….
    pub trigger: &'a str,
    /// The job's state (its last condition) and that condition's message.
    pub state: Option<(String, String)>,
    pub failures: &'a [ReplicaFailure],
    /// Every log by its path in the folder.
    pub logs: &'a [(String, LogEntry)],
    /// Other files written (job, pods, events).
    pub files: &'a [String],
    /// What else could not be read (the job, the pods, the events), with why.
    pub problems: &'a [String],
    pub limit: u64,
}

/// `summary.txt`: the failure classes first (the first to fail first), then every log saved or
/// not and why, then the other files.
pub fn summary(s: &Summary<'_>) -> String {
    let mut out = format!(
        "TFJob {}/{}, evidence saved {} ({})\n",
        s.namespace,
        s.job,
        s.saved_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        s.trigger
    );
    match &s.state {
        // The operator says Running through a crash loop (one running replica sets it): the
        // replicas that failed are the state, the condition only what the operator saw.
        Some((state, _)) if !s.failures.is_empty() && state != "Failed" => out.push_str(&format!(
            "State: {} replica(s) failed (below); the operator's last condition is still {state}\n",
            s.failures.len()
        )),
        Some((state, message)) if !message.is_empty() => {
            out.push_str(&format!("State: {state}: {message}\n"))
        }
        Some((state, _)) => out.push_str(&format!("State: {state}\n")),
        None => out.push_str("State: unknown (the job could not be read)\n"),
    }
    out.push_str("\nFailed replicas (the first to fail first):\n");
    if s.failures.is_empty() {
        out.push_str("  none seen\n");
    }
    for f in s.failures {
        out.push_str(&format!("  {}\n", f.line));
        if let Some(e) = f.evidence.as_deref().filter(|e| !e.is_empty()) {
            out.push_str(&format!("    evidence: {}\n", one_line(e)));
        }
    }
    let (saved, unreadable): (Vec<_>, Vec<_>) = s
        .logs
        .iter()
        .partition(|(_, e)| matches!(e, LogEntry::Saved { .. }));
    out.push_str(&format!(
        "\nLogs saved ({}, each log's last {} at most):\n",
        saved.len(),
        crate::input::human(usize::try_from(s.limit).unwrap_or(usize::MAX))
    ));
    if saved.is_empty() {
        out.push_str("  none\n");
    }
    for (path, e) in &saved {
        let LogEntry::Saved { dropped, final_ } = e else {
            continue;
        };
        let mut notes = Vec::new();
        if !final_ {
            notes.push("the container was still running".to_string());
        }
        if *dropped > 0 {
            notes.push(format!("{dropped} earlier bytes left out"));
        }
        if notes.is_empty() {
            out.push_str(&format!("  {path}\n"));
        } else {
            out.push_str(&format!("  {path} ({})\n", notes.join("; ")));
        }
    }
    if !unreadable.is_empty() {
        out.push_str(&format!(
            "\nLogs that could not be read ({}):\n",
            unreadable.len()
        ));
        for (path, e) in &unreadable {
            if let LogEntry::Unreadable(why) = e {
                out.push_str(&format!("  {path}: {}\n", one_line(why)));
            }
        }
    }
    if !s.problems.is_empty() {
        out.push_str("\nNot read:\n");
        for p in s.problems {
            out.push_str(&format!("  {}\n", one_line(p)));
        }
    }
    out.push_str("\nAlso here:\n");
    for f in s.files {
        out.push_str(&format!("  {f}\n"));
    }
    // Read with `cat` in a terminal: the cluster's words (log lines, messages) escaped.
    super::terminal::escape(&crate::output::redact::redact(&out)).into_owned()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_folder() {
        assert_eq!(
            log_path("j-worker-1", "tensorflow", false).as_deref(),
            Some("j-worker-1/tensorflow.log")
        );
        assert_eq!(
            log_path("j-worker-1", "tensorflow", true).as_deref(),
            Some("j-worker-1/tensorflow.previous.log")
        );
        for bad in ["", ".", "..", "a/b", "..\\x", "a\0b"] {
            assert_eq!(log_path(bad, "c", false), None, "{bad:?}");
            assert_eq!(log_path("p", bad, false), None, "{bad:?}");
        }
        let at: Timestamp = "2026-12-04T20:32:05Z".parse().unwrap();
        assert_eq!(folder_name("tf", at), "tf-20261204T203205Z");
    }

    #[test]
    fn a_log_keeps_its_last_bytes_from_a_whole_line() {
        let mut t = Tail::new(10);
        t.push(b"line-one\nline-two\n");
        t.push(b"three\n");
        let (kept, dropped) = t.finish();
        let text = String::from_utf8(kept).unwrap();
        // The last 10 bytes are "two\nthree\n"; the partial "two" line goes too.
        assert!(text.ends_with("\nthree\n"), "{text}");
        assert!(!text.contains("two"), "{text}");
        assert_eq!(dropped, 24 - 6);
        assert!(
            text.starts_with("[kubectl-tfjob: the first 18 bytes"),
            "{text}"
        );
        // One chunk longer than the limit: only its end, the rest counted as dropped.
        let mut t = Tail::new(4);
        t.push(b"ab");
        t.push(b"x\nyyyy");
        let (kept, dropped) = t.finish();
        assert_eq!(dropped, 8 - 4, "{}", String::from_utf8_lossy(&kept));
        // No line starts in the kept end: it is kept as it is, under the marker.
        assert!(kept.ends_with(b"bytes]\nyyyy"));
        // Under the limit: as read, no marker.
        let mut t = Tail::new(100);
        t.push(b"short\n");
        assert_eq!(t.finish(), (b"short\n".to_vec(), 0));
    }

    #[test]
    fn the_pods_yaml_keeps_secret_references_and_drops_managed_fields() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "j-worker-0", "managedFields": [{"manager": "x"}]},
            "spec": {"containers": [{"name": "tensorflow", "image": "i", "env": [
                {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "gw", "key": "api-key"}}}]}]}
        }))
        .unwrap();
        let yaml = pods_yaml(&[pod]);
        assert!(yaml.contains("secretKeyRef"), "{yaml}");
        assert!(yaml.contains("api-key"), "{yaml}");
        assert!(!yaml.contains("managedFields"), "{yaml}");
        assert!(yaml.contains("kind: List"), "{yaml}");
    }

    #[test]
    fn the_summary_lists_the_classes_and_the_unreadable_logs_with_why() {
        let at: Timestamp = "2026-12-04T20:32:05Z".parse().unwrap();
        let f = ReplicaFailure {
            replica: "Worker-1".into(),
            pod: "j-worker-1".into(),
            class: "ExitCode".into(),
            line: "Worker-1: ExitCode 3 after 0s".into(),
            evidence: None,
            at: None,
            running: false,
        };
        let logs = vec![
            (
                "j-worker-0/tensorflow.log".to_string(),
                LogEntry::Saved {
                    dropped: 0,
                    final_: false,
                },
            ),
            (
                "j-worker-1/tensorflow.log".to_string(),
                LogEntry::Unreadable("the kubelet could not serve it (HTTP 500)".into()),
            ),
        ];
        let text = summary(&Summary {
            job: "j",
            namespace: "default",
            saved_at: at,
            trigger: "the job reached Failed",
            state: Some(("Failed".into(), "TFJob j has failed".into())),
            failures: std::slice::from_ref(&f),
            logs: &logs,
            files: &["job.yaml".into()],
            problems: &[],
            limit: DEFAULT_LIMIT,
        });
        assert!(text.contains("  Worker-1: ExitCode 3 after 0s\n"), "{text}");
        assert!(
            text.contains("  j-worker-0/tensorflow.log (the container was still running)"),
            "{text}"
        );
        assert!(
            text.contains("Logs that could not be read (1):\n  j-worker-1/tensorflow.log: the kubelet could not serve it (HTTP 500)"),
            "{text}"
        );
        assert!(text.contains("State: Failed: TFJob j has failed"), "{text}");
        // Issue 48 item 9: the limit in the units it was given, not a byte count.
        assert!(text.contains("each log's last 10 MiB at most"), "{text}");
        // A wait that ended on a crash loop: the operator still says Running, which is not the
        // job's state.
        let text = summary(&Summary {
            job: "j",
            namespace: "default",
            saved_at: at,
            trigger: "the wait ended",
            state: Some(("Running".into(), "TFJob j is running".into())),
            failures: std::slice::from_ref(&f),
            logs: &logs,
            files: &[],
            problems: &[],
            limit: DEFAULT_LIMIT,
        });
        assert!(
            text.contains(
                "State: 1 replica(s) failed (below); the operator's last condition is still Running\n"
            ),
            "{text}"
        );
        assert!(!text.contains("State: Running"), "{text}");
    }
}
