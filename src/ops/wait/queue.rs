//! `wait`'s queue layer: a job Kueue holds suspended is queued, not failed. While it waits,
//! progress says what Kueue says (the Workload's QuotaReserved/Admitted/Evicted conditions, the
//! ClusterQueue, the position when the visibility API answers); Kueue's inadmissible cases end
//! the wait at once (a missing LocalQueue or ClusterQueue: exit 3; more than the ClusterQueue
//! can ever give: exit 4); `--pending-timeout` bounds the queueing (exit 5). A Volcano PodGroup
//! still Pending with no pods is "gang waiting", with the PodGroup's own words.
//!
//! What Kueue's conditions mean is decided in `placement::queue_state`.

use std::time::{Duration, Instant};

use crate::cluster::Kube;
use crate::cluster::queue::{self as q, Fact};
use crate::error::{Error, Result};
use crate::model::TFJob;
use crate::placement::queue_state::{KueueState, kueue_state};

/// How often the Workload (or PodGroup) is read again while the job waits.
const READ_EVERY: Duration = Duration::from_secs(2);

/// The follow's queue state across checks.
#[derive(Debug, Default)]
pub struct QueueWatch {
    since: Option<Instant>,
    next_read: Option<Instant>,
    last_said: Option<String>,
    /// `None` until looked up; `Some(false)`: Kueue's API is not served.
    kueue_served: Option<bool>,
    /// The job is held (queued or gang waiting) right now.
    pub held: bool,
    /// What Kueue's readiness means for a TFJob was said (once per wait).
    pods_ready_said: bool,
}

impl QueueWatch {
    /// Looks at the job's queue (rate-limited); `Ok(lines)` to print, `Err` to end the wait.
    pub async fn observe(
        &mut self,
        kube: &Kube,
        ns: &str,
        job: &TFJob,
        has_pods: bool,
        pending_timeout: Option<Duration>,
    ) -> Result<Vec<String>> {
        let now = Instant::now();
        if self.next_read.is_some_and(|t| now < t) {
            return Ok(vec![]);
        }
        self.next_read = Some(now + READ_EVERY);
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let mut lines = vec![];
        if q::local_queue_name(job).is_some() && !self.pods_ready_said {
            self.pods_ready_said = true;
            lines.push(format!("note: {}", q::KUEUE_PODS_READY_NOTE));
        }
        let held = if let Some(lq) = q::local_queue_name(job) {
            self.kueue(kube, ns, job, lq, &mut lines).await?
        } else if !has_pods && !job.is_finished() && !job.is_suspended() {
            self.gang(kube, ns, name, &mut lines).await?
        } else {
            None
        };
        self.held = held.is_some();
        let Some(what) = held else {
            self.since = None;
            return Ok(lines);
        };
        let since = *self.since.get_or_insert(now);
        if let Some(limit) = pending_timeout
            && now.duration_since(since) >= limit
        {
            return Err(Error::Timeout(format!(
                "TFJob {ns}/{name} is still {what} after --pending-timeout {}s{}",
                limit.as_secs(),
                self.last_said
                    .as_deref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default()
            )));
        }
        Ok(lines)
    }

    fn say(&mut self, line: String, lines: &mut Vec<String>) {
        if self.last_said.as_deref() != Some(line.as_str()) {
            self.last_said = Some(line.clone());
            lines.push(line);
        }
    }

