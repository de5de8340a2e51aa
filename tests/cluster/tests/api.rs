//! API-machinery fidelity with an unmodified kube-rs client: CRUD, errors, selectors,
//! watch, bookmarks, 410 recovery, faults, RBAC, dry-run.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use tfjob_testcluster::{Fault, OperatorMode, Scenario, TestCluster};

fn secret(name: &str) -> Secret {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"api-key": "k"}})).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn crud_and_status_errors() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let secrets: Api<Secret> = Api::default_namespaced(cl.clone());
    let created = secrets
        .create(&PostParams::default(), &secret("s1"))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some());
    assert!(
        created.data.as_ref().unwrap().contains_key("api-key"),
        "stringData is folded into data"
    );

    let e = api_err(secrets.create(&PostParams::default(), &secret("s1")).await);
    assert_eq!(
        (e.code, e.reason.as_str(), e.message.as_str()),
        (409, "AlreadyExists", "secrets \"s1\" already exists")
    );
    let e = api_err(secrets.get("nope").await);
    assert_eq!(
        (e.code, e.reason.as_str(), e.message.as_str()),
        (404, "NotFound", "secrets \"nope\" not found")
    );

    // Optimistic concurrency.
    let mut stale = created.clone();
    secrets
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    stale.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    let e = api_err(secrets.replace("s1", &PostParams::default(), &stale).await);
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));

    let p = secrets
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(
                    json!([{"op": "add", "path": "/metadata/labels/c", "value": "d"}]),
                )
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(p.labels().get("c").map(String::as_str), Some("d"));
    let applied = secrets
        .patch("s2", &PatchParams::apply("tests").force(), &Patch::Apply(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s2"}, "data": {"k": "dg=="}})))
        .await
        .unwrap();
    assert_eq!(applied.name_any(), "s2");

    secrets
        .delete("s1", &DeleteParams::default())
        .await
        .unwrap();
    assert!(c.get("secrets", Some("default"), "s1").is_none());

    let other: Api<Secret> = Api::namespaced(cl.clone(), "missing-ns");
    let e = api_err(other.create(&PostParams::default(), &secret("x")).await);
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, "namespaces \"missing-ns\" not found")
    );

    let e = api_err(tfjobs(&cl, "default").get("ghost").await);
    assert_eq!(e.message, "tfjobs.kubeflow.org \"ghost\" not found");

    // Namespaces are cluster-scoped and deleting one removes its objects.
    let nss: Api<Namespace> = Api::all(cl.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "tmp"}})).unwrap(),
    )
    .await
    .unwrap();
    Api::<Secret>::namespaced(cl.clone(), "tmp")
        .create(&PostParams::default(), &secret("gone"))
        .await
        .unwrap();
    nss.delete("tmp", &DeleteParams::default()).await.unwrap();
    assert!(c.get("secrets", Some("tmp"), "gone").is_none());

    let writes = c.writes();
    assert!(writes.iter().all(|w| !w.dry_run));
    assert!(
        writes
            .iter()
            .any(|w| w.verb == "create" && w.resource == "secrets" && w.status == 201)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_and_admission() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    c.clear_requests();
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let out = jobs
        .create(&pp, &tfjob("dry", 1, 2, "OnFailure"))
        .await
        .unwrap();
    assert_eq!(out.name_any(), "dry");
    assert!(c.get("tfjobs", Some("default"), "dry").is_none());
    assert!(c.writes().is_empty(), "dry-run is not a write");
    assert!(c.requests().iter().any(|r| r.dry_run && r.verb == "create"));

    // ObjectMeta's own check: names are DNS-1123 subdomains.
    let e = api_err(
        jobs.create(&PostParams::default(), &tfjob("Bad_Name", 0, 1, "Never"))
            .await,
    );
    assert!(e.message.starts_with("TFJob.kubeflow.org \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{}", e.message);
    assert!(
        c.writes()
            .iter()
            .all(|w| w.status == 422 || w.status == 403),
        "only rejected attempts"
    );
}

/// A custom resource's refusals are the scenario's: the schema's as 422 Invalid under the
/// CRD's kind and group, the webhook's as controller-runtime's 403 with the webhook's name
/// (statuserror.go ToStatusErr), on create and dry run alike.
#[tokio::test(flavor = "multi_thread")]
async fn a_custom_resource_is_refused_as_the_scenario_says() {
    let mut scenario =
        Scenario::default().with_refusal("tfjobs", "bad", "spec.tfReplicaSpecs", "Required value");
    scenario.refusals.push(tfjob_testcluster::Refusal {
        resource: "tfjobs".into(),
        name: "tf.job".into(),
        webhook: Some("validator.tfjob.training-operator.kubeflow.org".into()),
        causes: vec![tfjob_testcluster::RefusalCause {
            field: "spec.tfReplicaSpecs[Worker].template.spec.containers".into(),
            message: "Required value: must have at least one container with name tensorflow".into(),
            reason: None,
        }],
    });
    let c = TestCluster::start(scenario);
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    for params in [&PostParams::default(), &dry] {
        let e = api_err(jobs.create(params, &tfjob("bad", 0, 1, "Never")).await);
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            e.message,
            "TFJob.kubeflow.org \"bad\" is invalid: spec.tfReplicaSpecs: Required value"
        );
        let e = api_err(jobs.create(params, &tfjob("tf.job", 0, 1, "Never")).await);
        assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            e.message,
            "admission webhook \"validator.tfjob.training-operator.kubeflow.org\" denied the request: spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container with name tensorflow"
        );
    }
    assert!(c.get("tfjobs", Some("default"), "bad").is_none());
    // Other names are stored.
    jobs.create(&PostParams::default(), &tfjob("fine", 0, 1, "Never"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn selectors_and_pagination() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    for (n, app, tier) in [
        ("a", "web", "front"),
        ("b", "web", "back"),
        ("c", "db", "back"),
    ] {
        c.insert(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "default", "labels": {"app": app, "tier": tier}}, "spec": {"schedulerName": "none", "containers": [{"name": "x", "image": "x"}]}}));
    }
    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    let names =
        |l: kube::core::ObjectList<Pod>| l.items.iter().map(|p| p.name_any()).collect::<Vec<_>>();
    for (sel, want) in [
        ("app=web", vec!["a", "b"]),
        ("app==web,tier!=front", vec!["b"]),
        ("app in (db,cache)", vec!["c"]),
        ("tier notin (back)", vec!["a"]),
        ("app", vec!["a", "b", "c"]),
        ("!app", vec![]),
    ] {
        assert_eq!(
            names(pods.list(&ListParams::default().labels(sel)).await.unwrap()),
            want,
            "{sel}"
        );
    }
    assert_eq!(
        names(
            pods.list(&ListParams::default().fields("metadata.name=b"))
                .await
                .unwrap()
        ),
        vec!["b"]
    );
    let all: Api<Pod> = Api::all(cl.clone());
    let l = all
        .list(&ListParams::default().labels("tier=back"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 2);
    assert!(l.metadata.resource_version.is_some());
    let page = pods
        .list(&ListParams::default().labels("app").limit(2))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    let cont = page.metadata.continue_.clone().unwrap();
    let rest = pods
        .list(
            &ListParams::default()
                .labels("app")
                .limit(2)
                .continue_token(&cont),
        )
        .await
        .unwrap();
    assert_eq!(names(rest), vec!["c"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn raw_watch_and_bookmarks() {
    let mut sc = Scenario::default();
    sc.timing.bookmark_ms = 100;
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    let secrets: Api<Secret> = Api::default_namespaced(cl.clone());
    let rv = secrets
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = secrets
        .watch(&WatchParams::default().timeout(3), &rv)
        .await
        .unwrap()
        .boxed();
    secrets
        .create(&PostParams::default(), &secret("w1"))
        .await
        .unwrap();
    secrets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
        )
        .await
        .unwrap();
    secrets
        .delete("w1", &DeleteParams::default())
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(ev) = stream.try_next().await.unwrap() {
        match ev {
            WatchEvent::Added(s) => seen.push(format!("ADDED {}", s.name_any())),
            WatchEvent::Modified(s) => seen.push(format!("MODIFIED {}", s.name_any())),
            WatchEvent::Deleted(s) => seen.push(format!("DELETED {}", s.name_any())),
            WatchEvent::Bookmark(_) => {
                seen.push("BOOKMARK".into());
                if seen.len() > 4 {
                    break;
                }
            }
            WatchEvent::Error(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(&seen[..3], ["ADDED w1", "MODIFIED w1", "DELETED w1"]);
    assert!(seen.contains(&"BOOKMARK".to_string()));
}

#[tokio::test(flavor = "multi_thread")]
async fn watcher_recovers_from_410() {
    // Each watch ends after one event and every re-watch with a resourceVersion gets 410:
    // kube-rs's watcher must fall back to a fresh list and keep delivering objects.
    let sc = Scenario::default()
        .with_fault(Fault::on("watch", "secrets").close_after_events(1).times(0))
        .with_fault(Fault::on("watch", "secrets").gone_on_rewatch().times(2));
    let c = TestCluster::start(sc);
    let cl = client(&c).await;
    let secrets: Api<Secret> = Api::default_namespaced(cl.clone());
    let mut objs = watcher(secrets.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let writer = secrets.clone();
    tokio::spawn(async move {
        for i in 0..5 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            writer
                .create(&PostParams::default(), &secret(&format!("r{i}")))
                .await
                .unwrap();
        }
    });
    let mut names = std::collections::BTreeSet::new();
    let end = Instant::now() + Duration::from_secs(120); // safety net only
    while names.len() < 5 && Instant::now() < end {
        match tokio::time::timeout(Duration::from_secs(60), objs.next()).await {
            Ok(Some(Ok(s))) => {
                names.insert(s.name_any());
            }
            Ok(Some(Err(_))) => continue,
            _ => break,
        }
    }
    assert_eq!(names.len(), 5, "saw {names:?}");
    let lists = c
        .requests()
        .iter()
        .filter(|r| r.verb == "list" && r.resource == "secrets")
        .count();
    assert!(lists >= 2, "the 410 forced a re-list ({lists} lists)");
}

#[tokio::test(flavor = "multi_thread")]
async fn faults() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let secrets: Api<Secret> = Api::default_namespaced(cl.clone());

    // kube-rs retries 429/503 by default: the fault is visible in the request log only.
    c.set_faults(vec![
        Fault::status("create", "secrets", 429)
            .retry_after(1)
            .times(1),
    ]);
    let t = Instant::now();
    secrets
        .create(&PostParams::default(), &secret("f1"))
        .await
        .unwrap();
    let statuses: Vec<u16> = c
        .requests()
        .iter()
        .filter(|r| r.verb == "create" && r.resource == "secrets")
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [429, 201]);
    eprintln!(
        "429 with Retry-After: 1 → kube-rs retried after {:?}",
        t.elapsed()
    );

    c.clear_requests();
    c.set_faults(vec![Fault::status("get", "secrets", 503).times(1)]);
    secrets.get("f1").await.unwrap();
    let statuses: Vec<u16> = c.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [503, 200]);
    c.set_faults(vec![Fault::status("get", "secrets", 409).skip(1).times(1)]);
    secrets.get("f1").await.unwrap();
    assert_eq!(api_err(secrets.get("f1").await).code, 409);
    secrets.get("f1").await.unwrap();

    c.set_faults(vec![
        Fault::status("get", "secrets", 500).named("f1").times(0),
    ]);
    assert_eq!(api_err(secrets.get("f1").await).reason, "InternalError");
    assert_eq!(api_err(secrets.get("f1").await).code, 500);

    c.set_faults(vec![Fault::on("get", "secrets").latency_ms(200)]);
    let t = Instant::now();
    secrets.get("f1").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(200));

    c.set_faults(vec![Fault::on("create", "secrets").reset()]);
    let r = secrets.create(&PostParams::default(), &secret("f2")).await;
    assert!(
        !matches!(r, Ok(_) | Err(kube::Error::Api(_))),
        "connection reset surfaces as a transport error: {r:?}"
    );
    assert!(c.get("secrets", Some("default"), "f2").is_none());

    c.set_faults(vec![Fault::status("list", "pods", 403).times(0)]);
    let pods: Api<Pod> = Api::default_namespaced(cl.clone());
    assert_eq!(api_err(pods.list(&ListParams::default()).await).code, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn rbac_denials() {
    let c = TestCluster::start(Scenario::default().with_deny("create", "secrets", "*"));
    let cl = client(&c).await;
    let secrets: Api<Secret> = Api::default_namespaced(cl.clone());
    let e = api_err(secrets.create(&PostParams::default(), &secret("x")).await);
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "secrets is forbidden: User \"tester\" cannot create resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
    use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
    let ssar: Api<SelfSubjectAccessReview> = Api::all(cl.clone());
    let review = |verb: &str| -> SelfSubjectAccessReview {
        serde_json::from_value(json!({"spec": {"resourceAttributes": {"verb": verb, "resource": "secrets", "namespace": "default"}}})).unwrap()
    };
    let denied = ssar
        .create(&PostParams::default(), &review("create"))
        .await
        .unwrap();
    assert!(!denied.status.unwrap().allowed);
    let allowed = ssar
        .create(&PostParams::default(), &review("get"))
        .await
        .unwrap();
    assert!(allowed.status.unwrap().allowed);
    let writes = c.writes();
    assert_eq!(
        writes.len(),
        1,
        "SSARs are not writes; the denied create attempt is logged"
    );
    assert_eq!(writes[0].status, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_modes() {
    let absent = TestCluster::start(Scenario::default().with_operator(OperatorMode::Absent));
    let cl = client(&absent).await;
    let e = api_err(tfjobs(&cl, "default").list(&ListParams::default()).await);
    assert_eq!((e.code, e.message.as_str()), (404, "404 page not found"));

    let installed = TestCluster::start(Scenario::default().with_operator(OperatorMode::Installed));
    let cl = client(&installed).await;
    tfjobs(&cl, "default")
        .create(&PostParams::default(), &tfjob("idle", 0, 1, "Never"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let job = installed.get("tfjobs", Some("default"), "idle").unwrap();
    assert!(job.get("status").is_none(), "nothing reconciles: {job}");
    assert!(installed.list("pods", Some("default")).is_empty());
    let dep = installed
        .get("deployments", Some("kubeflow"), "training-operator")
        .unwrap();
    assert!(dep["status"]["readyReplicas"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_resource_versions_and_misc_verbs() {
    let c = TestCluster::start(Scenario::default().with_watch_history(5));
    let cl = client(&c).await;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(cl.clone());
    let cm = |n: &str| {
        serde_json::from_value(json!({"metadata": {"name": n, "labels": {"batch": "1"}}})).unwrap()
    };
    let first = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    for i in 0..10 {
        cms.create(&PostParams::default(), &cm(&format!("b{i}")))
            .await
            .unwrap();
    }
    let old_rv = first.resource_version().unwrap();
    // Watch from a resourceVersion outside the window → one ERROR 410 event.
    let mut s = cms
        .watch(&WatchParams::default().timeout(2), &old_rv)
        .await
        .unwrap()
        .boxed();
    match s.try_next().await {
        Ok(Some(WatchEvent::Error(e))) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410 ERROR event, got {other:?}"),
    }
    let lp = ListParams::default()
        .at(&old_rv)
        .matching(kube::api::VersionMatch::Exact);
    assert_eq!(api_err(cms.list(&lp).await).code, 410);

    // generateName and deletecollection.
    let g = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap(),
        )
        .await
        .unwrap();
    assert!(g.name_any().starts_with("gen-") && g.name_any().len() == 9);
    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("batch=1"),
    )
    .await
    .unwrap();
    assert_eq!(
        cms.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_ownership() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(cl.clone());
    let pp = PatchParams::apply("kubectl-tfjob");
    let cfg = |data: serde_json::Value| {
        Patch::Apply(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data}),
        )
    };
    cms.patch("ssa", &pp, &cfg(json!({"a": "1", "b": "2"})))
        .await
        .unwrap();
    // Another manager adds a key; the first manager then drops "b".
    cms.patch(
        "ssa",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"other": "x"}})),
    )
    .await
    .unwrap();
    let out = cms
        .patch("ssa", &pp, &cfg(json!({"a": "1"})))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data.get("a").map(String::as_str), Some("1"));
    assert!(
        !data.contains_key("b"),
        "fields the manager stopped applying are removed"
    );
    assert_eq!(
        data.get("other").map(String::as_str),
        Some("x"),
        "other managers' fields stay"
    );
    let e = api_err(
        cms.patch(
            "ssa",
            &pp,
            &Patch::Apply(json!({"metadata": {"name": "ssa"}})),
        )
        .await,
    );
    assert_eq!(e.code, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn status_subresource_is_separate() {
    let c = TestCluster::start(Scenario::default().with_operator(OperatorMode::Installed));
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    jobs.create(&PostParams::default(), &tfjob("st", 0, 1, "Never"))
        .await
        .unwrap();
    // Status in a main-resource patch is ignored; /status changes only status.
    let p = jobs
        .patch(
            "st",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"startTime": "2026-01-01T00:00:00Z"}})),
        )
        .await
        .unwrap();
    assert!(p.data.get("status").is_none());
    let p = jobs
        .patch_status("st", &PatchParams::default(), &Patch::Merge(json!({"spec": {"successPolicy": "AllWorkers"}, "status": {"conditions": [{"type": "Running", "status": "True"}]}})))
        .await
        .unwrap();
    assert_eq!(p.data["status"]["conditions"][0]["type"], "Running");
    assert!(p.data["spec"].get("successPolicy").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_webhook() {
    let c = TestCluster::start(
        Scenario::default()
            .with_operator(OperatorMode::Installed)
            .with_webhook_unavailable(),
    );
    let cl = client(&c).await;
    let e = api_err(
        tfjobs(&cl, "default")
            .create(&PostParams::default(), &tfjob("wh", 0, 1, "Never"))
            .await,
    );
    assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
    assert_eq!(
        e.message,
        "Internal error occurred: failed calling webhook \"validator.tfjob.training-operator.kubeflow.org\": failed to call webhook: Post \"https://training-operator.kubeflow.svc:443/validate-kubeflow-org-v1-tfjob?timeout=10s\": no endpoints available for service \"training-operator\""
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_mode_changes_at_runtime() {
    let c = TestCluster::start(Scenario::default().with_operator(OperatorMode::Installed));
    let cl = client(&c).await;
    let jobs = tfjobs(&cl, "default");
    jobs.create(&PostParams::default(), &tfjob("late", 0, 2, "Never"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        c.get("tfjobs", Some("default"), "late")
            .unwrap()
            .get("status")
            .is_none()
    );

    c.set_operator_mode(OperatorMode::Running);
    let dep = c
        .get("deployments", Some("kubeflow"), "training-operator")
        .unwrap();
    assert_eq!(dep["status"]["readyReplicas"], 1);
    eventually(5, || {
        c.get("tfjobs", Some("default"), "late")
            .filter(|j| condition_types(j).first().map(String::as_str) == Some("Created"))
    })
    .await;
    eventually(5, || {
        (c.list("pods", Some("default")).len() == 2).then_some(())
    })
    .await;

    c.set_operator_mode(OperatorMode::Absent);
    assert!(
        c.get("tfjobs", Some("default"), "late").is_none(),
        "deleting the CRD deletes its objects"
    );
    eventually(5, || {
        c.list("pods", Some("default")).is_empty().then_some(())
    })
    .await;
    assert_eq!(api_err(jobs.list(&ListParams::default()).await).code, 404);
}
