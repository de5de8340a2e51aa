use super::*;

use crate::pipeline::jobset::model::{JobSetStatus, ReplicatedJobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::json;

fn js(statuses: &[(&str, i32, i32)], conditions: &[(&str, &str)]) -> JobSet {
    let mut j: JobSet = serde_json::from_value(serde_json::json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "x"},
        "spec": {"replicatedJobs": [
            {"name": "ps", "replicas": 1, "template": {}},
            {"name": "worker", "replicas": 1, "template": {}}]}}))
    .unwrap();
    j.status = Some(JobSetStatus {
        replicated_jobs_status: statuses
            .iter()
            .map(|(n, ready, succeeded)| ReplicatedJobStatus {
                name: n.to_string(),
                ready: *ready,
                succeeded: *succeeded,
                ..Default::default()
            })
            .collect(),
        conditions: conditions
            .iter()
            .map(|(t, r)| Condition {
                type_: t.to_string(),
                status: "True".into(),
                reason: r.to_string(),
                message: "m".into(),
                last_transition_time: Time(Default::default()),
                observed_generation: None,
            })
            .collect(),
        ..Default::default()
    });
    j
}

#[test]
fn all_ready_is_every_replicated_job_ready_or_succeeded() {
    assert_eq!(
        health(&js(&[("worker", 1, 0), ("ps", 1, 0)], &[]), &[], &[], &[]).phase,
        Phase::AllReady
    );
    assert_eq!(
        health(&js(&[("worker", 1, 0)], &[]), &[], &[], &[]).phase,
        Phase::Waiting(vec![("ps".into(), 0, 1), ("worker".into(), 1, 1)])
    );
    assert_eq!(
        health(&js(&[("worker", 0, 1), ("ps", 1, 0)], &[]), &[], &[], &[]).phase,
        Phase::AllReady
    );
    assert_eq!(
        health(&js(&[], &[("Failed", "FailedJobs")]), &[], &[], &[]).phase,
        Phase::Failed("FailedJobs: m".into())
    );
    assert_eq!(
        health(
            &js(&[], &[("Completed", "AllJobsCompleted")]),
            &[],
            &[],
            &[]
        )
        .phase,
        Phase::Completed
    );
}

#[test]
fn only_the_completed_condition_is_succeeded_and_failed_fails_every_target() {
    let running = js(&[("worker", 1, 0), ("ps", 1, 0)], &[]);
    for target in [WaitFor::Succeeded, WaitFor::Finished] {
        match evaluate(&running, target) {
            Outcome::Waiting(line) => assert!(
                line.starts_with("waiting for the JobSet's Completed condition"),
                "{line}"
            ),
            other => panic!("{target:?} on a running JobSet: {other:?}"),
        }
    }
    assert!(matches!(
        evaluate(&running, WaitFor::AllRunning),
        Outcome::Reached(_)
    ));
    assert!(matches!(
        evaluate(&running, WaitFor::Running),
        Outcome::Reached(_)
    ));
    assert!(matches!(
        evaluate(&running, WaitFor::Created),
        Outcome::Reached(_)
    ));
    let none = js(&[], &[]);
    assert!(matches!(
        evaluate(&none, WaitFor::Created),
        Outcome::Waiting(_)
    ));
    assert!(matches!(
        evaluate(&none, WaitFor::Running),
        Outcome::Waiting(_)
    ));
    let done = js(&[("worker", 0, 1)], &[("Completed", "AllJobsCompleted")]);
    for target in [WaitFor::Succeeded, WaitFor::Finished, WaitFor::AllRunning] {
        assert_eq!(
            evaluate(&done, target),
            Outcome::Reached("completed".into())
        );
    }
    let failed = js(
        &[("worker", 1, 0), ("ps", 1, 0)],
        &[("Failed", "FailedJobs")],
    );
    for target in [WaitFor::Succeeded, WaitFor::AllRunning, WaitFor::Running] {
        assert_eq!(
            evaluate(&failed, target),
            Outcome::Failed("FailedJobs: m".into())
        );
    }
}

#[test]
fn a_refused_pod_create_is_the_verdict_and_names_its_job() {
    let js: JobSet = serde_json::from_value(json!({"apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet", "metadata": {"name": "x"},
        "spec": {"replicatedJobs": [{"name": "worker", "replicas": 1, "template": {}}]}}))
    .unwrap();
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "x-worker-0"}})).unwrap();
    let ev: Event = serde_json::from_value(json!({"metadata": {"name": "e"},
        "involvedObject": {"kind": "Job", "name": "x-worker-0"}, "reason": "FailedCreate",
        "message": "Error creating: pods \"x-worker-0-0-abcde\" is forbidden: error looking up service account default/trainer"}))
    .unwrap();
    let v = health(&js, &[job], &[], &[ev]);
    assert_eq!(v.lines[0], "JobSet: worker 0/1 Jobs ready");
    assert!(
        v.lines[1].starts_with("Job x-worker-0: its pods are refused: Error creating"),
        "{:?}",
        v.lines
    );
    assert!(
        v.failure
            .unwrap()
            .contains("service account default/trainer")
    );
    let healthy = health(&js, &[], &[], &[]);
    assert_eq!(healthy.failure, None);
    assert_eq!(healthy.lines[1], "0 pods, none stuck");
}

/// One story: a pod the scheduler cannot place is diagnose's failure and get's Problem, from the
/// same [`health`]; what the JobSet alone says (wait's watch) is the same phase.
#[test]
fn an_unschedulable_pod_is_the_one_verdict_of_diagnose_and_get() {
    let js: JobSet = serde_json::from_value(json!({"apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet", "metadata": {"name": "x", "namespace": "default"},
        "spec": {"replicatedJobs": [{"name": "worker", "replicas": 1, "template": {}}]}}))
    .unwrap();
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "x-worker-0-0-abcde"},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}]}}))
    .unwrap();
    let h = health(&js, &[], std::slice::from_ref(&pod), &[]);
    assert_eq!(
        h.failure.as_deref(),
        Some(
            "pod x-worker-0-0-abcde cannot be scheduled: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
        )
    );
    assert_eq!(h.phase, health(&js, &[], &[], &[]).phase);
    let shown = crate::ops::get::describe(&js, &[pod]);
    assert!(
        shown.contains(
            "State:      Pending\nProblem:    pod x-worker-0-0-abcde cannot be scheduled: 0/1 nodes"
        ),
        "{shown}"
    );
}
