//! Every byte that comes in is bounded (issue 24, item 1) and a server that cannot be reached
//! ends the command at once (item 5), through the real binary: kubeconfig and credential files
//! that never end, a watch event and a log line that never end (the test cluster's
//! `endlessBody` fault), and a refused connection. Memory is measured as the hostile-input run
//! measures it (peak RSS of the child from `wait4`), against the same 256 MB cap.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::json;
use tfjob_testcluster::{Fault, Scenario, TestCluster};

use crate::hostile::{MAX_RSS_KB, Outcome, measured};
use crate::{Cli, tfjob};

fn binary(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"));
    cmd.env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env_remove("KUBECTL_TFJOB_RETRY_DEADLINE")
        .env("HOME", std::env::temp_dir().join("kubectl-tfjob-e2e-home"))
        .args(args)
        .stdin(Stdio::null());
    cmd
}

#[track_caller]
fn bounded(o: &Outcome, what: &str) {
    assert!(!o.hung, "{what}: hung\n{}", o.stderr);
    assert!(
        o.signal.is_none(),
        "{what}: killed by signal {:?}",
        o.signal
    );
    assert!(
        o.max_rss_kb <= MAX_RSS_KB,
        "{what}: peak RSS {} MB",
        o.max_rss_kb / 1024
    );
}

#[test]
fn endless_kubeconfig_and_credential_files_are_refused_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = binary(&["list"]);
    cmd.env("KUBECONFIG", "/dev/zero").stdout(Stdio::null());
    let o = measured(cmd, &dir.path().join("kubeconfig.err"), |_| {});
    bounded(&o, "KUBECONFIG=/dev/zero");
    assert_eq!(o.code, Some(3), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("kubeconfig /dev/zero: too large: over the 8 MiB limit"),
        "{}",
        o.stderr
    );

    let c = TestCluster::start(Scenario::default());
    let kubeconfig = c.kubeconfig().to_str().unwrap().to_string();
    for flag in [
        "--certificate-authority",
        "--client-certificate",
        "--client-key",
    ] {
        let mut cmd = binary(&["list", "--kubeconfig", &kubeconfig, flag, "/dev/zero"]);
        cmd.stdout(Stdio::null());
        let o = measured(cmd, &dir.path().join("flag.err"), |_| {});
        bounded(&o, flag);
        assert!(
            matches!(o.code, Some(2 | 3)),
            "{flag}: {:?}\n{}",
            o.code,
            o.stderr
        );
        assert!(
            o.stderr
                .contains("/dev/zero: too large: over the 1 MiB limit"),
            "{flag}: {}",
            o.stderr
        );
    }
    // Nothing reached the server: the files were refused before any request.
    assert!(c.requests().is_empty(), "{:?}", c.requests());
}

#[test]
fn a_watch_event_that_never_ends_is_cut_off_and_wait_goes_on_by_reading_the_job() {
    let c = TestCluster::start(Scenario::default().with_succeed_after_ms(300));
    c.insert(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "endless", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}));
    c.set_faults(vec![Fault::on("watch", "tfjobs").endless_body().times(0)]);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = binary(&[
        "--kubeconfig",
        c.kubeconfig().to_str().unwrap(),
        "wait",
        "endless",
        "--for",
        "succeeded",
        "--timeout",
        "60s",
        "-v",
    ]);
    cmd.stdout(Stdio::null());
    let o = measured(cmd, &dir.path().join("wait.err"), |_| {});
    bounded(&o, "wait on an endless watch event");
    // The job's state decides, read directly once the watch fails.
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let watches = c
        .requests()
        .iter()
        .filter(|r| r.verb == "watch" && r.resource == "tfjobs")
        .count();
    assert!(watches >= 1, "the watch was never tried");
}

