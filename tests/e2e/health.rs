//! One answer to "is it training?" (issue 46): for each case, `wait`, `get`, `list`,
//! `diagnose` and `probe` say the same thing about the same replica, each with its code from
//! the one exit table (wait: 5 while it waits, 4 when it failed; diagnose: 4 when it failed;
//! probe: 3 for a replica it could not probe, 4 for a check that failed; list/get: 0, data).

use std::time::Duration;

use tfjob_testcluster::TestCluster;

use crate::submit::{SECRET, submit_args};
use crate::{Run, TEST_KEY, args, cluster, tfjob};

const OTHER_KEY: &str = "sk-e2e-rotated-key-ffff-eeee-dddd";

/// The article's job on a cluster whose worker-1 behaves as `behaviour` (YAML under its
/// match) and whose gateway takes `TEST_KEY`; submitted without waiting.
pub(crate) fn article_with_worker_1(behaviour: &str, flags: &[&str]) -> TestCluster {
    let c = cluster(&format!(
        "gatewayKey: {TEST_KEY}\ncontainerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n{behaviour}\nobjects:{SECRET}"
    ));
    let mut all = vec!["--skip-capacity-check"];
    all.extend_from_slice(flags);
    tfjob(&c, &submit_args(&all)).exit(0);
    c
}

/// Waits (bounded, not timed) until some pod of the job satisfies `pred`.
pub(crate) fn until_pod(c: &TestCluster, what: &str, pred: impl Fn(&serde_json::Value) -> bool) {
    let seen = c.wait_for(Duration::from_secs(30), |c| {
        c.list("pods", Some("default")).iter().any(&pred)
    });
    assert!(seen, "never saw a pod {what}");
}

fn row<'a>(run: &'a Run, name: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no row {name}:\n{}", run.stdout))
}

/// The first `error: …` line of stderr: the verdict, first replica to fail first.
fn error_line(run: &Run) -> &str {
    run.stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default()
}

fn first_line(run: &Run) -> &str {
    run.stdout.lines().next().unwrap_or_default()
}

/// A node that stops reporting: the node lifecycle controller marks its pods not Ready, the
/// taint manager deletes them, and the operator counts a deleted running pod as failed
/// (training-operator `pkg/core/status.go`), so the job fails. Every command names the lost
/// replica by the taint manager's event, not by a guess, and none calls it running.
#[test]
fn a_lost_nodes_pods_are_named_by_the_taint_manager_in_every_command() {
    let c = article_with_worker_1("  disruption: nodeNotReady\n  runMs: 200", &[]);
    let wait = tfjob(
        &c,
        &args("wait tf-dist-train --for all-running --timeout 30s"),
    );
    wait.exit(4);
    let line = error_line(&wait);
    assert!(
        line.starts_with("error: Worker-1: DeletionByTaintManager ("),
        "{}",
        wait.stderr
    );
    assert!(!wait.stderr.contains("condition met"), "{}", wait.stderr);

    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    diagnose.exit(4);
    let last = diagnose.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: Worker-1: DeletionByTaintManager"),
        "{}\n{}",
        diagnose.stdout,
        diagnose.stderr
    );
    assert!(
        diagnose
            .stdout
            .contains("kubectl tfjob restart tf-dist-train"),
        "{}",
        diagnose.stdout
    );

    // The job failed: list and get give the operator's outcome per role, probe has no pod.
    let list = tfjob(&c, &args("list"));
    list.exit(0);
    let r = row(&list, "tf-dist-train");
    assert!(
        r.contains("Failed") && r.contains("Worker 1/3 failed"),
        "{}",
        list.stdout
    );
    let probe = tfjob(&c, &args("probe tf-dist-train"));
    assert_ne!(probe.code, 0, "{}", probe.all());
}

