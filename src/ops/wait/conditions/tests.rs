use super::*;
use crate::ops::wait::conditions;
use serde_json::json;

fn job(conditions: serde_json::Value) -> TFJob {
    serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "tf", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {
            "PS": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}},
            "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}
        }},
        "status": {"conditions": conditions}
    }))
    .unwrap()
}

fn cond(t: &str, s: &str) -> serde_json::Value {
    json!({"type": t, "status": s, "reason": format!("TFJob{t}"), "message": format!("TFJob default/tf is {t}.")})
}

fn pod(rtype: &str, idx: i32, status: serde_json::Value) -> Arc<Pod> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("tf-{rtype}-{idx}"), "labels": {
                "training.kubeflow.org/replica-type": rtype,
                "training.kubeflow.org/replica-index": idx.to_string()}},
            "status": status
        }))
        .unwrap(),
    )
}

/// A Running pod whose tensorflow container started at `started` after `restarts` restarts.
fn running_since(started: &str, restarts: i32) -> serde_json::Value {
    json!({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
        "ready": true, "started": true, "restartCount": restarts, "state": {"running": {"startedAt": started}}}]})
}

fn unschedulable() -> serde_json::Value {
    json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}]})
}

/// The article's job: 1 PS + 3 one-GPU workers.
fn article_job(conditions: serde_json::Value) -> TFJob {
    serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "tf", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {
            "PS": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}},
            "Worker": {"replicas": 3, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}
        }},
        "status": {"conditions": conditions}
    }))
    .unwrap()
}

/// A clock at `wall`.
fn at(wall: &str) -> Now {
    Now {
        instant: Instant::now(),
        wall: wall.parse().unwrap(),
    }
}

fn waiting(reason: &str, message: &str) -> serde_json::Value {
    json!({"phase": "Pending", "containerStatuses": [{"name": "tensorflow", "image": "bad:1", "imageID": "",
        "ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason, "message": message}}}]})
}

const LIMITS: Limits = Limits {
    image_pull_grace: Duration::from_secs(60),
    pending_timeout: Some(Duration::from_secs(120)),
    settle: Duration::ZERO,
    max_restarts: 3,
};

/// `evaluate` without an operator reading.
fn ev(
    target: WaitFor,
    job: &TFJob,
    pods: &[Arc<Pod>],
    tracker: &mut Tracker,
    limits: Limits,
    now: Now,
) -> Outcome {
    let view = View {
        job,
        pods,
        operator: None,
    };
    evaluate(target, view, tracker, limits, now)
}

#[test]
fn running_condition_reaches_running_not_succeeded() {
    let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
    let mut t = Tracker::default();
    let now = Now::current();
    assert_eq!(
        ev(WaitFor::Running, &j, &[], &mut t, LIMITS, now),
        Outcome::Reached("Running".into())
    );
    assert_eq!(
        ev(WaitFor::Created, &j, &[], &mut t, LIMITS, now),
        Outcome::Reached("Created".into())
    );
    assert_eq!(
        ev(WaitFor::Succeeded, &j, &[], &mut t, LIMITS, now),
        Outcome::Waiting
    );
}

#[test]
fn failed_condition_is_fatal_with_its_message() {
    let j = job(
        json!([cond("Created", "True"), {"type": "Failed", "status": "True",
        "message": "TFJob default/tf has failed because 1 Worker replica(s) failed."}]),
    );
    let out = ev(
        WaitFor::Finished,
        &j,
        &[],
        &mut Tracker::default(),
        LIMITS,
        Now::current(),
    );
    assert_eq!(
        out,
        Outcome::Fatal(
            "TFJob tf failed: TFJob default/tf has failed because 1 Worker replica(s) failed."
                .into()
        )
    );
}

#[test]
fn all_running_counts_every_replica() {
    let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
    let running = running_since("2026-01-01T00:00:00Z", 0);
    let mut pods = vec![
        pod("ps", 0, running.clone()),
        pod("worker", 0, running.clone()),
    ];
    let mut t = Tracker::default();
    let now = Now::current();
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &pods, &mut t, LIMITS, now),
        Outcome::Waiting
    );
    pods.push(pod("worker", 1, running));
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &pods, &mut t, LIMITS, now),
        Outcome::Reached("all replicas Running".into())
    );
    let p = progress(&j, &pods);
    assert_eq!(p.replicas["Worker"].running, 2);
    assert_eq!(p.replicas["PS"].expected, 1);
    assert_eq!(p.line(), "Running  PS 1/1 running  Worker 2/2 running");
}

