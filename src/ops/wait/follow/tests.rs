//! The pod watch against the project's test cluster, with its fault injection.

use super::report::*;
use super::*;
use kube::runtime::reflector::Store;
use serde_json::json;
use tfjob_testcluster::{Fault, Scenario, TestCluster};

/// A pod of job `gap` as the operator labels it, Running (the simulated kubelet leaves it alone).
fn pod(name: &str, extra_label: Option<&str>) -> serde_json::Value {
    let mut labels = json!({
        "training.kubeflow.org/job-name": "gap",
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/replica-type": "worker",
    });
    if let Some(l) = extra_label {
        labels["extra"] = l.into();
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "tensorflow", "image": "i"}]},
        "status": {"phase": "Running"}})
}

async fn client(c: &TestCluster) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(c.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn names(store: &Store<Pod>) -> Vec<String> {
    let mut names: Vec<String> = store
        .state()
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    names
}

/// Polls the event stream until the store holds exactly `want`. The timeout only keeps a
/// broken build from hanging; what is asserted is the store's content.
async fn until(
    events: &mut (impl Stream<Item = std::result::Result<Signal, WatchProblem>> + Unpin),
    store: &Store<Pod>,
    want: &[&str],
) {
    let reached = Budget::new(Duration::from_secs(30))
        .attempt(async {
            while names(store) != want {
                let _ = events.next().await.expect("the pod watch ended");
            }
        })
        .await;
    assert!(
        reached.is_some(),
        "store never became {want:?}: {:?}",
        names(store)
    );
}

#[tokio::test]
async fn pods_deleted_while_the_watch_was_down_leave_the_store_after_410() {
    // The first watch ends after its 3rd event; the re-watch from its resourceVersion gets
    // 410 Expired, so the watcher lists again.
    let scenario = Scenario::default()
        .with_fault(Fault::on("watch", "pods").close_after_events(3).times(1))
        .with_fault(
            Fault::on("watch", "pods")
                .gone_on_rewatch()
                .skip(1)
                .times(1),
        );
    let c = TestCluster::start_async(scenario).await;
    c.insert(pod("gap-worker-0", None));
    c.insert(pod("gap-worker-1", None));
    let api: Api<Pod> = Api::namespaced(client(&c).await, "default");
    let (store, writer) = reflector::store();
    let mut events = Box::pin(reflect(pod_watch(api, &model::job_selector("gap")), writer));
    until(&mut events, &store, &["gap-worker-0", "gap-worker-1"]).await;

    // Event 3 closes the watch; the deletion happens while no watch is open (the stream is not
    // polled in between), so only the re-list can tell.
    c.insert(pod("gap-worker-0", Some("x")));
    c.delete("pods", Some("default"), "gap-worker-1");
    until(&mut events, &store, &["gap-worker-0"]).await;

    let pod_watches: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.verb == "watch" && r.resource == "pods")
        .collect();
    assert!(pod_watches.len() >= 3, "{pod_watches:?}");
    assert!(
        pod_watches[1].query.contains("resourceVersion=")
            && !pod_watches[1].query.contains("sendInitialEvents"),
        "the second watch resumes: {:?}",
        pod_watches[1].query
    );
    assert!(
        pod_watches[2].query.contains("sendInitialEvents=true"),
        "after 410 the list starts over: {:?}",
        pod_watches[2].query
    );
    // The spec is never kept.
    assert!(
        store
            .state()
            .iter()
            .all(|p| p.metadata.managed_fields.is_none())
    );
}

#[tokio::test]
async fn a_server_without_streaming_lists_gets_a_paged_list() {
    // An API server without the WatchList feature refuses sendInitialEvents as invalid.
    let scenario = Scenario::default().with_fault(Fault::status("watch", "pods", 422).times(1));
    let c = TestCluster::start_async(scenario).await;
    c.insert(pod("gap-worker-0", None));
    let api: Api<Pod> = Api::namespaced(client(&c).await, "default");
    let (store, writer) = reflector::store();
    let mut events = Box::pin(reflect(pod_watch(api, &model::job_selector("gap")), writer));
    until(&mut events, &store, &["gap-worker-0"]).await;
    let lists: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.verb == "list" && r.resource == "pods")
        .collect();
    assert_eq!(lists.len(), 1, "{lists:?}");
    assert!(
        lists[0].query.contains(&format!("limit={PAGE_SIZE}")),
        "{:?}",
        lists[0].query
    );
}

