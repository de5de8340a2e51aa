//! `probe`: the article's job (1 PS + 3 workers) on the test cluster, probed from inside its
//! pods over `pods/exec` (WebSocket), then one in-pod failure at a time. The key must appear in
//! no output and in no exec command the test cluster logged.

use serde_json::Value;
use tfjob_testcluster::TestCluster;

use crate::submit::{SECRET, submit_args};
use crate::{HOSTILE_KEYS, TEST_KEY, args, cluster, key_runs, test_key_b64, tfjob};

const OTHER_KEY: &str = "sk-e2e-rotated-key-ffff-eeee-dddd";

/// A cluster whose gateway accepts `gateway_key`, with the article's job running (every
/// replica Running and Ready).
fn running_job(gateway_key: &str, extra: &str) -> TestCluster {
    running_job_ending(
        gateway_key,
        extra,
        if gateway_key == TEST_KEY { 0 } else { 4 },
    )
}

/// As [`running_job`], with the exit `submit --wait` is expected to end with: it looks inside
/// the pods before "condition met" (issue 61 item 4), so a gateway that rejects the stored key
/// or a worker that sees no GPU ends it with 4, every replica still running.
fn running_job_ending(gateway_key: &str, extra: &str, submit_exit: i32) -> TestCluster {
    let c = cluster(&format!(
        "gatewayKey: {gateway_key}\n{extra}objects:{SECRET}"
    ));
    let submit = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--timeout", "60s"]),
    );
    submit.exit(submit_exit);
    if gateway_key != TEST_KEY {
        assert!(submit.stderr.contains("401"), "{}", submit.all());
    }
    c
}

