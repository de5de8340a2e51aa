//! `collect` against a tiny fake API server on localhost: which requests it makes (and how
//! many), how refusals become unknowns and notes, and that Secret values stay out.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::cluster::Kube;
use crate::diagnose::*;

const NS: &str = "default";
const JOB: &str = "mnist";
const FAKE_KEY: &str = "sk-test-DO-NOT-LEAK-0123456789abcdef";

type Log = Arc<Mutex<Vec<String>>>;

/// The answer for one request path (with query): status and body.
fn route(path: &str, forbid_cluster_reads: bool) -> (u16, String) {
    let forbidden = |what: &str| {
        (
            403,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
                   "code": 403, "message": format!("{what} is forbidden")})
            .to_string(),
        )
    };
    let not_found = || {
        (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                   "code": 404, "message": "not found"})
            .to_string(),
        )
    };
    let list = |kind: &str, items: Vec<Value>| {
        (
            200,
            json!({"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items})
                .to_string(),
        )
    };
    let (p, query) = path.split_once('?').unwrap_or((path, ""));
    let pod = |i: i32, crashing: bool| {
        let mut v = json!({
            "metadata": {"name": format!("{JOB}-worker-{i}"), "namespace": NS, "uid": format!("pod-{i}"),
                "labels": {"training.kubeflow.org/job-name": JOB,
                           "training.kubeflow.org/operator-name": "tfjob-controller",
                           "training.kubeflow.org/replica-type": "worker",
                           "training.kubeflow.org/replica-index": i.to_string()}},
            "spec": {"nodeName": "n1", "containers": [{"name": "tensorflow", "image": "tf:1",
                "env": [{"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "api-key"}}},
                        {"name": "TF_CONFIG", "value": "{}"}]}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "tf:1",
                "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}}]}
        });
        if crashing {
            v["status"]["containerStatuses"][0]["restartCount"] = json!(3);
            v["status"]["containerStatuses"][0]["state"] =
                json!({"waiting": {"reason": "CrashLoopBackOff"}});
            v["status"]["containerStatuses"][0]["lastState"] =
                json!({"terminated": {"exitCode": 1, "reason": "Error"}});
        }
        v
    };
    match p {
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org" => {
            if forbid_cluster_reads {
                return forbidden("customresourcedefinitions");
            }
            (
                200,
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "tfjobs.kubeflow.org"},
                   "spec": {"group": "kubeflow.org", "scope": "Namespaced",
                            "names": {"plural": "tfjobs", "kind": "TFJob"},
                            "versions": [{"name": "v1", "served": true, "storage": true}]},
                   "status": {"conditions": [{"type": "Established", "status": "True"}]}})
                .to_string(),
            )
        }
        "/apis/apps/v1/deployments" if forbid_cluster_reads => forbidden("deployments"),
        "/apis/apps/v1/namespaces/kubeflow/deployments/training-operator" => forbidden("deployments"),
        "/apis/apps/v1/deployments" => {
            // Found by the upstream label, server-side: never every Deployment in the cluster.
            assert!(query.contains("labelSelector=control-plane%3Dkubeflow-training-operator"), "{query}");
            list(
            "DeploymentList",
            vec![json!({
                "metadata": {"name": "training-operator", "namespace": "kubeflow"},
                "spec": {"replicas": 1, "selector": {}, "template": {"spec": {"containers": [
                    {"name": "m", "image": "ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489"}]}}},
                "status": {"readyReplicas": 1}
            })],
            )
        }
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist" => (
            200,
            json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
               "metadata": {"name": JOB, "namespace": NS, "uid": "job-uid", "creationTimestamp": "2026-11-30T20:00:00Z"},
               "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
                   {"name": "tensorflow", "image": "tf:1"}]}}}}},
               "status": {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]}})
            .to_string(),
        ),
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs/absent" => not_found(),
        "/api/v1/namespaces/default/pods" => {
            assert!(query.contains("labelSelector=training.kubeflow.org%2Fjob-name%3Dmnist"), "{query}");
            list("PodList", vec![pod(0, true), pod(1, false)])
        }
        "/api/v1/namespaces/default/services" => list(
            "ServiceList",
            (0..2)
                .map(|i| json!({"metadata": {"name": format!("{JOB}-worker-{i}"), "namespace": NS}}))
                .collect(),
        ),
        "/api/v1/namespaces/default/events" => {
            let ev = |obj: &str, kind: &str, uid: &str, reason: &str| {
                json!({"metadata": {"name": format!("{obj}.{reason}"), "namespace": NS},
                   "involvedObject": {"kind": kind, "name": obj, "uid": uid},
                   "reason": reason, "message": format!("{reason} happened"), "type": "Warning"})
            };
            if query.contains("involvedObject.kind%3DPod") || query.contains("involvedObject.kind=Pod") {
                list(
                    "EventList",
                    vec![
                        ev("mnist-worker-0", "Pod", "pod-0", "BackOff"),
                        // A predecessor pod of the same name, and another job's pod.
                        ev("mnist-worker-0", "Pod", "old-pod", "FailedScheduling"),
                        ev("other-worker-0", "Pod", "x", "FailedScheduling"),
                    ],
                )
            } else {
                list(
                    "EventList",
                    vec![
                        ev(JOB, "TFJob", "job-uid", "SuccessfulCreatePod"),
                        ev(JOB, "TFJob", "older-job-uid", "FailedCreatePod"),
                    ],
                )
            }
        }
        "/api/v1/namespaces/default/secrets/taotoken-secret" => (
            200,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "taotoken-secret",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": FAKE_KEY}},
                "data": {"api-key": "c2stdGVzdC1ETy1OT1QtTEVBSy0wMTIzNDU2Nzg5YWJjZGVm"}})
            .to_string(),
        ),
        "/api/v1/namespaces/default/pods/mnist-worker-0/log" => {
            assert!(query.contains("previous=true"), "{query}");
            assert!(query.contains("tailLines=7"), "{query}");
            assert!(query.contains("container=tensorflow"), "{query}");
            (
                200,
                format!("loading\nAuthorization failed for key {FAKE_KEY}\nValueError: boom\n"),
            )
        }
        "/api/v1/namespaces/default/pods/mnist-worker-1/log" => (200, "step 1\n".into()),
        other => panic!("unexpected request {other}?{query}"),
    }
}

