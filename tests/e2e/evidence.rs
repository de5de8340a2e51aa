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

/// The article's job with a log line per replica; worker-1 exits 3 after `run_ms` under
/// restartPolicy Never and cleanPodPolicy All; the other replicas keep running.
fn logged_job_whose_worker_1_fails(extra_scenario: &str) -> tfjob_testcluster::TestCluster {
    let c = cluster(&format!(
        "containerBehaviour:\n\
         - match: {{replicaType: worker, index: 1}}\n  exitCode: 3\n  runMs: 300\n  log: \"worker-1 says: loss is NaN\\n\"\n\
         - match: {{replicaType: worker, index: 0}}\n  log: \"worker-0 says: waiting for worker-1\\n\"\n\
         - match: {{replicaType: worker, index: 2}}\n  log: \"worker-2 says: step 10\\n\"\n\
         - match: {{replicaType: ps}}\n  log: \"ps-0 says: serving\\n\"\n\
         {extra_scenario}objects:{SECRET}"
    ));
    tfjob(
        &c,
        &submit_args(&[
            "--restart-policy",
            "Never",
            "--skip-capacity-check",
            "--clean-pod-policy",
            "All",
        ]),
    )
    .expect_code(0);
    c
}

/// The one folder `--save` made under `dir`.
fn saved_folder(dir: &std::path::Path) -> std::path::PathBuf {
    let folders: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    let f = folders[0].clone();
    let name = f.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("tf-dist-train-20"), "{name}");
    f
}

fn read(path: std::path::PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn wait_save_keeps_every_replicas_log_although_clean_pod_policy_all_deletes_the_pods() {
    let c = logged_job_whose_worker_1_fails("");
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("evidence");
    // The operator's cleanup is held until the save is on disk, then let go while the wait
    // still runs: "saved" comes before "deleted" by construction, not by timing.
    c.hold_cleanup(true);
    let run = std::thread::scope(|s| {
        let waiting = s.spawn(|| {
            tfjob(
                &c,
                &[
                    "wait",
                    "tf-dist-train",
                    "--for",
                    "succeeded",
                    "--timeout",
                    "60s",
                    "--save",
                    save.to_str().unwrap(),
                ],
            )
        });
        let summary_written = c.wait_for(std::time::Duration::from_secs(30), |_| {
            std::fs::read_dir(&save).is_ok_and(|mut d| {
                d.next()
                    .is_some_and(|f| f.is_ok_and(|f| f.path().join("summary.txt").exists()))
            })
        });
        c.hold_cleanup(false);
        assert!(summary_written, "no summary.txt in {}", save.display());
        waiting.join().unwrap()
    });
    run.exit(4);
    assert!(
        error_line(&run).starts_with("error: Worker-1: ExitCode 3"),
        "{}",
        run.stderr
    );
    // The operator deleted every pod once the job had failed.
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        c.list("pods", Some("default")).is_empty()
    }));
    let folder = saved_folder(&save);
    for (pod, text) in [
        ("tf-dist-train-worker-1", "worker-1 says: loss is NaN"),
        (
            "tf-dist-train-worker-0",
            "worker-0 says: waiting for worker-1",
        ),
        ("tf-dist-train-worker-2", "worker-2 says: step 10"),
        ("tf-dist-train-ps-0", "ps-0 says: serving"),
    ] {
        let log = read(folder.join(pod).join("tensorflow.log"));
        assert!(log.contains(text), "{pod}: {log:?}");
    }
    let summary = read(folder.join("summary.txt"));
    assert!(summary.contains("  Worker-1: ExitCode 3"), "{summary}");
    assert!(
        summary.contains("tf-dist-train-worker-0/tensorflow.log (the container was still running)"),
        "{summary}"
    );
    let events = read(folder.join("events.yaml"));
    assert!(events.contains("kind: List"), "{events}");
    assert!(events.contains("tf-dist-train-worker-1"), "{events}");
    let pods = read(folder.join("pods.yaml"));
    assert!(pods.contains("name: tf-dist-train-ps-0"), "{pods}");
    // The gateway key reaches the pods as a reference, never as a value.
    assert!(pods.contains("secretKeyRef"), "{pods}");
    assert!(!pods.contains(crate::TEST_KEY), "{pods}");
    assert!(read(folder.join("job.yaml")).contains("cleanPodPolicy: All"));
    // No Secret object is written, and no leftover partial file.
    for entry in walk(&folder) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "{}", entry.display());
        assert!(
            !read(entry.clone()).contains("kind: Secret"),
            "{}",
            entry.display()
        );
    }
    // The closing report says where the logs were kept; the folder is announced once,
    // although every termination and the end refreshed it (issue 61 item 11).
    assert_eq!(
        run.stderr.matches("Evidence saved in").count(),
        1,
        "{}",
        run.stderr
    );
    run.stderr_has("--save kept them in");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn with_unreadable_logs_save_still_writes_the_job_pods_events_and_a_summary_naming_them() {
    let c = logged_job_whose_worker_1_fails(
        "faults:\n- match: {verb: get, resource: pods, subresource: log}\n  status: 500\n  message: 'no preferred addresses found; known addresses: []'\n  times: 0\n",
    );
    c.hold_cleanup(true);
    let dir = tempfile::tempdir().unwrap();
    let run = tfjob(
        &c,
        &[
            "wait",
            "tf-dist-train",
            "--for",
            "succeeded",
            "--timeout",
            "60s",
            "--save",
            dir.path().to_str().unwrap(),
        ],
    );
    // The job's code, not a save error.
    run.exit(4);
    let folder = saved_folder(dir.path());
    for f in ["job.yaml", "pods.yaml", "events.yaml"] {
        assert!(folder.join(f).is_file(), "{f} missing");
    }
    let summary = read(folder.join("summary.txt"));
    assert!(summary.contains("  Worker-1: ExitCode 3"), "{summary}");
    assert!(
        summary.contains("Logs that could not be read (4):"),
        "{summary}"
    );
    assert!(
        summary.contains("tf-dist-train-worker-1/tensorflow.log: the kubelet could not serve it"),
        "{summary}"
    );
    assert!(
        summary.contains("no preferred addresses found"),
        "{summary}"
    );
    assert!(!folder.join("tf-dist-train-worker-1").exists());
    run.stderr_has("4 unreadable (listed in summary.txt)");
}

