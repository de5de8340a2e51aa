use serde_json::{Value, json};

use super::*;

fn job(ns: Option<&str>, spec: Value) -> TFJob {
    let mut meta = json!({"name": "mnist"});
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": meta, "spec": spec
    }))
    .unwrap()
}

fn replica(n: i32) -> Value {
    json!({"replicas": n, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}})
}

fn tf_config_of(pod: &Pod) -> Option<String> {
    let c = pod
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == "tensorflow")?;
    let last = c.env.as_ref()?.last()?;
    (last.name == "TF_CONFIG").then(|| last.value.clone().unwrap())
}

#[test]
fn names_and_services_are_job_type_index() {
    let j = job(
        Some("team"),
        json!({"tfReplicaSpecs": {"PS": replica(1), "worker": replica(2)}}),
    );
    let m = expand(&j);
    assert_eq!(m.namespace, "team");
    let names: Vec<String> = m.pod_names();
    assert_eq!(names, ["mnist-ps-0", "mnist-worker-0", "mnist-worker-1"]);
    let w = &m.replicas[1];
    assert_eq!(
        (w.key, w.type_name.as_str(), w.lower.as_str()),
        ("worker", "Worker", "worker")
    );
    assert_eq!(m.service_name(w, 1), "mnist-worker-1");
    assert_eq!(m.address(w, 1), "mnist-worker-1.team.svc:2222");
    // A job with no namespace of its own goes where it is created.
    let j = job(None, json!({"tfReplicaSpecs": {"Worker": replica(2)}}));
    let m = expand(&j).in_namespace("ns").named("gen-xxxxx");
    assert_eq!(m.pod_name(&m.replicas[0], 0), "gen-xxxxx-worker-0");
    assert_eq!(
        m.address(&m.replicas[0], 1),
        "gen-xxxxx-worker-1.ns.svc:2222"
    );
    assert_eq!(expand(&j).namespace, "default");
}

#[test]
fn labels_are_the_operators_over_the_templates_with_the_master_role() {
    let mut w = replica(2);
    w["template"]["metadata"] =
        json!({"labels": {"team": "nlp", "training.kubeflow.org/replica-index": "9"}});
    let j = job(
        None,
        json!({"tfReplicaSpecs": {"PS": replica(1), "Worker": w}}),
    );
    let m = expand(&j);
    let (ps, worker) = (&m.replicas[0], &m.replicas[1]);
    let l0 = m.pod_labels(worker, 0);
    assert_eq!(l0["team"], "nlp");
    assert_eq!(l0[model::LABEL_REPLICA_INDEX], "0");
    assert_eq!(l0[model::LABEL_REPLICA_TYPE], "worker");
    assert_eq!(l0[model::LABEL_JOB_NAME], "mnist");
    assert_eq!(l0[model::LABEL_OPERATOR_NAME], "tfjob-controller");
    // Without a chief, worker 0 alone is the master role.
    assert_eq!(l0[model::LABEL_JOB_ROLE], "master");
    assert!(!m.pod_labels(worker, 1).contains_key(model::LABEL_JOB_ROLE));
    assert!(!m.pod_labels(ps, 0).contains_key(model::LABEL_JOB_ROLE));
    // Services select without job-role.
    assert_eq!(m.operator_labels(worker, 0).len(), 4);
    assert!(
        !m.operator_labels(worker, 0)
            .contains_key(model::LABEL_JOB_ROLE)
    );

    let j = job(
        None,
        json!({"tfReplicaSpecs": {"Chief": replica(1), "Worker": replica(2)}}),
    );
    let m = expand(&j);
    let chief = m.replica(ReplicaType::Chief).unwrap();
    let worker = m.replica(ReplicaType::Worker).unwrap();
    assert_eq!(m.pod_labels(chief, 0)[model::LABEL_JOB_ROLE], "master");
    assert!(!m.pod_labels(worker, 0).contains_key(model::LABEL_JOB_ROLE));
}

#[test]
fn ports_default_to_tfjob_port_2222_and_a_declared_one_is_kept() {
    let mut ps = replica(1);
    ps["template"]["spec"]["containers"][0]["ports"] =
        json!([{"name": "tfjob-port", "containerPort": 3333}]);
    let mut w = replica(1);
    // No tensorflow container: the port goes on the first (getDefaultContainerIndex).
    w["template"]["spec"]["containers"] =
        json!([{"name": "main", "image": "i"}, {"name": "side", "image": "i"}]);
    let j = job(None, json!({"tfReplicaSpecs": {"PS": ps, "Worker": w}}));
    let m = expand(&j);
    assert_eq!(m.replicas[0].port, 3333);
    assert_eq!(m.replicas[1].port, 2222);
    let ps_ports = m.pod_spec(&m.replicas[0]).containers[0]
        .ports
        .clone()
        .unwrap();
    assert_eq!(
        ps_ports.len(),
        1,
        "a declared tfjob-port is not added again"
    );
    assert_eq!(ps_ports[0].container_port, 3333);
    let w_spec = m.pod_spec(&m.replicas[1]);
    let p = &w_spec.containers[0].ports.as_ref().unwrap()[0];
    assert_eq!(
        (p.name.as_deref(), p.container_port),
        (Some("tfjob-port"), 2222)
    );
    assert!(w_spec.containers[1].ports.is_none());
    assert_eq!(m.address(&m.replicas[0], 0), "mnist-ps-0.default.svc:3333");
}

