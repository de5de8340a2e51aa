use super::*;
use crate::cluster::ConnectionOptions;
use crate::pipeline::render::{RenderOptions, prepare};
use serde_json::{Value, json};

fn article(ns: Option<&str>) -> TFJob {
    let kube = ConnectionOptions {
        namespace: ns.map(String::from),
        ..Default::default()
    };
    let args = RenderOptions {
        name: Some("tf-dist-train".into()),
        image: Some("tensorflow/tensorflow:2.13.0-gpu".into()),
        ps: Some(1),
        workers: Some(3),
        gpus: Some(1),
        command: vec!["python".into(), "-m".into(), "trainer.task".into()],
        ..Default::default()
    };
    prepare(&kube, &args).unwrap().job
}

fn from_json(v: Value) -> TFJob {
    serde_json::from_value(v).unwrap()
}

/// What the kubelet would give a container: env walked in order, fieldRefs read from the pod,
/// each value expanded against the variables above it only.
fn container_env(c: &Value, pod: &Value) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for e in c["env"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().unwrap().to_string();
        let v = if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            match path {
                "metadata.namespace" => pod["metadata"]["namespace"].as_str().map(String::from),
                p => {
                    let (map, key) = p
                        .strip_prefix("metadata.annotations['")
                        .map(|k| ("annotations", k))
                        .or_else(|| p.strip_prefix("metadata.labels['").map(|k| ("labels", k)))
                        .unwrap();
                    pod["metadata"][map][key.trim_end_matches("']")]
                        .as_str()
                        .map(String::from)
                }
            }
        } else if e["valueFrom"].is_object() {
            Some("<secret>".into())
        } else {
            let snapshot = env.clone();
            Some(tfconfig::expand(e["value"].as_str().unwrap_or(""), |n| {
                snapshot.get(n).cloned()
            }))
        };
        env.insert(name, v.unwrap_or_default());
    }
    env
}

/// Every pod the Job controller would make, as (type, index, pod metadata, tensorflow container).
fn pods(js: &Value, name: &str, ns: &str) -> Vec<(String, i64, Value, Value)> {
    let mut out = Vec::new();
    for rj in js["spec"]["replicatedJobs"].as_array().unwrap() {
        let rname = rj["name"].as_str().unwrap();
        let spec = &rj["template"]["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(spec["completions"], spec["parallelism"]);
        assert_eq!(rj["replicas"], 1);
        for i in 0..spec["completions"].as_i64().unwrap() {
            let meta = json!({"namespace": ns,
                "labels": {"jobset.sigs.k8s.io/jobset-name": name},
                "annotations": {"batch.kubernetes.io/job-completion-index": i.to_string()}});
            let c = spec["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == "tensorflow")
                .unwrap()
                .clone();
            out.push((rname.to_string(), i, json!({"metadata": meta}), c));
        }
    }
    out
}

/// For every pod: TF_CONFIG after expansion is JSON listing every pod's DNS name, and its task
/// is the pod's own type and index.
fn assert_every_pod_sees_itself(js: &Value, name: &str, ns: &str) {
    let pods = pods(js, name, ns);
    let expected: std::collections::BTreeSet<String> = pods
        .iter()
        .map(|(t, i, _, _)| format!("{name}-{t}-0-{i}.{name}.{ns}.svc:2222"))
        .collect();
    for (t, i, pod, c) in &pods {
        let env = container_env(c, pod);
        let tf: Value = serde_json::from_str(&env["TF_CONFIG"])
            .unwrap_or_else(|e| panic!("{t}-{i}: {e}: {}", env["TF_CONFIG"]));
        assert_eq!(tf["task"], json!({"type": t, "index": i}), "{t}-{i}");
        assert_eq!(tf["environment"], "cloud");
        let listed: std::collections::BTreeSet<String> = tf["cluster"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|v| v.as_array().unwrap().iter())
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(listed, expected, "{t}-{i}");
    }
}

#[test]
fn the_articles_job_every_pod_reads_its_own_task_and_every_peer() {
    let e = export(&article(Some("team-a")), None).unwrap();
    let js = serde_json::to_value(&e.jobset).unwrap();
    assert_eq!(js["apiVersion"], "jobset.x-k8s.io/v1alpha2");
    assert_eq!(js["kind"], "JobSet");
    assert_eq!(js["metadata"]["name"], "tf-dist-train");
    let names: Vec<&str> = js["spec"]["replicatedJobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ps", "worker"]);
    assert_every_pod_sees_itself(&js, "tf-dist-train", "team-a");
    // No chief: worker 0 decides, as the operator's IsWorker0Completed.
    assert_eq!(
        js["spec"]["successPolicy"],
        json!({"operator": "All", "targetReplicatedJobs": ["worker"]})
    );
    let worker = &js["spec"]["replicatedJobs"][1]["template"]["spec"];
    assert_eq!(
        worker["successPolicy"],
        json!({"rules": [{"succeededIndexes": "0"}]})
    );
    assert!(js["spec"]["replicatedJobs"][0]["template"]["spec"]["successPolicy"].is_null());
}

#[test]
fn env_keeps_the_gateway_first_and_declares_the_index_before_tf_config() {
    let e = export(&article(Some("default")), None).unwrap();
    let js = serde_json::to_value(&e.jobset).unwrap();
    let c =
        &js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0];
    let names: Vec<&str> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "TAOTOKEN_API_KEY",
            "TAOTOKEN_BASE_URL",
            "JOB_COMPLETION_INDEX",
            "TF_CONFIG"
        ]
    );
    assert_eq!(
        c["env"][0]["valueFrom"]["secretKeyRef"]["name"],
        "taotoken-secret"
    );
    assert_eq!(
        c["env"][2]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    assert_eq!(
        c["ports"][0],
        json!({"name": "tfjob-port", "containerPort": 2222})
    );
    assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "1");
}

