//! Scenario loading, the upstream CRD, version skew, streaming lists, startup time and the
//! benchmark hooks.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use tfjob_testcluster::{OperatorMode, Scenario, TestCluster};

const UPSTREAM_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/reference/kubeflow.org_tfjobs.yaml"
);

#[test]
fn starts_in_milliseconds() {
    let t = Instant::now();
    let c = TestCluster::start(Scenario::default());
    let took = t.elapsed();
    eprintln!("TestCluster::start took {took:?}");
    assert!(c.kubeconfig().exists());
    assert!(c.url().starts_with("http://127.0.0.1:"));
    let t = Instant::now();
    drop(c);
    eprintln!("drop took {:?}", t.elapsed());
}

#[test]
fn scenario_from_yaml() {
    let sc = Scenario::from_yaml(
        r#"
operator: installed
nodes: [{name: n1, cpu: 8, memory: 32Gi, gpu: "0", taints: [{key: dedicated, value: infra, effect: NoSchedule}]}]
missingImages: ["example.com/nope:1"]
containerBehaviour:
  - match: {replicaType: worker, index: 1}
    exitCode: 1
    runMs: 200
    log: "Traceback ...\nValueError: bad"
succeedAfterMs: 500
timing: {reconcileMs: 5}
objects:
  - {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: team}, stringData: {api-key: x}}
rbac: {deny: [{verb: create, resource: secrets, namespace: "*"}]}
faults:
  - match: {verb: create, resource: tfjobs}
    status: 429
    retryAfterSeconds: 1
    times: 2
  - match: {verb: watch, resource: pods}
    closeAfterEvents: 3
"#,
    )
    .unwrap();
    assert_eq!(sc.operator, OperatorMode::Installed);
    assert_eq!(sc.nodes[0].cpu, "8");
    assert_eq!(sc.faults[0].times, 2);
    assert_eq!(sc.faults[1].times, 1, "default");
    assert_eq!(sc.timing.pull_ms, 20, "unset timings keep defaults");
    let c = TestCluster::start(sc);
    let s = c
        .get("secrets", Some("team"), "s")
        .expect("namespace created for the object");
    assert_eq!(s["data"]["api-key"], "eA==");
    assert_eq!(
        c.get("nodes", None, "n1").unwrap()["spec"]["taints"][0]["key"],
        "dedicated"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_crd_when_available() {
    let Ok(text) = std::fs::read_to_string(UPSTREAM_CRD) else {
        eprintln!("skipping: {UPSTREAM_CRD} not present");
        return;
    };
    let crd: Value = serde_saphyr::from_str(&text).unwrap();
    let c = TestCluster::start(Scenario::default().with_crd(crd).with_succeed_after_ms(200));
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    let mut job = tfjob("up", 1, 2, "OnFailure");
    job.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] =
        json!({"annotations": {"sidecar.istio.io/inject": "false"}, "generateName": "pruned"});
    let created = jobs.create(&PostParams::default(), &job).await.unwrap();
    assert!(
        created.data["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"]
            .get("generateName")
            .is_none(),
        "unknown fields are pruned"
    );
    eventually(10, || {
        c.get("tfjobs", Some("default"), "up")
            .filter(|j| condition_types(j).last().map(String::as_str) == Some("Succeeded"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn version_skew_makes_v1_unavailable() {
    let c = TestCluster::start(Scenario::default().with_served_versions(&["v1beta1"]));
    let cl = client(&c).await;
    let e = api_err(tfjobs(&cl, "default").list(&ListParams::default()).await);
    assert_eq!(e.code, 404);
    let groups: Value = cl
        .request(
            http::Request::get("/apis/kubeflow.org")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(groups["versions"][0]["version"], "v1beta1");
}

#[tokio::test(flavor = "multi_thread")]
async fn streaming_list_with_send_initial_events() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(cl.clone());
    for i in 0..3 {
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": format!("cm{i}")}})).unwrap(),
        )
        .await
        .unwrap();
    }
    let mut s = cms
        .watch(&WatchParams::streaming_lists().timeout(5), "")
        .await
        .unwrap()
        .boxed();
    let mut added = 0;
    while let Some(ev) = s.try_next().await.unwrap() {
        match ev {
            WatchEvent::Added(_) => added += 1,
            WatchEvent::Bookmark(b) => {
                assert_eq!(
                    b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(added, 3);
    // kube-rs's watcher in streaming-list mode works too.
    let mut objs = watcher(cms, watcher::Config::default().streaming_lists())
        .applied_objects()
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(60), objs.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(first.name_any().starts_with("cm"));
}

#[tokio::test(flavor = "multi_thread")]
async fn condition_write_to_watch_latency() {
    let c = TestCluster::start(Scenario::default().with_operator(OperatorMode::Installed));
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    jobs.create(&PostParams::default(), &tfjob("lat", 0, 2, "Never"))
        .await
        .unwrap();
    let rv = jobs.get("lat").await.unwrap().resource_version().unwrap();
    let mut s = jobs
        .watch(
            &WatchParams::default()
                .fields("metadata.name=lat")
                .timeout(5),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    let mut samples = Vec::new();
    for i in 0..5 {
        let (t, st) = if i % 2 == 0 {
            ("Running", "TFJobRunning")
        } else {
            ("Restarting", "TFJobRestarting")
        };
        let written = c
            .write_tfjob_condition("default", "lat", t, "True", st, "bench")
            .unwrap();
        loop {
            if let Some(WatchEvent::Modified(o)) = s.try_next().await.unwrap()
                && o.data["status"]["conditions"]
                    .as_array()
                    .and_then(|a| a.last())
                    .is_some_and(|l| l["type"] == t)
            {
                samples.push(written.elapsed());
                break;
            }
        }
    }
    eprintln!("condition write → watch event latency: {samples:?}");
    assert_eq!(
        c.condition_log()
            .iter()
            .filter(|(j, _, _)| j == "lat")
            .count(),
        5
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_discovery_finds_tfjobs() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let gvk = kube::core::GroupVersionKind::gvk("kubeflow.org", "v1", "TFJob");
    let (ar, caps) = kube::discovery::pinned_kind(&cl, &gvk).await.unwrap();
    assert_eq!(ar.plural, "tfjobs");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    assert!(
        caps.subresources
            .iter()
            .any(|(s, _)| s.plural == "tfjobs/status" || s.plural == "status")
    );
    let d = kube::Discovery::new(cl.clone()).run().await.unwrap();
    assert!(d.has_group("kubeflow.org"));
    assert!(d.has_group("apps"));
    let v = cl.apiserver_version().await.unwrap();
    assert_eq!((v.major.as_str(), v.minor.as_str()), ("1", "36"));

    let absent = TestCluster::start(Scenario::default().with_operator(OperatorMode::Absent));
    let cl = client(&absent).await;
    assert!(kube::discovery::pinned_kind(&cl, &gvk).await.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn events_in_both_api_versions() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use k8s_openapi::api::events::v1::Event;
    let c = TestCluster::start(Scenario::default().with_operator(OperatorMode::Running));
    let cl = client(&c).await;
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("ev", 0, 2, "Never"))
        .await
        .unwrap();
    let core: Api<CoreEvent> = Api::default_namespaced(cl.clone());
    let lp = ListParams::default().fields("involvedObject.name=ev,involvedObject.kind=TFJob");
    let new: Api<Event> = Api::default_namespaced(cl.clone());
    // The operator may record another event between the two lists: read both until they
    // were taken over the same events (the same count), then compare.
    let (evs, l) = until_async("both event lists taken over the same events", || async {
        let evs = core.list(&lp).await.unwrap().items;
        let l = new
            .list(&ListParams::default().fields("regarding.name=ev"))
            .await
            .unwrap()
            .items;
        (evs.len() >= 4 && l.len() == evs.len()).then_some((evs, l))
    })
    .await;
    assert!(evs.iter().all(
        |e| e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("tfjob-controller")
    ));
    assert_eq!(l.len(), evs.len());
    assert!(
        l.iter()
            .any(|e| e.reason.as_deref() == Some("SuccessfulCreatePod")
                && e.note.as_deref() == Some("Created pod: ev-worker-0"))
    );
    assert_eq!(
        l[0].reporting_controller.as_deref(),
        Some("tfjob-controller")
    );
}

#[tokio::test]
async fn start_async_on_the_callers_runtime() {
    let sc = Scenario::from_json(r#"{"operator": "absent", "namespaces": ["team-a"]}"#).unwrap();
    let c = TestCluster::start_async(sc).await;
    let cl = client(&c).await;
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cl);
    let names: Vec<String> = nss
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| n.name_any())
        .collect();
    assert!(names.contains(&"team-a".to_string()));
    assert!(
        !names.contains(&"kubeflow".to_string()),
        "absent operator: no operator namespace"
    );
    assert!(
        c.requests()
            .iter()
            .any(|r| r.verb == "list" && r.resource == "namespaces" && r.status == 200)
    );
}

/// A dependent created after its owner was deleted (an operator that read the job just before
/// its deletion) is collected, as kube-controller-manager's garbage collector deletes a
/// dependent whose owners are all gone; one whose owner is there stays.
#[test]
fn a_dependent_of_a_deleted_owner_is_collected_even_when_created_after() {
    let c = TestCluster::start(Scenario::default().with_operator(OperatorMode::Installed));
    let dependent = |name: &str, uid: &serde_json::Value| {
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default",
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                    "name": "owner", "uid": uid, "controller": true}]}})
    };
    c.insert(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "owner", "namespace": "default"}}));
    let uid = c.get("configmaps", Some("default"), "owner").unwrap()["metadata"]["uid"].clone();
    c.insert(dependent("kept", &uid));
    assert!(c.get("configmaps", Some("default"), "kept").is_some());
    c.delete("configmaps", Some("default"), "owner");
    assert!(c.get("configmaps", Some("default"), "kept").is_none());
    c.insert(dependent("late", &uid));
    assert!(c.get("configmaps", Some("default"), "late").is_none());
}
