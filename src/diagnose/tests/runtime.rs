//! The runtime layer: images, Secrets, crashes, the gateway key, sidecars.

use super::*;

#[test]
fn err_image_pull_and_backoff() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created"]);
    let msg = "rpc error: code = NotFound desc = failed to pull and unpack image \"docker.io/tensorflow/tensorflow:2.99\": not found";
    let mut a = waiting(pod_json("worker", 0), "ErrImagePull", msg);
    a["status"]["containerStatuses"][0]["image"] = json!("tensorflow/tensorflow:2.99");
    let mut b = waiting(
        pod_json("worker", 1),
        "ImagePullBackOff",
        "Back-off pulling image \"tensorflow/tensorflow:2.99\"",
    );
    b["status"]["containerStatuses"][0]["image"] = json!("tensorflow/tensorflow:2.99");
    set_pods(&mut s, vec![a, b]);
    let d = diagnose(&s);
    all_ok_before(&d, Layer::Runtime);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "cannot pull image tensorflow/tensorflow:2.99 (2 pods)"
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.starts_with("ErrImagePull: rpc error") && e.contains("not found"))
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.starts_with("ImagePullBackOff: Back-off pulling"))
    );
    assert_eq!(f.replicas.len(), 2);
    assert!(f.next_step.as_deref().unwrap().contains("imagePullSecrets"));
}

#[test]
fn image_pull_backoff_without_message_uses_the_kubelet_event() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created"]);
    let mut p = waiting(pod_json("worker", 0), "ImagePullBackOff", "");
    p["status"]["containerStatuses"][0]["image"] = json!("registry.local/private/tf:1");
    set_pods(&mut s, vec![p]);
    s.pod_events.push(event(
        "Pod",
        "tf-dist-train-worker-0",
        "Failed",
        "Failed to pull image \"registry.local/private/tf:1\": 401 Unauthorized",
    ));
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.evidence,
        vec![
            "ImagePullBackOff: Failed to pull image \"registry.local/private/tf:1\": 401 Unauthorized"
        ]
    );
}

#[test]
fn invalid_image_name() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created"]);
    let mut p = waiting(
        pod_json("worker", 0),
        "InvalidImageName",
        "Failed to apply default image tag \"TensorFlow/TF:latest\": couldn't parse image name: invalid reference format: repository name must be lowercase",
    );
    p["status"]["containerStatuses"][0]["image"] = json!("TensorFlow/TF:latest");
    set_pods(&mut s, vec![p]);
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "invalid image name \"TensorFlow/TF:latest\" (InvalidImageName)"
    );
    assert!(f.evidence[0].contains("repository name must be lowercase"));
    assert!(f.next_step.as_deref().unwrap().contains("lowercase"));
}

#[test]
fn missing_secret_cross_checked() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created"]);
    set_pods(
        &mut s,
        (0..2)
            .map(|i| {
                waiting(
                    pod_json("worker", i),
                    "CreateContainerConfigError",
                    "secret \"taotoken-secret\" not found",
                )
            })
            .collect(),
    );
    s.secrets.insert("taotoken-secret".into(), None);
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "Secret \"taotoken-secret\" not found in namespace default: containers stuck in CreateContainerConfigError"
    );
    assert_eq!(
        f.evidence,
        vec!["referenced by env TAOTOKEN_API_KEY of container tensorflow"]
    );
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .ends_with("kubectl tfjob secret create taotoken-secret -n default")
    );
    assert_eq!(f.replicas.len(), 2);
}

#[test]
fn missing_secret_key_cross_checked() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created"]);
    let mut p = waiting(
        pod_json("worker", 0),
        "CreateContainerConfigError",
        "couldn't find key token in Secret default/gw",
    );
    p["spec"]["containers"][0]["env"] = json!([
        {"name": "GW_API_KEY", "valueFrom": {"secretKeyRef": {"name": "gw", "key": "token"}}}
    ]);
    set_pods(&mut s, vec![p]);
    s.secrets.insert(
        "gw".into(),
        Some(secret(
            "gw",
            &[("api-key", FAKE_KEY), ("base-url", "https://x")],
        )),
    );
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "Secret \"gw\" has no key \"token\" (it has: api-key, base-url): containers stuck in CreateContainerConfigError"
    );
    assert_eq!(
        f.evidence,
        vec!["referenced by env GW_API_KEY of container tensorflow"]
    );
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .ends_with("kubectl tfjob secret create gw -n default --key token --overwrite")
    );
}