#[test]
fn an_unknown_namespace_and_a_generated_name_are_read_in_the_pod() {
    let mut job = article(None);
    assert!(job.metadata.namespace.is_none());
    job.metadata.name = None;
    job.metadata.generate_name = Some("tf-".into());
    let e = export(&job, None).unwrap();
    let js = serde_json::to_value(&e.jobset).unwrap();
    assert_eq!(js["metadata"]["generateName"], "tf-");
    // What the API server and the controller make of it: name tf-x7k2p in namespace ml.
    assert_every_pod_sees_itself(&js, "tf-x7k2p", "ml");
}

#[test]
fn a_single_pod_job_gets_no_tf_config_and_tensorflow_alone_gets_it() {
    let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "tf:2"}]}}}}}}));
    let js = serde_json::to_value(export(&job, None).unwrap().jobset).unwrap();
    let env = &js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]
        [0]["env"];
    assert!(env.is_null(), "{env}");

    let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "two", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "sidecar", "image": "s:1"},
            {"name": "tensorflow", "image": "tf:2", "ports": [{"name": "tfjob-port", "containerPort": 3333}]}]}}}}}}));
    let js = serde_json::to_value(export(&job, None).unwrap().jobset).unwrap();
    let cs = &js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"];
    assert!(cs[0]["env"].is_null());
    let tf = cs[1]["env"][1]["value"].as_str().unwrap();
    assert!(tf.contains("two-worker-0-1.two.default.svc:3333"), "{tf}");
}

#[test]
fn a_chief_decides_success_and_all_workers_waits_for_every_worker() {
    let tmpl = json!({"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}});
    let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "c"},
        "spec": {"tfReplicaSpecs": {"Chief": {"template": tmpl}, "Worker": {"replicas": 2, "template": tmpl}}}}));
    let js = serde_json::to_value(export(&job, Some("default")).unwrap().jobset).unwrap();
    assert_eq!(
        js["spec"]["successPolicy"]["targetReplicatedJobs"],
        json!(["chief"])
    );
    assert!(js["spec"]["replicatedJobs"][1]["template"]["spec"]["successPolicy"].is_null());
    assert_every_pod_sees_itself(&js, "c", "default");

    let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "w"},
        "spec": {"successPolicy": "AllWorkers", "tfReplicaSpecs": {"Worker": {"replicas": 2, "template": tmpl}}}}));
    let js = serde_json::to_value(export(&job, Some("default")).unwrap().jobset).unwrap();
    assert_eq!(
        js["spec"]["successPolicy"]["targetReplicatedJobs"],
        json!(["worker"])
    );
    assert!(js["spec"]["replicatedJobs"][0]["template"]["spec"]["successPolicy"].is_null());
}

