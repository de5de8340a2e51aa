//! The client under API faults (one retry policy with a deadline, no noise on retries that
//! succeed, a lost create reply), `submit --replace`, stdout holding only the object asked for,
//! and one test per exit code. Outcomes and request counts are asserted, never elapsed time:
//! the retry deadline is made small through `KUBECTL_TFJOB_RETRY_DEADLINE` instead.

use kubectl_tfjob::error::{EXIT_CODES_HELP, ExitCode, exit_code_rows};

use crate::submit::{SECRET, submit_args};
use crate::{Cli, cluster, tfjob};

/// Non-dry-run creates of TFJobs, with their statuses (0 = no reply).
fn job_creates(c: &tfjob_testcluster::TestCluster) -> Vec<u16> {
    c.requests()
        .iter()
        .filter(|r| r.verb == "create" && r.resource == "tfjobs" && !r.dry_run)
        .map(|r| r.status)
        .collect()
}

/// Statuses of every request of one verb on one resource, in order (0 = no reply).
fn statuses(c: &tfjob_testcluster::TestCluster, verb: &str, resource: &str) -> Vec<u16> {
    c.requests()
        .iter()
        .filter(|r| r.verb == verb && r.resource == resource)
        .map(|r| r.status)
        .collect()
}

/// What kube's own tracing prints when a request fails (it must stay quiet by default).
fn assert_no_client_noise(stderr: &str) {
    for noise in ["kube_client", "ERROR", "failed with status"] {
        assert!(
            !stderr.contains(noise),
            "noise {noise:?} on stderr:\n{stderr}"
        );
    }
}

#[test]
fn persistent_throttling_ends_at_the_retry_deadline_and_says_so() {
    // Every real create is answered 429 (the dry run before it passes).
    let c = cluster(&format!(
        "faults:\n- match: {{verb: create, resource: tfjobs}}\n  status: 429\n  retryAfterSeconds: 1\n  skip: 1\n  times: 0\nobjects:{SECRET}"
    ));
    // The reproduction used --request-timeout 5s, which made it say "cannot reach".
    let run = Cli::new(Some(&c), &submit_args(&["--request-timeout", "5s"]))
        .env("KUBECTL_TFJOB_RETRY_DEADLINE", "2s")
        .run();
    run.expect_code(ExitCode::Failure as i32);
    assert!(run.stderr.contains("throttling"), "{}", run.stderr);
    assert!(!run.stderr.contains("cannot reach"), "{}", run.stderr);
    assert_no_client_noise(&run.stderr);
    let creates = job_creates(&c);
    // Retried (kube's inner retry is off, so every attempt is ours and visible here), all 429.
    assert!(creates.len() >= 2, "not retried: {creates:?}");
    assert!(creates.iter().all(|s| *s == 429), "{creates:?}");
    assert!(c.list("tfjobs", Some("default")).is_empty());
}

#[test]
fn a_retry_that_succeeds_prints_nothing_by_default_and_is_reported_at_v() {
    let scenario = format!(
        "faults:\n- match: {{verb: create, resource: tfjobs}}\n  status: 500\n  skip: 1\n  times: 1\nobjects:{SECRET}"
    );
    let c = cluster(&scenario);
    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(0);
    assert_no_client_noise(&run.stderr);
    assert!(!run.stderr.contains("retrying"), "{}", run.stderr);
    // One 500, then the create that went through: no second layer multiplying attempts.
    assert_eq!(job_creates(&c), vec![500, 201]);
    assert_eq!(c.list("tfjobs", Some("default")).len(), 1);

    let c = cluster(&scenario);
    let run = tfjob(&c, &submit_args(&["-v"]));
    run.expect_code(0);
    assert!(run.stderr.contains("retrying"), "{}", run.stderr);
    assert_eq!(job_creates(&c), vec![500, 201]);
}

#[test]
fn a_reset_readiness_read_is_retried() {
    let c = cluster(&format!(
        "faults:\n- match: {{verb: get, resource: namespaces}}\n  reset: true\n  times: 2\nobjects:{SECRET}"
    ));
    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(0);
    let ns_gets: Vec<u16> = statuses(&c, "get", "namespaces");
    assert_eq!(ns_gets, vec![0, 0, 200]);
}

