//! The day-two core (`ops::logs`, `list`, `get`, `delete`, `suspend`/`resume`) driven through the
//! library against the in-process test cluster. Waits are on observable conditions only.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};
use tfjob_testcluster::{Scenario, TestCluster};

use kubectl_tfjob::cluster::Kube;
use kubectl_tfjob::error::Error;
use kubectl_tfjob::ops;

async fn client(c: &TestCluster) -> Client {
    let kc = Kubeconfig::read_from(c.kubeconfig()).unwrap();
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(cfg).unwrap()
}

/// The commands' handle on the cluster (default retry deadline, no connection flags).
fn kube(cl: &Client) -> Kube {
    Kube::from_client(cl.clone(), "default", "")
}

/// A writer tests can read while the command still runs.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Buf {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn tfjob(name: &str, ps: i64, workers: i64, restart: &str, gpu: Option<i64>) -> Value {
    let mut container = json!({"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"});
    if let Some(g) = gpu {
        container["resources"] = json!({"limits": {"nvidia.com/gpu": g}});
    }
    let mut specs = serde_json::Map::new();
    for (k, n) in [("PS", ps), ("Worker", workers)] {
        if n > 0 {
            specs.insert(
                k.into(),
                json!({"replicas": n, "restartPolicy": restart, "template": {"spec": {"containers": [container.clone()]}}}),
            );
        }
    }
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"tfReplicaSpecs": specs}})
}

async fn create(cl: &Client, job: Value) {
    let api: kube::Api<kube::core::DynamicObject> = kube::Api::namespaced_with(
        cl.clone(),
        "default",
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("kubeflow.org", "v1", "TFJob"),
            "tfjobs",
        ),
    );
    api.create(&Default::default(), &serde_json::from_value(job).unwrap())
        .await
        .unwrap();
}

fn running(c: &TestCluster, pod: &str) -> bool {
    c.get("pods", Some("default"), pod)
        .is_some_and(|p| p["status"]["containerStatuses"][0]["state"]["running"].is_object())
}

fn container_id(c: &TestCluster, pod: &str) -> Value {
    c.get("pods", Some("default"), pod).unwrap()["status"]["containerStatuses"][0]["containerID"]
        .clone()
}

/// Polls a condition of the cluster or the output (waiting, never deciding an outcome).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..2000 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("gave up waiting for {what}");
}

