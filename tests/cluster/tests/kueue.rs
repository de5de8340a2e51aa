//! The Kueue stand-in over HTTP, with a stock kube-rs client: the webhook's suspend, the
//! Workload Kueue's jobframework creates, admission against ClusterQueue quota with v0.19's
//! conditions and messages, the flavor's node labels and tolerations injected, usage freed
//! in submission order, the inadmissible cases, the granular-reason gate, queueing
//! strategies, cohort borrowing and the visibility API. Every wait polls the store for a
//! state, none waits for time to pass. Lifecycle cases are in `kueue_lifecycle.rs`.

mod common;

use common::kueue::*;
use common::*;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;
use tfjob_testcluster::{KueueConfig, Scenario, TestCluster};

#[tokio::test(flavor = "multi_thread")]
async fn admission_flavor_injection_and_quota_freed_in_order() {
    let c = kueue_cluster(vec![
        flavor(),
        cluster_queue("gpu-cq", 4, json!({})),
        local_queue("default", "team-a", "gpu-cq"),
    ]);
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    // The mutating webhook stores the job suspended: the create's answer says so.
    let created = jobs
        .create(&PostParams::default(), &queued_job("j1", "team-a", 3, 1))
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["runPolicy"]["suspend"], json!(true));
    let uid = created.metadata.uid.clone().unwrap();
    let wl = until("j1 admitted", || {
        workload_of(&c, "j1").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    assert_eq!(
        wl["metadata"]["name"],
        json!(tfjob_testcluster::kueue_names::tfjob_workload_name(
            "j1", &uid
        ))
    );
    assert_eq!(
        wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"],
        json!(uid)
    );
    assert_eq!(wl["metadata"]["ownerReferences"][0]["kind"], "TFJob");
    assert_eq!(wl["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(wl["spec"]["queueName"], "team-a");
    assert_eq!(wl["spec"]["podSets"][0]["name"], "worker");
    assert_eq!(wl["spec"]["podSets"][0]["count"], 3);
    assert_eq!(wl["spec"]["active"], true);
    let qr = cond(&wl, "QuotaReserved").unwrap();
    assert_eq!(
        (qr["reason"].as_str(), qr["message"].as_str()),
        (
            Some("QuotaReserved"),
            Some("Quota reserved in ClusterQueue gpu-cq")
        )
    );
    assert_eq!(
        cond(&wl, "Admitted").unwrap()["message"],
        "The workload is admitted"
    );
    let psa = &wl["status"]["admission"]["podSetAssignments"][0];
    assert_eq!(wl["status"]["admission"]["clusterQueue"], "gpu-cq");
    assert_eq!(psa["flavors"]["nvidia.com/gpu"], "a100");
    assert_eq!(
        psa["resourceUsage"],
        json!({"cpu": "12", "memory": "24Gi", "nvidia.com/gpu": "3"})
    );
    assert_eq!(psa["count"], 3);
    // Started: unsuspended, the flavor's node labels and tolerations in the template.
    let job = until("j1 started", || {
        c.get("tfjobs", Some("default"), "j1")
            .filter(|j| j["spec"]["runPolicy"]["suspend"] == false)
    })
    .await;
    let t = &job["spec"]["tfReplicaSpecs"]["Worker"]["template"];
    assert_eq!(t["spec"]["nodeSelector"], json!({"gpu": "a100"}));
    assert_eq!(t["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
    assert_eq!(t["metadata"]["labels"]["kueue.x-k8s.io/podset"], "worker");
    assert_eq!(
        t["metadata"]["labels"]["kueue.x-k8s.io/local-queue-name"],
        "team-a"
    );
    assert_eq!(
        t["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"],
        "gpu-cq"
    );
    let pod = until("j1 pods", || c.get("pods", Some("default"), "j1-worker-0")).await;
    assert_eq!(pod["spec"]["nodeSelector"]["gpu"], "a100");
    let ev = events_with(&c, "j1", &["CreatedWorkload", "Started"]).await;
    let created = format!(
        "Created Workload: default/{}",
        wl["metadata"]["name"].as_str().unwrap()
    );
    assert!(
        ev.iter()
            .any(|e| e.rm() == ("CreatedWorkload", created.as_str())),
        "{ev:?}"
    );
    assert!(
        ev.iter()
            .any(|e| e.rm() == ("Started", "Admitted by clusterQueue gpu-cq")),
        "{ev:?}"
    );
    let wev = events_with(
        &c,
        wl["metadata"]["name"].as_str().unwrap(),
        &["QuotaReserved", "Admitted"],
    )
    .await;
    assert!(
        wev.iter().any(|e| e.reason == "QuotaReserved"
            && e.message
                .starts_with("Quota reserved in ClusterQueue gpu-cq, wait time since queued was ")),
        "{wev:?}"
    );
    assert!(wev.iter().any(|e| e.rm()
        == (
            "Admitted",
            "Admitted by ClusterQueue gpu-cq, wait time since reservation was 0s"
        )));

    // Two more, needing 2 and 3 GPUs with 1 unused: both wait, in submission order.
    jobs.create(&PostParams::default(), &queued_job("j2", "team-a", 2, 1))
        .await
        .unwrap();
    let w2 = until("j2 pending", || {
        workload_of(&c, "j2").filter(|w| cond_is(w, "QuotaReserved", "False"))
    })
    .await;
    let qr = cond(&w2, "QuotaReserved").unwrap();
    assert_eq!(qr["reason"], "Pending");
    assert_eq!(
        qr["message"],
        "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100, 1 more needed"
    );
    assert_eq!(
        w2["status"]["resourceRequests"],
        json!([{"name": "worker", "resources": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2"}}])
    );
    assert!(cond(&w2, "Admitted").is_none());
    assert!(suspended(&c, "j2"));
    let w2name = w2["metadata"]["name"].as_str().unwrap().to_string();
    assert!(
        events_with(&c, &w2name, &["Pending"])
            .await
            .iter()
            .any(|e| e.rm() == ("Pending", qr["message"].as_str().unwrap()))
    );
    jobs.create(&PostParams::default(), &queued_job("j3", "team-a", 3, 1))
        .await
        .unwrap();
    until("j3 pending", || {
        workload_of(&c, "j3").filter(|w| cond_is(w, "QuotaReserved", "False"))
    })
    .await;
    let cq = until("cq counts", || {
        c.get("clusterqueues", None, "gpu-cq")
            .filter(|q| q["status"]["pendingWorkloads"] == 2)
    })
    .await;
    assert_eq!(cq["status"]["admittedWorkloads"], 1);
    assert_eq!(cq["status"]["reservingWorkloads"], 1);
    let gpu = cq["status"]["flavorsReservation"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "nvidia.com/gpu")
        .unwrap()
        .clone();
    assert_eq!(
        gpu,
        json!({"name": "nvidia.com/gpu", "total": "3", "borrowed": "0"})
    );
    assert_eq!(
        cond(&cq, "Active").unwrap()["message"],
        "Can admit new workloads"
    );
    // The LocalQueue's status is a write of its own, after the ClusterQueue's.
    let lq = read_until(
        "team-a's status counts both pending Workloads",
        || c.get("localqueues", Some("default"), "team-a").unwrap(),
        |lq| lq["status"]["pendingWorkloads"] == 2 && cond(lq, "Active").is_some(),
    )
    .await;
    assert_eq!(lq["status"]["pendingWorkloads"], 2);
    assert_eq!(cond(&lq, "Active").unwrap()["reason"], "Ready");

    // The visibility API gives the queue positions.
    let vis = api_get(&c, "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/team-a/pendingworkloads").await;
    let order: Vec<(String, i64)> = vis["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_string(),
                i["positionInClusterQueue"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![
            (w2name.clone(), 0),
            (c.workload_name_for("default", "j3").unwrap(), 1)
        ]
    );

    // j1 goes: its quota frees and j2 (the older) is admitted, j3 still waits.
    jobs.delete("j1", &DeleteParams::default()).await.unwrap();
    until("j2 admitted", || {
        workload_of(&c, "j2").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    let w3 = workload_of(&c, "j3").unwrap();
    assert!(cond_is(&w3, "QuotaReserved", "False"));
    // j2 finishes: the Workload is Finished and j3 gets the quota.
    c.write_tfjob_condition(
        "default",
        "j2",
        "Succeeded",
        "True",
        "TFJobSucceeded",
        "TFJob default/j2 successfully completed.",
    );
    let w2 = until("j2 finished", || {
        workload_of(&c, "j2").filter(|w| cond_is(w, "Finished", "True"))
    })
    .await;
    assert_eq!(cond(&w2, "Finished").unwrap()["reason"], "Succeeded");
    assert_eq!(
        cond(&w2, "Finished").unwrap()["message"],
        "TFJob default/j2 successfully completed."
    );
    assert!(
        events_with(&c, "j2", &["FinishedWorkload"])
            .await
            .iter()
            .any(|e| e.rm()
                == (
                    "FinishedWorkload",
                    format!("Workload 'default/{w2name}' is declared finished").as_str()
                ))
    );
    until("j3 admitted", || {
        workload_of(&c, "j3").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn inadmissible_cases_say_what_kueue_says() {
    let mut stopped = cluster_queue("stopped-cq", 4, json!({"stopPolicy": "Hold"}));
    stopped["metadata"]["name"] = json!("stopped-cq");
    let c = kueue_cluster(vec![
        flavor(),
        cluster_queue("small-cq", 2, json!({})),
        stopped,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "nosel-cq"},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{"name": "a100", "resources": [
                {"name": "cpu", "nominalQuota": 64}, {"name": "memory", "nominalQuota": "256Gi"}, {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "noflavor-cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h100", "resources": [
                {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}}),
        local_queue("default", "small", "small-cq"),
        local_queue("default", "stopped", "stopped-cq"),
        local_queue("default", "nosel", "nosel-cq"),
        local_queue("default", "noflavor", "noflavor-cq"),
        local_queue("default", "orphan", "missing-cq"),
    ]);
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    let cases = [
        ("no-lq", "team-x", "Inadmissible", "LocalQueue team-x doesn't exist".to_string()),
        ("no-cq", "orphan", "Inadmissible", "ClusterQueue missing-cq doesn't exist".to_string()),
        ("stopped", "stopped", "Inadmissible", "ClusterQueue stopped-cq is inactive".to_string()),
        ("noflavor", "noflavor", "Inadmissible", "ClusterQueue noflavor-cq is inactive".to_string()),
        ("nosel", "nosel", "Pending", "workload namespace doesn't match ClusterQueue selector".to_string()),
        ("too-big", "small", "Pending", "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu in flavor a100, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)".to_string()),
    ];
    for (job, queue, _, _) in &cases {
        // Nothing refuses the job: the webhook checks only the label's syntax.
        jobs.create(&PostParams::default(), &queued_job(job, queue, 3, 1))
            .await
            .unwrap();
    }
    for (job, _, reason, message) in &cases {
        let w = until(job, || {
            workload_of(&c, job).filter(|w| cond_is(w, "QuotaReserved", "False"))
        })
        .await;
        let qr = cond(&w, "QuotaReserved").unwrap();
        assert_eq!(
            (
                qr["reason"].as_str().unwrap(),
                qr["message"].as_str().unwrap()
            ),
            (*reason, message.as_str()),
            "{job}"
        );
        assert!(cond(&w, "Admitted").is_none(), "{job}");
        assert!(suspended(&c, job), "{job}");
    }
    let lq = until("orphan lq status", || {
        c.get("localqueues", Some("default"), "orphan")
            .filter(|l| cond(l, "Active").is_some())
    })
    .await;
    let a = cond(&lq, "Active").unwrap();
    assert_eq!(
        (
            a["status"].as_str(),
            a["reason"].as_str(),
            a["message"].as_str()
        ),
        (
            Some("False"),
            Some("ClusterQueueDoesNotExist"),
            Some("Can't submit new workloads to clusterQueue")
        )
    );
    // Each ClusterQueue's status is a write of its own, apart from the Workloads' and the
    // LocalQueue's waited for above.
    let cq_status = |name: &'static str| {
        let c = &c;
        move || {
            c.get("clusterqueues", None, name)
                .filter(|q| cond(q, "Active").is_some())
        }
    };
    let cq = until("noflavor-cq's Active condition", cq_status("noflavor-cq")).await;
    let a = cond(&cq, "Active").unwrap();
    assert_eq!(
        (a["reason"].as_str(), a["message"].as_str()),
        (
            Some("FlavorNotFound"),
            Some("Can't admit new workloads: references missing ResourceFlavor(s): h100.")
        )
    );
    let cq = until("stopped-cq's Active condition", cq_status("stopped-cq")).await;
    assert_eq!(
        cond(&cq, "Active").unwrap()["message"],
        "Can't admit new workloads: is stopped."
    );
    // A queue-name label that is no DNS-1123 subdomain is refused by vtfjob.kb.io.
    let err = api_err(
        jobs.create(&PostParams::default(), &queued_job("bad", "Team_A", 1, 1))
            .await,
    );
    assert_eq!(err.code, 403);
    assert!(err.message.starts_with("admission webhook \"vtfjob.kb.io\" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Team_A\": a lowercase RFC 1123 subdomain"), "{}", err.message);
    // Creating the missing LocalQueue later lets the job queue and run.
    c.insert(local_queue("default", "team-x", "small-cq"));
    let _ = jobs
        .delete("too-big", &DeleteParams::default())
        .await
        .unwrap();
    until("no-lq admitted after its LocalQueue appears", || {
        // 3 GPUs do not fit small-cq either: it now waits on quota like any other.
        workload_of(&c, "no-lq")
            .filter(|w| cond(w, "QuotaReserved").is_some_and(|q| q["reason"] == "Pending"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn granular_reasons_behind_the_gate() {
    let cfg = KueueConfig {
        unadmitted_workloads_observability: true,
        ..KueueConfig::with_tfjob()
    };
    let c = TestCluster::start(
        Scenario::default()
            .with_kueue(cfg)
            .with_object(flavor())
            .with_object(cluster_queue("cq", 2, json!({})))
            .with_object(local_queue("default", "q", "cq")),
    );
    let jobs = tfjobs(&client(&c).await, "default");
    for (job, queue, workers) in [
        ("never", "q", 3),
        ("missing", "nope", 1),
        ("waits", "q", 2),
        ("second", "q", 1),
    ] {
        jobs.create(&PostParams::default(), &queued_job(job, queue, workers, 1))
            .await
            .unwrap();
    }
    let reason = |job: &str| {
        workload_of(&c, job).and_then(|w| {
            cond(&w, "QuotaReserved").map(|q| q["reason"].as_str().unwrap_or("").to_string())
        })
    };
    until("never", || {
        (reason("never").as_deref() == Some("ExceedsMaxQuota")).then_some(())
    })
    .await;
    until("missing", || {
        (reason("missing").as_deref() == Some("Misconfigured")).then_some(())
    })
    .await;
    until("waits admitted", || {
        (reason("waits").as_deref() == Some("QuotaReserved")).then_some(())
    })
    .await;
    until("second", || {
        (reason("second").as_deref() == Some("WaitingForQuota")).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn strict_fifo_head_blocks_best_effort_does_not() {
    for (strategy, small_admitted) in [("StrictFIFO", false), ("BestEffortFIFO", true)] {
        let c = kueue_cluster(vec![
            flavor(),
            cluster_queue("cq", 4, json!({"queueingStrategy": strategy})),
            local_queue("default", "q", "cq"),
        ]);
        let jobs = tfjobs(&client(&c).await, "default");
        jobs.create(&PostParams::default(), &queued_job("first", "q", 3, 1))
            .await
            .unwrap();
        until("first admitted", || {
            workload_of(&c, "first").filter(|w| cond_is(w, "Admitted", "True"))
        })
        .await;
        jobs.create(&PostParams::default(), &queued_job("big", "q", 2, 1))
            .await
            .unwrap();
        until("big pending", || {
            workload_of(&c, "big").filter(|w| cond_is(w, "QuotaReserved", "False"))
        })
        .await;
        jobs.create(&PostParams::default(), &queued_job("small", "q", 1, 1))
            .await
            .unwrap();
        let w = until("small evaluated or blocked", || {
            let w = workload_of(&c, "small")?;
            // StrictFIFO never evaluates what is behind a head that does not fit.
            let cq = c.get("clusterqueues", None, "cq")?;
            (cond_is(&w, "Admitted", "True") || cq["status"]["pendingWorkloads"] == 2).then_some(w)
        })
        .await;
        assert_eq!(
            cond_is(&w, "Admitted", "True"),
            small_admitted,
            "{strategy}"
        );
        if !small_admitted {
            assert!(
                cond(&w, "QuotaReserved").is_none(),
                "{strategy}: behind the head, never evaluated"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cohort_borrowing_shows_in_status() {
    let mut a = cluster_queue("cq-a", 2, json!({"cohortName": "pool"}));
    a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["borrowingLimit"] = json!(2);
    let b = cluster_queue("cq-b", 4, json!({"cohortName": "pool"}));
    let c = kueue_cluster(vec![flavor(), a, b, local_queue("default", "a", "cq-a")]);
    let jobs = tfjobs(&client(&c).await, "default");
    jobs.create(&PostParams::default(), &queued_job("borrows", "a", 4, 1))
        .await
        .unwrap();
    until("admitted by borrowing", || {
        workload_of(&c, "borrows").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    let cq = until("borrowed", || {
        c.get("clusterqueues", None, "cq-a")
            .filter(|q| q["status"]["reservingWorkloads"] == 1)
    })
    .await;
    let gpu = cq["status"]["flavorsReservation"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "nvidia.com/gpu")
        .unwrap()
        .clone();
    assert_eq!(
        gpu,
        json!({"name": "nvidia.com/gpu", "total": "4", "borrowed": "2"})
    );
    jobs.create(&PostParams::default(), &queued_job("beyond", "a", 1, 1))
        .await
        .unwrap();
    let w = until("beyond limit", || {
        workload_of(&c, "beyond").filter(|w| cond_is(w, "QuotaReserved", "False"))
    })
    .await;
    assert_eq!(
        cond(&w, "QuotaReserved").unwrap()["message"],
        "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100, 1 more needed"
    );
}

#[test]
fn scenario_files_name_the_knobs() {
    let sc = Scenario::from_yaml(
        "kueue:\n  frameworks: [batch/job, kubeflow.org/tfjob]\n  unadmittedWorkloadsObservability: true\ngangScheduler: scheduler-plugins\n",
    )
    .unwrap();
    let k = sc.kueue.unwrap();
    assert!(
        k.manages_tfjobs() && k.unadmitted_workloads_observability && k.controller && k.visibility
    );
    assert_eq!(
        sc.gang_scheduler,
        Some(tfjob_testcluster::GangScheduler::SchedulerPlugins)
    );
    // `kueue: {}` is Kueue's shipped default: batch/job only, TFJobs not managed.
    let plain = Scenario::from_yaml("kueue: {}\ngangScheduler: volcano\n").unwrap();
    assert!(!plain.kueue.unwrap().manages_tfjobs());
    assert_eq!(
        plain.gang_scheduler,
        Some(tfjob_testcluster::GangScheduler::Volcano)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn visibility_api_discovery_rbac_and_absence() {
    let c = TestCluster::start(
        Scenario::default()
            .with_kueue(KueueConfig::with_tfjob())
            .with_deny("get", "clusterqueues/pendingworkloads", "*"),
    );
    let cl = client(&c).await;
    let groups = api_get(&c, "/apis").await;
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "visibility.kueue.x-k8s.io")
    );
    let rl = api_get(&c, "/apis/visibility.kueue.x-k8s.io/v1beta2").await;
    assert!(
        rl["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "localqueues/pendingworkloads")
    );
    // An empty queue answers an empty summary; the ClusterQueue endpoint is denied here.
    let lq = api_get(
        &c,
        "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/q/pendingworkloads",
    )
    .await;
    assert_eq!(
        lq,
        json!({"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta2", "metadata": {}, "items": []})
    );
    let req = http::Request::get(
        "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads",
    )
    .body(Vec::new())
    .unwrap();
    let err = api_err(cl.request::<serde_json::Value>(req).await);
    assert_eq!(err.code, 403);
    // Without the visibility API (VisibilityOnDemand off, or no APIService) it is a 404.
    let off = TestCluster::start(Scenario::default().with_kueue(KueueConfig {
        visibility: false,
        ..KueueConfig::with_tfjob()
    }));
    let req = http::Request::get(
        "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads",
    )
    .body(Vec::new())
    .unwrap();
    let err = api_err(client(&off).await.request::<serde_json::Value>(req).await);
    assert_eq!(err.code, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn example_scenario_files_run() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let sc =
        Scenario::from_yaml(&std::fs::read_to_string(format!("{dir}/kueue-gpu.yaml")).unwrap())
            .unwrap();
    let c = TestCluster::start(sc);
    // Objects from a scenario get their CRD's defaults, as a client's create would.
    let cq = c.get("clusterqueues", None, "gpu-cq").unwrap();
    assert_eq!(cq["spec"]["queueingStrategy"], "BestEffortFIFO");
    assert_eq!(cq["spec"]["preemption"]["withinClusterQueue"], "Never");
    let jobs = tfjobs(&client(&c).await, "default");
    jobs.create(&PostParams::default(), &queued_job("j", "team-a", 4, 1))
        .await
        .unwrap();
    until("admitted", || {
        workload_of(&c, "j").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
    until("all four running", || {
        let running = c
            .list("pods", Some("default"))
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count();
        (running == 4).then_some(())
    })
    .await;
    let sc = Scenario::from_yaml(&std::fs::read_to_string(format!("{dir}/volcano.yaml")).unwrap())
        .unwrap();
    assert_eq!(
        sc.gang_scheduler,
        Some(tfjob_testcluster::GangScheduler::Volcano)
    );
    let v = TestCluster::start(sc);
    let q = v.get("queues", None, "small").unwrap();
    assert_eq!(q["spec"]["capability"]["nvidia.com/gpu"], 2);
    assert_eq!(q["spec"]["dequeueStrategy"], "traverse");
}