/// Job `lg` with its one worker running, whose log the API server sends without end.
fn running_with_an_endless_log() -> TestCluster {
    let c = TestCluster::start(Scenario::default());
    c.insert(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "lg", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}));
    assert!(
        c.wait_for(std::time::Duration::from_secs(30), |c| {
            c.get("pods", Some("default"), "lg-worker-0")
                .is_some_and(|p| {
                    p["status"]["containerStatuses"][0]["state"]["running"].is_object()
                })
        }),
        "the worker never ran"
    );
    let mut fault = Fault::on("get", "pods").endless_body().times(0);
    fault.matches.subresource = Some("log".into());
    c.set_faults(vec![fault]);
    c
}

/// Issue 60 item 9: without -f, `--timeout` is the whole command's deadline, as every other
/// verb's: a log that never ends is cut there (exit 5, naming the phase), not read until
/// killed. With -f it bounds only the wait for pods, as `kubectl logs -f` has no end.
#[test]
fn logs_without_follow_ends_at_its_timeout_on_a_log_that_never_ends() {
    let c = running_with_an_endless_log();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = binary(&[
        "--kubeconfig",
        c.kubeconfig().to_str().unwrap(),
        "logs",
        "lg",
        "--timeout",
        "3s",
    ]);
    cmd.stdout(Stdio::null());
    let o = measured(cmd, &dir.path().join("logs.err"), |_| {});
    bounded(&o, "logs --timeout 3s on an endless log");
    assert_eq!(o.code, Some(5), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("--timeout 3s ran out while reading the logs of tfjob default/lg"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_log_line_that_never_ends_is_printed_in_bounded_prefixed_pieces() {
    let c = running_with_an_endless_log();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = binary(&[
        "--kubeconfig",
        c.kubeconfig().to_str().unwrap(),
        "logs",
        "lg",
        "-f",
    ]);
    cmd.stdout(Stdio::piped());
    let mut pieces = 0;
    let o = measured(cmd, &dir.path().join("logs.err"), |child| {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // 64 pieces = 4 MiB of one endless line, then hang up (as `| head` would).
        for _ in 0..64 {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            assert!(line.starts_with("[worker-0] x"), "{:.80}", line);
            assert!(
                line.len() <= "[worker-0] ".len() + 64 * 1024 + 1,
                "a piece of {} bytes",
                line.len()
            );
            pieces += 1;
        }
    });
    assert_eq!(pieces, 64);
    bounded(&o, "logs -f on an endless line");
    // A closed stdout ends the command quietly (exit 0), as with kubectl.
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

#[test]
fn logs_exits_non_zero_when_no_replica_could_be_read() {
    let c = TestCluster::start(Scenario::default());
    c.insert(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "unread", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}));
    assert!(
        c.wait_for(std::time::Duration::from_secs(30), |c| {
            c.get("pods", Some("default"), "unread-worker-0")
                .is_some_and(|p| {
                    p["status"]["containerStatuses"][0]["state"]["running"].is_object()
                })
        }),
        "the worker never ran"
    );
    let mut fault = Fault::status("get", "pods", 403).times(0);
    fault.matches.subresource = Some("log".into());
    c.set_faults(vec![fault]);
    let run = tfjob(&c, &["logs", "unread"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("no log of tfjob unread could be read"),
        "{}",
        run.stderr
    );
    // The replica's reason once, on its own line, not again in the error.
    assert_eq!(run.stderr.matches("403").count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("worker-0: ") && l.contains("403")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_refused_connection_ends_at_once_with_kubectls_words() {
    // Bind then drop: nothing listens on the port afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = format!("http://127.0.0.1:{port}");
    let run = Cli::new(None, &["list", "--server", &server, "-v"]).run();
    run.expect_code(3);
    assert!(
        run.stderr.contains(&format!(
            "The connection to the server 127.0.0.1:{port} was refused - did you specify the right host or port?"
        )),
        "{}",
        run.stderr
    );
    // One attempt: `-v` logs every retry, and there is none.
    assert!(!run.stderr.contains("retrying"), "{}", run.stderr);
}

#[test]
fn a_hanging_exec_credential_plugin_is_stopped_at_the_request_timeout() {
    use tfjob_testcluster::Credential;
    let c = TestCluster::start(Scenario::default());
    let kubeconfig = c.write_kubeconfig(
        "exec",
        &Credential::Exec {
            token: "test-token".into(),
        },
    );
    // The plugin the kubeconfig names now never answers.
    let mut script = kubeconfig.clone().into_os_string();
    script.push(".exec-credential.sh");
    // Not `exec`: the shell stays, with a child holding its stderr, as real wrapper scripts do.
    std::fs::write(&script, "#!/bin/sh\nsleep 600\necho never\n").unwrap();
    let run = Cli::new(None, &["list", "--request-timeout", "1s"])
        .env("KUBECONFIG", kubeconfig.to_str().unwrap())
        .env("KUBECTL_TFJOB_RETRY_DEADLINE", "1s")
        .run();
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("gave no credential within 1s; stopped it"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("exec-credential.sh"), "{}", run.stderr);
    // No request could carry a credential, so none was answered as the user.
    assert!(
        c.requests().iter().all(|r| r.user.is_empty()),
        "{:?}",
        c.requests()
    );
}

#[test]
fn a_reply_that_never_ends_is_cut_off_at_its_bound_with_bounded_memory() {
    let c = TestCluster::start(Scenario::default());
    c.set_faults(vec![Fault::on("list", "tfjobs").endless_body().times(0)]);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = binary(&["--kubeconfig", c.kubeconfig().to_str().unwrap(), "list"]);
    cmd.stdout(Stdio::null());
    let o = measured(cmd, &dir.path().join("list.err"), |_| {});
    bounded(&o, "list on an endless reply");
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("reply is over 64 MiB; stopped reading it"),
        "{}",
        o.stderr
    );
    // Not retried: the same request would read the same again.
    let lists = c
        .requests()
        .iter()
        .filter(|r| r.verb == "list" && r.resource == "tfjobs")
        .count();
    assert_eq!(lists, 1);
}

#[test]
fn sigterm_and_sighup_end_a_command_as_ctrl_c_does() {
    let c = TestCluster::start(Scenario::default());
    // A job whose image's registry never answers: `wait` keeps waiting, printing progress.
    c.set_unreachable_images(vec!["example.com/never:1".into()]);
    c.insert(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "stuck", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "example.com/never:1"}]}}}}}}));
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
        let mut child = binary(&[
            "--kubeconfig",
            c.kubeconfig().to_str().unwrap(),
            "wait",
            "stuck",
            "--timeout",
            "5m",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        // The first progress line: the wait is under way (its interrupt message is set).
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        assert!(line.contains("tfjob/stuck"), "{name}: {line}");
        // SAFETY: a plain syscall on our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{name}: {rest}");
        assert!(
            rest.contains(
                "interrupted; the job was left as it is. Resume with: kubectl tfjob wait stuck"
            ),
            "{name}: {rest}"
        );
    }
}

