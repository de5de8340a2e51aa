//! `wait` end to end: each way a job gets stuck, found and explained (diagnose's own tests are
//! in [`crate::diagnose`]).

use serde_json::json;

use crate::submit::{SECRET, submit_args};
use crate::{args, cluster, tfjob};

/// Submits the article's job on a cluster built from `scenario` (the Secret is added), past the
/// capacity pre-flight: these tests are about a job already created that gets stuck.
pub(crate) fn submitted(scenario: &str) -> tfjob_testcluster::TestCluster {
    let c = cluster(&format!("{scenario}\nobjects:{SECRET}"));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    c
}

#[test]
fn reaches_running_and_prints_plain_progress_without_a_tty() {
    let c = submitted("");
    let run = tfjob(&c, &args("wait tf-dist-train --for running --timeout 30s"));
    run.exit(0);
    run.stdout_has("tfjob.kubeflow.org/tf-dist-train condition met (Running)");
    run.stderr_has("tfjob/tf-dist-train: ");
    let run = tfjob(
        &c,
        &args("wait tfjob/tf-dist-train --for all-running --settle 0 --timeout 30s"),
    );
    run.exit(0);
    run.stderr_has("PS 1/1 running");
    run.stderr_has("Worker 3/3 running");
}

#[test]
fn json_output_is_one_object_per_line() {
    let c = submitted("");
    let run = tfjob(
        &c,
        &args("wait tf-dist-train -o json --settle 0 --timeout 30s"),
    );
    run.exit(0);
    let events: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events.last().unwrap()["event"], "reached");
    assert!(events.iter().any(|e| e["event"] == "progress"));
}

#[test]
fn unknown_job_is_not_found() {
    let c = cluster("");
    let run = tfjob(&c, &args("wait nope --timeout 5s"));
    run.exit(3);
    run.stderr_has("tfjobs.kubeflow.org \"nope\" not found in namespace default");
}

#[test]
fn stuck_on_gpus_fails_after_pending_timeout_and_says_why() {
    let c = submitted(
        "nodes:\n- {name: cpu-1, cpu: '32', memory: 128Gi, gpu: 0}\n- {name: cpu-2, cpu: '32', memory: 128Gi, gpu: 0}",
    );
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --pending-timeout 1s --timeout 30s"),
    );
    run.exit(4);
    // The placement model answers first: no GPU anywhere can never be had.
    assert!(
        run.stderr.contains("unschedulable") || run.stderr.contains("can never be scheduled"),
        "{}",
        run.stderr
    );
    assert!(
        run.all().contains("Insufficient nvidia.com/gpu"),
        "{}",
        run.all()
    );
}

#[test]
fn unreachable_registry_fails_after_the_grace_period_with_one_line_per_change() {
    // Transient: the registry does not answer. The grace applies, and the kubelet's
    // ErrImagePull ↔ ImagePullBackOff alternation (every 200 ms here) is not a change.
    let c = submitted(
        "unreachableImages: ['tensorflow/tensorflow:2.13.0-gpu']\ntiming: {imagePullBackOffMs: 100}",
    );
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --image-pull-grace 3s --timeout 30s"),
    );
    run.exit(4);
    run.stderr_has("cannot pull image \"tensorflow/tensorflow:2.13.0-gpu\"");
    let progress: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("tfjob/tf-dist-train: "))
        .collect();
    assert!(
        progress.iter().all(|l| !l.contains("(ErrImagePull)")),
        "{progress:#?}"
    );
    // Each distinct state once: pods appear, pull, back off; never the same pair again.
    let mut seen = std::collections::HashSet::new();
    assert!(
        progress.iter().all(|l| seen.insert(*l)),
        "a progress line repeats: {progress:#?}"
    );
}

