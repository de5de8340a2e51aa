//! One story across the verbs (issue 59): for each case of a table, `wait`, `diagnose`,
//! `probe`, `list` and `get` run on the same job, and each must give the case's exit class
//! (from the one exit table) and name its one cause, in the same words where the words are the
//! cause's own (the operator's state, the registry's answer, the replica that failed).
//!
//! Data verbs (`list`, `get`) exit 0 and carry the cause in REASON / Problem; the verbs that
//! judge (`wait`, `diagnose`) end with the case's class; `probe` never passes a job whose pods
//! it cannot look into (exit 3). Where a pod's state is the cause, REASON and Problem keep
//! kubectl's STATUS word (`ErrImagePull`, `ImagePullBackOff`) and the judging verbs name what it means (the
//! image); the case then says both.

use std::time::Duration;

use tfjob_testcluster::TestCluster;

use crate::health::{article_with_worker_1, until_pod};
use crate::submit::{SECRET, submit_args};
use crate::{Run, args, cluster, tfjob};

const OTHER_KEY: &str = "sk-e2e-rotated-key-ffff-eeee-dddd";

/// What the judging verbs conclude of a case, each mapping it to its code in the one exit
/// table: `wait` times out on a job that still waits (5) where `diagnose`, which does not
/// wait, reports it (0); both say 4 of a job that failed or will not run, 3 of a cluster that
/// is not ready, 0 of one that trains.
#[derive(Clone, Copy, Debug)]
enum Class {
    Runs,
    Waits,
    Fails,
    NotReady,
}

impl Class {
    fn wait(self) -> i32 {
        match self {
            Class::Runs => 0,
            Class::Waits => 5,
            Class::Fails => 4,
            Class::NotReady => 3,
        }
    }

    fn diagnose(self) -> i32 {
        match self {
            Class::Runs | Class::Waits => 0,
            Class::Fails => 4,
            Class::NotReady => 3,
        }
    }
}

/// One case: the cluster as the case leaves it, the job, its class, and the words each verb
/// must show: `judged` in `wait`'s and `diagnose`'s answer, `listed` in `list`'s REASON and
/// `get`'s Problem (`None`: REASON `<none>` and no Problem, nothing the cluster states is
/// wrong). `probe` is probe's code (3: a replica it cannot look into; 4: a check failed);
/// `wait` adds flags to the wait (a lower restart threshold, a pending bound).
struct Case {
    name: &'static str,
    cluster: TestCluster,
    job: &'static str,
    class: Class,
    judged: &'static str,
    listed: Option<&'static str>,
    probe: i32,
    wait: &'static str,
}

