//! One positive and one negative case per rule, on small JSON objects.

use super::*;
use serde_json::json;

/// A valid job (after gateway injection), as render produces it.
fn good() -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "mnist"},
        "spec": {"tfReplicaSpecs": {
            "PS": {"replicas": 1, "restartPolicy": "OnFailure", "template": {
                "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu",
                    "resources": {"limits": {"cpu": 2, "memory": "4Gi"}}}]}}},
            "Worker": {"replicas": 3, "restartPolicy": "OnFailure", "template": {
                "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu",
                    "env": [
                        {"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "api-key"}}},
                        {"name": "TAOTOKEN_BASE_URL", "value": "https://taotoken.net/api"}],
                    "resources": {"limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 1}}}]}}}
        }}
    })
}

fn run(v: &Value) -> Report {
    validate_value(v, &Inputs::default())
}

fn rules_of(r: &Report, sev: Severity) -> Vec<&'static str> {
    r.findings
        .iter()
        .filter(|f| f.severity == sev)
        .map(|f| f.rule)
        .collect()
}

/// Applies `edit` to a copy of the good job and returns the findings.
fn with(edit: impl FnOnce(&mut Value)) -> Report {
    let mut v = good();
    edit(&mut v);
    run(&v)
}

fn worker(v: &mut Value) -> &mut Value {
    &mut v["spec"]["tfReplicaSpecs"]["Worker"]
}

fn wc(v: &mut Value) -> &mut Value {
    &mut worker(v)["template"]["spec"]["containers"][0]
}

fn has(r: &Report, rule: &str, path_part: &str) -> bool {
    r.findings
        .iter()
        .any(|f| f.rule == rule && f.path.contains(path_part))
}

#[test]
fn the_good_job_has_no_errors_or_warnings() {
    let r = run(&good());
    assert!(
        rules_of(&r, Severity::Error).is_empty(),
        "{}",
        r.render_text()
    );
    assert!(
        rules_of(&r, Severity::Warning).is_empty(),
        "{}",
        r.render_text()
    );
}

#[test]
fn identity() {
    let r = with(|v| v["apiVersion"] = json!("kubeflow.org/v2"));
    assert!(has(&r, "api-version", "apiVersion"));
    let r = with(|v| v["kind"] = json!("TfJob"));
    assert!(
        r.findings.iter().any(
            |f| f.rule == "kind" && f.hint.as_deref() == Some("kind: TFJob (the case matters)")
        )
    );
    let r = run(&json!([1, 2]));
    assert!(r.has_errors());
}

#[test]
fn webhook_name() {
    for bad in ["Mnist", "1mnist", "mn_ist", "mnist-"] {
        let r = with(|v| v["metadata"]["name"] = json!(bad));
        assert!(has(&r, "webhook/name", "metadata.name"), "{bad}");
    }
    // No name at all: the API server's "name or generateName is required".
    let r = with(|v| v["metadata"]["name"] = json!(""));
    assert!(has(&r, "name", "metadata.name"));
    let r = with(|v| v["metadata"].as_object_mut().unwrap().clear());
    assert!(has(&r, "name", "metadata.name"));
}

