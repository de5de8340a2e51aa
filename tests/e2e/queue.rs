//! Queues and gangs end to end (issue 23): `check`, `submit`, `wait` and `diagnose` against the
//! test cluster's Kueue v0.19 stand-in (and its Volcano one), the real binary over HTTP.

use crate::submit::{SECRET, article_args, submit_args};
use crate::{cluster, tfjob};

/// Kueue managing TFJobs, two 4-GPU nodes labelled for flavor a100, ClusterQueue gpu-cq with
/// `gpus` of nominal GPU quota, LocalQueue team-a pointing at it.
fn kueue(gpus: u32, extra_objects: &str) -> String {
    format!(
        r#"
kueue: {{frameworks: [batch/job, kubeflow.org/tfjob]}}
nodes:
  - {{name: node-1, cpu: "32", memory: 128Gi, gpu: 4, labels: {{gpu: a100}}}}
  - {{name: node-2, cpu: "32", memory: 128Gi, gpu: 4, labels: {{gpu: a100}}}}
objects:{SECRET}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ResourceFlavor
    metadata: {{name: a100}}
    spec: {{nodeLabels: {{gpu: a100}}}}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata: {{name: gpu-cq}}
    spec:
      namespaceSelector: {{}}
      resourceGroups:
        - coveredResources: [cpu, memory, nvidia.com/gpu]
          flavors:
            - name: a100
              resources:
                - {{name: cpu, nominalQuota: 64}}
                - {{name: memory, nominalQuota: 256Gi}}
                - {{name: nvidia.com/gpu, nominalQuota: {gpus}}}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: LocalQueue
    metadata: {{name: team-a, namespace: default}}
    spec: {{clusterQueue: gpu-cq}}
{extra_objects}"#
    )
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

fn tfjob_creates(c: &tfjob_testcluster::TestCluster) -> usize {
    c.requests()
        .iter()
        .filter(|r| r.resource == "tfjobs" && r.verb == "create")
        .count()
}

#[test]
fn check_says_fits_queued_or_never_against_the_cluster_queue() {
    // The article's job: 3 workers with a GPU each.
    let c = cluster(&kueue(8, ""));
    let run = tfjob(
        &c,
        &article_args("check", &["--local-queue", "team-a", "-o", "json"]),
    );
    run.expect_code(0);
    let q = &json(&run.stdout)["queue"];
    assert_eq!(q["system"], "kueue", "{q}");
    assert_eq!(q["verdict"], "fits", "{q}");
    assert_eq!(q["localQueue"], "team-a");
    assert_eq!(q["clusterQueue"], "gpu-cq");
    // Kueue's readiness is one replica for a TFJob (issue 48 item 11): said in JSON and text,
    // and the hints name Kueue's Workload in full (1.36 has a core Workload kind).
    assert!(
        q["note"]
            .as_str()
            .is_some_and(|n| n.contains("waitForPodsReady does not keep the job whole")),
        "{q}"
    );
    let run = tfjob(&c, &article_args("check", &["--local-queue", "team-a"]));
    run.expect_code(0);
    run.stdout_has("\n  note: Kueue counts a TFJob as ready once its Running condition is true");

    // Two GPUs of quota: more than gpu-cq can ever give.
    let c = cluster(&kueue(2, ""));
    let run = tfjob(
        &c,
        &article_args("check", &["--local-queue", "team-a", "-o", "json"]),
    );
    run.expect_code(4);
    let q = &json(&run.stdout)["queue"];
    assert_eq!(q["verdict"], "never", "{q}");
    assert!(
        q["message"]
            .as_str()
            .unwrap()
            .contains("insufficient quota for nvidia.com/gpu in flavor a100, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"),
        "{q}"
    );
    assert!(
        run.stderr
            .contains("can never be admitted by ClusterQueue gpu-cq"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_names_the_shortfall_when_another_job_holds_the_quota() {
    let c = cluster(&kueue(4, ""));
    // A first job takes 3 of the 4 GPUs.
    tfjob(
        &c,
        &submit_args(&["--local-queue", "team-a", "--wait", "--timeout", "2m"]),
    )
    .expect_code(0);
    let run = tfjob(
        &c,
        &[
            "check",
            "--name",
            "second",
            "--image",
            "tensorflow/tensorflow:2.13.0-gpu",
            "--ps",
            "1",
            "--workers",
            "3",
            "--gpus",
            "1",
            "--cpu",
            "4",
            "--memory",
            "8Gi",
            "--local-queue",
            "team-a",
        ],
    );
    run.expect_code(0);
    assert!(
        run.stdout.contains(
            "queued in ClusterQueue gpu-cq (LocalQueue team-a): needs 3 nvidia.com/gpu, 1 unused in flavor a100"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn a_missing_local_queue_is_refused_before_any_write() {
    let c = cluster(&kueue(8, ""));
    let run = tfjob(&c, &submit_args(&["--local-queue", "team-b"]));
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("LocalQueue default/team-b doesn't exist"),
        "{}",
        run.stderr
    );
    assert_eq!(tfjob_creates(&c), 0, "a create (even a dry run) was sent");
    assert!(c.writes().is_empty(), "{:?}", c.writes());
    // The label names the ClusterQueue: the classic mistake, said so.
    let run = tfjob(&c, &submit_args(&["--local-queue", "gpu-cq"]));
    run.expect_code(3);
    assert!(
        run.stderr.contains("gpu-cq is a ClusterQueue"),
        "{}",
        run.stderr
    );
}

#[test]
fn never_is_refused_before_any_write() {
    let c = cluster(&kueue(2, ""));
    let run = tfjob(&c, &submit_args(&["--local-queue", "team-a", "--wait"]));
    run.expect_code(4);
    assert!(run.stderr.contains("nothing was created"), "{}", run.stderr);
    assert_eq!(tfjob_creates(&c), 0);
}

#[test]
fn submit_wait_keeps_waiting_while_queued_and_succeeds_once_admitted() {
    let c = cluster(&kueue(4, ""));
    let run = tfjob(
        &c,
        &submit_args(&["--local-queue", "team-a", "--wait", "--timeout", "2m"]),
    );
    run.expect_code(0);
    // What Kueue's readiness means for a TFJob is said once by the wait.
    assert_eq!(
        run.stderr
            .matches("note: Kueue counts a TFJob as ready")
            .count(),
        1,
        "{}",
        run.stderr
    );
    // The second waits for the first's quota; deleting the first frees it.
    let second = [
        "submit",
        "--name",
        "second",
        "--image",
        "tensorflow/tensorflow:2.13.0-gpu",
        "--ps",
        "1",
        "--workers",
        "3",
        "--gpus",
        "1",
        "--cpu",
        "4",
        "--memory",
        "8Gi",
        "--local-queue",
        "team-a",
        "--wait",
        "--timeout",
        "2m",
    ];
    let c2 = &c;
    let waiter = std::thread::scope(|s| {
        let h = s.spawn(move || tfjob(c2, &second));
        // Once the second job's Workload says it waits for quota, the first one goes.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let pending = c2.list("workloads", Some("default")).into_iter().any(|w| {
                w["metadata"]["ownerReferences"][0]["name"] == "second"
                    && w["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == "QuotaReserved" && c["status"] == "False")
            });
            if pending {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "second never queued");
            std::thread::yield_now();
        }
        // ...and once the waiter has read the Workloads since (so it has seen it queued).
        let reads = |c: &tfjob_testcluster::TestCluster| {
            c.requests()
                .iter()
                .filter(|r| r.resource == "workloads" && r.verb == "list")
                .count()
        };
        let seen = reads(c2);
        while reads(c2) == seen {
            assert!(
                std::time::Instant::now() < deadline,
                "the waiter never read the Workload"
            );
            std::thread::yield_now();
        }
        tfjob(c2, &["delete", "tf-dist-train", "--timeout", "1m"]).expect_code(0);
        h.join().unwrap()
    });
    waiter.expect_code(0);
    assert!(
        waiter
            .stderr
            .contains("queued in ClusterQueue gpu-cq (LocalQueue team-a)"),
        "{}",
        waiter.stderr
    );
    assert!(
        waiter
            .stderr
            .contains("insufficient unused quota for nvidia.com/gpu in flavor a100"),
        "{}",
        waiter.stderr
    );
}

/// The first job holds 3 of gpu-cq's 4 GPUs; `second` (the same shape) is created and waits
/// until its Workload says so (polled from the store: no timing).
pub(crate) fn one_running_one_queued() -> tfjob_testcluster::TestCluster {
    let c = cluster(&kueue(4, ""));
    tfjob(
        &c,
        &submit_args(&["--local-queue", "team-a", "--wait", "--timeout", "2m"]),
    )
    .expect_code(0);
    tfjob(
        &c,
        &[
            "submit",
            "--name",
            "second",
            "--image",
            "tensorflow/tensorflow:2.13.0-gpu",
            "--ps",
            "1",
            "--workers",
            "3",
            "--gpus",
            "1",
            "--cpu",
            "4",
            "--memory",
            "8Gi",
            "--local-queue",
            "team-a",
        ],
    )
    .expect_code(0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !c.list("workloads", Some("default")).into_iter().any(|w| {
        w["metadata"]["ownerReferences"][0]["name"] == "second"
            && w["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "QuotaReserved" && c["status"] == "False")
    }) {
        assert!(std::time::Instant::now() < deadline, "second never queued");
        std::thread::yield_now();
    }
    c
}

#[test]
fn wait_and_diagnose_name_the_cluster_queue_and_the_shortfall() {
    let c = one_running_one_queued();
    let shortfall = "insufficient unused quota for nvidia.com/gpu in flavor a100, 2 more needed";
    // Queued is no failure: --pending-timeout bounds it (exit 5), never exit 4.
    let run = tfjob(
        &c,
        &[
            "wait",
            "second",
            "--pending-timeout",
            "2s",
            "--timeout",
            "1m",
        ],
    );
    run.expect_code(5);
    assert!(
        run.stderr
            .contains("queued in ClusterQueue gpu-cq (LocalQueue team-a)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(shortfall), "{}", run.stderr);
    assert!(
        !run.stderr.contains("will not run until resumed"),
        "{}",
        run.stderr
    );

    let run = tfjob(&c, &["diagnose", "second"]);
    run.expect_code(0);
    let queue_line = run
        .stdout
        .lines()
        .find(|l| l.contains("Queue") && l.contains("queued in ClusterQueue gpu-cq"))
        .unwrap_or_else(|| panic!("no Queue finding:\n{}", run.stdout));
    assert!(queue_line.contains(shortfall), "{queue_line}");
    assert!(!run.stdout.contains("kubectl patch"), "{}", run.stdout);

    // list and get say why it waits, from its Workload, as wait and diagnose do (issue 46).
    let run = tfjob(&c, &["list"]);
    run.expect_code(0);
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("second"))
        .unwrap();
    assert!(row.contains("Queued"), "{}", run.stdout);
    assert!(
        row.contains("queued: ") && row.contains(shortfall),
        "{}",
        run.stdout
    );
    let run = tfjob(&c, &["get", "second"]);
    run.expect_code(0);
    let problem = run
        .stdout
        .lines()
        .find(|l| l.starts_with("Problem:"))
        .unwrap_or_else(|| panic!("no Problem line:\n{}", run.stdout));
    assert!(problem.contains(shortfall), "{problem}");
}

#[test]
fn a_user_who_may_not_read_workloads_gets_unknown_not_a_refusal() {
    let c = cluster(&kueue(
        8,
        "",
    ).replacen(
        "kueue:",
        "rbac: {deny: [{verb: get, resource: localqueues}, {verb: list, resource: workloads}]}\nkueue:",
        1,
    ));
    let run = tfjob(
        &c,
        &article_args("check", &["--local-queue", "team-a", "-o", "json"]),
    );
    run.expect_code(0);
    let q = &json(&run.stdout)["queue"];
    assert_eq!(q["verdict"], "unknown", "{q}");
    assert!(q["reason"].as_str().unwrap().contains("forbidden"), "{q}");
    // submit goes on (with a warning), and diagnose says the Workload is not readable.
    let run = tfjob(&c, &submit_args(&["--local-queue", "team-a"]));
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("cannot tell whether the queue admits the job"),
        "{}",
        run.stderr
    );
    let run = tfjob(&c, &["diagnose", "tf-dist-train"]);
    assert!(
        run.stdout
            .contains("its Workload is not readable: forbidden to list workloads"),
        "{}",
        run.stdout
    );
}

#[test]
fn suspend_and_resume_of_a_kueue_job_go_through_its_workload() {
    let c = cluster(&kueue(8, ""));
    tfjob(
        &c,
        &submit_args(&["--local-queue", "team-a", "--wait", "--timeout", "2m"]),
    )
    .expect_code(0);
    let active = |c: &tfjob_testcluster::TestCluster| {
        c.list("workloads", Some("default"))
            .into_iter()
            .find(|w| w["metadata"]["ownerReferences"][0]["name"] == "tf-dist-train")
            .map(|w| w["spec"]["active"].clone())
    };
    let run = tfjob(&c, &["suspend", "tf-dist-train"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout.trim(),
        "tfjob.kubeflow.org/tf-dist-train suspended"
    );
    assert!(
        run.stderr.contains("Kueue manages tfjob tf-dist-train"),
        "{}",
        run.stderr
    );
    assert_eq!(active(&c), Some(serde_json::json!(false)));
    // runPolicy.suspend was not patched by the plugin (Kueue owns it).
    assert!(
        !c.writes()
            .iter()
            .any(|r| r.resource == "tfjobs" && r.verb == "patch"),
        "{:?}",
        c.writes()
    );
    let run = tfjob(&c, &["resume", "tf-dist-train"]);
    run.expect_code(0);
    assert_eq!(active(&c), Some(serde_json::json!(true)));
    assert!(run.stderr.contains("reactivated"), "{}", run.stderr);
}

#[test]
fn a_volcano_gang_without_pods_is_gang_waiting_not_a_stalled_operator() {
    let c = cluster(&format!(
        "gangScheduler: volcano\nnodes: [{{name: node-a, cpu: '16', memory: 64Gi, gpu: 1}}]\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    // The operator has made the PodGroup; Volcano keeps it Pending (3 GPUs on a 1-GPU cluster).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while c
        .get("podgroups", Some("default"), "tf-dist-train")
        .is_none()
    {
        assert!(std::time::Instant::now() < deadline, "no PodGroup");
        std::thread::yield_now();
    }
    let run = tfjob(
        &c,
        &[
            "wait",
            "tf-dist-train",
            "--pending-timeout",
            "2s",
            "--timeout",
            "1m",
        ],
    );
    // The gang is held, and the placement model says the one node can never hold it (3 GPUs
    // at once, 1 allocatable): the wait ends with that verdict (exit 4), as `check` and
    // `diagnose` give it, not at --pending-timeout (issue 59: one story).
    run.expect_code(4);
    assert!(
        run.stderr
            .contains("gang waiting: volcano PodGroup tf-dist-train in queue default"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "can never be scheduled on this cluster: the job needs 3 nvidia.com/gpu at once"
        ),
        "{}",
        run.stderr
    );
    let run = tfjob(&c, &["diagnose", "tf-dist-train"]);
    run.expect_code(4);
    assert!(run.stdout.contains("gang waiting"), "{}", run.stdout);
    assert!(
        !run.stdout.to_lowercase().contains("stalled"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_queue_label_kueue_does_not_act_on_is_said_after_the_create() {
    // Kueue installed with its shipped frameworks (no kubeflow.org/tfjob): the label does nothing.
    let c = cluster(&kueue(8, "").replacen(
        "kueue: {frameworks: [batch/job, kubeflow.org/tfjob]}",
        "kueue: {frameworks: [batch/job]}",
        1,
    ));
    let run = tfjob(&c, &submit_args(&["--local-queue", "team-a"]));
    run.expect_code(0);
    assert!(
        run.stderr.contains("Kueue's TFJob integration (kubeflow.org/tfjob in its Configuration's integrations.frameworks) looks not enabled"),
        "{}",
        run.stderr
    );
}

/// Issue 40: the verdict line, `-o json` and the exit code say the same of a queue that will
/// never let the job in.
fn agree(c: &tfjob_testcluster::TestCluster, extra: &[&str], system: &str, code: i32) {
    let run = tfjob(c, &article_args("check", extra));
    run.expect_code(code);
    assert!(
        run.stdout.contains("Verdict: never"),
        "{extra:?}: {}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("Queue ({system}): never")),
        "{extra:?}: {}",
        run.stdout
    );
    let mut with_json = extra.to_vec();
    with_json.extend(["-o", "json"]);
    let run = tfjob(c, &article_args("check", &with_json));
    run.expect_code(code);
    let v = json(&run.stdout);
    assert_eq!(v["verdict"], "never", "{extra:?}: {v}");
    assert_eq!(v["queue"]["verdict"], "never", "{extra:?}: {v}");
    let before = tfjob_creates(c);
    tfjob(c, &article_args("submit", extra)).expect_code(code);
    assert_eq!(tfjob_creates(c), before, "{extra:?}: a create was sent");
}

#[test]
fn the_operators_volcano_gang_judges_the_queue_whatever_the_templates_say() {
    // The operator runs with --gang-scheduler-name=volcano; the templates name no scheduler.
    let c = cluster(&format!(
        r#"gangScheduler: volcano
nodes: [{{name: gpu-1, cpu: "32", memory: 128Gi, gpu: 4}}]
objects:{SECRET}
  - apiVersion: scheduling.volcano.sh/v1beta1
    kind: Queue
    metadata: {{name: zero}}
    spec: {{weight: 1, capability: {{nvidia.com/gpu: 0}}}}
    status: {{state: Open}}
  - apiVersion: scheduling.volcano.sh/v1beta1
    kind: Queue
    metadata: {{name: shut}}
    spec: {{weight: 1}}
    status: {{state: Closed}}
"#
    ));
    agree(&c, &["--queue", "nope"], "volcano", 3);
    agree(&c, &["--queue", "zero"], "volcano", 4);
    agree(&c, &["--queue", "shut"], "volcano", 3);
    let run = tfjob(&c, &article_args("check", &[]));
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("Queue (volcano): fits — gang of 4 fits Volcano queue default"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Verdict: fits"), "{}", run.stdout);
}

#[test]
fn a_zero_quota_or_dangling_local_queue_is_never_in_line_json_and_exit_code() {
    let c = cluster(&kueue(
        0,
        "  - apiVersion: kueue.x-k8s.io/v1beta2\n    kind: LocalQueue\n    metadata: {name: dangling, namespace: default}\n    spec: {clusterQueue: nope}\n",
    ));
    agree(&c, &["--local-queue", "team-a"], "kueue", 4);
    agree(&c, &["--local-queue", "dangling"], "kueue", 3);
}

/// Kueue counts a RuntimeClass's pod overhead in the Workload's requests
/// (pkg/workload/resources.go `handlePodOverhead`): two 30-CPU workers fit gpu-cq's 64 CPUs,
/// with a 4-CPU overhead each they never do.
#[test]
fn kueue_counts_the_runtime_class_overhead() {
    let class = "  - {apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: kata}, handler: kata, overhead: {podFixed: {cpu: '4'}}}\n";
    let c = cluster(&kueue(8, class));
    let job = |runtime: &str| {
        format!(
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: rc\n  labels: {{kueue.x-k8s.io/queue-name: team-a}}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n        spec:\n{runtime}          containers:\n          - name: tensorflow\n            image: tensorflow/tensorflow:2.13.0\n            resources: {{requests: {{cpu: '30', memory: 1Gi}}}}\n"
        )
    };
    let (_d1, plain) = crate::manifest_file(&job(""));
    let run = tfjob(&c, &["check", "-f", plain.to_str().unwrap(), "-o", "json"]);
    assert_eq!(
        json(&run.stdout)["queue"]["verdict"],
        "fits",
        "{}",
        run.all()
    );
    let (_d2, kata) = crate::manifest_file(&job("          runtimeClassName: kata\n"));
    let run = tfjob(&c, &["check", "-f", kata.to_str().unwrap(), "-o", "json"]);
    let q = &json(&run.stdout)["queue"];
    assert_eq!(q["verdict"], "never", "{q}");
    assert!(
        q["message"].as_str().unwrap().contains(
            "insufficient quota for cpu in flavor a100, previously considered podsets requests (0) + current podset request (68) > maximum capacity (64)"
        ),
        "{q}"
    );
    assert_eq!(tfjob_creates(&c), 0);
    // The test cluster's Kueue says the same of the Workload once the job is there.
    tfjob(
        &c,
        &[
            "submit",
            "-f",
            kata.to_str().unwrap(),
            "--skip-capacity-check",
        ],
    )
    .expect_code(0);
    let said = c.wait_for(std::time::Duration::from_secs(60), |c| {
        c.list("workloads", Some("default")).into_iter().any(|w| {
            w["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| {
                    c["type"] == "QuotaReserved"
                        && c["status"] == "False"
                        && c["message"]
                            .as_str()
                            .unwrap_or("")
                            .contains("current podset request (68) > maximum capacity (64)")
                })
        })
    });
    assert!(said, "{:#?}", c.list("workloads", Some("default")));
}

/// `--local-queue ''` (and `--queue ''`) was dropped without a word: the job went to no queue.
#[test]
fn an_empty_queue_name_is_refused_naming_the_flag() {
    for flag in ["--local-queue", "--queue"] {
        for value in ["", " "] {
            // Before the article's flags: they end with `-- COMMAND`.
            let mut a = vec!["render", flag, value];
            a.extend_from_slice(crate::submit::ARTICLE);
            let run = crate::Cli::new(None, &a).run();
            run.expect_code(2);
            assert!(
                run.stderr.contains(flag),
                "{flag} {value:?}: {}",
                run.stderr
            );
            assert!(run.stderr.contains("cannot be empty"), "{}", run.stderr);
            assert!(run.stdout.is_empty(), "{}", run.stdout);
        }
    }
}

/// Issue 61 item 10: `check` of a job that names no queue, in a namespace with a LocalQueue,
/// says which quota its verdict leaves out and how to queue it; it never says it created
/// nothing (it creates nothing), while `submit`'s refusal does.
#[test]
fn check_without_a_queue_names_the_local_queue_it_bypasses() {
    let c = cluster(&kueue(8, ""));
    let run = tfjob(&c, &article_args("check", &[]));
    run.expect_code(0);
    assert!(
        run.stderr.contains(
            "namespace default has Kueue LocalQueue team-a, but the job names none (label kueue.x-k8s.io/queue-name)"
        ) && run.stderr.contains("pass --local-queue team-a to queue it"),
        "{}",
        run.stderr
    );
    let c = cluster(&kueue(2, ""));
    let run = tfjob(&c, &article_args("check", &["--local-queue", "team-a"]));
    run.expect_code(4);
    assert!(
        !run.stderr.contains("nothing was created"),
        "{}",
        run.stderr
    );
    let run = tfjob(&c, &submit_args(&["--local-queue", "team-a"]));
    run.expect_code(4);
    assert!(run.stderr.contains("nothing was created"), "{}", run.stderr);
}