#[test]
fn restart_policies_map_to_job_retries() {
    let tmpl = json!({"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}});
    let rjob = |policy: Option<&str>, backoff: Option<i32>| {
        let mut spec = json!({"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": tmpl}}});
        if let Some(p) = policy {
            spec["tfReplicaSpecs"]["Worker"]["restartPolicy"] = json!(p);
        }
        if let Some(b) = backoff {
            spec["runPolicy"] = json!({"backoffLimit": b});
        }
        let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "r"}, "spec": spec}));
        let e = export(&job, Some("default")).unwrap();
        let js = serde_json::to_value(&e.jobset).unwrap();
        (
            js["spec"]["replicatedJobs"][0]["template"]["spec"].clone(),
            e.notes,
        )
    };
    // The operator's default Never: the first failed pod fails the job.
    let (s, _) = rjob(None, None);
    assert_eq!(s["backoffLimit"], 0);
    assert_eq!(s["template"]["spec"]["restartPolicy"], "Never");
    let (s, _) = rjob(Some("ExitCode"), None);
    assert_eq!(s["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(s["backoffLimit"], i32::MAX);
    let rule = &s["podFailurePolicy"]["rules"][0];
    assert_eq!(rule["action"], "FailJob");
    assert_eq!(rule["onExitCodes"]["containerName"], "tensorflow");
    assert_eq!(rule["onExitCodes"]["operator"], "In");
    let codes = rule["onExitCodes"]["values"].as_array().unwrap();
    assert_eq!(
        (codes.len(), &codes[0], &codes[126]),
        (127, &json!(1), &json!(127))
    );
    let (s, notes) = rjob(Some("OnFailure"), Some(3));
    assert_eq!(s["template"]["spec"]["restartPolicy"], "OnFailure");
    assert_eq!(s["backoffLimit"], 3);
    assert!(
        notes
            .iter()
            .any(|n| n.field == "spec.runPolicy.backoffLimit")
    );
    let (s, notes) = rjob(Some("Always"), None);
    assert_eq!(s["template"]["spec"]["restartPolicy"], "OnFailure");
    assert_eq!(s["backoffLimit"], i32::MAX);
    assert!(
        notes
            .iter()
            .any(|n| n.field == "spec.tfReplicaSpecs.Worker.restartPolicy")
    );
}

#[test]
fn run_policy_and_metadata_carry_over_and_the_rest_is_named() {
    let tmpl = json!({"metadata": {"labels": {"team": "nlp"}},
        "spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}});
    let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "k", "namespace": "ml",
            "labels": {"kueue.x-k8s.io/queue-name": "team-q", "app": "x"},
            "annotations": {"note": "kept", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {"enableDynamicWorker": true,
            "runPolicy": {"ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 3600,
                "suspend": true, "managedBy": "kueue.x-k8s.io/multikueue",
                "schedulingPolicy": {"minAvailable": 3, "queue": "gpu"}},
            "tfReplicaSpecs": {"PS": {"template": tmpl}, "Worker": {"replicas": 2, "template": tmpl}}}}));
    let e = export(&job, None).unwrap();
    let js = serde_json::to_value(&e.jobset).unwrap();
    assert_eq!(
        js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "team-q"
    );
    // The TFJob's annotations are kept, and the plugin's mark is added.
    assert_eq!(
        js["metadata"]["annotations"],
        json!({"note": "kept", "kubectl-tfjob.kubeflow.org/exported-from": "TFJob"})
    );
    assert_eq!(js["spec"]["ttlSecondsAfterFinished"], 60);
    assert_eq!(js["spec"]["suspend"], true);
    assert_eq!(js["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
    let w = &js["spec"]["replicatedJobs"][1]["template"]["spec"];
    assert_eq!(w["activeDeadlineSeconds"], 3600);
    assert_eq!(w["template"]["metadata"]["labels"]["team"], "nlp");
    let fields: Vec<&str> = e.notes.iter().map(|n| n.field.as_str()).collect();
    for f in [
        "spec.runPolicy.cleanPodPolicy",
        "services",
        "labels",
        "spec.enableDynamicWorker",
        "spec.runPolicy.activeDeadlineSeconds",
        "spec.runPolicy.schedulingPolicy",
        "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration",
    ] {
        assert!(fields.contains(&f), "{f} not named: {fields:?}");
    }
    let gang = e
        .notes
        .iter()
        .find(|n| n.field == "spec.runPolicy.schedulingPolicy")
        .unwrap();
    assert!(
        gang.message.starts_with("minAvailable, queue:"),
        "{}",
        gang.message
    );
}

#[test]
fn a_conflicting_index_variable_is_refused_with_its_field() {
    let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "tf:2", "env": [{"name": "JOB_COMPLETION_INDEX", "value": "7"}]}]}}}}}}));
    let r = export(&job, None).unwrap_err();
    assert_eq!(
        r[0].field,
        "spec.tfReplicaSpecs.Worker.template.spec.containers[tensorflow].env.JOB_COMPLETION_INDEX"
    );
}