#[test]
fn exit_code_runs_as_never_and_the_default_is_never() {
    assert_eq!(pod_restart_policy(Some("ExitCode")), "Never");
    assert_eq!(pod_restart_policy(None), "Never");
    assert_eq!(pod_restart_policy(Some("OnFailure")), "OnFailure");
    assert_eq!(pod_restart_policy(Some("Always")), "Always");
    let mut w = replica(2);
    w["restartPolicy"] = json!("ExitCode");
    w["template"]["spec"]["restartPolicy"] = json!("Always");
    let j = job(None, json!({"tfReplicaSpecs": {"Worker": w}}));
    let m = expand(&j);
    let pod = m.pod(&m.replicas[0], 1);
    // The replica's policy overwrites the template's.
    assert_eq!(pod.spec.unwrap().restart_policy.as_deref(), Some("Never"));
}

#[test]
fn tf_config_of_ps_and_workers_is_the_operators_string() {
    let j = job(
        Some("ns3"),
        json!({"tfReplicaSpecs": {"PS": replica(1), "Worker": replica(2)}}),
    );
    let m = expand(&j);
    let pod = m.pod(&m.replicas[1], 1);
    assert_eq!(pod.metadata.name.as_deref(), Some("mnist-worker-1"));
    assert_eq!(pod.metadata.namespace.as_deref(), Some("ns3"));
    assert_eq!(
        tf_config_of(&pod).unwrap(),
        r#"{"cluster":{"ps":["mnist-ps-0.ns3.svc:2222"],"worker":["mnist-worker-0.ns3.svc:2222","mnist-worker-1.ns3.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#
    );
    let ps = m.pod(&m.replicas[0], 0);
    assert!(
        tf_config_of(&ps)
            .unwrap()
            .ends_with(r#""task":{"type":"ps","index":0},"environment":"cloud"}"#)
    );
}

#[test]
fn tf_config_lists_chief_and_evaluator_too() {
    // training-operator's genClusterSpec lists every key (pod_test.go expects "evaluator").
    let j = job(
        Some("ns3"),
        json!({"tfReplicaSpecs": {"Chief": replica(1), "Evaluator": replica(1), "Worker": replica(1)}}),
    );
    let m = expand(&j);
    let eval = m.replica(ReplicaType::Evaluator).unwrap();
    let v: Value = serde_json::from_str(&m.tf_config(eval, 0).unwrap()).unwrap();
    assert_eq!(
        v["cluster"],
        json!({
            "chief": ["mnist-chief-0.ns3.svc:2222"],
            "evaluator": ["mnist-evaluator-0.ns3.svc:2222"],
            "worker": ["mnist-worker-0.ns3.svc:2222"]
        })
    );
    assert_eq!(v["task"], json!({"type": "evaluator", "index": 0}));
}

#[test]
fn a_single_replica_gets_no_tf_config() {
    let j = job(None, json!({"tfReplicaSpecs": {"Worker": replica(1)}}));
    let m = expand(&j);
    assert!(!m.distributed);
    assert_eq!(m.tf_config(&m.replicas[0], 0), None);
    assert_eq!(tf_config_of(&m.pod(&m.replicas[0], 0)), None);
    // An unknown key counts for no TF_CONFIG (isDistributed sums the known types) but gets pods.
    let j = job(
        None,
        json!({"tfReplicaSpecs": {"Worker": replica(1), "Tuner": replica(2)}}),
    );
    let m = expand(&j);
    assert!(!m.distributed);
    assert_eq!(
        m.pod_names(),
        ["mnist-tuner-0", "mnist-tuner-1", "mnist-worker-0"]
    );
    assert_eq!(m.expected()["Tuner"], 2);
}

#[test]
fn dynamic_workers_get_the_sparse_form() {
    let j = job(
        Some("ns"),
        json!({"enableDynamicWorker": true, "tfReplicaSpecs": {"PS": replica(2), "Worker": replica(3)}}),
    );
    let m = expand(&j);
    let w: Value = serde_json::from_str(&m.tf_config(&m.replicas[1], 2).unwrap()).unwrap();
    assert_eq!(
        w,
        json!({"cluster": {"worker": {"2": "mnist-worker-2.ns.svc:2222"},
                           "ps": ["mnist-ps-0.ns.svc:2222", "mnist-ps-1.ns.svc:2222"]},
               "task": {"type": "worker", "index": 2}})
    );
    assert_eq!(
        m.tf_config(&m.replicas[0], 1).unwrap(),
        r#"{"cluster":{"worker":{},"ps":["mnist-ps-1.ns.svc:2222"]},"task":{"type":"ps","index":1}}"#
    );
}

#[test]
fn expectations_count_replicas_with_the_default_of_one() {
    let j = job(
        None,
        json!({"tfReplicaSpecs": {
            "PS": {"template": {}}, "Worker": replica(3), "Evaluator": replica(-1)}}),
    );
    let m = expand(&j);
    assert_eq!(
        m.expected(),
        BTreeMap::from([
            ("Evaluator".into(), 0),
            ("PS".into(), 1),
            ("Worker".into(), 3)
        ])
    );
    let huge = job(
        None,
        json!({"tfReplicaSpecs": {"Worker": replica(i32::MAX)}}),
    );
    assert_eq!(
        expand(&huge).pod_names().len(),
        model::MAX_LISTED_PODS_PER_TYPE as usize
    );
}