    /// `Some(what it waits for)` while Kueue holds the job.
    async fn kueue(
        &mut self,
        kube: &Kube,
        ns: &str,
        job: &TFJob,
        lq: &str,
        lines: &mut Vec<String>,
    ) -> Result<Option<String>> {
        let name = job.metadata.name.as_deref().unwrap_or_default();
        if !job.is_suspended() {
            return Ok(None);
        }
        if self.kueue_served.is_none() {
            self.kueue_served = q::kueue_served(kube).await?.known().copied();
        }
        if self.kueue_served == Some(false) {
            return Err(Error::JobFailed(format!(
                "TFJob {name} is suspended (runPolicy.suspend: true) and names LocalQueue {lq}, but Kueue's API is not served here: nothing will resume it"
            )));
        }
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let wl = match q::workload_for(kube, ns, uid).await? {
            Fact::Known(w) => w,
            Fact::Unknown(why) => {
                self.say(
                    format!(
                        "queued in Kueue LocalQueue {lq} (its Workload is not readable: {why})"
                    ),
                    lines,
                );
                return Ok(Some(format!("queued in LocalQueue {lq}")));
            }
        };
        let state = kueue_state(job, wl.as_ref());
        let wl_name = wl.as_ref().and_then(|w| w.metadata.name.clone());
        let flags = kube.hints.ns_flags(ns);
        match state {
            KueueState::NotHeld => Ok(None),
            KueueState::NoWorkload => {
                self.say(
                    format!("queued in Kueue LocalQueue {lq}: no Workload yet (Kueue creates one for the job)"),
                    lines,
                );
                Ok(Some(format!(
                    "queued in LocalQueue {lq} without a Workload"
                )))
            }
            KueueState::Missing(m) => Err(Error::NotReady {
                message: format!(
                    "TFJob {ns}/{name} cannot be admitted: {m} (Workload {})",
                    wl_name.unwrap_or_default()
                ),
                hint: Some(format!(
                    "List the LocalQueues with `kubectl get localqueues {flags}`; Kueue admits the job once its queue exists."
                )),
            }),
            KueueState::Never { cq, why } => Err(Error::WontRun {
                message: format!(
                    "TFJob {ns}/{name} can never be admitted by ClusterQueue {} (LocalQueue {lq}) as configured: {why}",
                    cq.unwrap_or_else(|| "?".into())
                ),
                hint: Some(format!(
                    "Lower the replicas or their requests, or ask for more quota; see `kubectl tfjob diagnose {name} {flags}`."
                )),
            }),
            KueueState::Deactivated => {
                self.say(
                    format!("Workload {} is deactivated (spec.active: false): Kueue admits it once reactivated (`kubectl tfjob resume {name} {flags}`)", wl_name.unwrap_or_default()),
                    lines,
                );
                Ok(Some("deactivated in Kueue".into()))
            }
            KueueState::Evicted { reason, why } => {
                self.say(
                    format!(
                        "evicted by Kueue ({reason}): {why}; the job is suspended and queued again"
                    ),
                    lines,
                );
                Ok(Some(format!("queued after eviction ({reason})")))
            }
            KueueState::Queued { cq, why } => {
                let cq = match cq {
                    Some(cq) => Some(cq),
                    None => match q::local_queue(kube, ns, lq).await? {
                        Fact::Known(Some(l)) => Some(l.spec.cluster_queue),
                        _ => None,
                    },
                };
                let position = q::pending_position(kube, ns, lq, wl_name.as_deref())
                    .await
                    .and_then(|(p, _)| p)
                    .map(|p| format!(" (position {} in the ClusterQueue)", p + 1))
                    .unwrap_or_default();
                let cq = cq.unwrap_or_else(|| "?".into());
                self.say(
                    format!("queued in ClusterQueue {cq} (LocalQueue {lq}){position}: {why}"),
                    lines,
                );
                Ok(Some(format!("queued in ClusterQueue {cq}")))
            }
        }
    }

    /// `Some(..)` while a Volcano PodGroup holds a reconciled job with no pods.
    async fn gang(
        &mut self,
        kube: &Kube,
        ns: &str,
        name: &str,
        lines: &mut Vec<String>,
    ) -> Result<Option<String>> {
        let Fact::Known(Some((system, pg))) = q::pod_group(kube, ns, name).await? else {
            return Ok(None);
        };
        if !pg.gang_waiting() {
            return Ok(None);
        }
        let phase = pg.phase().to_string();
        let event = q::pod_group_event(kube, ns, name).await;
        let words = pg.latest_message().or(event).unwrap_or_else(|| {
            if phase.is_empty() {
                "no gang scheduler has processed it yet (is it running?)".into()
            } else {
                format!("minMember {}", pg.spec.min_member.unwrap_or_default())
            }
        });
        self.say(pg.waiting_line(system, name, Some(&words)), lines);
        Ok(Some("gang waiting".into()))
    }
}
