//! The stand-ins' objects against the upstream CRDs (Kueue v0.19.2, Volcano v1.15.1,
//! scheduler-plugins v0.34.7) from `../shared/reference/queueing/` when that folder is there:
//! the CRDs replace the simulator's minimal copies, the queues are created through the API
//! (validated by the upstream schemas), and everything the stand-ins wrote is sent back
//! unchanged through a replace: the upstream schema must accept it and prune nothing.
//! Skipped, with a message, when the folder is absent.

mod common;

use std::path::PathBuf;

use common::*;
use kube::api::{Api, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};
use tfjob_testcluster::{GangScheduler, KueueConfig, NodeSpec, Scenario, TestCluster};

fn dir() -> Option<PathBuf> {
    let d = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/reference/queueing"
    ));
    if d.is_dir() {
        Some(d)
    } else {
        eprintln!("skipping: {} not present", d.display());
        None
    }
}

fn crd(d: &std::path::Path, file: &str) -> Value {
    let text = if file.ends_with(".gz") {
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(d.join(file))
            .output()
            .expect("gzip");
        String::from_utf8(out.stdout).unwrap()
    } else {
        std::fs::read_to_string(d.join(file)).unwrap()
    };
    serde_saphyr::from_str(&text).unwrap()
}

fn api(
    cl: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    match ns {
        Some(n) => Api::namespaced_with(cl.clone(), n, &ar),
        None => Api::all_with(cl.clone(), &ar),
    }
}

/// Replaces the object with itself (through /status when `status`): the upstream schema
/// must take it and keep every field. A stand-in write in between is a 409; the object is
/// then read again and sent again (a bounded number of times).
async fn round_trip(a: &Api<DynamicObject>, obj: &Value, status: bool) {
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    let pp = PostParams::default();
    let mut cur = obj.clone();
    for _ in 0..50 {
        let dynobj: DynamicObject = serde_json::from_value(cur.clone()).unwrap();
        let sent = if status {
            a.replace_status(&name, &pp, &dynobj).await
        } else {
            a.replace(&name, &pp, &dynobj).await
        };
        match sent {
            Ok(back) => {
                let back = serde_json::to_value(back).unwrap();
                assert_eq!(
                    back["status"], cur["status"],
                    "{name}: status pruned or changed"
                );
                assert_eq!(back["spec"], cur["spec"], "{name}: spec pruned or changed");
                return;
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                cur = serde_json::to_value(a.get(&name).await.unwrap()).unwrap();
            }
            Err(e) => panic!("{name}: the upstream schema refused what the stand-in wrote: {e}"),
        }
    }
    panic!("{name}: kept conflicting with the stand-in's writes");
}

#[tokio::test(flavor = "multi_thread")]
async fn kueue_objects_fit_the_upstream_crds() {
    let Some(d) = dir() else {
        return;
    };
    let mut n = NodeSpec::new("node-1", "32", "128Gi", 4);
    n.labels.insert("gpu".into(), "a100".into());
    let mut sc = Scenario::default()
        .with_kueue(KueueConfig::with_tfjob())
        .with_nodes(vec![n]);
    for f in [
        "kueue.x-k8s.io_resourceflavors.yaml",
        "kueue.x-k8s.io_clusterqueues.yaml",
        "kueue.x-k8s.io_localqueues.yaml",
        "kueue.x-k8s.io_workloads.yaml.gz",
    ] {
        sc = sc.with_object(crd(&d, f));
    }
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    let (g, v) = ("kueue.x-k8s.io", "v1beta2");
    let rf = api(&cl, g, v, "ResourceFlavor", "resourceflavors", None);
    let cqs = api(&cl, g, v, "ClusterQueue", "clusterqueues", None);
    let lqs = api(&cl, g, v, "LocalQueue", "localqueues", Some("default"));
    let wls = api(&cl, g, v, "Workload", "workloads", Some("default"));
    let pp = PostParams::default();
    rf.create(&pp, &from_json(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "a100"}, "spec": {"nodeLabels": {"gpu": "a100"}}}))).await.unwrap();
    cqs.create(&pp, &from_json(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{"name": "a100", "resources": [
            {"name": "cpu", "nominalQuota": 16}, {"name": "memory", "nominalQuota": "64Gi"}, {"name": "nvidia.com/gpu", "nominalQuota": 2}]}]}]}}))).await.unwrap();
    lqs.create(&pp, &from_json(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "default"}, "spec": {"clusterQueue": "cq"}}))).await.unwrap();
    let jobs = tfjobs(&cl, "default");
    for (name, workers) in [("fits", 2), ("waits", 1)] {
        let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu",
                "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": 1}}}]}}}}}}));
        jobs.create(&pp, &job).await.unwrap();
    }
    let wl = |job: &str| {
        c.get(
            "workloads",
            Some("default"),
            &c.workload_name_for("default", job).unwrap(),
        )
    };
    let admitted = until("fits admitted", || {
        wl("fits").filter(|w| w["status"]["admission"].is_object())
    })
    .await;
    let pending = until("waits pending", || {
        wl("waits").filter(|w| w["status"]["resourceRequests"].is_array())
    })
    .await;
    round_trip(&wls, &admitted, true).await;
    round_trip(&wls, &pending, true).await;
    let spec_only = json!({"apiVersion": admitted["apiVersion"], "kind": "Workload", "metadata": admitted["metadata"], "spec": admitted["spec"], "status": admitted["status"]});
    round_trip(&wls, &spec_only, false).await;
    let cq = until("cq status", || {
        c.get("clusterqueues", None, "cq")
            .filter(|q| q["status"]["pendingWorkloads"] == 1)
    })
    .await;
    round_trip(&cqs, &cq, true).await;
    // The LocalQueue's status is a write of its own, after the ClusterQueue's.
    let lq = until("lq status", || {
        c.get("localqueues", Some("default"), "q")
            .filter(|q| q["status"]["pendingWorkloads"] == 1)
    })
    .await;
    round_trip(&lqs, &lq, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn podgroups_fit_the_upstream_crds() {
    let Some(d) = dir() else {
        return;
    };
    for (g, files, group, version) in [
        (
            GangScheduler::Volcano,
            vec![
                "scheduling.volcano.sh_podgroups.yaml",
                "scheduling.volcano.sh_queues.yaml",
            ],
            "scheduling.volcano.sh",
            "v1beta1",
        ),
        (
            GangScheduler::SchedulerPlugins,
            vec!["scheduling.x-k8s.io_podgroups.yaml"],
            "scheduling.x-k8s.io",
            "v1alpha1",
        ),
    ] {
        let mut sc = Scenario::default().with_gang_scheduler(g);
        for f in files {
            sc = sc.with_object(crd(&d, f));
        }
        let c = TestCluster::start(sc);
        let cl = client(&c).await;
        let jobs = tfjobs(&cl, "default");
        jobs.create(&PostParams::default(), &tfjob("j", 0, 2, "Never"))
            .await
            .unwrap();
        let pg = until("running group", || {
            c.get("podgroups", Some("default"), "j")
                .filter(|p| p["status"]["phase"] == "Running")
        })
        .await;
        let pgs = api(
            &cl,
            group,
            version,
            "PodGroup",
            "podgroups",
            Some("default"),
        );
        // Volcano's PodGroup CRD has no status subresource: the object goes back whole.
        round_trip(&pgs, &pg, g == GangScheduler::SchedulerPlugins).await;
        if g == GangScheduler::Volcano {
            let qs = api(&cl, group, version, "Queue", "queues", None);
            let q = c.get("queues", None, "default").unwrap();
            round_trip(&qs, &q, true).await;
        }
    }
}