/// generateName: the API server completes the prefix with 5 characters before admission
/// (k8s.io/apiserver storage/names/generate.go), so the webhook checks `prefix + 5 chars`.
#[test]
fn generate_name_is_checked_as_the_name_it_becomes() {
    let gen_name = |prefix: &str| {
        with(|v| {
            let m = v["metadata"].as_object_mut().unwrap();
            m.remove("name");
            m.insert("generateName".into(), json!(prefix));
        })
    };
    // Kubeflow's docs and Pipelines submit this way.
    for ok in ["mnist-", "tfjob", "a"] {
        let r = gen_name(ok);
        assert!(!r.has_errors(), "{ok}: {}", r.render_text());
    }
    // Must start with a letter (DNS-1035), and no characters outside [a-z0-9-].
    for bad in ["1mnist-", "Mnist-", "mn.ist-", "-x"] {
        let r = gen_name(bad);
        assert!(has(&r, "webhook/name", "metadata.generateName"), "{bad}");
    }
    // The pod-name budget uses the generated length: 50 + 5 = 55, "-worker-2" makes 64.
    let r = gen_name(&"a".repeat(50));
    let f = r.findings.iter().find(|f| f.rule == "name-length").unwrap();
    assert_eq!(f.path, "metadata.generateName");
    assert!(f.message.contains("64 characters"), "{}", f.message);
    assert!(
        f.hint.as_deref().unwrap().contains("to 49 or fewer"),
        "{:?}",
        f.hint
    );
    // 49 + 5 + "-worker-2" = 63: fits. A prefix over 58 is cut first, still too long here.
    assert!(has(
        &gen_name(&"a".repeat(70)),
        "name-length",
        "metadata.generateName"
    ));
    assert!(!gen_name(&"a".repeat(49)).has_errors());
    // name wins over generateName.
    let r = with(|v| v["metadata"]["generateName"] = json!("Bad_"));
    assert!(!r.has_errors(), "{}", r.render_text());
}

#[test]
fn webhook_replica_specs_and_containers() {
    let r = with(|v| {
        v["spec"].as_object_mut().unwrap().remove("tfReplicaSpecs");
    });
    assert!(has(&r, "webhook/replica-specs", "spec.tfReplicaSpecs"));

    // "no containers" gives two errors upstream.
    let r = with(|v| worker(v)["template"]["spec"]["containers"] = json!([]));
    assert!(has(
        &r,
        "webhook/containers",
        "Worker.template.spec.containers"
    ));
    assert!(has(
        &r,
        "webhook/tensorflow-container",
        "Worker.template.spec.containers"
    ));

    let r = with(|v| {
        wc(v)
            .as_object_mut()
            .unwrap()
            .remove("image")
            .map(|_| ())
            .unwrap()
    });
    assert!(has(
        &r,
        "webhook/image",
        "Worker.template.spec.containers[0].image"
    ));

    let r = with(|v| wc(v)["name"] = json!("trainer"));
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "webhook/tensorflow-container")
        .unwrap();
    assert!(f.hint.as_deref().unwrap().contains("\"trainer\""));
}

#[test]
fn webhook_single_chief_and_managed_by() {
    let r = with(|v| {
        let w = worker(v).clone();
        v["spec"]["tfReplicaSpecs"]["Chief"] = w.clone();
        v["spec"]["tfReplicaSpecs"]["Master"] = w;
    });
    assert!(has(&r, "webhook/chief", "spec.tfReplicaSpecs"));
    let r = with(|v| v["spec"]["runPolicy"] = json!({"managedBy": "me"}));
    assert!(has(&r, "webhook/managed-by", "managedBy"));
    let r = with(|v| v["spec"]["runPolicy"] = json!({"managedBy": "kueue.x-k8s.io/multikueue"}));
    assert!(!r.has_errors());
}

#[test]
fn replica_type_keys() {
    let r = with(|v| {
        let s = v["spec"]["tfReplicaSpecs"].as_object_mut().unwrap();
        let w = s.remove("Worker").unwrap();
        s.insert("worker".into(), w);
    });
    assert!(rules_of(&r, Severity::Warning).contains(&"replica-type-case"));
    assert!(!r.has_errors(), "{}", r.render_text());

    let r = with(|v| {
        let s = v["spec"]["tfReplicaSpecs"].as_object_mut().unwrap();
        let w = s.remove("Worker").unwrap();
        s.insert("Wokrer".into(), w);
    });
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "replica-type")
        .unwrap();
    // The webhook does not check keys, so the cluster stores the job: a warning.
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.hint.as_deref(), Some("did you mean Worker?"));
    assert!(f.message.contains("PS, Worker"));
}