/// The article's job whose worker-1 the kubelet evicted under restartPolicy OnFailure, once
/// the pod the operator made again runs. Both facts observed, no sleep: the kubelet's Evicted
/// event, and the new pod running.
pub(crate) fn evicted_and_running_again() -> TestCluster {
    let c = article_with_worker_1(
        "  disruption: evicted\n  runMs: 200",
        &["--restart-policy", "OnFailure"],
    );
    let evicted = c.wait_for(Duration::from_secs(30), |c| {
        c.list("events", Some("default"))
            .iter()
            .any(|e| e["reason"] == "Evicted")
    });
    assert!(evicted, "no Evicted event");
    until_pod(&c, "worker-1 running again", |p| {
        p["metadata"]["name"] == "tf-dist-train-worker-1"
            && p["status"]["reason"].is_null()
            && p["metadata"]["deletionTimestamp"].is_null()
            && p["status"]["containerStatuses"][0]["state"]["running"].is_object()
    });
    c
}

/// Evicted by the kubelet under restartPolicy OnFailure: the operator deletes the Failed pod,
/// marks the job Restarting and makes the pod again (training-operator common/pod.go
/// ReconcilePods); a peer still running does not fail the job, since UpdateJobStatus keeps the
/// Restarting condition it read before setting Running (tfjob_controller.go,
/// `existingRestartingCondition`). Once the new pod runs, every command says the job trains and
/// diagnose warns of the eviction; before, diagnose said FAIL (exit 4) from the old pod's
/// events while wait said condition met.
#[test]
fn an_eviction_the_operator_recovers_from_is_not_a_failure() {
    let c = evicted_and_running_again();

    let wait = tfjob(
        &c,
        &args("wait tf-dist-train --for all-running --timeout 30s"),
    );
    wait.exit(0);
    assert!(
        wait.stdout.contains("condition met (all replicas Running)"),
        "{}",
        wait.all()
    );

    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    diagnose.exit(0);
    assert!(
        diagnose
            .stdout
            .contains("[warn] Runtime    restarted (running again): Worker-1: Evicted ("),
        "{}",
        diagnose.stdout
    );
    assert!(!diagnose.stdout.contains("[FAIL]"), "{}", diagnose.stdout);
    assert!(
        !diagnose.stdout.contains("Failed replicas"),
        "{}",
        diagnose.stdout
    );

    let list = tfjob(&c, &args("list"));
    list.exit(0);
    let r = row(&list, "tf-dist-train");
    assert!(
        r.contains("Running") && r.ends_with("<none>"),
        "{}",
        list.stdout
    );
    let get = tfjob(&c, &args("get tf-dist-train"));
    get.exit(0);
    assert!(!get.stdout.contains("Problem:"), "{}", get.stdout);
    let probe = tfjob(&c, &args("probe tf-dist-train"));
    probe.exit(0);
}

/// Preempted under the operator's default restart policy, the pod gone with the job's end:
/// the scheduler's `Preempted` event outlives it, so the kill is named by who made it, not
/// guessed from exit code 143.
#[test]
fn a_preemption_is_named_from_its_event_after_the_pod_is_gone() {
    let c = article_with_worker_1("  disruption: preempted\n  runMs: 200", &[]);
    let wait = tfjob(
        &c,
        &args("wait tf-dist-train --for succeeded --timeout 30s"),
    );
    wait.exit(4);
    let line = error_line(&wait);
    assert!(
        line.starts_with("error: Worker-1: PreemptionByScheduler"),
        "{}",
        wait.stderr
    );
    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    diagnose.exit(4);
    let last = diagnose.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: Worker-1: PreemptionByScheduler (")
            && last.contains("Preempted by pod "),
        "{}\n{}",
        diagnose.stdout,
        diagnose.stderr
    );
    assert!(
        !diagnose.all().contains("ExitCode 143"),
        "{}",
        diagnose.all()
    );
}