#[test]
fn missing_image_ends_the_wait_at_once_with_the_registrys_answer() {
    let c = submitted("missingImages: ['tensorflow/tensorflow:2.13.0-gpu']");
    // The 60 s default grace is not waited out: NotFound is permanent.
    let started = std::time::Instant::now();
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 60s"));
    let took = started.elapsed();
    run.exit(4);
    run.stderr_has("image \"tensorflow/tensorflow:2.13.0-gpu\" does not exist");
    run.stderr_has("code = NotFound");
    assert!(
        took < std::time::Duration::from_secs(5),
        "took {took:?}: {}",
        run.stderr
    );
    // The cluster's side: the pull failed at most a few times (the kubelet's back-off here is
    // 200 ms), not for the grace's whole minute.
    let failed = c
        .list("events", Some("default"))
        .iter()
        .filter(|e| {
            e["reason"] == "Failed"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("code = NotFound"))
        })
        .map(|e| e["count"].as_i64().unwrap_or(1))
        .sum::<i64>();
    assert!((1..=20).contains(&failed), "{failed} failed pulls");
}

#[test]
fn a_secret_deleted_after_submit_fails_fast() {
    let c = submitted("timing: {scheduleMs: 300}");
    c.delete("secrets", Some("default"), "taotoken-secret");
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 30s"));
    run.exit(4);
    run.stderr_has("CreateContainerConfigError");
    run.stderr_has("taotoken-secret");
}

#[test]
fn crash_loop_fails_fast() {
    let c = submitted(
        "containerBehaviour:\n- match: {replicaType: ps}\n  exitCode: 1\n  runMs: 50\n  crashLoop: true\n  log: 'ValueError: bad flag'",
    );
    // All replicas run for a moment before the PS crashes, so wait for something further away.
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for succeeded --timeout 30s"),
    );
    run.exit(4);
    run.stderr_has("crash-looping");
}

#[test]
fn failed_job_ends_the_wait_with_the_operator_message() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 100\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--restart-policy", "Never"])).expect_code(0);
    let run = tfjob(&c, &args("wait tf-dist-train --for finished --timeout 30s"));
    run.exit(4);
    // Whichever is seen first: the operator's Failed condition, or the failed pod that makes
    // it (restartPolicy Never: nothing restarts it).
    assert!(
        run.stderr
            .contains("has failed because 1 Worker replica(s) failed")
            || run.stderr.contains(
                "Worker-1 (pod tf-dist-train-worker-1) failed with exit code 1, Error; restartPolicy Never does not restart it"
            ),
        "{}",
        run.stderr
    );
}

/// The article's job inserted behind submit's back (submit refuses while the operator is not
/// ready), on a cluster whose operator Deployment has 0 ready replicas.
fn unreconciled() -> tfjob_testcluster::TestCluster {
    unreconciled_with("", None)
}

/// [`unreconciled`] with more scenario lines, and the job's creationTimestamp when given.
fn unreconciled_with(scenario: &str, created: Option<&str>) -> tfjob_testcluster::TestCluster {
    let c = cluster(&format!(
        "operator: installed\n{scenario}\nobjects:{SECRET}"
    ));
    crate::stored(&c, |job| {
        if let Some(t) = created {
            job["metadata"]["creationTimestamp"] = t.into();
        }
    });
    c
}

#[test]
fn an_operator_with_no_ready_replica_is_named_at_once() {
    let c = unreconciled();
    // A long --timeout: the answer must not wait for it.
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 10m"));
    run.exit(3);
    assert!(
        run.stderr.contains(
            "nothing reconciles TFJob default/tf-dist-train: training-operator kubeflow/training-operator is not ready (0/1 replicas ready)"
        ),
        "{}",
        run.stderr
    );
    run.stderr_has("stays Pending");
    run.stderr_has("--pending-timeout");
    assert!(!run.stderr.contains("timed out"), "{}", run.stderr);
    // diagnose says the same, in the same words.
    let diag = tfjob(&c, &args("diagnose tf-dist-train"));
    assert!(
        diag.stdout.contains(
            "training-operator kubeflow/training-operator is not ready (0/1 replicas ready)"
        ),
        "{}",
        diag.stdout
    );
    assert!(!diag.stdout.contains("picking it up"), "{}", diag.stdout);
    diag.exit(3);

    // Asked to wait for it: waits --pending-timeout, then says the same.
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --pending-timeout 1s --timeout 10m"),
    );
    run.exit(3);
    run.stderr_has("Waiting up to --pending-timeout");
    run.stderr_has("nothing reconciles TFJob");
}