#[test]
fn replicas_and_restart_policy() {
    let r = with(|v| worker(v)["replicas"] = json!(-1));
    assert!(has(&r, "replicas", "Worker.replicas"));
    let r = with(|v| worker(v)["replicas"] = json!(1e12));
    assert!(has(&r, "schema", "Worker.replicas"), "{}", r.render_text());
    let r = with(|v| worker(v)["replicas"] = json!(4_000_000_000i64));
    assert!(has(&r, "schema", "Worker.replicas"), "{}", r.render_text());
    let r = with(|v| worker(v)["restartPolicy"] = json!("OnFail"));
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "restart-policy")
        .unwrap();
    assert_eq!(f.hint.as_deref(), Some("did you mean OnFailure?"));
    let r = with(|v| worker(v)["restartPolicy"] = json!("ExitCode"));
    assert!(!r.has_errors());
    let r = with(|v| worker(v)["template"]["spec"]["restartPolicy"] = json!("Never"));
    assert!(rules_of(&r, Severity::Warning).contains(&"pod-restart-policy"));
}

#[test]
fn name_length_budget() {
    // "<name>-worker-2" must fit in 63: a 54-char name gives 63 exactly.
    let ok = "a".repeat(54);
    let r = with(|v| v["metadata"]["name"] = json!(ok));
    assert!(!has(&r, "name-length", ""), "{}", r.render_text());
    let long = "a".repeat(56);
    let r = with(|v| v["metadata"]["name"] = json!(long));
    let f = r.findings.iter().find(|f| f.rule == "name-length").unwrap();
    assert!(
        f.hint.as_deref().unwrap().contains("at least 2 characters"),
        "{f:?}"
    );
}

#[test]
fn quantities() {
    let r = with(|v| wc(v)["resources"]["limits"]["memory"] = json!("8GB"));
    assert!(has(&r, "quantity", "limits.memory"), "{}", r.render_text());
    // The rule says it better than the schema's pattern error; only one finding for the path.
    assert_eq!(r.errors().count(), 1, "{}", r.render_text());
    let r = with(|v| wc(v)["resources"]["limits"]["cpu"] = json!(0.5));
    assert!(has(&r, "quantity", "limits.cpu"));
    let r = with(|v| wc(v)["resources"]["limits"]["cpu"] = json!("-1"));
    assert!(has(&r, "quantity", "limits.cpu"));
    let r = with(|v| wc(v)["resources"]["limits"]["cpu"] = json!("500m"));
    assert!(!r.has_errors());
}

#[test]
fn gpus() {
    // request = limit is core Pod validation's rule (podrules, ValidateResourceRequirements).
    let r = with(|v| wc(v)["resources"]["requests"] = json!({"nvidia.com/gpu": 2}));
    assert!(has(&r, "pod", "requests[nvidia.com/gpu]"));
    let r = with(|v| wc(v)["resources"]["requests"] = json!({"nvidia.com/gpu": "1"}));
    assert!(!r.has_errors(), "{}", r.render_text());
    let r = with(|v| wc(v)["resources"]["limits"]["nvidia.com/gpu"] = json!("1500m"));
    assert!(has(&r, "gpu", "limits[nvidia.com/gpu]"));
    // GPU image without GPU, and GPU with a CPU image.
    let r = with(|v| {
        wc(v)["resources"]["limits"]
            .as_object_mut()
            .unwrap()
            .remove("nvidia.com/gpu");
    });
    assert!(rules_of(&r, Severity::Warning).contains(&"gpu-image"));
    let r = with(|v| wc(v)["image"] = json!("tensorflow/tensorflow:2.13.0"));
    assert!(rules_of(&r, Severity::Warning).contains(&"gpu-image"));
}