/// Waits until every replica pod of the job is Running and Ready (after an insert).
fn all_ready(c: &TestCluster, n: usize) {
    let ready = c.wait_for(std::time::Duration::from_secs(30), |c| {
        c.list("pods", Some("default"))
            .iter()
            .filter(|p| {
                p["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
            .count()
            == n
    });
    assert!(ready, "the job's {n} pods did not become Ready");
}

/// The article's job, running, whose pods got a base URL ending in `/v1` (the SDK adds another).
fn running_with_doubled_v1() -> TestCluster {
    let c = cluster(&format!("gatewayKey: {TEST_KEY}\nobjects:{SECRET}"));
    crate::stored(&c, |job| {
        for role in ["PS", "Worker"] {
            let env =
                job["spec"]["tfReplicaSpecs"][role]["template"]["spec"]["containers"][0]["env"]
                    .as_array_mut()
                    .unwrap();
            for e in env.iter_mut() {
                if e["name"] == "TAOTOKEN_BASE_URL" {
                    e["value"] = "https://taotoken.net/api/v1".into();
                }
            }
        }
    });
    all_ready(&c, 4);
    c
}

fn no_key_in_exec_commands(c: &TestCluster) {
    let execs: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.subresource == "exec")
        .collect();
    assert!(!execs.is_empty(), "probe ran no exec");
    for r in &execs {
        assert!(
            !r.query.contains(TEST_KEY) && !r.query.contains(OTHER_KEY),
            "{}",
            r.query
        );
        assert!(!r.query.contains(&test_key_b64()), "{}", r.query);
    }
}

fn probe_json(c: &TestCluster) -> (i32, Value, String) {
    let run = tfjob(c, &args("probe tf-dist-train -o json"));
    let v: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("-o json is JSON ({e}):\n{}\n{}", run.stdout, run.stderr));
    assert!(!run.all().contains(OTHER_KEY));
    (run.code, v, run.stderr)
}

#[test]
fn the_articles_job_passes_every_check_from_every_replica() {
    let c = running_job(TEST_KEY, "");
    let (code, v, stderr) = probe_json(&c);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(v["ok"], true);
    let replicas = v["replicas"].as_array().unwrap();
    let names: Vec<&str> = replicas
        .iter()
        .map(|r| r["replica"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["PS-0", "Worker-0", "Worker-1", "Worker-2"]);
    for r in replicas {
        assert_eq!(r["probed"], true, "{r:#}");
        assert_eq!(r["tfConfig"]["status"], "pass", "{r:#}");
        let peers = r["peers"].as_array().unwrap();
        assert_eq!(peers.len(), 4, "{r:#}");
        assert!(peers.iter().all(|p| p["status"] == "pass"), "{r:#}");
        assert_eq!(r["gateway"]["status"], "pass", "{r:#}");
    }
    assert!(
        v["verdict"]
            .as_str()
            .unwrap()
            .starts_with("ok: 4/4 replicas"),
        "{v:#}"
    );
    // The text report (issue 48 item 5): healthy is the verdict and what to run next; the
    // blocks and the matrix with -o wide, or -v.
    let text = tfjob(&c, &args("probe tf-dist-train"));
    text.exit(0);
    // The next command carries the connection flags the user gave (issue 61 item 2).
    assert_eq!(
        text.stdout,
        format!(
            "ok: 4/4 replicas see their TF_CONFIG and reach their peers and the gateway\nnext: `kubectl tfjob probe tf-dist-train --kubeconfig {} -o wide` (every replica's checks and the peer matrix)\n",
            c.kubeconfig().display()
        )
    );
    for wide in ["probe tf-dist-train -o wide", "probe tf-dist-train -v"] {
        let text = tfjob(&c, &args(wide));
        text.exit(0);
        assert!(
            text.stdout.starts_with("ok: 4/4 replicas"),
            "{}",
            text.stdout
        );
        text.stdout_has("\nWorker-2 (pod tf-dist-train-worker-2): Running\n");
        text.stdout_has("Peers (from ↓, to →)");
    }
    no_key_in_exec_commands(&c);
}

#[test]
fn a_key_rotated_after_the_pods_started_says_restart_the_job() {
    // The gateway takes only the new key; the pods started with the old one, then the Secret
    // was updated.
    let c = running_job(OTHER_KEY, "");
    let mut secret = c
        .get("secrets", Some("default"), "taotoken-secret")
        .unwrap();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(OTHER_KEY);
    secret["data"] = serde_json::json!({"api-key": b64});
    secret.as_object_mut().unwrap().remove("stringData");
    c.insert(secret);
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 4, "{v:#}");
    let verdict = v["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("PS-0: "), "{verdict}");
    assert!(
        verdict.contains("401") && verdict.contains("restart the job"),
        "{verdict}"
    );
    // The text report collapses the four replicas' same failure into one line naming them.
    let text = tfjob(&c, &args("probe tf-dist-train"));
    text.exit(4);
    let gateway: Vec<&str> = text
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("gateway"))
        .collect();
    assert_eq!(gateway.len(), 1, "{}", text.stdout);
    assert!(
        gateway[0].ends_with("(PS-0, Worker-0, Worker-1, Worker-2)"),
        "{}",
        text.stdout
    );
    no_key_in_exec_commands(&c);
}

#[test]
fn a_base_url_ending_in_v1_is_the_doubled_v1() {
    let c = running_with_doubled_v1();
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 4, "{v:#}");
    let verdict = v["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("404") && verdict.contains("ends in /v1"),
        "{verdict}"
    );
}

#[test]
fn a_deleted_headless_service_is_named_from_every_replica() {
    let c = running_job(TEST_KEY, "");
    // Nothing recreates it: the operator stops reconciling first.
    c.set_operator_mode(tfjob_testcluster::OperatorMode::Installed);
    c.delete("services", Some("default"), "tf-dist-train-worker-1");
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 4, "{v:#}");
    let verdict = v["verdict"].as_str().unwrap();
    // A column that fails from every replica is the target's fault, named as such (issue 46),
    // not the first source's.
    assert!(
        verdict.starts_with("Worker-1: not reachable from any replica ")
            && verdict.contains("headless Service tf-dist-train-worker-1 is missing"),
        "{verdict}"
    );
    for r in v["replicas"].as_array().unwrap() {
        let to_w1 = r["peers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| {
                p["to"]
                    .as_str()
                    .unwrap()
                    .starts_with("tf-dist-train-worker-1.")
            })
            .unwrap();
        assert_eq!(to_w1["resolve"], "nxdomain", "{r:#}");
    }
}

#[test]
fn a_process_on_another_port_than_tf_config_says_is_refused_and_named() {
    let c = running_job(TEST_KEY, "");
    c.set_operator_mode(tfjob_testcluster::OperatorMode::Installed);
    // worker-2's container now listens on 2223 only (its declared port), while TF_CONFIG and
    // the Service still say 2222.
    let mut pod = c
        .get("pods", Some("default"), "tf-dist-train-worker-2")
        .unwrap();
    pod["spec"]["containers"][0]["ports"] =
        serde_json::json!([{"name": "tfjob-port", "containerPort": 2223}]);
    c.insert(pod);
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 4, "{v:#}");
    let verdict = v["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("connection refused")
            && verdict.contains("port 2222")
            && verdict.contains("2223"),
        "{verdict}"
    );
}

