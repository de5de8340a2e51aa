//! The pods the operator will create, sent to the API server as dry runs before the job is
//! written: only the API server knows what PodSecurity admission, policy engines and webhooks
//! that act on pods (and PriorityClass values) make of them. Stores nothing.
//!
//! Each pod is the operator's as [`crate::operator_pods`] models it (name, labels, restart
//! policy, default port, TF_CONFIG). The ownerReference is left out: the job has no uid yet.

use futures::stream::{self, StreamExt};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};

use crate::cluster::{self, Kube};
use crate::error::{Error, Result};
use crate::model::TFJob;
use crate::operator_pods;
use crate::output::Output;

/// Pods sent at once (each is one small request; the API server answers them in parallel).
const CONCURRENCY: usize = 8;
/// Above this many replicas of one type, only its first and last index are sent: pods of one
/// type differ only in their index (name, label, TF_CONFIG task), and the last has the longest.
const ALL_INDEXES_UP_TO: i32 = 16;

/// Admission answers the placement pre-flight reports itself: ResourceQuota (used capacity
/// may free up), a missing ServiceAccount or PriorityClass (references).
const PREFLIGHT_OWNS: [&str; 3] = [
    "exceeded quota",
    "error looking up service account",
    "no PriorityClass with name",
];

/// Sends the dry runs when the user may create pods in `namespace`; a refusal is exit 2 naming
/// each refused replica with the API server's field errors. What cannot be asked (no
/// permission, no review API, a transient failure) is a note, never a refusal.
pub async fn check(kube: &Kube, namespace: &str, job: &TFJob, out: &mut Output) -> Result<()> {
    match may_create_pods(kube, namespace).await {
        Some(true) => {}
        Some(false) => {
            out.note_line(&format!(
                "note: you may not create pods in namespace {namespace:?}, so the replica pods were not dry-run on the server (the operator creates them with its own rights)"
            ));
            return Ok(());
        }
        None => return Ok(()),
    }
    let pods = operator_pods(job, namespace);
    let api: Api<Pod> = Api::namespaced(kube.client.clone(), namespace);
    let params = PostParams {
        dry_run: true,
        field_manager: Some(crate::cluster::FIELD_MANAGER.into()),
    };
    let answers: Vec<(String, String, std::result::Result<Pod, kube::Error>)> =
        stream::iter(pods.into_iter().map(|(rtype, pod)| {
            let (api, params) = (api.clone(), params.clone());
            async move {
                let name = pod.metadata.name.clone().unwrap_or_default();
                let answer = cluster::retry(kube, || api.create(&params, &pod)).await;
                (rtype, name, answer)
            }
        }))
        .buffered(CONCURRENCY)
        .collect()
        .await;
    let mut refused: Vec<String> = Vec::new();
    for (rtype, name, answer) in answers {
        let Err(e) = answer else { continue };
        match &e {
            // Answers the pre-flight owns, with their own verdicts: quota in use by other pods
            // (`waits`), and the references --allow-missing-refs may allow.
            kube::Error::Api(s)
                if s.code == 403 && PREFLIGHT_OWNS.iter().any(|m| s.message.contains(m)) =>
            {
                tracing::debug!(pod = %name, message = %s.message, "left to the pre-flight");
            }
            kube::Error::Api(s)
                if s.code == 422
                    || s.code == 400
                    || (s.code == 403 && !cluster::forbidden::by_authorizer(&s.message, "create")) =>
            {
                let mut m = format!("{rtype} pod {name}: {}", s.message);
                for cause in s.details.iter().flat_map(|d| d.causes.iter()) {
                    m.push_str(&format!("\n    - {}: {}", cause.field, cause.message));
                }
                refused.push(m);
            }
            _ => out.note_line(&format!(
                "warning: the server dry run of pod {name} did not answer ({}); going on without it",
                crate::error::chain(&e)
            )),
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "the API server refuses the pods the operator would create, so the job would never get them (nothing was created):\n  {}",
        refused.join("\n  ")
    )))
}

/// SelfSubjectAccessReview for `create pods`; `None` when the review itself fails.
async fn may_create_pods(kube: &Kube, namespace: &str) -> Option<bool> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(kube.client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                resource: Some("pods".into()),
                verb: Some("create".into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let params = PostParams::default();
    match cluster::retry(kube, || reviews.create(&params, &review)).await {
        Ok(answer) => Some(answer.status.is_some_and(|s| s.allowed)),
        Err(e) => {
            tracing::debug!(error = %e, "access review for pods unavailable");
            None
        }
    }
}

/// The pods to dry-run, with their replica type, as the operator would create them
/// ([`operator_pods::expand`]); a job named by `generateName` under the longest name the API
/// server could give it.
pub fn operator_pods(job: &TFJob, namespace: &str) -> Vec<(String, Pod)> {
    let mut model = operator_pods::expand(job).in_namespace(namespace);
    if job.metadata.name.is_none()
        && let Some(prefix) = &job.metadata.generate_name
    {
        model = model.named(crate::pipeline::validate::names::generated_name(prefix));
    }
    let mut out = Vec::new();
    for r in &model.replicas {
        let n = r.count;
        let indexes: Vec<i32> = if n <= ALL_INDEXES_UP_TO {
            (0..n).collect()
        } else {
            vec![0, n - 1]
        };
        for i in indexes {
            out.push((r.type_name.clone(), model.pod(r, i)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model;

    #[test]
    fn pods_are_built_as_the_operator_builds_them() {
        let job: TFJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist"},
            "spec": {"tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}},
                "Worker": {"replicas": 40, "restartPolicy": "ExitCode",
                    "template": {"metadata": {"labels": {"team": "nlp"}},
                                 "spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}}}
        }))
        .unwrap();
        let pods = operator_pods(&job, "ns");
        let names: Vec<&str> = pods
            .iter()
            .map(|(_, p)| p.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(names, ["mnist-ps-0", "mnist-worker-0", "mnist-worker-39"]);
        let (_, w0) = &pods[1];
        let labels = w0.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["team"], "nlp");
        assert_eq!(labels[model::LABEL_JOB_ROLE], "master");
        assert_eq!(labels[model::LABEL_REPLICA_INDEX], "0");
        let spec = w0.spec.as_ref().unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        let env = spec.containers[0].env.as_ref().unwrap();
        let tf = env.last().unwrap();
        assert_eq!(tf.name, "TF_CONFIG");
        let v = tf.value.as_deref().unwrap();
        assert!(
            v.starts_with(r#"{"cluster":{"ps":["mnist-ps-0.ns.svc:2222"],"worker":["mnist-worker-0.ns.svc:2222","#),
            "{v}"
        );
        assert!(
            v.ends_with(r#""task":{"type":"worker","index":0},"environment":"cloud"}"#),
            "{v}"
        );
        assert_eq!(
            spec.containers[0].ports.as_ref().unwrap()[0].container_port,
            2222
        );
    }
}
