//! What a command reads costs what the job holds, not what the cluster holds (issue 25). Each
//! command runs twice: against a small cluster, and against the same cluster crowded with
//! objects that are not the job's (thousands of Deployments, terminal pods, Services, events
//! about other pods, other namespaces' TFJobs, tainted nodes). Its requests and the bytes of
//! every whole response are counted from the test cluster's log, and must not grow.
//!
//! A test binary of its own: the crowded cluster lives in the test's process, and the e2e
//! binary's hostile-input test reads its children's peak RSS through `wait4`, which counts the
//! parent's resident pages at the spawn.

use std::process::Command;

use serde_json::{Value, json};
use tfjob_testcluster::{Request, Scenario, TestCluster};

const TEST_KEY: &str = "sk-cost-test-key-0123-4567-89ab";

/// The article's job: 1 PS and 3 one-GPU workers (tests/e2e/submit.rs `ARTICLE`).
const ARTICLE: &str = "--name tf-dist-train --image tensorflow/tensorflow:2.13.0-gpu --ps 1 \
    --workers 3 --gpus 1 --cpu 4 --memory 8Gi -- python -m trainer.task";

fn args(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs the binary against `c`, asserting its exit code and that the key never shows.
fn tfjob(c: &TestCluster, argv: &[&str], code: i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", std::env::temp_dir().join("kubectl-tfjob-cost-home"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(argv)
        .output()
        .expect("run kubectl-tfjob");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(code), "{argv:?}\n{all}");
    assert!(!all.contains(TEST_KEY), "the key leaked:\n{all}");
}

/// Objects in the crowd of each kind.
const CROWD: usize = 1500;
/// Tainted nodes in the crowd: fewer than check's page of 500, so its node list stays one
/// request; their bytes are the placement model's input and are left out of check's count.
const CROWD_NODES: usize = 300;

fn node(name: &str, taint: bool) -> Value {
    let mut n = json!({"name": name, "cpu": "16", "memory": "64Gi", "gpu": 4});
    if taint {
        n["taints"] = json!([{"key": "crowd", "value": "yes", "effect": "NoSchedule"}]);
    }
    n
}