#[test]
fn an_istio_sidecar_is_named_with_the_annotation_that_keeps_it_out() {
    let c = cluster(&format!("gatewayKey: {TEST_KEY}\nobjects:{SECRET}"));
    crate::stored(&c, |job| {
        let spec = &mut job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
        spec["containers"].as_array_mut().unwrap().push(
            serde_json::json!({"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.22.0"}),
        );
    });
    all_ready(&c, 4);
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 4, "{v:#}");
    let verdict = v["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("Worker-0: ")
            && verdict.contains("istio")
            && verdict.contains("sidecar.istio.io/inject"),
        "{verdict}"
    );
}

#[test]
fn an_image_without_shell_or_python_is_not_checked_never_passed() {
    let c = running_job(TEST_KEY, "imageTools: [{image: tensorflow, tools: []}]\n");
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 3, "{v:#}");
    assert_eq!(v["ok"], false);
    let verdict = v["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("not checked") && verdict.contains("no shell"),
        "{verdict}"
    );
}

#[test]
fn an_image_without_python_is_checked_with_its_shell_tools() {
    // No python3: sh with getent (names), bash's /dev/tcp under timeout (connects), curl (the
    // gateway, its key on curl's stdin) and sha256sum (the key's fingerprint).
    let c = running_job(
        TEST_KEY,
        "imageTools: [{image: tensorflow, tools: [sh, getent, bash, timeout, curl, sha256sum]}]\n",
    );
    let (code, v, stderr) = probe_json(&c);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    for r in v["replicas"].as_array().unwrap() {
        assert_eq!(r["tfConfig"]["status"], "pass", "{r:#}");
        let peers = r["peers"].as_array().unwrap();
        assert_eq!(peers.len(), 4, "{r:#}");
        assert!(peers.iter().all(|p| p["status"] == "pass"), "{r:#}");
        assert_eq!(r["gateway"]["status"], "pass", "{r:#}");
    }
    // The chat completion too, through curl.
    let run = tfjob(
        &c,
        &args("probe tf-dist-train --gateway-chat test-model -o json"),
    );
    run.exit(0);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["replicas"][0]["gatewayChat"]["status"], "pass", "{v:#}");
    // The checks ran under sh, and no exec carried the key.
    assert!(
        c.requests()
            .iter()
            .filter(|r| r.subresource == "exec")
            .any(|r| r.query.starts_with("command=sh&") || r.query.contains("&command=sh&")),
        "no exec ran sh"
    );
    no_key_in_exec_commands(&c);
}

#[test]
fn an_image_with_a_shell_only_says_which_tool_each_check_lacks() {
    let c = running_job(TEST_KEY, "imageTools: [{image: tensorflow, tools: [sh]}]\n");
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 3, "{v:#}");
    assert_eq!(v["ok"], false);
    for r in v["replicas"].as_array().unwrap() {
        // TF_CONFIG is read with the shell alone.
        assert_eq!(r["tfConfig"]["status"], "pass", "{r:#}");
        assert_eq!(r["peersCheck"]["status"], "notChecked", "{r:#}");
        assert!(
            r["peersCheck"]["detail"]
                .as_str()
                .unwrap()
                .contains("the image has no getent"),
            "{r:#}"
        );
        assert_eq!(r["gateway"]["status"], "notChecked", "{r:#}");
        assert!(
            r["gateway"]["detail"]
                .as_str()
                .unwrap()
                .contains("the image has no curl"),
            "{r:#}"
        );
    }
    let verdict = v["verdict"].as_str().unwrap();
    assert!(verdict.contains("not checked"), "{verdict}");
}

#[test]
fn exec_forbidden_is_one_line_naming_the_verb() {
    let c = running_job(TEST_KEY, "rbac: {deny: [{verb: create, resource: pods}]}\n");
    let run = tfjob(&c, &args("probe tf-dist-train"));
    run.exit(3);
    run.stdout_has("create pods/exec");
}

