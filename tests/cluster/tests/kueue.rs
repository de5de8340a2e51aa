//! The Kueue stand-in over HTTP, with a stock kube-rs client: the webhook's suspend, the
//! Workload Kueue's jobframework creates, admission against ClusterQueue quota with v0.19's
//! conditions and messages, the flavor's node labels and tolerations injected, usage freed
//! in submission order, the inadmissible cases, eviction, the user's suspend and
//! `spec.active`, events and the visibility API. Every wait polls the store for a state,
//! none waits for time to pass.

mod common;

use std::time::{Duration, Instant};

use common::*;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};
use tfjob_testcluster::{KueueConfig, NodeSpec, Scenario, TestCluster};

async fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn gpu_node(name: &str) -> NodeSpec {
    let mut n = NodeSpec::new(name, "32", "128Gi", 4);
    n.labels.insert("gpu".into(), "a100".into());
    n
}

fn flavor() -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "a100"},
        "spec": {"nodeLabels": {"gpu": "a100"}, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}})
}

fn cluster_queue(name: &str, gpus: i64, extra: Value) -> Value {
    let mut cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{"name": "a100", "resources": [
                {"name": "cpu", "nominalQuota": 64}, {"name": "memory", "nominalQuota": "256Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]}]}});
    for (k, v) in extra.as_object().into_iter().flatten() {
        cq["spec"][k] = v.clone();
    }
    cq
}

fn local_queue(ns: &str, name: &str, cq: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}})
}

fn kueue_cluster(objects: Vec<Value>) -> TestCluster {
    let mut sc = Scenario::default()
        .with_kueue(KueueConfig::with_tfjob())
        .with_nodes(vec![gpu_node("node-1"), gpu_node("node-2")]);
    for o in objects {
        sc = sc.with_object(o);
    }
    TestCluster::start(sc)
}

fn queued_job(name: &str, queue: &str, workers: i64, gpus: i64) -> DynamicObject {
    let worker = json!({"replicas": workers, "restartPolicy": "Never", "template": {"spec": {"containers": [{
        "name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu",
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"nvidia.com/gpu": gpus}}}]}}});
    let mut labels = json!({});
    if !queue.is_empty() {
        labels["kueue.x-k8s.io/queue-name"] = json!(queue);
    }
    from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"tfReplicaSpecs": {"Worker": worker}}}))
}

fn workload_of(c: &TestCluster, job: &str) -> Option<Value> {
    let name = c.workload_name_for("default", job)?;
    c.get("workloads", Some("default"), &name)
}

fn cond<'a>(o: &'a Value, t: &str) -> Option<&'a Value> {
    o["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
}

fn cond_is(o: &Value, t: &str, status: &str) -> bool {
    cond(o, t).is_some_and(|c| c["status"] == status)
}

fn events(c: &TestCluster, name: &str) -> Vec<(String, String)> {
    c.list("events", Some("default"))
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == name)
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn suspended(c: &TestCluster, job: &str) -> bool {
    c.get("tfjobs", Some("default"), job)
        .is_some_and(|j| j["spec"]["runPolicy"]["suspend"] == json!(true))
}

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
    let wl = eventually("j1 admitted", || {
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
    let job = eventually("j1 started", || {
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
    let pod = eventually("j1 pods", || c.get("pods", Some("default"), "j1-worker-0")).await;
    assert_eq!(pod["spec"]["nodeSelector"]["gpu"], "a100");
    let ev = events(&c, "j1");
    assert!(
        ev.contains(&(
            "CreatedWorkload".into(),
            format!(
                "Created Workload: default/{}",
                wl["metadata"]["name"].as_str().unwrap()
            )
        )),
        "{ev:?}"
    );
    assert!(
        ev.contains(&("Started".into(), "Admitted by clusterQueue gpu-cq".into())),
        "{ev:?}"
    );
    let wev = events(&c, wl["metadata"]["name"].as_str().unwrap());
    assert!(
        wev.iter().any(|(r, m)| r == "QuotaReserved"
            && m.starts_with("Quota reserved in ClusterQueue gpu-cq, wait time since queued was ")),
        "{wev:?}"
    );
    assert!(wev.contains(&(
        "Admitted".into(),
        "Admitted by ClusterQueue gpu-cq, wait time since reservation was 0s".into()
    )));

    // Two more, needing 2 and 3 GPUs with 1 unused: both wait, in submission order.
    jobs.create(&PostParams::default(), &queued_job("j2", "team-a", 2, 1))
        .await
        .unwrap();
    let w2 = eventually("j2 pending", || {
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
        events(&c, &w2name)
            .iter()
            .any(|(r, m)| r == "Pending" && m == qr["message"].as_str().unwrap())
    );
    jobs.create(&PostParams::default(), &queued_job("j3", "team-a", 3, 1))
        .await
        .unwrap();
    eventually("j3 pending", || {
        workload_of(&c, "j3").filter(|w| cond_is(w, "QuotaReserved", "False"))
    })
    .await;
    let cq = eventually("cq counts", || {
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
    let lq = c.get("localqueues", Some("default"), "team-a").unwrap();
    assert_eq!(lq["status"]["pendingWorkloads"], 2);
    assert_eq!(cond(&lq, "Active").unwrap()["reason"], "Ready");

    // The visibility API gives the queue positions.
    let vis = reqwest_get(&c, "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/team-a/pendingworkloads").await;
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
    eventually("j2 admitted", || {
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
    let w2 = eventually("j2 finished", || {
        workload_of(&c, "j2").filter(|w| cond_is(w, "Finished", "True"))
    })
    .await;
    assert_eq!(cond(&w2, "Finished").unwrap()["reason"], "Succeeded");
    assert_eq!(
        cond(&w2, "Finished").unwrap()["message"],
        "TFJob default/j2 successfully completed."
    );
    assert!(events(&c, "j2").contains(&(
        "FinishedWorkload".into(),
        format!("Workload 'default/{w2name}' is declared finished")
    )));
    eventually("j3 admitted", || {
        workload_of(&c, "j3").filter(|w| cond_is(w, "Admitted", "True"))
    })
    .await;
}

async fn reqwest_get(c: &TestCluster, path: &str) -> Value {
    let cl = client(c).await;
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    cl.request::<Value>(req).await.unwrap()
}

#[allow(dead_code)]
fn workloads_api(cl: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"),
        "workloads",
    );
    Api::namespaced_with(cl.clone(), "default", &ar)
}

#[allow(dead_code)]
fn patch_merge() -> (PatchParams, fn(Value) -> Patch<Value>) {
    (PatchParams::default(), Patch::Merge)
}
