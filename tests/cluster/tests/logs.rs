//! `pods/log` as kube-apiserver proxies the kubelet: options, instances, errors.

mod common;

use common::*;
use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{LogParams, PostParams};
use tfjob_testcluster::{Scenario, TestCluster};

fn running(c: &TestCluster, pod: &str) -> Option<serde_json::Value> {
    c.get("pods", Some("default"), pod)
        .filter(|p| p["status"]["containerStatuses"][0]["state"]["running"].is_object())
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_previous_tail_since_timestamps_limit_and_errors() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("lg", 0, 1, "OnFailure"))
        .await
        .unwrap();
    let pod = "lg-worker-0";
    eventually(10, || running(&c, pod)).await;
    let err = api_err(
        pods.logs(
            pod,
            &LogParams {
                previous: true,
                ..Default::default()
            },
        )
        .await,
    );
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        format!("previous terminated container \"tensorflow\" in pod \"{pod}\" not found")
    );
    let err = api_err(
        pods.logs(
            pod,
            &LogParams {
                container: Some("sidecar".into()),
                ..Default::default()
            },
        )
        .await,
    );
    assert_eq!(
        err.message,
        format!("container sidecar is not valid for pod {pod}")
    );

    // The kubelet writes the container's first lines just after it reports it running: wait
    // for them, so the lines appended next come after them (not a read racing that write).
    until_async("the container's first log lines", || {
        let pods = pods.clone();
        async move {
            let log = pods.logs(pod, &LogParams::default()).await.ok()?;
            log.contains("Using MirroredStrategy").then_some(())
        }
    })
    .await;
    c.append_log("default", pod, "tensorflow", "a\nb\nc");
    let all = pods.logs(pod, &LogParams::default()).await.unwrap();
    assert!(all.ends_with("a\nb\nc\n"), "{all:?}");
    let tail = pods
        .logs(
            pod,
            &LogParams {
                tail_lines: Some(2),
                timestamps: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let stamped: Vec<&str> = tail.lines().collect();
    assert_eq!(stamped.len(), 2);
    for (l, want) in stamped.iter().zip(["b", "c"]) {
        let (ts, text) = l.split_once(' ').unwrap();
        assert_eq!(text, want);
        // RFC3339NanoFixed: 2006-01-02T15:04:05.000000000Z
        assert_eq!(ts.len(), 30, "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.');
    }
    let limited = pods
        .logs(
            pod,
            &LogParams {
                limit_bytes: Some(3),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(limited.len(), 3);
    // A sinceTime in the future leaves nothing.
    let later =
        k8s_openapi::jiff::Timestamp::now() + k8s_openapi::jiff::SignedDuration::from_hours(1);
    let none = pods
        .logs(
            pod,
            &LogParams {
                since_time: Some(later),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(none, "");

    // A scripted crash: the kubelet restarts the container (OnFailure); the crashed
    // instance's lines are then served with previous=true, the new one without.
    let cid = running(&c, pod).unwrap()["status"]["containerStatuses"][0]["containerID"].clone();
    c.exit_container("default", pod, "tensorflow", 1);
    eventually(10, || {
        running(&c, pod).filter(|p| p["status"]["containerStatuses"][0]["containerID"] != cid)
    })
    .await;
    let prev = pods
        .logs(
            pod,
            &LogParams {
                previous: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(prev.ends_with("a\nb\nc\n"), "{prev:?}");
    // The new instance's first lines, once the kubelet has written them.
    let cur = until_async("the restarted container's first log lines", || {
        let pods = pods.clone();
        async move {
            let log = pods.logs(pod, &LogParams::default()).await.ok()?;
            log.contains("(attempt 1)").then_some(log)
        }
    })
    .await;
    assert!(!cur.contains("\na\n"), "{cur:?}");

    // Follow ends when the followed instance exits (a crash again, so the container restarts
    // and the job keeps running: the operator recreates pods of unfinished jobs only).
    let stream = pods
        .log_stream(
            pod,
            &LogParams {
                follow: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    c.append_log("default", pod, "tensorflow", "live 1\nlive 2");
    c.exit_container("default", pod, "tensorflow", 2);
    let lines: Vec<String> = stream.lines().try_collect().await.unwrap();
    assert!(
        lines.ends_with(&["live 1".to_string(), "live 2".to_string()]),
        "{lines:?}"
    );

    // Pod recreation: the operator makes a new pod of the same name, with an empty log.
    let uid = c.get("pods", Some("default"), pod).unwrap()["metadata"]["uid"].clone();
    c.delete("pods", Some("default"), pod);
    eventually(10, || {
        running(&c, pod).filter(|p| p["metadata"]["uid"] != uid)
    })
    .await;
    let fresh = pods.logs(pod, &LogParams::default()).await.unwrap();
    assert!(!fresh.contains("live 1"), "{fresh:?}");
    let err = api_err(
        pods.logs(
            pod,
            &LogParams {
                previous: true,
                ..Default::default()
            },
        )
        .await,
    );
    assert_eq!(err.code, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_container_still_creating_is_waiting_to_start() {
    let c = TestCluster::start(Scenario::default().with_missing_image("example.com/tf:1"));
    let cl = client(&c).await;
    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    let mut job = tfjob("wt", 0, 1, "OnFailure");
    job.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] =
        "example.com/tf:1".into();
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let pod = "wt-worker-0";
    let p = eventually(10, || {
        c.get("pods", Some("default"), pod)
            .filter(|p| p["status"]["containerStatuses"][0]["state"]["waiting"].is_object())
    })
    .await;
    let reason = p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    let err = api_err(pods.logs(pod, &LogParams::default()).await);
    assert_eq!(err.code, 400);
    assert!(
        err.message.starts_with(&format!(
            "container \"tensorflow\" in pod \"{pod}\" is waiting to start: "
        )),
        "{} ({reason})",
        err.message
    );
}
