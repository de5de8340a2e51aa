//! The day-two commands (`logs`, `list`, `get`, `delete`, `suspend`/`resume`) through the real
//! binary: stdout holds only the data, exit codes follow error.rs, and request counts stay fixed.
//! Waits poll the cluster or the output for an observable fact; none decides an outcome.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tfjob_testcluster::{Scenario, TestCluster};

use crate::{Cli, cluster, tfjob};

/// A TFJob with `workers` workers (restartPolicy `restart`), as a user would create it.
fn job(name: &str, namespace: &str, workers: i64, restart: &str) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": name, "namespace": namespace, "labels": {"team": "nlp"}},
           "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": restart,
               "template": {"spec": {"containers": [
                   {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}})
}

fn running(c: &TestCluster, namespace: &str, pod: &str) -> bool {
    c.get("pods", Some(namespace), pod)
        .is_some_and(|p| p["status"]["containerStatuses"][0]["state"]["running"].is_object())
}

#[track_caller]
fn until(c: &TestCluster, what: &str, f: impl FnMut(&TestCluster) -> bool) {
    assert!(
        c.wait_for(Duration::from_secs(30), f),
        "gave up waiting for {what}"
    );
}

/// The binary as a child process whose stdout the test reads line by line.
/// The binary started on `c` with `args`, its stdout read line by line (stderr piped).
pub(crate) fn spawn(c: &TestCluster, args: &[&str]) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl-tfjob");
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

fn read_line(out: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    out.read_line(&mut line).expect("read stdout");
    line
}

fn job_pods(c: &TestCluster, name: &str) -> Vec<Value> {
    c.list("pods", Some("default"))
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["training.kubeflow.org/job-name"] == name)
        .collect()
}

