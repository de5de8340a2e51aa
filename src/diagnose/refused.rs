//! Pure: what the operator's `FailedCreatePod` events on a TFJob say. The one reading of them,
//! shared by `wait` (which ends on one) and `diagnose` (whose Controller layer reports it).
//!
//! The operator creates each replica's pod itself; when the API server refuses the create it
//! records a Warning event on the TFJob, reason `FailedCreatePod`, message `Error creating: %v`
//! with the API server's error (kubeflow/common `pkg/controller.v1/control/pod_control.go`,
//! `RealPodControl.createPods`, `FailedCreatePodReason`). The job then never gets that pod.

use k8s_openapi::api::core::v1::Event;

/// The event reason (kubeflow/common `FailedCreatePodReason`).
pub const FAILED_CREATE_POD: &str = "FailedCreatePod";

/// One refused pod create, as the API server worded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The pod the operator tried to create, when the message names it (`pods "NAME" is …`;
    /// an admission webhook's denial does not).
    pub pod: Option<String>,
    /// The API server's message, without the operator's `Error creating: ` prefix.
    pub message: String,
    /// The ServiceAccount the pod names, when that is why it is refused: an object missing
    /// (exit 3, create it), not a pod that will not run (exit 4).
    pub missing_service_account: Option<String>,
}

/// The newest refusal that decides something: quota refusals are left out (quota in use by
/// other pods may free up; the Scheduling layer reports them). Events are in any order; the
/// newest by last timestamp wins.
pub fn refusal(events: &[Event]) -> Option<Refusal> {
    let mut refused: Vec<&Event> = events
        .iter()
        .filter(|e| {
            e.reason.as_deref() == Some(FAILED_CREATE_POD)
                && e.type_.as_deref().unwrap_or("Warning") == "Warning"
                && e.message.as_deref().is_some_and(|m| !is_quota(m))
        })
        .collect();
    refused.sort_by_key(|e| {
        e.last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or(e.event_time.as_ref().map(|t| t.0))
    });
    refused.last().and_then(|e| parse(e.message.as_deref()?))
}

/// Quota refusals (ResourceQuota admission): `exceeded quota` or `must specify` under a quota.
pub fn is_quota(message: &str) -> bool {
    message.contains("exceeded quota")
        || message.contains("must specify limits") && message.contains("quota")
}

/// Reads one event message.
pub fn parse(message: &str) -> Option<Refusal> {
    let message = message
        .strip_prefix("Error creating: ")
        .unwrap_or(message)
        .trim();
    if message.is_empty() {
        return None;
    }
    Some(Refusal {
        pod: quoted_after(message, "pods \"").or_else(|| quoted_after(message, "Pod \"")),
        missing_service_account: missing_service_account(message),
        message: message.to_string(),
    })
}

/// ServiceAccount admission (kubernetes `plugin/pkg/admission/serviceaccount/admission.go`,
/// `Admit` → `getServiceAccount`): `error looking up service account NS/NAME: serviceaccount
/// "NAME" not found`.
fn missing_service_account(message: &str) -> Option<String> {
    let rest = &message[message.find("error looking up service account ")?..];
    if !rest.contains("not found") {
        return None;
    }
    quoted_after(rest, "serviceaccount \"")
}

fn quoted_after(s: &str, open: &str) -> Option<String> {
    let start = s.find(open)? + open.len();
    let len = s[start..].find('"')?;
    Some(s[start..start + len].to_string()).filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_service_account_names_the_account_and_the_pod() {
        let r = parse(
            "Error creating: pods \"j-worker-0\" is forbidden: error looking up service account team/trainer: serviceaccount \"trainer\" not found",
        )
        .unwrap();
        assert_eq!(r.pod.as_deref(), Some("j-worker-0"));
        assert_eq!(r.missing_service_account.as_deref(), Some("trainer"));
        assert!(r.message.starts_with("pods \"j-worker-0\" is forbidden"));
    }

    #[test]
    fn admission_and_webhook_refusals_are_not_missing_objects() {
        let ps = parse("Error creating: pods \"j-ps-0\" is forbidden: violates PodSecurity \"restricted:latest\": runAsNonRoot != true").unwrap();
        assert_eq!(ps.pod.as_deref(), Some("j-ps-0"));
        assert_eq!(ps.missing_service_account, None);
        let hook = parse("Error creating: admission webhook \"validate.kyverno.svc\" denied the request: no latest tag").unwrap();
        assert_eq!(hook.pod, None);
        let invalid =
            parse("Error creating: Pod \"j-worker-1\" is invalid: spec.containers[0].image: Required value")
                .unwrap();
        assert_eq!(invalid.pod.as_deref(), Some("j-worker-1"));
    }

    #[test]
    fn quota_refusals_and_other_reasons_decide_nothing() {
        let ev = |reason: &str, message: &str| Event {
            reason: Some(reason.into()),
            type_: Some("Warning".into()),
            message: Some(message.into()),
            ..Default::default()
        };
        assert_eq!(
            refusal(&[ev(
                FAILED_CREATE_POD,
                "Error creating: pods \"j-worker-0\" is forbidden: exceeded quota: q, requested: cpu=1, used: cpu=4, limited: cpu=4"
            )]),
            None
        );
        assert_eq!(
            refusal(&[ev("FailedCreateService", "Error creating: x")]),
            None
        );
        assert!(
            refusal(&[ev(
                FAILED_CREATE_POD,
                "Error creating: pods \"a\" is forbidden: x"
            )])
            .is_some()
        );
    }
}
