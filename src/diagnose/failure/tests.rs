use super::*;
use serde_json::json;

fn pod(v: serde_json::Value) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(v).unwrap()
}

fn labelled(
    name: &str,
    rtype: &str,
    index: u32,
    status: serde_json::Value,
) -> k8s_openapi::api::core::v1::Pod {
    pod(json!({
        "metadata": {"name": name, "labels": {
            "training.kubeflow.org/replica-type": rtype,
            "training.kubeflow.org/replica-index": index.to_string()}},
        "status": status
    }))
}

fn ev<'a>(p: &'a k8s_openapi::api::core::v1::Pod, log: Option<&'a str>) -> PodEvidence<'a> {
    PodEvidence {
        meta: &p.metadata,
        status: p.status.as_ref(),
        memory_limit: Some("8Gi"),
        log,
        node_not_ready: None,
        max_restarts: 3,
        now: None,
    }
}

fn terminated(code: i32, reason: &str, started: &str, finished: &str) -> serde_json::Value {
    json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished}})
}

#[test]
fn oom_killed_names_the_limit_the_run_time_and_the_restarts() {
    let p = labelled(
        "j-worker-2",
        "worker",
        2,
        json!({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i",
            "imageID": "", "ready": false, "restartCount": 2,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": terminated(137, "OOMKilled", "2026-01-01T10:00:00Z", "2026-01-01T10:41:00Z")}]}),
    );
    let f = classify(ev(&p, None), Some("j")).unwrap();
    assert_eq!(
        f.line,
        "Worker-2: OOMKilled (limit 8Gi, exit code 137) after 41m, 2 restarts"
    );
    assert_eq!(f.class, "OOMKilled");
    assert_eq!(f.at.unwrap().to_string(), "2026-01-01T10:41:00Z");
}

#[test]
fn an_evicted_pod_says_the_kubelets_message_not_a_crash() {
    // What the kubelet writes (pkg/kubelet/eviction/helpers.go), with the container status
    // it leaves behind (ContainerStatusUnknown, 137).
    let p = labelled(
        "j-worker-0",
        "worker",
        0,
        json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container tensorflow was using 6Gi, request is 1Gi, has larger consumption of memory. ",
            "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                "message": "The node was low on resource: memory.", "lastTransitionTime": "2026-01-01T10:00:00Z"}],
            "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "", "ready": false,
                "restartCount": 0, "state": terminated(137, "ContainerStatusUnknown", "2026-01-01T09:00:00Z", "2026-01-01T10:00:00Z")}]}),
    );
    let f = classify(ev(&p, None), Some("j")).unwrap();
    assert_eq!(f.class, "Evicted");
    assert!(
        f.line.starts_with("Worker-0: Evicted by the kubelet (TerminationByKubelet): The node was low on resource: memory."),
        "{}",
        f.line
    );
}

#[test]
fn each_disruption_target_reason_is_its_own_class() {
    for (reason, words) in [
        ("PreemptionByScheduler", "preempted by the scheduler"),
        ("TerminationByKubelet", "terminated by the kubelet"),
        ("EvictionByEvictionAPI", "Eviction API"),
        ("DeletionByTaintManager", "taint manager"),
    ] {
        let p = labelled(
            "j-ps-0",
            "ps",
            0,
            json!({"phase": "Running", "conditions": [{"type": "DisruptionTarget", "status": "True",
                "reason": reason, "message": "default-scheduler: preempting to accommodate a higher priority pod"}]}),
        );
        let f = classify(ev(&p, None), Some("j")).unwrap();
        assert_eq!(f.class, reason);
        assert!(
            f.line.starts_with(&format!("PS-0: {reason} (")),
            "{}",
            f.line
        );
        assert!(f.line.contains(words), "{}", f.line);
    }
    // A DisruptionTarget reset to False (the disruption did not go ahead) is no verdict.
    let p = labelled(
        "j-ps-0",
        "ps",
        0,
        json!({"phase": "Running", "conditions": [{"type": "DisruptionTarget", "status": "False",
            "reason": "PreemptionByScheduler"}]}),
    );
    assert!(classify(ev(&p, None), Some("j")).is_none());
}

#[test]
fn a_lost_node_is_named() {
    let p = labelled("j-worker-1", "worker", 1, json!({"phase": "Running"}));
    let mut e = ev(&p, None);
    e.node_not_ready = Some(("node-2", "Unknown: Kubelet stopped posting node status."));
    let f = classify(e, Some("j")).unwrap();
    assert_eq!(
        f.line,
        "Worker-1: NodeLost (node node-2 is not Ready: Unknown: Kubelet stopped posting node status.)"
    );
}

