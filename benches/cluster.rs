//! Benchmarks against the project's test cluster, side by side with the tools users have today.
//! Run with `bench/run.sh` (which installs what they need); not part of CI.
//!
//! - `latency`: time from the Running condition being written to the waiter exiting, for
//!   `kubectl tfjob wait` and `kubectl wait --for=condition=Running` (`$KUBECTL`, default
//!   `kubectl`; several kubectls separated by `:`, each compared in its own alternating series),
//!   reported as medians and their ratio.
//! - `scale`: following a job with N workers to all-running: API requests made, peak RSS and
//!   CPU time of the process (GNU time), for N in `$BENCH_SCALE` (default 10,100,1000,2000).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tfjob_testcluster::{Scenario, TestCluster};

/// The binary measured: `$KUBECTL_TFJOB` (bench/run.sh passes the shipped release build, since
/// the bench profile cannot use the release profile's `panic = "abort"`), else cargo's.
fn bin() -> String {
    std::env::var("KUBECTL_TFJOB").unwrap_or_else(|_| env!("CARGO_BIN_EXE_kubectl-tfjob").into())
}

fn job(name: &str, workers: u32) -> serde_json::Value {
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}}}}
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// One waiter's run: the time from the condition's write to its exit, and the requests it made
/// after the write (the audit: nothing but what the user asked for once the answer is known).
struct Waited {
    latency: Duration,
    after: Vec<String>,
}

/// Starts a waiter, waits until its watch on the job is open, writes Running, and returns the
/// time from that write to the waiter's exit with the requests that reached the API server after
/// the write (the test cluster's own controllers make none over HTTP, so they are the waiter's).
fn one_latency(c: &TestCluster, name: &str, mut waiter: Command) -> Option<Waited> {
    c.insert(job(name, 1));
    let before = c.requests().len();
    let mut child = waiter
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the waiter");
    let watching = c.wait_for(Duration::from_secs(20), |c| {
        c.requests()[before..]
            .iter()
            .any(|r| r.verb == "watch" && r.resource == "tfjobs" && r.query.contains(name))
    });
    if !watching {
        let _ = child.kill();
        let _ = child.wait();
        eprintln!("  {name}: the waiter never opened a watch");
        return None;
    }
    // Let the watch stream settle so we measure event delivery, not connection setup.
    std::thread::sleep(Duration::from_millis(150));
    let written = c.write_tfjob_condition(
        "default",
        name,
        "Running",
        "True",
        "TFJobRunning",
        &format!("TFJob default/{name} is running."),
    );
    let status = child.wait().expect("waiter exits");
    let written = written?;
    let elapsed = written.elapsed();
    let after = c.requests()[before..]
        .iter()
        .filter(|r| r.at >= written)
        .map(|r| format!("{} {}?{}", r.verb, r.path, r.query))
        .collect();
    status.success().then_some(Waited {
        latency: elapsed,
        after,
    })
}