#[tokio::test(flavor = "multi_thread")]
async fn follow_three_replicas_one_restarting_prints_every_line_once() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    create(&cl, tfjob("lg", 0, 3, "OnFailure", None)).await;
    let pods = ["lg-worker-0", "lg-worker-1", "lg-worker-2"];
    until("three running workers", || {
        pods.iter().all(|p| running(&c, p))
    })
    .await;

    let out = Buf::default();
    let err = Buf::default();
    let mut opts = ops::logs::LogsOptions::new("lg");
    opts.follow = true;
    opts.max_log_requests = Some(3);
    let (mut o, mut e) = (out.clone(), err.clone());
    let script = async {
        for (i, p) in pods.iter().enumerate() {
            for k in 0..20 {
                c.append_log("default", p, "tensorflow", &format!("w{i} before {k}"));
            }
        }
        until("worker-1's first lines printed", || {
            out.text().contains("[worker-1] w1 before 19")
        })
        .await;
        // Lines written just before the crash may reach the client only via `previous`.
        c.append_log(
            "default",
            "lg-worker-1",
            "tensorflow",
            "w1 last words\nTraceback: boom",
        );
        let old = container_id(&c, "lg-worker-1");
        c.exit_container("default", "lg-worker-1", "tensorflow", 1);
        until("worker-1 restarted", || {
            running(&c, "lg-worker-1") && container_id(&c, "lg-worker-1") != old
        })
        .await;
        for (i, p) in pods.iter().enumerate() {
            for k in 0..20 {
                c.append_log("default", p, "tensorflow", &format!("w{i} after {k}"));
            }
        }
        until("every after-line printed", || {
            let t = out.text();
            (0..3).all(|i| t.contains(&format!("[worker-{i}] w{i} after 19")))
        })
        .await;
        // The job succeeds when every worker exits 0; following then ends.
        for p in pods {
            c.exit_container("default", p, "tensorflow", 0);
        }
    };
    let k = kube(&cl);
    let (res, ()) = tokio::join!(
        ops::logs::logs(&k, "default", &opts, &mut o, &mut e),
        script
    );
    let summary = res.unwrap();
    assert_eq!(summary.finished.as_deref(), Some("Succeeded"));
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    let mut expected: Vec<String> = Vec::new();
    for i in 0..3 {
        for k in 0..20 {
            expected.push(format!("[worker-{i}] w{i} before {k}"));
            expected.push(format!("[worker-{i}] w{i} after {k}"));
        }
    }
    expected.push("[worker-1] w1 last words".into());
    expected.push("[worker-1] Traceback: boom".into());
    for want in &expected {
        let n = lines.iter().filter(|l| *l == want).count();
        assert_eq!(n, 1, "{want:?} printed {n} times in:\n{text}");
    }
    // Per replica, arrival order is the container's order.
    let w1: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("[worker-1] w1"))
        .collect();
    let pos = |s: &str| w1.iter().position(|l| **l == s).unwrap();
    assert!(pos("[worker-1] w1 before 19") < pos("[worker-1] w1 last words"));
    assert!(pos("[worker-1] w1 last words") < pos("[worker-1] w1 after 0"));
    // The kubelet's own first line of each instance: twice for worker-1 (restart), once otherwise.
    let starts = |i: usize| {
        lines
            .iter()
            .filter(|l| {
                l.starts_with(&format!(
                    "[worker-{i}] INFO:tensorflow:lg-worker-{i} started"
                ))
            })
            .count()
    };
    assert_eq!((starts(0), starts(1), starts(2)), (1, 2, 1), "{text}");
    assert!(lines.iter().all(|l| l.starts_with("[worker-")), "{text}");

    // --previous shows the crashed container of worker-1.
    let prev = Buf::default();
    let mut opts = ops::logs::LogsOptions::new("lg");
    opts.previous = true;
    opts.replica_type = Some("worker".into());
    opts.index = Some(1);
    let (mut p, mut e) = (prev.clone(), Buf::default());
    // The pods are completed (terminated, no restart) and worker-1 still has its crashed instance.
    ops::logs::logs(&kube(&cl), "default", &opts, &mut p, &mut e)
        .await
        .unwrap();
    let t = prev.text();
    assert!(t.contains("[worker-1] Traceback: boom"), "{t}");
    assert!(!t.contains("after"), "{t}");
}

#[tokio::test(flavor = "multi_thread")]
async fn follow_refuses_more_streams_than_allowed() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    create(&cl, tfjob("many", 1, 6, "OnFailure", None)).await;
    let mut opts = ops::logs::LogsOptions::new("many");
    opts.follow = true;
    opts.max_log_requests = Some(5);
    let (mut o, mut e) = (Buf::default(), Buf::default());
    let r = ops::logs::logs(&kube(&cl), "default", &opts, &mut o, &mut e).await;
    match r {
        Err(Error::Usage(m)) => assert_eq!(
            m,
            "you are attempting to follow 7 log streams, but maximum allowed concurrency is 5, use --max-log-requests to increase the limit"
        ),
        other => panic!("{other:?}"),
    }
    assert!(c.requests().iter().all(|r| r.subresource != "log"));
}