#[test]
fn log_signatures_classify_a_crash_and_a_stall() {
    let crashed = labelled(
        "j-worker-0",
        "worker",
        0,
        json!({"phase": "Failed", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
            "ready": false, "restartCount": 0,
            "state": terminated(1, "Error", "2026-01-01T10:00:00Z", "2026-01-01T10:05:00Z")}]}),
    );
    let log = "step 1\ntensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[64,1024,1024] and type float on /job:worker/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n";
    let f = classify(ev(&crashed, Some(log)), Some("j")).unwrap();
    assert_eq!(f.class, "ResourceExhausted");
    assert!(
        f.line
            .starts_with("Worker-0: ResourceExhausted (TensorFlow ran out of device (GPU) memory"),
        "{}",
        f.line
    );
    assert!(f.line.ends_with("exit code 1) after 5m"), "{}", f.line);
    assert!(f.evidence.unwrap().contains("OOM when allocating tensor"));

    let running = labelled(
        "j-chief-0",
        "chief",
        0,
        json!({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
            "ready": true, "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T10:00:00Z"}}}]}),
    );
    let log = "I tensorflow/core/distributed_runtime/master.cc:221] CreateSession still waiting for response from worker: /job:worker/replica:0/task:1\n";
    let f = classify(ev(&running, Some(log)), Some("j")).unwrap();
    assert!(f.running);
    assert_eq!(f.class, "CreateSessionWaiting");
    assert!(
        f.line
            .starts_with("Chief-0: CreateSessionWaiting (still running")
    );
    // A running replica whose log has a Traceback it survived is not stuck.
    assert!(
        classify(
            ev(&running, Some("Traceback (most recent call last):\n")),
            Some("j")
        )
        .is_none()
    );
    // Judged by time (issue 46): stalled for less than the grace period it may be waiting for
    // a peer that is starting; past it, it is stuck. The run of stall lines counts from its
    // first line after the last progress.
    let now: Timestamp = "2026-01-01T10:10:00Z".parse().unwrap();
    let stalled = |since: &str| {
        format!(
            "2026-01-01T10:00:00.000000000Z step 5 loss 0.5\n{since} W grpc: UnavailableError: failed to connect to all addresses\n2026-01-01T10:09:59.000000000Z CreateSession still waiting for response from worker: /job:worker/replica:0/task:1\n"
        )
    };
    let mut e = ev(&running, None);
    e.now = Some(now);
    let young = stalled("2026-01-01T10:09:00.000000000Z");
    e.log = Some(&young);
    assert!(classify(e, Some("j")).is_none());
    let old = stalled("2026-01-01T10:05:00.000000000Z");
    e.log = Some(&old);
    let f = classify(e, Some("j")).unwrap();
    assert!(f.running, "{f:?}");
    assert_eq!(
        stalled_since(&old),
        Some("2026-01-01T10:05:00Z".parse().unwrap())
    );
    // The line shown is the line, not the kubelet's time.
    assert!(
        f.evidence
            .as_deref()
            .unwrap()
            .starts_with("CreateSession still waiting"),
        "{f:?}"
    );
}

#[test]
fn every_signature_matches_its_own_patterns_and_the_first_wins() {
    for sig in SIGNATURES {
        for p in sig.patterns {
            let (found, _) = scan_log(&format!("noise\n{p} here\nmore")).unwrap();
            // An earlier (more specific) signature may share a pattern; none does today.
            assert_eq!(found.class, sig.class, "{p}");
        }
        assert!(!sig.source.is_empty());
    }
    // A GPU OOM surfaces as a Traceback too: the specific class wins.
    let log = "Traceback (most recent call last):\n  File \"train.py\"\nResourceExhaustedError: OOM when allocating tensor with shape[1]";
    assert_eq!(scan_log(log).unwrap().0.class, "ResourceExhausted");
    assert!(scan_log("step 401 loss 0.401\n").is_none());
}

/// Lines every healthy GPU job logs name no failure class; a job that died of a Python
/// exception after them is a PythonTraceback (issue 47, item 7).
#[test]
fn routine_gpu_lines_are_not_failures() {
    for line in [
        "I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcudart.so.11.0",
        "node-1:42:42 [0] NCCL WARN Bootstrap : no socket interface found",
    ] {
        assert!(
            scan_log(&format!(
                "{line}
step 10 loss 0.4
"
            ))
            .is_none(),
            "{line}"
        );
        let died = format!(
            "{line}
Traceback (most recent call last):
  File \"train.py\"\nValueError: bad shape\n"
        );
        assert_eq!(
            scan_log(&died).unwrap().0.class,
            "PythonTraceback",
            "{line}"
        );
    }
}