/// A worker that starts before its PS logs `UnavailableError` once, then trains: nothing
/// calls that a failure. The same line as the last word of the log is one, and the next step
/// is this tool's probe and logs, not diagnose again.
#[test]
fn a_peer_refused_at_start_then_training_is_not_a_failure() {
    let c = article_with_worker_1(
        "  log: \"UnavailableError: failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.7:2222: Failed to connect to remote host: Connection refused\\nEpoch 1/10\\n100/500 [====>.........] - ETA: 3:10 - loss: 0.9120\\n\"",
        &["--wait", "--settle", "0", "--timeout", "60s"],
    );
    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    diagnose.exit(0);
    assert!(
        !diagnose.stdout.contains("Unavailable"),
        "{}",
        diagnose.stdout
    );

    let stuck = article_with_worker_1(
        "  log: \"Epoch 1/10\\nUnavailableError: failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.7:2222: Failed to connect to remote host: Connection refused\\n\"",
        &["--wait", "--settle", "0", "--timeout", "60s"],
    );
    // Just logged: it may be waiting for a peer that is starting; diagnose and wait agree.
    let young = tfjob(&stuck, &args("diagnose tf-dist-train --no-probe"));
    young.exit(0);
    let wait = tfjob(
        &stuck,
        &args("wait tf-dist-train --for all-running --settle 0 --timeout 30s"),
    );
    wait.exit(0);
    assert!(
        wait.stderr
            .contains("note: Worker-1: has not reached a peer for "),
        "{}",
        wait.stderr
    );
    // Three minutes later by its log (past the 2 min grace): stuck, for both.
    stuck.age_log(
        "default",
        "tf-dist-train-worker-1",
        "tensorflow",
        Duration::from_secs(180),
    );
    let wait = tfjob(
        &stuck,
        &args("wait tf-dist-train --for all-running --settle 0 --timeout 30s"),
    );
    wait.exit(4);
    assert!(
        wait.stderr.contains("error: Worker-1: Unavailable"),
        "{}",
        wait.stderr
    );
    let diagnose = tfjob(&stuck, &args("diagnose tf-dist-train --no-probe"));
    diagnose.exit(4);
    let finding = diagnose
        .stdout
        .lines()
        .skip_while(|l| !l.contains("Worker-1: Unavailable"))
        .take(4)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        finding.contains("Connection refused"),
        "{}",
        diagnose.stdout
    );
    assert!(
        finding.contains("kubectl tfjob probe tf-dist-train")
            && finding.contains("kubectl tfjob logs tf-dist-train -f"),
        "{}",
        diagnose.stdout
    );
}

/// Plain `diagnose` looks inside the pods once every replica runs: a key the gateway rejects
/// fails it, as `probe` does. `--no-probe` skips that and says what it did not check.
#[test]
fn plain_diagnose_finds_a_key_the_gateway_rejects() {
    let c = cluster(&format!("gatewayKey: {OTHER_KEY}\nobjects:{SECRET}"));
    // `submit --wait` tells the same story first (issue 61 item 4): every replica runs, the
    // gateway rejects the key, exit 4, and the job is left for the user to fix and restart.
    let submit = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "60s"]),
    );
    submit.exit(4);
    let first = submit.stderr.lines().find(|l| l.starts_with("error:"));
    assert!(
        first.is_some_and(|l| l.contains("gateway") && l.contains("401")),
        "{}",
        submit.all()
    );
    assert!(submit.stdout.lines().all(|l| !l.contains("condition met")));
    assert_eq!(c.list("pods", Some("default")).len(), 4, "nothing deleted");
    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    diagnose.exit(4);
    // Said once on stdout, the replicas it holds for named after it (issue 61 item 11).
    assert_eq!(
        diagnose.stdout.matches("401").count(),
        1,
        "{}",
        diagnose.stdout
    );
    assert!(
        diagnose
            .stdout
            .contains("gateway: the same for Worker-0, Worker-1, Worker-2"),
        "{}",
        diagnose.stdout
    );
    assert!(
        diagnose
            .stdout
            .lines()
            .any(|l| l.contains("In-pod") && l.contains("401")),
        "{}",
        diagnose.stdout
    );
    let probe = tfjob(&c, &args("probe tf-dist-train"));
    probe.exit(4);
    assert!(first_line(&probe).contains("401"), "{}", probe.stdout);

    let skipped = tfjob(&c, &args("diagnose tf-dist-train --no-probe"));
    skipped.exit(0);
    assert!(
        skipped
            .stdout
            .lines()
            .any(|l| l.contains("In-pod") && l.contains("not checked (--no-probe)")),
        "{}",
        skipped.stdout
    );
}