#[test]
fn literal_credentials_are_warnings_and_never_echoed() {
    // Built at run time so the source holds nothing a secret scanner would flag.
    let key = &format!(
        "sk-{}",
        "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP"
    );
    let r = with(|v| wc(v)["env"][0] = json!({"name": "TAOTOKEN_API_KEY", "value": key}));
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "literal-credential")
        .unwrap();
    assert!(f.message.contains("sk-…(55 chars)"), "{}", f.message);
    assert!(
        f.hint
            .as_deref()
            .unwrap()
            .contains("kubectl tfjob secret create")
    );
    let text = r.render_text() + &r.to_json();
    assert!(!text.contains("abcdefghij"), "{text}");

    // By name only.
    let r = with(|v| wc(v)["env"][0] = json!({"name": "HF_TOKEN", "value": "x"}));
    assert!(has(&r, "literal-credential", "env[0].value"));
    // By value only.
    let r = with(|v| wc(v)["env"][0] = json!({"name": "CONFIG", "value": key}));
    assert!(has(&r, "literal-credential", "env[0].value"));
    // In args.
    let r = with(|v| wc(v)["args"] = json!([format!("--api_key={key}")]));
    assert!(has(&r, "literal-credential", "args[0]"));
    // Harmless look-alikes.
    for (name, value) in [
        ("MAX_TOKENS", "4096"),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/secrets/token"),
        ("HF_HUB_DISABLE_TOKEN", "1"),
        ("USE_SECRET", "true"),
        ("API_KEY", "$(OTHER_VAR)"),
        // Paths say where a credential lives, not what it is (issue 11).
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            "/var/secrets/user-gcp-sa.json",
        ),
        ("GOOGLE_APPLICATION_CREDENTIALS", "user-gcp-sa.json"),
        ("AWS_SHARED_CREDENTIALS_FILE", "creds"),
        ("KEY_PATH", "keys/k.pem"),
        ("SECRETS_DIR", "secrets"),
        ("DB_PASSWORD", ""),
        ("DB_PASSWORD", "/etc/db/password"),
        ("HF_TOKEN", "./token.txt"),
    ] {
        let r = with(|v| wc(v)["env"][0] = json!({"name": name, "value": value}));
        assert_eq!(
            r.literal_credentials().count(),
            0,
            "{name}={value}: {}",
            r.render_text()
        );
    }
    let digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let r = with(|v| wc(v)["env"][0] = json!({"name": "MODEL_SHA", "value": digest}));
    assert_eq!(r.literal_credentials().count(), 0, "{}", r.render_text());
    // A literal key is a warning for validate: the API server would store it.
    let r = with(|v| wc(v)["env"][0] = json!({"name": "HF_TOKEN", "value": key}));
    assert_eq!(
        r.literal_credentials().next().unwrap().severity,
        Severity::Warning
    );
    assert!(!r.has_errors(), "{}", r.render_text());
}

#[test]
fn base_urls() {
    let r = with(|v| wc(v)["env"][1]["value"] = json!("https://taotoken.net/api/v1"));
    let f = r.findings.iter().find(|f| f.rule == "base-url").unwrap();
    assert_eq!(f.hint.as_deref(), Some("https://taotoken.net/api"));
    let r = with(|v| {
        wc(v)["env"][1] = json!({"name": "OPENAI_BASE_URL", "value": "https://taotoken.net/api"})
    });
    assert!(has(&r, "base-url", "env[1]"));
    let r = with(|v| {
        wc(v)["env"][1] = json!({"name": "OPENAI_BASE_URL", "value": "https://taotoken.net/api/v1"})
    });
    assert!(!has(&r, "base-url", ""));
}

