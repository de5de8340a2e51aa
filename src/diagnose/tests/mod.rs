//! Fixtures for every case `diagnose` knows, built as JSON the way the API server returns them.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod, Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::collect::{crd_state, log_targets, operator_state, outcome, without_values};
use super::*;
use crate::error::Error;
use crate::print::diagnosis::{compact, text as render_text};

mod collect;
mod collect_helpers;
mod runtime;

const NS: &str = "default";
const JOB: &str = "tf-dist-train";
const NOW: &str = "2026-11-30T21:00:00Z";
const FAKE_KEY: &str = "sk-test-DO-NOT-LEAK-0123456789abcdef";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

/// RFC 3339 time `secs` before [`NOW`].
fn ago(secs: i64) -> String {
    Timestamp::from_second(now().as_second() - secs)
        .unwrap()
        .to_string()
}

fn container(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image})
}

fn tf_container() -> Value {
    json!({
        "name": "tensorflow",
        "image": "tensorflow/tensorflow:2.16.1-gpu",
        "env": [
            {"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "api-key"}}},
            {"name": "TAOTOKEN_BASE_URL", "value": "https://taotoken.net/api"}
        ],
        "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "4Gi"}}
    })
}

fn job_json(replicas: &[(&str, i32)], conditions: &[&str]) -> Value {
    let mut specs = serde_json::Map::new();
    for (rtype, n) in replicas {
        specs.insert(
            rtype.to_string(),
            json!({
                "replicas": n,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [tf_container()]}}
            }),
        );
    }
    let conds: Vec<Value> = conditions
        .iter()
        .map(|t| {
            json!({"type": t, "status": "True", "reason": format!("TFJob{t}"),
                   "message": format!("TFJob {JOB} is {t}."),
                   "lastTransitionTime": ago(100), "lastUpdateTime": ago(100)})
        })
        .collect();
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": JOB, "namespace": NS, "creationTimestamp": ago(120), "uid": "u-1"},
        "spec": {"tfReplicaSpecs": specs},
        "status": {"conditions": conds}
    })
}

fn to_job(v: Value) -> crate::model::TFJob {
    serde_json::from_value(v).unwrap()
}

/// The container as the operator creates it: TF_CONFIG appended last.
fn with_tf_config(mut c: Value, rtype: &str, idx: i32) -> Value {
    let cfg = format!(
        "{{\"cluster\":{{\"worker\":[\"{JOB}-worker-0.{NS}.svc:2222\"]}},\"task\":{{\"type\":\"{rtype}\",\"index\":{idx}}},\"environment\":\"cloud\"}}"
    );
    c["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "TF_CONFIG", "value": cfg}));
    c
}

fn pod_json(rtype: &str, idx: i32) -> Value {
    let name = format!("{JOB}-{rtype}-{idx}");
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": NS,
            "labels": {
                "training.kubeflow.org/job-name": JOB,
                "training.kubeflow.org/operator-name": "tfjob-controller",
                "training.kubeflow.org/replica-type": rtype,
                "training.kubeflow.org/replica-index": idx.to_string()
            }
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [with_tf_config(tf_container(), rtype, idx)]
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
            "containerStatuses": [{
                "name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1-gpu", "imageID": "",
                "ready": true, "restartCount": 0,
                "state": {"running": {"startedAt": ago(60)}}
            }]
        }
    })
}

fn pending(mut pod: Value, reason: &str, message: &str) -> Value {
    pod["spec"].as_object_mut().unwrap().remove("nodeName");
    pod["status"] = json!({
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": reason, "message": message}]
    });
    pod
}

fn waiting(mut pod: Value, reason: &str, message: &str) -> Value {
    pod["status"]["phase"] = json!("Pending");
    pod["status"]["containerStatuses"][0]["ready"] = json!(false);
    pod["status"]["containerStatuses"][0]["state"] =
        json!({"waiting": {"reason": reason, "message": message}});
    pod
}