#[test]
fn missing_secret_before_pods_start_is_still_a_failure() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created"]);
    set_pods(
        &mut s,
        vec![pending(pod_json("worker", 0), "Unschedulable", GPU_MSG)],
    );
    s.secrets.insert("taotoken-secret".into(), None);
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert!(
        f.summary
            .contains("the containers cannot start once scheduled")
    );
}

#[test]
fn config_error_not_explained_by_a_secret() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created"]);
    set_pods(
        &mut s,
        vec![waiting(
            pod_json("worker", 0),
            "CreateContainerConfigError",
            "configmap \"tf-settings\" not found",
        )],
    );
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "CreateContainerConfigError: configmap \"tf-settings\" not found"
    );
}

#[test]
fn crash_loop_with_log_tail() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created", "Running"]);
    set_pods(
        &mut s,
        vec![
            crashed(pod_json("worker", 0), 1, "Error", 5),
            pod_json("worker", 1),
        ],
    );
    s.logs.insert(
        "tf-dist-train-worker-0".into(),
        "Epoch 1/10\nTraceback (most recent call last):\n  File \"train.py\", line 3\nValueError: bad shape\n".into(),
    );
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "CrashLoopBackOff: container tensorflow of tf-dist-train-worker-0: exit code 1 (Error), 5 restarts"
    );
    assert_eq!(f.log.last().unwrap(), "ValueError: bad shape");
    assert_eq!(f.log.len(), 4);
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("kubectl logs tf-dist-train-worker-0 -c tensorflow -n default --previous")
    );
    let text = render_text(&d, false);
    assert!(text.contains("  | ValueError: bad shape\n"), "{text}");
}

/// Past the restart threshold and running between two back-offs: a crash loop; the same
/// container running for 11 minutes since its last crash has outlived the kubelet's back-off
/// reset (2 × 300s): recovered, a warning, as `wait`, `probe` and `list` judge it.
#[test]
fn a_crash_loop_is_history_once_the_kubelet_has_recovered_it() {
    for (since, grade, state) in [
        (30, Grade::Fail, "crash loop (running between restarts)"),
        (700, Grade::Warning, "restarted (running again)"),
    ] {
        let mut s = healthy_with(&[("Worker", 1)], &["Created", "Running"]);
        let mut p = crashed(pod_json("worker", 0), 1, "Error", 5);
        p["status"]["containerStatuses"][0]["state"] =
            json!({"running": {"startedAt": ago(since - 5)}});
        p["status"]["containerStatuses"][0]["ready"] = json!(true);
        p["status"]["containerStatuses"][0]["lastState"]["terminated"]["finishedAt"] =
            json!(ago(since));
        set_pods(&mut s, vec![p]);
        let d = diagnose(&s);
        let r: Vec<_> = of(&d, Layer::Runtime)
            .into_iter()
            .filter(|f| f.summary.contains("exit code 1"))
            .collect();
        assert_eq!(r.len(), 1, "{since}: {:#?}", d.findings);
        assert_eq!(r[0].verdict, grade, "{since}: {}", r[0].summary);
        assert!(r[0].summary.starts_with(state), "{since}: {}", r[0].summary);
    }
}

#[test]
fn oom_killed_suggests_more_memory() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created", "Running"]);
    set_pods(
        &mut s,
        vec![crashed(pod_json("worker", 0), 137, "OOMKilled", 2)],
    );
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "OOMKilled: container tensorflow of tf-dist-train-worker-0 ran out of memory (limit 4Gi), 2 restarts"
    );
    let next = f.next_step.as_deref().unwrap();
    assert!(
        next.contains(
            "more memory (resubmit with --worker-memory, resources.limits.memory, now 4Gi)"
        ),
        "{next}"
    );
}