#[test]
fn istio_and_gateway_env_when_not_injecting() {
    let r = with(|v| {
        worker(v)["template"]
            .as_object_mut()
            .unwrap()
            .remove("metadata");
    });
    // Offline the namespace's mesh is unknown: information, which --strict does not fail on.
    assert!(rules_of(&r, Severity::Info).contains(&"istio"));
    assert!(!rules_of(&r, Severity::Warning).contains(&"istio"));
    let inputs = Inputs {
        will_inject: true,
        ..Default::default()
    };
    let mut v = good();
    worker(&mut v)["template"]
        .as_object_mut()
        .unwrap()
        .remove("metadata");
    assert!(!rules_of(&validate_value(&v, &inputs), Severity::Info).contains(&"istio"));
    // PS has no gateway env in the good job.
    let r = run(&good());
    assert!(has(&r, "gateway-env", "PS.template.spec.containers[0].env"));
}

#[test]
fn annotations_and_labels() {
    let r = with(|v| {
        worker(v)["template"]["metadata"]["annotations"]["sidecar.istio.io/inject"] = json!(false)
    });
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "metadata-value")
        .unwrap();
    assert_eq!(
        f.hint.as_deref(),
        Some("quote it: sidecar.istio.io/inject: \"false\"")
    );
    // Reported once: the schema's own type error on the same path is folded into it.
    assert_eq!(r.errors().count(), 1, "{}", r.render_text());
    let r = with(|v| v["metadata"]["labels"] = json!({"Bad Key": "x", "ok": "bad value!"}));
    assert!(has(&r, "metadata-key", "[Bad Key]"));
    assert!(has(&r, "metadata-value", "labels.ok"));
    let r = with(|v| v["metadata"]["annotations"] = json!({"example.com/x": "y"}));
    assert!(!r.has_errors());
}

#[test]
fn tf_config_info_for_single_replica() {
    let r = with(|v| {
        let s = v["spec"]["tfReplicaSpecs"].as_object_mut().unwrap();
        s.remove("PS");
        s["Worker"]["replicas"] = json!(1);
    });
    assert!(rules_of(&r, Severity::Info).contains(&"tf-config"));
    assert!(!rules_of(&run(&good()), Severity::Info).contains(&"tf-config"));
}

#[test]
fn unknown_fields_are_schema_errors() {
    let r = with(|v| worker(v)["replicaz"] = json!(3));
    assert!(
        has(&r, "schema", "spec.tfReplicaSpecs.Worker"),
        "{}",
        r.render_text()
    );
    let r = with(|v| wc(v)["imagePullPolicy"] = json!("Sometimes"));
    // Enum-less in the schema; not our business.
    let _ = r;
    let r = with(|v| wc(v)["resources"]["limits"] = json!("lots"));
    assert!(has(&r, "schema", "resources.limits"));
}

#[test]
fn report_text_and_json() {
    let r = with(|v| v["metadata"]["name"] = json!("Bad"));
    let t = r.render_text_with_origin(Some("template ps-worker"));
    assert!(
        t.starts_with("template ps-worker: error: metadata.name: "),
        "{t}"
    );
    assert!(t.contains("\n  fix: "), "{t}");
    let j: Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(j["valid"], json!(false));
    assert_eq!(j["findings"][0]["severity"], json!("error"));
    assert_eq!(r.summary(), "1 error");
}

#[test]
fn positions_are_attached() {
    let src = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: Bad\nspec:\n  tfReplicaSpecs: {}\n";
    let doc = manifest::parse_one(src, "j.yaml").unwrap().unwrap();
    let r = validate_document(&doc, &GatewayConfig::default());
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "webhook/name")
        .unwrap();
    let l = f.location.as_ref().unwrap();
    assert_eq!((l.file.as_str(), l.line), ("j.yaml", 4));
}

#[test]
fn role_counts_and_missing_workers() {
    let r = with(|v| {
        let w = worker(v).clone();
        v["spec"]["tfReplicaSpecs"]["Evaluator"] = w;
    });
    assert!(has(&r, "replica-count", "Evaluator.replicas"));
    let r = with(|v| {
        v["spec"]["tfReplicaSpecs"]
            .as_object_mut()
            .unwrap()
            .remove("Worker");
    });
    assert!(rules_of(&r, Severity::Warning).contains(&"no-worker"));
    assert!(!rules_of(&run(&good()), Severity::Warning).contains(&"no-worker"));
}