#[test]
fn real_kubectl_exec_works_against_the_test_cluster() {
    let Some(kubectl) = crate::printers::kubectl_1_36() else {
        eprintln!("skipped: no kubectl 1.36 (tests/cluster/install-kubectl-1.36.sh)");
        return;
    };
    let c = running_job(TEST_KEY, "");
    let out = std::process::Command::new(kubectl)
        .args(["--kubeconfig"])
        .arg(c.kubeconfig())
        .args([
            "exec",
            "tf-dist-train-worker-1",
            "-c",
            "tensorflow",
            "--",
            "printenv",
            "TF_CONFIG",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tf: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tf["task"]["type"], "worker");
    assert_eq!(tf["task"]["index"], 1);
    // A command that fails says its exit code, as kubectl prints it.
    let out = std::process::Command::new(crate::printers::kubectl_1_36().unwrap())
        .args(["--kubeconfig"])
        .arg(c.kubeconfig())
        .args([
            "exec",
            "tf-dist-train-worker-1",
            "--",
            "printenv",
            "NO_SUCH_VAR",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn diagnose_with_probe_adds_the_in_pod_layer_after_the_runtime_layer() {
    let c = running_job(TEST_KEY, "");
    let run = tfjob(&c, &args("diagnose tf-dist-train --probe"));
    run.exit(0);
    let runtime = run.stdout.find("Runtime").expect("a Runtime row");
    let in_pod = run.stdout.find("In-pod").expect("an In-pod row");
    assert!(runtime < in_pod, "{}", run.stdout);
    assert!(
        run.stdout[in_pod..]
            .lines()
            .next()
            .unwrap()
            .contains("ok: 4/4 replicas"),
        "{}",
        run.stdout
    );
    // By default too, every replica running (issue 46); with --no-probe: no exec, and the
    // row says what was not checked.
    let execs = |c: &TestCluster| {
        c.requests()
            .iter()
            .filter(|r| r.subresource == "exec")
            .count()
    };
    let before = execs(&c);
    let run = tfjob(&c, &args("diagnose tf-dist-train"));
    run.exit(0);
    assert!(
        run.stdout.contains("[ok]   In-pod     ok: 4/4 replicas"),
        "{}",
        run.stdout
    );
    assert!(execs(&c) > before);
    let before = execs(&c);
    let run = tfjob(&c, &args("diagnose tf-dist-train --no-probe"));
    run.exit(0);
    assert!(
        run.stdout
            .contains("[info] In-pod     not checked (--no-probe)"),
        "{}",
        run.stdout
    );
    assert_eq!(execs(&c), before);
    // A gateway that rejects the pods' key (the Secret's too): the layer fails (exit 4),
    // naming the replica and that the gateway rejects this key.
    let c = running_job(OTHER_KEY, "");
    let run = tfjob(&c, &args("diagnose tf-dist-train --probe -o json"));
    run.exit(4);
    let d: Value = serde_json::from_str(&run.stdout).unwrap();
    let f = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["layer"] == "inpod")
        .unwrap_or_else(|| panic!("no in-pod finding: {d:#}"));
    assert_eq!(f["verdict"], "fail", "{f:#}");
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("PS-0: ") && summary.contains("the gateway rejects this key"),
        "{f:#}"
    );
    assert!(
        f["nextStep"]
            .as_str()
            .unwrap()
            .contains("kubectl tfjob probe tf-dist-train"),
        "{f:#}"
    );
    no_key_in_exec_commands(&c);
}

/// The article's job on one GPU: the PS and one worker run, two workers stay Pending.
fn two_workers_pending() -> TestCluster {
    let c = cluster(&format!(
        "gatewayKey: {TEST_KEY}\nnodes:\n- {{name: gpu-1, cpu: '32', memory: 128Gi, gpu: 1}}\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    assert!(
        c.wait_for(std::time::Duration::from_secs(30), |c| {
            c.list("pods", Some("default"))
                .iter()
                .filter(|p| p["status"]["phase"] == "Running")
                .count()
                == 2
        }),
        "PS and one worker did not start"
    );
    c
}

#[test]
fn diagnose_with_probe_says_why_it_did_not_probe_while_a_replica_waits() {
    let c = two_workers_pending();
    let run = tfjob(&c, &args("diagnose tf-dist-train --probe -o json"));
    let d: Value = serde_json::from_str(&run.stdout).unwrap();
    let f = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["layer"] == "inpod")
        .unwrap_or_else(|| panic!("no in-pod finding: {d:#}"));
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("not probed: Worker-") && summary.contains("Pending"),
        "{f:#}"
    );
    assert_eq!(f["verdict"], "info", "{f:#}");
    // Nothing was exec'd into.
    assert!(
        !c.requests().iter().any(|r| r.subresource == "exec"),
        "probed while a replica was pending"
    );
}

#[test]
fn a_wait_that_ends_while_every_replica_runs_suggests_probe() {
    // Every replica runs and nothing ever finishes: `--for succeeded` times out (exit 5).
    let c = running_job(TEST_KEY, "");
    let run = tfjob(&c, &args("wait tf-dist-train --for succeeded --timeout 2s"));
    run.exit(5);
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("kubectl tfjob probe"))
        .unwrap_or_else(|| panic!("no probe suggestion:\n{}", run.stderr));
    assert!(
        line.contains("Every replica runs") && line.contains("`kubectl tfjob probe tf-dist-train"),
        "{line}"
    );
    // The default namespace is not repeated.
    assert!(!line.contains(" -n "), "{line}");
    // Outside the default namespace, the suggestion names it.
    let secret = SECRET.replace("namespace: default", "namespace: team-a");
    let c = cluster(&format!(
        "namespaces: [default, kubeflow, team-a]\nobjects:{secret}"
    ));
    tfjob(
        &c,
        &submit_args(&[
            "-n",
            "team-a",
            "--wait",
            "--settle",
            "0",
            "--timeout",
            "60s",
        ]),
    )
    .exit(0);
    let run = tfjob(
        &c,
        &args("wait tf-dist-train -n team-a --for succeeded --timeout 2s"),
    );
    run.exit(5);
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("`kubectl tfjob probe tf-dist-train"))
        .unwrap_or_else(|| panic!("no probe suggestion:\n{}", run.stderr));
    assert!(line.contains(" -n team-a`"), "{line}");
}