/// A running job of `workers` workers whose pod logs, from now on, never end (the `endlessBody` fault on
/// pods/log), and the cluster.
fn endless_log_job(name: &str, workers: u32) -> TestCluster {
    let c = TestCluster::start(Scenario::default());
    // The gateway key from a Secret, as submit injects it: `logs` scrubs its value from every
    // line, which makes printing, not reading, the slower side.
    c.insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "taotoken-secret", "namespace": "default"},
        "stringData": {"api-key": crate::TEST_KEY}}));
    c.insert(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": "Never",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0",
                 "env": [{"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef":
                     {"name": "taotoken-secret", "key": "api-key"}}}]}]}}}}}}));
    crate::until_workers_run(&c, name, i64::from(workers));
    let mut fault = Fault::on("get", "pods").endless_body().times(0);
    fault.matches.subresource = Some("log".into());
    c.set_faults(vec![fault]);
    c
}

/// Issue 47 item 6: a pod log that never ends. `diagnose` reads at most its excerpt's bytes of
/// it (it reached gigabytes); `logs` without -f ends at --request-timeout, which bounds a whole
/// request as kubectl's does.
#[test]
fn an_endless_pod_log_is_read_within_bounds_by_diagnose_and_logs() {
    let c = endless_log_job("flood", 1);
    let kubeconfig = c.kubeconfig().to_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = binary(&["--kubeconfig", &kubeconfig, "diagnose", "flood"]);
    cmd.stdout(Stdio::null());
    let o = measured(cmd, &dir.path().join("diagnose.err"), |_| {});
    bounded(&o, "diagnose of a job with an endless log");
    assert!(matches!(o.code, Some(0 | 4)), "{:?}: {}", o.code, o.stderr);

    let mut cmd = binary(&[
        "--kubeconfig",
        &kubeconfig,
        "logs",
        "flood",
        "--request-timeout",
        "2s",
    ]);
    cmd.stdout(Stdio::null());
    let o = measured(cmd, &dir.path().join("logs.err"), |_| {});
    bounded(&o, "logs --request-timeout of an endless log");
    assert_ne!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("worker-0: the log did not end within --request-timeout 2s"),
        "{}",
        o.stderr
    );
}