#[test]
fn zero_replicas_make_no_replicated_job_but_stay_in_tf_config() {
    let tmpl = json!({"spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]}});
    let job = from_json(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "z", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Evaluator": {"replicas": 0, "template": tmpl}, "Worker": {"replicas": 2, "template": tmpl}}}}));
    let e = export(&job, None).unwrap();
    let js = serde_json::to_value(&e.jobset).unwrap();
    assert_eq!(js["spec"]["replicatedJobs"].as_array().unwrap().len(), 1);
    let tf = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]
        [0]["env"][1]["value"]
        .as_str()
        .unwrap();
    assert!(tf.contains("\"evaluator\":[]"), "{tf}");
    assert!(
        e.notes
            .iter()
            .any(|n| n.field == "spec.tfReplicaSpecs.Evaluator.replicas")
    );
}

/// Issue 40 item 9: `COPY=$(TF_CONFIG)` after the user's own TF_CONFIG gets the user's value
/// in the operator's pods (the kubelet expands against the entries above); the export keeps
/// that, and every pod's TF_CONFIG is still the operator's.
#[test]
fn a_later_reference_to_the_users_tf_config_expands_as_in_the_operators_pods() {
    let env = |extra: Value| {
        let mut v = serde_json::to_value(article(Some("default"))).unwrap();
        for t in ["PS", "Worker"] {
            let e = &mut v["spec"]["tfReplicaSpecs"][t]["template"]["spec"]["containers"][0]["env"];
            let mut list = e.as_array().cloned().unwrap_or_default();
            list.extend(extra.as_array().unwrap().iter().cloned());
            *e = Value::Array(list);
        }
        from_json(v)
    };
    let job = env(json!([{"name": "TF_CONFIG", "value": "{\"mine\": 1}"},
        {"name": "COPY", "value": "saved=$(TF_CONFIG)"},
        {"name": "ESCAPED", "value": "$$(TF_CONFIG)"}]));
    let js = serde_json::to_value(export(&job, None).unwrap().jobset).unwrap();
    for (t, i, pod, c) in pods(&js, "tf-dist-train", "default") {
        let env = container_env(&c, &pod);
        assert_eq!(env["COPY"], "saved={\"mine\": 1}", "{t}-{i}");
        assert_eq!(env["ESCAPED"], "$(TF_CONFIG)", "{t}-{i}");
    }
    assert_every_pod_sees_itself(&js, "tf-dist-train", "default");
    // Without a reader the user's TF_CONFIG is dead, and dropped.
    let job = env(json!([{"name": "TF_CONFIG", "value": "x"},
        {"name": "ESCAPED", "value": "$$(TF_CONFIG)"}]));
    let js = serde_json::to_value(export(&job, None).unwrap().jobset).unwrap();
    let c =
        &js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0];
    let n = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "TF_CONFIG")
        .count();
    assert_eq!(n, 1, "{}", c["env"]);
}
