//! `wait jobset/NAME` and `submit --to jobset --wait`: a JobSet followed until it reaches the
//! target, fails, or the deadline passes. JobSet has no Running condition; "all pods running"
//! is Kueue's `PodsReady` test ([`crate::ops::target::progress`]).

use futures::StreamExt;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};

use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::ops::target::{Progress, progress};
use crate::ops::wait::WaitFor;
use crate::output::Output;
use crate::pipeline::jobset::model::JobSet;

/// Follows the JobSet until every pod is Ready, it completes or fails, or the command's one
/// deadline passes (`--timeout`, named with this phase when it runs out; `once`: `--timeout 0`
/// checks the state read and ends, as for a TFJob):
/// the state already read (`first`), then a watch on it (`metadata.name` field selector) through kube-runtime's
/// watcher, which re-watches a dropped stream and relists after 410 Gone, as `wait`'s TFJob
/// follower does (ops/wait/follow.rs). A state change is judged when the API reports it.
/// Only the JobSet is watched: the verdict reads its `replicatedJobsStatus`, which the JobSet
/// controller writes from its Jobs' ready counts, so a pod event alone never changes it.
pub(crate) async fn follow(
    kube: &Kube,
    api: &Api<JobSet>,
    first: &JobSet,
    target: WaitFor,
    once: bool,
    out: &mut Output,
) -> Result<()> {
    let namespace = api_namespace(first, kube);
    let name = first.metadata.name.as_deref().unwrap_or_default();
    let doing = format!(
        "waiting for JobSet {namespace}/{name} (--for {})",
        target.flag_value()
    );
    kube.deadline.phase(&doing);
    let mut last = String::new();
    if let Some(done) = judge(first, target, namespace, name, &mut last, out) {
        return done;
    }
    if once {
        return Err(Error::Timeout(format!(
            "checked once (--timeout 0) {doing}: {last}"
        )));
    }
    let watch = async {
        let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut events = std::pin::pin!(watcher(api.clone(), cfg).default_backoff());
        // Whether a relist (after 410 Gone or a dropped watch) has seen the JobSet yet.
        let mut listed = false;
        let mut refused = 0u32;
        while let Some(event) = events.next().await {
            let js = match event {
                Ok(watcher::Event::Init) => {
                    listed = false;
                    continue;
                }
                Ok(watcher::Event::InitDone) if listed => continue,
                Ok(watcher::Event::InitDone) | Ok(watcher::Event::Delete(_)) => {
                    return Err(Error::JobFailed(format!(
                        "JobSet {namespace}/{name} was deleted while waiting"
                    )));
                }
                Ok(watcher::Event::InitApply(js)) => {
                    listed = true;
                    js
                }
                Ok(watcher::Event::Apply(js)) => js,
                Err(e) => {
                    // Retried by the backoff; a refusal that persists is said, not waited out.
                    tracing::debug!(error = %e, "jobset watch error (retried)");
                    if let Some(message) = refusal(&e) {
                        refused += 1;
                        if refused >= 3 {
                            return Err(Error::NotReady {
                                message: format!("forbidden to watch the JobSet: {message}"),
                                hint: Some(format!(
                                    "Confirm with `kubectl auth can-i watch jobsets.jobset.x-k8s.io {}`.",
                                    kube.hints.ns_flags(namespace)
                                )),
                            });
                        }
                    }
                    continue;
                }
            };
            refused = 0;
            if let Some(done) = judge(&js, target, namespace, name, &mut last, out) {
                return done;
            }
        }
        Err(Error::Other("the JobSet watch ended unexpectedly".into()))
    };
    match kube.deadline.attempt(watch).await {
        Some(done) => done,
        None => Err(Error::Timeout(format!(
            "{}: {last}",
            kube.deadline.ran_out_message()
        ))),
    }
}

/// The JobSet's namespace, else the command's.
fn api_namespace<'a>(js: &'a JobSet, kube: &'a Kube) -> &'a str {
    js.metadata.namespace.as_deref().unwrap_or(&kube.namespace)
}

