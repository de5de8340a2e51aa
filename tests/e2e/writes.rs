//! Every write accounted for (issue 24, item 3): a create or delete whose reply is lost is
//! looked up, and the user is told what is true: it happened, it did not, or (exit 6) it may
//! have, with the command to check. Faults from the test cluster: `dropReply` stores the object
//! and loses the reply; `reset` loses a read.

use kubectl_tfjob::error::ExitCode;

use crate::submit::{SECRET, submit_args};
use crate::{Cli, cluster};

fn with_short_deadline(c: &tfjob_testcluster::TestCluster, args: &[&str]) -> crate::Run {
    // Every lost reply is retried until the deadline: keep it short (no timing is asserted).
    Cli::new(Some(c), args)
        .env("KUBECTL_TFJOB_RETRY_DEADLINE", "1s")
        .run()
}

fn real_creates(c: &tfjob_testcluster::TestCluster) -> Vec<u16> {
    c.requests()
        .iter()
        .filter(|r| r.verb == "create" && r.resource == "tfjobs" && !r.dry_run)
        .map(|r| r.status)
        .collect()
}

#[test]
fn a_create_whose_every_reply_is_lost_is_found_and_reported_created() {
    // skip 1: the server dry run is a create too, and answers.
    let c = cluster(&format!(
        "faults:\n- match: {{verb: create, resource: tfjobs}}\n  dropReply: true\n  skip: 1\n  times: 0\nobjects:{SECRET}"
    ));
    let run = with_short_deadline(&c, &submit_args(&[]));
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("tfjob.kubeflow.org/tf-dist-train created"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(
            "tfjob.kubeflow.org/tf-dist-train created (the reply was lost; the job exists)"
        ),
        "{}",
        run.stderr
    );
    // No reply ever came, and there is exactly one job.
    assert!(
        real_creates(&c).iter().all(|&s| s == 0),
        "{:?}",
        real_creates(&c)
    );
    assert_eq!(c.list("tfjobs", Some("default")).len(), 1);
}

#[test]
fn a_create_whose_outcome_cannot_be_learned_says_the_job_may_exist_with_exit_6() {
    // Every create reply lost, and every read of the job after the readiness check lost too.
    let c = cluster(&format!(
        "faults:\n- match: {{verb: create, resource: tfjobs}}\n  dropReply: true\n  skip: 1\n  times: 0\n- match: {{verb: get, resource: tfjobs}}\n  reset: true\n  skip: 1\n  times: 0\nobjects:{SECRET}"
    ));
    let run = with_short_deadline(&c, &submit_args(&[]));
    run.expect_code(ExitCode::WriteUnknown as i32);
    assert!(run.stderr.contains("the job may exist"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("Check with `kubectl get tfjob tf-dist-train -n default"),
        "{}",
        run.stderr
    );
    // And it does: the message was right to say "may".
    assert_eq!(c.list("tfjobs", Some("default")).len(), 1);
    assert!(!run.stdout.contains("created"), "{}", run.stdout);
}

#[test]
fn a_create_that_never_reached_the_server_is_reported_as_not_created() {
    // Every create reset before it is handled: the look finds nothing, so the failure stands.
    let c = cluster(&format!(
        "faults:\n- match: {{verb: create, resource: tfjobs}}\n  reset: true\n  skip: 1\n  times: 0\nobjects:{SECRET}"
    ));
    let run = with_short_deadline(&c, &submit_args(&[]));
    run.expect_code(ExitCode::NotReady as i32);
    assert!(run.stderr.contains("cannot reach"), "{}", run.stderr);
    assert!(c.list("tfjobs", Some("default")).is_empty());
}

fn small_job(c: &tfjob_testcluster::TestCluster, name: &str) {
    c.insert(
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never",
            "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}),
    );
}

fn deletes(c: &tfjob_testcluster::TestCluster) -> Vec<(String, u16)> {
    c.requests()
        .iter()
        .filter(|r| r.verb == "delete" && r.resource == "tfjobs")
        .map(|r| (r.name.clone().unwrap_or_default(), r.status))
        .collect()
}

#[test]
fn delete_retries_a_server_error_under_the_one_policy() {
    let c =
        cluster("faults:\n- match: {verb: delete, resource: tfjobs}\n  status: 503\n  times: 1");
    small_job(&c, "d1");
    let run = Cli::new(Some(&c), &["delete", "d1", "--wait=false"]).run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "tfjob.kubeflow.org \"d1\" deleted");
    let statuses: Vec<u16> = deletes(&c).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, vec![503, 200]);
    assert!(c.get("tfjobs", Some("default"), "d1").is_none());
}