#[test]
fn a_save_dir_that_is_a_file_is_refused_before_anything_is_sent() {
    let c = cluster(&format!("objects:{SECRET}"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "mine").unwrap();
    // Under a file, no folder can be made (as refused as an unwritable one, and testable as
    // root).
    let under_file = file.join("sub");
    for target in [&file, &under_file] {
        c.clear_requests();
        let mut a = submit_args(&["--wait", "--save", target.to_str().unwrap()]);
        a.push("--skip-capacity-check");
        let run = tfjob(&c, &a);
        run.exit(2);
        run.stderr_has(&format!("--save {}", target.display()));
        assert!(c.writes().is_empty(), "{:?}", c.writes());
        assert!(c.requests().is_empty(), "{:?}", c.requests());
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    // `wait` and `logs` refuse it the same way.
    for cmd in ["wait", "logs"] {
        c.clear_requests();
        let run = tfjob(
            &c,
            &[cmd, "tf-dist-train", "--save", file.to_str().unwrap()],
        );
        run.exit(2);
        run.stderr_has("is not a folder");
        assert!(c.requests().is_empty(), "{:?}", c.requests());
    }
}

#[test]
fn logs_of_a_finished_job_whose_pods_are_gone_say_so_and_point_at_save() {
    let c = logged_job_whose_worker_1_fails("");
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        c.get("tfjobs", Some("default"), "tf-dist-train")
            .is_some_and(|j| j.to_string().contains("\"Failed\""))
            && c.list("pods", Some("default")).is_empty()
    }));
    let run = tfjob(&c, &args("logs tf-dist-train"));
    run.exit(3);
    assert_eq!(run.stdout, "", "no empty log printed as the log");
    run.stderr_has("tfjob tf-dist-train has finished (Failed) and its pods are gone (runPolicy.cleanPodPolicy All deletes the pods of an ended job): their logs went with them");
    run.stderr_has("--save DIR");
    run.stderr_has("kubectl tfjob diagnose tf-dist-train");
    // Gone pods are not awaited (issue 48 item 9).
    assert!(!run.stderr.contains("waiting for"), "{}", run.stderr);
    // With --save, what is left is kept: the job, its events, the classes from them; and a
    // save made before the cleanup into the same folder is where the logs are.
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("tf-dist-train-20261201T000000Z");
    std::fs::create_dir_all(earlier.join("tf-dist-train-worker-1")).unwrap();
    std::fs::write(
        earlier.join("tf-dist-train-worker-1/tensorflow.log"),
        "Traceback\n",
    )
    .unwrap();
    let run = tfjob(
        &c,
        &[
            "logs",
            "tf-dist-train",
            "--save",
            dir.path().to_str().unwrap(),
        ],
    );
    run.exit(3);
    let folder = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| *p != earlier)
        .unwrap();
    let summary = read(folder.join("summary.txt"));
    assert!(summary.contains("State: Failed"), "{summary}");
    assert!(
        summary.contains("Worker-1: ExitCode 3, from the operator's events"),
        "{summary}"
    );
    run.stderr_has(&format!("saved in {}", folder.display()));
    run.stderr_has(&format!(
        "The logs saved before the cleanup are in {} (1 log file(s))",
        earlier.display()
    ));
}