#[test]
fn a_wait_that_ends_while_a_replica_is_pending_does_not_suggest_probe() {
    let c = cluster(&format!(
        "nodes:\n- {{name: gpu-1, cpu: '32', memory: 128Gi, gpu: 1}}\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    let run = tfjob(&c, &args("wait tf-dist-train --for succeeded --timeout 3s"));
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("kubectl tfjob probe"),
        "{}",
        run.stderr
    );
}

#[test]
fn gateway_chat_sends_one_completion_and_checks_its_choices() {
    let c = running_job(TEST_KEY, "");
    // Not asked for: no completion is sent (it costs tokens).
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 0, "{v:#}");
    assert!(
        v["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["gatewayChat"].is_null()),
        "{v:#}"
    );
    let chats = |c: &TestCluster| {
        c.requests()
            .iter()
            .filter(|r| r.subresource == "exec" && r.query.contains("command=chat&"))
            .count()
    };
    assert_eq!(chats(&c), 0);
    let run = tfjob(
        &c,
        &args("probe tf-dist-train --gateway-chat test-model -o json"),
    );
    run.exit(0);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let replicas = v["replicas"].as_array().unwrap();
    assert_eq!(replicas[0]["replica"], "PS-0");
    assert_eq!(replicas[0]["gatewayChat"]["status"], "pass", "{v:#}");
    assert!(
        replicas[0]["gatewayChat"]["detail"]
            .as_str()
            .unwrap()
            .contains("/v1/chat/completions: 200, an answer with choices"),
        "{v:#}"
    );
    assert!(replicas[1..].iter().all(|r| r["gatewayChat"].is_null()));
    assert_eq!(chats(&c), 1, "one completion, from one replica");
    no_key_in_exec_commands(&c);
    // The text report shows it.
    let text = tfjob(
        &c,
        &args("probe tf-dist-train --gateway-chat test-model -o wide"),
    );
    text.exit(0);
    text.stdout_has("chat");
    // A model name that is not one is refused before anything is sent.
    let run = tfjob(&c, &["probe", "tf-dist-train", "--gateway-chat", "a\"b"]);
    run.exit(2);
    run.stderr_has("--gateway-chat");
    assert_eq!(chats(&c), 2);
}

#[test]
fn gateway_chat_is_not_sent_when_no_gateway_check_passed() {
    let c = running_with_doubled_v1();
    let run = tfjob(
        &c,
        &args("probe tf-dist-train --gateway-chat test-model -o json"),
    );
    run.exit(4);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    // No replica's gateway check passed: no completion is sent, and that is said.
    assert_eq!(
        v["replicas"][0]["gatewayChat"]["status"], "notChecked",
        "{v:#}"
    );
}

/// The article's job submitted as a JobSet, every replica running, its gateway taking the key.
fn articles_jobset_running() -> TestCluster {
    let c = cluster(&format!(
        "jobset: running\ngatewayKey: {TEST_KEY}\nobjects:{SECRET}"
    ));
    tfjob(
        &c,
        &crate::submit::article_args("submit", &["--to", "jobset", "--wait", "--timeout", "60s"]),
    )
    .exit(0);
    c
}

#[test]
fn a_jobset_exported_from_the_articles_job_is_probed_as_the_export_wrote_it() {
    let c = articles_jobset_running();
    let run = tfjob(&c, &args("probe jobset/tf-dist-train -o json"));
    let v: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("-o json is JSON ({e}):\n{}\n{}", run.stdout, run.stderr));
    assert_eq!(run.code, 0, "{v:#}\n{}", run.stderr);
    let replicas = v["replicas"].as_array().unwrap();
    let names: Vec<&str> = replicas
        .iter()
        .map(|r| r["replica"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["PS-0", "Worker-0", "Worker-1", "Worker-2"]);
    for r in replicas {
        assert_eq!(r["tfConfig"]["status"], "pass", "{r:#}");
        let peers = r["peers"].as_array().unwrap();
        assert_eq!(peers.len(), 4, "{r:#}");
        // JobSet's addresses: <pod hostname>.<subdomain>.<ns>.svc.
        assert!(
            peers.iter().all(|p| p["status"] == "pass"
                && p["to"]
                    .as_str()
                    .unwrap()
                    .contains(".tf-dist-train.default.svc:")),
            "{r:#}"
        );
        assert_eq!(r["gateway"]["status"], "pass", "{r:#}");
    }
    assert!(
        v["verdict"]
            .as_str()
            .unwrap()
            .starts_with("ok: 4/4 replicas"),
        "{v:#}"
    );
    no_key_in_exec_commands(&c);
}

/// A JobSet exported from a one-worker job gives its pod no TF_CONFIG: probe says the JobSet's
/// template is where it comes from, not the operator (a JobSet has none), and never a pass.
#[test]
fn a_jobset_replica_without_tf_config_names_the_jobset_template() {
    let c = cluster(&format!(
        "jobset: running\ngatewayKey: {TEST_KEY}\nobjects:{SECRET}"
    ));
    tfjob(
        &c,
        &args(
            "submit --to jobset --name solo --image tensorflow/tensorflow:2.13.0 --ps 0 --workers 1 --cpu 1 --memory 1Gi --wait --timeout 60s",
        ),
    )
    .exit(0);
    let run = tfjob(&c, &args("probe jobset/solo -o json"));
    let v: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("-o json is JSON ({e}):\n{}\n{}", run.stdout, run.stderr));
    let r = &v["replicas"][0];
    assert_eq!(r["replica"], "Worker-0", "{v:#}");
    assert_eq!(r["tfConfig"]["status"], "notChecked", "{r:#}");
    let detail = r["tfConfig"]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("the JobSet's pod template gives this replica no TF_CONFIG"),
        "{detail}"
    );
    no_key_in_exec_commands(&c);
}