#[test]
fn an_operator_that_comes_up_within_the_pending_timeout_is_waited_for() {
    let c = unreconciled();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args([
            "wait",
            "tf-dist-train",
            "--for",
            "created",
            "--pending-timeout",
            "5m",
            "--timeout",
            "5m",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Whether the waiter saw the broken operator or not, it must reach Created once the
    // operator is ready and reconciles the job.
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        c.requests().iter().any(|r| r.resource == "deployments")
    }));
    c.set_operator_mode(tfjob_testcluster::OperatorMode::Running);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("condition met (Created)"), "{stdout}");
}

#[test]
fn the_articles_job_never_succeeds_while_a_worker_cannot_run() {
    // 1 PS + 3 one-GPU workers on a cluster with one GPU: the operator says Running (worker-0
    // runs), two workers are Unschedulable.
    let c = submitted("nodes:\n- {name: gpu-1, cpu: '32', memory: 128Gi, gpu: 1}");
    // Settled first (PS and worker-0 running, the other two marked Unschedulable by the
    // scheduler, a write of its own), so the progress line below is deterministic.
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        let pods = c.list("pods", Some("default"));
        let unschedulable = pods
            .iter()
            .filter(|p| {
                p["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable")
            })
            .count();
        pods.iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count()
            == 2
            && unschedulable == 2
    }));
    // The placement model says the three GPUs can never be had at once: exit 4, not a timeout.
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 3m"));
    run.exit(4);
    run.stderr_has("can never be scheduled");
    assert!(!run.stdout.contains("condition met"), "{}", run.stdout);
    run.stderr_has("Worker 1/3 running, 2 pending (Unschedulable)");
    assert!(
        c.get("tfjobs", Some("default"), "tf-dist-train").unwrap()["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Running" && c["status"] == "True"),
        "the operator should consider the job Running"
    );
    // Checked once: not all running, so not met.
    tfjob(&c, &args("wait tf-dist-train --timeout 0")).expect_code(5);
    // With a pending limit: fails with the scheduler's reason.
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --pending-timeout 1s --timeout 30s"),
    );
    run.exit(4);
    // The placement model answers before the pending limit, naming the resource.
    run.stderr_has("nvidia.com/gpu");
    // The operator's meaning, on request, with the replicas that do not run named.
    let run = tfjob(&c, &args("wait tf-dist-train --for running --timeout 30s"));
    run.exit(0);
    for worker in ["tf-dist-train-worker-1", "tf-dist-train-worker-2"] {
        assert!(
            run.stderr
                .contains(&format!("{worker} (Pending: Unschedulable: ")),
            "{}",
            run.stderr
        );
    }
    run.stderr_has("Insufficient nvidia.com/gpu");
    assert!(
        !run.stdout.contains("Unschedulable: "),
        "notes go to stderr: {}",
        run.stdout
    );
}

#[test]
fn the_articles_job_succeeds_only_once_all_four_replicas_run() {
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "60s"]),
    );
    run.exit(0);
    run.stdout_has("condition met (all replicas Running)");
    // The last progress line before success shows all four replicas running (progress is on
    // stderr: stdout holds only "condition met").
    let last = run
        .stderr
        .lines()
        .rfind(|l| l.starts_with("tfjob/tf-dist-train: "))
        .unwrap();
    assert!(
        last.contains("PS 1/1 running  Worker 3/3 running"),
        "{last}"
    );
    let pods = c.list("pods", Some("default"));
    assert_eq!(pods.len(), 4);
    assert!(pods.iter().all(|p| p["status"]["phase"] == "Running"));
    // kubectl's --timeout 0: the condition holds now, so exit 0.
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 0 --settle 0"));
    run.exit(0);
    run.stdout_has("condition met (all replicas Running)");
}