fn svc(name: &str) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterIP": "None"}
    }))
    .unwrap()
}

fn event(kind: &str, object: &str, reason: &str, message: &str) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{object}.1"), "namespace": NS},
        "involvedObject": {"kind": kind, "name": object, "namespace": NS},
        "reason": reason, "message": message, "type": "Warning",
        "lastTimestamp": ago(5)
    }))
    .unwrap()
}

fn secret(name: &str, data: &[(&str, &str)]) -> Secret {
    use std::collections::BTreeMap;
    let data: BTreeMap<String, k8s_openapi::ByteString> = data
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                k8s_openapi::ByteString(v.as_bytes().to_vec()),
            )
        })
        .collect();
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// A running 4-worker job with everything in place.
fn healthy() -> Snapshot {
    healthy_with(&[("Worker", 4)], &["Created", "Running"])
}

fn healthy_with(replicas: &[(&str, i32)], conditions: &[&str]) -> Snapshot {
    let mut s = Snapshot::new(NS, JOB, now());
    s.crd = CrdState::Present {
        established: true,
        served_versions: vec!["v1".into()],
    };
    s.operator = OperatorState::Running {
        namespace: "kubeflow".into(),
        name: "training-operator".into(),
    };
    let job = to_job(job_json(replicas, conditions));
    for (rtype, n) in replicas {
        for i in 0..*n {
            let p = pod_json(&rtype.to_lowercase(), i);
            s.pods.push(serde_json::from_value(p).unwrap());
            s.services
                .push(svc(&format!("{JOB}-{}-{i}", rtype.to_lowercase())));
        }
    }
    s.job = Some(job);
    s.secrets.insert(
        "taotoken-secret".into(),
        Some(secret("taotoken-secret", &[("api-key", FAKE_KEY)])),
    );
    s
}

fn set_pods(s: &mut Snapshot, pods: Vec<Value>) {
    s.pods = pods
        .into_iter()
        .map(|p| serde_json::from_value::<Pod>(p).unwrap())
        .collect();
}

fn of(d: &Diagnosis, layer: Layer) -> Vec<&Finding> {
    d.findings.iter().filter(|f| f.layer == layer).collect()
}

fn fails(d: &Diagnosis, layer: Layer) -> Vec<&Finding> {
    of(d, layer)
        .into_iter()
        .filter(|f| f.verdict == Grade::Fail)
        .collect()
}

fn only_fail(d: &Diagnosis, layer: Layer) -> &Finding {
    let f = fails(d, layer);
    assert_eq!(
        f.len(),
        1,
        "{layer:?} fails: {f:#?}\nall: {:#?}",
        d.findings
    );
    f[0]
}

fn all_ok_before(d: &Diagnosis, layer: Layer) {
    for f in &d.findings {
        if f.layer < layer {
            assert_eq!(f.verdict, Grade::Ok, "{f:#?}");
        }
    }
}

fn crashed(mut pod: Value, code: i32, reason: &str, restarts: i32) -> Value {
    pod["status"]["containerStatuses"][0]["restartCount"] = json!(restarts);
    pod["status"]["containerStatuses"][0]["ready"] = json!(false);
    pod["status"]["containerStatuses"][0]["state"] = json!({"waiting": {
        "reason": "CrashLoopBackOff",
        "message": "back-off 5m0s restarting failed container=tensorflow pod=x"}});
    pod["status"]["containerStatuses"][0]["lastState"] = json!({"terminated": {
        "exitCode": code, "reason": reason, "startedAt": ago(40), "finishedAt": ago(30)}});
    pod
}

// ---------------------------------------------------------------------------------------------