#[test]
fn diagnose_shows_how_long_each_running_replica_has_been_silent() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 0}}\n  log: \"step 1\\n\"\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    tfjob(&c, &args("wait tf-dist-train --timeout 30s")).expect_code(0);
    c.clear_requests();
    // The in-pod checks are not what this counts (their execs are requests too).
    let d = tfjob(&c, &args("diagnose tf-dist-train --no-probe"));
    d.exit(0);
    let line = d
        .stdout
        .lines()
        .find(|l| l.starts_with("Last log line: "))
        .unwrap_or_else(|| panic!("{}", d.stdout));
    // Just printed: seconds, not silent.
    assert!(line.contains("Worker-0 logged "), "{line}");
    assert!(!line.contains("Worker-0 silent"), "{line}");
    // One request per running replica (4), each its last lines (progress is read from them
    // too, issue 49), bounded, with their timestamps.
    let tails: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.subresource == "log" && r.query.contains("tailLines=200"))
        .collect();
    assert!(tails.iter().all(|r| r.query.contains("limitBytes=65536")));
    assert_eq!(tails.len(), 4, "{tails:?}");
    assert!(tails.iter().all(|r| r.query.contains("timestamps=true")));
}

/// Issue 47 item 5: a key a container logged (as `kubectl create secret --from-file` stores
/// it, with its newline) is scrubbed from `wait --save`, `logs --save` and `logs`' stdout,
/// though none of them needs the Secret for its own work.
#[test]
fn a_key_a_container_logged_is_scrubbed_from_every_save_and_from_logs() {
    let key = crate::TEST_KEY;
    let c = cluster(&format!(
        "containerBehaviour:\n\
         - match: {{replicaType: worker, index: 1}}\n  exitCode: 3\n  runMs: 300\n  log: \"worker-1 key={key}\\n\"\n\
         - match: {{replicaType: ps}}\n  log: \"ps-0 says: Authorization: Bearer {key}\\n\"\n\
         objects:{SECRET}"
    ));
    tfjob(
        &c,
        &submit_args(&["--restart-policy", "Never", "--skip-capacity-check"]),
    )
    .expect_code(0);
    c.hold_cleanup(true);
    let dir = tempfile::tempdir().unwrap();
    let waited = dir.path().join("wait");
    let run = tfjob(
        &c,
        &[
            "wait",
            "tf-dist-train",
            "--for",
            "succeeded",
            "--timeout",
            "60s",
            "--save",
            waited.to_str().unwrap(),
        ],
    );
    run.exit(4);
    let logged = dir.path().join("logs");
    let logs = tfjob(
        &c,
        &[
            "logs",
            "tf-dist-train",
            "--save",
            logged.to_str().unwrap(),
            "--timeout",
            "30s",
        ],
    );
    logs.expect_code(0);
    assert!(logs.stdout.contains("[REDACTED]"), "{}", logs.stdout);
    for out in [&run.stdout, &run.stderr, &logs.stdout, &logs.stderr] {
        assert!(!out.contains(key), "the key leaked:\n{out}");
    }
    let mut files = walk(&waited);
    files.extend(walk(&logged));
    let worker_1 = files
        .iter()
        .filter(|f| f.ends_with("tf-dist-train-worker-1/tensorflow.log"))
        .count();
    assert_eq!(worker_1, 2, "{files:?}");
    for f in files {
        let text = read(f.clone());
        assert!(
            !text.contains(key),
            "{}: the key leaked:\n{text}",
            f.display()
        );
        if f.ends_with("tensorflow.log") && text.contains("key=") {
            assert!(text.contains("key=[REDACTED]"), "{}: {text}", f.display());
        }
    }
}

