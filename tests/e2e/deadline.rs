//! `--timeout` is one deadline for the whole command, and `--request-timeout` bounds one request
//! with its retries: on an API server that is slow to answer, every command ends within its
//! bound (plus a second; the assertions leave generous slack for a shared machine), with exit 5
//! for `--timeout` and a message that names the phase the time ran out in.

use std::time::{Duration, Instant};

use tfjob_testcluster::{Fault, TestCluster};

use crate::submit::{SECRET, submit_args};
use crate::{Run, args, cluster, tfjob};

/// Room above a bound for a loaded machine (process start, scheduling). The promise is a
/// second; the durations measured are printed with each run.
const SLACK: Duration = Duration::from_secs(4);

/// Every request answered after 2.5 s (the slow API server).
fn every_request_slow(c: &TestCluster) {
    c.set_faults(vec![Fault {
        latency_ms: Some(2500),
        times: 0,
        ..Default::default()
    }]);
}

/// Runs the binary and measures how long it took.
fn timed(c: &TestCluster, argv: &[&str]) -> (Run, Duration) {
    let started = Instant::now();
    let run = tfjob(c, argv);
    let took = started.elapsed();
    eprintln!("{argv:?}: exit {} after {took:?}\n{}", run.code, run.stderr);
    (run, took)
}

#[track_caller]
fn within(took: Duration, bound: Duration, run: &Run) {
    assert!(
        took <= bound + SLACK,
        "took {took:?}, bound {bound:?}\n--- stderr:\n{}",
        run.stderr
    );
}

/// The article's job, created while the API server is still quick, left running.
fn running() -> TestCluster {
    let c = cluster(&format!("objects:{SECRET}"));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    c
}

#[test]
fn submit_replace_wait_spends_one_timeout_across_every_phase() {
    let c = running();
    every_request_slow(&c);
    let argv = submit_args(&[
        "--replace",
        "--yes",
        "--wait",
        "--for",
        "succeeded",
        "--timeout",
        "20s",
        "--skip-capacity-check",
    ]);
    let (run, took) = timed(&c, &argv);
    run.exit(5);
    within(took, Duration::from_secs(20), &run);
    // Which phase: the pre-flight, the deletion, the create, the wait or its diagnosis.
    assert!(
        run.stderr.contains("--timeout 20s ran out while ")
            || run.stderr.contains(
                "of watching (--timeout 20s bounds the whole command, the diagnosis below included) waiting for TFJob default/tf-dist-train"
            ),
        "{}",
        run.stderr
    );
}

#[test]
fn wait_ends_at_its_timeout_on_a_slow_api_server() {
    let c = running();
    every_request_slow(&c);
    let (run, took) = timed(&c, &args("wait tf-dist-train --for succeeded --timeout 8s"));
    run.exit(5);
    within(took, Duration::from_secs(8), &run);
    assert!(
        run.stderr
            .contains("of watching (--timeout 8s bounds the whole command, the diagnosis below included) waiting for TFJob default/tf-dist-train")
            || run
                .stderr
                .contains("--timeout 8s ran out while waiting for TFJob default/tf-dist-train")
            // The watch had the whole deadline: the job's first read arms the redactor with
            // the Secret its pods read, one more slow request before it.
            || run
                .stderr
                .contains("timed out after 8s waiting for TFJob default/tf-dist-train"),
        "{}",
        run.stderr
    );
}

#[test]
fn diagnose_ends_at_its_timeout_on_a_slow_api_server_and_names_the_step() {
    let c = running();
    every_request_slow(&c);
    let (run, took) = timed(&c, &args("diagnose tf-dist-train --timeout 5s"));
    run.exit(5);
    within(took, Duration::from_secs(5), &run);
    run.stderr_has("timed out after 5s diagnosing TFJob default/tf-dist-train (");
}

#[test]
fn wait_all_ends_at_its_timeout_when_listing_the_jobs_never_answers() {
    let c = running();
    c.set_faults(vec![
        Fault::on("list", "tfjobs").latency_ms(60_000).times(0),
    ]);
    let (run, took) = timed(&c, &args("wait --all --for succeeded --timeout 3s"));
    run.exit(5);
    within(took, Duration::from_secs(3), &run);
    run.stderr_has("--timeout 3s ran out while listing the TFJobs of namespace default");
}

#[test]
fn list_ends_at_its_request_timeout_when_the_list_never_answers() {
    let c = running();
    c.set_faults(vec![
        Fault::on("list", "tfjobs").latency_ms(60_000).times(0),
    ]);
    let (run, took) = timed(&c, &args("list --request-timeout 3s"));
    assert_ne!(run.code, 0, "{}", run.stderr);
    within(took, Duration::from_secs(3), &run);
    // (Cut by our bound on the attempt or by the client's own read timeout, whichever fires
    // first at 3 s: the wording is theirs; the bound is what this test is about.)
    run.stderr_has("listing tfjobs");
}

#[test]
fn time_flags_read_as_kubectls_and_condition_names_are_taken() {
    // A bare number has no unit: kubectl refuses `--timeout 2` (pflag's DurationVar).
    let run = crate::Cli::new(None, &args("wait tf-dist-train --timeout 2")).run();
    run.exit(2);
    run.stderr_has("missing unit");
    // A --settle that cannot fit the --timeout is refused before any request.
    let run = crate::Cli::new(None, &args("wait tf-dist-train --settle 10s --timeout 5s")).run();
    run.exit(2);
    run.stderr_has("--settle 10s is not shorter than --timeout 5s");
    let run = crate::Cli::new(None, &args("wait tf-dist-train --for=condition=Ready")).run();
    run.exit(2);
    run.stderr_has("a TFJob has no condition \"Ready\"");

    let c = running();
    // kubectl's habit: --for=condition=NAME.
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for=condition=Running --timeout 30s"),
    );
    run.exit(0);
    run.stdout_has("condition met (Running)");
    // The default settle window shrinks to fit a short --timeout, and says so.
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 5s"));
    run.exit(0);
    run.stderr_has("--settle shortened from its default 5s to 2.5s (half of --timeout 5s)");
}

#[test]
fn probe_ends_at_its_timeout_on_a_slow_api_server() {
    let c = running();
    every_request_slow(&c);
    let (run, took) = timed(&c, &args("probe tf-dist-train --timeout 5s"));
    run.exit(5);
    within(took, Duration::from_secs(5), &run);
    run.stderr_has("--timeout 5s ran out while probing TFJob default/tf-dist-train");
}

#[test]
fn delete_wait_ends_at_its_timeout_on_a_slow_api_server() {
    let c = running();
    every_request_slow(&c);
    let (run, took) = timed(&c, &args("delete tf-dist-train --wait --timeout 4s"));
    run.exit(5);
    within(took, Duration::from_secs(4), &run);
}

/// Issue 47 item 13: on an API server that never answers, `submit --wait --timeout 3s` ends
/// at its timeout with exit 5 (the timeout's code), whichever request it was waiting on.
#[test]
fn submit_wait_on_an_api_server_that_never_answers_ends_at_its_timeout_with_5() {
    let c = cluster(&format!("objects:{SECRET}"));
    c.set_faults(vec![Fault {
        latency_ms: Some(60_000),
        times: 0,
        ..Default::default()
    }]);
    let (run, took) = timed(&c, &submit_args(&["--wait", "--timeout", "3s"]));
    run.exit(5);
    within(took, Duration::from_secs(3), &run);
    run.stderr_has("--timeout 3s ran out while ");
    assert!(c.writes().is_empty(), "{:?}", c.writes());
}
