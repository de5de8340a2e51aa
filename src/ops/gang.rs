//! The gang step of `check`/`submit` for a job that names Volcano: its PodGroup's minResources
//! against the Volcano Queue (`placement::gang`), read through `cluster::queue`.

use super::queue::{Assessed, QueueReport};
use crate::cluster::Kube;
use crate::cluster::queue::{self as q, Fact};
use crate::error::{Error, Result};
use crate::model::TFJob;
use crate::placement::format_quantity;
use crate::placement::gang::{self, GangVerdict};
use crate::placement::kueue::QueueVerdict;

pub async fn assess(kube: &Kube, job: &TFJob) -> Result<Assessed> {
    let g = gang::gang_of(job);
    let base = QueueReport {
        system: Some("volcano"),
        verdict: QueueVerdict::Unknown,
        local_queue: None,
        cluster_queue: None,
        reason: String::new(),
        message: None,
        pending_ahead: None,
        held_by: vec![],
        flavors: Default::default(),
    };
    let queue = match q::volcano_queue(kube, &g.queue).await? {
        Fact::Known(queue) => queue,
        Fact::Unknown(why) => {
            return Ok(Assessed {
                report: QueueReport {
                    reason: format!("Volcano queue {}: {why}", g.queue),
                    ..base
                },
                admitted: None,
                refusal: None,
                warnings: vec![format!("cannot read Volcano queue {}: {why}", g.queue)],
            });
        }
    };
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let (verdict, reason, refusal) = match gang::judge(&g, queue.as_ref()) {
        GangVerdict::Fits => (
            QueueVerdict::Fits,
            format!("gang of {} fits Volcano queue {}", g.min_member, g.queue),
            None,
        ),
        GangVerdict::Waits(res, need, free) => (
            QueueVerdict::Queued,
            format!(
                "gang waits in Volcano queue {}: needs {} {res}, {} free in the queue",
                g.queue,
                format_quantity(&res, need),
                format_quantity(&res, free)
            ),
            None,
        ),
        GangVerdict::Never(res, need, cap) => {
            let reason = format!(
                "gang needs {} {res}, more than Volcano queue {}'s capability ({})",
                format_quantity(&res, need),
                g.queue,
                format_quantity(&res, cap)
            );
            let e = Error::WontRun {
                message: format!("TFJob {name} can never be enqueued: {reason}; nothing was created"),
                hint: Some("Lower the replicas (or schedulingPolicy.minAvailable), or use a queue with more capability (--queue).".into()),
            };
            (QueueVerdict::Never, reason, Some(e))
        }
        GangVerdict::Refused(why) => {
            let e = Error::NotReady {
                message: format!(
                    "Volcano would refuse the job's PodGroup ({why}), so the operator would create no pods; nothing was created"
                ),
                hint: Some(format!(
                    "List the queues with `kubectl get queues.scheduling.volcano.sh{}` and pass one with --queue.",
                    kube.hints.hint_suffix()
                )),
            };
            (QueueVerdict::Never, why, Some(e))
        }
    };
    Ok(Assessed {
        warnings: (verdict == QueueVerdict::Queued)
            .then(|| reason.clone())
            .into_iter()
            .collect(),
        report: QueueReport {
            verdict,
            reason,
            ..base
        },
        admitted: None,
        refusal,
    })
}