#[test]
fn healthy_running_job() {
    let d = diagnose(&healthy());
    assert_eq!(d.worst(), Grade::Ok, "{:#?}", d.findings);
    assert!(d.first_failure().is_none());
    assert_eq!(d.state, "Running");
    assert_eq!(d.pods, "4 Running");
    // Every layer the pure checks judge; the in-pod layer is `diagnose --probe`'s (ops::probe).
    for layer in Layer::ALL.into_iter().filter(|l| *l != Layer::InPod) {
        let f = of(&d, layer);
        assert_eq!(f.len(), 1, "{layer:?}: {f:#?}");
        assert_eq!(f[0].verdict, Grade::Ok);
    }
    assert_eq!(
        of(&d, Layer::Crd)[0].summary,
        "tfjobs.kubeflow.org established, serves v1"
    );
    assert!(of(&d, Layer::Controller)[0].summary.starts_with(
        "training-operator running (kubeflow/training-operator); job Created 100s ago"
    ));
    assert_eq!(of(&d, Layer::Objects)[0].summary, "4/4 pods, 4/4 services");
    assert_eq!(of(&d, Layer::Scheduling)[0].summary, "4/4 pods scheduled");
    let text = render_text(&d, false);
    assert!(
        text.starts_with("TFJob default/tf-dist-train: Running (pods: 4 Running)\n"),
        "{text}"
    );
    assert!(
        text.contains("[ok]   CRD        tfjobs.kubeflow.org"),
        "{text}"
    );
    assert!(render_text(&d, true).contains("✔"));
    assert!(outcome(&healthy(), &d).is_ok());
}

#[test]
fn crd_missing_stops_everything_and_says_how_to_install() {
    let mut s = healthy();
    s.crd = CrdState::Missing;
    s.job = None;
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Crd);
    assert!(f.summary.contains("tfjobs.kubeflow.org is not installed"));
    let next = f.next_step.as_deref().unwrap();
    assert!(next.contains("kubectl apply --server-side -k"));
    assert!(next.contains("standalone?ref=v1.9.4"));
    for layer in [Layer::Controller, Layer::Objects, Layer::Scheduling] {
        let f = of(&d, layer);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].verdict, Grade::Info);
        assert_eq!(f[0].summary, "not reached (CRD missing)");
    }
    let err = outcome(&s, &d).unwrap_err();
    assert!(matches!(err, Error::NotReady { .. }), "{err:?}");
    assert!(err.hint().unwrap().contains("v1.9.4"));
}

#[test]
fn crd_without_v1() {
    let mut s = healthy();
    s.crd = CrdState::Present {
        established: true,
        served_versions: vec!["v1beta2".into()],
    };
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Crd);
    assert_eq!(
        f.summary,
        "CRD tfjobs.kubeflow.org does not serve v1 (serves: v1beta2)"
    );
    assert!(f.next_step.as_deref().unwrap().contains("v1.9.4"));
    assert_eq!(of(&d, Layer::Controller)[0].verdict, Grade::Info);
}

#[test]
fn crd_not_established() {
    let mut s = healthy();
    s.crd = CrdState::Present {
        established: false,
        served_versions: vec!["v1".into()],
    };
    let d = diagnose(&s);
    assert!(
        only_fail(&d, Layer::Crd)
            .summary
            .contains("not Established")
    );
}

#[test]
fn crd_hidden_by_rbac_is_unknown_not_failed() {
    let mut s = healthy();
    s.crd = CrdState::Unknown("forbidden to get customresourcedefinitions".into());
    s.operator = OperatorState::Unknown("forbidden to list deployments".into());
    let d = diagnose(&s);
    assert_eq!(of(&d, Layer::Crd)[0].verdict, Grade::Unknown);
    assert_eq!(
        of(&d, Layer::Crd)[0].evidence,
        vec!["forbidden to get customresourcedefinitions"]
    );
    assert!(d.first_failure().is_none(), "{:#?}", d.findings);
    assert_eq!(d.worst(), Grade::Unknown);
    // The other layers are still judged.
    assert_eq!(of(&d, Layer::Objects)[0].verdict, Grade::Ok);
    assert!(render_text(&d, false).contains("[??]"));
}

