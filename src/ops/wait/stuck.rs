//! Why a reconciled job's pods do not come or do not start, read only while they stay that
//! way: the operator's refused creates (`FailedCreatePod` events) and missing objects the pods
//! mount. Both end the wait with the controller-layer or missing-object verdict `diagnose`
//! gives for the same job.

use std::time::{Duration, Instant};

use kube::api::{Api, ListParams};
use kube::runtime::wait::Condition;

use super::{READ_LIMIT, Waiter};
use crate::cluster::budget::Budget;
use crate::cluster::pod::PodFacts;
use crate::diagnose::refused;
use crate::error::Error;
use crate::model;
use crate::ops::wait::conditions;

/// A reconciled job's pods missing this long: the operator's refused creates are looked for
/// (pods it is creating right now are not missing for long, so a healthy wait asks nothing).
const REFUSALS_AFTER: Duration = Duration::from_secs(3);
/// Then at most this often: one bounded list of the job's `FailedCreatePod` events.
const REFUSALS_EVERY: Duration = Duration::from_secs(10);
/// The newest refusals are among this many (the event recorder aggregates repeats into one).
const REFUSAL_EVENTS: u32 = 100;
impl Waiter<'_> {
    /// The controller-layer failure of a job whose pods the API server refuses: the operator's
    /// `FailedCreatePod` events, read with one bounded list (field selector on the job's uid)
    /// only while a reconciled job has had pods missing for [`REFUSALS_AFTER`]. A missing
    /// ServiceAccount is an object missing (exit 3, with how to create it); any other refusal
    /// (PodSecurity, a policy webhook, LimitRange, an invalid pod) will not run (exit 4).
    pub(super) async fn refused_create(&mut self) -> Option<Error> {
        let (job, pods) = self.last.as_ref()?;
        let present: std::collections::BTreeSet<&str> = pods
            .iter()
            .filter_map(|p| p.metadata.name.as_deref())
            .collect();
        let missing: Vec<String> = crate::operator_pods::expand(job)
            .pod_names()
            .into_iter()
            .filter(|n| !present.contains(n.as_str()))
            .collect();
        if missing.is_empty()
            || job.is_finished()
            || !conditions::is_reconciled().matches_object(Some(job))
        {
            self.missing_since = None;
            return None;
        }
        let since = *self.missing_since.get_or_insert_with(Instant::now);
        let now = Instant::now();
        if now.duration_since(since) < REFUSALS_AFTER || self.next_refusals.is_some_and(|t| now < t)
        {
            return None;
        }
        self.next_refusals = Some(now + REFUSALS_EVERY);
        let uid = job.metadata.uid.as_deref()?;
        let events: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(self.kube.client.clone(), self.namespace);
        let lp = ListParams::default()
            .fields(&format!(
                "involvedObject.kind={},involvedObject.name={},involvedObject.uid={uid},reason={}",
                model::KIND,
                self.name,
                refused::FAILED_CREATE_POD
            ))
            .limit(REFUSAL_EVENTS);
        // One attempt within what is left: a failed read is tried again next time.
        let limit = Budget::new(READ_LIMIT.min(self.end.saturating_duration_since(now) / 2));
        let list = match limit.attempt(events.list(&lp)).await {
            Some(Ok(list)) => list,
            Some(Err(e)) => {
                tracing::debug!(error = %e, "listing the job's events failed");
                return None;
            }
            None => return None,
        };
        let r = refused::refusal(&list.items)?;
        // Refused once, created since: the operator's retry got through.
        let pod = match &r.pod {
            Some(p) if !missing.contains(p) => return None,
            Some(p) => format!("pod {p}"),
            None => format!("the pods ({})", missing.join(", ")),
        };
        // The events outlive their cause: an account created since is not missing, and the
        // operator's next retry makes the pods.
        if let Some(sa) = &r.missing_service_account {
            let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
                Api::namespaced(self.kube.client.clone(), self.namespace);
            if let Some(Ok(Some(_))) = limit.attempt(accounts.get_opt(sa)).await {
                return None;
            }
        }
        let flags = self.kube.hints.ns_flags(self.namespace);
        let message = format!(
            "the operator cannot create {pod} of TFJob {}/{}: the API server refuses it: {}",
            self.namespace, self.name, r.message
        );
        Some(match &r.missing_service_account {
            Some(sa) => Error::NotReady {
                message,
                hint: Some(format!(
                    "Create the ServiceAccount the pods name: `kubectl create serviceaccount {sa} {flags}`; the operator retries the create and the pods follow."
                )),
            },
            None => Error::WontRun {
                message: format!("{message}; the job will not run until that is fixed"),
                hint: Some(format!(
                    "Fix what the message names in the replica's pod template (or the policy that refuses it), then delete and resubmit the job; `kubectl tfjob diagnose {} {flags}` shows every refusal.",
                    self.name
                )),
            },
        })
    }

    /// Pods Pending for [`REFUSALS_AFTER`] on an object they need that does not exist (a PVC,
    /// a ConfigMap, a Secret volume or env): the object is named first, with how to create it
    /// (exit 3, an object missing), not "waiting for capacity". One metadata GET per distinct
    /// object the templates reference, at most every [`REFUSALS_EVERY`].
    pub(super) async fn waits_for_missing_objects(&mut self) -> Option<Error> {
        let (job, pods) = self.last.as_ref()?;
        let pending = pods.iter().any(|p| p.pod_phase() == "Pending");
        if !pending || job.is_finished() || !conditions::is_reconciled().matches_object(Some(job)) {
            self.pending_since = None;
            return None;
        }
        let since = *self.pending_since.get_or_insert_with(Instant::now);
        let now = Instant::now();
        if now.duration_since(since) < REFUSALS_AFTER || self.next_lookup.is_some_and(|t| now < t) {
            return None;
        }
        self.next_lookup = Some(now + REFUSALS_EVERY);
        let job = job.clone();
        let limit = READ_LIMIT.min(self.end.saturating_duration_since(now) / 4);
        let missing =
            crate::diagnose::missing::missing_objects(self.kube, self.namespace, &job, limit).await;
        if missing.is_empty() {
            return None;
        }
        let lines: Vec<String> = missing.iter().map(|m| m.sentence(self.namespace)).collect();
        let hints: Vec<String> = missing.iter().map(|m| m.hint.clone()).collect();
        Some(Error::NotReady {
            message: format!(
                "TFJob {}/{} waits for what does not exist:\n  {}",
                self.namespace,
                self.name,
                lines.join("\n  ")
            ),
            hint: Some(format!(
                "Create it, and the pods start: {}",
                hints.join("; ")
            )),
        })
    }
}
