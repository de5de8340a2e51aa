//! The closing report of a wait: what it says once the job reached its target (and the look at
//! the replicas' last lines before that), or, when it did not, the closing diagnosis with the
//! first replica to fail heading the error, what is left of the job and how to delete it.

use std::sync::Arc;

use super::*;

impl Waiter<'_> {
    pub(super) async fn report(
        &mut self,
        outcome: Result<String>,
        format: ReportFormat,
        out: &mut Output,
    ) -> Result<()> {
        let (namespace, name) = (self.namespace, self.name);
        let outcome = self.look_at_training(outcome, out).await;
        match outcome {
            Ok((what, inside)) => {
                if let Some(unread) = inside
                    && let Err(err) = self.look_inside(unread, out).await
                {
                    // Judged inside the pods, where the API's view is fine: no closing
                    // diagnosis to repeat it, and nothing deleted on it.
                    let left = self.what_is_left(None, true, out).await;
                    return Err(with_leftover(err, &left));
                }
                // The answer first: what is said about the replicas comes from what the
                // watch already holds, with no further request.
                if self.opts.wait_for == WaitFor::Running {
                    self.note_replicas_not_running(out);
                }
                match format {
                    ReportFormat::Json => out.data_line(
                        &serde_json::json!({"event": "reached", "job": name, "namespace": namespace, "condition": what,
                            "elapsedSeconds": self.started.elapsed().as_secs_f64()})
                        .to_string(),
                    )?,
                    ReportFormat::Text => out.data_line(&format!(
                        "tfjob.kubeflow.org/{name} condition met ({what})"
                    ))?,
                }
                // `--for finished` reaches on Succeeded only; a Failed job ends as Fatal.
                Ok(())
            }
            Err(err @ (Error::Interrupted(_) | Error::NotReady { .. })) => Err(err),
            // A job deleted with its namespace: nothing is left to diagnose, and the namespace,
            // not the job, is what to say (once, by `wait --all`, for every job in it).
            Err(err) if self.was_deleted(&err) && self.namespace_gone().await => Err(
                Error::JobFailed(namespace_gone_message(namespace, &[name.to_string()])),
            ),
            Err(err) => {
                self.kube.deadline.phase(format!(
                    "diagnosing TFJob {namespace}/{name} after the wait (the closing diagnosis)"
                ));
                let budget = Budget::until(self.end).min(Budget::new(DECORATION));
                let seen: Vec<Arc<Pod>> = self
                    .last
                    .as_ref()
                    .map(|(_, pods)| pods.clone())
                    .unwrap_or_default();
                let cleaned = self
                    .last
                    .as_ref()
                    .and_then(|(job, pods)| cleaned_by_policy(job, pods));
                let (snapshot, failures) = report_diagnosis(
                    self.kube,
                    namespace,
                    name,
                    format,
                    out,
                    self.end,
                    budget,
                    Seen {
                        pods: &seen,
                        max_restarts: self.opts.max_restarts,
                        cleaned: cleaned.clone(),
                        saved: self
                            .saver
                            .as_ref()
                            .and_then(|s| s.folder())
                            .map(|p| p.to_path_buf()),
                    },
                )
                .await?;
                // Every replica ran and the job still did not get there: what the API shows is
                // fine, so the cause is inside the pods (issue 36).
                // Not when a replica failed (a crash loop runs between its restarts): that
                // failure is the answer, and the hint would contradict it (issue 46).
                if let Some((job, pods)) = &self.last
                    && !pods.is_empty()
                    && conditions::not_running(job, pods).is_empty()
                    && failures.iter().all(|f| f.running)
                    && err.exit_code() != crate::error::ExitCode::JobFailed
                {
                    out.note_line(&format!(
                        "Every replica runs, yet --for {} was not met: look inside the pods (TF_CONFIG, peers, the gateway) with `{}`",
                        self.opts.wait_for.flag_value(),
                        crate::diagnose::inpod::probe_command(&self.kube.hints, namespace, name)
                    ));
                }
                let err = self.with_crash_log(err, snapshot.as_ref());
                // Verdict first (issue 37): the first replica to fail, and why, heads the error.
                let err = match (err, failures.first()) {
                    (Error::JobFailed(message), Some(first)) if !first.running => {
                        Error::JobFailed(format!("{}\n{message}", first.line))
                    }
                    (err, _) => err,
                };
                if err.exit_code() != crate::error::ExitCode::JobFailed {
                    return Err(err);
                }
                let judged = matches!(err, Error::Stalled(_));
                let left = self.what_is_left(cleaned.as_deref(), judged, out).await;
                Err(with_leftover(err, &left))
            }
        }
    }

    /// `--for all-running` reached: before saying so, the running replicas' last log lines
    /// (issue 46). One stuck past the grace period fails the wait as `diagnose` fails it; one
    /// that has not reached a peer for less is said. With the reached condition comes whether
    /// the in-pod checks are due ([`Self::look_inside`]), and the replicas whose lines were
    /// not read, for its note.
    pub(super) async fn look_at_training(
        &self,
        outcome: Result<String>,
        out: &mut Output,
    ) -> Result<(String, Option<usize>)> {
        let what = outcome?;
        if self.last.is_none() || !self.opts.wait_for.needs_every_replica() || what == "Succeeded" {
            return Ok((what, None));
        }
        if self.opts.wait_for == WaitFor::Training {
            // The lines were read to get here.
            return Ok((what, Some(0)));
        }
        let look = self.look().await;
        if let Some(stuck) = look.stuck_error() {
            return Err(stuck);
        }
        for line in &look.not_yet {
            out.note_line(&format!(
                "note: {line}; it may still be waiting for a peer that is starting"
            ));
        }
        // A warning in diagnose; a failure only for `--for training`.
        for stall in &look.stalled {
            out.note_line(&format!("warning: {stall}"));
        }
        Ok((what, Some(look.unread)))
    }

    /// Every replica runs: the in-pod checks `probe` makes (TF_CONFIG, the peers, the gateway
    /// with the pod's own key) before "condition met", so that it means the job can train
    /// (issue 61). A failed check is exit 4, as a verdict only (nothing is deleted on it); what
    /// could not be checked (exec forbidden, the deadline) is said with the command to check it.
    /// `unread`: the replicas whose last lines could not be read, said with the rest.
    async fn look_inside(&self, unread: usize, out: &mut Output) -> Result<()> {
        let nor = if unread > 0 {
            format!(", nor the last lines of {unread} replica(s)")
        } else {
            String::new()
        };
        let (namespace, name) = (self.namespace, self.name);
        let again = crate::diagnose::inpod::probe_command(&self.kube.hints, namespace, name);
        let what = "inside the pods (TF_CONFIG, the peers, the gateway)";
        if !self.opts.probe {
            out.note_line(&format!(
                "note: not checked {what}{nor} (--no-probe): {again}"
            ));
            return Ok(());
        }
        self.kube.deadline.phase(format!(
            "checking inside the pods of TFJob {namespace}/{name} (TF_CONFIG, the peers, the gateway)"
        ));
        let opts = crate::ops::probe::ProbeOptions {
            target: crate::cluster::Target::TfJob(name.to_string()),
            container: None,
            env_prefix: self.opts.env_prefix.clone(),
            env_prefix_given: false,
            format: crate::ops::probe::ProbeFormat::Json,
            chat_model: None,
            only_when_all_running: true,
            one_per_role: true,
        };
        let report = Budget::until(self.end)
            .attempt(crate::ops::probe::probe(
                self.kube, namespace, &opts, self.end,
            ))
            .await;
        use crate::diagnose::inpod::{AtStart, at_start};
        let unknown = match report {
            None => "the checks did not finish before --timeout".to_string(),
            Some(Err(e)) => e.to_string(),
            Some(Ok(report)) => match at_start(&report) {
                AtStart::Passed(_) => {
                    let probed: Vec<&str> =
                        report.replicas.iter().map(|r| r.replica.as_str()).collect();
                    let gateway = if report.replicas.iter().any(|r| r.gateway.is_some()) {
                        ", and the gateway takes the pod's key"
                    } else {
                        ""
                    };
                    out.note_line(&format!(
                        "checked inside {} (one replica of each role): TF_CONFIG as the operator set it, every peer reached{gateway}",
                        probed.join(", ")
                    ));
                    if unread > 0 {
                        out.note_line(&format!(
                            "note: the last lines of {unread} replica(s) could not be read"
                        ));
                    }
                    return Ok(());
                }
                AtStart::Failed(line) => {
                    return Err(Error::Stalled(format!(
                        "{line}\nEvery replica runs, but the job cannot train as it is: the whole matrix: `{again}`"
                    )));
                }
                AtStart::Unknown(why) => why,
            },
        };
        out.note_line(&format!(
            "note: not checked {what}{nor}: {unknown}: `{again}`"
        ));
        Ok(())
    }

    /// After a failed wait (exit 4) the job is still there, restarting and holding what its pods
    /// requested: say so and how to delete it, or, with `--delete-on-failure` (Arena's
    /// behaviour), delete it and say that.
    /// Under a cleanPodPolicy that deletes the pods of an ended job, the pods are gone and only
    /// the job object (its status and events) is left.
    /// A verdict `judged` from the logs (a stall) deletes nothing, whatever the flag says.
    pub(super) async fn what_is_left(
        &self,
        cleaned: Option<&str>,
        judged: bool,
        out: &mut Output,
    ) -> String {
        let (namespace, name) = (self.namespace, self.name);
        let delete = format!(
            "kubectl tfjob delete {name} {}",
            self.kube.hints.ns_flags(namespace)
        );
        if judged && self.opts.delete_on_failure {
            return format!(
                "The job was not deleted: --delete-on-failure deletes only on a failure the \
                 cluster states (a Failed condition, a terminated replica), and this verdict \
                 was judged inside the pods (their logs, their checks). Delete it yourself if it \
                 is stuck: `{delete}`"
            );
        }
        if !self.opts.delete_on_failure {
            if let Some(policy) = cleaned {
                let which = if policy == "Running" { "running " } else { "" };
                return format!(
                    "The job object is left (runPolicy.cleanPodPolicy {policy} deletes its {which}pods; the job keeps its status and events): `{delete}`"
                );
            }
            return format!(
                "The job is still there (its pods keep what they requested): `{delete}`"
            );
        }
        // Bound to the job this wait followed: one re-created under its name meanwhile stays.
        let uid = self
            .last
            .as_ref()
            .and_then(|(job, _)| job.metadata.uid.clone());
        let opts = crate::ops::delete::DeleteOptions {
            names: vec![name.to_string()],
            wait: false,
            uid,
            ..Default::default()
        };
        let (_, notes) = out.streams();
        // The deleted line goes to stderr with the rest of the explanation: stdout keeps
        // `wait`'s own result.
        let mut said = Vec::new();
        match crate::ops::delete::delete(self.kube, namespace, &opts, &mut said, notes).await {
            Ok(_) => format!("TFJob {namespace}/{name} was deleted (--delete-on-failure)."),
            Err(e) => format!(
                "--delete-on-failure could not delete TFJob {namespace}/{name} ({e}); it is still there: `{delete}`"
            ),
        }
    }

    pub(super) fn with_crash_log(
        &self,
        err: Error,
        snapshot: Option<&crate::diagnose::Snapshot>,
    ) -> Error {
        match (&err, self.tracker.crashed.as_ref(), snapshot) {
            (Error::JobFailed(message), Some((pod, _)), Some(s)) => {
                Error::JobFailed(with_log_tail(message, s.logs.get(pod)))
            }
            _ => err,
        }
    }

    /// `--for running` keeps the operator's meaning; say when that hides replicas that do not
    /// run (the article's trap: Running while two workers are Unschedulable).
    pub(super) fn note_replicas_not_running(&mut self, out: &mut Output) {
        let Some((job, pods)) = self.last.take() else {
            return;
        };
        let missing = conditions::not_running(&job, &pods);
        if missing.is_empty() {
            return;
        }
        let total: i32 = conditions::expected_replicas(&job).values().sum();
        out.note_line(&format!(
            "Note: the operator reports Running (the chief, or one worker, runs), but not every replica of the {total} runs:"
        ));
        for line in missing {
            out.note_line(&format!("  {line}"));
        }
        out.note_line("Use --for all-running (the default) to wait until every replica runs.");
    }
}

