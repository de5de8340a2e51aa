//! Events about a job's pods, read pod by pod with the field selector client-go builds for
//! `kubectl describe pod` (`typed/core/v1/event_expansion.go`, `Search` → `GetFieldSelector`:
//! `involvedObject.name`, `.kind` and, when known, `.uid`). One namespace-wide list of every pod
//! event costs what the namespace holds; these reads cost what the job holds, and at most
//! [`MAX_PODS`] of them are made.

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};

use super::client::{Kube, retry};

/// Pods whose events one command reads; the callers put the troubled ones first.
pub const MAX_PODS: usize = 32;

/// Requests in flight at once.
const CONCURRENCY: usize = 8;

/// A pod to read events of: its name, and its uid when the pod exists (events of an earlier pod
/// with the same name are then left out by the server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    pub name: String,
    pub uid: Option<String>,
}

/// What [`of_pods`] read.
#[derive(Debug, Default)]
pub struct PodEvents {
    pub events: Vec<Event>,
    /// Pods past [`MAX_PODS`] whose events were not read.
    pub unread: usize,
}

/// The field selector for one pod's events (pure).
pub fn selector(pod: &PodRef) -> String {
    let mut s = format!("involvedObject.kind=Pod,involvedObject.name={}", pod.name);
    if let Some(uid) = &pod.uid {
        s.push_str(",involvedObject.uid=");
        s.push_str(uid);
    }
    s
}

/// Whether `event` is about `pod`: kept client-side too, so a server (or proxy) that ignores the
/// field selector costs bytes but never misattributes an event. An unknown uid matches.
pub fn about(pod: &PodRef, event: &Event) -> bool {
    let io = &event.involved_object;
    io.name.as_deref() == Some(pod.name.as_str())
        && io.kind.as_deref().is_none_or(|k| k == "Pod")
        && same_uid(io.uid.as_ref(), pod.uid.as_ref())
}

/// Whether an event's involvedObject uid names `object`: unknown on either side counts as the
/// same object (a job or pod recreated under its name keeps its predecessor's events).
pub fn same_uid(event: Option<&String>, object: Option<&String>) -> bool {
    match (event, object) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// Reads the events of the first [`MAX_PODS`] of `pods` (in their order), [`CONCURRENCY`] at a
/// time, each request retried as every read is. The first error ends the read.
pub async fn of_pods(
    kube: &Kube,
    namespace: &str,
    pods: Vec<PodRef>,
) -> Result<PodEvents, kube::Error> {
    let api: Api<Event> = Api::namespaced(kube.client.clone(), namespace);
    let unread = pods.len().saturating_sub(MAX_PODS);
    let lists: Vec<Vec<Event>> = stream::iter(pods.into_iter().take(MAX_PODS))
        .map(|pod| {
            let api = api.clone();
            async move {
                // From the watch cache (resourceVersion=0): events decorate a verdict, and one
                // a moment old says the same.
                let lp = ListParams::default().fields(&selector(&pod)).match_any();
                let items = retry(kube, || api.list(&lp)).await?.items;
                Ok::<_, kube::Error>(items.into_iter().filter(|e| about(&pod, e)).collect())
            }
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await?;
    Ok(PodEvents {
        events: lists.into_iter().flatten().collect(),
        unread,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_names_the_pod_and_its_uid_when_known() {
        let pod = PodRef {
            name: "j-worker-0".into(),
            uid: Some("u-1".into()),
        };
        assert_eq!(
            selector(&pod),
            "involvedObject.kind=Pod,involvedObject.name=j-worker-0,involvedObject.uid=u-1"
        );
        let gone = PodRef {
            name: "j-worker-1".into(),
            uid: None,
        };
        assert_eq!(
            selector(&gone),
            "involvedObject.kind=Pod,involvedObject.name=j-worker-1"
        );
    }

    #[test]
    fn only_the_pods_own_events_are_kept() {
        let ev = |name: &str, kind: &str, uid: Option<&str>| Event {
            involved_object: k8s_openapi::api::core::v1::ObjectReference {
                name: Some(name.into()),
                kind: Some(kind.into()),
                uid: uid.map(Into::into),
                ..Default::default()
            },
            ..Default::default()
        };
        let pod = PodRef {
            name: "j-worker-0".into(),
            uid: Some("u-1".into()),
        };
        assert!(about(&pod, &ev("j-worker-0", "Pod", Some("u-1"))));
        assert!(about(&pod, &ev("j-worker-0", "Pod", None)));
        assert!(!about(&pod, &ev("j-worker-0", "Pod", Some("earlier"))));
        assert!(!about(&pod, &ev("j-worker-1", "Pod", Some("u-1"))));
        assert!(!about(&pod, &ev("j-worker-0", "Service", None)));
        let gone = PodRef {
            name: "j-worker-0".into(),
            uid: None,
        };
        assert!(about(&gone, &ev("j-worker-0", "Pod", Some("earlier"))));
    }
}