#[test]
fn streaming_refusals_are_told_apart_from_outages() {
    let status = |code: u16| kube::core::Status {
        code,
        ..Default::default()
    };
    let start = |code| watcher::Error::WatchStartFailed(kube::Error::Api(status(code).boxed()));
    assert!(streaming_refused(&start(422)));
    assert!(streaming_refused(&start(400)));
    assert!(!streaming_refused(&start(500)));
    assert!(!streaming_refused(&start(403)));
    assert!(!streaming_refused(&watcher::Error::WatchError(
        status(410).boxed()
    )));
}

#[test]
fn a_crash_loop_ends_with_the_last_log_lines_when_they_were_read() {
    let log: String = (1..=8).map(|i| format!("line {i}\n")).collect();
    let m = with_log_tail("worker-0 is crash-looping", Some(&log));
    assert_eq!(
        m,
        "worker-0 is crash-looping\nits last log lines:\n  | line 4\n  | line 5\n  | line 6\n  | line 7\n  | line 8"
    );
    // Not read (the kubelet could not serve it, or the budget ran out): the verdict alone.
    assert_eq!(with_log_tail("x", None), "x");
    assert_eq!(with_log_tail("x", Some(&"\n".to_string())), "x");
}

/// A pod of job `j` in `phase`, its tensorflow container ended with `code`.
fn ended_pod(name: &str, phase: &str, code: i32) -> Arc<Pod> {
    Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {
            "training.kubeflow.org/job-name": "j",
            "training.kubeflow.org/replica-type": "worker"}},
            "status": {"phase": phase, "containerStatuses": [{"name": "tensorflow", "image": "i",
                "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": code}}}]}}))
        .unwrap(),
    )
}

fn job_with_policy(policy: &str, failed: bool) -> TFJob {
    let mut v = json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"runPolicy": {"cleanPodPolicy": policy},
            "tfReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "Never",
                "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}}}});
    if failed {
        v["status"] = json!({"conditions": [{"type": "Failed", "status": "True"}]});
    }
    serde_json::from_value(v).unwrap()
}

#[test]
fn the_logs_are_said_gone_whether_the_closing_read_comes_before_or_after_the_cleanup() {
    // A worker failed for good under restartPolicy Never: the job ends, whether or not the
    // operator has written Failed yet.
    let failed = ended_pod("j-worker-1", "Failed", 3);
    let running = Arc::new(
        serde_json::from_value::<Pod>(json!({"metadata": {"name": "j-worker-0"},
            "status": {"phase": "Running"}}))
        .unwrap(),
    );
    let pods = vec![failed, running.clone()];
    let all = cleaned_by_policy(&job_with_policy("All", false), &pods);
    assert_eq!(all.as_deref(), Some("All"));
    assert_eq!(
        cleaned_by_policy(
            &job_with_policy("Running", true),
            std::slice::from_ref(&running)
        )
        .as_deref(),
        Some("Running")
    );
    // None keeps the pods; a running job under All has nothing deleted yet.
    assert_eq!(
        cleaned_by_policy(&job_with_policy("None", true), &pods),
        None
    );
    assert_eq!(
        cleaned_by_policy(&job_with_policy("All", false), &[running]),
        None
    );
    // Before the deletion (pods still read) and after it (pods gone): the same words.
    let before = logs_gone_note(all.as_deref(), false, None).unwrap();
    let after = logs_gone_note(all.as_deref(), true, None).unwrap();
    assert_eq!(before, after);
    assert!(
        before.contains("logs are gone") && before.contains("--save DIR"),
        "{before}"
    );
    // Without a policy that deletes, only pods seen vanishing are said gone.
    assert!(
        logs_gone_note(None, true, None)
            .unwrap()
            .contains("logs are gone")
    );
    assert_eq!(logs_gone_note(None, false, None), None);
    // With --save, where they were kept.
    let kept = logs_gone_note(all.as_deref(), true, Some(std::path::Path::new("/d/j-1"))).unwrap();
    assert!(kept.contains("--save kept them in /d/j-1"), "{kept}");
}

/// Issue 48 item 7: a wait that gave up at 18 s of a 20 s --timeout said "after 20s".
#[test]
fn a_timeout_message_says_the_time_actually_watched() {
    use std::time::Duration;
    assert_eq!(
        super::timed_out(Duration::from_millis(18_060), Duration::from_secs(20)),
        "timed out after 18.1s of watching (--timeout 20s bounds the whole command, the diagnosis below included)"
    );
    assert_eq!(
        super::timed_out(Duration::from_millis(19_800), Duration::from_secs(20)),
        "timed out after 20s"
    );
}