/// A crash loop's message ends with the last lines the crashed container printed, when the
/// closing diagnosis could read them (scrubbed of Secret values there).
pub(super) fn with_log_tail(message: &str, log: Option<&String>) -> String {
    let Some(log) = log.filter(|l| !l.trim().is_empty()) else {
        return message.to_string();
    };
    let lines: Vec<&str> = log.lines().collect();
    let mut out = format!("{message}\nits last log lines:");
    for line in &lines[lines.len().saturating_sub(CRASH_LOG_LINES)..] {
        out.push_str(&format!("\n  | {line}"));
    }
    out
}

/// What the watch last saw, for the closing report: the pods (the operator's cleanPodPolicy
/// may have deleted them by the time the diagnosis reads), and the crash-loop bound.
pub(super) struct Seen<'a> {
    pub(super) pods: &'a [Arc<Pod>],
    pub(super) max_restarts: u32,
    /// The job's `runPolicy.cleanPodPolicy` when it deletes pods (All, Running) and the job has
    /// ended or is about to (a replica failed for good): its pods and their logs are gone, or
    /// going, whatever the moment the closing diagnosis reads them.
    pub(super) cleaned: Option<String>,
    /// The `--save` folder, when a save was written.
    pub(super) saved: Option<std::path::PathBuf>,
}

