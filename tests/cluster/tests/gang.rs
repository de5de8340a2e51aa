//! Gang scheduling over HTTP: the operator's PodGroups (training-operator v1.9.4 with
//! `--gang-scheduler-name`), the Volcano stand-in's enqueue and gang allocation, and
//! scheduler-plugins' coscheduling. Every wait polls for a state, none waits for time.

mod common;

use common::*;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tfjob_testcluster::{GangScheduler, NodeSpec, Scenario, TestCluster};

fn gang_job(name: &str, workers: i64, gpus: i64, policy: Value) -> kube::core::DynamicObject {
    from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "annotations": {"team": "nlp"}},
        "spec": {"runPolicy": {"schedulingPolicy": policy}, "tfReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu",
                "resources": {"requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": gpus}, "limits": {"nvidia.com/gpu": gpus}}}]}}}}}}))
}

fn cluster(g: GangScheduler, nodes: Vec<NodeSpec>, objects: Vec<Value>) -> TestCluster {
    let mut sc = Scenario::default().with_gang_scheduler(g).with_nodes(nodes);
    for o in objects {
        sc = sc.with_object(o);
    }
    TestCluster::start(sc)
}

fn job_pods(c: &TestCluster, job: &str) -> Vec<Value> {
    c.list("pods", Some("default"))
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["training.kubeflow.org/job-name"] == job)
        .collect()
}

fn pg_cond<'a>(pg: &'a Value, t: &str) -> Option<&'a Value> {
    pg["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
}