#[test]
fn a_crash_loop_is_a_failure_while_the_container_runs_between_crashes() {
    // Between two back-offs the container runs: the restarts still say it loops.
    let p = labelled(
        "j-worker-1",
        "worker",
        1,
        json!({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
            "ready": true, "restartCount": 44, "state": {"running": {"startedAt": "2026-01-01T10:00:00Z"}},
            "lastState": terminated(1, "Error", "2026-01-01T09:59:00Z", "2026-01-01T09:59:30Z")}]}),
    );
    let f = classify(ev(&p, None), Some("j")).unwrap();
    assert_eq!(
        f.line,
        "Worker-1: CrashLoop (44 restarts, last exit code 1 (Error))"
    );
    // Under the limit and running again: not a failure.
    let mut e = ev(&p, None);
    e.max_restarts = 50;
    assert!(classify(e, Some("j")).is_none());
    // Five minutes after the last crash the kubelet still backs it off: a loop. Eleven
    // minutes on, past its back-off reset (twice 300s), it has recovered: history.
    for (now, looping) in [
        ("2026-01-01T10:04:30Z", true),
        ("2026-01-01T10:10:31Z", false),
    ] {
        let mut e = ev(&p, None);
        e.now = Some(now.parse().unwrap());
        assert_eq!(classify(e, Some("j")).is_some(), looping, "{now}");
    }
}

#[test]
fn operator_events_name_replicas_whose_pods_are_gone() {
    let e: Event = serde_json::from_value(json!({
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "TFJob", "name": "j"},
        "reason": "ExitedWithCode", "message": "Pod: default.j-worker-1 exited with code 137",
        "firstTimestamp": "2026-01-01T10:00:00Z"
    }))
    .unwrap();
    let ok: Event = serde_json::from_value(json!({
        "metadata": {"name": "e2"}, "involvedObject": {"kind": "TFJob", "name": "j"},
        "reason": "ExitedWithCode", "message": "Pod: default.j-ps-0 exited with code 0"
    }))
    .unwrap();
    let f = from_operator_events(&[e.clone(), ok.clone()], &[], "default", "j");
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].line,
        "Worker-1: ExitCode 137 (SIGKILL: the OOM killer, an eviction or a preemption), from the operator's events; its pod and logs are gone"
    );
    assert_eq!(killed_pods(&[e.clone(), ok.clone()]), ["j-worker-1"]);
    // The pod's own events outlive it: the kill is named by who made it (issue 46), not
    // guessed from the code; another pod's events do not count.
    let preempted: Event = serde_json::from_value(json!({
        "metadata": {"name": "e3"},
        "involvedObject": {"kind": "Pod", "name": "j-worker-1", "uid": "old"},
        "reason": "Preempted", "message": "Preempted by pod 1234 on node gpu-a",
        "lastTimestamp": "2026-01-01T09:59:58Z"
    }))
    .unwrap();
    let mut elsewhere = preempted.clone();
    elsewhere.involved_object.name = Some("j-worker-2".into());
    assert_eq!(
        from_operator_events(std::slice::from_ref(&e), &[elsewhere], "default", "j")[0].class,
        "ExitCode"
    );
    let f = from_operator_events(&[e, ok], &[preempted], "default", "j");
    assert_eq!(
        f[0].line,
        "Worker-1: PreemptionByScheduler (exit code 137; Preempted by pod 1234 on node gpu-a), from its events; the pod that ran is gone"
    );
}

#[test]
fn the_first_to_fail_heads_the_list_and_stalls_come_last() {
    let at = |s: &str| Some(s.parse::<Timestamp>().unwrap());
    let f = |r: &str, t: Option<Timestamp>, running: bool| ReplicaFailure {
        replica: r.into(),
        pod: r.into(),
        class: "x".into(),
        line: r.into(),
        evidence: None,
        at: t,
        running,
    };
    let mut list = vec![
        f("Chief-0", None, true),
        f("Worker-3", at("2026-01-01T10:05:00Z"), false),
        f("PS-0", None, false),
        f("Worker-1", at("2026-01-01T10:01:00Z"), false),
    ];
    order(&mut list);
    let names: Vec<&str> = list.iter().map(|f| f.replica.as_str()).collect();
    assert_eq!(names, ["Worker-1", "Worker-3", "PS-0", "Chief-0"]);
}