#[test]
fn image_pull_errors_get_a_grace_period() {
    let j = job(json!([cond("Created", "True")]));
    let pods = vec![pod(
        "worker",
        0,
        waiting("ImagePullBackOff", "Back-off pulling image \"bad:1\""),
    )];
    let mut t = Tracker::default();
    let t0 = Now::current();
    assert_eq!(
        ev(WaitFor::Running, &j, &pods, &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    match ev(
        WaitFor::Running,
        &j,
        &pods,
        &mut t,
        LIMITS,
        t0.after(Duration::from_secs(61)),
    ) {
        Outcome::Fatal(m) => assert!(m.contains("cannot pull image \"bad:1\""), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_image_or_a_never_pull_fails_at_once_with_the_registrys_answer() {
    let j = job(json!([cond("Created", "True")]));
    let not_found = "rpc error: code = NotFound desc = failed to pull and unpack image \"bad:1\": failed to resolve reference \"bad:1\": bad:1: not found";
    for (reason, message) in [
        ("ErrImagePull", not_found.to_string()),
        // kubelet 1.32+: the back-off message carries the pull error.
        (
            "ImagePullBackOff",
            format!("Back-off pulling image \"bad:1\": ErrImagePull: {not_found}"),
        ),
        // CRI-O / the OCI distribution API.
        (
            "ErrImagePull",
            "reading manifest 1 in docker.io/library/bad: manifest unknown".into(),
        ),
        (
            "ErrImageNeverPull",
            "Container image \"bad:1\" is not present with pull policy of Never".into(),
        ),
    ] {
        let pods = vec![pod("worker", 0, waiting(reason, &message))];
        let mut t = Tracker::default();
        match ev(WaitFor::Running, &j, &pods, &mut t, LIMITS, Now::current()) {
            Outcome::Fatal(m) => {
                assert!(m.contains(reason) && m.contains(&message), "{m}");
                assert!(m.contains("pod tf-worker-0 container tensorflow"), "{m}");
            }
            other => panic!("{reason}: {other:?}"),
        }
    }
    // Transient answers keep the grace.
    for message in [
        "rpc error: code = Unknown desc = failed to do request: Head \"https://r/v2/\": dial tcp: i/o timeout",
        "rpc error: code = Unknown desc = 429 Too Many Requests",
    ] {
        let pods = vec![pod("worker", 0, waiting("ErrImagePull", message))];
        assert_eq!(
            ev(
                WaitFor::Running,
                &j,
                &pods,
                &mut Tracker::default(),
                LIMITS,
                Now::current()
            ),
            Outcome::Waiting,
            "{message}"
        );
    }
}

#[test]
fn progress_does_not_change_when_the_pull_only_alternates() {
    let j = job(json!([cond("Created", "True")]));
    let err = progress(&j, &[pod("worker", 0, waiting("ErrImagePull", "timeout"))]);
    let backoff = progress(
        &j,
        &[pod("worker", 0, waiting("ImagePullBackOff", "Back-off"))],
    );
    assert_eq!(err, backoff);
    assert!(err.line().ends_with("(ImagePullBackOff)"), "{}", err.line());
}

#[test]
fn missing_secret_and_crash_loop_fail_at_once() {
    let j = job(json!([cond("Created", "True")]));
    let pods = vec![pod(
        "worker",
        0,
        waiting(
            "CreateContainerConfigError",
            "secret \"taotoken-secret\" not found",
        ),
    )];
    match ev(
        WaitFor::Running,
        &j,
        &pods,
        &mut Tracker::default(),
        LIMITS,
        Now::current(),
    ) {
        Outcome::Fatal(m) => assert!(m.contains("secret \"taotoken-secret\" not found"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// A worker's tensorflow container after `restarts` restarts, waiting in CrashLoopBackOff after
/// exiting with `code`.
fn crashed(restarts: i32, code: i32) -> serde_json::Value {
    json!({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
        "ready": false, "started": false, "restartCount": restarts,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}},
        "lastState": {"terminated": {"exitCode": code, "reason": "Error"}}}]})
}

fn with_uid(p: Arc<Pod>, uid: &str) -> Arc<Pod> {
    let mut p = (*p).clone();
    p.metadata.uid = Some(uid.into());
    Arc::new(p)
}

#[test]
fn a_restart_is_shown_and_starts_the_settle_window_again_but_is_not_a_failure() {
    let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
    let limits = Limits {
        settle: Duration::from_secs(5),
        ..LIMITS
    };
    let mut t = Tracker::default();
    let t0 = at("2026-01-01T00:00:00Z");
    let pods = |w1: serde_json::Value| {
        vec![
            pod("ps", 0, running_since("2026-01-01T00:00:00Z", 0)),
            pod("worker", 0, running_since("2026-01-01T00:00:00Z", 0)),
            pod("worker", 1, w1),
        ]
    };
    let first = pods(running_since("2026-01-01T00:00:00Z", 0));
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &first, &mut t, limits, t0),
        Outcome::Waiting
    );
    assert!(t.take_notes().is_empty());
    // worker-1 exits once (the PS was not up yet): shown, not fatal.
    let t1 = t0.after(Duration::from_secs(1));
    assert_eq!(
        ev(
            WaitFor::AllRunning,
            &j,
            &pods(crashed(1, 1)),
            &mut t,
            limits,
            t1
        ),
        Outcome::Waiting
    );
    assert_eq!(t.take_notes(), ["Worker-1 restarted (exit 1), 1\u{d7}"]);
    // Running again: the window starts from here, so 5s after t0 is not enough.
    let t2 = t0.after(Duration::from_secs(2));
    let again = pods(running_since("2026-01-01T00:00:02Z", 1));
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &again, &mut t, limits, t2),
        Outcome::Waiting
    );
    assert!(t.take_notes().is_empty(), "the same restart is shown once");
    let t7 = t0.after(Duration::from_secs(7));
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &again, &mut t, limits, t7),
        Outcome::Reached("all replicas Running".into())
    );
}

