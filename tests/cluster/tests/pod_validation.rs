//! The simulated apiserver's core Pod validation against the plugin's corpus of template
//! mistakes (tests/corpus/pod-*.yaml): each file's pod, created as the operator would create
//! it, is refused at the field the file names, or accepted when the file says `verdict:
//! accept` — the same verdicts a real kube-apiserver 1.36 gives.

mod common;

use std::path::Path;

use common::*;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use tfjob_testcluster::{Scenario, TestCluster};

/// `requests[cpu]` (apimachinery's field.Path for a map key) as `requests.cpu`, the plugin's
/// spelling of a plain key; other subscripts stay.
fn plain_keys(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(i) = rest.find('[') {
        let j = rest[i..].find(']').map(|j| i + j).unwrap_or(rest.len() - 1);
        let key = &rest[i + 1..j];
        out.push_str(&rest[..i]);
        if !key.is_empty()
            && !key.bytes().all(|b| b.is_ascii_digit())
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            out.push('.');
            out.push_str(key);
        } else {
            out.push_str(&rest[i..=j]);
        }
        rest = &rest[j + 1..];
    }
    out.push_str(rest);
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn the_corpus_pods_get_the_verdicts_of_kube_apiserver_1_36() {
    let c = TestCluster::start(Scenario::default());
    let pods: Api<DynamicObject> = Api::default_namespaced_with(
        client(&c).await,
        &ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&()),
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_string();
        if !file.starts_with("pod-") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let header = |k: &str| {
            src.lines()
                .find_map(|l| l.strip_prefix(&format!("# {k}: ")))
                .map(str::to_string)
        };
        let job: Value = serde_saphyr::from_str(&src).unwrap();
        let template = &job["spec"]["tfReplicaSpecs"]["Worker"]["template"];
        let stem = file.trim_end_matches(".yaml");
        let pod: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{stem}-worker-0")},
            "spec": template["spec"],
        }))
        .unwrap();
        let params = PostParams {
            dry_run: true,
            ..Default::default()
        };
        let answer = pods.create(&params, &pod).await;
        checked += 1;
        if header("verdict").as_deref() == Some("accept") {
            assert!(answer.is_ok(), "{file}: {answer:?}");
            continue;
        }
        let want = header("path")
            .unwrap()
            .replace("spec.tfReplicaSpecs.Worker.template.", "");
        let e = api_err(answer);
        if file == "pod-priority-without-class.yaml" {
            // An admission plugin, not validation: 403 with its sentence.
            assert_eq!(e.code, 403, "{file}: {e:?}");
            assert!(
                e.message.contains("must not be provided in pod spec"),
                "{e:?}"
            );
            continue;
        }
        assert_eq!(e.code, 422, "{file}: {e:?}");
        let fields: Vec<String> = e
            .details
            .iter()
            .flat_map(|d| d.causes.iter())
            .map(|c| plain_keys(&c.field))
            .collect();
        assert!(fields.contains(&want), "{file}: want {want} in {fields:?}");
    }
    assert!(checked >= 21, "corpus went missing: {checked}");
}

/// The simulated operator's pod creations go through the same validation: a template the
/// apiserver refuses leaves the job without pods and a FailedCreatePod event per attempt, as
/// pod_control.go records it ("Error creating: …").
#[tokio::test(flavor = "multi_thread")]
async fn the_operator_cannot_create_a_refused_pod_and_says_so_in_an_event() {
    let c = TestCluster::start(Scenario::default());
    // insert skips admission, as a TFJob stored before any pod check would be.
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
    assert!(
        message.starts_with("Error creating: Pod \"typo-worker-0\" is invalid: spec.dnsPolicy: Unsupported value: \"ClusterFrist\""),
        "{message}"
    );
    assert!(c.get("pods", Some("default"), "typo-worker-0").is_none());
}