#[test]
fn failed_condition_message() {
    let mut v = job_json(&[("Worker", 2)], &["Created"]);
    v["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "type": "Failed", "status": "True", "reason": "TFJobFailed",
            "message": "TFJob default/tf-dist-train has failed because 1 Worker replica(s) failed."
        }));
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.job = Some(to_job(v));
    let mut p = pod_json("worker", 0);
    p["status"]["phase"] = json!("Failed");
    p["status"]["containerStatuses"][0]["state"] =
        json!({"terminated": {"exitCode": 2, "reason": "Error"}});
    set_pods(&mut s, vec![p, pod_json("worker", 1)]);
    let d = diagnose(&s);
    assert_eq!(d.state, "Failed");
    let f = only_fail(&d, Layer::Controller);
    assert_eq!(
        f.summary,
        "job Failed: TFJob default/tf-dist-train has failed because 1 Worker replica(s) failed."
    );
    assert_eq!(f.evidence, vec!["reason TFJobFailed"]);
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("kubectl logs tf-dist-train-worker-0 -c tensorflow -n default")
    );
    assert!(
        f.next_step.as_deref().unwrap().ends_with(
            "then delete and resubmit it: kubectl tfjob delete tf-dist-train -n default"
        ),
        "{:?}",
        f.next_step
    );
    // The exact command reaches the cluster the user named.
    s.hints.context = Some("prod".into());
    s.hints.kubeconfig = Some("/home/me/my cfg".into());
    let d = diagnose(&s);
    assert!(
        only_fail(&d, Layer::Controller)
            .next_step
            .as_deref()
            .unwrap()
            .ends_with("kubectl tfjob delete tf-dist-train -n default --kubeconfig '/home/me/my cfg' --context prod")
    );
    // The runtime layer says which replica and how.
    let r = only_fail(&d, Layer::Runtime);
    assert_eq!(
        r.summary,
        "crashed: container tensorflow of tf-dist-train-worker-0: exit code 2 (Error)"
    );
    assert_eq!(d.first_failure().unwrap().layer, Layer::Controller);
}

#[test]
fn restarting_is_a_warning() {
    let mut v = job_json(&[("Worker", 1)], &["Created"]);
    v["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "type": "Restarting", "status": "True", "reason": "TFJobRestarting",
            "message": "job tf-dist-train is restarting because 1 Worker replica(s) failed."
        }));
    let mut s = healthy_with(&[("Worker", 1)], &[]);
    s.job = Some(to_job(v));
    let d = diagnose(&s);
    assert!(of(&d, Layer::Controller).iter().any(|f| f.verdict == Grade::Warning
        && f.summary == "job is Restarting: job tf-dist-train is restarting because 1 Worker replica(s) failed."));
}

#[test]
fn no_tensorflow_container_means_no_tf_config() {
    let mut v = job_json(&[("Worker", 2)], &["Created"]);
    v["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] =
        json!([container("trainer", "my/trainer:1")]);
    let mut s = healthy_with(&[("Worker", 2)], &[]);
    s.job = Some(to_job(v));
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "Worker pods have no container named tensorflow: they get no TF_CONFIG, so the replicas cannot find each other"
    );
    assert_eq!(f.evidence, vec!["containers: trainer"]);
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("name the training container \"tensorflow\"")
    );
}

#[test]
fn istio_sidecar() {
    let mut s = healthy_with(&[("Worker", 2)], &["Created", "Running"]);
    let pods = (0..2)
        .map(|i| {
            let mut p = pod_json("worker", i);
            p["spec"]["containers"]
                .as_array_mut()
                .unwrap()
                .push(container("istio-proxy", "docker.io/istio/proxyv2:1.24.0"));
            p
        })
        .collect();
    set_pods(&mut s, pods);
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert!(
        f.summary
            .starts_with("istio-proxy sidecar injected into 2 pods")
    );
    assert!(f.summary.contains("gRPC"));
    assert!(
        f.next_step
            .as_deref()
            .unwrap()
            .contains("sidecar.istio.io/inject: \"false\"")
    );
    assert!(
        f.next_step.as_deref().unwrap().ends_with(
            "then delete and resubmit it: kubectl tfjob delete tf-dist-train -n default"
        )
    );
}