#[test]
fn operator_not_found_and_job_never_created() {
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.operator = OperatorState::NotFound;
    s.pods.clear();
    s.services.clear();
    let d = diagnose(&s);
    // Not seeing the operator is a warning; the job without status for 2m is the failure.
    let warning = &of(&d, Layer::Controller)[0];
    assert_eq!(warning.verdict, Grade::Warning);
    assert_eq!(warning.summary, "no training-operator Deployment found");
    assert!(warning.next_step.as_deref().unwrap().contains("v1.9.4"));
    let f = fails(&d, Layer::Controller);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].summary
            .contains("no Created condition 2m after creation: the training-operator is not reconciling this job"),
        "{}",
        f[0].summary
    );
    assert_eq!(
        of(&d, Layer::Objects)[0].summary,
        "not reached (the operator has not reconciled the job)"
    );
    // The same exit code as `wait` for a job nothing reconciles: 3, the cluster is not ready.
    assert!(matches!(outcome(&s, &d), Err(Error::NotReady { .. })));
}

#[test]
fn a_young_job_without_status_and_no_visible_operator_is_given_time() {
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.operator = OperatorState::Unknown("forbidden to list deployments".into());
    s.pods.clear();
    s.services.clear();
    s.now = s
        .job
        .as_ref()
        .unwrap()
        .metadata
        .creation_timestamp
        .as_ref()
        .unwrap()
        .0
        .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(5))
        .unwrap();
    let d = diagnose(&s);
    assert!(fails(&d, Layer::Controller).is_empty(), "{:#?}", d.findings);
    assert!(
        of(&d, Layer::Controller)
            .iter()
            .any(|f| f.summary.contains("may still be picking it up")),
        "{:#?}",
        d.findings
    );
}

#[test]
fn operator_not_found_but_job_reconciled_is_a_warning() {
    let mut s = healthy();
    s.operator = OperatorState::NotFound;
    let d = diagnose(&s);
    assert!(fails(&d, Layer::Controller).is_empty());
    assert!(
        of(&d, Layer::Controller).iter().any(
            |f| f.verdict == Grade::Warning && f.summary.contains("yet the job was reconciled")
        )
    );
}

#[test]
fn next_steps_repeat_the_users_connection_flags_in_order() {
    use crate::cluster::{ConnFlag, ConnectionOptions};
    let mut s = healthy();
    s.operator = OperatorState::NotReady {
        namespace: "kubeflow".into(),
        name: "training-operator".into(),
        ready: 0,
        desired: 1,
    };
    s.hints = ConnectionOptions {
        kubeconfig: Some("/k".into()),
        context: Some("gpu".into()),
        namespace: Some("ml".into()),
        order: vec![ConnFlag::Context, ConnFlag::Namespace, ConnFlag::Kubeconfig],
        ..Default::default()
    };
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Controller);
    assert_eq!(
        f.next_step.as_deref().unwrap(),
        "see why: kubectl describe deployment training-operator --context gpu -n kubeflow --kubeconfig /k; \
         kubectl logs deploy/training-operator --context gpu -n kubeflow --kubeconfig /k"
    );
}

#[test]
fn operator_not_ready() {
    let mut s = healthy();
    s.operator = OperatorState::NotReady {
        namespace: "kubeflow".into(),
        name: "training-operator".into(),
        ready: 0,
        desired: 1,
    };
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Controller);
    assert_eq!(
        f.summary,
        "training-operator kubeflow/training-operator is not ready (0/1 replicas ready)"
    );
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("kubectl logs deploy/training-operator -n kubeflow")
    );
}