fn scenario(crowded: bool) -> TestCluster {
    let mut nodes: Vec<Value> = (1..=3).map(|i| node(&format!("node-{i}"), false)).collect();
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "taotoken-secret", "namespace": "default"},
        "stringData": {"api-key": TEST_KEY}}),
    ];
    if crowded {
        nodes.extend((0..CROWD_NODES).map(|i| node(&format!("crowd-{i:04}"), true)));
        for i in 0..CROWD {
            // Other teams' apps, here and in the operator's namespace (not the operator).
            let ns = if i % 10 == 0 { "kubeflow" } else { "crowd" };
            objects.push(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": format!("app-{i:04}"), "namespace": ns, "labels": {"app": format!("app-{i:04}")}},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": format!("app-{i:04}")}},
                    "template": {"metadata": {"labels": {"app": format!("app-{i:04}")}},
                        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
                "status": {"replicas": 1, "readyReplicas": 1}}));
            // Finished pods, bound to the job's nodes, in the job's namespace and another.
            let ns = if i % 2 == 0 { "default" } else { "crowd" };
            let phase = if i % 3 == 0 { "Failed" } else { "Succeeded" };
            objects.push(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("done-{i:04}"), "namespace": ns, "labels": {"app": "batch"}},
                "spec": {"nodeName": format!("node-{}", 1 + i % 3), "containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
                "status": {"phase": phase}}));
            objects.push(json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": format!("svc-{i:04}"), "namespace": "crowd"},
                "spec": {"ports": [{"port": 80}]}}));
            // Events about other pods in the job's namespace.
            objects.push(json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": format!("done-{i:04}.1"), "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": format!("done-{i:04}"), "namespace": "default"},
                "reason": "Pulled", "message": "Container image \"busybox\" already present on machine",
                "type": "Normal", "count": 1, "source": {"component": "kubelet"}}));
        }
        for i in 0..100 {
            objects.push(json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "metadata": {"name": format!("other-{i:03}"), "namespace": "crowd"},
                "spec": {"runPolicy": {"suspend": true}, "tfReplicaSpecs": {"Worker": {"replicas": 2,
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:1"}]}}}}}}));
        }
    }
    // A gateway that takes the pods' key: `diagnose` looks inside the pods by default, and its
    // in-pod reads are counted with the rest.
    let s = json!({"namespaces": ["default", "kubeflow", "crowd"], "nodes": nodes,
        "objects": objects, "gatewayKey": TEST_KEY});
    TestCluster::start(Scenario::from_json(&s.to_string()).expect("scenario parses"))
}

/// What one command cost: its reads of whole responses (as `VERB path?query`, for the message)
/// and their bytes, the node list left out for the commands that place the job; and its watches.
/// A watch is a stream whose content its selector bounds; whether a waiter's watch reached the
/// server before the waiter had its answer is timing, so watches are checked, not counted.
#[derive(Debug)]
struct Cost {
    requests: Vec<String>,
    bytes: u64,
    watches: Vec<String>,
}

fn cost(c: &TestCluster, placement: bool) -> Cost {
    let reqs: Vec<Request> = c.requests();
    let line = |r: &Request| format!("{} {}?{}", r.verb, r.path, r.query);
    let (watches, reads): (Vec<&Request>, Vec<&Request>) =
        reqs.iter().partition(|r| r.verb == "watch");
    let counted = |r: &&&Request| !(placement && r.resource == "nodes" && r.name.is_none());
    Cost {
        requests: reads.iter().map(|r| line(r)).collect(),
        bytes: reads
            .iter()
            .filter(counted)
            .filter_map(|r| r.response_bytes)
            .sum(),
        watches: watches.iter().map(|r| line(r)).collect(),
    }
}

/// Runs the day's commands on one cluster, returning each one's cost.
fn day(c: &TestCluster) -> Vec<(&'static str, Cost)> {
    let mut out = Vec::new();
    let mut step = |name: &'static str, argv: &[&str], code: i32, placement: bool| {
        c.clear_requests();
        tfjob(c, argv, code);
        out.push((name, cost(c, placement)));
    };
    step("check", &args(&format!("check {ARTICLE}")), 0, true);
    step("submit", &args(&format!("submit {ARTICLE}")), 0, true);
    // Every replica running and the operator's Running written first, so what follows reads a
    // settled job (a waiter that has to watch for the condition makes another request).
    assert!(c.wait_for(std::time::Duration::from_secs(60), |c| {
        let running = c
            .list("pods", Some("default"))
            .iter()
            .filter(|p| {
                p["metadata"]["labels"]["training.kubeflow.org/job-name"] == "tf-dist-train"
                    && p["status"]["phase"] == "Running"
                    && p["status"]["containerStatuses"][0]["state"]["running"].is_object()
            })
            .count();
        let condition = c
            .get("tfjobs", Some("default"), "tf-dist-train")
            .is_some_and(|j| {
                j["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Running" && c["status"] == "True")
            });
        running == 4 && condition
    }));
    step(
        "wait",
        &args("wait tf-dist-train --settle 0 --timeout 60s"),
        0,
        false,
    );
    step("get", &args("get tf-dist-train"), 0, false);
    step("list", &args("list"), 0, false);
    step("diagnose", &args("diagnose tf-dist-train"), 0, false);
    step("logs", &args("logs tf-dist-train"), 0, false);
    out
}

#[test]
fn what_a_command_reads_does_not_grow_with_what_is_not_the_jobs() {
    let small = day(&scenario(false));
    let crowded_cluster = scenario(true);
    // The crowd is there to be read (with the operator's Deployment): a cluster-wide list of it is
    // megabytes.
    let all_deployments = crowded_cluster.list("deployments", None).len();
    assert!(all_deployments > CROWD, "the crowd was not seeded");
    let large = day(&crowded_cluster);
    for ((name, s), (_, l)) in small.iter().zip(&large) {
        eprintln!(
            "{name:<9} small: {:>3} requests {:>8} bytes   crowded: {:>3} requests {:>8} bytes",
            s.requests.len(),
            s.bytes,
            l.requests.len(),
            l.bytes
        );
        assert_eq!(
            s.requests.len(),
            l.requests.len(),
            "{name}: requests grew with the crowd\nsmall: {:#?}\ncrowded: {:#?}",
            s.requests,
            l.requests
        );
        for w in &l.watches {
            assert!(
                w.contains("labelSelector=") || w.contains("fieldSelector="),
                "{name}: a watch of everything: {w}"
            );
        }
        // Resource versions have more digits on the crowded cluster; nothing else may differ.
        assert!(
            l.bytes <= s.bytes + s.bytes / 10 + 2048,
            "{name}: read {} bytes on the crowded cluster, {} on the small one\n{:#?}",
            l.bytes,
            s.bytes,
            l.requests
        );
    }
}
