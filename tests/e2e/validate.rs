//! `validate`: warnings that name what the cluster would do with a manifest it accepts.

/// Issue 48 item 3: what `probe` and `diagnose` fail on later is said when the job is made:
/// a gateway base URL ending in /v1 (…/v1/v1/models, 404), and a template asking istio for the
/// sidecar that breaks the rendezvous. Warnings: the API server takes both; `--strict` refuses.
#[test]
fn a_v1_base_url_and_an_istio_sidecar_asked_for_are_warned_before_anything_is_sent() {
    let v1 = "--api-base-url=https://taotoken.net/api/v1";
    let run = crate::Cli::new(
        None,
        &[
            "render",
            "-t",
            "ps-worker",
            "--name",
            "t",
            "--image",
            "tensorflow/tensorflow:2.13.0",
            v1,
        ],
    )
    .run();
    run.expect_code(0);
    run.stderr_has("warning: --api-base-url: https://taotoken.net/api/v1 ends in /v1");
    run.stderr_has("--api-base-url https://taotoken.net/api");
    assert!(!run.stdout.contains("ends in /v1"), "{}", run.stdout);
    let (_dir, path) = crate::manifest_file(&mesh_job(""));
    let p = path.to_str().unwrap();
    let run = crate::Cli::new(None, &["validate", "-f", p, v1]).run();
    run.expect_code(0);
    run.stderr_has("ends in /v1");
    crate::Cli::new(None, &["validate", "-f", p, v1, "--strict"])
        .run()
        .expect_code(2);
    // Without /v1: not a word about it.
    let run = crate::Cli::new(
        None,
        &[
            "validate",
            "-f",
            p,
            "--api-base-url=https://taotoken.net/api",
        ],
    )
    .run();
    run.expect_code(0);
    assert!(!run.all().contains("/v1"), "{}", run.all());

    let (_dir, path) = crate::manifest_file(&mesh_job("true"));
    let run = crate::Cli::new(None, &["validate", "-f", path.to_str().unwrap()]).run();
    run.expect_code(0);
    run.stderr_has("sidecar.istio.io/inject: \"true\" asks istio for a sidecar");
    crate::Cli::new(
        None,
        &["validate", "-f", path.to_str().unwrap(), "--strict"],
    )
    .run()
    .expect_code(2);
}

/// One worker; its template's istio annotation set to `inject` (none when empty).
fn mesh_job(inject: &str) -> String {
    let annotations = if inject.is_empty() {
        "{}".to_string()
    } else {
        format!("{{sidecar.istio.io/inject: \"{inject}\"}}")
    };
    format!(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: mesh\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      template:\n        metadata:\n          annotations: {annotations}\n        spec:\n          containers:\n          - name: tensorflow\n            image: tensorflow/tensorflow:2.13.0\n"
    )
}

/// Issue 48 item 11: with an Evaluator, a cleanPodPolicy of Running or All deletes it when the
/// Chief succeeds (kubeflow/trainer#1658): a warning naming the field; None is quiet.
#[test]
fn an_evaluator_cut_short_by_clean_pod_policy_is_warned() {
    let job = |policy: &str| {
        format!(
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: ev\nspec:\n  runPolicy: {{cleanPodPolicy: {policy}}}\n  tfReplicaSpecs:\n    Chief:\n      replicas: 1\n      template:\n        spec:\n          containers: [{{name: tensorflow, image: tensorflow/tensorflow:2.13.0}}]\n    Evaluator:\n      replicas: 1\n      template:\n        spec:\n          containers: [{{name: tensorflow, image: tensorflow/tensorflow:2.13.0}}]\n"
        )
    };
    for policy in ["Running", "All"] {
        let (_dir, path) = crate::manifest_file(&job(policy));
        let run = crate::Cli::new(None, &["validate", "-f", path.to_str().unwrap()]).run();
        run.expect_code(0);
        run.stderr_has("spec.runPolicy.cleanPodPolicy");
        run.stderr_has("when the Chief succeeds the job is Succeeded at once and the operator deletes the Evaluator");
    }
    let (_dir, path) = crate::manifest_file(&job("None"));
    let run = crate::Cli::new(None, &["validate", "-f", path.to_str().unwrap()]).run();
    run.expect_code(0);
    assert!(!run.all().contains("Evaluator"), "{}", run.all());
}
