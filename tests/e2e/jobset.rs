//! `export --to jobset` end to end (issue 27): the real binary against the test cluster's
//! JobSet webhook, controller, Job controller and kubelet. For every pod that runs, the
//! TF_CONFIG the kubelet gave it (after `$(VAR)` expansion) is JSON whose cluster lists every
//! pod's DNS name and whose task is the pod's own type and index.

use std::collections::BTreeSet;
use std::io::{BufRead, Read};
use std::time::Duration;

use serde_json::Value;
use tfjob_testcluster::{Fault, TestCluster};

use crate::submit::{ARTICLE, SECRET, article_args};
use crate::{Cli, cluster, tfjob};

const JOBSET_LABEL: &str = "jobset.sigs.k8s.io/jobset-name";
/// A bound on state-driven waits (they end as soon as the state holds).
const SETTLE: Duration = Duration::from_secs(60);

fn with_jobset() -> TestCluster {
    cluster(&format!("jobset: running\nobjects:{SECRET}"))
}

/// [`with_jobset`] running the article's job as a JobSet, every pod ready.
fn running_jobset() -> TestCluster {
    let c = with_jobset();
    let submit = article_args("submit", &["--to", "jobset", "--wait", "--timeout", "60s"]);
    tfjob(&c, &submit).expect_code(0);
    c
}

/// The built-in templates, as `templates` lists them (name column, up to the blank line).
fn templates() -> Vec<String> {
    let run = Cli::new(None, &["templates"]).run();
    run.expect_code(0);
    let names: Vec<String> = run
        .stdout
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert!(names.len() >= 4, "{}", run.stdout);
    names
}

/// `export --to jobset` with a template's flags: a small job of every role it has.
fn template_args<'a>(
    verb: &'a str,
    template: &'a str,
    name: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut a = vec![verb, "--to", "jobset", "-t", template, "--name", name];
    a.extend_from_slice(&["--image", "tensorflow/tensorflow:2.13.0", "--workers", "2"]);
    a.extend_from_slice(extra);
    a
}

fn jobset_pods(c: &TestCluster, name: &str) -> Vec<Value> {
    c.list("pods", Some("default"))
        .into_iter()
        .filter(|p| p["metadata"]["labels"][JOBSET_LABEL] == name)
        .collect()
}