#[test]
fn a_committed_create_whose_reply_was_lost_is_ours_even_after_a_failed_read_back() {
    // The create is stored but its reply lost; the retried create meets AlreadyExists; the first
    // GET reading the job back fails (the readiness GET before is let through).
    let c = cluster(&format!(
        "faults:\n- match: {{verb: create, resource: tfjobs}}\n  dropReply: true\n  skip: 1\n  times: 1\n- match: {{verb: get, resource: tfjobs}}\n  status: 500\n  skip: 1\n  times: 1\nobjects:{SECRET}"
    ));
    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("tfjob.kubeflow.org/tf-dist-train created"),
        "{}",
        run.stdout
    );
    assert!(!run.stderr.contains("someone else"), "{}", run.stderr);
    assert_eq!(job_creates(&c), vec![0, 409]);
    let gets: Vec<u16> = statuses(&c, "get", "tfjobs");
    assert_eq!(gets, vec![404, 500, 200]);
    assert_eq!(c.list("tfjobs", Some("default")).len(), 1);
}

#[test]
fn a_name_taken_between_the_checks_and_the_dry_run_is_a_conflict() {
    // Someone else's job exists, but the readiness GET does not see it (answered 404): the
    // dry-run create then meets 409 AlreadyExists.
    let c = cluster(&format!(
        "faults:\n- match: {{verb: get, resource: tfjobs}}\n  status: 404\n  times: 1\nobjects:{SECRET}\n  - apiVersion: kubeflow.org/v1\n    kind: TFJob\n    metadata: {{name: tf-dist-train, namespace: default}}\n    spec: {{tfReplicaSpecs: {{Worker: {{replicas: 1, template: {{spec: {{containers: [{{name: tensorflow, image: busybox}}]}}}}}}}}}}\n"
    ));
    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(ExitCode::NotReady as i32);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);
    assert!(c.writes().is_empty(), "{:?}", c.writes());
}

#[test]
fn replace_asks_before_any_request() {
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(&c, &submit_args(&["--replace"]));
    run.expect_code(ExitCode::Invalid as i32);
    assert!(run.stderr.contains("--yes"), "{}", run.stderr);
    assert!(c.requests().is_empty(), "{:?}", c.requests());
}