#[test]
fn user_tf_config_is_shadowed() {
    let r = with(|v| wc(v)["env"][1] = json!({"name": "TF_CONFIG", "value": "{}"}));
    assert!(rules_of(&r, Severity::Warning).contains(&"tf-config-env"));
}

#[test]
fn a_template_is_judged_as_the_api_server_receives_it() {
    // Nulls the CRD schema does not admit are pruned by the API server before it validates.
    let r = with(|v| {
        worker(v)["template"]["spec"]["volumes"] = Value::Null;
        wc(v)["args"] = Value::Null;
    });
    assert!(!r.has_errors(), "{:?}", r.findings);
    // Empty strings the operator's Go client leaves out (omitempty) are defaulted, not refused.
    let r = with(|v| {
        let ps = &mut worker(v)["template"]["spec"];
        for k in [
            "dnsPolicy",
            "serviceAccountName",
            "priorityClassName",
            "hostname",
        ] {
            ps[k] = json!("");
        }
        wc(v)["imagePullPolicy"] = json!("");
        wc(v)["ports"] = json!([{"name": "", "containerPort": 3000, "protocol": ""}]);
    });
    assert!(!r.has_errors(), "{:?}", r.findings);
    // A pointer field is sent as written: an empty runtimeClassName is refused.
    let r = with(|v| worker(v)["template"]["spec"]["runtimeClassName"] = json!(""));
    assert!(has(&r, "pod", "runtimeClassName"), "{:?}", r.findings);
}

/// Issue 61 item 10: a replica type whose pods ask for no CPU or memory is said to be
/// BestEffort (information: the API server accepts it), with the values that fix it.
#[test]
fn best_effort_pods_are_said() {
    assert!(!rules_of(&run(&good()), Severity::Info).contains(&"best-effort"));
    // Only a GPU limit: no cpu or memory anywhere, so the pods are BestEffort.
    let r = with(|v| wc(v)["resources"] = json!({"limits": {"nvidia.com/gpu": 1}}));
    let f = r.findings.iter().find(|f| f.rule == "best-effort").unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(
        f.path,
        "spec.tfReplicaSpecs.Worker.template.spec.containers[*].resources"
    );
    assert!(
        f.message.contains("the Worker pods are BestEffort"),
        "{}",
        f.message
    );
    assert!(
        f.hint.as_deref().unwrap().contains("--worker-cpu"),
        "{:?}",
        f.hint
    );
    // A request in an init container is enough (GetPodQOS reads every container).
    let r = with(|v| {
        wc(v)["resources"] = json!({});
        worker(v)["template"]["spec"]["initContainers"] = json!([{"name": "init", "image": "busybox", "resources": {"requests": {"memory": "64Mi"}}}]);
    });
    assert!(!has(&r, "best-effort", ""));
    // No replicas: no pods to speak of.
    let r = with(|v| {
        wc(v)["resources"] = json!({});
        worker(v)["replicas"] = json!(0);
    });
    assert!(!has(&r, "best-effort", ""));
}