#[test]
fn job_without_created_after_30s() {
    let mut v = job_json(&[("Worker", 2)], &[]);
    v["metadata"]["creationTimestamp"] = json!(ago(30));
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.job = Some(to_job(v));
    s.pods.clear();
    s.services.clear();
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Controller);
    assert!(
        f.summary
            .contains("no Created condition 30s after creation")
    );
    assert!(f.summary.contains("not reconciling this job"));
    assert!(
        f.evidence[0].contains("kubeflow/training-operator is running"),
        "{f:#?}"
    );
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("logs deploy/training-operator")
    );

    // Five seconds old: just not yet.
    let mut v = job_json(&[("Worker", 2)], &[]);
    v["metadata"]["creationTimestamp"] = json!(ago(5));
    s.job = Some(to_job(v));
    let d = diagnose(&s);
    assert!(d.first_failure().is_none(), "{:#?}", d.findings);
    assert!(
        of(&d, Layer::Controller)
            .iter()
            .any(|f| f.verdict == Grade::Info && f.summary.contains("5s old"))
    );
}

#[test]
fn managed_by_another_controller() {
    let mut v = job_json(&[("Worker", 2)], &[]);
    v["spec"]["runPolicy"] = json!({"managedBy": "kueue.x-k8s.io/multikueue"});
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.job = Some(to_job(v));
    s.pods.clear();
    s.services.clear();
    let d = diagnose(&s);
    assert!(d.first_failure().is_none(), "{:#?}", d.findings);
    let f = of(&d, Layer::Controller)
        .into_iter()
        .find(|f| f.verdict == Grade::Warning)
        .unwrap();
    assert!(
        f.summary
            .contains("runPolicy.managedBy is \"kueue.x-k8s.io/multikueue\"")
    );
    assert!(f.summary.contains("the training-operator skips this job"));
}

#[test]
fn suspended_job() {
    let mut v = job_json(&[("Worker", 2)], &["Created", "Suspended"]);
    v["spec"]["runPolicy"] = json!({"suspend": true});
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.job = Some(to_job(v));
    s.pods.clear();
    s.services.clear();
    let d = diagnose(&s);
    assert_eq!(d.state, "Suspended");
    let f = of(&d, Layer::Controller)
        .into_iter()
        .find(|f| f.verdict == Grade::Warning)
        .unwrap();
    assert!(f.summary.contains("suspended (runPolicy.suspend: true)"));
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .starts_with("resume it: kubectl tfjob resume ")
    );
    assert_eq!(
        of(&d, Layer::Objects)[0].summary,
        "not reached (job suspended)"
    );
}

#[test]
fn failed_create_pod_event() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created"]);
    s.pods.truncate(1);
    s.job_events.push(event(
        "TFJob",
        JOB,
        "FailedCreatePod",
        "Error creating: admission webhook \"policy.example.com\" denied the request: pods \"tf-dist-train-worker-1\" must set runAsNonRoot",
    ));
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Controller);
    assert!(
        f.summary
            .starts_with("the operator cannot create pods: Error creating: admission webhook")
    );
    assert!(f.summary.contains("must set runAsNonRoot"));
    assert_eq!(f.replicas, vec!["tf-dist-train-worker-1"]);
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("admission webhook")
    );
    let o = only_fail(&d, Layer::Objects);
    assert_eq!(o.summary, "1/2 pods, 2/2 services");
    assert_eq!(o.evidence[0], "missing pods: tf-dist-train-worker-1");
}

#[test]
fn failed_create_event_ignored_once_pods_exist() {
    let mut s = healthy();
    s.job_events.push(event(
        "TFJob",
        JOB,
        "FailedCreatePod",
        "Error creating: something transient",
    ));
    let d = diagnose(&s);
    assert!(d.first_failure().is_none(), "{:#?}", d.findings);
}

#[test]
fn quota_refusal_is_a_scheduling_failure() {
    let mut s = healthy_with(&[("Worker", 3)], &["Created"]);
    s.pods.truncate(1);
    for w in ["1", "2"] {
        s.job_events.push(event(
            "TFJob",
            JOB,
            "FailedCreatePod",
            &format!("Error creating: pods \"tf-dist-train-worker-{w}\" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1"),
        ));
    }
    let d = diagnose(&s);
    assert!(fails(&d, Layer::Controller).is_empty(), "{:#?}", d.findings);
    let f = only_fail(&d, Layer::Scheduling);
    assert!(f.summary.starts_with("pods refused by a ResourceQuota:"));
    assert!(f.summary.contains("exceeded quota: gpu-quota"));
    assert_eq!(
        f.replicas,
        vec!["tf-dist-train-worker-1", "tf-dist-train-worker-2"]
    );
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("kubectl describe resourcequota -n default")
    );
}