#[test]
fn replace_rereads_after_a_conflicting_status_write() {
    let c = cluster(&format!(
        "faults:\n- match: {{verb: update, resource: tfjobs}}\n  status: 409\n  times: 1\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    let first_uid =
        c.get("tfjobs", Some("default"), "tf-dist-train").unwrap()["metadata"]["uid"].clone();
    c.clear_requests();
    let run = tfjob(
        &c,
        &submit_args(&["--replace", "--yes", "--timeout", "60s"]),
    );
    run.expect_code(0);
    let updates: Vec<u16> = statuses(&c, "update", "tfjobs");
    // The injected 409 first; the operator's own status writes may add real ones (the race
    // this handles), each followed by a re-read; the last dry-run update goes through.
    let (last, before) = updates.split_last().expect("a dry-run update was sent");
    assert_eq!(*last, 200, "{updates:?}");
    assert!(
        !before.is_empty() && before.iter().all(|s| *s == 409),
        "{updates:?}"
    );
    let job = c.get("tfjobs", Some("default"), "tf-dist-train").unwrap();
    assert_ne!(job["metadata"]["uid"], first_uid);
    // The old job's pods were gone before the new job was created.
    let old_pods = c
        .list("pods", Some("default"))
        .into_iter()
        .filter(|p| {
            p["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| o.iter().any(|o| o["uid"] == first_uid))
        })
        .count();
    assert_eq!(old_pods, 0);
}

#[test]
fn submit_with_output_and_wait_prints_only_the_object_on_stdout() {
    for (format, check) in [("json", "json"), ("yaml", "yaml"), ("name", "name")] {
        let c = cluster(&format!("objects:{SECRET}"));
        let run = tfjob(
            &c,
            &submit_args(&["-o", format, "--wait", "--timeout", "60s"]),
        );
        run.expect_code(0);
        match check {
            "json" => {
                let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
                    panic!("stdout is not one JSON object ({e}):\n{}", run.stdout)
                });
                assert_eq!(v["kind"], "TFJob");
                python_json_tool_accepts(&run.stdout);
            }
            "yaml" => {
                let v: serde_json::Value =
                    serde_saphyr::from_str(&run.stdout).unwrap_or_else(|e| {
                        panic!("stdout is not one YAML document ({e}):\n{}", run.stdout)
                    });
                assert_eq!(v["kind"], "TFJob");
            }
            _ => assert_eq!(run.stdout, "tfjob.kubeflow.org/tf-dist-train\n"),
        }
        // What wait reports went to stderr.
        assert!(run.stderr.contains("condition met"), "{}", run.stderr);
    }
}

/// `python3 -m json.tool` accepts stdout, when python3 is installed.
fn python_json_tool_accepts(stdout: &str) {
    use std::io::Write;
    let child = std::process::Command::new("python3")
        .args(["-m", "json.tool"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("skipped the json.tool check: python3 not found");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdout.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "json.tool refused stdout: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn wait_flags_without_wait_are_refused_before_any_request() {
    let c = cluster(&format!("objects:{SECRET}"));
    for flags in [
        &["--for", "succeeded"][..],
        &["--timeout", "1m"],
        &["--pending-timeout", "1m"],
    ] {
        let run = tfjob(&c, &submit_args(flags));
        run.expect_code(ExitCode::Invalid as i32);
        assert!(run.stderr.contains("--wait"), "{flags:?}: {}", run.stderr);
    }
    assert!(c.requests().is_empty(), "{:?}", c.requests());
}

// ---------------------------------------------------------------------------------------------
// Exit codes: one representative path each, and the documented table.

#[test]
fn the_exit_code_table_in_help_and_readme_matches_error_rs() {
    let rows = exit_code_rows();
    let codes: Vec<i32> = rows.iter().map(|(c, _)| *c).collect();
    let all: Vec<i32> = ExitCode::ALL.iter().map(|c| *c as i32).collect();
    assert_eq!(codes, all, "{EXIT_CODES_HELP}");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for (code, meaning) in &rows {
        let row = format!("| {code} | {meaning} |");
        assert!(
            readme.replace('`', "").contains(&row),
            "README.md lacks the row {row:?}"
        );
    }
    // `--help` shows the same table.
    let help = Cli::new(None, &["--help"]).run();
    help.expect_code(0);
    // (clap wraps long lines to the terminal width, so compare with whitespace collapsed.)
    let collapse = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        collapse(&help.stdout).contains(&collapse(EXIT_CODES_HELP)),
        "{}",
        help.stdout
    );
}

#[test]
fn exit_0_success() {
    let c = cluster(&format!("objects:{SECRET}"));
    tfjob(&c, &submit_args(&[])).expect_code(ExitCode::Ok as i32);
}

#[test]
fn exit_1_api_failure_after_retries() {
    let c = cluster("faults:\n- match: {verb: get, resource: secrets}\n  status: 500\n  times: 0");
    let run = Cli::new(Some(&c), &["secret", "check"])
        .env("KUBECTL_TFJOB_RETRY_DEADLINE", "1s")
        .run();
    run.expect_code(ExitCode::Failure as i32);
    assert_no_client_noise(&run.stderr);
    let gets = c
        .requests()
        .iter()
        .filter(|r| r.resource == "secrets")
        .count();
    assert!(gets >= 2, "not retried: {gets}");
}

#[test]
fn exit_2_invalid_input_before_any_request() {
    let c = cluster(&format!("objects:{SECRET}"));
    let dir = tempfile::tempdir().unwrap();
    let not_utf8 = dir.path().join("key");
    std::fs::write(&not_utf8, b"sk-\xff\xfe\n").unwrap();
    let missing = dir.path().join("missing");
    let cases: Vec<Vec<String>> = vec![
        submit_args(&["-n", "Bad NS"])
            .iter()
            .map(|s| s.to_string())
            .collect(),
        submit_args(&["--api-secret-key", "../x"])
            .iter()
            .map(|s| s.to_string())
            .collect(),
        vec![
            "secret".into(),
            "create".into(),
            "--from-file".into(),
            missing.display().to_string(),
        ],
        vec![
            "secret".into(),
            "create".into(),
            "--from-file".into(),
            not_utf8.display().to_string(),
        ],
        vec![
            "secret".into(),
            "check".into(),
            "--key".into(),
            "../x".into(),
        ],
        vec!["diagnose".into(), "x".into(), "-n".into(), "Bad NS".into()],
    ];
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = tfjob(&c, &args);
        run.expect_code(ExitCode::Invalid as i32);
        // No hint suggesting a command that would refuse the same input.
        assert!(
            !run.stderr.contains("secret create --key ../x"),
            "{}",
            run.stderr
        );
    }
    assert!(c.requests().is_empty(), "{:?}", c.requests());
}

#[test]
fn exit_3_cluster_not_ready() {
    let c = cluster(&format!("operator: absent\nobjects:{SECRET}"));
    let run = tfjob(&c, &submit_args(&[]));
    run.expect_code(ExitCode::NotReady as i32);
    assert!(c.writes().is_empty());
}

#[test]
fn exit_4_job_failed() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 0}}\n  exitCode: 1\n  runMs: 50\nobjects:{SECRET}"
    ));
    // Under Never the one exit fails the job (under OnFailure it would be a routine restart).
    tfjob(&c, &submit_args(&["--restart-policy", "Never"])).expect_code(0);
    let run = tfjob(
        &c,
        &[
            "wait",
            "tf-dist-train",
            "--for",
            "finished",
            "--timeout",
            "60s",
        ],
    );
    run.expect_code(ExitCode::JobFailed as i32);
}