/// Serves [`route`] on a random port, recording each request line.
async fn fake_api(forbid: bool) -> (Kube, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let seen = log.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let mut chunk = [0u8; 4096];
                    let Ok(n) = sock.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                        buf.drain(..end + 4);
                        let line = head.lines().next().unwrap_or_default().to_string();
                        let path = line.split(' ').nth(1).unwrap_or_default().to_string();
                        seen.lock().unwrap().push(path.clone());
                        let (code, body) = route(&path, forbid);
                        let resp = format!(
                            "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if sock.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let kube = Kube {
        client,
        namespace: NS.into(),
        namespace_from_flag: true,
        server: format!("http://{addr}"),
        request_timeout: None,
        hints: Default::default(),
        retry_deadline: crate::cluster::DEFAULT_RETRY_DEADLINE,
        deadline: Default::default(),
    };
    (kube, log)
}

#[tokio::test]
async fn collect_reads_a_fixed_set_and_keeps_secret_values_out() {
    let (kube, log) = fake_api(false).await;
    let s = collect(&kube, NS, JOB, 7).await.unwrap();
    assert_eq!(
        s.crd,
        CrdState::Present {
            established: true,
            served_versions: vec!["v1".into()]
        }
    );
    assert_eq!(
        s.operator,
        OperatorState::Running {
            namespace: "kubeflow".into(),
            name: "training-operator".into()
        }
    );
    assert!(s.job.is_some());
    assert_eq!(s.pods.len(), 2);
    assert_eq!(s.services.len(), 2);
    // Only this job's own events, and only the current pods' events.
    let reasons: Vec<_> = s
        .job_events
        .iter()
        .filter_map(|e| e.reason.clone())
        .collect();
    assert_eq!(reasons, vec!["SuccessfulCreatePod"]);
    let reasons: Vec<_> = s
        .pod_events
        .iter()
        .filter_map(|e| e.reason.clone())
        .collect();
    assert_eq!(reasons, vec!["BackOff"]);
    // CRD, deployments, job, pods, services, the job's events, each pod's events (by name and
    // uid, as `kubectl describe pod` asks), 1 secret, 2 logs.
    let requests = log.lock().unwrap().clone();
    assert_eq!(requests.len(), 11, "{requests:#?}");
    for pod in [
        "mnist-worker-0%2CinvolvedObject.uid%3Dpod-0",
        "mnist-worker-1%2CinvolvedObject.uid%3Dpod-1",
    ] {
        assert!(
            requests.iter().any(|r| r.contains(&format!(
                "involvedObject.kind%3DPod%2CinvolvedObject.name%3D{pod}&resourceVersion=0"
            ))),
            "{requests:#?}"
        );
    }
    // The Secret is kept by key name only, and its value is scrubbed from the log.
    let secret = s.secrets["taotoken-secret"].as_ref().unwrap();
    assert_eq!(secret.data.as_ref().unwrap()["api-key"].0, b"*");
    assert!(secret.metadata.annotations.is_none());
    let log0 = &s.logs["mnist-worker-0"];
    assert!(log0.contains("ValueError: boom"));
    assert!(!log0.contains(FAKE_KEY), "{log0}");
    assert!(!format!("{s:?}").contains("DO-NOT-LEAK"));

    let d = diagnose(&s);
    let crash = d.first_failure().unwrap();
    assert_eq!(crash.layer, Layer::Runtime);
    assert!(
        crash
            .summary
            .starts_with("CrashLoopBackOff: container tensorflow of mnist-worker-0")
    );
}

#[tokio::test]
async fn collect_turns_rbac_refusals_into_unknowns() {
    let (kube, _) = fake_api(true).await;
    let s = collect(&kube, NS, JOB, 7).await.unwrap();
    assert!(
        matches!(&s.crd, CrdState::Unknown(why) if why.contains("forbidden to get customresourcedefinitions"))
    );
    assert!(
        matches!(&s.operator, OperatorState::Unknown(why) if why.contains("kubectl auth can-i list deployments.apps --all-namespaces"))
    );
    let d = diagnose(&s);
    assert_eq!(d.findings[0].verdict, Grade::Unknown);
}

#[tokio::test]
async fn collect_missing_job() {
    let (kube, log) = fake_api(false).await;
    let s = collect(&kube, NS, "absent", 7).await.unwrap();
    assert!(s.job.is_none());
    // No job: nothing else to read.
    assert_eq!(log.lock().unwrap().len(), 3);
    let d = diagnose(&s);
    assert!(matches!(
        collect::outcome(&s, &d),
        Err(crate::error::Error::NotFound(_))
    ));
}