#[test]
fn every_watch_failing_falls_back_to_reading_the_job() {
    for effect in ["status: 500", "reset: true"] {
        let c = cluster(&format!(
            "succeedAfterMs: 300\nfaults:\n- match: {{verb: watch}}\n  {effect}\n  times: 0\nobjects:{SECRET}"
        ));
        tfjob(&c, &submit_args(&[])).expect_code(0);
        let run = tfjob(
            &c,
            &args("wait tf-dist-train --for succeeded --timeout 60s"),
        );
        run.exit(0);
        assert!(
            run.stdout.contains("condition met (Succeeded)"),
            "{effect}: {}",
            run.stdout
        );
        let gets = c
            .requests()
            .iter()
            .filter(|r| r.verb == "get" && r.resource == "tfjobs")
            .count();
        assert!(gets >= 2, "{effect}: no direct reads ({gets} GETs)");
    }
}

#[test]
fn dropped_watches_and_410_gone_do_not_stop_the_wait() {
    let c = cluster(&format!(
        "timing: {{scheduleMs: 200, startMs: 200}}\nfaults:\n- match: {{verb: watch, resource: pods}}\n  closeAfterEvents: 2\n  times: 3\n- match: {{verb: watch, resource: pods}}\n  goneOnRewatch: true\n  times: 2\n- match: {{verb: watch, resource: tfjobs}}\n  goneOnRewatch: true\n  times: 2\n- match: {{verb: watch, resource: tfjobs}}\n  closeAfterEvents: 1\n  times: 2\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for all-running --timeout 30s"),
    );
    run.exit(0);
    let watches = c.requests().iter().filter(|r| r.verb == "watch").count();
    assert!(watches > 2, "the watches were not dropped: {watches}");
    // After a 410 the pod watch starts over from resourceVersion 0.
    let fresh_pod_watches = c
        .requests()
        .iter()
        .filter(|r| {
            r.verb == "watch" && r.resource == "pods" && r.query.contains("resourceVersion=0")
        })
        .count();
    assert!(
        fresh_pod_watches >= 2,
        "no restart after 410: {:?}",
        c.requests()
    );
}

/// The request count must not grow with the number of replicas.
#[test]
fn api_requests_do_not_grow_with_replicas() {
    let mut counts = Vec::new();
    for workers in ["10", "1000"] {
        let c = cluster(&format!(
            "nodes:\n- {{name: big, cpu: '100000', memory: 100000Gi, gpu: 10000, pods: 5000}}\nobjects:{SECRET}"
        ));
        let mut submit = submit_args(&[]);
        let i = submit.iter().position(|a| *a == "--workers").unwrap();
        submit[i + 1] = workers;
        tfjob(&c, &submit).expect_code(0);
        c.clear_requests();
        let run = tfjob(
            &c,
            &args("wait tf-dist-train --for all-running --timeout 120s --no-probe"),
        );
        run.exit(0);
        counts.push(c.requests().len());
        // The in-pod checks before "condition met" exec into one replica of each role, whatever
        // the job's size (their peer lists grow with it; the watch requests above do not).
        c.clear_requests();
        tfjob(
            &c,
            &args("wait tf-dist-train --for all-running --timeout 120s"),
        )
        .exit(0);
        let probed: std::collections::BTreeSet<_> = c
            .requests()
            .into_iter()
            .filter(|r| r.subresource == "exec")
            .filter_map(|r| r.name)
            .collect();
        assert_eq!(
            probed.into_iter().collect::<Vec<_>>(),
            ["tf-dist-train-ps-0", "tf-dist-train-worker-0"]
        );
    }
    eprintln!("API requests of wait --for all-running at 10 / 1000 workers: {counts:?}");
    assert!(
        counts[1] <= counts[0] + 2,
        "requests grew with replicas: {counts:?}"
    );
}

#[test]
fn ctrl_c_leaves_the_job_alone_and_says_how_to_resume() {
    // Stuck pulling (within the 60s grace), so the wait is still undecided at the Ctrl-C.
    let c = submitted("unreachableImages: ['tensorflow/tensorflow:2.13.0-gpu']");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(["wait", "tf-dist-train", "--timeout", "60s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    assert!(c.wait_for(std::time::Duration::from_secs(10), |c| {
        c.requests()
            .iter()
            .any(|r| r.verb == "watch" && r.resource == "pods")
    }));
    let before = c.writes().len();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "Resume with: kubectl tfjob wait tf-dist-train -n default --kubeconfig {} --for all-running",
            c.kubeconfig().display()
        )),
        "{stderr}"
    );
    assert_eq!(c.writes().len(), before, "the job was touched");
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
}