#[test]
fn exit_5_timeout() {
    // Containers run forever (no succeedAfterMs): Succeeded never comes, whatever the speed.
    let c = cluster(&format!("objects:{SECRET}"));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    let run = tfjob(
        &c,
        &[
            "wait",
            "tf-dist-train",
            "--for",
            "succeeded",
            "--timeout",
            "1s",
        ],
    );
    run.expect_code(ExitCode::Timeout as i32);
}

#[test]
fn exit_130_interrupted() {
    let c = cluster(&format!("objects:{SECRET}"));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    c.clear_requests();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args([
            "wait",
            "tf-dist-train",
            "--for",
            "succeeded",
            "--timeout",
            "10m",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once it is following the job (it has opened a watch).
    assert!(c.wait_for(std::time::Duration::from_secs(60), |c| {
        c.requests().iter().any(|r| r.verb == "watch")
    }));
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(ExitCode::Interrupted as i32),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        c.writes().is_empty(),
        "the job was touched: {:?}",
        c.writes()
    );
}

/// The day-two commands read through the same retry policy as submit: kube's own retry is off,
/// so without it one 503 would end `list`, `get`, `logs` or `suspend`.
#[test]
fn day_two_reads_retry_a_transient_failure() {
    let c = cluster(
        "faults:\n- match: {verb: list, resource: tfjobs}\n  status: 503\n  times: 1\n- match: {verb: get, resource: tfjobs}\n  status: 503\n  times: 1\n- match: {verb: list, resource: pods}\n  status: 503\n  times: 1",
    );
    c.insert(
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "steady", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}),
    );

    let run = tfjob(&c, &["list"]);
    run.expect_code(0);
    assert!(run.stdout.contains("steady"), "{}", run.stdout);
    assert_no_client_noise(&run.stderr);
    assert_eq!(statuses(&c, "list", "tfjobs"), vec![503, 200]);
    assert_eq!(statuses(&c, "list", "pods"), vec![503, 200]);

    let run = tfjob(&c, &["get", "steady", "-o", "json"]);
    run.expect_code(0);
    let job: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is the job");
    assert_eq!(job["metadata"]["name"], "steady");
    assert_eq!(statuses(&c, "get", "tfjobs"), vec![503, 200]);
}