#[tokio::test(flavor = "multi_thread")]
async fn volcano_holds_pods_until_the_queue_has_room() {
    let queue = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "small"},
        "spec": {"weight": 1, "capability": {"nvidia.com/gpu": 2}}, "status": {"state": "Open"}});
    let c = cluster(
        GangScheduler::Volcano,
        vec![NodeSpec::new("node-1", "16", "64Gi", 4)],
        vec![queue.clone()],
    );
    let jobs = tfjobs(&client(&c).await, "default");
    jobs.create(
        &PostParams::default(),
        &gang_job(
            "j",
            3,
            1,
            json!({"queue": "small", "priorityClass": "high"}),
        ),
    )
    .await
    .unwrap();
    let pg = until("pending PodGroup", || {
        c.get("podgroups", Some("default"), "j")
            .filter(|p| p["status"]["phase"] == "Pending")
    })
    .await;
    assert_eq!(pg["apiVersion"], "scheduling.volcano.sh/v1beta1");
    assert_eq!(pg["spec"]["minMember"], 3);
    assert_eq!(pg["spec"]["queue"], "small");
    assert_eq!(pg["spec"]["priorityClassName"], "high");
    assert_eq!(
        pg["spec"]["minResources"],
        json!({"cpu": "6", "memory": "12Gi", "nvidia.com/gpu": "3"})
    );
    assert_eq!(pg["metadata"]["annotations"]["team"], "nlp");
    assert_eq!(pg["metadata"]["ownerReferences"][0]["kind"], "TFJob");
    // Both events have reason Unschedulable and are written one after the other: wait for the
    // two of them, not for the reason (the first alone made this flaky).
    let ev = read_until(
        "both Unschedulable events on j",
        || events(&c, "j"),
        |ev| ev.iter().filter(|e| e.reason == "Unschedulable").count() >= 2,
    )
    .await;
    assert!(
        ev.iter().any(|e| e.trm()
            == (
                "Normal",
                "Unschedulable",
                "queue resource quota insufficient: insufficient nvidia.com/gpu"
            )),
        "{ev:?}"
    );
    assert!(
        ev.iter().any(|e| e.trm()
            == (
                "Warning",
                "Unschedulable",
                "0/0 tasks in gang unschedulable: pod group is not ready, 3 minAvailable"
            )),
        "{ev:?}"
    );
    // Held by the gang: no pods at all, the job only Created, lastReconcileTime set. The job's
    // status is the operator's write, apart from Volcano's PodGroup status and events above.
    let job = until("j's status reconciled", || {
        c.get("tfjobs", Some("default"), "j")
            .filter(|j| j["status"]["lastReconcileTime"].is_string())
    })
    .await;
    assert!(job_pods(&c, "j").is_empty());
    assert_eq!(condition_types(&job), vec!["Created".to_string()]);
    assert!(job["status"]["lastReconcileTime"].is_string());

    // The queue grows: Inqueue, then the pods, decorated for Volcano, and Running.
    let mut bigger = queue;
    bigger["spec"]["capability"]["nvidia.com/gpu"] = json!(4);
    c.insert(bigger);
    let pg = until("running PodGroup", || {
        c.get("podgroups", Some("default"), "j")
            .filter(|p| p["status"]["phase"] == "Running")
    })
    .await;
    assert_eq!(
        pg_cond(&pg, "Scheduled").unwrap()["reason"],
        "tasks in gang are ready to be scheduled"
    );
    let pods = job_pods(&c, "j");
    assert_eq!(pods.len(), 3);
    for p in &pods {
        assert_eq!(p["spec"]["schedulerName"], "volcano");
        assert_eq!(
            p["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
            "j"
        );
        assert_eq!(
            p["metadata"]["annotations"]["volcano.sh/task-spec"],
            "worker"
        );
    }
    until("job running", || {
        c.get("tfjobs", Some("default"), "j")
            .filter(|j| condition_types(j).contains(&"Running".to_string()))
    })
    .await;
    assert!(
        events_with(&c, "j-worker-0", &["Scheduled"])
            .await
            .iter()
            .any(|e| e.reason == "Scheduled"
                && e.message
                    .starts_with("Successfully assigned default/j-worker-0 to "))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn volcano_gang_that_does_not_fit_binds_nothing() {
    let c = cluster(
        GangScheduler::Volcano,
        vec![
            NodeSpec::new("node-1", "16", "64Gi", 3),
            NodeSpec::new("node-2", "16", "64Gi", 3),
        ],
        vec![],
    );
    let jobs = tfjobs(&client(&c).await, "default");
    // 6 GPUs wanted, 6 on the nodes but 3 + 3: the third 2-GPU pod fits nowhere.
    jobs.create(&PostParams::default(), &gang_job("j", 3, 2, json!({})))
        .await
        .unwrap();
    let pg = until("unschedulable gang", || {
        c.get("podgroups", Some("default"), "j")
            .filter(|p| pg_cond(p, "Unschedulable").is_some())
    })
    .await;
    assert_eq!(pg["spec"]["queue"], "default");
    assert_eq!(pg["status"]["phase"], "Inqueue");
    let u = pg_cond(&pg, "Unschedulable").unwrap();
    assert_eq!(u["reason"], "NotEnoughResources");
    assert_eq!(
        u["message"],
        "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Unschedulable. Origin reason is j-worker-2: 0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu."
    );
    let pods = job_pods(&c, "j");
    assert_eq!(pods.len(), 3);
    assert!(
        pods.iter().all(|p| p["spec"]["nodeName"].is_null()),
        "a gang binds all or nothing"
    );
    let ps = pods[0]["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap()
        .clone();
    assert_eq!(
        (ps["status"].as_str(), ps["reason"].as_str()),
        (Some("False"), Some("Unschedulable"))
    );
    assert!(
        events_with(&c, "j-worker-0", &["FailedScheduling"])
            .await
            .iter()
            .any(|e| e.kind == "Warning" && e.reason == "FailedScheduling")
    );
    // A node joins: the whole gang is bound.
    c.add_node(&NodeSpec::new("node-3", "16", "64Gi", 4));
    until("gang running", || {
        c.get("podgroups", Some("default"), "j")
            .filter(|p| p["status"]["phase"] == "Running")
    })
    .await;
    assert!(
        job_pods(&c, "j")
            .iter()
            .all(|p| p["spec"]["nodeName"].is_string())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn volcano_refuses_a_missing_queue_and_overcommit_denies() {
    let c = cluster(
        GangScheduler::Volcano,
        vec![NodeSpec::new("node-1", "16", "64Gi", 2)],
        vec![],
    );
    let jobs = tfjobs(&client(&c).await, "default");
    jobs.create(
        &PostParams::default(),
        &gang_job("noq", 1, 1, json!({"queue": "nope"})),
    )
    .await
    .unwrap();
    jobs.create(&PostParams::default(), &gang_job("big", 3, 1, json!({})))
        .await
        .unwrap();
    let job = until("noq reconciled", || {
        c.get("tfjobs", Some("default"), "noq")
            .filter(|j| j["status"]["lastReconcileTime"].is_string())
    })
    .await;
    // The PodGroup webhook refused the group: no PodGroup, no pods, only Created.
    assert_eq!(condition_types(&job), vec!["Created".to_string()]);
    assert!(c.get("podgroups", Some("default"), "noq").is_none());
    assert!(job_pods(&c, "noq").is_empty());
    // 3 GPUs against 2 × 1.2 idle: the overcommit plugin keeps it Pending.
    until("overused", || {
        events(&c, "big").into_iter().find(|e| {
            e.trm()
                == (
                    "Normal",
                    "Unschedulable",
                    "resource in cluster is overused: overused nvidia.com/gpu",
                )
        })
    })
    .await;
    assert_eq!(
        c.get("podgroups", Some("default"), "big").unwrap()["status"]["phase"],
        "Pending"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn suspend_deletes_the_podgroup_and_resume_makes_it_again() {
    let c = cluster(
        GangScheduler::Volcano,
        vec![NodeSpec::new("node-1", "16", "64Gi", 4)],
        vec![],
    );
    let jobs = tfjobs(&client(&c).await, "default");
    jobs.create(&PostParams::default(), &gang_job("j", 2, 1, json!({})))
        .await
        .unwrap();
    until("running", || {
        c.get("podgroups", Some("default"), "j")
            .filter(|p| p["status"]["phase"] == "Running")
    })
    .await;
    let pp = PatchParams::default();
    jobs.patch(
        "j",
        &pp,
        &Patch::Merge(json!({"spec": {"runPolicy": {"suspend": true}}})),
    )
    .await
    .unwrap();
    until("PodGroup deleted", || {
        c.get("podgroups", Some("default"), "j")
            .is_none()
            .then_some(())
    })
    .await;
    let ev = events_with(&c, "j", &["JobTerminated", "SuccessfulDeletePodGroup"]).await;
    assert!(ev.iter().any(|e| e.trm()
        == (
            "Normal",
            "JobTerminated",
            "Job has been terminated. Deleting PodGroup"
        )));
    assert!(
        ev.iter()
            .any(|e| e.trm() == ("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: j"))
    );
    jobs.patch(
        "j",
        &pp,
        &Patch::Merge(json!({"spec": {"runPolicy": {"suspend": false}}})),
    )
    .await
    .unwrap();
    until("again", || {
        c.get("podgroups", Some("default"), "j")
            .filter(|p| p["status"]["phase"] == "Running")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn scheduler_plugins_pods_wait_together() {
    let c = cluster(
        GangScheduler::SchedulerPlugins,
        vec![
            NodeSpec::new("node-1", "16", "64Gi", 3),
            NodeSpec::new("node-2", "16", "64Gi", 3),
        ],
        vec![],
    );
    let jobs = tfjobs(&client(&c).await, "default");
    // The GPU only as a limit: CalcPGMinResources takes limits only for a container with no
    // requests at all, so minResources leaves the GPUs out (the pods still request them).
    let mut job = gang_job("j", 3, 2, json!({"scheduleTimeoutSeconds": 60}));
    job.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]
        ["requests"]
        .as_object_mut()
        .unwrap()
        .remove("nvidia.com/gpu");
    jobs.create(&PostParams::default(), &job).await.unwrap();
    // Pods are created at once (no delay for scheduler-plugins), and wait as a gang.
    let pods = until("pods rejected", || {
        let ps = job_pods(&c, "j");
        (ps.len() == 3
            && ps.iter().all(|p| {
                p["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "PodScheduled" && c["status"] == "False")
                })
            }))
        .then_some(ps)
    })
    .await;
    let pg = c.get("podgroups", Some("default"), "j").unwrap();
    assert_eq!(pg["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
    assert_eq!(
        pg["spec"],
        json!({"minMember": 3, "minResources": {"cpu": "6", "memory": "12Gi"}, "scheduleTimeoutSeconds": 60})
    );
    assert!(
        pg["status"]["conditions"].is_null(),
        "scheduler-plugins PodGroups have no conditions"
    );
    for p in &pods {
        assert_eq!(p["spec"]["schedulerName"], "scheduler-plugins-scheduler");
        assert_eq!(
            p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"],
            "j"
        );
        assert!(p["spec"]["nodeName"].is_null());
    }
    let msg = async |pod: &str| {
        events_with(&c, pod, &["FailedScheduling"])
            .await
            .into_iter()
            .find(|e| e.reason == "FailedScheduling")
            .map(|e| e.message)
    };
    assert_eq!(
        msg("j-worker-0").await.as_deref(),
        Some(
            "PodGroup default/j gets rejected due to Pod j-worker-2 is unschedulable even after PostFilter"
        )
    );
    assert!(
        msg("j-worker-2")
            .await
            .unwrap()
            .starts_with("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    );
    c.add_node(&NodeSpec::new("node-3", "16", "64Gi", 4));
    let pg = until("running", || {
        c.get("podgroups", Some("default"), "j")
            .filter(|p| p["status"]["phase"] == "Running")
    })
    .await;
    assert_eq!(pg["status"]["running"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn gang_scheduler_not_running() {
    for g in [GangScheduler::Volcano, GangScheduler::SchedulerPlugins] {
        let mut sc = Scenario::default().with_gang_scheduler(g);
        sc.gang_scheduler_running = false;
        let c = TestCluster::start(sc);
        let jobs = tfjobs(&client(&c).await, "default");
        jobs.create(&PostParams::default(), &gang_job("j", 2, 1, json!({})))
            .await
            .unwrap();
        let pg = until("PodGroup created", || {
            c.get("podgroups", Some("default"), "j")
        })
        .await;
        assert!(
            pg["status"].get("phase").is_none(),
            "{g:?}: nothing processes the group"
        );
        match g {
            // Volcano: the operator waits for a phase that never comes; no pods.
            GangScheduler::Volcano => {
                until("reconciled", || {
                    c.get("tfjobs", Some("default"), "j")
                        .filter(|j| j["status"]["lastReconcileTime"].is_string())
                })
                .await;
                assert!(job_pods(&c, "j").is_empty());
            }
            // scheduler-plugins: pods exist, Pending, with no PodScheduled condition at all.
            GangScheduler::SchedulerPlugins => {
                let pods = until("pods", || Some(job_pods(&c, "j")).filter(|p| p.len() == 2)).await;
                for p in pods {
                    assert!(p["spec"]["nodeName"].is_null());
                    assert!(
                        p["status"]["conditions"]
                            .as_array()
                            .is_none_or(|cs| cs.iter().all(|c| c["type"] != "PodScheduled"))
                    );
                }
            }
        }
    }
}
