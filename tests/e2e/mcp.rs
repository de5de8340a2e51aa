//! `kubectl tfjob mcp` driven by a client no one here wrote: the official MCP Python SDK (PyPI
//! `mcp`, installed by `.ci/run`), over stdio, against the test cluster. The agent must get what
//! the CLI gives (the same verdict and exit class), no key byte, and no write it did not confirm.
//!
//! `tests/mcp/client.py` runs a plan of steps and prints what the SDK returned; the assertions
//! are here. Without the SDK the tests say in one line that they are skipped, unless
//! `TFJOB_MCP_PYTHON` names the interpreter to use (CI), which must then have it.

use std::process::Command;

use serde_json::{Value, json};
use tfjob_testcluster::TestCluster;

use crate::submit::{ARTICLE, SECRET};
use crate::{Cli, TEST_KEY, cluster, test_key_b64, tfjob};

/// The interpreter with the SDK, or `None` (said) when there is none to use here.
fn python() -> Option<String> {
    let given = std::env::var("TFJOB_MCP_PYTHON").ok();
    let python = given.clone().unwrap_or_else(|| "python3".into());
    let has_sdk = Command::new(&python)
        .args(["-c", "import mcp.client.stdio"])
        .output()
        .is_ok_and(|o| o.status.success());
    match (has_sdk, given) {
        (true, _) => Some(python),
        (false, Some(p)) => panic!("TFJOB_MCP_PYTHON={p} has no `mcp` package"),
        (false, None) => {
            eprintln!("skipped: no python3 with the `mcp` package (pip install mcp)");
            None
        }
    }
}

/// One session: the server started by the SDK with `server_args`, `plan` run, each step's result.
fn session(python: &str, c: &TestCluster, server_args: &[&str], plan: Value) -> Vec<Value> {
    finish(start(python, c, server_args, plan))
}