#[test]
fn a_delete_whose_reply_was_lost_is_a_success_once_the_job_is_seen_gone() {
    let c = cluster(
        "faults:\n- match: {verb: delete, resource: tfjobs}\n  dropReply: true\n  times: 1",
    );
    small_job(&c, "d2");
    let run = Cli::new(Some(&c), &["delete", "d2"]).run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "tfjob.kubeflow.org \"d2\" deleted");
    assert!(
        run.stderr
            .contains("the reply was lost; the job is gone or going"),
        "{}",
        run.stderr
    );
    // One DELETE (its reply lost), then a read that found the job gone: no second DELETE.
    assert_eq!(deletes(&c), vec![("d2".to_string(), 0)]);
}

#[test]
fn delete_all_goes_on_past_a_failure_reports_it_and_exits_non_zero() {
    let c = cluster(
        "faults:\n- match: {verb: delete, resource: tfjobs, name: b}\n  status: 403\n  times: 0",
    );
    for n in ["a", "b", "c"] {
        small_job(&c, n);
    }
    let run = Cli::new(Some(&c), &["delete", "--all", "--wait=false"]).run();
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout.lines().collect::<Vec<_>>(),
        [
            "tfjob.kubeflow.org \"a\" deleted",
            "tfjob.kubeflow.org \"c\" deleted"
        ]
    );
    assert!(run.stderr.contains("forbidden"), "{}", run.stderr);
    assert!(
        run.stderr.contains("1 of 3 tfjob deletions failed"),
        "{}",
        run.stderr
    );
    assert!(c.get("tfjobs", Some("default"), "b").is_some());
    assert!(c.get("tfjobs", Some("default"), "a").is_none());
    // Each listed job's DELETE carried its uid (the selector's list gave it).
    let bodies: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.verb == "delete" && r.resource == "tfjobs")
        .map(|r| r.body)
        .collect();
    assert!(
        bodies.iter().all(|b| b
            .as_ref()
            .and_then(|b| b["preconditions"]["uid"].as_str())
            .is_some_and(|u| !u.is_empty())),
        "{bodies:?}"
    );
}

#[test]
fn a_secret_create_whose_every_reply_is_lost_is_found_and_reported_created() {
    let c = cluster(
        "faults:\n- match: {verb: create, resource: secrets}\n  dropReply: true\n  times: 0",
    );
    let run = Cli::new(Some(&c), &["secret", "create", "--from-stdin"])
        .env("KUBECTL_TFJOB_RETRY_DEADLINE", "1s")
        .stdin(&format!("{}\n", crate::TEST_KEY))
        .run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "secret/taotoken-secret created");
    assert!(
        run.stderr
            .contains("secret/taotoken-secret created (the reply was lost"),
        "{}",
        run.stderr
    );
    assert!(
        c.get("secrets", Some("default"), "taotoken-secret")
            .is_some()
    );
}

/// Issue 60 item 3: `submit --replace` deletes the job it read, never one created again under
/// its name in between: the delete carries the uid read as its precondition (409 otherwise),
/// and nothing is created over the other job. The delete is held by the test cluster until the
/// swap is done.
#[test]
fn submit_replace_does_not_delete_a_job_created_again_under_its_name() {
    let c = cluster(&format!("objects:{SECRET}"));
    crate::tfjob(&c, &submit_args(&[])).expect_code(0);
    let mut hold = tfjob_testcluster::Fault::on("delete", "tfjobs").times(0);
    hold.hold = true;
    c.set_faults(vec![hold]);
    let child = Cli::new(
        Some(&c),
        &submit_args(&["--replace", "--yes", "--skip-capacity-check"]),
    )
    .spawn();
    assert!(
        c.wait_for(std::time::Duration::from_secs(60), |c| {
            c.arrived()
                .iter()
                .any(|r| r.verb == "delete" && r.resource == "tfjobs")
        }),
        "the delete never came"
    );
    // Someone deletes the job and creates it again.
    let mut again = c.get("tfjobs", Some("default"), "tf-dist-train").unwrap();
    c.delete("tfjobs", Some("default"), "tf-dist-train");
    for k in ["uid", "resourceVersion", "creationTimestamp"] {
        again["metadata"].as_object_mut().unwrap().remove(k);
    }
    again.as_object_mut().unwrap().remove("status");
    c.insert(again);
    let new_uid =
        c.get("tfjobs", Some("default"), "tf-dist-train").unwrap()["metadata"]["uid"].clone();
    c.clear_requests();
    c.release();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    let stored = c.get("tfjobs", Some("default"), "tf-dist-train").unwrap();
    assert_eq!(stored["metadata"]["uid"], new_uid, "{stderr}");
    assert!(
        !c.writes()
            .iter()
            .any(|r| r.verb == "create" && r.resource == "tfjobs" && !r.dry_run),
        "created over the other job: {stderr}"
    );
}