#[test]
fn restarts_of_a_pod_created_after_the_wait_started_count_however_late_it_is_seen() {
    let j = job(json!([cond("Created", "True")]));
    // Created at 00:00:05, first seen at 00:00:20 already restarted twice.
    let created = |restarts| {
        let mut p = (*pod("ps", 0, crashed(restarts, 1))).clone();
        p.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-01-01T00:00:05Z".parse().unwrap(),
        ));
        vec![Arc::new(p)]
    };
    let late = at("2026-01-01T00:00:20Z");
    // The wait started at 00:00:00: both restarts happened during it.
    let mut t = Tracker::starting_at("2026-01-01T00:00:00Z".parse().unwrap());
    ev(WaitFor::Running, &j, &created(2), &mut t, LIMITS, late);
    assert_eq!(t.take_notes(), ["PS-0 restarted (exit 1), 2\u{d7}"]);
    // Without its start, the first look is the start: they are history.
    let mut t = Tracker::default();
    ev(WaitFor::Running, &j, &created(2), &mut t, LIMITS, late);
    assert!(t.take_notes().is_empty());
}

#[test]
fn a_crash_loop_is_max_restarts_of_one_container_during_the_wait() {
    let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
    let mut t = Tracker::default();
    let t0 = Now::current();
    let w = |n| vec![pod("worker", 0, crashed(n, 2))];
    assert_eq!(
        ev(WaitFor::Succeeded, &j, &w(0), &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    assert_eq!(
        ev(
            WaitFor::Succeeded,
            &j,
            &w(1),
            &mut t,
            LIMITS,
            t0.after(Duration::from_secs(10))
        ),
        Outcome::Waiting
    );
    assert_eq!(
        ev(
            WaitFor::Succeeded,
            &j,
            &w(2),
            &mut t,
            LIMITS,
            t0.after(Duration::from_secs(30))
        ),
        Outcome::Waiting
    );
    assert_eq!(
        t.take_notes(),
        [
            "Worker-0 restarted (exit 2), 1\u{d7}",
            "Worker-0 restarted (exit 2), 2\u{d7}"
        ]
    );
    match ev(
        WaitFor::Succeeded,
        &j,
        &w(3),
        &mut t,
        LIMITS,
        t0.after(Duration::from_secs(70)),
    ) {
        Outcome::Fatal(m) => {
            for part in [
                "Worker-0 (pod tf-worker-0) is crash-looping",
                "restarted 3\u{d7} in 60.0s during the wait",
                "last exit code 2 (Error)",
                "(--max-restarts 3)",
            ] {
                assert!(m.contains(part), "{part:?} in {m}");
            }
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(t.crashed, Some(("tf-worker-0".into(), "tensorflow".into())));
}

/// Restarts from before the wait are history once the container runs without restarting (the
/// kubelet recovered it); a container that is still crashing is the crash loop `diagnose` and
/// `probe` see, whether it is down when first seen or restarts again during the wait. Seen on
/// a real kubelet: its back-off (40s, 80s, …) let a wait time out (5) on a job that diagnose
/// called failed (4).
#[test]
fn restarts_before_the_wait_are_history_only_once_the_container_stops_crashing() {
    let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
    let t0 = at("2026-01-01T00:00:00Z");
    let fatal = |o: Outcome, part: &str| match o {
        Outcome::Fatal(m) => assert!(m.contains(part), "{part:?} in {m}"),
        other => panic!("{other:?}"),
    };
    // Down at first sight after 4 restarts: a crash loop at once.
    let mut t = Tracker::default();
    fatal(
        ev(
            WaitFor::AllRunning,
            &j,
            &[pod("worker", 0, crashed(4, 1))],
            &mut t,
            LIMITS,
            t0,
        ),
        "restarted 4\u{d7}, 0 of them during the wait, last exit code 1 (Error) (--max-restarts 3)",
    );
    // Running between two back-offs at first sight, then restarting again: the same loop.
    let mut t = Tracker::default();
    let running = vec![pod("worker", 0, running_since("2026-01-01T00:00:00Z", 4))];
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &running, &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    fatal(
        ev(
            WaitFor::AllRunning,
            &j,
            &[pod("worker", 0, crashed(5, 1))],
            &mut t,
            LIMITS,
            t0.after(Duration::from_secs(40)),
        ),
        "restarted 5\u{d7}, 1 of them during the wait",
    );
    // Running for 11 minutes since its last crash when first seen: the kubelet forgot its
    // back-off, so a restart now is a first one, not the fifth of a loop.
    let mut t = Tracker::default();
    let late = at("2026-01-01T00:11:00Z");
    let recovered = vec![pod("worker", 0, running_since("2026-01-01T00:00:00Z", 4))];
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &recovered, &mut t, LIMITS, late),
        Outcome::Waiting
    );
    assert_eq!(
        ev(
            WaitFor::AllRunning,
            &j,
            &[pod("worker", 0, crashed(5, 1))],
            &mut t,
            LIMITS,
            late.after(Duration::from_secs(40)),
        ),
        Outcome::Waiting
    );
    // Running and staying up: recovered, the restarts are history.
    let mut t = Tracker::default();
    let limits = Limits {
        settle: Duration::from_secs(5),
        ..LIMITS
    };
    let all = vec![
        pod("ps", 0, running_since("2026-01-01T00:00:00Z", 0)),
        pod("worker", 0, running_since("2026-01-01T00:00:00Z", 4)),
        pod("worker", 1, running_since("2026-01-01T00:00:00Z", 0)),
    ];
    ev(WaitFor::AllRunning, &j, &all, &mut t, limits, t0);
    assert_eq!(
        ev(
            WaitFor::AllRunning,
            &j,
            &all,
            &mut t,
            limits,
            t0.after(Duration::from_secs(6))
        ),
        Outcome::Reached("all replicas Running".into())
    );
}

#[test]
fn backoff_limit_takes_the_place_of_max_restarts_and_recreated_pods_count() {
    let mut j = job(json!([cond("Created", "True"), cond("Running", "True")]));
    j.spec.run_policy = Some(serde_json::from_value(json!({"backoffLimit": 2})).unwrap());
    for spec in j.spec.tf_replica_specs.values_mut() {
        spec.restart_policy = Some("ExitCode".into());
        // The limit an OOM kill hit is named on the restart line (issue 61 item 6).
        if let Some(c) = spec
            .template
            .spec
            .as_mut()
            .and_then(|p| p.containers.first_mut())
        {
            c.resources =
                Some(serde_json::from_value(json!({"limits": {"memory": "8Gi"}})).unwrap());
        }
    }
    let mut t = Tracker::default();
    let t0 = Now::current();
    let failed = json!({"phase": "Failed", "containerStatuses": [{"name": "tensorflow", "image": "i", "imageID": "",
        "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]});
    // A retryable exit code (>= 128) under ExitCode: the operator recreates the pod.
    let a = vec![with_uid(
        pod("worker", 1, running_since("2026-01-01T00:00:00Z", 0)),
        "a",
    )];
    let a_failed = vec![with_uid(pod("worker", 1, failed.clone()), "a")];
    let b = vec![with_uid(
        pod("worker", 1, running_since("2026-01-01T00:00:00Z", 0)),
        "b",
    )];
    let b_failed = vec![with_uid(pod("worker", 1, failed), "b")];
    let c = vec![with_uid(
        pod("worker", 1, running_since("2026-01-01T00:00:00Z", 0)),
        "c",
    )];
    assert_eq!(
        ev(WaitFor::Succeeded, &j, &a, &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    assert_eq!(
        ev(WaitFor::Succeeded, &j, &a_failed, &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    assert_eq!(
        ev(WaitFor::Succeeded, &j, &b, &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    assert_eq!(
        t.take_notes(),
        ["Worker-1 restarted (OOMKilled at its memory limit 8Gi, exit 137), 1\u{d7}"]
    );
    assert_eq!(
        ev(WaitFor::Succeeded, &j, &b_failed, &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    match ev(WaitFor::Succeeded, &j, &c, &mut t, LIMITS, t0) {
        Outcome::Fatal(m) => assert!(
            m.contains("restarted 2\u{d7}") && m.contains("runPolicy.backoffLimit 2"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failed_pod_is_permanent_under_never_and_non_retryable_exit_codes_only() {
    let failed = |code: i32| {
        vec![pod(
            "worker",
            0,
            json!({"phase": "Failed", "containerStatuses": [{"name": "tensorflow", "image": "i",
            "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": code, "reason": "Error"}}}]}),
        )]
    };
    let with_policy = |policy: Option<&str>| {
        let mut j = job(json!([cond("Created", "True"), cond("Running", "True")]));
        for spec in j.spec.tf_replica_specs.values_mut() {
            spec.restart_policy = policy.map(String::from);
        }
        j
    };
    let verdict = |policy: Option<&str>, code: i32| {
        ev(
            WaitFor::Succeeded,
            &with_policy(policy),
            &failed(code),
            &mut Tracker::default(),
            LIMITS,
            Now::current(),
        )
    };
    // The operator's default restartPolicy is Never.
    for (policy, code) in [
        (None, 1),
        (Some("Never"), 3),
        (Some("ExitCode"), 1),
        (Some("ExitCode"), 127),
    ] {
        match verdict(policy, code) {
            Outcome::Fatal(m) => assert!(
                m.contains(&format!(
                    "Worker-0 (pod tf-worker-0) failed with exit code {code}, Error"
                )) && m.contains(&format!("restartPolicy {}", policy.unwrap_or("Never"))),
                "{m}"
            ),
            other => panic!("{policy:?} {code}: {other:?}"),
        }
    }
    // Retryable under ExitCode (>= 128, IsRetryableExitCode), and OnFailure/Always: recreated.
    for (policy, code) in [
        (Some("ExitCode"), 128),
        (Some("ExitCode"), 137),
        (Some("OnFailure"), 1),
        (Some("Always"), 1),
    ] {
        assert_eq!(verdict(policy, code), Outcome::Waiting, "{policy:?} {code}");
    }
}

#[test]
fn unschedulable_fails_only_after_pending_timeout() {
    let j = job(json!([cond("Created", "True")]));
    let status = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]});
    let pods = vec![pod("worker", 0, status)];
    let mut t = Tracker::default();
    let t0 = Now::current();
    assert_eq!(
        ev(WaitFor::Running, &j, &pods, &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    assert_eq!(progress(&j, &pods).reason.as_deref(), Some("Unschedulable"));
    match ev(
        WaitFor::Running,
        &j,
        &pods,
        &mut t,
        LIMITS,
        t0.after(Duration::from_secs(121)),
    ) {
        Outcome::Fatal(m) => assert!(m.contains("Insufficient nvidia.com/gpu"), "{m}"),
        other => panic!("{other:?}"),
    }
    let no_limit = Limits {
        pending_timeout: None,
        ..LIMITS
    };
    assert_eq!(
        ev(
            WaitFor::Running,
            &j,
            &pods,
            &mut t,
            no_limit,
            t0.after(Duration::from_secs(10_000))
        ),
        Outcome::Waiting
    );
}

#[test]
fn the_articles_job_is_running_for_the_operator_but_not_all_running() {
    // 1 PS + 3 one-GPU workers on a one-GPU cluster: PS and worker-0 run, two workers cannot
    // be scheduled, and the operator has set Running (any worker runs, no chief).
    let j = article_job(json!([cond("Created", "True"), cond("Running", "True")]));
    let started = running_since("2026-01-01T00:00:00Z", 0);
    let pods = vec![
        pod("ps", 0, started.clone()),
        pod("worker", 0, started),
        pod("worker", 1, unschedulable()),
        pod("worker", 2, unschedulable()),
    ];
    let later = at("2026-01-01T01:00:00Z");
    let no_limit = Limits {
        pending_timeout: None,
        settle: Duration::from_secs(5),
        ..LIMITS
    };
    let mut t = Tracker::default();
    assert_eq!(
        ev(WaitFor::Running, &j, &pods, &mut t, no_limit, later),
        Outcome::Reached("Running".into())
    );
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &pods, &mut t, no_limit, later),
        Outcome::Waiting
    );
    assert_eq!(
        conditions::not_running(&j, &pods),
        [
            "tf-worker-1 (Pending: Unschedulable: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.)",
            "tf-worker-2 (Pending: Unschedulable: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.)",
        ]
    );
    let view = View {
        job: &j,
        pods: &pods,
        operator: None,
    };
    assert_eq!(
        conditions::waiting_for(WaitFor::AllRunning, view, no_limit),
        "waiting for every replica to run (2 of 4 not running)"
    );
}

/// Issue 61 item 6: the last progress line before `condition met (Succeeded)` said "waiting
/// for every replica to run (2 of 2 not running)": an ended job's replicas completed.
#[test]
fn an_ended_job_waits_for_nothing() {
    let no_limit = Limits {
        pending_timeout: None,
        ..LIMITS
    };
    let pods = vec![];
    for (ended, words) in [
        ("Succeeded", "the job succeeded: its replicas completed"),
        ("Failed", "the job failed"),
    ] {
        let j = article_job(json!([cond("Created", "True"), cond(ended, "True")]));
        let view = View {
            job: &j,
            pods: &pods,
            operator: None,
        };
        for target in [WaitFor::AllRunning, WaitFor::Running, WaitFor::Training] {
            assert_eq!(conditions::waiting_for(target, view, no_limit), words);
        }
    }
}

#[test]
fn replicas_without_pods_are_not_running() {
    let j = article_job(json!([cond("Created", "True")]));
    let pods = vec![pod("ps", 0, running_since("2026-01-01T00:00:00Z", 0))];
    assert!(!conditions::all_started(&j, &pods));
    assert_eq!(
        conditions::not_running(&j, &pods),
        ["3 Worker replica(s) without a pod yet"]
    );
    // A Running pod whose container is restarting has not started.
    let restarting = json!({"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i",
        "imageID": "", "ready": false, "started": false, "restartCount": 1,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]});
    assert!(!crate::cluster::pod::PodFacts::started(&*pod(
        "worker", 0, restarting
    )));
}

#[test]
fn all_running_holds_only_after_the_settle_window() {
    let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
    let limits = Limits {
        settle: Duration::from_secs(5),
        ..LIMITS
    };
    // Containers started just now (by the kubelet's clock).
    let t0 = at("2026-01-01T00:00:00Z");
    let fresh = |restarts| running_since("2026-01-01T00:00:00Z", restarts);
    let pods = vec![
        pod("ps", 0, fresh(0)),
        pod("worker", 0, fresh(0)),
        pod("worker", 1, fresh(0)),
    ];
    let mut t = Tracker::default();
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &pods, &mut t, limits, t0),
        Outcome::Waiting
    );
    let t4 = t0.after(Duration::from_secs(4));
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &pods, &mut t, limits, t4),
        Outcome::Waiting
    );
    // A restart inside the window (seen as a bumped restartCount) starts it again.
    let restarted = vec![
        pod("ps", 0, fresh(0)),
        pod("worker", 0, fresh(1)),
        pod("worker", 1, fresh(0)),
    ];
    // The kubelet's startedAt of the restarted container is recent as well.
    let restarted: Vec<_> = restarted
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            if i == 1 {
                pod("worker", 0, running_since("2026-01-01T00:00:04Z", 1))
            } else {
                p
            }
        })
        .collect();
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &restarted, &mut t, limits, t4),
        Outcome::Waiting
    );
    let t6 = t0.after(Duration::from_secs(6));
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &restarted, &mut t, limits, t6),
        Outcome::Waiting,
        "the window restarted at the restart"
    );
    let t9 = t0.after(Duration::from_secs(9));
    assert_eq!(
        ev(WaitFor::AllRunning, &j, &restarted, &mut t, limits, t9),
        Outcome::Reached("all replicas Running".into())
    );
}

#[test]
fn a_single_check_trusts_the_kubelets_start_times() {
    // `--timeout 0`: no window can be observed, so startedAt decides.
    let j = job(json!([cond("Created", "True"), cond("Running", "True")]));
    let limits = Limits {
        settle: Duration::from_secs(5),
        ..LIMITS
    };
    let old = running_since("2026-01-01T00:00:00Z", 0);
    let pods = vec![
        pod("ps", 0, old.clone()),
        pod("worker", 0, old.clone()),
        pod("worker", 1, old),
    ];
    assert_eq!(
        ev(
            WaitFor::AllRunning,
            &j,
            &pods,
            &mut Tracker::default(),
            limits,
            at("2026-01-01T00:10:00Z")
        ),
        Outcome::Reached("all replicas Running".into())
    );
    assert_eq!(
        ev(
            WaitFor::AllRunning,
            &j,
            &pods,
            &mut Tracker::default(),
            limits,
            at("2026-01-01T00:00:03Z")
        ),
        Outcome::Waiting
    );
}

#[test]
fn a_broken_operator_is_named_at_once_or_after_the_pending_timeout() {
    let j = job(json!([]));
    let down = OperatorState::NotReady {
        namespace: "kubeflow".into(),
        name: "training-operator".into(),
        ready: 0,
        desired: 1,
    };
    let view = View {
        job: &j,
        pods: &[],
        operator: Some(&down),
    };
    let no_limit = Limits {
        pending_timeout: None,
        ..LIMITS
    };
    let t0 = Now::current();
    match evaluate(
        WaitFor::Running,
        view,
        &mut Tracker::default(),
        no_limit,
        t0,
    ) {
        Outcome::NotReconciled { message, hint } => {
            assert!(
                message.contains(
                    "training-operator kubeflow/training-operator is not ready (0/1 replicas ready)"
                ),
                "{message}"
            );
            assert!(message.contains("stays Pending"), "{message}");
            assert!(
                hint.contains("kubectl -n kubeflow describe deployment training-operator"),
                "{hint}"
            );
        }
        other => panic!("{other:?}"),
    }
    let mut t = Tracker::default();
    assert_eq!(
        evaluate(WaitFor::Running, view, &mut t, LIMITS, t0),
        Outcome::Waiting
    );
    assert!(matches!(
        evaluate(
            WaitFor::Running,
            view,
            &mut t,
            LIMITS,
            t0.after(Duration::from_secs(121))
        ),
        Outcome::NotReconciled { .. }
    ));
    // Could not tell: never fails the wait.
    let unknown = OperatorState::Unknown("forbidden".into());
    let view = View {
        operator: Some(&unknown),
        ..view
    };
    assert_eq!(
        evaluate(
            WaitFor::Running,
            view,
            &mut Tracker::default(),
            no_limit,
            t0
        ),
        Outcome::Waiting
    );
    // The same word as diagnose for a job nobody reconciled.
    assert_eq!(progress(&j, &[]).state, crate::model::STATE_NOT_RECONCILED);
}

#[test]
fn job_conditions_compose_like_kube_runtimes() {
    use kube::runtime::wait::Condition;
    let running = job(json!([cond("Created", "True"), cond("Running", "True")]));
    let done = job(json!([
        cond("Created", "True"),
        cond("Running", "False"),
        cond("Succeeded", "True")
    ]));
    let fresh = job(json!([]));
    assert!(conditions::operator_says_running().matches_object(Some(&running)));
    assert!(conditions::operator_says_running().matches_object(Some(&done)));
    assert!(!conditions::operator_says_running().matches_object(Some(&fresh)));
    assert!(!conditions::is_reconciled().matches_object(Some(&fresh)));
    assert!(!conditions::is_reconciled().matches_object(None));
    let running_not_done =
        conditions::has_condition("Running").and(conditions::has_condition("Succeeded").not());
    assert!(running_not_done.matches_object(Some(&running)));
    assert!(!running_not_done.matches_object(Some(&done)));
}
