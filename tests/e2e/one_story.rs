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

use crate::submit::{SECRET, submit_args};
use crate::{Run, args, cluster, tfjob};

/// One case: the cluster as the case leaves it, the job, the exit class of the judging verbs,
/// and the words each verb must show: `judged` in `wait`'s and `diagnose`'s verdict, `listed`
/// in `list`'s REASON and `get`'s Problem.
struct Case {
    name: &'static str,
    cluster: TestCluster,
    job: &'static str,
    exit: i32,
    judged: &'static str,
    listed: &'static str,
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
        exit: 3,
        judged: "training-operator kubeflow/training-operator is not ready (0/1 replicas ready)",
        listed: "nothing reconciles it: training-operator kubeflow/training-operator is not ready (0/1 replicas ready)",
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
        exit: 4,
        judged: "tensorflow/tensorflow:2.13.0-gpu",
        // The kubelet alternates ErrImagePull and ImagePullBackOff; both are the pull failing.
        listed: "ImagePull",
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
        exit: 4,
        judged: "Worker-1: ExitCode 1",
        listed: "Worker-1",
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
        exit: 4,
        judged: "the job needs 3 nvidia.com/gpu at once (4 pods, all required together)",
        listed: "gang waiting: volcano PodGroup tf-dist-train in queue default",
    }
}

fn all(case: &Case, line: &str) -> Run {
    tfjob(&case.cluster, &args(line))
}

#[test]
fn every_verb_tells_each_cases_one_story() {
    for case in [
        nothing_reconciles(),
        missing_image(),
        a_replica_fails(),
        a_gang_that_never_fits(),
    ] {
        let job = case.job;
        let what = case.name;
        let wait = all(&case, &format!("wait {job} --timeout 60s"));
        let diagnose = all(&case, &format!("diagnose {job} --no-probe"));
        let probe = all(&case, &format!("probe {job}"));
        let list = all(&case, "list");
        let get = all(&case, &format!("get {job}"));

        assert_eq!(wait.code, case.exit, "{what}: wait\n{}", wait.stderr);
        assert_eq!(
            diagnose.code,
            case.exit,
            "{what}: diagnose\n{}",
            diagnose.all()
        );
        assert_eq!(probe.code, 3, "{what}: probe\n{}", probe.all());
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
        for (verb, said, words) in [
            ("wait", wait.stderr.as_str(), case.judged),
            ("diagnose", diagnose.stderr.as_str(), case.judged),
            ("list", row, case.listed),
            ("get", problem, case.listed),
        ] {
            assert!(
                said.contains(words),
                "{what}: {verb} does not name {words:?}:\n{said}"
            );
        }
    }
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