/// Issue 47 item 6: `logs --timeout` is a deadline also when the API server never answers
/// (it ran 60 s: the retries' own deadline), and `--save-limit` cannot ask for more than a log
/// may hold in memory (1Ei aborted).
#[test]
fn logs_ends_at_its_timeout_on_a_silent_api_and_refuses_a_save_limit_beyond_memory() {
    let c = TestCluster::start(Scenario::default());
    c.set_faults(vec![
        Fault::on("get", "tfjobs").latency_ms(600_000).times(0),
    ]);
    let run = tfjob(&c, &["logs", "anything", "--timeout", "2s"]);
    run.expect_code(5);
    // Without -f the flag is the command's deadline, worded as every verb words it.
    run.stderr_has("--timeout 2s ran out while reading tfjob default/anything");
    // With -f it bounds the wait for the job and its pods.
    let run = tfjob(&c, &["logs", "anything", "-f", "--timeout", "2s"]);
    run.expect_code(5);
    run.stderr_has("tfjob anything could not be read within 2s (--timeout)");

    let dir = tempfile::tempdir().unwrap();
    let run = Cli::new(
        None,
        &[
            "logs",
            "x",
            "--save",
            dir.path().to_str().unwrap(),
            "--save-limit",
            "1Ei",
        ],
    )
    .run();
    run.expect_code(2);
    run.stderr_has("--save-limit is at most 256Mi per log");
}

/// Issue 47 item 6: `logs -f` on a log that never ends stops on SIGTERM as any command does.
/// The log kept the command's future busy for its whole cooperative budget on every poll, and
/// the interrupt, polled after it, was never seen: the process ran on, two cores busy, until
/// SIGKILL (seen: `timeout 5 kubectl-tfjob logs -f` still running after 600 s).
#[test]
fn logs_follow_on_an_endless_log_stops_on_sigterm() {
    let c = endless_log_job("spin", 2);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = binary(&[
        "--kubeconfig",
        c.kubeconfig().to_str().unwrap(),
        "logs",
        "spin",
        "-f",
    ]);
    cmd.stdout(Stdio::piped());
    let o = measured(cmd, &dir.path().join("logs.err"), |child| {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // The flood is under way: 256 pieces of the endless line (16 MiB) came.
        for _ in 0..256 {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            assert!(line.starts_with("[worker-"), "{:.80}", line);
        }
        // Keep reading: a closed stdout would end the command on its own (quietly), and the
        // signal is what this test is about.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        // SAFETY: a plain syscall on our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    });
    bounded(&o, "logs -f on an endless log, then SIGTERM");
    assert_eq!(o.code, Some(130), "{}", o.stderr);
    // What it was doing, in the words a timeout would use (the command's one phase).
    assert!(
        o.stderr
            .contains("interrupted (SIGTERM) while following the logs of tfjob default/spin"),
        "{}",
        o.stderr
    );
    // `logs` writes nothing, and says so (not the outcome of a write it never sent).
    assert!(o.stderr.contains("nothing was written"), "{}", o.stderr);
    assert!(!o.stderr.contains("in flight"), "{}", o.stderr);
}