/// The cleanPodPolicy that deletes a job's pods once it ends (All, Running), when the job has
/// ended (Failed, Succeeded) or a replica failed for good (the operator fails the job on it):
/// training-operator `pkg/controller.v1/common/job.go` ReconcileJobs deletes the pods
/// (DeletePodsAndServices) on the reconcile that finds the job finished.
pub(super) fn cleaned_by_policy(job: &TFJob, pods: &[Arc<Pod>]) -> Option<String> {
    let policy = job
        .spec
        .run_policy
        .as_ref()
        .and_then(|r| r.clean_pod_policy.clone())
        .filter(|p| p == "All" || p == "Running")?;
    let ends = job.is_finished()
        || pods
            .iter()
            .any(|p| super::super::restarts::permanent_failure(job, p).is_some());
    ends.then_some(policy)
}

/// The failure classes of pods the watch saw that the closing read no longer finds (issue 37):
/// their statuses say why they died, though their logs are gone.
pub(super) fn classes_of_vanished(
    seen: &Seen<'_>,
    present: &[String],
    job: &str,
) -> Vec<crate::diagnose::failure::ReplicaFailure> {
    use crate::diagnose::failure;
    seen.pods
        .iter()
        .filter(|p| {
            !present
                .iter()
                .any(|n| n == crate::cluster::pod::PodFacts::pod_name(&***p))
        })
        .filter_map(|p| {
            failure::classify(
                failure::PodEvidence::bare(&p.metadata, p.status.as_ref(), seen.max_restarts),
                Some(job),
            )
        })
        .collect()
}