/// Issue 47 item 14: a misspelt `--api-env-prefix` is refused before any exec, naming the
/// prefix the container does set; the right one (spelt out) probes as the default does.
#[test]
fn a_misspelt_api_env_prefix_is_refused_not_a_skipped_gateway_check() {
    let c = running_job(TEST_KEY, "");
    let execs = |c: &TestCluster| {
        c.requests()
            .into_iter()
            .filter(|r| r.subresource == "exec")
            .count()
    };
    let execs_before = execs(&c);
    let typo = tfjob(&c, &args("probe tf-dist-train --api-env-prefix TAOTOKN"));
    typo.exit(2);
    typo.stderr_has("--api-env-prefix TAOTOKN: container tensorflow sets neither TAOTOKN_API_KEY nor TAOTOKN_BASE_URL");
    typo.stderr_has("e.g. --api-env-prefix TAOTOKEN");
    assert_eq!(execs(&c), execs_before, "no exec for a refused flag");
    let bad = tfjob(&c, &args("probe tf-dist-train --api-env-prefix taotoken-x"));
    bad.exit(2);
    bad.stderr_has("e.g. --api-env-prefix TAOTOKEN_X");
    let right = tfjob(
        &c,
        &args("probe tf-dist-train --api-env-prefix TAOTOKEN -o json"),
    );
    right.exit(0);
    let v: Value = serde_json::from_str(&right.stdout).unwrap();
    assert_eq!(v["replicas"][0]["gateway"]["status"], "pass", "{v:#}");
}