#[test]
fn missing_pods_and_services_are_named() {
    let mut s = healthy();
    s.pods.remove(3);
    s.services.remove(2);
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Objects);
    assert_eq!(f.summary, "3/4 pods, 3/4 services");
    assert_eq!(f.evidence[0], "missing pods: tf-dist-train-worker-3");
    assert!(f.evidence[1].starts_with("missing headless services: tf-dist-train-worker-2"));
    assert_eq!(
        f.replicas,
        vec!["tf-dist-train-worker-3", "tf-dist-train-worker-2"]
    );
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("kubectl describe tfjob tf-dist-train -n default")
    );
}

#[test]
fn finished_job_with_pods_cleaned_up_is_info() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created", "Succeeded"]);
    s.pods.clear();
    s.services.clear();
    let d = diagnose(&s);
    assert!(d.first_failure().is_none(), "{:#?}", d.findings);
    assert_eq!(of(&d, Layer::Objects)[0].verdict, Grade::Info);
    assert!(of(&d, Layer::Objects)[0].summary.contains("cleanPodPolicy"));
}

const GPU_MSG: &str = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.";

#[test]
fn gpu_unschedulable_names_message_and_blocked_replicas() {
    let mut s = healthy();
    set_pods(
        &mut s,
        (0..4)
            .map(|i| {
                let p = pod_json("worker", i);
                if i == 3 {
                    p
                } else {
                    pending(p, "Unschedulable", GPU_MSG)
                }
            })
            .collect(),
    );
    let d = diagnose(&s);
    all_ok_before(&d, Layer::Scheduling);
    let f = only_fail(&d, Layer::Scheduling);
    assert_eq!(f.summary, format!("3 worker pods unschedulable: {GPU_MSG}"));
    assert_eq!(
        f.replicas,
        vec![
            "tf-dist-train-worker-0",
            "tf-dist-train-worker-1",
            "tf-dist-train-worker-2"
        ]
    );
    assert_eq!(f.evidence, vec!["each pod requests nvidia.com/gpu: 1"]);
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .starts_with("request fewer GPUs")
    );
    let text = render_text(&d, false);
    assert!(
        text.contains("blocks: tf-dist-train-worker-0, -1, -2"),
        "{text}"
    );
    assert!(
        text.contains("[FAIL] Scheduling 3 worker pods unschedulable"),
        "{text}"
    );
    assert!(
        matches!(outcome(&s, &d), Err(Error::JobFailed(m)) if m.contains("Insufficient nvidia.com/gpu"))
    );
}

#[test]
fn unschedulable_pods_carry_the_placement_models_verdict() {
    let unschedulable = |s: &mut Snapshot| {
        set_pods(
            s,
            vec![pending(pod_json("worker", 0), "Unschedulable", GPU_MSG)],
        )
    };
    let mut s = healthy();
    unschedulable(&mut s);
    s.placement = Some((
        crate::placement::Verdict::Never,
        "3 Worker pods need 3 nvidia.com/gpu at once; the largest node has 1".into(),
    ));
    let f = only_fail(&diagnose(&s), Layer::Scheduling).clone();
    assert_eq!(
        f.evidence[0],
        "the job can never run on this cluster as it is: 3 Worker pods need 3 nvidia.com/gpu at once; the largest node has 1"
    );

    let mut s = healthy();
    unschedulable(&mut s);
    s.placement = Some((
        crate::placement::Verdict::Waits,
        "2 nvidia.com/gpu held by 3 pods on node-a".into(),
    ));
    let f = only_fail(&diagnose(&s), Layer::Scheduling).clone();
    assert_eq!(
        f.evidence[0],
        "the job waits for capacity: 2 nvidia.com/gpu held by 3 pods on node-a"
    );
    assert!(
        f.next_step
            .unwrap()
            .starts_with("wait for those pods to finish")
    );
}