/// [`session`] started, for a test that acts on the cluster while it runs.
fn start(python: &str, c: &TestCluster, server_args: &[&str], plan: Value) -> std::process::Child {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py");
    Command::new(python)
        .arg(script)
        .arg(plan.to_string())
        .arg(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .arg("mcp")
        .args(server_args)
        .env_remove("KUBECONFIG")
        .env("HOME", std::env::temp_dir().join("kubectl-tfjob-e2e-home"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the MCP client")
}

/// The started session's results, once it ends; no key byte in anything it printed.
fn finish(child: std::process::Child) -> Vec<Value> {
    let out = child.wait_with_output().expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client failed:\n{stderr}");
    for text in [&stdout, &stderr] {
        assert!(!text.contains(TEST_KEY), "the API key leaked:\n{text}");
        assert!(
            !text.contains(&test_key_b64()),
            "the API key (base64) leaked:\n{text}"
        );
    }
    // Shown when a test fails: the server's own stderr (its log) comes through the client's.
    eprintln!("{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Whether `text` shows where a key was taken out (the redactor's mark, or the log reader's).
fn redacted(text: &str) -> bool {
    text.contains("[REDACTED]") || text.contains("<redacted>")
}

fn call(tool: &str, args: Value) -> Value {
    json!({"op": "call", "tool": tool, "args": args})
}

/// The structured result of a call step.
fn result(step: &Value) -> &Value {
    assert!(
        step.get("error").is_none(),
        "refused at the protocol level: {step}"
    );
    &step["structuredContent"]
}

/// The article's job whose worker-1 fails once, with a log line that holds the key (what a
/// training script prints when the gateway refuses it); the job is Failed when this returns.
fn failed_job_with_the_key_in_its_log() -> TestCluster {
    let c = cluster(&format!(
        "gatewayKey: {TEST_KEY}\ncontainerBehaviour:\n- match: {{replicaType: worker, index: 1}}\n  exitCode: 1\n  runMs: 100\n  log: \"openai.AuthenticationError: Error code: 401 - incorrect API key provided: {TEST_KEY}\\n\"\nobjects:{SECRET}"
    ));
    let mut args = vec![
        "submit",
        "--skip-capacity-check",
        "--restart-policy",
        "Never",
    ];
    args.extend_from_slice(ARTICLE);
    tfjob(&c, &args).exit(0);
    crate::until_failed(&c, "tf-dist-train");
    c
}

/// (replica, class) of each failure a diagnosis names.
fn failures(diagnosis: &Value) -> Vec<(String, String)> {
    diagnosis["failures"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f["replica"].as_str().unwrap_or("").to_string(),
                f["class"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn an_agent_gets_the_clis_verdict_no_key_and_no_unconfirmed_write() {
    let Some(python) = python() else { return };
    let c = failed_job_with_the_key_in_its_log();
    let cli = tfjob(&c, &["diagnose", "tf-dist-train", "-o", "json"]);
    cli.exit(4);
    let cli_diagnosis: Value = serde_json::from_str(&cli.stdout).unwrap();
    // The key was in what diagnose read: the CLI shows where it was taken out.
    assert!(redacted(&cli.all()), "{}", cli.all());
    let rendered = Cli::new(None, &{
        let mut a = vec!["render"];
        a.extend_from_slice(ARTICLE);
        a
    })
    .run();
    rendered.exit(0);

    c.clear_requests();
    let steps = session(
        &python,
        &c,
        &[],
        json!([
            {"op": "list_tools"},
            call("validate", json!({"manifest": rendered.stdout})),
            call("diagnose", json!({"name": "tf-dist-train"})),
            call("submit", json!({"template": "ps-worker", "name": "agent-job",
                "image": "tensorflow/tensorflow:2.13.0", "workers": 1})),
            {"op": "read", "uri": "tfjob://default/tf-dist-train"},
            call("logs", json!({"name": "tf-dist-train", "replica": "worker-1"})),
        ]),
    );

    let tools: Vec<&str> = steps[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "validate", "render", "check", "list", "get", "diagnose", "probe", "top", "logs",
            "submit", "suspend", "resume", "delete"
        ]
    );
    let submit = &steps[0]["tools"][9];
    assert_eq!(submit["annotations"]["destructiveHint"], true, "{submit}");
    assert!(submit["inputSchema"]["properties"]["confirm"].is_object());

    let validate = result(&steps[1]);
    assert_eq!(validate["exit_class"], "ok", "{validate}");
    assert_eq!(validate["data"]["valid"], true, "{validate}");

    // The same verdict as the CLI's, with the same exit class.
    let diagnose = result(&steps[2]);
    assert_eq!(diagnose["exit_code"], 4, "{diagnose}");
    assert_eq!(diagnose["exit_class"], "job-failed");
    assert_eq!(steps[2]["isError"], true);
    assert_eq!(diagnose["data"]["state"], cli_diagnosis["state"]);
    assert_eq!(diagnose["data"]["state"], "Failed");
    let named = failures(&diagnose["data"]);
    assert!(!named.is_empty(), "{diagnose}");
    assert_eq!(named, failures(&cli_diagnosis));

    // Without `confirm`, the API server checked the job and stored nothing.
    let submit = result(&steps[3]);
    assert_eq!(submit["exit_class"], "ok", "{submit}");
    assert!(
        submit["command"]
            .as_str()
            .unwrap()
            .contains("--dry-run=server"),
        "{submit}"
    );
    let dry_creates = c
        .requests()
        .iter()
        .filter(|r| r.verb == "create" && r.resource == "tfjobs" && r.dry_run)
        .count();
    assert_eq!(dry_creates, 1, "the dry run reached the API server once");
    assert_eq!(c.writes().len(), 0, "{:?}", c.writes());
    assert!(c.get("tfjobs", Some("default"), "agent-job").is_none());

    // The resource is the same diagnosis, as JSON.
    let text = steps[4]["contents"][0]["text"].as_str().unwrap();
    let resource: Value = serde_json::from_str(text).unwrap();
    assert_eq!(resource["state"], "Failed");
    assert_eq!(failures(&resource), failures(&cli_diagnosis));

    // The log line that held the key comes back without it.
    let logs = result(&steps[5]);
    let lines = logs["data"].as_str().unwrap();
    assert!(lines.contains("incorrect API key provided: "), "{logs}");
    assert!(redacted(lines), "{logs}");
}

#[test]
fn writes_need_the_uid_that_was_read_and_read_only_serves_none() {
    let Some(python) = python() else { return };
    let c = cluster(&format!("objects:{SECRET}"));
    let uid = crate::job_with_its_pod(&c, "held");
    let uid = uid.as_str().unwrap();
    let steps = session(
        &python,
        &c,
        &[],
        json!([
            call(
                "suspend",
                json!({"name": "held", "uid": "0000-not-its-uid"})
            ),
            call("suspend", json!({"name": "held"})),
            call("suspend", json!({"name": "held", "uid": uid})),
        ]),
    );
    let stale = result(&steps[0]);
    assert_ne!(stale["exit_code"], 0, "{stale}");
    assert!(
        stale["notes"]
            .as_str()
            .unwrap()
            .contains("deleted and created again"),
        "{stale}"
    );
    let missing = result(&steps[1]);
    assert_eq!(missing["exit_class"], "invalid", "{missing}");
    assert!(
        missing["notes"].as_str().unwrap().contains("uid"),
        "{missing}"
    );
    let done = result(&steps[2]);
    assert_eq!(done["exit_class"], "ok", "{done}");
    let job = c.get("tfjobs", Some("default"), "held").unwrap();
    assert_eq!(job["spec"]["runPolicy"]["suspend"], true, "{job}");

    let steps = session(
        &python,
        &c,
        &["--read-only"],
        json!([
            {"op": "list_tools"},
            call("delete", json!({"name": "held", "uid": uid})),
        ]),
    );
    let tools = steps[0]["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .all(|t| t["annotations"]["readOnlyHint"] == true),
        "{tools:?}"
    );
    assert_eq!(tools.len(), 9);
    let refused = steps[1]["error"].as_str().unwrap_or_default();
    assert!(refused.contains("read-only"), "{}", steps[1]);
    assert!(c.get("tfjobs", Some("default"), "held").is_some());
}

/// A client's `notifications/cancelled` ends the call's command: the next call is answered
/// although the cancelled one waits on a request the cluster never answers. (Not cancelled,
/// the held call would keep the server for the ten minutes of `--call-timeout`, and the next
/// call's 60 s read timeout would fail this test.)
#[test]
fn a_cancelled_call_ends_its_command_and_the_next_is_answered() {
    let Some(python) = python() else { return };
    let c = cluster(&format!("objects:{SECRET}"));
    crate::job_with_its_pod(&c, "slow");
    let mut hold = tfjob_testcluster::Fault::default();
    hold.matches.verb = Some("get".into());
    hold.matches.resource = Some("tfjobs".into());
    hold.matches.name = Some("slow".into());
    hold.hold = true;
    c.set_faults(vec![hold]);
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let child = start(
        &python,
        &c,
        &["--call-timeout", "10m"],
        json!([
            {"op": "cancel", "tool": "get", "args": {"name": "slow"}, "when": go},
            {"op": "call", "tool": "list", "args": {}, "read_timeout": 60},
        ]),
    );
    let held = c.wait_for(std::time::Duration::from_secs(60), |c| {
        c.arrived()
            .iter()
            .any(|r| r.verb == "get" && r.resource == "tfjobs" && r.name.as_deref() == Some("slow"))
    });
    assert!(held, "the get never reached the cluster");
    std::fs::write(&go, "").unwrap();
    let steps = finish(child);
    c.release();
    assert_eq!(steps[0], json!({"cancelled": true}));
    let list = result(&steps[1]);
    assert_eq!(list["exit_class"], "ok", "{list}");
    assert_eq!(list["data"][0]["NAME"], "slow", "{list}");
}

/// The article's manifest as users paste it (only where the reference copy is): the agent gets
/// the CLI's refusal, exit class and findings, the line in the file included.
#[test]
fn the_articles_manifest_is_refused_through_mcp_as_by_the_cli() {
    let Some(python) = python() else { return };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/reference/article-tfjob.yaml");
    let Ok(manifest) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {} not present", path.display());
        return;
    };
    let cli = Cli::new(
        None,
        &["validate", "-f", path.to_str().unwrap(), "-o", "json"],
    )
    .run();
    cli.exit(2);
    let cli_report: Value = serde_json::from_str(&cli.stdout).unwrap();
    let c = cluster("");
    let steps = session(
        &python,
        &c,
        &[],
        json!([call("validate", json!({"manifest": manifest}))]),
    );
    let validate = result(&steps[0]);
    assert_eq!(validate["exit_code"], 2, "{validate}");
    assert_eq!(validate["exit_class"], "invalid");
    let findings = |report: &Value| -> Vec<(String, String, Value)> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["rule"].as_str().unwrap_or("").to_string(),
                    f["message"].as_str().unwrap_or("").to_string(),
                    f["location"]["line"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(findings(&validate["data"]), findings(&cli_report));
    assert!(
        validate["data"]["findings"]
            .to_string()
            .contains("sidecar.istio.io/inject"),
        "{validate}"
    );
    assert!(c.requests().is_empty(), "validate is offline");
}
