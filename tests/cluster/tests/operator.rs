//! The simulated training-operator, scheduler and kubelet, observed through kube-rs.

mod common;

use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{ListParams, LogParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use tfjob_testcluster::{ContainerBehaviour, ContainerMatch, NodeSpec, Scenario, TestCluster};

fn pod_env(pod: &Value, name: &str) -> Option<String> {
    pod["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .map(String::from)
}

#[tokio::test(flavor = "multi_thread")]
async fn job_runs_to_success_with_exact_names_labels_and_tf_config() {
    let c = TestCluster::start(Scenario::default().with_succeed_after_ms(400));
    let cl = client(&c).await;
    tfjobs(&cl, "default")
        .create(
            &PostParams::default(),
            &tfjob("tf-dist-train", 1, 3, "OnFailure"),
        )
        .await
        .unwrap();

    let job = eventually(10, || {
        c.get("tfjobs", Some("default"), "tf-dist-train")
            .filter(|j| condition_types(j).contains(&"Running".into()))
    })
    .await;
    assert_eq!(condition_types(&job), ["Created", "Running"]);
    assert_eq!(
        job["status"]["conditions"][0]["message"],
        "TFJob tf-dist-train is created."
    );
    assert_eq!(
        job["status"]["conditions"][1]["message"],
        "TFJob default/tf-dist-train is running."
    );
    assert_eq!(job["status"]["conditions"][1]["reason"], "TFJobRunning");
    assert!(job["status"]["startTime"].is_string());
    assert!(
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
            .get("ports")
            .is_none(),
        "defaults are never written back"
    );

    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    let sel = "training.kubeflow.org/job-name=tf-dist-train,training.kubeflow.org/operator-name=tfjob-controller";
    let mut names: Vec<String> = pods
        .list(&ListParams::default().labels(sel))
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| p.name_any())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "tf-dist-train-ps-0",
            "tf-dist-train-worker-0",
            "tf-dist-train-worker-1",
            "tf-dist-train-worker-2"
        ]
    );

    let w1 = c
        .get("pods", Some("default"), "tf-dist-train-worker-1")
        .unwrap();
    let labels = &w1["metadata"]["labels"];
    assert_eq!(labels["training.kubeflow.org/replica-type"], "worker");
    assert_eq!(labels["training.kubeflow.org/replica-index"], "1");
    assert!(labels.get("training.kubeflow.org/job-role").is_none());
    let w0 = c
        .get("pods", Some("default"), "tf-dist-train-worker-0")
        .unwrap();
    assert_eq!(
        w0["metadata"]["labels"]["training.kubeflow.org/job-role"],
        "master"
    );
    assert_eq!(w0["spec"]["restartPolicy"], "OnFailure");
    assert_eq!(w0["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        w0["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
        true
    );
    assert_eq!(
        w0["spec"]["containers"][0]["ports"],
        json!([{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}])
    );
    assert_eq!(
        pod_env(&w0, "TF_CONFIG").unwrap(),
        r#"{"cluster":{"ps":["tf-dist-train-ps-0.default.svc:2222"],"worker":["tf-dist-train-worker-0.default.svc:2222","tf-dist-train-worker-1.default.svc:2222","tf-dist-train-worker-2.default.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}"#
    );
    let ps = c
        .get("pods", Some("default"), "tf-dist-train-ps-0")
        .unwrap();
    assert!(
        pod_env(&ps, "TF_CONFIG")
            .unwrap()
            .contains(r#""task":{"type":"ps","index":0}"#)
    );

    let svcs: Api<Service> = Api::default_namespaced(cl.clone());
    let svc = svcs.get("tf-dist-train-worker-2").await.unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.ports.unwrap()[0].port, 2222);
    let svc_labels = svc.metadata.labels.unwrap();
    assert!(!svc_labels.contains_key("training.kubeflow.org/job-role"));

    let job = eventually(10, || {
        c.get("tfjobs", Some("default"), "tf-dist-train")
            .filter(|j| condition_types(j).contains(&"Succeeded".into()))
    })
    .await;
    let conds: Vec<(String, String)> = job["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().into(),
                c["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        conds,
        [
            ("Created".into(), "True".into()),
            ("Running".into(), "False".into()),
            ("Succeeded".into(), "True".into())
        ]
    );
    assert_eq!(
        job["status"]["conditions"][2]["message"],
        "TFJob default/tf-dist-train successfully completed."
    );
    assert!(job["status"]["completionTime"].is_string());
    // The operator records its events after the status write waited for above.
    let ev = events_with(
        &c,
        "tf-dist-train",
        &[
            "SuccessfulCreatePod",
            "SuccessfulCreateService",
            "TFJobSucceeded",
        ],
    )
    .await;
    for (t, r, m) in [
        (
            "Normal",
            "SuccessfulCreatePod",
            "Created pod: tf-dist-train-worker-0",
        ),
        (
            "Normal",
            "SuccessfulCreateService",
            "Created service: tf-dist-train-ps-0",
        ),
        (
            "Normal",
            "TFJobSucceeded",
            "TFJob default/tf-dist-train successfully completed.",
        ),
    ] {
        assert!(
            ev.iter().any(|e| e.trm() == (t, r, m)),
            "missing {r}: {ev:?}"
        );
    }
    let pod_ev = events_with(&c, "tf-dist-train-worker-0", &["Scheduled"]).await;
    assert!(pod_ev.iter().any(|e| {
        e.reason == "Scheduled"
            && e.message
                .starts_with("Successfully assigned default/tf-dist-train-worker-0 to node-")
    }));
    // cleanPodPolicy defaults to None: pods stay.
    assert_eq!(c.list("pods", Some("default")).len(), 4);
    assert!(
        c.condition_log()
            .iter()
            .any(|(j, t, _)| j == "tf-dist-train" && t == "Running")
    );

    // Deleting the job garbage-collects its pods and services.
    tfjobs(&cl, "default")
        .delete("tf-dist-train", &Default::default())
        .await
        .unwrap();
    assert!(c.list("pods", Some("default")).is_empty());
    assert!(c.list("services", Some("default")).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn gpu_request_that_fits_no_node_is_unschedulable() {
    let nodes = (1..=3)
        .map(|i| NodeSpec::new(&format!("cpu-{i}"), "8", "32Gi", 0))
        .collect();
    let c = TestCluster::start(Scenario::default().with_nodes(nodes));
    let cl = client(&c).await;
    let mut job = tfjob("gpu", 0, 2, "Never");
    job.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] =
        json!({"limits": {"nvidia.com/gpu": 1}});
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let pod = eventually(5, || {
        c.get("pods", Some("default"), "gpu-worker-0")
            .filter(|p| p["status"]["conditions"].is_array())
    })
    .await;
    let cond = &pod["status"]["conditions"][0];
    assert_eq!(
        (
            cond["type"].as_str(),
            cond["status"].as_str(),
            cond["reason"].as_str()
        ),
        (Some("PodScheduled"), Some("False"), Some("Unschedulable"))
    );
    let msg = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.";
    assert_eq!(cond["message"], msg);
    assert_eq!(pod["status"]["phase"], "Pending");
    // The scheduler records the event after the condition waited for above.
    let ev = events_with(&c, "gpu-worker-0", &["FailedScheduling"]).await;
    assert!(
        ev.iter()
            .any(|e| e.trm() == ("Warning", "FailedScheduling", msg)),
        "{ev:?}"
    );
    // Adding a GPU node lets the scheduler retry.
    c.insert(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"}, "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4"}}}));
    eventually(5, || {
        c.get("pods", Some("default"), "gpu-worker-1")
            .filter(|p| p["spec"]["nodeName"] == "gpu-1")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_image_and_missing_secret_key() {
    let sc = Scenario::default().with_missing_image("example.com/nope:1").with_object(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "taotoken-secret", "namespace": "default"}, "data": {"other": "eA=="}
    }));
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    let mut bad_image = tfjob("img", 0, 1, "Never");
    bad_image.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] =
        json!("example.com/nope:1");
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &bad_image)
        .await
        .unwrap();
    let mut bad_key = tfjob("key", 0, 1, "Never");
    bad_key.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "api-key"}}}]);
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &bad_key)
        .await
        .unwrap();

    let waiting = |pod: &str, reason: &'static str| {
        let c = &c;
        let pod = pod.to_string();
        move || {
            c.get("pods", Some("default"), &pod).and_then(|p| {
                (p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == reason)
                    .then_some(p)
            })
        }
    };
    let p = eventually(5, waiting("img-worker-0", "ImagePullBackOff")).await;
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
            .as_str()
            .unwrap()
            .split(':')
            .next(),
        Some("Back-off pulling image \"example.com/nope")
    );
    // The kubelet records the event after the container status waited for above.
    let ev = events_with(&c, "img-worker-0", &["Failed"]).await;
    assert!(
        ev.iter().any(|e| e.kind == "Warning"
            && e.reason == "Failed"
            && e.message
                .starts_with("Failed to pull image \"example.com/nope:1\"")),
        "{ev:?}"
    );
    let p = eventually(5, waiting("key-worker-0", "CreateContainerConfigError")).await;
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["waiting"]["message"],
        "couldn't find key api-key in Secret default/taotoken-secret"
    );
    // RecordAbnormalPods mirrors it onto the TFJob.
    eventually(5, || {
        events(&c, "key").into_iter().find(|e| e.trm() == ("Warning", "CreateContainerConfigError", "Error pod key-worker-0 container tensorflow waiting message: couldn't find key api-key in Secret default/taotoken-secret"))
    })
    .await;
    // Fixing the secret lets the kubelet start the container.
    c.insert(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "taotoken-secret", "namespace": "default"}, "data": {"api-key": "eA=="}}));
    eventually(5, || {
        c.get("pods", Some("default"), "key-worker-0")
            .filter(|p| p["status"]["phase"] == "Running")
    })
    .await;

    // The kubelet keeps retrying the pull (ErrImagePull again, BackOff count grows) ...
    eventually(5, || {
        events(&c, "img-worker-0")
            .into_iter()
            .find(|e| e.reason == "BackOff" && e.count >= 2)
    })
    .await;
    // ... and starts the container once the image exists.
    c.set_missing_images(vec![]);
    eventually(10, || {
        c.get("pods", Some("default"), "img-worker-0")
            .filter(|p| p["status"]["phase"] == "Running")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_loop_and_logs() {
    let sc = Scenario::default().with_behaviour(ContainerBehaviour {
        matches: ContainerMatch {
            replica_type: Some("worker".into()),
            index: Some(1),
            ..Default::default()
        },
        exit_code: Some(1),
        run_ms: Some(30),
        crash_loop: true,
        log: Some("step 1\nTraceback (most recent call last):\nValueError: bad".into()),
        ..Default::default()
    });
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("crash", 0, 2, "OnFailure"))
        .await
        .unwrap();
    let p = eventually(10, || {
        c.get("pods", Some("default"), "crash-worker-1")
            .filter(|p| {
                p["status"]["containerStatuses"][0]["restartCount"]
                    .as_i64()
                    .unwrap_or(0)
                    >= 2
            })
    })
    .await;
    let cs = &p["status"]["containerStatuses"][0];
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(cs["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(p["status"]["phase"], "Running");
    let pod = eventually(10, || {
        c.get("pods", Some("default"), "crash-worker-1")
            .filter(|p| {
                p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
                    == "CrashLoopBackOff"
            })
    })
    .await;
    assert!(
        pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
            .as_str()
            .unwrap()
            .starts_with("back-off ")
    );
    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    let log = pods
        .logs(
            "crash-worker-1",
            &LogParams {
                container: Some("tensorflow".into()),
                tail_lines: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(log, "ValueError: bad\n");
    // The kubelet records BackOff after the CrashLoopBackOff status waited for above.
    let ev = events_with(&c, "crash-worker-1", &["BackOff"]).await;
    assert!(
        ev.iter()
            .any(|e| e.kind == "Warning" && e.reason == "BackOff"),
        "{ev:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn never_restart_failure_fails_the_job() {
    let sc = Scenario::default().with_behaviour(ContainerBehaviour {
        matches: ContainerMatch {
            pod_name: Some("fail-worker-*".into()),
            ..Default::default()
        },
        exit_code: Some(1),
        run_ms: Some(50),
        ..Default::default()
    });
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("fail", 0, 1, "Never"))
        .await
        .unwrap();
    let job = eventually(10, || {
        c.get("tfjobs", Some("default"), "fail")
            .filter(|j| condition_types(j).contains(&"Failed".into()))
    })
    .await;
    let last = job["status"]["conditions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["type"], "Failed");
    assert_eq!(last["reason"], "TFJobFailed");
    assert_eq!(
        last["message"],
        "TFJob default/fail has failed because 1 Worker replica(s) failed."
    );
    assert_eq!(
        job["status"]["replicaStatuses"]["Worker"],
        json!({"failed": 1})
    );
    // The operator records its events after the Failed status waited for above.
    let ev = events_with(&c, "fail", &["ExitedWithCode"]).await;
    assert!(
        ev.iter().any(|e| e.rm()
            == (
                "ExitedWithCode",
                "Pod: default.fail-worker-0 exited with code 1"
            )),
        "{ev:?}"
    );
    // Single worker → not distributed → no TF_CONFIG.
    let pod = c.get("pods", Some("default"), "fail-worker-0").unwrap();
    assert!(pod_env(&pod, "TF_CONFIG").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_code_policy_restarts_on_retryable_codes() {
    let sc = Scenario::default().with_behaviour(ContainerBehaviour {
        matches: ContainerMatch {
            replica_type: Some("Worker".into()),
            ..Default::default()
        },
        exit_code: Some(137),
        run_ms: Some(50),
        ..Default::default()
    });
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("ec", 0, 1, "ExitCode"))
        .await
        .unwrap();
    eventually(10, || {
        events(&c, "ec").into_iter().find(|e| {
            e.trm()
                == (
                    "Warning",
                    "TFJobRestarting",
                    "job ec is restarting because Worker replica(s) failed.",
                )
        })
    })
    .await;
    let job = eventually(10, || {
        c.get("tfjobs", Some("default"), "ec")
            .filter(|j| condition_types(j).contains(&"Restarting".into()))
    })
    .await;
    assert!(!condition_types(&job).contains(&"Failed".to_string()));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_thousand_workers() {
    let nodes = (1..=4)
        .map(|i| NodeSpec {
            pods: 1000,
            ..NodeSpec::new(&format!("big-{i}"), "1000", "4Ti", 0)
        })
        .collect();
    let c = TestCluster::start(Scenario::default().with_nodes(nodes));
    let cl = client(&c).await;
    let t = Instant::now();
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("big", 1, 2000, "OnFailure"))
        .await
        .unwrap();
    eventually(120, || {
        (c.list("pods", Some("default")).len() == 2001
            && c.list("services", Some("default")).len() == 2001)
            .then_some(())
    })
    .await;
    let created = t.elapsed();
    eventually(120, || {
        c.get("tfjobs", Some("default"), "big")
            .filter(|j| j["status"]["replicaStatuses"]["Worker"]["active"] == 2000)
    })
    .await;
    let running = t.elapsed();
    eprintln!(
        "2000-worker TFJob: pods+services created in {created:?}, all workers active in {running:?}"
    );
    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    let t2 = Instant::now();
    let n = pods
        .list(&ListParams::default().labels("training.kubeflow.org/replica-type=worker"))
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(n, 2000);
    eprintln!("listing 2000 pods took {:?}", t2.elapsed());
    let _ = Duration::ZERO;
}

#[tokio::test(flavor = "multi_thread")]
async fn clean_pod_policy_all_after_success() {
    // No TTL here: with one, the job may be gone before a slow test thread reads its final
    // replica statuses (a 1 s TTL raced this check on a loaded machine). TTL is tested below.
    let c = TestCluster::start(Scenario::default().with_succeed_after_ms(100));
    let cl = client(&c).await;
    let mut job = tfjob("clean", 1, 1, "Never");
    job.data["spec"]["runPolicy"] = json!({"cleanPodPolicy": "All"});
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let done = eventually(10, || {
        c.get("tfjobs", Some("default"), "clean")
            .filter(|j| condition_types(j).contains(&"Succeeded".into()))
    })
    .await;
    assert!(done["status"]["completionTime"].is_string());
    eventually(5, || {
        c.list("pods", Some("default")).is_empty().then_some(())
    })
    .await;
    // The PS never finishes on its own; Succeeded moves its active count into succeeded.
    let j = eventually(5, || {
        c.get("tfjobs", Some("default"), "clean")
            .filter(|j| j["status"]["replicaStatuses"]["PS"]["succeeded"] == 1)
    })
    .await;
    assert!(
        j["status"]["replicaStatuses"]["PS"].get("active").is_none(),
        "{}",
        j["status"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ttl_after_finished_deletes_the_job() {
    let c = TestCluster::start(Scenario::default().with_succeed_after_ms(100));
    let cl = client(&c).await;
    let mut job = tfjob("ttl", 1, 1, "Never");
    job.data["spec"]["runPolicy"] = json!({"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 1});
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    eventually(10, || {
        c.get("tfjobs", Some("default"), "ttl")
            .is_none()
            .then_some(())
    })
    .await;
    // The operator records the event after the deletion waited for above.
    let ev = events_with(&c, "ttl", &["SuccessfulDeleteJob"]).await;
    assert!(
        ev.iter()
            .any(|e| e.rm() == ("SuccessfulDeleteJob", "Deleted job: ttl")),
        "{ev:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn suspend_and_resume() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    jobs.create(&PostParams::default(), &tfjob("sus", 0, 2, "Never"))
        .await
        .unwrap();
    eventually(5, || {
        c.get("tfjobs", Some("default"), "sus")
            .filter(|j| condition_types(j).contains(&"Running".into()))
    })
    .await;
    let pp = kube::api::PatchParams::default();
    jobs.patch(
        "sus",
        &pp,
        &kube::api::Patch::Merge(json!({"spec": {"runPolicy": {"suspend": true}}})),
    )
    .await
    .unwrap();
    let j = eventually(5, || {
        c.get("tfjobs", Some("default"), "sus")
            .filter(|j| condition_types(j).last().map(String::as_str) == Some("Suspended"))
    })
    .await;
    let running = j["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Running")
        .unwrap()
        .clone();
    assert_eq!(
        (running["status"].as_str(), running["reason"].as_str()),
        (Some("False"), Some("TFJobSuspended"))
    );
    eventually(5, || {
        c.list("pods", Some("default")).is_empty().then_some(())
    })
    .await;
    jobs.patch(
        "sus",
        &pp,
        &kube::api::Patch::Merge(json!({"spec": {"runPolicy": {"suspend": false}}})),
    )
    .await
    .unwrap();
    let j = eventually(5, || {
        c.get("tfjobs", Some("default"), "sus")
            .filter(|j| condition_types(j).last().map(String::as_str) == Some("Running"))
    })
    .await;
    let s = j["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Suspended")
        .unwrap()
        .clone();
    assert_eq!(
        (s["status"].as_str(), s["reason"].as_str()),
        (Some("False"), Some("TFJobResumed"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn chief_drives_success_and_oom_is_reported() {
    let sc = Scenario::default()
        .with_succeed_after_ms(300)
        .with_behaviour(ContainerBehaviour {
            matches: ContainerMatch {
                replica_type: Some("Worker".into()),
                ..Default::default()
            },
            oom_killed: true,
            run_ms: Some(50),
            ..Default::default()
        });
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    let mut job = tfjob("chief", 0, 1, "OnFailure");
    job.data["spec"]["tfReplicaSpecs"]["Chief"] =
        replica(1, "Never", "tensorflow/tensorflow:2.13.0");
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let w = eventually(5, || {
        c.get("pods", Some("default"), "chief-worker-0")
            .filter(|p| {
                p["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"]
                    == "OOMKilled"
            })
    })
    .await;
    assert_eq!(
        w["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"],
        137
    );
    let j = eventually(10, || {
        c.get("tfjobs", Some("default"), "chief")
            .filter(|j| condition_types(j).contains(&"Succeeded".into()))
    })
    .await;
    assert_eq!(
        condition_types(&j).last().map(String::as_str),
        Some("Succeeded")
    );
    let p = c.get("pods", Some("default"), "chief-chief-0").unwrap();
    assert_eq!(
        p["metadata"]["labels"]["training.kubeflow.org/job-role"],
        "master"
    );
    let w0 = c.get("pods", Some("default"), "chief-worker-0").unwrap();
    assert!(
        w0["metadata"]["labels"]
            .get("training.kubeflow.org/job-role")
            .is_none(),
        "with a Chief, worker-0 is not the master role"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn untolerated_taint_message() {
    let mut n = NodeSpec::new("tainted", "16", "64Gi", 4);
    n.taints = vec![tfjob_testcluster::Taint {
        key: "dedicated".into(),
        value: "infra".into(),
        effect: "NoSchedule".into(),
    }];
    let c = TestCluster::start(
        Scenario::default().with_nodes(vec![n, NodeSpec::new("small", "1", "1Gi", 0)]),
    );
    let cl = client(&c).await;
    let mut job = tfjob("t", 0, 1, "Never");
    job.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] =
        json!({"limits": {"cpu": "2"}});
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let p = eventually(5, || {
        c.get("pods", Some("default"), "t-worker-0")
            .filter(|p| p["status"]["conditions"][0]["reason"] == "Unschedulable")
    })
    .await;
    assert_eq!(
        p["status"]["conditions"][0]["message"],
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: infra}. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    );
    // RecordAbnormalPods: no container statuses, latest condition not True.
    eventually(5, || {
        events(&c, "t").into_iter().find(|e| {
            e.kind == "Warning"
                && e.reason == "Unschedulable"
                && e.message
                    .starts_with("Error pod t-worker-0 condition message: 0/2 nodes are available")
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn inserted_pod_states_drive_the_operator() {
    // Tests can craft pod states: an inserted Failed worker makes a Never job fail.
    let c = TestCluster::start(
        Scenario::default().with_operator(tfjob_testcluster::OperatorMode::Running),
    );
    let cl = client(&c).await;
    let mut job = tfjob("crafted", 0, 1, "Never");
    job.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] =
        json!("manual");
    let created = tfjobs(&cl, "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let mut pod = eventually(5, || c.get("pods", Some("default"), "crafted-worker-0")).await;
    pod["status"] = json!({"phase": "Failed", "containerStatuses": [{"name": "tensorflow", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
        "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]});
    c.insert(pod);
    let j = eventually(5, || {
        c.get("tfjobs", Some("default"), "crafted")
            .filter(|j| condition_types(j).contains(&"Failed".into()))
    })
    .await;
    assert_eq!(j["metadata"]["uid"], json!(created.metadata.uid));
    assert_eq!(
        c.get("pods", Some("default"), "crafted-worker-0").unwrap()["status"]["phase"],
        "Failed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn follow_logs_until_the_container_exits() {
    use futures::AsyncBufReadExt;
    use futures::TryStreamExt;
    let c = TestCluster::start(Scenario::default().with_succeed_after_ms(400));
    let cl = client(&c).await;
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("follow", 0, 1, "Never"))
        .await
        .unwrap();
    eventually(5, || {
        c.get("pods", Some("default"), "follow-worker-0")
            .filter(|p| p["status"]["phase"] == "Running")
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    let t = Instant::now();
    let stream = pods
        .log_stream(
            "follow-worker-0",
            &LogParams {
                follow: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    c.set_log(
        "default",
        "follow-worker-0",
        "tensorflow",
        "line 1\nline 2\n",
    );
    let lines: Vec<String> =
        tokio::time::timeout(Duration::from_secs(60), stream.lines().try_collect())
            .await
            .unwrap()
            .unwrap();
    assert!(
        lines.contains(&"line 2".to_string()) || !lines.is_empty(),
        "{lines:?}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "the stream ends when the container exits"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn backoff_limit_fails_a_crash_looping_job() {
    let sc = Scenario::default().with_behaviour(ContainerBehaviour {
        matches: ContainerMatch {
            replica_type: Some("worker".into()),
            ..Default::default()
        },
        exit_code: Some(2),
        run_ms: Some(20),
        crash_loop: true,
        ..Default::default()
    });
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    let mut job = tfjob("bo", 0, 1, "OnFailure");
    job.data["spec"]["runPolicy"] = json!({"backoffLimit": 2, "cleanPodPolicy": "Running"});
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let j = eventually(10, || {
        c.get("tfjobs", Some("default"), "bo")
            .filter(|j| condition_types(j).contains(&"Failed".into()))
    })
    .await;
    let last = j["status"]["conditions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["message"],
        "Job bo has failed because it has reached the specified backoff limit"
    );
    // v1.9.4: Failed is set first and cleanPodPolicy (Running) decides what is deleted.
    eventually(5, || {
        c.get("pods", Some("default"), "bo-worker-0")
            .is_none()
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_and_unbound_pvcs_block_scheduling() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    let pod = |name: &str, claim: &str| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
            "containers": [{"name": "c", "image": "busybox:1"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}))
        .unwrap()
    };
    c.insert(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pending-claim", "namespace": "default"}, "spec": {}, "status": {"phase": "Pending"}}));
    pods.create(&PostParams::default(), &pod("p1", "nope"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("p2", "pending-claim"))
        .await
        .unwrap();
    let msg = |n: &'static str| {
        let c = &c;
        move || {
            c.get("pods", Some("default"), n).and_then(|p| {
                p["status"]["conditions"][0]["message"]
                    .as_str()
                    .map(String::from)
            })
        }
    };
    assert_eq!(
        eventually(5, msg("p1")).await,
        "0/3 nodes are available: persistentvolumeclaim \"nope\" not found. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    assert_eq!(
        eventually(5, msg("p2")).await,
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    // Binding the claim lets the scheduler retry.
    c.insert(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pending-claim", "namespace": "default"}, "spec": {}, "status": {"phase": "Bound"}}));
    eventually(5, || {
        c.get("pods", Some("default"), "p2")
            .filter(|p| p["spec"]["nodeName"].is_string())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_code_policy_fails_on_permanent_codes_and_managed_by_is_skipped() {
    let sc = Scenario::default().with_behaviour(ContainerBehaviour {
        matches: ContainerMatch {
            pod_name: Some("perm-*".into()),
            ..Default::default()
        },
        exit_code: Some(1),
        run_ms: Some(30),
        ..Default::default()
    });
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    jobs.create(&PostParams::default(), &tfjob("perm", 0, 2, "ExitCode"))
        .await
        .unwrap();
    let j = eventually(10, || {
        c.get("tfjobs", Some("default"), "perm")
            .filter(|j| condition_types(j).contains(&"Failed".into()))
    })
    .await;
    let last = j["status"]["conditions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["message"],
        "job \"perm\" is failing because \"Worker\" replica(s) failed."
    );
    // The operator records its events after the Failed status waited for above.
    let ev = events_with(&c, "perm", &["TFJobFailed"]).await;
    assert!(
        ev.iter()
            .any(|e| e.kind == "Warning" && e.reason == "TFJobFailed"),
        "{ev:?}"
    );

    let mut other = tfjob("kueue", 0, 1, "Never");
    other.data["spec"]["runPolicy"] = json!({"managedBy": "kueue.x-k8s.io/multikueue"});
    jobs.create(&PostParams::default(), &other).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        c.get("tfjobs", Some("default"), "kueue")
            .unwrap()
            .get("status")
            .is_none(),
        "managed by another controller"
    );
    assert!(c.get("pods", Some("default"), "kueue-worker-0").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_times_exits_that_many_starts_then_runs() {
    let sc = Scenario::default().with_behaviour(ContainerBehaviour {
        matches: ContainerMatch {
            pod_name: Some("flaky-worker-*".into()),
            ..Default::default()
        },
        exit_code: Some(1),
        run_ms: Some(20),
        crash_times: Some(2),
        ..Default::default()
    });
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("flaky", 0, 1, "OnFailure"))
        .await
        .unwrap();
    // Two restarts, then the third instance keeps running (the kubelet restarts in place).
    let pod = eventually(20, || {
        c.get("pods", Some("default"), "flaky-worker-0")
            .filter(|p| {
                let cs = &p["status"]["containerStatuses"][0];
                cs["restartCount"] == 2 && cs["state"]["running"].is_object()
            })
    })
    .await;
    let cs = &pod["status"]["containerStatuses"][0];
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(pod["status"]["phase"], "Running");
}