/// A watch error that is the API server refusing the request (403), with its message.
fn refusal(e: &watcher::Error) -> Option<String> {
    let status = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => &**s,
        watcher::Error::WatchError(s) => &**s,
        _ => return None,
    };
    cluster::forbidden::refused_status(status).map(str::to_string)
}

/// What `wait jobset/NAME --for TARGET` makes of one state of the JobSet (pure), judged as
/// the TFJob path judges its job (ops/wait/conditions.rs `evaluate`): the JobSet's own
/// `Failed` condition fails every wait and its `Completed` condition reaches every target
/// (a finished JobSet has run); short of those, `succeeded`/`finished` wait for the
/// condition, which the JobSet controller writes when its successPolicy is met
/// (jobset controller `executeSuccessPolicy`), never for ready pods. The other targets are
/// read from its Jobs' counts in `replicatedJobsStatus`: `created` once the controller has
/// written them, `running` once a Job of it is ready, `all-running` once every
/// replicatedJob's Jobs are ready or succeeded.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Reached(String),
    Failed(String),
    Waiting(String),
}

pub fn evaluate(js: &JobSet, target: WaitFor) -> Outcome {
    let status = js.status.clone().unwrap_or_default();
    match progress(js) {
        Progress::Failed(why) => return Outcome::Failed(why),
        Progress::Completed => return Outcome::Reached("completed".into()),
        Progress::AllReady if target == WaitFor::AllRunning => {
            return Outcome::Reached(": every replicatedJob's pods are ready".into());
        }
        Progress::AllReady | Progress::Waiting(_) => {}
    }
    let counts = |name: &str| {
        status
            .replicated_jobs_status
            .iter()
            .find(|s| s.name == name)
    };
    match target {
        WaitFor::Created if !status.replicated_jobs_status.is_empty() => {
            return Outcome::Reached(": the JobSet controller has made its Jobs".into());
        }
        WaitFor::Running if status.replicated_jobs_status.iter().any(|s| s.ready > 0) => {
            return Outcome::Reached(": a Job of it runs with its pods ready".into());
        }
        _ => {}
    }
    let jobs: Vec<String> = js
        .spec
        .replicated_jobs
        .iter()
        .map(|r| {
            let want = r.replicas.unwrap_or(1);
            let c = counts(&r.name);
            let n = |f: fn(&crate::pipeline::jobset::model::ReplicatedJobStatus) -> i32| {
                c.map(f).unwrap_or(0)
            };
            let mut line = format!(
                "{} {}/{want} ready, {} succeeded",
                r.name,
                n(|x| x.ready),
                n(|x| x.succeeded)
            );
            if n(|x| x.failed) > 0 {
                line.push_str(&format!(", {} failed", n(|x| x.failed)));
            }
            line
        })
        .collect();
    let what = match target {
        WaitFor::Succeeded | WaitFor::Finished => "waiting for the JobSet's Completed condition",
        WaitFor::Deleted => "waiting for the JobSet to be deleted",
        WaitFor::Created => "waiting for the JobSet controller to make its Jobs",
        WaitFor::Running => "waiting for a Job of it to be ready",
        WaitFor::AllRunning | WaitFor::Training => {
            "waiting for every replicatedJob's pods to be ready"
        }
    };
    let suspended = if js.spec.suspend == Some(true) {
        " (the JobSet is suspended)"
    } else {
        ""
    };
    Outcome::Waiting(format!("{what}{suspended}: {}", jobs.join("; ")))
}