#[test]
fn the_ledger_lists_restarts_oldest_first() {
    let p = labelled(
        "j-worker-1",
        "worker",
        1,
        json!({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
            "ready": true, "restartCount": 3, "state": {"running": {}},
            "lastState": terminated(137, "OOMKilled", "2026-01-01T10:00:00Z", "2026-01-01T10:10:00Z")}]}),
    );
    let t = "2026-01-01T09:00:00Z".parse().ok();
    let lines = ledger(&p.metadata, p.status.as_ref(), Some("j"), &[(t, 2)]);
    assert_eq!(
        lines,
        [
            "Worker-1 restarts #1–#2: details not kept by the kubelet (2 back-off events, the first back-off at 2026-01-01T09:00:00Z)",
            "Worker-1 restart #3: OOMKilled exit code 137 at 2026-01-01T10:10:00Z",
        ]
    );
}

#[test]
fn labels_come_from_the_operators_labels_or_the_pod_name() {
    assert_eq!(
        label_from_pod_name("my-job-worker-12", "my-job").as_deref(),
        Some("Worker-12")
    );
    assert_eq!(
        label_from_pod_name("my-job-ps-0", "my-job").as_deref(),
        Some("PS-0")
    );
    assert_eq!(label_from_pod_name("other-worker-0", "my-job"), None);
}

/// Issue 48 item 6: a crash is headed by what the user must fix, the exception line (after a
/// chained traceback, the last one) or argparse's complaint, not by the class.
#[test]
fn a_crash_is_headed_by_its_exception_line_or_argparses_error() {
    let log = "step 3\nTraceback (most recent call last):\n  File \"t.py\", line 9, in <module>\n    main()\n    ^^^^^^\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"t.py\", line 11, in <module>\n    fit(x)\nValueError: bad shape (32, 10) vs (32, 1)\n";
    let (sig, line) = scan_log(log).unwrap();
    assert_eq!(sig.class, "PythonTraceback");
    assert_eq!(line, "ValueError: bad shape (32, 10) vs (32, 1)");
    // A traceback cut before its exception line keeps the traceback line as evidence.
    let (_, cut) = scan_log("Traceback (most recent call last):\n  File \"t.py\"\n").unwrap();
    assert_eq!(cut, "Traceback (most recent call last):");
    let argparse = "usage: task.py [-h] --batch_size BATCH_SIZE\ntask.py: error: the following arguments are required: --batch_size\n";
    let (sig, line) = scan_log(argparse).unwrap();
    assert_eq!(sig.class, "ArgumentError");
    assert_eq!(
        line,
        "task.py: error: the following arguments are required: --batch_size"
    );
    let p = labelled(
        "j-worker-1",
        "worker",
        1,
        json!({"phase": "Failed", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
            "ready": false, "restartCount": 0,
            "state": terminated(2, "Error", "2026-01-01T10:00:00Z", "2026-01-01T10:00:01Z")}]}),
    );
    let mut e = ev(&p, None);
    e.log = Some(argparse);
    let f = classify(e, Some("j")).unwrap();
    assert!(
        f.line.starts_with(
            "Worker-1: task.py: error: the following arguments are required: --batch_size (ArgumentError: "
        ),
        "{}",
        f.line
    );
    assert!(f.line.contains("exit code 2"), "{}", f.line);
}

/// A worker that starts before its PS logs a gRPC failure once and then trains: the log is
/// judged by what came after, not by the word (issue 46). Still failing at the end, it counts.
#[test]
fn a_peer_not_reached_at_start_then_progress_is_not_a_failure() {
    let early = "2026-12-06T07:00:00.000000000Z UnavailableError: failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.7:2222: Connection refused\n\
                 2026-12-06T07:00:30.000000000Z Epoch 1/10\n\
                 2026-12-06T07:01:00.000000000Z 120/500 [====>...] - ETA: 3:10 - loss: 0.91\n";
    assert!(scan_log(early).is_none(), "{:?}", scan_log(early));
    let still = "step 10 loss 0.4\nUnavailableError: failed to connect to all addresses\n";
    assert_eq!(scan_log(still).unwrap().0.class, "Unavailable");
    // Not for a crash: a traceback after progress still ended the process.
    let died = "step 10 loss 0.4\nTraceback (most recent call last):\n  File \"t.py\"\nValueError: x\nstep 11\n";
    assert_eq!(scan_log(died).unwrap().0.class, "PythonTraceback");
}

/// A long gRPC line keeps its end, where the cause is (issue 46: the excerpt was cut before
/// `Connection refused`).
#[test]
fn a_long_line_keeps_its_cause_at_the_end() {
    let line = format!(
        "UnavailableError: failed to connect to all addresses; last error: UNKNOWN: ipv4:10.244.0.17:2222: {}Connection refused",
        "x".repeat(300)
    );
    let (_, shown) = scan_log(&line).unwrap();
    assert!(shown.ends_with("Connection refused"), "{shown}");
    assert!(
        shown.starts_with("UnavailableError: failed to connect"),
        "{shown}"
    );
    assert_eq!(shown.chars().count(), 200);
}