fn expected_pods(js: &Value) -> usize {
    js["spec"]["replicatedJobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["template"]["spec"]["completions"].as_u64().unwrap() as usize)
        .sum()
}

/// Creates the exported JobSet in the cluster and checks every running pod's TF_CONFIG.
fn run_and_check_tf_config(c: &TestCluster, js: &Value) {
    check_tf_config(c, js, true);
}

fn check_tf_config(c: &TestCluster, js: &Value, gateway: bool) {
    let name = js["metadata"]["name"].as_str().unwrap().to_string();
    c.insert(js.clone());
    let want = expected_pods(js);
    let all_started = c.wait_for(SETTLE, |c| {
        let pods = jobset_pods(c, &name);
        pods.len() == want
            && pods.iter().all(|p| {
                p["status"]["phase"] == "Running"
                    && c.container_env(
                        "default",
                        p["metadata"]["name"].as_str().unwrap(),
                        "tensorflow",
                    )
                    .is_some()
            })
    });
    let pods = jobset_pods(c, &name);
    assert!(
        all_started,
        "{name}: pods {:#?}",
        pods.iter()
            .map(|p| (&p["metadata"]["name"], &p["status"]["phase"]))
            .collect::<Vec<_>>()
    );
    // What DNS publishes for the headless Service: <hostname>.<subdomain>.<ns>.svc.
    let svc = c
        .get("services", Some("default"), &name)
        .expect("the headless Service");
    assert_eq!(svc["spec"]["clusterIP"], "None");
    assert_eq!(svc["spec"]["selector"][JOBSET_LABEL], name.as_str());
    let dns: BTreeSet<String> = pods
        .iter()
        .map(|p| {
            format!(
                "{}.{}.default.svc",
                p["spec"]["hostname"].as_str().unwrap(),
                p["spec"]["subdomain"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(dns.len(), want);
    for p in &pods {
        let pname = p["metadata"]["name"].as_str().unwrap();
        let env = c.container_env("default", pname, "tensorflow").unwrap();
        let tf = &env
            .iter()
            .find(|(k, _)| k == "TF_CONFIG")
            .expect("TF_CONFIG")
            .1;
        let tf: Value = serde_json::from_str(tf).unwrap_or_else(|e| panic!("{pname}: {e}: {tf}"));
        let own_type = p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
            .as_str()
            .unwrap();
        let own_index: i64 =
            p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
        assert_eq!(tf["task"]["type"], own_type, "{pname}");
        assert_eq!(tf["task"]["index"], own_index, "{pname}");
        assert_eq!(tf["environment"], "cloud", "{pname}");
        let listed: BTreeSet<String> = tf["cluster"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|v| v.as_array().unwrap().clone())
            .map(|a| {
                let a = a.as_str().unwrap();
                a.rsplit_once(':').unwrap().0.to_string()
            })
            .collect();
        assert_eq!(listed, dns, "{pname}");
        // The gateway env is kept before it, backed by the Secret.
        if gateway {
            assert!(env.iter().any(|(k, _)| k == "TAOTOKEN_BASE_URL"), "{pname}");
        }
    }
}

#[test]
fn the_articles_jobset_passes_a_server_dry_run_and_every_pod_reads_its_tf_config() {
    let c = with_jobset();
    let run = tfjob(
        &c,
        &article_args(
            "export",
            &["--to", "jobset", "--dry-run=server", "-o", "json"],
        ),
    );
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("jobset.jobset.x-k8s.io/tf-dist-train created (server dry run)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("export: services:"), "{}", run.stderr);
    let js: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(js["metadata"]["namespace"], "default");
    let dry: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.resource == "jobsets" && r.verb == "create")
        .collect();
    assert_eq!(dry.len(), 1);
    assert!(dry[0].dry_run && dry[0].status == 201, "{:?}", dry[0]);
    assert!(
        c.list("jobsets", None).is_empty(),
        "a dry run stores nothing"
    );
    run_and_check_tf_config(&c, &js);
}

#[test]
fn every_builtin_template_exports_to_a_jobset_whose_pods_read_their_tf_config() {
    let c = with_jobset();
    for t in templates() {
        let name = format!("t-{t}");
        let run = tfjob(
            &c,
            &template_args(
                "export",
                &t,
                &name,
                &["-n", "default", "--dry-run=server", "-o", "json"],
            ),
        );
        run.expect_code(0);
        let js: Value = serde_json::from_str(&run.stdout).unwrap();
        run_and_check_tf_config(&c, &js);
    }
}

#[test]
fn offline_export_prints_yaml_only_on_stdout_and_refuses_a_name_too_long_for_its_pods() {
    let run = Cli::new(None, &article_args("export", &["--to", "jobset"])).run();
    run.expect_code(0);
    assert!(
        run.stdout
            .starts_with("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("export:"));
    for field in ["services", "labels", "restarts"] {
        assert!(
            run.stderr.contains(&format!("export: {field}:")),
            "{field}: {}",
            run.stderr
        );
    }
    let long = "a".repeat(54);
    let mut args = vec!["export", "--to", "jobset", "--name", long.as_str()];
    args.extend_from_slice(&ARTICLE[2..]);
    let run = Cli::new(None, &args).run();
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("pod names generated for this JobSet will exceed 63 characters"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn export_refuses_what_the_api_would_indexed_parallelism_and_the_encoded_size() {
    // The article's job (1 PS, then the workers: replicatedJobs[1]) with `workers` workers.
    let export = |workers: &str| {
        let mut args = vec!["export", "--to", "jobset"];
        args.extend_from_slice(ARTICLE);
        let at = args.iter().position(|a| *a == "--workers").unwrap() + 1;
        args[at] = workers;
        Cli::new(None, &args).run()
    };
    // 100,001 workers: one Indexed Job of parallelism 100,001, over the API's 100,000.
    let run = export("100001");
    run.expect_code(2);
    assert!(run.stdout.is_empty(), "nothing half-written");
    assert!(
        run.stderr.contains(
            "spec.replicatedJobs[1].template.spec.parallelism: 100001: must be less than or equal to 100000 when completion mode is Indexed"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("the API server's request body limit (3 MiB)"),
        "{}",
        run.stderr
    );
    // 15,000 workers (about 2.3 MB): under the request limit, over etcd's.
    let run = export("15000");
    run.expect_code(2);
    assert!(
        run.stderr.contains("over etcd's request limit (1.5 MiB, --max-request-bytes) of 1572864 bytes; its largest field, spec.replicatedJobs[1].template.spec.template.spec.containers[0].env"),
        "{}",
        run.stderr
    );
    export("2").expect_code(0);
}

#[test]
fn a_server_dry_run_where_jobset_is_not_installed_is_cluster_not_ready() {
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(
        &c,
        &article_args("export", &["--to", "jobset", "--dry-run=server"]),
    );
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("does not serve jobset.x-k8s.io/v1alpha2"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn submit_to_jobset_waits_until_every_replicated_jobs_pods_are_ready() {
    let c = with_jobset();
    let run = tfjob(
        &c,
        &article_args("submit", &["--to", "jobset", "--wait", "--timeout", "60s"]),
    );
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "jobset.jobset.x-k8s.io/tf-dist-train created\njobset.jobset.x-k8s.io/tf-dist-train: every replicatedJob's pods are ready\n"
    );
    // When it said so, the status held Kueue's PodsReady: every Job ready.
    let js = c.get("jobsets", Some("default"), "tf-dist-train").unwrap();
    for s in js["status"]["replicatedJobsStatus"].as_array().unwrap() {
        assert_eq!(s["ready"], 1, "{s}");
    }
    let creates: Vec<_> = c
        .writes()
        .into_iter()
        .filter(|w| w.resource == "jobsets" && w.verb == "create")
        .collect();
    assert_eq!(creates.len(), 1);
    assert!(c.writes().iter().all(|w| w.resource != "tfjobs"));
    // The pods read their own TF_CONFIG, as with an exported JobSet.
    let pods = jobset_pods(&c, "tf-dist-train");
    assert_eq!(pods.len(), 4);
    for p in &pods {
        let env = c
            .container_env(
                "default",
                p["metadata"]["name"].as_str().unwrap(),
                "tensorflow",
            )
            .unwrap();
        let tf: Value =
            serde_json::from_str(&env.iter().find(|(k, _)| k == "TF_CONFIG").unwrap().1).unwrap();
        assert_eq!(
            tf["task"]["index"].to_string(),
            p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                .as_str()
                .unwrap()
        );
    }
}

#[test]
fn submit_to_jobset_refuses_a_cluster_whose_jobset_controller_is_not_ready_and_writes_nothing() {
    let c = cluster(&format!("jobset: installed\nobjects:{SECRET}"));
    let run = tfjob(&c, &article_args("submit", &["--to", "jobset"]));
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("jobset-system/jobset-controller-manager has no ready replicas"),
        "{}",
        run.stderr
    );
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    let c = cluster("jobset: running");
    let run = tfjob(&c, &article_args("submit", &["--to", "jobset"]));
    run.expect_code(3);
    assert!(run.stderr.contains("taotoken-secret"), "{}", run.stderr);
    assert!(c.writes().is_empty());
}

#[test]
fn a_failed_ps_fails_the_jobset_and_submit_wait_exits_4() {
    // No GPU anywhere: the workers stay Pending, so "every pod ready" can never be seen first,
    // and the PS exits 3 under ExitCode, which its Job's pod failure policy fails at once.
    let c = cluster(&format!(
        "jobset: running\nnodes: [{{name: node-1, cpu: \"16\", memory: 64Gi, gpu: 0}}]\nobjects:{SECRET}\ncontainerBehaviour:\n  - match: {{replicaType: ps, index: 0}}\n    exitCode: 3\n    runMs: 10\n"
    ));
    let run = tfjob(
        &c,
        &article_args(
            "submit",
            &[
                "--to",
                "jobset",
                "--wait",
                "--timeout",
                "60s",
                "--restart-policy",
                "ExitCode",
                "--skip-capacity-check",
            ],
        ),
    );
    run.expect_code(4);
    assert!(run.stderr.contains("FailedJobs"), "{}", run.stderr);
    let job = c
        .get("jobs", Some("default"), "tf-dist-train-ps-0")
        .unwrap();
    let failed = job["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Failed")
        .unwrap()
        .clone();
    assert_eq!(failed["reason"], "PodFailurePolicy", "{failed}");
    // A failed JobSet deletes its unfinished Jobs (the workers) and keeps the failed one.
    assert!(c.wait_for(SETTLE, |c| {
        c.get("jobs", Some("default"), "tf-dist-train-worker-0")
            .is_none()
    }));
}

#[test]
fn wait_jobset_for_succeeded_times_out_while_it_runs_and_succeeds_when_it_completes() {
    let c = running_jobset();
    let js = "jobset/tf-dist-train";
    let wait = |target: &str, t: &str| tfjob(&c, &["wait", js, "--for", target, "--timeout", t]);
    // Every pod is ready and nothing has finished: not succeeded, not finished.
    for target in ["succeeded", "finished"] {
        let run = wait(target, "1s");
        run.expect_code(5);
        assert_eq!(run.stdout, "", "no verdict on stdout: {}", run.stdout);
        assert!(
            run.stderr.contains("Completed condition"),
            "{target}: {}",
            run.stderr
        );
        // The command's one deadline, named with what it was doing, as for a TFJob.
        run.stderr_has(&format!(
            "--timeout 1s ran out while waiting for JobSet default/tf-dist-train (--for {target})"
        ));
    }
    // `--timeout 0` checks once and says so.
    let run = wait("succeeded", "0");
    run.expect_code(5);
    run.stderr_has("checked once (--timeout 0) waiting for JobSet default/tf-dist-train");
    // The workers finish: worker 0 decides success (the worker Job's successPolicy), the
    // JobSet controller writes Completed.
    for p in jobset_pods(&c, "tf-dist-train") {
        let name = p["metadata"]["name"].as_str().unwrap();
        if name.contains("-worker-") {
            c.exit_container("default", name, "tensorflow", 0);
        }
    }
    let run = wait("succeeded", "60s");
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "jobset.jobset.x-k8s.io/tf-dist-train completed\n"
    );
}

#[test]
fn wait_get_logs_and_delete_take_jobset_slash_name() {
    let c = running_jobset();
    let run = tfjob(&c, &["wait", "jobset/tf-dist-train", "--timeout", "30s"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "jobset.jobset.x-k8s.io/tf-dist-train: every replicatedJob's pods are ready\n"
    );

    let run = tfjob(&c, &["get", "jobset/tf-dist-train"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("State:      Running (every pod ready)"),
        "{}",
        run.stdout
    );
    for replica in ["ps-0", "worker-0", "worker-1", "worker-2"] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.trim_start().starts_with(replica) && l.contains("Running")),
            "{replica}: {}",
            run.stdout
        );
    }

    let run = tfjob(&c, &["logs", "jobset/tf-dist-train"]);
    run.expect_code(0);
    for replica in ["ps-0", "worker-0", "worker-1", "worker-2"] {
        assert!(
            run.stdout
                .contains(&format!("[{replica}] INFO:tensorflow:")),
            "{replica}: {}",
            run.stdout
        );
    }
    // The kubelet's read flags apply as for a TFJob; -r and --index pick by replicatedJob and
    // completion index.
    let run = tfjob(
        &c,
        &[
            "logs",
            "jobset/tf-dist-train",
            "-r",
            "Worker",
            "--index",
            "1",
            "--tail",
            "1",
        ],
    );
    run.expect_code(0);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    assert!(run.stdout.starts_with("[worker-1] "), "{}", run.stdout);

    let run = tfjob(&c, &["delete", "jobset/tf-dist-train"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "jobset.jobset.x-k8s.io \"tf-dist-train\" deleted\n"
    );
    assert!(c.list("jobsets", None).is_empty());
    assert!(
        jobset_pods(&c, "tf-dist-train").is_empty(),
        "its pods go with it"
    );

    let run = tfjob(&c, &["get", "jobset/tf-dist-train"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("not found"), "{}", run.stderr);
    let run = tfjob(&c, &["get", "jobset/Bad_Name"]);
    run.expect_code(2);
}

/// TFJobs as people write them (Kubeflow's dist-mnist shape with a chief and `tfjob-port`,
/// an evaluator job under ExitCode with Kueue's label): each exports, passes the server dry
/// run, and its pods read their own TF_CONFIG.
const REAL_WORLD: &[(&str, &str)] = &[
    (
        "dist-mnist",
        r#"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: dist-mnist
  namespace: default
spec:
  runPolicy:
    cleanPodPolicy: None
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:1.0
            ports:
            - name: tfjob-port
              containerPort: 3000
    PS:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:1.0
            ports:
            - name: tfjob-port
              containerPort: 3000
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sidecar.istio.io/inject: "false"
        spec:
          containers:
          - name: tensorflow
            image: kubeflow/tf-dist-mnist-test:1.0
            args: ["--train_steps", "100"]
            ports:
            - name: tfjob-port
              containerPort: 3000
"#,
    ),
    (
        "eval-kueue",
        r#"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: eval-kueue
  labels:
    kueue.x-k8s.io/queue-name: team-a
spec:
  successPolicy: AllWorkers
  runPolicy:
    backoffLimit: 4
    ttlSecondsAfterFinished: 600
  tfReplicaSpecs:
    worker:
      replicas: 2
      restartPolicy: ExitCode
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.13.0
            env:
            - name: MODEL_DIR
              value: /models/$(POD_NAME)
    evaluator:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.13.0
"#,
    ),
];

#[test]
fn real_world_tfjob_manifests_export_pass_the_dry_run_and_their_pods_read_their_tf_config() {
    let c = with_jobset();
    for (name, body) in REAL_WORLD {
        let (_dir, path) = crate::manifest_file(body);
        let run = tfjob(
            &c,
            &[
                "export",
                "--to",
                "jobset",
                "-f",
                path.to_str().unwrap(),
                "--dry-run=server",
                "-o",
                "json",
            ],
        );
        run.expect_code(0);
        let js: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(js["metadata"]["name"], *name);
        check_tf_config(&c, &js, false);
    }
    // The chief decides; tfjob-port 3000 is every address's port.
    let js = c.get("jobsets", Some("default"), "dist-mnist").unwrap();
    assert_eq!(
        js["spec"]["successPolicy"]["targetReplicatedJobs"],
        serde_json::json!(["chief"])
    );
    let p = &jobset_pods(&c, "dist-mnist")[0];
    let env = c
        .container_env(
            "default",
            p["metadata"]["name"].as_str().unwrap(),
            "tensorflow",
        )
        .unwrap();
    assert!(
        env.iter()
            .find(|(k, _)| k == "TF_CONFIG")
            .unwrap()
            .1
            .contains("dist-mnist-ps-0-1.dist-mnist.default.svc:3000")
    );
    let js = c.get("jobsets", Some("default"), "eval-kueue").unwrap();
    assert_eq!(
        js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "team-a"
    );
    assert_eq!(
        js["spec"]["successPolicy"]["targetReplicatedJobs"],
        serde_json::json!(["worker"])
    );
    assert_eq!(js["spec"]["ttlSecondsAfterFinished"], 600);
}

/// The upstream v0.12.0 CRD (reference data beside the checkout, never committed) served in
/// place of the test cluster's own copy: the API server's schema check of the exports is then
/// the real one's.
#[test]
fn exports_pass_a_server_dry_run_against_the_upstream_jobset_crd() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/reference/jobset/jobset.x-k8s.io_jobsets.yaml"
    );
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("skipped: the upstream JobSet CRD is not at {path}");
        return;
    };
    let mut crd: Value = serde_saphyr::from_str(&text).unwrap();
    crd["status"] = serde_json::json!({"conditions": [{"type": "Established", "status": "True"}]});
    let c = with_jobset();
    c.insert(crd);
    let served = c
        .get("customresourcedefinitions", None, "jobsets.jobset.x-k8s.io")
        .unwrap();
    assert!(served["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["coordinator"]["properties"]["replicatedJob"].is_object(),
        "the upstream CRD is the one served");
    let run = tfjob(
        &c,
        &article_args("export", &["--to", "jobset", "--dry-run=server"]),
    );
    run.expect_code(0);
    for t in templates() {
        let name = format!("t-{t}");
        let run = tfjob(
            &c,
            &template_args("export", &t, &name, &["--dry-run=server"]),
        );
        run.expect_code(0);
    }
    for (_, body) in REAL_WORLD {
        let (_dir, path) = crate::manifest_file(body);
        tfjob(
            &c,
            &[
                "export",
                "--to",
                "jobset",
                "-f",
                path.to_str().unwrap(),
                "--dry-run=server",
            ],
        )
        .expect_code(0);
    }
}

#[test]
fn diagnose_jobset_names_the_pod_the_scheduler_cannot_place() {
    let c = cluster(&format!(
        "jobset: running\nnodes: [{{name: node-1, cpu: \"16\", memory: 64Gi, gpu: 0}}]\nobjects:{SECRET}"
    ));
    tfjob(
        &c,
        &article_args("submit", &["--to", "jobset", "--skip-capacity-check"]),
    )
    .expect_code(0);
    let unschedulable = c.wait_for(SETTLE, |c| {
        jobset_pods(c, "tf-dist-train").iter().any(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable")
        })
    });
    assert!(unschedulable);
    let run = tfjob(&c, &["diagnose", "jobset/tf-dist-train"]);
    run.expect_code(4);
    assert!(
        run.stdout.contains("Pod tf-dist-train-worker-0-"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Insufficient nvidia.com/gpu"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("cannot be scheduled"), "{}", run.stderr);

    let c = running_jobset();
    let run = tfjob(&c, &["diagnose", "jobset/tf-dist-train"]);
    run.expect_code(0);
    assert!(
        run.stdout
            .starts_with("JobSet: every replicatedJob's pods are ready\n4 pods, none stuck"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_jobset_commands_refuse_a_jobset_the_plugin_did_not_make_and_touch_nothing() {
    let c = with_jobset();
    // A JobSet made by someone else (kubectl, another tool): no export annotation.
    c.insert(serde_json::json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "theirs", "namespace": "default"},
        "spec": {"replicatedJobs": []}
    }));
    c.clear_requests();
    for args in [
        &["wait", "jobset/theirs", "--timeout", "5s"][..],
        &["get", "jobset/theirs"],
        &["logs", "jobset/theirs"],
        &["delete", "jobset/theirs"],
        &["diagnose", "jobset/theirs"],
        &["probe", "jobset/theirs"],
    ] {
        let run = tfjob(&c, args);
        run.expect_code(3);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        assert!(
            run.stderr
                .contains("JobSet default/theirs was not made by kubectl-tfjob"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("kubectl get jobset theirs -n default"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    assert!(c.get("jobsets", Some("default"), "theirs").is_some());

    // What the plugin exports carries the mark.
    let run = tfjob(
        &c,
        &article_args("export", &["--to", "jobset", "-o", "json"]),
    );
    run.expect_code(0);
    let js: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        js["metadata"]["annotations"]["kubectl-tfjob.kubeflow.org/exported-from"],
        "TFJob"
    );
}

/// The flags only a TFJob takes are refused for a JobSet by the one rule
/// (`ops::target::tfjob_only`), before any request, naming the flag (exit 2).
#[test]
fn a_tfjob_only_flag_is_refused_for_a_jobset_before_any_request() {
    let c = with_jobset();
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().to_str().unwrap();
    c.clear_requests();
    for (args, said) in [
        (
            &["logs", "jobset/j", "--save", save][..],
            "--save is for a TFJob",
        ),
        (
            &["wait", "jobset/j", "--save", save],
            "--save is for a TFJob",
        ),
        (
            &["diagnose", "jobset/j", "--save", save],
            "--save is for a TFJob",
        ),
        (
            &["diagnose", "jobset/j", "--probe"],
            "--probe is for a TFJob; it is not taken for a JobSet: run `kubectl tfjob probe jobset/j`",
        ),
        (
            &["wait", "jobset/j", "--for", "training"],
            "--for training is for a TFJob; it is not taken for a JobSet: use --for all-running",
        ),
        (&["get", "jobset/j", "tf-a"], "jobset/j is shown on its own"),
        (
            &["delete", "jobset/j", "tf-a"],
            "jobset/j is deleted on its own",
        ),
    ] {
        let run = tfjob(&c, args);
        run.expect_code(2);
        assert!(run.stderr.contains(said), "{args:?}: {}", run.stderr);
    }
    assert!(c.requests().is_empty(), "{:?}", c.requests());
}

#[test]
fn wait_jobset_follows_a_watch_through_410_gone_and_a_dropped_stream_to_the_verdict() {
    // Matching faults combine: the watcher's first two watches (each from a resourceVersion)
    // get ERROR 410 and relist; the third (skip: 2) is closed after one event.
    let c = cluster(&format!(
        "jobset: running\nnodes: [{{name: node-1, cpu: \"16\", memory: 64Gi, gpu: 0}}]\nfaults:\n- match: {{verb: watch, resource: jobsets}}\n  goneOnRewatch: true\n  times: 2\n- match: {{verb: watch, resource: jobsets}}\n  closeAfterEvents: 1\n  skip: 2\n  times: 1\nobjects:{SECRET}"
    ));
    tfjob(
        &c,
        &article_args("submit", &["--to", "jobset", "--skip-capacity-check"]),
    )
    .expect_code(0);
    // No GPU: the workers stay Pending, so the first read cannot decide.
    assert!(c.wait_for(SETTLE, |c| {
        jobset_pods(c, "tf-dist-train").iter().any(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable")
        })
    }));
    c.clear_requests();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(["wait", "jobset/tf-dist-train", "--timeout", "60s"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kubectl-tfjob");
    let watching = |c: &TestCluster| {
        c.requests()
            .iter()
            .filter(|r| {
                r.verb == "watch" && r.resource == "jobsets" && r.query.contains("metadata.name")
            })
            .count()
    };
    // Both 410s are met before anything changes; then the third watch is open.
    assert!(
        c.wait_for(SETTLE, |c| watching(c) >= 3),
        "{:?}",
        c.requests()
    );
    // A change that decides nothing is that stream's one event: it closes, and is watched again.
    let mut js = c.get("jobsets", Some("default"), "tf-dist-train").unwrap();
    js["metadata"]["annotations"]["touched"] = "yes".into();
    c.insert(js);
    assert!(
        c.wait_for(SETTLE, |c| watching(c) >= 4),
        "{:?}",
        c.requests()
    );
    c.add_node(&tfjob_testcluster::NodeSpec::new("gpu-1", "16", "64Gi", 4));
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        stdout,
        "jobset.jobset.x-k8s.io/tf-dist-train: every replicatedJob's pods are ready\n"
    );
    let reqs = c.requests();
    let count = |verb: &str| {
        reqs.iter()
            .filter(|r| r.verb == verb && r.resource == "jobsets")
            .count()
    };
    // One read, then the watch: the initial list and a relist after each 410; no polling.
    assert_eq!(count("get"), 1, "{reqs:?}");
    assert!(count("list") >= 3, "{reqs:?}");
}

/// `delete jobset/NAME --wait` is bounded by the command's one deadline and names what it was
/// waiting for when it runs out: here the API answers no list or watch of JobSets after the
/// DELETE, so the JobSet is never seen gone.
#[test]
fn delete_jobset_wait_ends_at_the_deadline_naming_its_phase() {
    let c = running_jobset();
    c.set_faults(vec![
        Fault::status("list", "jobsets", 500).times(0),
        Fault::status("watch", "jobsets", 500).times(0),
    ]);
    let run = tfjob(
        &c,
        &[
            "delete",
            "jobset/tf-dist-train",
            "--wait",
            "--timeout",
            "2s",
        ],
    );
    run.expect_code(5);
    run.stderr_has(
        "--timeout 2s ran out while waiting for JobSet default/tf-dist-train to be deleted",
    );
    assert_eq!(
        run.stdout, "jobset.jobset.x-k8s.io \"tf-dist-train\" deleted\n",
        "said when the DELETE was accepted, before the wait"
    );
    let deletes = c
        .requests()
        .iter()
        .filter(|r| r.verb == "delete" && r.resource == "jobsets")
        .count();
    assert_eq!(deletes, 1, "one DELETE");
}

/// Follows `jobset/tf-dist-train` with `logs -f` until every replica printed a line, then
/// makes its containers exit as `exits` says (pod-name part, exit code), and returns the
/// command's exit code, stdout and stderr once it ended.
fn follow_then_exit(c: &TestCluster, exits: &[(&str, i32)]) -> (Option<i32>, String, String) {
    let args = ["logs", "jobset/tf-dist-train", "-f", "--timeout", "2m"];
    let (mut child, mut out) = crate::day2::spawn(c, &args);
    // Every replica's first line: it is reading all four pods.
    let mut seen = BTreeSet::new();
    let mut stdout = String::new();
    while seen.len() < 4 {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "ended early: {stdout}"
        );
        stdout.push_str(&line);
        if let Some((label, _)) = line.strip_prefix('[').and_then(|l| l.split_once(']')) {
            seen.insert(label.to_string());
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["ps-0", "worker-0", "worker-1", "worker-2"]
    );
    for p in jobset_pods(c, "tf-dist-train") {
        let name = p["metadata"]["name"].as_str().unwrap();
        for (part, code) in exits {
            if name.contains(part) {
                c.exit_container("default", name, "tensorflow", *code);
            }
        }
    }
    out.read_to_string(&mut stdout).unwrap();
    let mut stderr = String::new();
    let mut err = child.stderr.take().unwrap();
    err.read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert!(
        stdout
            .lines()
            .all(|l| ["[ps-0] ", "[worker-"].iter().any(|p| l.starts_with(p))),
        "stdout is the log only: {stdout}"
    );
    (status.code(), stdout, stderr)
}

/// `logs jobset/NAME -f` follows the JobSet's pods through the same follower as a TFJob's (one
/// watch of the JobSet, one of its pods by the JobSet label) and ends when the JobSet ends:
/// exit 0 when it completes (worker 0 decides success, the controller deletes the PS's Job),
/// exit 4 with the controller's reason when it fails (the PS exits 3 under ExitCode, which its
/// Job's pod failure policy fails at once).
#[test]
fn logs_follow_a_jobset_until_it_completes_or_fails() {
    let c = running_jobset();
    let (code, _, stderr) = follow_then_exit(&c, &[("-worker-", 0)]);
    assert_eq!(code, Some(0), "{stderr}");

    let c = with_jobset();
    let args = ["--wait", "--timeout", "60s", "--restart-policy", "ExitCode"];
    let submit = article_args("submit", &[&["--to", "jobset"][..], &args].concat());
    tfjob(&c, &submit).expect_code(0);
    let (code, _, stderr) = follow_then_exit(&c, &[("-ps-", 3)]);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        stderr.contains("JobSet tf-dist-train failed: FailedJobs"),
        "{stderr}"
    );
}

/// `export NAME --to jobset` (issue 61 item 7): the TFJob stored in the cluster exports as the
/// same JobSet as the job rendered from the same flags, and template flags do not go with NAME.
#[test]
fn a_stored_tfjob_exports_as_the_jobset_its_flags_would_make() {
    let c = with_jobset();
    tfjob(&c, &article_args("submit", &[])).expect_code(0);
    let stored = tfjob(
        &c,
        &["export", "tf-dist-train", "--to", "jobset", "-o", "json"],
    );
    stored.expect_code(0);
    let rendered = tfjob(
        &c,
        &article_args(
            "export",
            &["--to", "jobset", "--dry-run=server", "-o", "json"],
        ),
    );
    rendered.expect_code(0);
    let (mut a, b): (Value, Value) = (
        serde_json::from_str(&stored.stdout).unwrap(),
        serde_json::from_str(&rendered.stdout).unwrap(),
    );
    // The API server defaulted runPolicy.suspend (the CRD's default): carried as it is stored.
    assert_eq!(a["spec"]["suspend"], false);
    a["spec"].as_object_mut().unwrap().remove("suspend");
    assert_eq!(a, b);
    assert!(
        stored.stderr.contains("export: services:"),
        "{}",
        stored.stderr
    );
    let mixed = tfjob(
        &c,
        &[
            "export",
            "tf-dist-train",
            "--to",
            "jobset",
            "--image",
            "tf:2",
        ],
    );
    mixed.expect_code(2);
    assert!(
        mixed
            .stderr
            .contains("--image cannot be used with NAME (tf-dist-train)"),
        "{}",
        mixed.stderr
    );
    let missing = tfjob(&c, &["export", "nope", "--to", "jobset"]);
    assert_eq!(missing.code, 3, "{}", missing.stderr);
}