/// The verdict on one state of the JobSet, or `None` while it waits (the progress line is
/// printed on stderr when it changes).
fn judge(
    js: &JobSet,
    target: WaitFor,
    namespace: &str,
    name: &str,
    last: &mut String,
    out: &mut Output,
) -> Option<Result<()>> {
    match evaluate(js, target) {
        Outcome::Reached(how) => Some(out.data_line(&format!(
            "jobset.jobset.x-k8s.io/{name}{}",
            if how.starts_with(':') {
                how
            } else {
                format!(" {how}")
            }
        ))),
        Outcome::Failed(why) => Some(Err(Error::JobFailed(format!(
            "JobSet {namespace}/{name} failed ({why})"
        )))),
        Outcome::Waiting(line) => {
            if line != *last {
                out.note_line(&line);
                *last = line;
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::jobset::model::{JobSetStatus, ReplicatedJobStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    fn js(statuses: &[(&str, i32, i32)], conditions: &[(&str, &str)]) -> JobSet {
        let mut j: JobSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "x"},
            "spec": {"replicatedJobs": [
                {"name": "ps", "replicas": 1, "template": {}},
                {"name": "worker", "replicas": 1, "template": {}}]}}))
        .unwrap();
        j.status = Some(JobSetStatus {
            replicated_jobs_status: statuses
                .iter()
                .map(|(n, ready, succeeded)| ReplicatedJobStatus {
                    name: n.to_string(),
                    ready: *ready,
                    succeeded: *succeeded,
                    ..Default::default()
                })
                .collect(),
            conditions: conditions
                .iter()
                .map(|(t, r)| Condition {
                    type_: t.to_string(),
                    status: "True".into(),
                    reason: r.to_string(),
                    message: "m".into(),
                    last_transition_time: Time(Default::default()),
                    observed_generation: None,
                })
                .collect(),
            ..Default::default()
        });
        j
    }

    #[test]
    fn all_ready_is_every_replicated_job_ready_or_succeeded() {
        assert_eq!(
            progress(&js(&[("worker", 1, 0), ("ps", 1, 0)], &[])),
            Progress::AllReady
        );
        assert_eq!(
            progress(&js(&[("worker", 1, 0)], &[])),
            Progress::Waiting(vec![("ps".into(), 0, 1), ("worker".into(), 1, 1)])
        );
        assert_eq!(
            progress(&js(&[("worker", 0, 1), ("ps", 1, 0)], &[])),
            Progress::AllReady
        );
        assert_eq!(
            progress(&js(&[], &[("Failed", "FailedJobs")])),
            Progress::Failed("FailedJobs: m".into())
        );
        assert_eq!(
            progress(&js(&[], &[("Completed", "AllJobsCompleted")])),
            Progress::Completed
        );
    }

    #[test]
    fn only_the_completed_condition_is_succeeded_and_failed_fails_every_target() {
        let running = js(&[("worker", 1, 0), ("ps", 1, 0)], &[]);
        for target in [WaitFor::Succeeded, WaitFor::Finished] {
            match evaluate(&running, target) {
                Outcome::Waiting(line) => assert!(
                    line.starts_with("waiting for the JobSet's Completed condition"),
                    "{line}"
                ),
                other => panic!("{target:?} on a running JobSet: {other:?}"),
            }
        }
        assert!(matches!(
            evaluate(&running, WaitFor::AllRunning),
            Outcome::Reached(_)
        ));
        assert!(matches!(
            evaluate(&running, WaitFor::Running),
            Outcome::Reached(_)
        ));
        assert!(matches!(
            evaluate(&running, WaitFor::Created),
            Outcome::Reached(_)
        ));
        let none = js(&[], &[]);
        assert!(matches!(
            evaluate(&none, WaitFor::Created),
            Outcome::Waiting(_)
        ));
        assert!(matches!(
            evaluate(&none, WaitFor::Running),
            Outcome::Waiting(_)
        ));
        let done = js(&[("worker", 0, 1)], &[("Completed", "AllJobsCompleted")]);
        for target in [WaitFor::Succeeded, WaitFor::Finished, WaitFor::AllRunning] {
            assert_eq!(
                evaluate(&done, target),
                Outcome::Reached("completed".into())
            );
        }
        let failed = js(
            &[("worker", 1, 0), ("ps", 1, 0)],
            &[("Failed", "FailedJobs")],
        );
        for target in [WaitFor::Succeeded, WaitFor::AllRunning, WaitFor::Running] {
            assert_eq!(
                evaluate(&failed, target),
                Outcome::Failed("FailedJobs: m".into())
            );
        }
    }
}