/// The Secret changed after the pods started, and the gateway still takes the old key the
/// pods hold: it works until that key is revoked. `probe` says so, and plain `diagnose` too.
#[test]
fn a_key_the_gateway_still_takes_but_the_secret_no_longer_holds_is_drift() {
    let c = cluster(&format!("gatewayKey: {TEST_KEY}\nobjects:{SECRET}"));
    tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "60s"]),
    )
    .exit(0);
    let mut secret = c
        .get("secrets", Some("default"), "taotoken-secret")
        .unwrap();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(OTHER_KEY);
    secret["data"] = serde_json::json!({"api-key": b64});
    secret.as_object_mut().unwrap().remove("stringData");
    c.insert(secret);
    let probe = tfjob(&c, &args("probe tf-dist-train"));
    probe.exit(4);
    assert!(
        first_line(&probe).contains("is not the Secret's now")
            && first_line(&probe).contains("kubectl tfjob restart"),
        "{}",
        probe.stdout
    );
    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    diagnose.exit(4);
    assert!(
        diagnose.stdout.contains("is not the Secret's now"),
        "{}",
        diagnose.stdout
    );
}

/// A replica restarting over and over runs only between two back-offs: `probe` does not pass
/// it whatever moment it catches, and `wait`'s progress does not count it as running.
#[test]
fn a_crash_looping_replica_is_not_running_for_probe_or_wait() {
    let c = article_with_worker_1("  exitCode: 1\n  runMs: 100\n  crashLoop: true", &[]);
    until_pod(&c, "restarted 3 times", |p| {
        p["status"]["containerStatuses"][0]["restartCount"]
            .as_i64()
            .is_some_and(|n| n >= 3)
    });
    let probe = tfjob(&c, &args("probe tf-dist-train"));
    probe.exit(3);
    assert!(
        first_line(&probe).starts_with("Worker-1: not probed: "),
        "{}",
        probe.stdout
    );
    let wait = tfjob(
        &c,
        &args("wait tf-dist-train --for all-running --timeout 30s --max-restarts 3"),
    );
    wait.exit(4);
    // The crash loop is the answer; no hint to look inside pods that "all run".
    assert!(
        wait.stderr.contains("error: Worker-1: CrashLoop")
            && !wait.stderr.contains("Every replica runs"),
        "{}",
        wait.stderr
    );
    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    diagnose.exit(4);
    assert!(
        diagnose.all().contains("Worker-1: CrashLoop"),
        "{}",
        diagnose.all()
    );
}

/// Waiting for GPUs: the jobs that hold them are named, and the GPU node that stopped
/// reporting (its unreachable taint keeps pods off) is said, in check and in diagnose.
#[test]
fn a_job_waiting_for_gpus_names_who_holds_them_and_the_node_not_ready() {
    let c = cluster(&format!(
        r#"namespaces: [default, team-b]
nodes:
  - {{name: gpu-a, cpu: "32", memory: 128Gi, gpu: 4}}
  - {{name: gpu-b, cpu: "32", memory: 128Gi, gpu: 4, taints: [{{key: node.kubernetes.io/unreachable, effect: NoSchedule}}]}}
objects:{SECRET}
  - apiVersion: v1
    kind: Pod
    metadata: {{name: bert-worker-0, namespace: team-b, labels: {{training.kubeflow.org/job-name: bert}}}}
    spec: {{nodeName: gpu-a, containers: [{{name: tensorflow, image: tf, resources: {{limits: {{nvidia.com/gpu: "2"}}}}}}]}}
    status: {{phase: Running}}
"#
    ));
    let check = tfjob(&c, &crate::submit::article_args("check", &[]));
    check.exit(0);
    let held = "2 nvidia.com/gpu held by 1 pod on gpu-a (TFJob team-b/bert), gpu-b (4 nvidia.com/gpu) is not Ready: tainted node.kubernetes.io/unreachable";
    assert!(check.stdout.contains(held), "{}", check.stdout);
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).exit(0);
    until_pod(&c, "Unschedulable", |p| {
        p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["reason"] == "Unschedulable")
    });
    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    assert!(
        diagnose.stdout.contains("TFJob team-b/bert"),
        "{}",
        diagnose.stdout
    );
    // A table cell holds the scheduler's first sentence, not its 160 characters (issue 61
    // item 11); diagnose above keeps the whole.
    let list = tfjob(&c, &args("list"));
    list.exit(0);
    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with("tf-dist-train"))
        .unwrap();
    let reason = row.split_once("Unschedulable: ").map(|(_, r)| r.trim_end());
    assert!(
        reason.is_some_and(|r| r.starts_with("0/2 nodes: ")
            && !r.contains("preemption")
            && r.chars().count() <= 80),
        "{}",
        list.stdout
    );
}