/// Issue 47 item 12: terminal escapes a container logged (OSC 52 sets the clipboard, CSI 2J
/// clears the screen) reach neither wait's error, diagnose's "Failed replicas" block nor
/// summary.txt raw: they are shown as kubectl shows them (`^[`).
#[test]
fn escapes_a_container_logged_are_shown_escaped_in_every_failure_report() {
    let c = cluster(&format!(
        "containerBehaviour:\n\
         - match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 300\n  log: \"Traceback (most recent call last):\\n  File \\\"t.py\\\", line 1\\nValueError: bad\\e]52;c;SGVsbG8=\\a\\e[2J shape\\n\"\n\
         objects:{SECRET}"
    ));
    tfjob(
        &c,
        &submit_args(&["--restart-policy", "Never", "--skip-capacity-check"]),
    )
    .expect_code(0);
    c.hold_cleanup(true);
    let dir = tempfile::tempdir().unwrap();
    let wait = tfjob(
        &c,
        &[
            "wait",
            "tf-dist-train",
            "--for",
            "succeeded",
            "--timeout",
            "60s",
            "--save",
            dir.path().to_str().unwrap(),
        ],
    );
    wait.exit(4);
    let diagnose = tfjob(&c, &args("diagnose tf-dist-train"));
    let summary = read(saved_folder(dir.path()).join("summary.txt"));
    for (what, text) in [
        ("wait", wait.all()),
        ("diagnose", diagnose.all()),
        ("summary.txt", summary),
    ] {
        assert!(!text.contains('\u{1b}'), "{what}: a raw ESC:\n{text}");
        assert!(!text.contains('\u{7}'), "{what}: a raw BEL:\n{text}");
        assert!(
            text.contains(
                "Worker-1: ValueError: bad^[]52;c;SGVsbG8=^G^[[2J shape (PythonTraceback: "
            ),
            "{what}:\n{text}"
        );
    }
}

/// Issue 48 item 9: `diagnose` keeps the evidence too (`--save DIR`), after its report: the
/// pods' logs, the job, and summary.txt with what it found. The folder is checked first.
#[test]
fn diagnose_save_keeps_the_logs_after_the_report() {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: worker, index: 0}}\n  log: \"worker-0 says: step 7\\n\"\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    tfjob(&c, &args("wait tf-dist-train --timeout 30s")).expect_code(0);
    let dir = tempfile::tempdir().unwrap();
    let run = tfjob(
        &c,
        &[
            "diagnose",
            "tf-dist-train",
            "--no-probe",
            "--save",
            dir.path().to_str().unwrap(),
        ],
    );
    run.exit(0);
    assert!(
        run.stdout.contains("TFJob default/tf-dist-train"),
        "{}",
        run.stdout
    );
    let folder = saved_folder(dir.path());
    let log = read(folder.join("tf-dist-train-worker-0/tensorflow.log"));
    assert!(log.contains("worker-0 says: step 7"), "{log}");
    let summary = read(folder.join("summary.txt"));
    assert!(summary.contains("(diagnose --save)"), "{summary}");
    run.stderr_has(&format!("{}", folder.display()));

    // A file where the folder should be: refused before any request, exit 2.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    c.clear_requests();
    let run = tfjob(
        &c,
        &[
            "diagnose",
            "tf-dist-train",
            "--save",
            file.to_str().unwrap(),
        ],
    );
    run.exit(2);
    run.stderr_has("is not a folder");
    assert!(c.requests().is_empty(), "{:?}", c.requests());
}
