//! The I/O half's pure helpers: reading CRD and operator state, Secrets without values, which
//! logs to read, job-name forms.

use super::*;

#[test]
fn operator_found_by_image_or_label() {
    let dep = |ns: &str, name: &str, image: &str, labels: Value, ready: i32| -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {}, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "m", "image": image}]}}},
            "status": {"readyReplicas": ready}
        }))
        .unwrap()
    };
    let img = "ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489";
    assert_eq!(
        operator_state(&[dep("a", "web", "nginx", json!({}), 1)]),
        OperatorState::NotFound
    );
    assert_eq!(
        operator_state(&[dep("kubeflow", "training-operator", img, json!({}), 1)]),
        OperatorState::Running {
            namespace: "kubeflow".into(),
            name: "training-operator".into()
        }
    );
    assert_eq!(
        operator_state(&[dep(
            "ops",
            "tfo",
            "mirror/op:1",
            json!({"control-plane": "kubeflow-training-operator"}),
            0
        )]),
        OperatorState::NotReady {
            namespace: "ops".into(),
            name: "tfo".into(),
            ready: 0,
            desired: 1
        }
    );
    // A ready one wins over a stale one.
    assert!(matches!(
        operator_state(&[
            dep("old", "training-operator", img, json!({}), 0),
            dep("kubeflow", "training-operator", img, json!({}), 1)
        ]),
        OperatorState::Running { namespace, .. } if namespace == "kubeflow"
    ));
}

#[test]
fn crd_state_reads_served_versions_and_established() {
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "tfjobs.kubeflow.org"},
        "spec": {"group": "kubeflow.org", "scope": "Namespaced",
                 "names": {"plural": "tfjobs", "kind": "TFJob"},
                 "versions": [{"name": "v1", "served": true, "storage": true},
                              {"name": "v1beta2", "served": false, "storage": false}]},
        "status": {"conditions": [{"type": "Established", "status": "True"}]}
    }))
    .unwrap();
    assert_eq!(
        crd_state(&crd),
        CrdState::Present {
            established: true,
            served_versions: vec!["v1".into()]
        }
    );
}

#[test]
fn snapshot_secrets_keep_key_names_not_values() {
    let s = without_values(secret("s", &[("api-key", FAKE_KEY), ("empty", "")]));
    let text = serde_json::to_string(&s).unwrap();
    assert!(!text.contains("DO-NOT-LEAK"));
    let data = s.data.unwrap();
    assert_eq!(data["api-key"].0, b"*");
    assert!(data["empty"].0.is_empty());
}

#[test]
fn logs_read_for_crashing_pods_first_and_capped() {
    let mut pods: Vec<Pod> = (0..6)
        .map(|i| serde_json::from_value(pod_json("worker", i)).unwrap())
        .collect();
    pods[4] = serde_json::from_value(crashed(pod_json("worker", 4), 1, "Error", 3)).unwrap();
    let t = log_targets(&pods);
    assert_eq!(t.len(), 3);
    assert_eq!(
        t[0],
        (
            "tf-dist-train-worker-4".to_string(),
            "tensorflow".to_string(),
            true
        )
    );
    assert_eq!(t[1].0, "tf-dist-train-worker-0");
}

#[test]
fn job_not_found() {
    let mut s = healthy();
    s.job = None;
    s.pods.clear();
    let d = diagnose(&s);
    assert_eq!(d.state, "NotFound");
    let f = only_fail(&d, Layer::Controller);
    assert_eq!(f.summary, "TFJob default/tf-dist-train not found");
    assert_eq!(
        f.next_step.as_deref(),
        Some("list the jobs: kubectl get tfjobs -n default")
    );
    match outcome(&s, &d) {
        Err(Error::NotFound(m)) => assert!(m.contains("kubectl get tfjobs -n default")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn compact_replica_lists() {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(compact(&v(&["j-worker-0", "j-worker-1"])), "j-worker-0, -1");
    assert_eq!(compact(&v(&["j-worker-0", "j-ps-0"])), "j-worker-0, j-ps-0");
}

#[test]
fn distributed_pods_without_tf_config() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created", "Running"]);
    let pods = (0..2)
        .map(|i| {
            let mut p = pod_json("worker", i);
            p["spec"]["containers"][0] = tf_container();
            p
        })
        .collect();
    set_pods(&mut s, pods);
    let d = diagnose(&s);
    let w: Vec<_> = of(&d, Layer::Runtime)
        .into_iter()
        .filter(|f| f.verdict == Grade::Warning)
        .collect();
    assert_eq!(w.len(), 1);
    assert!(w[0].summary.starts_with("TF_CONFIG is missing"));
    assert_eq!(w[0].replicas.len(), 2);
}

#[test]
fn restarted_but_running_again_is_a_warning() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created", "Running"]);
    let mut p = pod_json("worker", 0);
    p["status"]["containerStatuses"][0]["restartCount"] = json!(1);
    p["status"]["containerStatuses"][0]["lastState"] =
        json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}});
    set_pods(&mut s, vec![p]);
    let d = diagnose(&s);
    assert!(d.first_failure().is_none(), "{:#?}", d.findings);
    let r = of(&d, Layer::Runtime);
    // One grade for the layer (issue 61 item 11): the warning, no `[ok]` row beside it; the
    // pods' state (without "no restarts") is its first line of evidence.
    assert_eq!(r.len(), 1, "{r:#?}");
    assert_eq!(r[0].verdict, Grade::Warning);
    assert!(
        r[0].summary
            .starts_with("OOMKilled: container tensorflow of tf-dist-train-worker-0")
    );
    assert_eq!(r[0].evidence[0], "1/1 pods Running");
}

