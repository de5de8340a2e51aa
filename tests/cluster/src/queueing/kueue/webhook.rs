//! Kueue's webhooks on TFJob (`tfjob_controller.go` markers, `config/components/webhook/
//! manifests.yaml`): mutating `mtfjob.kb.io` on CREATE (`BaseWebhook.Default` in
//! `pkg/controller/jobframework/base_webhook.go`) and validating `vtfjob.kb.io` on CREATE and
//! UPDATE (`pkg/controller/jobframework/validation.go`). Both skip kube-system and
//! kueue-system (the webhooks' namespaceSelector). With the TFJob framework not enabled the
//! webhook is registered as a no-op (`setup.go`).

use serde_json::{Value, json};

use super::{NAMESPACE, QUEUE_LABEL};
use crate::state::Shared;
use crate::status::FieldError;

/// The validating webhook's name in Status messages.
pub const VALIDATING: &str = "vtfjob.kb.io";

fn managed(sh: &Shared, ns: &str) -> bool {
    sh.scenario
        .kueue
        .as_ref()
        .is_some_and(|k| k.manages_tfjobs())
        && ns != "kube-system"
        && ns != NAMESPACE
}

/// The API server's error when the webhook has no endpoints (scenario `kueue.webhook: false`).
pub(crate) fn unavailable(sh: &Shared, ns: &str) -> Option<String> {
    let k = sh.scenario.kueue.as_ref()?;
    (!k.webhook && managed(sh, ns)).then(|| {
        format!(
            "failed calling webhook \"mtfjob.kb.io\": failed to call webhook: Post \"https://kueue-webhook-service.{NAMESPACE}.svc:443/mutate-kubeflow-org-v1-tfjob?timeout=10s\": no endpoints available for service \"kueue-webhook-service\""
        )
    })
}

/// `Default`: the namespace's `default` LocalQueue when the job names none
/// (`ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector`), then `ApplyDefaultForSuspend`:
/// a job with a queue-name label is stored with `runPolicy.suspend=true`.
pub(crate) fn mutate_tfjob(sh: &Shared, ns: &str, job: &mut Value) {
    if !managed(sh, ns) {
        return;
    }
    let has_label = job["metadata"]["labels"][QUEUE_LABEL]
        .as_str()
        .is_some_and(|q| !q.is_empty());
    if !has_label && sh.store.get("localqueues", ns, "default").is_some() {
        if !job["metadata"]["labels"].is_object() {
            job["metadata"]["labels"] = json!({});
        }
        job["metadata"]["labels"][QUEUE_LABEL] = json!("default");
    }
    if job["metadata"]["labels"][QUEUE_LABEL]
        .as_str()
        .is_some_and(|q| !q.is_empty())
    {
        if !job["spec"]["runPolicy"].is_object() {
            job["spec"]["runPolicy"] = json!({});
        }
        job["spec"]["runPolicy"]["suspend"] = json!(true);
    }
}

/// `ValidateJobOnCreate` / `ValidateJobOnUpdate` for what a TFJob can get wrong.
pub(crate) fn validate_tfjob(
    sh: &Shared,
    ns: &str,
    old: Option<&Value>,
    job: &Value,
) -> Vec<FieldError> {
    if !managed(sh, ns) {
        return vec![];
    }
    let field = format!("metadata.labels[{QUEUE_LABEL}]");
    let label = |o: &Value| {
        o["metadata"]["labels"][QUEUE_LABEL]
            .as_str()
            .map(String::from)
    };
    let mut errs = Vec::new();
    let new_q = label(job);
    match old {
        None => {
            if let Some(q) = new_q.as_deref().filter(|q| !q.is_empty()) {
                for e in crate::util::dns1123_subdomain_errors(q) {
                    errs.push(FieldError::invalid(&field, &json!(q), &e));
                }
            }
        }
        Some(old) => {
            let was_suspended = old["spec"]["runPolicy"]["suspend"] == json!(true);
            let old_q = label(old);
            if old_q != new_q && !was_suspended {
                // validation.go: the queue name may change only while the job is suspended.
                errs.push(FieldError::invalid(
                    &field,
                    &json!(new_q.clone().unwrap_or_default()),
                    "field is immutable",
                ));
            } else if new_q.as_deref().is_none_or(str::is_empty)
                && old_q.is_some()
                && sh.store.get("localqueues", ns, "default").is_some()
            {
                errs.push(FieldError::invalid(
                    &field,
                    &json!(""),
                    "queue-name must not be empty in namespace with default queue",
                ));
            }
        }
    }
    errs
}