#[test]
fn replicas_that_each_crash_then_run_end_submit_wait_with_success() {
    // Every replica exits twice while the others come up, then trains: routine under
    // OnFailure (the templates' policy), not a failure. The settle window outlasts the
    // simulated crashes (50 ms each) by far: a 1s one ended before them once, on a machine
    // loaded by CI's real-node setup, and the wait rightly saw no restart.
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{podName: 'tf-dist-train-*'}}\n  exitCode: 1\n  runMs: 50\n  crashTimes: 2\nobjects:{SECRET}"
    ));
    let run = tfjob(
        &c,
        &submit_args(&[
            "--skip-capacity-check",
            "--wait",
            "--settle",
            "10s",
            "--timeout",
            "2m",
        ]),
    );
    run.exit(0);
    run.stdout_has("condition met");
    // Each restart is shown (the count depends on which statuses the watch delivered apart).
    for replica in ["PS-0", "Worker-0", "Worker-1", "Worker-2"] {
        assert!(
            run.stderr
                .contains(&format!("{replica} restarted (exit 1), ")),
            "{replica}: {}",
            run.stderr
        );
    }
    assert!(!run.stderr.contains("1 restarts"), "{}", run.stderr);
}

#[test]
fn a_replica_that_fails_on_every_start_ends_submit_wait_with_4() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 50\n  crashLoop: true\n  log: 'ValueError: bad flag'\nobjects:{SECRET}"
    ));
    let run = tfjob(
        &c,
        &submit_args(&["--skip-capacity-check", "--wait", "--timeout", "2m"]),
    );
    run.exit(4);
    for part in [
        "Worker-1 (pod tf-dist-train-worker-1) is crash-looping: container tensorflow restarted ",
        "during the wait, last exit code 1 (Error) (--max-restarts 3)",
        "Worker-1 restarted (exit 1), ",
    ] {
        assert!(run.stderr.contains(part), "{part:?}: {}", run.stderr);
    }
    // --max-restarts sets the bound.
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for succeeded --max-restarts 1 --timeout 2m"),
    );
    run.exit(4);
    run.stderr_has("is crash-looping");
    run.stderr_has("(--max-restarts 1)");
}

#[test]
fn once_the_watch_shows_the_condition_the_waiter_asks_nothing_more() {
    // Stuck pulling until the test lets the image exist, so the waiter is watching before the
    // operator writes Running.
    let c = submitted("unreachableImages: ['tensorflow/tensorflow:2.13.0-gpu']");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args([
            "wait",
            "tf-dist-train",
            "--for",
            "running",
            "--timeout",
            "2m",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        let r = c.requests();
        ["tfjobs", "pods"]
            .iter()
            .all(|res| r.iter().any(|r| r.verb == "watch" && r.resource == *res))
    }));
    c.set_unreachable_images(vec![]);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("condition met (Running)"), "{stdout}");
    let running = c
        .condition_log()
        .into_iter()
        .find(|(job, t, _)| job.ends_with("tf-dist-train") && t == "Running")
        .map(|(_, _, at)| at)
        .expect("the operator wrote Running");
    let after: Vec<String> = c
        .requests()
        .iter()
        .filter(|r| r.at > running)
        .map(|r| format!("{} {}?{}", r.verb, r.path, r.query))
        .collect();
    assert!(after.is_empty(), "requests after the condition: {after:?}");
}

/// A role that may not read Deployments (namespace-scoped, as in multi-tenant Kubeflow).
const NO_DEPLOYMENTS: &str =
    "rbac: {deny: [{verb: list, resource: deployments}, {verb: get, resource: deployments}]}";

