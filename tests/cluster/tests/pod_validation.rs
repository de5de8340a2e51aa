//! What the simulated apiserver answers for a Pod create: the scenario's refusals as a 422
//! Invalid with apimachinery's causes (the rules themselves are a real kube-apiserver's, held to
//! it in tests/real), and the Priority admission plugin's 403, for the API and for the simulated
//! operator's own creations.

mod common;

use common::*;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use serde_json::json;
use tfjob_testcluster::{Scenario, TestCluster};

const UNSUPPORTED: &str = "Unsupported value: \"ClusterFrist\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"";

fn pod(name: &str, spec: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

async fn pods(c: &TestCluster) -> Api<DynamicObject> {
    Api::default_namespaced_with(
        client(c).await,
        &ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&()),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_pod_gets_422_with_its_causes_on_dry_run_and_create() {
    let c = TestCluster::start(Scenario::default().with_refusal(
        "pods",
        "typo-",
        "spec.dnsPolicy",
        UNSUPPORTED,
    ));
    let api = pods(&c).await;
    let spec =
        json!({"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]});
    for dry_run in [true, false] {
        let params = PostParams {
            dry_run,
            ..Default::default()
        };
        let e = api_err(
            api.create(&params, &pod("typo-worker-0", spec.clone()))
                .await,
        );
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
        assert_eq!(
            e.message,
            format!("Pod \"typo-worker-0\" is invalid: spec.dnsPolicy: {UNSUPPORTED}")
        );
        let causes = &e.details.as_ref().unwrap().causes;
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].field, "spec.dnsPolicy");
        assert_eq!(causes[0].reason, "FieldValueNotSupported");
    }
    // Another name is not refused.
    api.create(&PostParams::default(), &pod("fine-worker-0", spec))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stated_priority_without_its_class_is_forbidden_by_admission() {
    let c = TestCluster::start(Scenario::default());
    let e = api_err(
        pods(&c)
            .await
            .create(
                &PostParams::default(),
                &pod(
                    "p",
                    json!({"priority": 1000,
                           "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}),
                ),
            )
            .await,
    );
    assert_eq!(e.code, 403, "{e:?}");
    assert!(
        e.message.contains("must not be provided in pod spec"),
        "{e:?}"
    );
}

/// The simulated operator's pod creations get the same answer: a refused pod leaves the job
/// without it and a FailedCreatePod event, as pod_control.go records it ("Error creating: …").
#[tokio::test(flavor = "multi_thread")]
async fn the_operator_cannot_create_a_refused_pod_and_says_so_in_an_event() {
    let c = TestCluster::start(Scenario::default().with_refusal(
        "pods",
        "typo-worker-",
        "spec.dnsPolicy",
        UNSUPPORTED,
    ));
    c.insert(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "typo", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
            "dnsPolicy": "ClusterFrist",
            "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}
    }));
    let message = eventually(10, || {
        c.list("events", Some("default"))
            .into_iter()
            .find(|e| e["involvedObject"]["name"] == "typo" && e["reason"] == "FailedCreatePod")
            .map(|e| e["message"].as_str().unwrap_or("").to_string())
    })
    .await;
    assert_eq!(
        message,
        format!("Error creating: Pod \"typo-worker-0\" is invalid: spec.dnsPolicy: {UNSUPPORTED}")
    );
    assert!(c.get("pods", Some("default"), "typo-worker-0").is_none());
}
