//! Failure evidence (issue 37): each way a replica dies ends `wait` with the failure's exit
//! code and its class on the error's first line, naming the replica; pods deleted by
//! cleanPodPolicy are said to be gone with their logs.

use crate::submit::{SECRET, submit_args};
use crate::{Run, args, cluster, tfjob};

/// The first line of the error (`error: …`): the verdict, first replica to fail first.
fn error_line(run: &Run) -> &str {
    run.stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line:\n{}", run.stderr))
}

/// Worker-1 of the article's job behaves as `behaviour` (YAML lines under the match), under
/// restartPolicy Never (the operator's default) and the extra submit flags; then
/// `wait --for succeeded`.
fn worker_1_fails(behaviour: &str, extra: &[&str]) -> (tfjob_testcluster::TestCluster, Run) {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n{behaviour}\nobjects:{SECRET}"
    ));
    let mut flags = vec!["--restart-policy", "Never", "--skip-capacity-check"];
    flags.extend_from_slice(extra);
    tfjob(&c, &submit_args(&flags)).expect_code(0);
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for succeeded --timeout 30s"),
    );
    (c, run)
}

#[test]
fn an_oom_killed_worker_is_named_with_its_limit() {
    let (_c, run) = worker_1_fails("  oomKilled: true\n  runMs: 100", &[]);
    run.exit(4);
    let line = error_line(&run);
    assert!(
        line.starts_with("error: Worker-1: OOMKilled (limit 8Gi, exit code 137)"),
        "{line}\n{}",
        run.stderr
    );
}

#[test]
fn an_evicted_worker_says_the_kubelets_message() {
    let (_c, run) = worker_1_fails("  disruption: evicted\n  runMs: 100", &[]);
    run.exit(4);
    let line = error_line(&run);
    assert!(
        line.starts_with(
            "error: Worker-1: Evicted by the kubelet (TerminationByKubelet): The node was low on resource: memory."
        ),
        "{line}\n{}",
        run.stderr
    );
    // Not reported as a crash to fix in the log.
    assert!(
        !run.stderr.contains("fix the error in the log"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_preempted_worker_is_named_as_preempted() {
    let (_c, run) = worker_1_fails("  disruption: preempted\n  runMs: 100", &[]);
    run.exit(4);
    let line = error_line(&run);
    assert!(
        line.starts_with(
            "error: Worker-1: PreemptionByScheduler (preempted by the scheduler for a higher-priority pod)"
        ),
        "{line}\n{}",
        run.stderr
    );
}

#[test]
fn a_worker_whose_log_ends_waiting_for_its_peers_is_named() {
    let (_c, run) = worker_1_fails(
        "  exitCode: 1\n  runMs: 100\n  log: \"I tensorflow/core/distributed_runtime/master.cc:221] CreateSession still waiting for response from worker: /job:ps/replica:0/task:0\\n\"",
        &[],
    );
    run.exit(4);
    let line = error_line(&run);
    assert!(
        line.starts_with(
            "error: Worker-1: CreateSessionWaiting (the replica never reached a peer named in TF_CONFIG; exit code 1)"
        ),
        "{line}\n{}",
        run.stderr
    );
}

#[test]
fn a_gpu_out_of_memory_in_tensorflow_is_not_the_kernels_oom() {
    let (_c, run) = worker_1_fails(
        "  exitCode: 1\n  runMs: 100\n  log: \"Traceback (most recent call last):\\ntensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[64,1024,1024] and type float on /job:worker/replica:0/task:1/device:GPU:0 by allocator GPU_0_bfc\\n\"",
        &[],
    );
    run.exit(4);
    let line = error_line(&run);
    assert!(
        line.starts_with(
            "error: Worker-1: ResourceExhausted (TensorFlow ran out of device (GPU) memory allocating a tensor; exit code 1)"
        ),
        "{line}\n{}",
        run.stderr
    );
    // diagnose ends on the same finding: its last line, the one scripts read.
    let c = _c;
    let d = tfjob(&c, &args("diagnose tf-dist-train"));
    d.exit(4);
    let last = d.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: Worker-1: ResourceExhausted"),
        "{last}\n{}",
        d.stdout
    );
    d.stdout_has("Failed replicas (the first to fail first):");
}

#[test]
fn with_clean_pod_policy_all_the_wait_still_names_the_replica_and_says_the_logs_are_gone() {
    let (c, run) = worker_1_fails(
        "  exitCode: 3\n  runMs: 100",
        &["--clean-pod-policy", "All"],
    );
    run.exit(4);
    let line = error_line(&run);
    assert!(
        line.starts_with("error: Worker-1: ExitCode 3"),
        "{line}\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("logs are gone"), "{}", run.stderr);
    assert!(run.stderr.contains("--save DIR"), "{}", run.stderr);
    // The pods are deleted (or about to be): what is left is the job object.
    assert!(
        run.stderr.contains(
            "The job object is left (runPolicy.cleanPodPolicy All deletes its pods; the job keeps its status and events): `kubectl tfjob delete tf-dist-train"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("its pods keep what they requested"),
        "{}",
        run.stderr
    );
    // The operator deletes every pod once the job has failed.
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        c.list("pods", Some("default"))
            .iter()
            .all(|p| p["metadata"]["name"] != "tf-dist-train-worker-1")
    }));
    // A later look at the finished job: only the operator's events are left.
    let d = tfjob(&c, &args("diagnose tf-dist-train"));
    d.exit(4);
    let last = d.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "error: Worker-1: ExitCode 3, from the operator's events; its pod and logs are gone"
        ),
        "{last}\n{}",
        d.stdout
    );
}