#[test]
fn an_operator_the_user_cannot_see_does_not_stop_submit_wait() {
    let c = cluster(&format!("{NO_DEPLOYMENTS}\nobjects:{SECRET}"));
    let run = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "2m"]),
    );
    run.exit(0);
    assert!(
        run.stderr.contains(
            "could not look for the training-operator Deployment (forbidden to list deployments"
        ),
        "{}",
        run.stderr
    );
    run.stdout_has("condition met");
}

#[test]
fn a_job_without_status_long_after_its_creation_is_unreconciled_in_wait_and_diagnose() {
    // Nothing reconciles, and the operator cannot be seen: the job's own age decides.
    let c = unreconciled_with(NO_DEPLOYMENTS, Some("2026-01-01T00:00:00Z"));
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 10m"));
    run.exit(3);
    run.stderr_has("nothing reconciles TFJob default/tf-dist-train: it has no status");
    assert!(
        run.stderr.contains(
            "cannot tell whether the training-operator is running (forbidden to list deployments"
        ),
        "{}",
        run.stderr
    );
    let diag = tfjob(&c, &args("diagnose tf-dist-train"));
    diag.exit(3);
    diag.stdout_has("the training-operator is not reconciling this job");
    // A young job is given --pending-timeout (here 1s) from its creation, then the same answer.
    let c = unreconciled_with(NO_DEPLOYMENTS, None);
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --pending-timeout 1s --timeout 10m"),
    );
    run.exit(3);
    run.stderr_has("An operator may still reconcile the job");
    run.stderr_has("nothing reconciles TFJob");
}

#[test]
fn no_command_lists_every_deployment_in_the_cluster() {
    let c = cluster(&format!(
        "gatewayKey: {}\nobjects:{SECRET}",
        crate::TEST_KEY
    ));
    tfjob(&c, &crate::submit::article_args("check", &[])).expect_code(0);
    tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "2m"]),
    )
    .expect_code(0);
    tfjob(&c, &args("wait tf-dist-train --settle 0 --timeout 1m")).expect_code(0);
    tfjob(&c, &args("diagnose tf-dist-train")).expect_code(0);
    let deployments: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.resource == "deployments")
        .collect();
    assert!(!deployments.is_empty(), "the operator was never looked for");
    for r in &deployments {
        let selected = r.name.is_some() || r.query.contains("labelSelector=");
        assert!(
            selected,
            "unfiltered Deployment list: {} {}?{}",
            r.verb, r.path, r.query
        );
    }
}

/// The closing diagnosis reads at most this many logs (`diagnose::collect::MAX_LOGS`).
const MAX_DIAGNOSE_LOGS: usize = 3;

/// pods/log answers 500 as kube-apiserver does when it cannot reach the kubelet.
const NO_KUBELET_LOGS: &str = "faults:\n- match: {verb: get, resource: pods, subresource: log}\n  status: 500\n  message: 'no preferred addresses found; known addresses: []'\n  times: 0";

#[test]
fn a_failed_job_is_reported_within_its_timeout_when_no_log_can_be_read() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 50\n{NO_KUBELET_LOGS}\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--restart-policy", "Never"])).expect_code(0);
    assert!(c.wait_for(std::time::Duration::from_secs(60), |c| {
        c.get("tfjobs", Some("default"), "tf-dist-train")
            .is_some_and(|j| {
                j["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Failed" && c["status"] == "True")
            })
    }));
    let run = tfjob(&c, &args("wait tf-dist-train --for succeeded --timeout 5s"));
    run.exit(4);
    run.stderr_has("TFJob tf-dist-train failed: TFJob default/tf-dist-train has failed because 1 Worker replica(s) failed");
    assert!(
        run.stderr.contains(
            "the kubelet could not serve the log of pod tf-dist-train-worker-1 (HTTP 500: no preferred addresses found; known addresses: [])"
        ),
        "{}",
        run.stderr
    );
    // Read once, never retried: the verdict does not wait for its decoration.
    let log_reads = c
        .requests()
        .iter()
        .filter(|r| r.subresource == "log")
        .count();
    assert!(log_reads <= MAX_DIAGNOSE_LOGS, "{log_reads} log reads");
}