/// What the closing report says about the logs of an ended job's pods: `cleaned`, the
/// cleanPodPolicy that deletes them ([`cleaned_by_policy`]); `gone`, pods the watch saw are no
/// longer there. The same words whether the read came before or after the operator's deletion.
pub(super) fn logs_gone_note(
    cleaned: Option<&str>,
    gone: bool,
    saved: Option<&std::path::Path>,
) -> Option<String> {
    let keep = match saved {
        Some(folder) => format!("--save kept them in {}", folder.display()),
        None => "`--save DIR` keeps them next time".into(),
    };
    match cleaned {
        Some(policy) => Some(format!(
            "runPolicy.cleanPodPolicy {policy} deletes the job's {}pods now that it has ended: their logs are gone with them; {keep}",
            if policy == "Running" { "running " } else { "" }
        )),
        None if gone => Some(format!(
            "the job's pods were deleted when it ended (runPolicy.cleanPodPolicy): their logs are gone; {keep}"
        )),
        None => None,
    }
}

/// The failure with what is left of the job said last (under a crash log, in the hint of a
/// refusal), so it is the line a user reads after `error:`.
pub(super) fn with_leftover(err: Error, left: &str) -> Error {
    match err {
        Error::JobFailed(message) => Error::JobFailed(format!("{message}\n{left}")),
        Error::Stalled(message) => Error::Stalled(format!("{message}\n{left}")),
        Error::WontRun { message, hint } => Error::WontRun {
            message,
            hint: Some(match hint {
                Some(h) => format!("{h}\n{left}"),
                None => left.to_string(),
            }),
        },
        other => other,
    }
}