/// Issue 60 item 11: the corners of 1.36 Pod validation the held-out fuzz found drifting, each
/// with the real 1.36.2 server's verdict (seen with `kubectl create --dry-run=server` of the
/// operator's pod): refused where it refuses, with its words, and passed where it passes.
#[test]
fn the_newest_pod_validation_corners_follow_the_real_server() {
    fn ps(v: &mut Value) -> &mut Value {
        &mut worker(v)["template"]["spec"]
    }
    let error = |r: &Report, path: &str, words: &str| {
        r.findings.iter().any(|f| {
            f.severity == Severity::Error && f.path.ends_with(path) && f.message.contains(words)
        })
    };
    // Pod-level resources: a defaulted pod request (the containers' aggregate) under the limit,
    // an explicit one under the aggregate, a container limit above the pod's.
    let r = with(|v| ps(v)["resources"] = json!({"limits": {"cpu": "2"}}));
    assert!(
        error(
            &r,
            "spec.resources.requests",
            "Invalid value: \"4\": must be less than or equal to cpu limit of 2"
        ),
        "{:#?}",
        r.findings
    );
    assert!(error(
        &r,
        "spec.resources.containers[0][cpu].limits",
        "must be less than or equal to pod limits of 2"
    ));
    let r = with(|v| ps(v)["resources"] = json!({"requests": {"memory": "4Gi"}}));
    assert!(error(
        &r,
        "spec.resources.requests[memory]",
        "Invalid value: \"4Gi\": must be greater than or equal to aggregate container requests of 8Gi"
    ));
    let r = with(|v| {
        ps(v)["resources"] =
            json!({"requests": {"cpu": "5"}, "limits": {"cpu": "6", "memory": "9Gi"}})
    });
    assert!(!has(&r, "pod", "spec.resources"), "{:#?}", r.findings);
    // A sidecar's request adds to the aggregate; an init container's is a peak.
    let r = with(|v| {
        ps(v)["resources"] = json!({"limits": {"cpu": "4500m", "memory": "9Gi"}});
        ps(v)["initContainers"] = json!([
            {"name": "side", "image": "busybox", "restartPolicy": "Always", "resources": {"requests": {"cpu": "600m"}}},
            {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]);
    });
    assert!(
        error(&r, "spec.resources.requests", "Invalid value: \"4600m\""),
        "{:#?}",
        r.findings
    );
    // A container's own restartPolicy and its rules.
    let r = with(|v| wc(v)["restartPolicy"] = json!("Bogus"));
    assert!(error(
        &r,
        "containers[0].restartPolicy",
        "Unsupported value: \"Bogus\""
    ));
    let r = with(|v| wc(v)["restartPolicy"] = json!("Never"));
    assert!(!has(&r, "pod", "restartPolicy"));
    let rule = json!({"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}});
    let r = with(|v| wc(v)["restartPolicyRules"] = json!([rule.clone()]));
    assert!(error(
        &r,
        "containers[0].restartPolicy",
        "must specify restartPolicy when restart rules are used"
    ));
    let r = with(|v| {
        wc(v)["restartPolicy"] = json!("Never");
        wc(v)["restartPolicyRules"] = json!(vec![rule.clone(); 21]);
    });
    assert!(error(
        &r,
        "restartPolicyRules",
        "Too many: 21: must have at most 20 items"
    ));
    let r = with(|v| {
        wc(v)["restartPolicy"] = json!("Never");
        wc(v)["restartPolicyRules"] = json!([{"action": "Stop", "exitCodes": {"operator": "In", "values": [1]}}, {"action": "Restart"}]);
    });
    assert!(error(
        &r,
        "restartPolicyRules[0].action",
        "Unsupported value: \"Stop\""
    ));
    assert!(error(
        &r,
        "restartPolicyRules[1].exitCodes",
        "Required value: must be specified"
    ));
    // resourceFieldRef divisors, in their canonical form.
    for (resource, divisor, refused) in [
        ("limits.cpu", "2", true),
        ("limits.cpu", "1000m", false),
        ("limits.memory", "1024", true),
        ("limits.memory", "1024Ki", false),
        ("limits.memory", "1e3", true),
        ("limits.memory", "1k", false),
    ] {
        let r = with(
            |v| wc(v)["env"] = json!([{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": resource, "divisor": divisor}}}]),
        );
        assert_eq!(
            error(&r, "resourceFieldRef.divisor", "only divisor's values"),
            refused,
            "{resource} / {divisor}: {:#?}",
            r.findings
        );
    }
    // resizePolicy in a pod the operator makes with restartPolicy Never (an ExitCode replica).
    let r = with(|v| {
        worker(v)["restartPolicy"] = json!("ExitCode");
        wc(v)["resizePolicy"] =
            json!([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]);
    });
    assert!(error(
        &r,
        "containers[0].resizePolicy",
        "must be 'NotRequired' when pod `restartPolicy` is 'Never'"
    ));
    let r = with(|v| {
        wc(v)["resizePolicy"] =
            json!([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}])
    });
    assert!(!has(&r, "pod", "resizePolicy"), "{:#?}", r.findings);
    // An image volume takes a subPath.
    let r = with(|v| {
        ps(v)["volumes"] =
            json!([{"name": "model", "image": {"reference": "registry.example/model:1"}}]);
        wc(v)["volumeMounts"] =
            json!([{"name": "model", "mountPath": "/model", "subPath": "weights"}]);
    });
    assert!(!has(&r, "pod", "volumeMounts"), "{:#?}", r.findings);
    // Found by the OpenAPI-driven differential (tests/real/openapi.rs), each against 1.36.2.
    let r = with(|v| {
        ps(v)["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["app"]}]);
        ps(v)["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "mismatchLabelKeys": ["app"], "namespaces": [""]}]}});
    });
    assert!(error(
        &r,
        "topologySpreadConstraints[0].matchLabelKeys",
        "must not be specified when labelSelector is not set"
    ));
    assert!(error(
        &r,
        "[0].mismatchLabelKeys",
        "must not be specified when labelSelector is not set"
    ));
    assert!(error(&r, "[0].namespace", "Invalid value: \"\""));
    let r = with(|v| {
        ps(v)["volumes"] = json!([{"name": "d", "azureDisk": {"diskName": "d", "diskURI": "d"}}]);
        ps(v)["hostnameOverride"] = json!("Not Valid!");
        ps(v)["resources"] = json!({"claims": [{"name": "gpu"}]});
    });
    assert!(
        error(&r, "azureDisk.diskURI", "blob disk"),
        "{:#?}",
        r.findings
    );
    assert!(error(
        &r,
        "spec.hostnameOverride",
        "Invalid value: \"Not Valid!\""
    ));
    assert!(error(
        &r,
        "spec.resources.claims",
        "claims may not be set for Resources at pod-level"
    ));
    // A Secret reference's name upstream defaults to "" (`+default=""`): not required.
    let r = with(|v| {
        ps(v)["volumes"] = json!([{"name": "s", "scaleIO": {"gateway": "g", "system": "s", "volumeName": "v", "secretRef": {}}}]);
    });
    assert!(!has(&r, "schema", "secretRef"), "{:#?}", r.findings);
    // Sources a 1.36 server drops behind a gate that is off: said, never refused.
    let r = with(|v| {
        ps(v)["volumes"] = json!([{"name": "b", "projected": {"sources": [
            {"clusterTrustBundle": {"name": "x", "signerName": "a/b", "path": "/abs"}}]}}]);
    });
    assert!(
        !r.findings
            .iter()
            .any(|f| f.severity == Severity::Error && f.path.contains("clusterTrustBundle")),
        "{:#?}",
        r.findings
    );
    assert!(
        r.findings.iter().any(|f| f.severity == Severity::Warning
            && f.message.contains("ClusterTrustBundleProjection"))
    );
    // Quantities outside the containers are decoded as strictly as theirs.
    let r = with(|v| {
        ps(v)["volumes"] = json!([{"name": "e", "emptyDir": {"sizeLimit": "bogus"}}]);
        ps(v)["resources"] = json!({"limits": {"cpu": "lots"}});
    });
    assert!(
        error(&r, "emptyDir.sizeLimit", "invalid quantity"),
        "{:#?}",
        r.findings
    );
    assert!(
        error(&r, "spec.resources.limits.cpu", "invalid quantity"),
        "{:#?}",
        r.findings
    );
}