#[test]
fn base_url_ending_in_v1() {
    let mut v = job_json(&[("Worker", 1)], &["Created", "Running"]);
    v["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = json!([
        {"name": "TAOTOKEN_BASE_URL", "value": "https://taotoken.net/api/v1"},
        {"name": "OPENAI_BASE_URL", "value": "https://taotoken.net/api/v1"}
    ]);
    let mut s = healthy_with(&[("Worker", 1)], &[]);
    s.job = Some(to_job(v));
    let d = diagnose(&s);
    assert!(d.first_failure().is_none(), "{:#?}", d.findings);
    let w: Vec<_> = of(&d, Layer::Runtime)
        .into_iter()
        .filter(|f| f.verdict == Grade::Warning)
        .collect();
    assert_eq!(w.len(), 1, "OPENAI_BASE_URL wants /v1: {w:#?}");
    assert!(
        w[0].summary
            .starts_with("TAOTOKEN_BASE_URL=https://taotoken.net/api/v1 ends in /v1")
    );
    assert!(w[0].summary.contains("404"));
    assert_eq!(
        w[0].next_step.as_deref(),
        Some("drop the trailing /v1: --api-base-url https://taotoken.net/api")
    );
}

#[test]
fn unauthorized_in_logs() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created", "Running"]);
    s.logs.insert(
        "tf-dist-train-worker-0".into(),
        "starting\nopenai.AuthenticationError: Error code: 401 - {'error': {'message': 'Invalid token'}}\n".into(),
    );
    let d = diagnose(&s);
    let f = only_fail(&d, Layer::Runtime);
    assert_eq!(
        f.summary,
        "the model gateway rejected the API key (HTTP 401)"
    );
    assert_eq!(
        f.evidence[0],
        "the key comes from Secret \"taotoken-secret\" key \"api-key\" (env TAOTOKEN_API_KEY)"
    );
    assert!(f.evidence[1].starts_with("tf-dist-train-worker-0: openai.AuthenticationError"));
    assert!(
        f.next_step.as_deref().unwrap().contains(
            "kubectl tfjob secret create taotoken-secret -n default --overwrite --verify;"
        )
    );
    // Numbers that merely contain 401 are not a 401.
    let mut s = healthy_with(&[("Worker", 1)], &["Created", "Running"]);
    s.logs.insert(
        "tf-dist-train-worker-0".into(),
        "step 14010 loss 0.401\nstep 401 error 0.25\nHTTP request ok\n".into(),
    );
    assert!(diagnose(&s).first_failure().is_none());
}

#[test]
fn secret_values_never_appear_in_text_or_json() {
    let mut s = healthy_with(&[("Worker", 1)], &["Created", "Running"]);
    // A crash whose log prints the key and an Authorization header.
    set_pods(&mut s, vec![crashed(pod_json("worker", 0), 1, "Error", 1)]);
    // As collect stores it: the Secret's value scrubbed from the log as it was read.
    let raw_log =
        format!("using key {FAKE_KEY}\nAuthorization: Bearer {FAKE_KEY}\nHTTP 401 Unauthorized\n");
    s.logs.insert(
        "tf-dist-train-worker-0".into(),
        super::checks::scrub(&raw_log, &[FAKE_KEY.to_string()]),
    );
    s.secrets.insert(
        "other".into(),
        Some(secret("other", &[("token", FAKE_KEY)])),
    );
    // A token from elsewhere (not a Secret collect read) is still redacted in findings.
    s.notes
        .push(format!("a note quoting Authorization: Bearer {FAKE_KEY}"));
    let d = diagnose(&s);
    assert!(d.first_failure().is_some());
    let json = serde_json::to_string_pretty(&d).unwrap();
    let parsed: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed["job"], "tf-dist-train");
    assert_eq!(parsed["findings"][0]["layer"], "crd");
    assert_eq!(parsed["findings"][0]["verdict"], "ok");
    for out in [json, render_text(&d, false), render_text(&d, true)] {
        assert!(!out.contains(FAKE_KEY), "leaked:\n{out}");
        assert!(!out.contains("DO-NOT-LEAK"), "leaked:\n{out}");
    }
    assert!(render_text(&d, false).contains("<redacted>"));
}