fn latency(runs: usize, kubectl: &str) {
    let c = TestCluster::start(Scenario::from_yaml("operator: installed").unwrap());
    let kubeconfig = c.kubeconfig().to_str().unwrap().to_string();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut ours_after, mut theirs_after) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let name = format!("lat-ours-{i}");
        let mut cmd = Command::new(bin());
        cmd.args([
            "--kubeconfig",
            &kubeconfig,
            "wait",
            &name,
            // The same condition kubectl waits for; the operator here is written by hand
            // (installed, 0 ready), so the waiter is told to wait for it.
            "--for",
            "running",
            "--pending-timeout",
            "60s",
            "--timeout",
            "60s",
        ]);
        if let Some(w) = one_latency(&c, &name, cmd) {
            ours.push(w.latency.as_secs_f64() * 1000.0);
            ours_after.extend(w.after);
        }
        let name = format!("lat-kubectl-{i}");
        let mut cmd = Command::new(kubectl);
        cmd.args([
            "--kubeconfig",
            &kubeconfig,
            "wait",
            "--for=condition=Running",
            &format!("tfjob/{name}"),
            "--timeout=60s",
        ]);
        if let Some(w) = one_latency(&c, &name, cmd) {
            theirs.push(w.latency.as_secs_f64() * 1000.0);
            theirs_after.extend(w.after);
        }
    }
    println!("latency: Running condition written → waiter exited ({runs} runs each, alternating)");
    for (label, v) in [("kubectl tfjob wait", &ours), (kubectl, &theirs)] {
        if v.is_empty() {
            println!("  {label:<22} no successful run");
            continue;
        }
        println!(
            "  {label:<22} median {:7.1} ms   p90 {:7.1} ms   min {:6.1} ms   n={}",
            median(v.clone()),
            percentile(v.clone(), 0.9),
            v.iter().cloned().fold(f64::MAX, f64::min),
            v.len()
        );
    }
    if !ours.is_empty() && !theirs.is_empty() {
        println!(
            "  ratio (kubectl tfjob wait / {kubectl}): {:.2}",
            median(ours.clone()) / median(theirs.clone())
        );
    }
    // The audit: what each waiter asked of the API server once the condition was written.
    for (label, n, after) in [
        ("kubectl tfjob wait", ours.len(), &ours_after),
        (kubectl, theirs.len(), &theirs_after),
    ] {
        let mut shown: Vec<&String> = after.iter().collect();
        shown.sort();
        shown.dedup();
        println!(
            "  audit {label:<22} requests after the condition was written: {} in {n} runs{}",
            after.len(),
            if shown.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    shown
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            }
        );
    }
}

fn scale(sizes: &[u32]) {
    println!("scale: follow a job to all-running (requests, peak RSS, CPU time of the waiter)");
    println!(
        "  {:>7} {:>9} {:>12} {:>10} {:>10}",
        "workers", "requests", "peak RSS", "CPU", "wall"
    );
    for &n in sizes {
        let scenario = Scenario::from_yaml(
            "nodes:\n- {name: big, cpu: '100000', memory: 100000Gi, gpu: 100000, pods: 100000}\ntiming: {reconcileMs: 1, scheduleMs: 1, pullMs: 1, startMs: 1}",
        )
        .unwrap();
        let c = TestCluster::start(scenario);
        let name = format!("scale-{n}");
        c.insert(job(&name, n));
        let ready = c.wait_for(Duration::from_secs(600), |c| {
            c.list("pods", Some("default"))
                .iter()
                .filter(|p| p["status"]["phase"] == "Running")
                .count()
                >= n as usize
        });
        if !ready {
            println!("  {n:>7} the test cluster did not start all pods in time");
            continue;
        }
        c.clear_requests();
        let started = Instant::now();
        let out = Command::new("/usr/bin/time")
            .args(["-f", "%M %U %S", &bin(), "--kubeconfig"])
            .arg(c.kubeconfig())
            .args([
                "wait",
                &name,
                "--for",
                "all-running",
                "--settle",
                "0",
                "--timeout",
                "300s",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("GNU time is installed (apt-get install time)");
        let wall = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().last().unwrap_or_default();
        let f: Vec<f64> = last
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        let (rss_kb, cpu) = match f.as_slice() {
            [rss, user, sys] => (*rss, user + sys),
            _ => (f64::NAN, f64::NAN),
        };
        println!(
            "  {n:>7} {:>9} {:>9.1} MB {:>8.2} s {:>8.2} s{}",
            c.requests().len(),
            rss_kb / 1024.0,
            cpu,
            wall.as_secs_f64(),
            if out.status.success() {
                ""
            } else {
                "  (wait failed)"
            }
        );
    }
}

fn main() {
    let what = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let runs = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let kubectls: Vec<&str> = kubectl.split(':').filter(|k| !k.is_empty()).collect();
    let latencies = || {
        for k in &kubectls {
            latency(runs, k);
        }
    };
    let sizes: Vec<u32> = std::env::var("BENCH_SCALE")
        .unwrap_or_else(|_| "10,100,1000,2000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    match what.as_deref() {
        Some("latency") => latencies(),
        Some("scale") => scale(&sizes),
        _ => {
            latencies();
            scale(&sizes);
        }
    }
}
