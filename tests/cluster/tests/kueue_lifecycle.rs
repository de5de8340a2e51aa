//! The Kueue stand-in after admission and around it: preemption, the user's suspend,
//! `spec.active`, an unadmitted unsuspend, the integration off, the default LocalQueue, a
//! Workload deleted by hand, and a webhook without endpoints. Waits poll for states.

mod common;

use common::kueue::*;
use common::*;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use tfjob_testcluster::{KueueConfig, Scenario, TestCluster};

#[tokio::test(flavor = "multi_thread")]
async fn eviction_user_suspend_and_deactivation() {
    let c = kueue_cluster(vec![
        flavor(),
        cluster_queue("cq", 4, json!({})),
        local_queue("default", "q", "cq"),
    ]);
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    jobs.create(&PostParams::default(), &queued_job("j", "q", 2, 1))
        .await
        .unwrap();
    let w = until("admitted", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    let wname = w["metadata"]["name"].as_str().unwrap().to_string();
    until("running", || {
        c.get("tfjobs", Some("default"), "j")
            .filter(|j| condition_types(j).contains(&"Running".to_string()))
    })
    .await;
    until("pods ready", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "PodsReady", "True"))
    })
    .await;

    // The user suspends an admitted job: Kueue starts it again (reconciler.go step 8).
    let pp = PatchParams::default();
    jobs.patch(
        "j",
        &pp,
        &Patch::Merge(json!({"spec": {"runPolicy": {"suspend": true}}})),
    )
    .await
    .unwrap();
    until("restarted by Kueue", || {
        // Repeated events aggregate: the same Started event counts twice.
        let n = events(&c, "j")
            .into_iter()
            .find(|e| e.reason == "Started")
            .map_or(0, |e| e.count);
        (n >= 2 && !suspended(&c, "j")).then_some(())
    })
    .await;

    // Preempted: stopped (templates restored), the reservation released once the pods are
    // gone, requeued; nothing else holds the quota, so it is admitted again at once, and
    // Evicted flips to False with "Previously: ...".
    let msg = tfjob_testcluster::kueue_preempted_message("u-1", "j-1", "cq");
    assert!(c.evict_workload("default", &wname, "Preempted", &msg));
    let w = until("requeued and readmitted", || {
        workload_of(&c, "j")
            .filter(|w| cond_is(w, "Requeued", "True") && cond_is(w, "Admitted", "True"))
    })
    .await;
    assert_eq!(cond(&w, "Requeued").unwrap()["reason"], "Preempted");
    assert_eq!(cond(&w, "Preempted").unwrap()["reason"], "InClusterQueue");
    assert_eq!(cond(&w, "Evicted").unwrap()["status"], "False");
    assert_eq!(
        cond(&w, "Evicted").unwrap()["message"],
        json!(format!("Previously: {msg}"))
    );
    assert!(
        events_with(&c, "j", &["Stopped"])
            .await
            .iter()
            .any(|e| e.rm() == ("Stopped", msg.as_str()))
    );
    assert!(
        events_with(&c, &wname, &["Preempted"])
            .await
            .iter()
            .any(|e| e.rm() == ("Preempted", msg.as_str()))
    );
    // The operator saw the stop: the job was suspended in between.
    until("resumed after the requeue", || {
        c.get("tfjobs", Some("default"), "j").filter(|j| {
            j["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Suspended" && c["reason"] == "TFJobResumed")
        })
    })
    .await;

    // spec.active=false is Kueue's way to pause: Deactivated, suspended, quota released.
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"),
        "workloads",
    );
    let wls: Api<DynamicObject> = Api::namespaced_with(cl.clone(), "default", &ar);
    wls.patch(
        &wname,
        &pp,
        &Patch::Merge(json!({"spec": {"active": false}})),
    )
    .await
    .unwrap();
    let w = until("deactivated", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "QuotaReserved", "False"))
    })
    .await;
    let ev = cond(&w, "Evicted").unwrap();
    assert_eq!(
        (ev["reason"].as_str(), ev["message"].as_str()),
        (Some("Deactivated"), Some("The workload is deactivated"))
    );
    // The job's suspend is the jobframework reconciler's write, apart from the Workload's.
    until("the deactivated job suspended", || {
        suspended(&c, "j").then_some(())
    })
    .await;
    let cq = until("quota released", || {
        c.get("clusterqueues", None, "cq")
            .filter(|q| q["status"]["reservingWorkloads"] == 0)
    })
    .await;
    assert_eq!(
        cq["status"]["pendingWorkloads"], 0,
        "an inactive Workload is not pending"
    );
    wls.patch(
        &wname,
        &pp,
        &Patch::Merge(json!({"spec": {"active": true}})),
    )
    .await
    .unwrap();
    let w = until("reactivated and admitted", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    assert_eq!(cond(&w, "Requeued").unwrap()["reason"], "Reactivated");
    until("running again", || (!suspended(&c, "j")).then_some(())).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unsuspending_an_unadmitted_job_is_reverted() {
    let c = kueue_cluster(vec![
        flavor(),
        cluster_queue("cq", 1, json!({})),
        local_queue("default", "q", "cq"),
    ]);
    let jobs = tfjobs(&client(&c).await, "default");
    jobs.create(&PostParams::default(), &queued_job("j", "q", 2, 1))
        .await
        .unwrap();
    until("pending", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "QuotaReserved", "False"))
    })
    .await;
    jobs.patch(
        "j",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"runPolicy": {"suspend": false}}})),
    )
    .await
    .unwrap();
    until("suspended again", || {
        (suspended(&c, "j")
            && events(&c, "j")
                .iter()
                .any(|e| e.rm() == ("Stopped", "Not admitted by cluster queue")))
        .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn integration_off_means_the_label_does_nothing() {
    let c = TestCluster::start(
        Scenario::default()
            .with_kueue(KueueConfig::default())
            .with_object(flavor())
            .with_object(cluster_queue("cq", 4, json!({})))
            .with_object(local_queue("default", "q", "cq")),
    );
    let jobs = tfjobs(&client(&c).await, "default");
    let created = jobs
        .create(&PostParams::default(), &queued_job("j", "q", 1, 1))
        .await
        .unwrap();
    assert_ne!(created.data["spec"]["runPolicy"]["suspend"], json!(true));
    until("runs unqueued", || {
        c.get("tfjobs", Some("default"), "j")
            .filter(|j| condition_types(j).contains(&"Running".to_string()))
    })
    .await;
    assert!(c.list("workloads", Some("default")).is_empty());
    // The Configuration a client can read says which frameworks are on.
    let cm = c
        .get("configmaps", Some("kueue-system"), "kueue-manager-config")
        .unwrap();
    let cfg = cm["data"]["controller_manager_config.yaml"]
        .as_str()
        .unwrap();
    assert!(
        cfg.contains("frameworks:\n  - \"batch/job\"\n") && !cfg.contains("kubeflow.org/tfjob"),
        "{cfg}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn default_local_queue_and_a_workload_deleted_by_hand() {
    let c = kueue_cluster(vec![
        flavor(),
        cluster_queue("cq", 4, json!({})),
        local_queue("default", "default", "cq"),
    ]);
    let jobs = tfjobs(&client(&c).await, "default");
    // No label: the namespace's LocalQueue "default" is applied by the mutating webhook.
    let created = jobs
        .create(&PostParams::default(), &queued_job("j", "", 1, 1))
        .await
        .unwrap();
    assert_eq!(
        created.metadata.labels.as_ref().unwrap()["kueue.x-k8s.io/queue-name"],
        "default"
    );
    assert_eq!(created.data["spec"]["runPolicy"]["suspend"], json!(true));
    let w = until("admitted", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    until("started", || (!suspended(&c, "j")).then_some(())).await;
    // Removing the label is refused in a namespace with a default LocalQueue.
    let err = api_err(
        jobs.patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": null}}})),
        )
        .await,
    );
    assert!(
        err.message.contains("field is immutable") || err.message.contains("must not be empty"),
        "{}",
        err.message
    );
    // The Workload deleted by hand: the job is stopped, a new Workload queues it again.
    let old_uid = w["metadata"]["uid"].clone();
    c.delete(
        "workloads",
        Some("default"),
        w["metadata"]["name"].as_str().unwrap(),
    );
    until("stopped", || {
        events(&c, "j")
            .iter()
            .any(|e| e.rm() == ("Stopped", "Workload is deleted"))
            .then_some(())
    })
    .await;
    until("new workload admitted", || {
        workload_of(&c, "j")
            .filter(|w| w["metadata"]["uid"] != old_uid && cond_is(w, "Admitted", "True"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn webhook_without_endpoints_fails_tfjob_creates() {
    let cfg = KueueConfig {
        webhook: false,
        ..KueueConfig::with_tfjob()
    };
    let c = TestCluster::start(Scenario::default().with_kueue(cfg));
    let jobs = tfjobs(&client(&c).await, "default");
    let err = api_err(
        jobs.create(&PostParams::default(), &queued_job("j", "q", 1, 1))
            .await,
    );
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        "Internal error occurred: failed calling webhook \"mtfjob.kb.io\": failed to call webhook: Post \"https://kueue-webhook-service.kueue-system.svc:443/mutate-kubeflow-org-v1-tfjob?timeout=10s\": no endpoints available for service \"kueue-webhook-service\""
    );
    assert!(c.list("tfjobs", Some("default")).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn hold_and_drain_evicts_and_a_restart_readmits() {
    let c = kueue_cluster(vec![
        flavor(),
        cluster_queue("cq", 4, json!({})),
        local_queue("default", "q", "cq"),
    ]);
    let jobs = tfjobs(&client(&c).await, "default");
    jobs.create(&PostParams::default(), &queued_job("j", "q", 1, 1))
        .await
        .unwrap();
    until("admitted", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    let mut lq = local_queue("default", "q", "cq");
    lq["spec"]["stopPolicy"] = json!("HoldAndDrain");
    c.insert(lq.clone());
    let w = until("drained", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "QuotaReserved", "False") && suspended(&c, "j"))
    })
    .await;
    let ev = cond(&w, "Evicted").unwrap();
    assert_eq!(
        (ev["reason"].as_str(), ev["message"].as_str()),
        (Some("LocalQueueStopped"), Some("The LocalQueue is stopped"))
    );
    // Held: the stopped LocalQueue keeps it out until it runs again.
    until("held", || {
        workload_of(&c, "j").filter(|w| {
            cond(w, "QuotaReserved").is_some_and(|q| q["message"] == "LocalQueue q is inactive")
        })
    })
    .await;
    lq["spec"]["stopPolicy"] = json!("None");
    c.insert(lq);
    until("readmitted", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    until("running again", || (!suspended(&c, "j")).then_some(())).await;
}