/// A job no operator reconciles: the Deployment is installed with no ready replica.
fn nothing_reconciles() -> Case {
    let c = cluster("operator: installed");
    c.insert(
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "orphan", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1,
            "template": {"spec": {"containers": [{"name": "tensorflow",
                "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}),
    );
    Case {
        name: "nothing reconciles",
        cluster: c,
        job: "orphan",
        class: Class::NotReady,
        judged: "training-operator kubeflow/training-operator is not ready (0/1 replicas ready)",
        listed: Some(
            "nothing reconciles it: training-operator kubeflow/training-operator is not ready (0/1 replicas ready)",
        ),
        probe: 3,
        wait: "",
    }
}

/// The article's job whose image the registry does not have: every worker's pull fails.
fn missing_image() -> Case {
    let c = cluster(&format!(
        "missingImages: ['tensorflow/tensorflow:2.13.0-gpu']\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).exit(0);
    let pulled = c.wait_for(Duration::from_secs(30), |c| {
        c.list("pods", Some("default")).iter().any(|p| {
            p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
                || p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
                    == "ErrImagePull"
        })
    });
    assert!(pulled, "no pull ever failed");
    Case {
        name: "missing image",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "tensorflow/tensorflow:2.13.0-gpu",
        // The kubelet alternates ErrImagePull and ImagePullBackOff; both are the pull failing.
        listed: Some("ImagePull"),
        probe: 3,
        wait: "",
    }
}

/// The article's job whose worker-1 exits 1 under restartPolicy Never: the operator fails it.
fn a_replica_fails() -> Case {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 100\nobjects:{SECRET}"
    ));
    tfjob(
        &c,
        &submit_args(&["--skip-capacity-check", "--restart-policy", "Never"]),
    )
    .exit(0);
    crate::until_failed(&c, "tf-dist-train");
    Case {
        name: "a replica fails",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "Worker-1: ExitCode 1",
        listed: Some("Worker-1"),
        probe: 3,
        wait: "",
    }
}

/// The article's job under a Volcano gang on a cluster with one GPU: the gang of 4 pods needs 3
/// GPUs at once, so the PodGroup stays Pending for ever. `check` says `never` (exit 4) before
/// the create; once it is stored (past `--skip-capacity-check`), `wait` and `diagnose` give the
/// same verdict from the same model, and `list` and `get` name the gang that holds it.
fn a_gang_that_never_fits() -> Case {
    let c = cluster(&format!(
        "gangScheduler: volcano\nnodes: [{{name: node-a, cpu: '16', memory: 64Gi, gpu: 1}}]\nobjects:{SECRET}"
    ));
    tfjob(&c, &crate::submit::article_args("check", &[])).exit(4);
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).exit(0);
    let grouped = c.wait_for(Duration::from_secs(30), |c| {
        c.get("podgroups", Some("default"), "tf-dist-train")
            .is_some()
    });
    assert!(grouped, "no PodGroup");
    Case {
        name: "a gang that never fits",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "the job needs 3 nvidia.com/gpu at once (4 pods, all required together)",
        listed: Some("gang waiting: volcano PodGroup tf-dist-train in queue default"),
        probe: 3,
        wait: "",
    }
}

/// Worker-1 exits 1 again and again under the operator's default policy: the kubelet
/// restarts it with back-off. Past the restart threshold it is a failure for every verb,
/// whatever moment each samples (running between two back-offs, or waiting in one).
fn a_crash_loop() -> Case {
    let c = article_with_worker_1("  exitCode: 1\n  runMs: 100\n  crashLoop: true", &[]);
    until_pod(&c, "restarted 3 times", |p| {
        p["status"]["containerStatuses"][0]["restartCount"]
            .as_i64()
            .is_some_and(|n| n >= 3)
    });
    Case {
        name: "a crash loop",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "Worker-1: CrashLoop",
        listed: Some("CrashLoop"),
        probe: 3,
        wait: "--max-restarts 3",
    }
}

/// Worker-1 is OOM-killed under restartPolicy Never: the operator fails the job, and the
/// kill is named by the kubelet's reason, not by exit code 137.
fn an_oom_kill() -> Case {
    let c = article_with_worker_1(
        "  exitCode: 137\n  oomKilled: true\n  runMs: 100",
        &["--restart-policy", "Never"],
    );
    crate::until_failed(&c, "tf-dist-train");
    Case {
        name: "an OOM kill",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "Worker-1: OOMKilled",
        listed: Some("OOMKilled"),
        probe: 3,
        wait: "",
    }
}

/// Evicted under restartPolicy OnFailure: the operator makes the pod again and the job runs
/// (training-operator common/pod.go ReconcilePods). A restart the cluster recovered from is
/// no failure for any verb; `diagnose` names it as a warning.
fn an_eviction_recovered() -> Case {
    let c = crate::health::evicted_and_running_again();
    Case {
        name: "an eviction recovered",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Runs,
        judged: "Worker-1: Evicted",
        listed: None,
        probe: 0,
        wait: "",
    }
}

/// Preempted by kube-scheduler under the default policy: the job fails, and the kill is
/// named by who made it (the DisruptionTarget condition and the `Preempted` event).
fn a_preemption() -> Case {
    let c = article_with_worker_1("  disruption: preempted\n  runMs: 200", &[]);
    crate::until_failed(&c, "tf-dist-train");
    Case {
        name: "a preemption",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "Worker-1: PreemptionByScheduler",
        listed: Some("Worker-1: PreemptionByScheduler"),
        probe: 3,
        wait: "",
    }
}

/// Worker-1's node stops reporting: its pod stays Terminating (no kubelet confirms), the
/// taint manager's event names why, and the operator fails the job.
fn a_node_not_ready() -> Case {
    let c = article_with_worker_1("  disruption: nodeNotReady\n  runMs: 200", &[]);
    crate::until_failed(&c, "tf-dist-train");
    Case {
        name: "a node not ready",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "Worker-1: DeletionByTaintManager",
        listed: Some("Worker-1: DeletionByTaintManager"),
        probe: 3,
        wait: "",
    }
}

/// Kueue holds the job: its ClusterQueue's quota is used by a first job. Waiting in line is
/// no failure: `wait` bounds it with `--pending-timeout` (5), `diagnose` reports it (0), and
/// each names the ClusterQueue's shortfall from the job's Workload.
fn a_kueue_hold() -> Case {
    let c = crate::queue::one_running_one_queued();
    Case {
        name: "a Kueue hold",
        cluster: c,
        job: "second",
        class: Class::Waits,
        judged: "insufficient unused quota for nvidia.com/gpu in flavor a100, 2 more needed",
        listed: Some("insufficient unused quota for nvidia.com/gpu in flavor a100, 2 more needed"),
        probe: 3,
        wait: "--pending-timeout 2s",
    }
}

/// Every replica runs, and the gateway rejects the key the pods hold: only a look inside the
/// pods sees it (`wait` and `diagnose` look before calling it running, `probe` is that look);
/// `list` and `get` read what the cluster states, which is that it runs.
fn a_key_the_gateway_rejects() -> Case {
    let c = cluster(&format!("gatewayKey: {OTHER_KEY}\nobjects:{SECRET}"));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).exit(0);
    let running = c.wait_for(Duration::from_secs(30), |c| {
        let pods = c.list("pods", Some("default"));
        pods.len() == 4
            && pods
                .iter()
                .all(|p| p["status"]["containerStatuses"][0]["state"]["running"].is_object())
    });
    assert!(running, "the replicas never all ran");
    Case {
        name: "a key the gateway rejects",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "401",
        listed: None,
        probe: 4,
        wait: "",
    }
}

/// Worker-1 has logged for three minutes that it cannot reach a peer, and runs on: past the
/// start-up grace, a stuck replica for the verbs that read the logs.
fn a_peer_never_reached() -> Case {
    let c = article_with_worker_1(
        "  log: \"Epoch 1/10\\nUnavailableError: failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.7:2222: Failed to connect to remote host: Connection refused\\n\"",
        &[],
    );
    until_pod(&c, "worker-1 running", |p| {
        p["metadata"]["name"] == "tf-dist-train-worker-1"
            && p["status"]["containerStatuses"][0]["state"]["running"].is_object()
    });
    c.age_log(
        "default",
        "tf-dist-train-worker-1",
        "tensorflow",
        Duration::from_secs(180),
    );
    Case {
        name: "a peer never reached",
        cluster: c,
        job: "tf-dist-train",
        class: Class::Fails,
        judged: "Worker-1: Unavailable",
        listed: None,
        probe: 0,
        wait: "--settle 0",
    }
}

fn all(case: &Case, line: &str) -> Run {
    tfjob(&case.cluster, &args(line))
}

/// Runs every verb on `case` and holds each to the case's class and words.
fn tells_one_story(case: Case) {
    let job = case.job;
    let what = case.name;
    let wait = all(&case, &format!("wait {job} --timeout 60s {}", case.wait));
    let diagnose = all(&case, &format!("diagnose {job}"));
    let probe = all(&case, &format!("probe {job}"));
    let list = all(&case, "list");
    let get = all(&case, &format!("get {job}"));

    assert_eq!(wait.code, case.class.wait(), "{what}: wait\n{}", wait.all());
    assert_eq!(
        diagnose.code,
        case.class.diagnose(),
        "{what}: diagnose\n{}",
        diagnose.all()
    );
    assert_eq!(probe.code, case.probe, "{what}: probe\n{}", probe.all());
    list.exit(0);
    get.exit(0);

    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with(job))
        .unwrap_or_default();
    let problem = get
        .stdout
        .lines()
        .find(|l| l.starts_with("Problem:"))
        .unwrap_or_default();
    // A job that runs is `condition met` for wait, which follows what happens from its start;
    // what happened before (a recovered eviction) is diagnose's to name.
    let waited = match case.class {
        Class::Runs => "condition met",
        _ => case.judged,
    };
    for (verb, said, words) in [
        ("wait", wait.all(), waited),
        ("diagnose", diagnose.all(), case.judged),
    ] {
        assert!(
            said.contains(words),
            "{what}: {verb} does not name {words:?}:\n{said}"
        );
    }
    match case.listed {
        Some(words) => {
            for (verb, said) in [("list", row), ("get", problem)] {
                assert!(
                    said.contains(words),
                    "{what}: {verb} does not name {words:?}:\n{}",
                    if verb == "list" {
                        &list.stdout
                    } else {
                        &get.stdout
                    }
                );
            }
        }
        None => {
            assert!(row.ends_with("<none>"), "{what}: list\n{}", list.stdout);
            assert!(problem.is_empty(), "{what}: get\n{}", get.stdout);
        }
    }
}

/// The table: one test per case, so the cases run side by side and each failure names its
/// case.
macro_rules! one_story {
    ($($test:ident: $case:ident,)*) => {$(
        #[test]
        fn $test() {
            tells_one_story($case());
        }
    )*};
}

one_story! {
    nothing_reconciling_it_is_one_story: nothing_reconciles,
    a_missing_image_is_one_story: missing_image,
    a_failed_replica_is_one_story: a_replica_fails,
    a_volcano_gang_that_never_fits_is_one_story: a_gang_that_never_fits,
    a_crash_loop_is_one_story: a_crash_loop,
    an_oom_kill_is_one_story: an_oom_kill,
    an_eviction_recovered_is_one_story: an_eviction_recovered,
    a_preemption_is_one_story: a_preemption,
    a_node_not_ready_is_one_story: a_node_not_ready,
    a_kueue_hold_is_one_story: a_kueue_hold,
    a_key_the_gateway_rejects_is_one_story: a_key_the_gateway_rejects,
    a_peer_never_reached_is_one_story: a_peer_never_reached,
}

/// A mistyped name: every verb that takes one says it is not there, with the name meant, and
/// ends with exit 3 (diagnose printed a report of layers "not reached" before).
#[test]
fn a_mistyped_name_is_said_alike_by_every_verb() {
    let c = cluster(&format!("objects:{SECRET}"));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).exit(0);
    for verb in [
        "diagnose", "wait", "get", "logs", "probe", "delete", "suspend",
    ] {
        let run = tfjob(&c, &[verb, "tf-dist-trian"]);
        assert_eq!(run.code, 3, "{verb}: {}", run.all());
        assert!(run.stdout.is_empty(), "{verb} printed data: {}", run.stdout);
        assert!(
            run.stderr.starts_with(
                "error: tfjobs.kubeflow.org \"tf-dist-trian\" not found in namespace default\n"
            ) && run.stderr.contains("Did you mean \"tf-dist-train\"?"),
            "{verb}: {}",
            run.stderr
        );
    }
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
}