#[test]
fn nothing_scheduled_means_runtime_not_reached() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created"]);
    set_pods(
        &mut s,
        (0..2)
            .map(|i| pending(pod_json("worker", i), "Unschedulable", GPU_MSG))
            .collect(),
    );
    let d = diagnose(&s);
    let r = of(&d, Layer::Runtime);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].verdict, Grade::Info);
    assert_eq!(r[0].summary, "not reached (pods not scheduled)");
    assert!(render_text(&d, true).contains("–\x1b[0m Runtime    not reached"));
    assert!(render_text(&d, false).contains("[info] Runtime    not reached (pods not scheduled)"));
}

#[test]
fn untolerated_taint() {
    let msg = "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}. preemption: not eligible";
    let mut s = healthy_with(&[("Worker", 1), ("PS", 1)], &["Created"]);
    set_pods(
        &mut s,
        vec![
            pending(pod_json("worker", 0), "Unschedulable", msg),
            pod_json("ps", 0),
        ],
    );
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Scheduling);
    assert_eq!(
        f.summary,
        format!("worker pod tf-dist-train-worker-0 unschedulable: {msg}")
    );
    assert_eq!(f.evidence, vec!["nodes carry the taint {dedicated: gpu}"]);
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .starts_with("add a toleration for {dedicated: gpu}")
    );
}

#[test]
fn unbound_pvc() {
    let msg = "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";
    let mut s = healthy_with(&[("Worker", 1)], &["Created"]);
    let mut p = pending(pod_json("worker", 0), "Unschedulable", msg);
    p["spec"]["volumes"] =
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "imagenet-data"}}]);
    set_pods(&mut s, vec![p]);
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Scheduling);
    assert!(
        f.summary
            .contains("unbound immediate PersistentVolumeClaims")
    );
    assert_eq!(f.evidence, vec!["claims used: imagenet-data"]);
    let next = f.next_step.as_deref().unwrap();
    assert!(next.contains("imagenet-data Bound"), "{next}");
    assert!(next.contains("kubectl get pvc -n default"));
}

#[test]
fn each_running_replicas_last_log_line_is_aged_and_a_long_silence_named() {
    let mut s = healthy_with(&[("Worker", 3)], &["Created", "Running"]);
    // The replicas' last lines as read with timestamps; worker-2 has printed nothing.
    let line = |secs: i64| format!("{} step 10\n", ago(secs));
    s.recent_log.insert(format!("{JOB}-worker-0"), line(4));
    s.recent_log
        .insert(format!("{JOB}-worker-1"), line(12 * 60));
    s.recent_log
        .insert(format!("{JOB}-worker-2"), String::new());
    assert_eq!(
        last_log_ages(&s),
        vec![
            "Worker-0 logged 4s ago",
            "Worker-1 silent for 12m",
            "Worker-2 has printed nothing"
        ]
    );
    let d = diagnose(&s);
    let text = render_text(&d, false);
    assert!(
        text.contains("Last log line: Worker-0 logged 4s ago, Worker-1 silent for 12m, Worker-2 has printed nothing"),
        "{text}"
    );
    // Not read (the kubelet could not serve logs): nothing said.
    s.recent_log.clear();
    assert!(!render_text(&diagnose(&s), false).contains("Last log line"));
}

#[test]
fn the_last_line_time_is_the_kubelets_timestamp() {
    use super::collect::last_line_time;
    assert_eq!(
        last_line_time("2026-11-30T20:59:56.123456789Z step 10\n"),
        Some("2026-11-30T20:59:56.123456789Z".parse().unwrap())
    );
    assert_eq!(last_line_time(""), None);
    assert_eq!(last_line_time("not a time\n"), None);
}