#[test]
fn a_crash_loop_is_reported_when_no_log_can_be_read() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 50\n  crashLoop: true\n{NO_KUBELET_LOGS}\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    let run = tfjob(&c, &args("wait tf-dist-train --for succeeded --timeout 2m"));
    run.exit(4);
    run.stderr_has("Worker-1 (pod tf-dist-train-worker-1) is crash-looping");
    run.stderr_has("the kubelet could not serve the log of pod tf-dist-train-worker-1");
    assert!(!run.stderr.contains("its last log lines"), "{}", run.stderr);
    let log_reads = c
        .requests()
        .iter()
        .filter(|r| r.subresource == "log")
        .count();
    assert!(log_reads <= MAX_DIAGNOSE_LOGS, "{log_reads} log reads");
}

#[test]
fn timeout_bounds_the_whole_wait_the_closing_diagnosis_included() {
    // Containers run forever, so Succeeded never comes; event lists would take a minute.
    let c = submitted(
        "faults:\n- match: {verb: list, resource: events}\n  latencyMs: 60000\n  times: 0",
    );
    let run = tfjob(&c, &args("wait tf-dist-train --for succeeded --timeout 3s"));
    run.exit(5);
    run.stderr_has("of watching (--timeout 3s bounds the whole command");
    run.stderr_has("(no diagnosis: --timeout ran out before it could be read)");
}

#[test]
fn logs_follow_ends_as_wait_does_a_restart_is_shown_a_crash_loop_is_4() {
    // Each replica exits once, then trains to the end: followed to Succeeded, exit 0.
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{podName: 'tf-dist-train-*'}}\n  exitCode: 1\n  runMs: 50\nsucceedAfterMs: 1500\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    let run = tfjob(&c, &args("logs tf-dist-train -f --timeout 2m"));
    run.exit(0);
    run.stdout_has("[worker-0]");
    // A worker that fails on every start: a crash loop ends the follow with exit 4.
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 50\n  crashLoop: true\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    let run = tfjob(&c, &args("logs tf-dist-train -f --timeout 2m"));
    run.exit(4);
    run.stderr_has("Worker-1 (pod tf-dist-train-worker-1) is crash-looping");
}

/// The namespace deleted under `wait --all`: said once, no diagnosis per job, exit 4 as for a
/// deleted job.
#[test]
fn a_namespace_deleted_mid_wait_is_said_once() {
    let c = cluster("");
    c.insert(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"},
        "status": {"phase": "Active"}}),
    );
    let n = 25;
    for i in 0..n {
        let mut j = crate::day2::timed_job(
            &format!("tf-{i:02}"),
            "2026-12-01T10:00:00Z",
            "2026-12-01T10:00:01Z",
        );
        j["metadata"]["namespace"] = "team".into();
        j.as_object_mut().unwrap().remove("status");
        c.insert(j);
    }
    c.clear_requests();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .env("HOME", std::env::temp_dir().join("kubectl-tfjob-e2e-home"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args([
            "wait",
            "--all",
            "-n",
            "team",
            "--for",
            "succeeded",
            "--timeout",
            "2m",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Every job's wait has its watch open.
    let watching = c.wait_for(std::time::Duration::from_secs(60), |c| {
        c.arrived()
            .iter()
            .filter(|r| r.verb == "watch" && r.resource == "tfjobs")
            .count()
            >= n
    });
    c.delete("namespaces", None, "team");
    let out = child.wait_with_output().unwrap();
    assert!(watching, "the waits never started");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(
        stderr
            .matches("namespace team was deleted while waiting")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("its 25 TFJobs went with it"), "{stderr}");
    assert!(!stderr.contains("Diagnosis"), "{stderr}");
    // Besides the jobs' progress lines (as many as their pods made progress before the
    // namespace went, which depends on the machine's load), the deletion is a line or two.
    let other = stderr
        .lines()
        .filter(|l| !l.starts_with("tfjob/") && !l.trim().is_empty())
        .count();
    assert!(other <= 3, "{other} lines besides progress:\n{stderr}");
}