#[test]
fn list_and_get_print_only_data_and_missing_jobs_exit_3() {
    let c = TestCluster::start(Scenario::default());
    let mut a = job("alpha", "default", 2, "OnFailure");
    // A field this tool does not model (a newer operator's): `-o json` must keep it.
    a["spec"]["futureField"] = json!({"kept": true});
    c.insert(a);
    c.insert(job("beta", "default", 1, "OnFailure"));
    until(&c, "alpha's workers running", |c| {
        running(c, "default", "alpha-worker-0") && running(c, "default", "alpha-worker-1")
    });

    let run = tfjob(&c, &["list", "-o", "json"]);
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("list -o json is JSON");
    assert_eq!(
        (v["apiVersion"].as_str(), v["kind"].as_str()),
        (Some("v1"), Some("List"))
    );
    let names: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    assert_eq!(v["items"][0]["kind"], "TFJob");
    assert_eq!(
        v["items"][0]["spec"]["futureField"]["kept"], true,
        "raw as returned"
    );

    let run = tfjob(&c, &["ls", "-o", "name"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "tfjob.kubeflow.org/alpha\ntfjob.kubeflow.org/beta\n"
    );
    let run = tfjob(&c, &["list", "-l", "team=nlp", "--no-headers"]);
    run.expect_code(0);
    let rows: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(rows.len(), 2, "{}", run.stdout);
    assert!(
        rows[0].starts_with("alpha ") && rows[0].contains("Worker 2/2"),
        "{}",
        run.stdout
    );
    let run = tfjob(&c, &["list", "-n", "empty"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "No resources found in empty namespace.\n");

    let run = tfjob(&c, &["get", "tfjob/alpha", "-o", "json"]);
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("get -o json is JSON");
    assert_eq!(v["metadata"]["name"], "alpha");
    assert_eq!(v["spec"]["futureField"]["kept"], true);
    let run = tfjob(&c, &["status", "alpha"]);
    run.expect_code(0);
    assert!(run.stdout.contains("alpha-worker-1"), "{}", run.stdout);

    for args in [
        &["get", "ghost"][..],
        &["logs", "ghost"],
        &["delete", "ghost"],
        &["suspend", "ghost"],
    ] {
        let run = tfjob(&c, args);
        run.expect_code(3);
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(run.stderr.contains("\"ghost\""), "{args:?}: {}", run.stderr);
    }
    let run = tfjob(&c, &["delete", "ghost", "--ignore-not-found"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    let run = tfjob(&c, &["get", "pod/alpha"]);
    run.expect_code(2);
}

#[test]
fn delete_returns_when_job_and_pods_are_gone_after_one_delete_request() {
    let c = TestCluster::start(Scenario::default());
    c.insert(job("gone", "default", 3, "OnFailure"));
    c.insert(job("stays", "default", 1, "OnFailure"));
    until(&c, "three workers running", |c| {
        (0..3).all(|i| running(c, "default", &format!("gone-worker-{i}")))
    });
    c.clear_requests();
    let run = tfjob(&c, &["delete", "gone"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org \"gone\" deleted\n");
    // Returned only once the job and every pod were gone.
    assert!(c.get("tfjobs", Some("default"), "gone").is_none());
    assert_eq!(job_pods(&c, "gone"), Vec::<Value>::new());
    let deletes: Vec<String> = c
        .requests()
        .iter()
        .filter(|r| r.verb == "delete" || r.verb == "deletecollection")
        .map(|r| format!("{} {}", r.resource, r.name.clone().unwrap_or_default()))
        .collect();
    assert_eq!(deletes, ["tfjobs gone"], "exactly one DELETE");
    assert!(c.get("tfjobs", Some("default"), "stays").is_some());

    let run = tfjob(&c, &["delete", "stays", "--dry-run=server"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "tfjob.kubeflow.org \"stays\" deleted (server dry run)\n"
    );
    assert!(c.get("tfjobs", Some("default"), "stays").is_some());
    let run = tfjob(&c, &["delete", "--all", "--cascade", "orphan"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org \"stays\" deleted\n");
    assert!(
        c.get("pods", Some("default"), "stays-worker-0").is_some(),
        "orphaned"
    );
    let run = tfjob(&c, &["delete", "a", "--all"]);
    run.expect_code(2);
}

#[test]
fn logs_prefix_each_replica() {
    let c = TestCluster::start(Scenario::default());
    c.insert(job("lg", "default", 2, "Never"));
    until(&c, "two workers running", |c| {
        running(c, "default", "lg-worker-0") && running(c, "default", "lg-worker-1")
    });
    // Replace the kubelet's start-up lines, so the expected output is exactly these.
    c.set_log("default", "lg-worker-0", "tensorflow", "step 1 loss 0.9");
    c.set_log("default", "lg-worker-1", "tensorflow", "step 1 loss 0.8");

    let run = tfjob(&c, &["logs", "lg"]);
    run.expect_code(0);
    // Replicas are read one after another; which goes first is not promised.
    let mut lines: Vec<&str> = run.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["[worker-0] step 1 loss 0.9", "[worker-1] step 1 loss 0.8"]
    );
    let run = tfjob(
        &c,
        &["logs", "lg", "-r", "Worker", "--index", "1", "--timestamps"],
    );
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(
        lines[0].starts_with("[worker-1] 20") && lines[0].ends_with(" step 1 loss 0.8"),
        "{}",
        run.stdout
    );
    // Issue 61 item 7: the replica as logs prefixes it, as Arena and stern users type it.
    let run = tfjob(&c, &["logs", "lg", "worker-1"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "[worker-1] step 1 loss 0.8\n");
    let run = tfjob(&c, &["logs", "lg", "worker"]);
    run.expect_code(0);
    assert_eq!(run.stdout.lines().count(), 2, "{}", run.stdout);
    // Both ways at once, or a word that is no replica: a usage error naming it.
    tfjob(&c, &["logs", "lg", "worker-1", "-r", "ps"]).expect_code(2);
    let run = tfjob(&c, &["logs", "lg", "worker/1"]);
    run.expect_code(2);
    run.stderr_has("REPLICA \"worker/1\" is not a replica");
}

#[test]
fn list_watch_prints_a_line_when_a_job_changes() {
    let c = TestCluster::start(Scenario::default());
    c.insert(job("first-job", "default", 1, "OnFailure"));
    let (mut child, mut out) = spawn(&c, &["list", "-w"]);
    let header = read_line(&mut out);
    assert!(header.starts_with("NAME "));
    assert!(read_line(&mut out).starts_with("first-job "));
    // Where each cell starts: after a run of at least three spaces.
    let starts = |l: &str| -> Vec<usize> {
        let b = l.as_bytes();
        (3..b.len())
            .filter(|&i| b[i] != b' ' && &b[i - 3..i] == b"   ")
            .collect()
    };
    let columns = starts(&header);
    c.insert(job("second", "default", 1, "OnFailure"));
    // Every line after the table is one change; the new job shows up among them. Its cells fit
    // the header's widths, so each starts under its header (an empty cell has no start).
    loop {
        let line = read_line(&mut out);
        assert!(!line.is_empty(), "the watch ended");
        assert!(
            line.starts_with("first-job ") || line.starts_with("second "),
            "{line:?}"
        );
        assert!(
            starts(&line).iter().all(|s| columns.contains(s)),
            "a watch row is not aligned with the header:\n{header}{line}"
        );
        if line.starts_with("second ") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn suspend_and_resume_say_what_happens_and_print_kubectls_line() {
    let c = TestCluster::start(Scenario::default());
    c.insert(job("sus", "default", 1, "OnFailure"));
    until(&c, "worker running", |c| {
        running(c, "default", "sus-worker-0")
    });
    let run = tfjob(&c, &["suspend", "sus"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org/sus suspended\n");
    assert!(run.stderr.contains("deletes every pod"), "{}", run.stderr);
    until(&c, "pods deleted", |c| job_pods(c, "sus").is_empty());
    // diagnose points at the command that resumes it, with the same connection flags.
    let diag = tfjob(&c, &["diagnose", "sus"]);
    assert!(
        diag.stdout.contains(&format!(
            "resume it: kubectl tfjob resume sus -n default --kubeconfig {}",
            c.kubeconfig().display()
        )),
        "{}",
        diag.stdout
    );
    assert!(!diag.stdout.contains("kubectl patch"), "{}", diag.stdout);
    let run = tfjob(&c, &["resume", "tfjob/sus"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org/sus resumed\n");
    until(&c, "pods back", |c| running(c, "default", "sus-worker-0"));
}

#[test]
fn job_names_complete_for_every_command_in_the_namespace_given_on_the_line() {
    let c = TestCluster::start(Scenario::default().with_namespace("team-b"));
    c.insert(job("alpha", "default", 1, "OnFailure"));
    c.insert(job("beta", "default", 1, "OnFailure"));
    c.insert(job("team-job", "team-b", 1, "OnFailure"));
    let kc = c.kubeconfig().display().to_string();
    let complete = |line: &[&str]| {
        let mut args = vec!["__complete", "--kubeconfig", kc.as_str()];
        args.extend_from_slice(line);
        let run = Cli::new(None, &args).run();
        run.expect_code(0);
        let mut v: Vec<String> = run.stdout.lines().map(str::to_string).collect();
        let directive = v.pop().unwrap();
        assert_eq!(directive, ":4", "no file completion for names");
        v
    };
    for cmd in [
        "logs", "get", "status", "delete", "suspend", "resume", "wait", "diagnose",
    ] {
        assert_eq!(complete(&[cmd, ""]), ["alpha", "beta"], "{cmd}");
    }
    assert_eq!(complete(&["-n", "team-b", "logs", "-f", ""]), ["team-job"]);
    assert_eq!(complete(&["get", "--namespace=team-b", "t"]), ["team-job"]);
    assert_eq!(
        complete(&["delete", "alpha", ""]),
        ["beta"],
        "not offered twice"
    );
    assert_eq!(complete(&["logs", "alpha", ""]), Vec::<String>::new());
    // Namespaces from the cluster, contexts/clusters/users from the kubeconfig on the line,
    // built-in templates by name. The kubectl_complete-tfjob script passes the words after
    // `--`, so a `-n` being completed stays a word.
    assert_eq!(complete(&["--", "-n", "team"]), ["team-b"]);
    assert_eq!(
        complete(&["--", "list", "--namespace", ""]),
        [
            "default",
            "kube-node-lease",
            "kube-public",
            "kube-system",
            "kubeflow",
            "team-b"
        ]
    );
    assert_eq!(complete(&["--", "get", "alpha", "--context", ""]), ["test"]);
    assert_eq!(complete(&["--", "--cluster", ""]), ["test"]);
    assert_eq!(complete(&["--", "wait", "--user", ""]), ["tester"]);
    assert_eq!(complete(&["--", "-n", "team-b", "get", ""]), ["team-job"]);
    let run = Cli::new(None, &["__complete", "--", "render", "--template", "ps"]).run();
    run.expect_code(0);
    assert_eq!(
        run.stdout, "ps-worker\tbuilt-in template\n:0\n",
        "and files, for a path"
    );
}

#[test]
fn list_shows_restarts_marked_when_crash_looping_and_a_finished_jobs_outcome_per_role() {
    // Crafted states (the operator is installed but reconciles nothing, and a crafted pod that is
    // not Pending is left alone), so nothing changes while the test reads.
    let c = crate::cluster("operator: installed\n");
    let mut done = job("done", "default", 2, "OnFailure");
    done["status"] = json!({
        "conditions": [{"type": "Created", "status": "True"}, {"type": "Succeeded", "status": "True"}],
        "replicaStatuses": {"Worker": {"succeeded": 2}}});
    c.insert(done);
    let mut looping = job("loop", "default", 1, "OnFailure");
    looping["status"] = json!({"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}],
        "replicaStatuses": {"Worker": {"active": 1}}});
    c.insert(looping);
    c.insert(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "loop-worker-0", "namespace": "default", "labels": {
            "training.kubeflow.org/job-name": "loop", "training.kubeflow.org/operator-name": "tfjob-controller",
            "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "tensorflow", "ready": false, "restartCount": 809,
            "image": "tensorflow/tensorflow:2.13.0", "imageID": "",
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}}));
    let run = tfjob(&c, &["list", "--sort-by=.metadata.name"]);
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].contains(" REPLICAS ") && lines[0].contains(" RESTARTS "),
        "{}",
        run.stdout
    );
    // Cells are separated by at least three spaces.
    let cells = |l: &str| -> Vec<String> {
        l.split("   ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let (done, looping) = (cells(lines[1]), cells(lines[2]));
    assert_eq!(
        (done[0].as_str(), done[4].as_str(), done[5].as_str()),
        ("done", "Worker 2/2 succeeded", "0"),
        "a finished job shows its outcome, not Worker 0/2:\n{}",
        run.stdout
    );
    assert_eq!(
        (
            looping[0].as_str(),
            looping[4].as_str(),
            looping[5].as_str()
        ),
        ("loop", "Worker 0/1", "809 (CrashLoopBackOff)"),
        "{}",
        run.stdout
    );
    // REASON names the replica as PROGRESS, diagnose and wait do (issue 48 item 10: one
    // output said `worker-0` here and `Worker-0` in PROGRESS).
    assert_eq!(
        looping.last().map(String::as_str),
        Some("Worker-0: CrashLoopBackOff"),
        "{}",
        run.stdout
    );
}

#[test]
fn logs_follow_marks_a_restart_on_stderr_and_keeps_stdout_the_log() {
    // The worker exits 1 on its first start (crashTimes) and trains after the restart.
    let c = crate::cluster(
        "succeedAfterMs: 300\ncontainerBehaviour:\n- match: {podName: 'rs-worker-0'}\n  exitCode: 1\n  runMs: 50\n  crashTimes: 1\n  log: 'Traceback: boom'\n",
    );
    // Suspended first, so its pod is created only once `logs -f` is following: every restart
    // it shows happens during the follow.
    let mut j = job("rs", "default", 1, "OnFailure");
    j["spec"]["runPolicy"] = json!({"suspend": true});
    c.insert(j.clone());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(["logs", "rs", "-f", "--timeout", "2m"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl-tfjob");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut stderr = String::new();
    // Its first note: it is waiting for the pod (so it has listed and is watching).
    loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "ended early: {stderr}"
        );
        stderr.push_str(&line);
        if line.contains("waiting for 1 pod(s) of tfjob rs") {
            break;
        }
    }
    j["spec"]["runPolicy"] = json!({"suspend": false});
    c.insert(j);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    std::io::Read::read_to_string(&mut err, &mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("--- worker-0 restarted (exit 1) ---\n"),
        "{stderr}"
    );
    assert!(out.contains("[worker-0] Traceback: boom"), "{out}");
    assert!(
        out.lines().all(|l| l.starts_with("[worker-0] ")),
        "stdout is the log only: {out}"
    );
}

#[test]
fn logs_container_completes_from_the_jobs_pods() {
    // A crafted pod (the operator reconciles nothing) with a sidecar and an init container.
    let c = crate::cluster("operator: installed\n");
    c.insert(job("cj", "default", 1, "OnFailure"));
    c.insert(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "cj-worker-0", "namespace": "default", "labels": {
            "training.kubeflow.org/job-name": "cj", "training.kubeflow.org/operator-name": "tfjob-controller",
            "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}},
        "spec": {"nodeName": "node-1",
            "initContainers": [{"name": "fetch-data", "image": "busybox:1.36"}],
            "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"},
                           {"name": "metrics-agent", "image": "busybox:1.36"}]},
        "status": {"phase": "Running"}}));
    let kc = c.kubeconfig().display().to_string();
    let complete = |line: &[&str]| {
        let mut args = vec!["__complete", "--kubeconfig", kc.as_str()];
        args.extend_from_slice(line);
        let run = Cli::new(None, &args).run();
        run.expect_code(0);
        run.stdout
    };
    assert_eq!(
        complete(&["logs", "cj", "-c", ""]),
        "fetch-data\nmetrics-agent\ntensorflow\n:4\n"
    );
    assert_eq!(
        complete(&["logs", "tfjob/cj", "--container", "m"]),
        "metrics-agent\n:4\n"
    );
    // No job on the line yet: nothing to read containers from.
    assert_eq!(complete(&["logs", "-c", ""]), ":4\n");
    // top takes a job name too.
    assert_eq!(complete(&["top", ""]), "cj\n:4\n");
}

/// Issue 48 item 12: a rotated key reaches the pods only when they start again. `restart`
/// suspends, waits until the operator deleted this job's pods, resumes: the pods come back
/// as new objects and the job is not left suspended.
#[test]
fn restart_makes_the_pods_again_and_leaves_the_job_running() {
    let c = TestCluster::start(Scenario::default());
    c.insert(job("rs", "default", 2, "OnFailure"));
    until(&c, "workers running", |c| {
        running(c, "default", "rs-worker-0") && running(c, "default", "rs-worker-1")
    });
    let before: Vec<Value> = job_pods(&c, "rs")
        .iter()
        .map(|p| p["metadata"]["uid"].clone())
        .collect();
    let run = tfjob(&c, &["restart", "rs"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org/rs restarted\n");
    run.stderr_has("read the Secrets' current values");
    let stored = c.get("tfjobs", Some("default"), "rs").unwrap();
    assert_ne!(stored["spec"]["runPolicy"]["suspend"], true, "{stored}");
    until(&c, "new pods running", |c| {
        let pods = job_pods(c, "rs");
        pods.len() == 2
            && pods.iter().all(|p| !before.contains(&p["metadata"]["uid"]))
            && running(c, "default", "rs-worker-0")
    });

    // A finished job has no pods to make again: refused, nothing patched.
    let mut done = job("fin", "default", 1, "OnFailure");
    done["status"] = json!({"conditions": [{"type": "Succeeded", "status": "True"}]});
    let c2 = TestCluster::start(
        Scenario::default().with_operator(tfjob_testcluster::OperatorMode::Installed),
    );
    c2.insert(done);
    let run = tfjob(&c2, &["restart", "fin"]);
    assert_ne!(run.code, 0);
    run.stderr_has("tfjob fin has already finished");
    assert!(c2.writes().is_empty(), "{:?}", c2.writes());
}

/// An operator that never deletes the pods: `restart` ends at its --timeout, exit 5, and says
/// the job stays suspended and how to resume it (never half-applied without a word).
#[test]
fn a_restart_cut_by_its_timeout_says_the_job_stays_suspended() {
    let c = TestCluster::start(
        Scenario::default().with_operator(tfjob_testcluster::OperatorMode::Installed),
    );
    crate::job_with_its_pod(&c, "stuck");
    let run = tfjob(&c, &["restart", "stuck", "--timeout", "2s"]);
    run.expect_code(5);
    run.stderr_has("stays suspended until `kubectl tfjob resume stuck");
    let stored = c.get("tfjobs", Some("default"), "stuck").unwrap();
    assert_eq!(stored["spec"]["runPolicy"]["suspend"], true, "{stored}");
}

/// Issue 60 item 3: the job is deleted and created again under its name (suspended, by
/// someone else) between `restart`'s read and its resume: the resume carries the uid of the job
/// restart suspended as the patch's precondition, so the replacement stays as it is. The resume
/// is held by the test cluster until the swap is done (no sleep decides it).
#[test]
fn restart_does_not_resume_a_job_created_again_under_its_name() {
    let c = TestCluster::start(
        Scenario::default().with_operator(tfjob_testcluster::OperatorMode::Installed),
    );
    let uid = crate::job_with_its_pod(&c, "swap");
    // The suspend's patch passes; the resume's is held.
    let mut hold = tfjob_testcluster::Fault::on("patch", "tfjobs").times(0);
    hold.skip = 1;
    hold.hold = true;
    c.set_faults(vec![hold]);
    let child = Cli::new(Some(&c), &["restart", "swap", "--timeout", "60s"]).spawn();
    until(&c, "the job suspended", |c| {
        c.get("tfjobs", Some("default"), "swap")
            .is_some_and(|j| j["spec"]["runPolicy"]["suspend"] == true)
    });
    // The operator (Installed) deletes no pod: the test does, so restart goes on to resume.
    c.delete("pods", Some("default"), "swap-worker-0");
    until(&c, "the resume sent", |c| {
        c.arrived()
            .iter()
            .filter(|r| r.verb == "patch" && r.resource == "tfjobs")
            .count()
            == 2
    });
    // Someone deletes the job and creates it again, suspended.
    c.delete("tfjobs", Some("default"), "swap");
    let mut again = job("swap", "default", 1, "OnFailure");
    again["spec"]["runPolicy"] = json!({"suspend": true});
    c.insert(again);
    let new_uid = c.get("tfjobs", Some("default"), "swap").unwrap()["metadata"]["uid"].clone();
    assert_ne!(new_uid, uid);
    c.release();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("was deleted and created again since it was read"),
        "{stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("restarted"),
        "{stderr}"
    );
    let stored = c.get("tfjobs", Some("default"), "swap").unwrap();
    assert_eq!(stored["metadata"]["uid"], new_uid);
    assert_eq!(stored["spec"]["runPolicy"]["suspend"], true, "{stored}");
}

/// Issue 48 item 10: `suspend --wait` returns once the operator has deleted the pods,
/// `resume --wait` once every replica runs again.
#[test]
fn suspend_and_resume_wait_until_it_took_effect() {
    let c = TestCluster::start(Scenario::default());
    c.insert(job("sw", "default", 2, "OnFailure"));
    until(&c, "workers running", |c| {
        running(c, "default", "sw-worker-0") && running(c, "default", "sw-worker-1")
    });
    let run = tfjob(&c, &["suspend", "sw", "--wait", "--timeout", "60s"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org/sw suspended\n");
    // Returned only once the pods were gone: nothing to wait for here.
    assert!(job_pods(&c, "sw").is_empty(), "{:?}", job_pods(&c, "sw"));
    let run = tfjob(&c, &["resume", "sw", "--wait", "--timeout", "60s"]);
    run.expect_code(0);
    assert!(
        run.stdout.starts_with("tfjob.kubeflow.org/sw resumed\n"),
        "{}",
        run.stdout
    );
    assert!(
        running(&c, "default", "sw-worker-0") && running(&c, "default", "sw-worker-1"),
        "resume --wait returned before every replica ran"
    );
}

/// Issue 48 item 10: `get a b` as kubectl takes it: each described in turn, one List for the
/// object printers, a missing one said while the others are shown.
#[test]
fn get_takes_several_names_as_kubectl_does() {
    let c = TestCluster::start(
        Scenario::default().with_operator(tfjob_testcluster::OperatorMode::Installed),
    );
    c.insert(job("ga", "default", 1, "OnFailure"));
    c.insert(job("gb", "default", 1, "OnFailure"));
    let run = tfjob(&c, &["get", "ga", "tfjob/gb"]);
    run.expect_code(0);
    let a = run.stdout.find("ga").unwrap();
    let b = run.stdout.find("gb").unwrap();
    assert!(a < b, "{}", run.stdout);
    let run = tfjob(&c, &["get", "ga", "gb", "-o", "name"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org/ga\ntfjob.kubeflow.org/gb\n");
    let run = tfjob(&c, &["get", "ga", "gb", "-o", "json"]);
    run.expect_code(0);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["kind"], "List");
    assert_eq!(v["items"].as_array().map(Vec::len), Some(2));
    let run = tfjob(&c, &["get", "ga", "ghost", "-o", "name"]);
    run.expect_code(3);
    assert_eq!(run.stdout, "tfjob.kubeflow.org/ga\n");
    run.stderr_has("ghost");
}

/// Issue 48 item 10: `wait --for=delete`, as kubectl's: returns once the job is gone (at once
/// when it already is), `condition met` on stdout; bounded by --timeout (exit 5).
#[test]
fn wait_for_delete_returns_once_the_job_is_gone() {
    let c = TestCluster::start(
        Scenario::default().with_operator(tfjob_testcluster::OperatorMode::Installed),
    );
    c.insert(job("del", "default", 1, "OnFailure"));
    let run = tfjob(&c, &["wait", "del", "--for=delete", "--timeout", "2s"]);
    run.expect_code(5);
    run.stderr_has("waiting for tfjob default/del to be deleted");
    let (mut child, mut out) = spawn(
        &c,
        &["wait", "tfjob/del", "--for", "delete", "--timeout", "60s"],
    );
    // Deleted while it waits.
    until(&c, "the wait started", |c| {
        c.requests()
            .iter()
            .any(|r| r.verb == "watch" && r.resource == "tfjobs")
    });
    c.delete("tfjobs", Some("default"), "del");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert_eq!(line, "tfjob.kubeflow.org/del condition met\n");
    assert!(child.wait().unwrap().success());
    // Already gone: met at once.
    let run = tfjob(&c, &["wait", "del", "--for=delete"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org/del condition met\n");
    // Not for a job just submitted.
    let run = tfjob(
        &c,
        &[
            "submit", "--name", "x", "--image", "i:1", "--wait", "--for", "delete",
        ],
    );
    run.expect_code(2);
}

/// Issue 48 item 10 (one cause, one wording): on a cluster without the TFJob CRD, kube-apiserver
/// answers a TFJob request with the plain text `404 page not found` (compared on the wire in
/// tests/real/wire.rs). Every day-two verb says the CRD is missing (exit 3), as submit, wait and
/// diagnose do; before, `list`, `get`, `logs`, `top`, `probe`, `restart` printed that 404 with
/// exit 1 and `delete` said the job was not found.
#[test]
fn every_verb_says_the_crd_is_missing_as_submit_does() {
    let c = crate::cluster("operator: absent\n");
    let verbs: [&[&str]; 11] = [
        &["list"],
        &["list", "-A"],
        &["get", "x"],
        &["delete", "x"],
        &["suspend", "x"],
        &["logs", "x"],
        &["top"],
        &["top", "x"],
        &["probe", "x"],
        &["restart", "x"],
        &["wait", "x", "--for", "delete", "--timeout", "20s"],
    ];
    for args in verbs {
        let run = tfjob(&c, args);
        assert_eq!(run.code, 3, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with(
                "error: the API server does not serve tfjobs.kubeflow.org/v1: the TFJob CRD is not installed\n"
            ),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("ref=v1.9.4"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
    // `delete` sends its DELETE (as kubectl does), answered 404: nothing was stored or removed.
    assert!(
        c.writes().iter().all(|w| w.status == 404),
        "{:?}",
        c.writes()
    );
}

pub(crate) fn timed_job(name: &str, created: &str, started: &str) -> serde_json::Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}},
        "status": {"startTime": started, "conditions": [{"type": "Created", "status": "True",
            "reason": "TFJobCreated", "message": "created",
            "lastTransitionTime": "2026-12-01T10:00:00Z"}]}})
}

/// One job with an unparsable time does not take the others' rows with it: it is listed with
/// `<invalid>` where the time goes, as kubectl shows a time it cannot use, and a warning.
#[test]
fn one_job_with_an_unparsable_time_is_listed_among_the_others() {
    let c = cluster("operator: installed\n");
    c.insert(timed_job(
        "good",
        "2026-12-01T10:00:00Z",
        "2026-12-01T10:00:01Z",
    ));
    c.insert(timed_job("bad-start", "2026-12-01T10:00:00Z", "yesterday"));
    c.insert(timed_job(
        "bad-created",
        "not-a-time",
        "2026-12-01T10:00:01Z",
    ));
    for wide in [false, true] {
        let mut args = vec!["list"];
        if wide {
            args.extend(["-o", "wide"]);
        }
        let run = tfjob(&c, &args);
        run.expect_code(0);
        for name in ["good", "bad-start", "bad-created"] {
            assert!(run.stdout.contains(name), "{name} missing: {}", run.stdout);
        }
        let bad = run
            .stdout
            .lines()
            .find(|l| l.starts_with("bad-created"))
            .unwrap();
        assert!(bad.contains("<invalid>"), "{bad}");
        assert!(
            run.stderr.contains("bad-start"),
            "no warning: {}",
            run.stderr
        );
    }
}

/// A missing job is said in one wording by every command, with the namespace where it does
/// exist, or the name meant.
#[test]
fn not_found_is_one_wording_with_where_it_is_or_the_name_meant() {
    let c = cluster("namespaces: [default, kubeflow, team-a]");
    let job = |ns: &str, name: &str| {
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
                "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}})
    };
    c.insert(job("team-a", "mnist"));
    c.insert(job("default", "resnet-50"));
    let commands: [&[&str]; 8] = [
        &["get"],
        &["logs"],
        &["delete"],
        &["suspend"],
        &["top"],
        &["diagnose"],
        &["wait", "--timeout", "5s"],
        &["probe"],
    ];
    for cmd in commands {
        for (name, helps) in [
            ("mnist", "It exists in namespace team-a: add `-n team-a`."),
            ("resnet-5", "Did you mean \"resnet-50\"?"),
        ] {
            let mut a = vec![cmd[0], name];
            a.extend_from_slice(&cmd[1..]);
            let run = tfjob(&c, &a);
            run.expect_code(3);
            let want =
                format!("error: tfjobs.kubeflow.org \"{name}\" not found in namespace default");
            assert!(run.stderr.contains(&want), "{a:?}: {}", run.stderr);
            assert!(run.stderr.contains(helps), "{a:?}: {}", run.stderr);
        }
    }
}

/// A crash-looping job: `list` (RESTARTS), `list -o wide` (REASON) and `get` (a Problem line)
/// say the same thing.
#[test]
fn a_crash_loop_is_said_by_list_wide_and_get_alike() {
    let c = cluster("operator: installed\n");
    c.insert(serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "loop", "namespace": "default", "creationTimestamp": "2026-12-01T10:00:00Z"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [{"name": "tensorflow",
                "image": "tensorflow/tensorflow:2.13.0"}]}}}}},
        "status": {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}],
            "replicaStatuses": {"Worker": {"active": 1}}}}));
    c.insert(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "loop-worker-0", "namespace": "default", "labels": {
            "training.kubeflow.org/job-name": "loop", "training.kubeflow.org/operator-name": "tfjob-controller",
            "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "tensorflow", "ready": false, "restartCount": 16,
            "image": "tensorflow/tensorflow:2.13.0", "imageID": "",
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}}));
    let run = tfjob(&c, &["list"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("16 (CrashLoopBackOff)"),
        "{}",
        run.stdout
    );
    let run = tfjob(&c, &["list", "-o", "wide"]);
    run.expect_code(0);
    let row = run.stdout.lines().find(|l| l.starts_with("loop")).unwrap();
    assert!(row.contains("CrashLoopBackOff"), "{}", run.stdout);
    assert!(!row.contains("<none>"), "REASON <none>: {}", run.stdout);
    let run = tfjob(&c, &["get", "loop"]);
    run.expect_code(0);
    let problem = run
        .stdout
        .lines()
        .find(|l| l.starts_with("Problem:"))
        .unwrap_or_else(|| panic!("no Problem line:\n{}", run.stdout));
    assert!(problem.contains("CrashLoopBackOff"), "{problem}");
    assert!(problem.contains("Worker-0"), "{problem}");
}

/// Issue 61 item 7: `list NAME…` as `kubectl get tfjobs NAME…`: those rows only; a missing
/// name is said as every verb says it, after the rows found (exit 3); `-A` with a name is
/// kubectl's usage error.
#[test]
fn list_takes_names_as_kubectl_get_does() {
    let c = TestCluster::start(Scenario::default());
    for name in ["one", "two", "three"] {
        c.insert(job(name, "default", 1, "OnFailure"));
    }
    let run = tfjob(&c, &["list", "one", "tfjob/three"]);
    run.expect_code(0);
    let names: Vec<&str> = run
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(names, ["one", "three"], "{}", run.stdout);
    let run = tfjob(&c, &["list", "two", "-o", "name"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "tfjob.kubeflow.org/two\n");
    let run = tfjob(&c, &["list", "one", "nope"]);
    run.expect_code(3);
    assert_eq!(run.stdout.lines().count(), 2, "{}", run.stdout);
    run.stderr_has("\"nope\"");
    let run = tfjob(&c, &["list", "-A", "one"]);
    run.expect_code(2);
    run.stderr_has("a resource cannot be retrieved by name across all namespaces");
}