#[test]
fn failed_create_service_event() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created"]);
    s.services.clear();
    s.job_events.push(event(
        "TFJob",
        JOB,
        "FailedCreateService",
        "Error creating: failed to find the port",
    ));
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Controller);
    assert_eq!(
        f.summary,
        "the operator cannot create services: Error creating: failed to find the port"
    );
    let o = only_fail(&d, Layer::Objects);
    assert_eq!(o.summary, "2/2 pods, 0/2 services");
}

#[test]
fn pods_no_scheduler_picked_up() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created"]);
    let pods = (0..2)
        .map(|i| {
            let mut p = pod_json("worker", i);
            p["metadata"]["creationTimestamp"] = json!(ago(90));
            p["spec"].as_object_mut().unwrap().remove("nodeName");
            p["spec"]["schedulerName"] = json!("volcano");
            p["status"] = json!({"phase": "Pending"});
            p
        })
        .collect();
    set_pods(&mut s, pods);
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Scheduling);
    assert_eq!(
        f.summary,
        "2 pods not picked up by scheduler \"volcano\" after 30s"
    );
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("is volcano installed")
    );
    assert_eq!(f.replicas.len(), 2);
}

#[test]
fn stored_base_url_is_not_treated_as_secret() {
    let mut v = job_json(&[("Worker", 1)], &["Created", "Running"]);
    v["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "TAOTOKEN_BASE_URL", "value": "https://taotoken.net/api/v1"}]);
    let mut s = healthy_with(&[("Worker", 1)], &[]);
    s.job = Some(to_job(v));
    s.secrets.insert(
        "taotoken-secret".into(),
        Some(secret(
            "taotoken-secret",
            &[
                ("api-key", FAKE_KEY),
                ("base-url", "https://taotoken.net/api/v1"),
            ],
        )),
    );
    let text = render_text(&diagnose(&s), false);
    assert!(
        text.contains("TAOTOKEN_BASE_URL=https://taotoken.net/api/v1 ends in /v1"),
        "{text}"
    );
}

#[test]
fn suspended_by_kueue_points_at_the_workload() {
    let mut v = job_json(&[("Worker", 2)], &["Created", "Suspended"]);
    v["spec"]["runPolicy"] = json!({"suspend": true});
    v["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "team-a"});
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.job = Some(to_job(v));
    s.pods.clear();
    s.services.clear();
    let d = diagnose(&s);
    // Kueue's suspension is no controller problem: the Queue layer says why it waits.
    let f = of(&d, Layer::Controller)
        .into_iter()
        .find(|f| f.verdict == Grade::Info)
        .unwrap();
    assert_eq!(
        f.evidence,
        vec!["queued in Kueue LocalQueue \"team-a\" (kueue.x-k8s.io/queue-name)"]
    );
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("kubectl get workloads.kueue.x-k8s.io -n default")
    );
}

#[test]
fn compact_caps_long_lists() {
    let names: Vec<String> = (0..25).map(|i| format!("j-worker-{i}")).collect();
    let c = compact(&names);
    assert!(c.starts_with("j-worker-0, -1, -2"));
    assert!(c.ends_with(", -19 … and 5 more"), "{c}");
}

#[test]
fn a_young_job_with_a_broken_operator_is_not_waiting_to_be_picked_up() {
    let mut v = job_json(&[("Worker", 2)], &[]);
    v["metadata"]["creationTimestamp"] = json!(ago(2));
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.job = Some(to_job(v));
    s.pods.clear();
    s.services.clear();
    s.operator = OperatorState::NotReady {
        namespace: "kubeflow".into(),
        name: "training-operator".into(),
        ready: 0,
        desired: 1,
    };
    let d = diagnose(&s);
    let controller = of(&d, Layer::Controller);
    assert!(
        controller
            .iter()
            .all(|f| !f.summary.contains("picking it up")),
        "{controller:#?}"
    );
    assert!(
        controller
            .iter()
            .any(|f| f.verdict == Grade::Fail && f.summary.contains("not reconciling this job")),
        "{controller:#?}"
    );
    assert_eq!(d.state, crate::model::STATE_NOT_RECONCILED);
}