/// Issue 48 item 4: a 1 PS + 8 worker job is ordinary; `logs -f` follows all nine without
/// --max-log-requests (kubectl's 5 is for an open selector; the job bounds the streams).
#[tokio::test(flavor = "multi_thread")]
async fn follow_takes_every_replica_of_a_nine_replica_job_by_default() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    create(&cl, tfjob("nine", 0, 9, "OnFailure", None)).await;
    let pods: Vec<String> = (0..9).map(|i| format!("nine-worker-{i}")).collect();
    until("nine running workers", || {
        pods.iter().all(|p| running(&c, p))
    })
    .await;
    let out = Buf::default();
    let mut opts = ops::logs::LogsOptions::new("nine");
    opts.follow = true;
    let (mut o, mut e) = (out.clone(), Buf::default());
    let script = async {
        for (i, p) in pods.iter().enumerate() {
            c.append_log("default", p, "tensorflow", &format!("hello from {i}"));
        }
        until("every replica's line printed", || {
            let t = out.text();
            (0..9).all(|i| t.contains(&format!("[worker-{i}] hello from {i}")))
        })
        .await;
        for p in &pods {
            c.exit_container("default", p, "tensorflow", 0);
        }
    };
    let k = kube(&cl);
    let (res, ()) = tokio::join!(
        ops::logs::logs(&k, "default", &opts, &mut o, &mut e),
        script
    );
    assert_eq!(res.unwrap().finished.as_deref(), Some("Succeeded"));
}

#[tokio::test(flavor = "multi_thread")]
async fn pending_pods_are_named_at_once_and_followed_until_the_timeout() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    // 64 GPUs per pod fit no node.
    create(&cl, tfjob("big", 0, 1, "OnFailure", Some(64))).await;
    until("the scheduler's verdict", || {
        c.get("pods", Some("default"), "big-worker-0")
            .is_some_and(|p| {
                p["status"]["conditions"]
                    .to_string()
                    .contains("Unschedulable")
            })
    })
    .await;
    // Without -f, as `kubectl logs` answers a pod waiting to start: at once (the timeout is
    // far away), exit 3, the pod's reason and the command that waits (issue 61 item 7).
    let mut opts = ops::logs::LogsOptions::new("big");
    opts.timeout = Duration::from_secs(600);
    let (mut o, e) = (Buf::default(), Buf::default());
    let mut e2 = e.clone();
    let r = ops::logs::logs(&kube(&cl), "default", &opts, &mut o, &mut e2).await;
    let Err(Error::NotReady { message, hint }) = r else {
        panic!("{r:?}")
    };
    assert!(
        message.starts_with("no pod of tfjob big has started yet: worker-0 is not running yet (Unschedulable: 0/3 nodes are available"),
        "{message}"
    );
    assert!(
        hint.unwrap_or_default()
            .contains("`kubectl tfjob logs big -n default -f`")
    );
    assert_eq!(o.text(), "", "stdout is data only");
    // With -f it waits for them, up to --timeout.
    opts.follow = true;
    opts.timeout = Duration::from_millis(300);
    let (mut o, e) = (Buf::default(), Buf::default());
    let mut e2 = e.clone();
    let r = ops::logs::logs(&kube(&cl), "default", &opts, &mut o, &mut e2).await;
    assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
    let stderr = e.text();
    assert!(
        stderr.contains("worker-0 is not running yet (Unschedulable: 0/3 nodes are available"),
        "{stderr}"
    );
    assert_eq!(o.text(), "", "stdout is data only");
}