/// Issue 49: the GPUs each replica's process can open against what it requested. The article's
/// workers ask for one GPU each (the PS for none, so it is not checked); a node whose runtime
/// mounts no NVIDIA device, or a CUDA_VISIBLE_DEVICES that hides them, is named: TensorFlow
/// would quietly run on the CPU.
#[test]
fn probe_counts_the_gpus_each_worker_sees_against_its_request() {
    let c = running_job(TEST_KEY, "");
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 0, "{v:#}");
    for r in v["replicas"].as_array().unwrap() {
        if r["replica"] == "PS-0" {
            assert!(r.get("gpus").is_none(), "{r:#}");
        } else {
            assert_eq!(r["gpus"]["status"], "pass", "{r:#}");
            assert_eq!(
                r["gpus"]["detail"], "1 GPU(s) visible, 1 requested",
                "{r:#}"
            );
        }
    }

    let c = running_job_ending(TEST_KEY, "gpuDevices: 0\n", 4);
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 4, "{v:#}");
    let w0 = &v["replicas"][1];
    assert_eq!(w0["gpus"]["status"], "fail", "{w0:#}");
    assert!(
        w0["gpus"]["detail"]
            .as_str()
            .unwrap()
            .contains("1 nvidia.com/gpu requested, 0 visible"),
        "{w0:#}"
    );
    let text = tfjob(&c, &args("probe tf-dist-train"));
    text.stdout_has("TensorFlow will run on the CPU");
}

/// CUDA_VISIBLE_DEVICES=-1 in the template hides the GPU the worker got.
#[test]
fn a_cuda_visible_devices_that_hides_every_gpu_is_named() {
    let c = cluster(&format!("gatewayKey: {TEST_KEY}\nobjects:{SECRET}"));
    crate::stored(&c, |job| {
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"name": "CUDA_VISIBLE_DEVICES", "value": "-1"}));
    });
    all_ready(&c, 4);
    let (code, v, _) = probe_json(&c);
    assert_eq!(code, 4, "{v:#}");
    let w0 = &v["replicas"][1];
    assert!(
        w0["gpus"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("CUDA_VISIBLE_DEVICES=\"-1\" hides every GPU from CUDA"),
        "{w0:#}"
    );
}

/// Issue 46: a replica that does not run is the layer below the pods' view: `probe` says so,
/// exit 3 (something could not be checked), naming the replica with the scheduler's words,
/// instead of blaming DNS for the peers it cannot reach yet (exit 4).
#[test]
fn probe_with_a_pending_replica_names_it_with_the_schedulers_words_exit_3() {
    let c = two_workers_pending();
    let run = tfjob(&c, &args("probe tf-dist-train"));
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let verdict = run.stdout.lines().next().unwrap_or_default();
    assert!(
        verdict.starts_with("Worker-") && verdict.contains("not probed: Pending (Unschedulable: "),
        "{}",
        run.stdout
    );
    assert!(
        verdict.contains("Insufficient nvidia.com/gpu"),
        "{}",
        run.stdout
    );
    assert!(!run.all().contains("name not found"), "{}", run.all());
}