/// The failure of jobs deleted with their namespace, said once for all of them.
pub fn namespace_gone_message(namespace: &str, jobs: &[String]) -> String {
    let which = match jobs {
        [one] => format!("TFJob {namespace}/{one} went with it"),
        many => {
            let shown: Vec<&str> = many.iter().take(5).map(String::as_str).collect();
            let more = many.len().saturating_sub(shown.len());
            format!(
                "its {} TFJobs went with it ({}{})",
                many.len(),
                shown.join(", "),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                }
            )
        }
    };
    format!("namespace {namespace} was deleted while waiting: {which}")
}

/// Whether `err` is [`namespace_gone_message`]'s for `namespace`.
pub fn is_namespace_gone(err: &Error, namespace: &str) -> bool {
    matches!(err, Error::JobFailed(m) if m.starts_with(&format!("namespace {namespace} was deleted while waiting:")))
}

/// When a wait ends without reaching its target, say which layer is at fault, within what is
/// left of `--timeout` (log excerpts within `budget`). Returns what it read, and each failed
/// replica's class, the first to fail first.
#[allow(clippy::too_many_arguments)]
pub(super) async fn report_diagnosis(
    kube: &Kube,
    namespace: &str,
    name: &str,
    format: ReportFormat,
    out: &mut Output,
    end: Instant,
    budget: Budget,
    seen: Seen<'_>,
) -> Result<(
    Option<crate::diagnose::Snapshot>,
    Vec<crate::diagnose::failure::ReplicaFailure>,
)> {
    use crate::diagnose::failure;
    let collected = Budget::until(end)
        .attempt(crate::diagnose::collect_within(
            kube, namespace, name, 20, budget,
        ))
        .await;
    match collected {
        Some(Ok(mut snapshot)) => {
            snapshot.max_restarts = seen.max_restarts;
            let mut diagnosis = crate::diagnose::diagnose(&snapshot);
            let present: Vec<String> = snapshot
                .pods
                .iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect();
            let vanished = classes_of_vanished(&seen, &present, name);
            let gone = !vanished.is_empty() || (snapshot.pods.is_empty() && !seen.pods.is_empty());
            if gone {
                // What the watch saw wins over the operator's events for the same pod.
                let mut merged = vanished;
                failure::merge(&mut merged, std::mem::take(&mut diagnosis.failures));
                failure::order(&mut merged);
                diagnosis.failures = merged;
            }
            // The operator deletes the pods of an ended job under cleanPodPolicy All, and the
            // running ones under Running (training-operator `pkg/controller.v1/common/job.go`
            // DeletePodsAndServices): said whether or not it has done so when this reads.
            diagnosis.notes.extend(logs_gone_note(
                seen.cleaned.as_deref(),
                gone,
                seen.saved.as_deref(),
            ));
            let failures = diagnosis.failures.clone();
            match format {
                ReportFormat::Json => out.data_line(
                    &serde_json::json!({"event": "diagnosis", "diagnosis": diagnosis}).to_string(),
                )?,
                // The explanation of a failed wait, not its result: stderr, like the error itself.
                ReportFormat::Text => {
                    out.note_line("");
                    let color = out.err_color();
                    out.note(&crate::print::diagnosis::text(&diagnosis, color));
                }
            }
            Ok((Some(snapshot), failures))
        }
        // Cut off by the deadline, here or inside a request's retries (both fire at `end`):
        // one message either way.
        None | Some(Err(Error::Timeout(_))) => {
            out.note_line("(no diagnosis: --timeout ran out before it could be read)");
            let mut failures = classes_of_vanished(&seen, &[], name);
            failure::order(&mut failures);
            Ok((None, failures))
        }
        Some(Err(e)) => {
            out.note_line(&format!("(could not collect a diagnosis: {e})"));
            let mut failures = classes_of_vanished(&seen, &[], name);
            failure::order(&mut failures);
            Ok((None, failures))
        }
    }
}