fn requests_since(c: &TestCluster, from: usize) -> Vec<String> {
    c.requests()[from..]
        .iter()
        .map(|r| format!("{} {}", r.verb, r.resource))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn list_requests_do_not_grow_with_the_jobs_and_show_kubectl_columns() {
    let c = TestCluster::start(Scenario::default().with_namespace("team-b"));
    let cl = client(&c).await;
    create(&cl, tfjob("alpha", 1, 2, "OnFailure", Some(1))).await;
    create(&cl, tfjob("stuck", 0, 1, "OnFailure", Some(64))).await;
    let mut other = tfjob("other", 0, 1, "OnFailure", None);
    other["metadata"]["namespace"] = "team-b".into();
    let api: kube::Api<kube::core::DynamicObject> = kube::Api::namespaced_with(
        cl.clone(),
        "team-b",
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("kubeflow.org", "v1", "TFJob"),
            "tfjobs",
        ),
    );
    api.create(&Default::default(), &serde_json::from_value(other).unwrap())
        .await
        .unwrap();
    until("alpha running", || {
        ["alpha-ps-0", "alpha-worker-0", "alpha-worker-1"]
            .iter()
            .all(|p| running(&c, p))
    })
    .await;
    until("stuck unschedulable, with the scheduler's event", || {
        c.get("pods", Some("default"), "stuck-worker-0")
            .is_some_and(|p| {
                p["status"]["conditions"]
                    .to_string()
                    .contains("Unschedulable")
            })
            && c.list("events", Some("default")).iter().any(|e| {
                e["reason"] == "FailedScheduling" && e["involvedObject"]["name"] == "stuck-worker-0"
            })
    })
    .await;
    let run = |opts: ops::list::ListOptions, ns: &'static str| {
        let cl = cl.clone();
        async move {
            let (o, e) = (Buf::default(), Buf::default());
            let (mut o2, mut e2) = (o.clone(), e.clone());
            ops::list::list(&kube(&cl), ns, &opts, &mut o2, &mut e2)
                .await
                .unwrap();
            (o.text(), e.text())
        }
    };
    let before = c.requests().len();
    let (out, _) = run(
        ops::list::ListOptions {
            format: kubectl_tfjob::print::Format::Wide,
            ..Default::default()
        },
        "default",
    )
    .await;
    // A pod waits for a node, so one list of FailedScheduling events says why. PROGRESS reads
    // the recent lines of the first worker of each Running job (`get pods`, the log): one here
    // once the operator has said alpha runs, none before.
    let reqs = requests_since(&c, before);
    let (logs, rest): (Vec<&String>, Vec<&String>) = reqs.iter().partition(|r| *r == "get pods");
    assert_eq!(
        rest,
        ["list tfjobs", "list pods", "list events"],
        "{reqs:?}"
    );
    assert!(logs.len() <= 1, "{reqs:?}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("NAME")
            && lines[0].contains("REPLICAS")
            && lines[0].ends_with("REASON"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("alpha ") && lines[1].contains("PS 1/1 Worker 2/2"),
        "{out}"
    );
    assert!(lines[1].contains("   3   "), "GPUS = 3 pods x 1: {out}");
    assert!(
        lines[2].starts_with("stuck ")
            && lines[2].contains("Worker 0/1")
            // A table cell: the scheduler's first sentence, without its preemption one.
            && lines[2].contains("Worker-0: Unschedulable: 0/3 nodes: 3 Insufficient nvidia.com/gpu")
            && !lines[2].contains("preemption"),
        "{out}"
    );
    assert_eq!(lines.len(), 3);

    // All namespaces: NAMESPACE first, sorted by namespace then name, still the same requests.
    for i in 0..4 {
        create(&cl, tfjob(&format!("more-{i}"), 1, 3, "OnFailure", None)).await;
    }
    // Reconciled first: a job with no condition yet costs one look at the operator (REASON
    // says when nothing reconciles it), whatever the number of such jobs.
    until("the new jobs reconciled", || {
        (0..4).all(|i| {
            c.get("tfjobs", Some("default"), &format!("more-{i}"))
                .is_some_and(|j| {
                    j["status"]["conditions"]
                        .as_array()
                        .is_some_and(|c| !c.is_empty())
                })
        })
    })
    .await;
    let before = c.requests().len();
    let (out, _) = run(
        ops::list::ListOptions {
            all_namespaces: true,
            table: kubectl_tfjob::print::TableFlags {
                no_headers: true,
                ..Default::default()
            },
            ..Default::default()
        },
        "default",
    )
    .await;
    assert_eq!(
        requests_since(&c, before),
        ["list tfjobs", "list pods", "list events"]
    );
    let names: Vec<(&str, &str)> = out
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace();
            (w.next().unwrap(), w.next().unwrap())
        })
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert_eq!(names.len(), 7);
    assert_eq!(names.last().unwrap(), &("team-b", "other"));

    let (out, _) = run(
        ops::list::ListOptions {
            format: kubectl_tfjob::print::Format::Json,
            ..Default::default()
        },
        "default",
    )
    .await;
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "List");
    assert_eq!(v["items"][0]["kind"], "TFJob");
    let (out, _) = run(
        ops::list::ListOptions {
            format: kubectl_tfjob::print::Format::Name,
            selector: Some("nothing=here".into()),
            ..Default::default()
        },
        "default",
    )
    .await;
    assert_eq!(out, "");
    let (out, err) = run(ops::list::ListOptions::default(), "kubeflow").await;
    assert_eq!(
        (out.as_str(), err.as_str()),
        ("", "No resources found in kubeflow namespace.\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_sends_one_delete_per_job_and_waits_for_job_and_pods() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    for n in ["d1", "d2", "keep"] {
        create(&cl, tfjob(n, 1, 2, "OnFailure", None)).await;
    }
    until("pods of d1, d2", || {
        ["d1-worker-1", "d2-worker-1", "keep-worker-1"]
            .iter()
            .all(|p| running(&c, p))
    })
    .await;
    let (out, err) = (Buf::default(), Buf::default());
    let (mut o, mut e) = (out.clone(), err.clone());
    let before = c.requests().len();
    let opts = ops::delete::DeleteOptions {
        names: vec!["d1".into(), "d2".into(), "ghost".into()],
        ..Default::default()
    };
    let r = ops::delete::delete(&kube(&cl), "default", &opts, &mut o, &mut e).await;
    match r {
        Err(e @ Error::NotReady { .. }) => assert_eq!(
            e.to_string(),
            "tfjobs.kubeflow.org \"ghost\" not found in namespace default"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        out.text(),
        "tfjob.kubeflow.org \"d1\" deleted\ntfjob.kubeflow.org \"d2\" deleted\n"
    );
    let deletes: Vec<String> = c.requests()[before..]
        .iter()
        .filter(|r| r.verb == "delete")
        .map(|r| r.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(deletes, ["d1", "d2", "ghost"], "exactly one DELETE per job");
    // It returned only once the jobs and their pods were gone.
    assert!(c.get("tfjobs", Some("default"), "d1").is_none());
    let left: Vec<Value> = c
        .list("pods", Some("default"))
        .into_iter()
        .filter(|p| {
            let j = &p["metadata"]["labels"]["training.kubeflow.org/job-name"];
            j == "d1" || j == "d2"
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(c.get("tfjobs", Some("default"), "keep").is_some());
    assert!(
        err.text().contains("waiting for tfjob/d1 to be deleted"),
        "{}",
        err.text()
    );

    // ignore-not-found, server dry run: nothing deleted, kubectl's suffix.
    let (out, mut e) = (Buf::default(), Buf::default());
    let mut o = out.clone();
    let opts = ops::delete::DeleteOptions {
        names: vec!["keep".into(), "ghost".into()],
        dry_run: ops::delete::DryRun::Server,
        ignore_not_found: true,
        ..Default::default()
    };
    ops::delete::delete(&kube(&cl), "default", &opts, &mut o, &mut e)
        .await
        .unwrap();
    assert_eq!(
        out.text(),
        "tfjob.kubeflow.org \"keep\" deleted (server dry run)\n"
    );
    assert!(c.get("tfjobs", Some("default"), "keep").is_some());
    // Orphan keeps the pods.
    let (mut o, mut e) = (Buf::default(), Buf::default());
    let opts = ops::delete::DeleteOptions {
        all: true,
        cascade: ops::delete::Cascade::Orphan,
        ..Default::default()
    };
    let gone = ops::delete::delete(&kube(&cl), "default", &opts, &mut o, &mut e)
        .await
        .unwrap();
    assert_eq!(gone, ["keep"]);
    let names: Vec<Value> = c
        .list("pods", Some("default"))
        .iter()
        .map(|p| p["metadata"]["name"].clone())
        .collect();
    assert!(
        c.get("pods", Some("default"), "keep-worker-0").is_some(),
        "{names:?}"
    );
    let last = c
        .requests()
        .into_iter()
        .rfind(|r| r.verb == "delete")
        .unwrap();
    let body = last.body.map(|b| b.to_string()).unwrap_or_default();
    assert!(
        body.contains("Orphan") || last.query.contains("Orphan"),
        "{body} {}",
        last.query
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delete_bound_to_a_uid_leaves_a_job_re_created_under_the_name() {
    // What `wait --delete-on-failure` sends: the uid of the job it followed. The job under the
    // name now is another instance; it must stay (issue 47, item 2).
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    create(&cl, tfjob("again", 0, 1, "OnFailure", None)).await;
    let (mut o, mut e) = (Buf::default(), Buf::default());
    let opts = ops::delete::DeleteOptions {
        names: vec!["again".into()],
        uid: Some("uid-of-the-job-that-failed".into()),
        wait: false,
        ..Default::default()
    };
    let before = c.requests().len();
    let _ = ops::delete::delete(&kube(&cl), "default", &opts, &mut o, &mut e).await;
    assert!(
        c.get("tfjobs", Some("default"), "again").is_some(),
        "the re-created job was deleted"
    );
    let deletes: Vec<_> = c.requests()[before..]
        .iter()
        .filter(|r| r.verb == "delete")
        .map(|r| r.body.clone())
        .collect();
    assert_eq!(deletes.len(), 1);
    assert!(
        format!("{:?}", deletes[0]).contains("uid-of-the-job-that-failed"),
        "the DELETE carries the uid precondition: {deletes:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn suspend_and_resume_patch_run_policy_and_say_what_happens_to_pods() {
    let c = TestCluster::start(Scenario::default());
    let cl = client(&c).await;
    create(&cl, tfjob("sus", 0, 2, "OnFailure", None)).await;
    until("running", || running(&c, "sus-worker-1")).await;
    let (out, err) = (Buf::default(), Buf::default());
    let (mut o, mut e) = (out.clone(), err.clone());
    let opts = ops::suspend::SuspendOptions {
        name: "sus".into(),
        action: ops::suspend::SuspendAction::Suspend,
        wait: false,
        uid: None,
    };
    ops::suspend::set_suspend(&kube(&cl), "default", &opts, &mut o, &mut e)
        .await
        .unwrap();
    assert_eq!(out.text(), "tfjob.kubeflow.org/sus suspended\n");
    assert!(err.text().contains("deletes every pod and service"));
    assert_eq!(
        c.get("tfjobs", Some("default"), "sus").unwrap()["spec"]["runPolicy"]["suspend"],
        true
    );
    until("pods deleted by the operator", || {
        c.get("pods", Some("default"), "sus-worker-0").is_none()
    })
    .await;
    let opts = ops::suspend::SuspendOptions {
        name: "sus".into(),
        action: ops::suspend::SuspendAction::Resume,
        wait: false,
        uid: None,
    };
    let (out, mut e) = (Buf::default(), Buf::default());
    let mut o = out.clone();
    ops::suspend::set_suspend(&kube(&cl), "default", &opts, &mut o, &mut e)
        .await
        .unwrap();
    assert_eq!(out.text(), "tfjob.kubeflow.org/sus resumed\n");
    until("pods back", || running(&c, "sus-worker-0")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn suspend_refuses_a_crd_without_the_field_and_writes_nothing() {
    let mut crd = tfjob_testcluster::builtin_tfjob_crd();
    for v in crd["spec"]["versions"].as_array_mut().unwrap() {
        let rp = &mut v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["runPolicy"]
            ["properties"];
        rp.as_object_mut().unwrap().remove("suspend");
    }
    let c = TestCluster::start(Scenario::default().with_crd(crd));
    let cl = client(&c).await;
    create(&cl, tfjob("old", 0, 1, "OnFailure", None)).await;
    let (mut o, mut e) = (Buf::default(), Buf::default());
    let opts = ops::suspend::SuspendOptions {
        name: "old".into(),
        action: ops::suspend::SuspendAction::Suspend,
        wait: false,
        uid: None,
    };
    let before = c.writes().len();
    let r = ops::suspend::set_suspend(&kube(&cl), "default", &opts, &mut o, &mut e).await;
    match r {
        Err(e @ Error::NotReady { .. }) => {
            assert!(e.to_string().contains("no spec.runPolicy.suspend"), "{e}");
            assert!(e.hint().unwrap().contains("v1.7"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.writes().len(), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn get_shows_replicas_as_kubectl_does_secret_refs_without_values_and_raw_json() {
    let c = TestCluster::start(Scenario::default().with_object(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "gw", "namespace": "default"},
        "stringData": {"api-key": "sk-very-secret"}
    })));
    let cl = client(&c).await;
    let mut job = tfjob("g", 1, 2, "OnFailure", None);
    for role in ["PS", "Worker"] {
        job["spec"]["tfReplicaSpecs"][role]["template"]["spec"]["containers"][0]["env"] = json!([
            {"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef": {"name": "gw", "key": "api-key"}}},
            {"name": "TAOTOKEN_BASE_URL", "value": "https://taotoken.net/api"}
        ]);
    }
    create(&cl, job).await;
    until("running", || {
        ["g-ps-0", "g-worker-0", "g-worker-1"]
            .iter()
            .all(|p| running(&c, p))
    })
    .await;
    let (out, mut e) = (Buf::default(), Buf::default());
    let mut o = out.clone();
    let before = c.requests().len();
    ops::get::get(
        &kube(&cl),
        "default",
        &ops::get::GetOptions::new("g"),
        &mut o,
        &mut e,
    )
    .await
    .unwrap();
    let n_small = c.requests().len() - before;
    let text = out.text();
    assert!(text.contains("Replicas:   PS 1/1 Worker 2/2"), "{text}");
    for p in ["g-ps-0", "g-worker-0", "g-worker-1"] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(p))
            .unwrap();
        assert!(line.contains(" Running ") && line.contains("1/1"), "{line}");
        let node = c.get("pods", Some("default"), p).unwrap()["spec"]["nodeName"].clone();
        assert!(line.ends_with(node.as_str().unwrap()), "{line}");
    }
    assert!(
        text.contains("Worker/tensorflow: TAOTOKEN_API_KEY <- secret gw key api-key"),
        "{text}"
    );
    assert!(!text.contains("sk-very-secret"));
    assert!(text.contains("TF_CONFIG: cluster { ps: 1 (g-ps-0.default.svc:2222); worker: 2 (g-worker-0.default.svc:2222, …) }"), "{text}");
    assert!(text.contains("g-worker-1   None"), "services: {text}");
    assert!(text.contains("Created"), "{text}");

    // Requests grow with the job's pods only (each pod's events, as `kubectl describe pod`
    // reads them, at most cluster::events::MAX_PODS), never with the namespace.
    create(&cl, tfjob("g6", 1, 6, "OnFailure", None)).await;
    until("g6 pods", || running(&c, "g6-worker-5")).await;
    let before = c.requests().len();
    let (mut o, mut e) = (Buf::default(), Buf::default());
    ops::get::get(
        &kube(&cl),
        "default",
        &ops::get::GetOptions::new("g6"),
        &mut o,
        &mut e,
    )
    .await
    .unwrap();
    assert_eq!(
        n_small,
        4 + 3 + 2 + 1,
        "job, pods, services, the job's events, 3 pods' events, 2 workers' recent lines, \
         the Secret its pods read (its values armed in the redactor)"
    );
    assert_eq!(
        c.requests().len() - before,
        4 + 7 + 6,
        "7 pods' events, 6 workers' recent lines (at most 8)"
    );

    let (out, mut e) = (Buf::default(), Buf::default());
    let mut o = out.clone();
    let mut opts = ops::get::GetOptions::new("g");
    opts.format = kubectl_tfjob::print::Format::Json;
    ops::get::get(&kube(&cl), "default", &opts, &mut o, &mut e)
        .await
        .unwrap();
    let printed: Value = serde_json::from_str(&out.text()).unwrap();
    let stored = c.get("tfjobs", Some("default"), "g").unwrap();
    assert_eq!(printed["spec"], stored["spec"]);
    assert_eq!(printed["metadata"]["uid"], stored["metadata"]["uid"]);
}