/// Keys a process may print otherwise than as stored: a file's trailing newline kept by
/// `--from-file` (python's http.client would quote the whole header in its traceback; the
/// check names it instead), and quotes, a backslash, a space and non-ASCII, which every
/// printer escapes its own way.
#[test]
fn a_key_with_a_line_break_is_named_and_in_no_output_of_probe_or_diagnose() {
    use base64::Engine as _;
    // The keys that end in a line break (the first two).
    for key in &HOSTILE_KEYS[..2] {
        let b64 = base64::engine::general_purpose::STANDARD.encode(key);
        let secret = format!(
            "\n  - apiVersion: v1\n    kind: Secret\n    metadata: {{name: taotoken-secret, namespace: default}}\n    type: Opaque\n    data: {{api-key: {b64}}}\n"
        );
        let c = cluster(&format!(
            "gatewayKey: {}\nobjects:{secret}",
            serde_json::to_string(key.trim()).unwrap()
        ));
        // submit --wait's own in-pod check fails the same way, and says so without the key.
        let submit = tfjob(
            &c,
            &submit_args(&["--wait", "--settle", "0", "--timeout", "60s"]),
        );
        submit.exit(4);
        assert!(
            submit.stderr.contains("holds a line break"),
            "{}",
            submit.all()
        );
        let mut outputs = vec![("submit --wait", submit.all())];
        for cmd in [
            "probe tf-dist-train",
            "probe tf-dist-train -o wide",
            "probe tf-dist-train -o json",
            "probe tf-dist-train -o yaml",
            "probe tf-dist-train -v",
            "diagnose tf-dist-train --probe",
            "diagnose tf-dist-train --probe -o json",
        ] {
            let run = tfjob(&c, &args(cmd));
            // The check did fail in the pod: the run says so, without the key.
            if cmd.starts_with("probe") {
                assert_eq!(run.code, 4, "{cmd}:\n{}", run.all());
                assert!(
                    run.all().contains("holds a line break"),
                    "{cmd}:\n{}",
                    run.all()
                );
            }
            outputs.push((cmd, run.all()));
        }
        for (cmd, all) in &outputs {
            for run in key_runs(key) {
                assert!(!all.contains(&run), "{cmd} printed {run:?}:\n{all}");
            }
        }
    }
}

/// Issue 61 item 1: when the API server cannot open an exec (it cannot reach the kubelet: HTTP
/// 500 on `pods/exec`), probe and diagnose say so in one sentence naming the layer, never
/// kube's `Debug` of the Status.
#[test]
fn an_exec_the_api_server_cannot_open_is_a_sentence_not_a_debug_form() {
    let c = running_job(TEST_KEY, "");
    c.set_faults(vec![tfjob_testcluster::Fault {
        matches: tfjob_testcluster::FaultMatch {
            subresource: Some("exec".into()),
            ..Default::default()
        },
        status: Some(500),
        message: Some("no preferred addresses found; known addresses: []".into()),
        times: 0,
        ..Default::default()
    }]);
    for cmd in ["probe tf-dist-train", "diagnose tf-dist-train --probe"] {
        let run = tfjob(&c, &args(cmd));
        let all = run.all();
        assert!(
            all.contains("the API server could not reach the kubelet of the pod's node to exec"),
            "{cmd}:\n{all}"
        );
        for debug in ["Status {", "ListMeta", "Some(", "ApiError"] {
            assert!(!all.contains(debug), "{cmd} printed {debug:?}:\n{all}");
        }
    }
}

/// Issue 60 item 2: a worker added to the JobSet after the export runs with the template's
/// TF_CONFIG, which lists one worker too few. Its peers are not all in its cluster spec, so
/// no replica is ok: the cluster spec each process sees must match the replicas that exist.
#[test]
fn a_jobset_grown_after_the_export_is_not_ok_while_tf_config_lists_fewer_workers() {
    let c = articles_jobset_running();
    // A fourth worker, added by raising the worker Job's parallelism (an Indexed Job scales
    // so); its pod runs with the template's TF_CONFIG, which lists three.
    let mut job = c
        .get("jobs", Some("default"), "tf-dist-train-worker-0")
        .unwrap();
    let before = job["spec"]["parallelism"].as_i64().unwrap();
    job["spec"]["parallelism"] = (before + 1).into();
    job["spec"]["completions"] = (before + 1).into();
    c.insert(job);
    all_ready(&c, before as usize + 2);
    let run = tfjob(&c, &args("probe jobset/tf-dist-train -o json"));
    let v: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("-o json is JSON ({e}):\n{}\n{}", run.stdout, run.stderr));
    assert_ne!(run.code, 0, "{v:#}");
    assert!(!v["verdict"].as_str().unwrap().starts_with("ok"), "{v:#}");
    let want = format!(
        "cluster.worker lists {before} hosts, the job has {}",
        before + 1
    );
    for r in v["replicas"].as_array().unwrap() {
        assert_eq!(r["tfConfig"]["status"], "fail", "{r:#}");
        assert!(
            r["tfConfig"]["detail"].as_str().unwrap().contains(&want),
            "{r:#}"
        );
    }
}