/// `--for training`: every replica runs and every worker has logged a step. Without a step
/// line the wait times out naming the silent workers; with Keras's lines it is reached with
/// where each worker is.
#[test]
fn wait_for_training_needs_a_step_from_every_worker() {
    let c = cluster(&format!("gatewayKey: {TEST_KEY}\nobjects:{SECRET}"));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).exit(0);
    let quiet = tfjob(
        &c,
        &args("wait tf-dist-train --for training --settle 0 --timeout 4s"),
    );
    quiet.exit(5);
    assert!(
        quiet.stderr.contains(
            "no step yet from Worker-0, Worker-1, Worker-2 (`kubectl tfjob logs tf-dist-train"
        ),
        "{}",
        quiet.stderr
    );

    let c = cluster(&format!(
        "gatewayKey: {TEST_KEY}\ncontainerBehaviour:\n- match: {{replicaType: worker}}\n  log: \"Epoch 1/10\\n 10/100 [==>...........] - ETA: 1:00 - loss: 0.9120\\n\"\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).exit(0);
    let trains = tfjob(
        &c,
        &args("wait tf-dist-train --for training --settle 0 --timeout 60s"),
    );
    trains.exit(0);
    assert!(
        trains.stdout.contains(
            "condition met (training: Worker-0 step 10/1000, Worker-1 step 10/1000, Worker-2 step 10/1000)"
        ),
        "{}",
        trains.stdout
    );
    // A JobSet's replicas are not read: refused, with what to use.
    let js = tfjob(&c, &args("wait jobset/tf-dist-train --for training"));
    js.exit(2);

    // Fifteen minutes on, Worker-1 is where it was while its peers went on: a stall, which
    // fails `--for training` (exit 4) and is a warning for a wait for running, as in diagnose.
    for i in 0..3 {
        c.age_log(
            "default",
            &format!("tf-dist-train-worker-{i}"),
            "tensorflow",
            Duration::from_secs(15 * 60),
        );
    }
    for i in [0, 2] {
        c.append_log(
            "default",
            &format!("tf-dist-train-worker-{i}"),
            "tensorflow",
            " 50/100 [=====>........] - ETA: 40s - loss: 0.5120",
        );
    }
    let stalled = tfjob(
        &c,
        &args("wait tf-dist-train --for training --settle 0 --timeout 60s"),
    );
    stalled.exit(4);
    assert!(
        stalled.stderr.contains(
            "error: Worker-1: no step for 15m (at step 10), peers at step 50: every replica \
             runs, but training stopped advancing"
        ),
        "{}",
        stalled.stderr
    );
    // Issue 60 item 4: a stall is judged from the logs, so --delete-on-failure deletes
    // nothing on it (seen before: the job was deleted).
    c.clear_requests();
    let kept = tfjob(
        &c,
        &args("wait tf-dist-train --for training --settle 0 --timeout 60s --delete-on-failure"),
    );
    kept.exit(4);
    assert!(
        kept.stderr.contains("The job was not deleted: --delete-on-failure deletes only on a failure the cluster states"),
        "{}",
        kept.stderr
    );
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
    assert!(
        !c.writes().iter().any(|r| r.verb == "delete"),
        "{:?}",
        c.writes()
    );
    let running = tfjob(
        &c,
        &args("wait tf-dist-train --for all-running --settle 0 --timeout 60s"),
    );
    running.exit(0);
    assert!(
        running
            .stderr
            .contains("warning: Worker-1: no step for 15m (at step 10), peers at step 50"),
        "{}",
        running.stderr
    );
    let diagnose = tfjob(&c, &args("diagnose tf-dist-train --no-probe"));
    diagnose.exit(0);
    assert!(
        diagnose.stdout.contains("Worker-1: no step for 15m"),
        "{}",
        diagnose.stdout
    );
}
