//! `secret create` / `secret check` end to end.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use base64::Engine as _;

use crate::{Cli, TEST_KEY, args, cluster, tfjob};

fn stored_key(
    c: &tfjob_testcluster::TestCluster,
    ns: &str,
    name: &str,
    key: &str,
) -> Option<Vec<u8>> {
    let secret = c.get("secrets", Some(ns), name)?;
    let b64 = secret["data"][key].as_str()?.to_string();
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
}

#[test]
fn create_from_stdin_stores_an_opaque_labelled_secret_and_is_idempotent() {
    let c = cluster("");
    let run = Cli::new(Some(&c), &args("secret create --from-stdin"))
        .stdin(&format!("{TEST_KEY}\n"))
        .run();
    run.exit(0);
    assert_eq!(run.stdout.trim(), "secret/taotoken-secret created");
    assert_eq!(
        stored_key(&c, "default", "taotoken-secret", "api-key").unwrap(),
        TEST_KEY.as_bytes()
    );
    let secret = c
        .get("secrets", Some("default"), "taotoken-secret")
        .unwrap();
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(
        secret["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "kubectl-tfjob"
    );
    let annotations = secret["metadata"]["annotations"].to_string();
    assert!(
        !annotations.contains("e2e-test-key"),
        "key in annotations: {annotations}"
    );

    // Same content again: unchanged, and no write at all.
    c.clear_requests();
    let run = Cli::new(Some(&c), &args("secret create --from-stdin"))
        .stdin(TEST_KEY)
        .run();
    run.exit(0);
    assert_eq!(run.stdout.trim(), "secret/taotoken-secret unchanged");
    assert!(c.writes().is_empty(), "writes: {:?}", c.writes());
}

#[test]
fn different_content_needs_overwrite() {
    let c = cluster("");
    Cli::new(Some(&c), &args("secret create --from-stdin"))
        .stdin("sk-old-value-1")
        .run()
        .exit(0);
    c.clear_requests();
    let run = Cli::new(Some(&c), &args("secret create --from-stdin"))
        .stdin(TEST_KEY)
        .run();
    run.exit(3);
    run.stderr_has("already exists with different content under \"api-key\"");
    run.stderr_has("--overwrite");
    assert!(c.writes().is_empty());
    assert_eq!(
        stored_key(&c, "default", "taotoken-secret", "api-key").unwrap(),
        b"sk-old-value-1"
    );

    let run = Cli::new(Some(&c), &args("secret create --from-stdin --overwrite"))
        .stdin(TEST_KEY)
        .run();
    run.exit(0);
    assert_eq!(run.stdout.trim(), "secret/taotoken-secret configured");
    // A rotation reaches running pods only when they start again: said, with the verb.
    run.stderr_has("kubectl tfjob restart JOB");
    assert_eq!(
        stored_key(&c, "default", "taotoken-secret", "api-key").unwrap(),
        TEST_KEY.as_bytes()
    );
}

#[test]
fn key_sources_env_file_literal_and_base_url() {
    let c = cluster("namespaces: [default, ml]");
    Cli::new(
        Some(&c),
        &args("secret create gw -n ml --key token --from-env MY_GW_KEY --base-url https://gateway.example/api"),
    )
    .env("MY_GW_KEY", TEST_KEY)
    .run()
    .exit(0);
    assert_eq!(
        stored_key(&c, "ml", "gw", "token").unwrap(),
        TEST_KEY.as_bytes()
    );
    assert_eq!(
        stored_key(&c, "ml", "gw", "base-url").unwrap(),
        b"https://gateway.example/api"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key.txt");
    std::fs::write(&path, format!("{TEST_KEY}\n")).unwrap();
    Cli::new(
        Some(&c),
        &[
            "secret",
            "create",
            "from-file",
            "--from-file",
            path.to_str().unwrap(),
        ],
    )
    .run()
    .exit(0);
    assert_eq!(
        stored_key(&c, "default", "from-file", "api-key").unwrap(),
        TEST_KEY.as_bytes()
    );

    // --from-literal works (parity with kubectl) but says why it should not be used. The key
    // is in argv here by the user's choice, so this run is not leak-checked for it.
    let run = tfjob(&c, &args("secret create lit --from-literal sk-literal-1"));
    run.exit(0);
    run.stderr_has("shell history");
}

#[test]
fn bad_keys_and_missing_sources_are_refused_before_any_request() {
    let c = cluster("");
    for input in ["", "   \n", "line-one\nline-two\n"] {
        let run = Cli::new(Some(&c), &args("secret create --from-stdin"))
            .stdin(input)
            .run();
        run.exit(2);
        run.stderr_has("nothing was stored");
    }
    // No flag and no terminal: refuse rather than read a pipe silently.
    let run = tfjob(&c, &args("secret create"));
    run.exit(2);
    run.stderr_has("--from-stdin");
    let run = tfjob(&c, &args("secret create --from-env NOT_SET_ANYWHERE_42"));
    run.exit(2);
    run.stderr_has("NOT_SET_ANYWHERE_42 is not set");
    assert!(c.requests().is_empty(), "requests: {:?}", c.requests());
}

#[test]
fn missing_namespace_and_rbac_denial_say_what_to_do() {
    let c = cluster(
        "rbac:\n  deny:\n  - {verb: create, resource: secrets, namespace: locked}\nnamespaces: [default, locked]",
    );
    let run = Cli::new(Some(&c), &args("secret create -n nope --from-stdin"))
        .stdin(TEST_KEY)
        .run();
    run.exit(3);
    run.stderr_has("namespace \"nope\" does not exist");
    run.stderr_has("kubectl create namespace nope");

    let run = Cli::new(Some(&c), &args("secret create -n locked --from-stdin"))
        .stdin(TEST_KEY)
        .run();
    run.exit(3);
    run.stderr_has("forbidden");
    run.stderr_has(&format!(
        "kubectl auth can-i create secrets --kubeconfig {} -n locked",
        c.kubeconfig().display()
    ));
    assert!(
        c.get("secrets", Some("locked"), "taotoken-secret")
            .is_none()
    );
}

#[test]
fn unreachable_api_server_is_reported() {
    let port = closed_port();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters:\n- name: x\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: x\n  context: {{cluster: x, user: x}}\nusers:\n- name: x\n  user: {{token: t}}\n"
        ),
    )
    .unwrap();
    let run = Cli::new(
        None,
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "secret",
            "check",
        ],
    )
    .env("KUBECTL_TFJOB_RETRY_DEADLINE", "1s")
    .run();
    run.exit(3);
    run.stderr_has("cannot reach the API server");
}

#[test]
fn transient_429_and_500_are_retried_into_one_secret() {
    let c = cluster(
        "faults:\n- match: {verb: create, resource: secrets}\n  status: 429\n  retryAfterSeconds: 0\n  times: 2\n- match: {verb: get, resource: secrets}\n  status: 500\n  times: 1\n",
    );
    let run = Cli::new(Some(&c), &args("secret create --from-stdin"))
        .stdin(TEST_KEY)
        .run();
    run.exit(0);
    let creates: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.verb == "create" && r.resource == "secrets")
        .collect();
    assert_eq!(creates.len(), 3, "two 429s then success: {creates:?}");
    assert_eq!(c.list("secrets", Some("default")).len(), 1);
}

#[test]
fn dry_runs_print_masked_and_store_nothing() {
    let c = cluster("");
    let run = Cli::new(
        Some(&c),
        &args("secret create --from-stdin --dry-run=client -o yaml"),
    )
    .stdin(TEST_KEY)
    .run();
    run.exit(0);
    run.stdout_has("redacted: 30 bytes");
    run.stdout_has("kind: Secret");
    assert!(c.writes().is_empty());

    let run = Cli::new(
        Some(&c),
        &args("secret create --from-stdin --dry-run=server -o json"),
    )
    .stdin(TEST_KEY)
    .run();
    run.exit(0);
    run.stdout_has("redacted");
    assert!(
        c.get("secrets", Some("default"), "taotoken-secret")
            .is_none()
    );
    assert!(c.requests().iter().any(|r| r.verb == "create" && r.dry_run));
}

#[test]
fn trace_logging_never_shows_the_key() {
    let c = cluster("");
    let run = Cli::new(Some(&c), &args("-vvv secret create --from-stdin"))
        .stdin(TEST_KEY)
        .env("RUST_LOG", "trace")
        .run();
    run.exit(0);
    // The leak check in Run is the assertion; make sure trace output really was produced.
    assert!(
        run.stderr.contains("TRACE") || run.stderr.contains("DEBUG"),
        "no logs: {}",
        run.stderr
    );
}

#[test]
fn check_reports_missing_secret_and_key_with_the_fix() {
    let c = cluster("");
    let run = tfjob(&c, &args("secret check"));
    run.exit(3);
    run.stderr_has("Secret default/taotoken-secret does not exist");
    run.stderr_has("kubectl tfjob secret create taotoken-secret -n default");
    Cli::new(Some(&c), &args("secret create --from-stdin --key other"))
        .stdin(TEST_KEY)
        .run()
        .exit(0);
    let run = tfjob(&c, &args("secret check"));
    run.exit(3);
    run.stderr_has("has no key \"api-key\" (it has: other)");
    let run = tfjob(&c, &args("secret check --key other"));
    run.exit(0);
    run.stdout_has("non-empty \"other\" key");
}

/// A port we keep on 127.0.0.1 where every connection is closed without an answer. (A port
/// merely "free a moment ago" could be taken by another test's cluster while retries run.)
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            drop(conn);
        }
    });
    port
}

/// A one-shot fake OpenAI-compatible gateway on 127.0.0.1: answers `GET …/v1/models` with
/// 200 for the test key, 401 for anything else, 404 for other paths. Returns its base URL.
fn fake_gateway(requests: usize) -> String {
    gateway_listing(requests, false)
}

/// [`fake_gateway`]; `public`: the model list answers any key, or none (vLLM, Ollama).
fn gateway_listing(requests: usize, public: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut auth = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                    break;
                }
                if line.to_ascii_lowercase().starts_with("authorization:") {
                    auth = line["authorization:".len()..].trim().to_string();
                }
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_string();
            let (status, body) = if path != "/api/v1/models" {
                ("404 Not Found", r#"{"error":"not found"}"#)
            } else if public || auth == format!("Bearer {TEST_KEY}") {
                (
                    "200 OK",
                    r#"{"object":"list","data":[{"id":"m1"},{"id":"m2"},{"id":"m3"}]}"#,
                )
            } else {
                ("401 Unauthorized", r#"{"error":"invalid key"}"#)
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.read(&mut [0u8; 1]);
        }
    });
    format!("http://127.0.0.1:{port}/api")
}

#[test]
fn verify_accepts_a_good_key_and_refuses_bad_ones_without_storing() {
    let c = cluster("");
    // The good key is asked twice: with it, then without any (a 401 says keys are checked).
    let base = fake_gateway(4);

    let run = Cli::new(
        Some(&c),
        &[
            "secret",
            "create",
            "--from-stdin",
            "--verify",
            "--base-url",
            &base,
        ],
    )
    .stdin(TEST_KEY)
    .run();
    run.exit(0);
    run.stderr_has("accepted the key");
    run.stderr_has("3 models");
    assert!(stored_key(&c, "default", "taotoken-secret", "base-url").is_some());

    let run = Cli::new(
        Some(&c),
        &[
            "secret",
            "create",
            "other",
            "--from-stdin",
            "--verify",
            "--base-url",
            &base,
        ],
    )
    .stdin("sk-wrong-key-1")
    .run();
    run.exit(3);
    run.stderr_has("rejected the key");
    run.stderr_has("HTTP 401");
    assert!(c.get("secrets", Some("default"), "other").is_none());

    let doubled = format!("{base}/v1");
    let run = Cli::new(
        Some(&c),
        &[
            "secret",
            "create",
            "third",
            "--from-stdin",
            "--verify",
            "--base-url",
            &doubled,
        ],
    )
    .stdin(TEST_KEY)
    .run();
    run.exit(3);
    run.stderr_has("already ends in /v1");
    run.stderr_has(&format!("--base-url {base}"));
    assert!(c.get("secrets", Some("default"), "third").is_none());

    // No answer: a network error, nothing stored.
    let port = closed_port();
    let run = Cli::new(
        Some(&c),
        &[
            "secret",
            "create",
            "fourth",
            "--from-stdin",
            "--verify",
            "--base-url",
            &format!("http://127.0.0.1:{port}/api"),
        ],
    )
    .stdin(TEST_KEY)
    .run();
    run.exit(3);
    run.stderr_has("cannot reach the gateway");
    assert!(c.get("secrets", Some("default"), "fourth").is_none());
}

/// The env var `name` of the first container of a pod or pod template spec.
fn env_of<'a>(spec: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    spec["containers"][0]["env"]
        .as_array()
        .and_then(|env| env.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("no env {name} in {spec}"))
}

/// One gateway per namespace: a Secret holding `base-url` makes the pods in that namespace
/// read their base URL from it, so the team's key never goes to the default vendor.
#[test]
fn a_namespace_whose_secret_holds_a_base_url_gets_it_in_its_pods() {
    let c = cluster("namespaces: [default, kubeflow, team-gw]");
    let gateway = "https://gw.team.example/api";
    for ns in ["team-gw", "default"] {
        let mut args = vec!["secret", "create", "-n", ns, "--from-stdin"];
        if ns == "team-gw" {
            args.extend(["--base-url", gateway]);
        }
        Cli::new(Some(&c), &args).stdin(TEST_KEY).run().exit(0);
    }

    // `secret check` says which gateway jobs in each namespace will use.
    let run = tfjob(&c, &args("secret check -n team-gw"));
    run.exit(0);
    assert!(
        run.stdout.contains(&format!(
            "jobs in namespace team-gw will use base URL {gateway} (from secret/taotoken-secret key \"base-url\""
        )),
        "{}",
        run.stdout
    );
    let run = tfjob(&c, &args("secret check"));
    run.stdout_has(
        "jobs in namespace default will use base URL https://taotoken.net/api (the default",
    );

    // --api-base-url wins over the stored one.
    let mut args = vec!["-n", "team-gw"];
    args.extend(crate::submit::submit_args(&[
        "--api-base-url",
        "https://other.example/api",
        "--dry-run=server",
        "-o",
        "json",
    ]));
    let run = tfjob(&c, &args);
    run.exit(0);
    let job: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let spec = &job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
    assert_eq!(
        env_of(spec, "TAOTOKEN_BASE_URL")["value"],
        "https://other.example/api"
    );
    // submit: the base URL comes from the Secret (a reference, not a copy).
    let mut argv = vec!["-n", "team-gw"];
    argv.extend(crate::submit::submit_args(&["--openai-env"]));
    let run = tfjob(&c, &argv);
    run.exit(0);
    run.stderr_has(&format!(
        "gateway base URL: {gateway} (from Secret team-gw/taotoken-secret, key \"base-url\")"
    ));
    tfjob(
        &c,
        &crate::args("wait tf-dist-train -n team-gw --for all-running"),
    )
    .exit(0);
    let pods = c.list("pods", Some("team-gw"));
    assert_eq!(pods.len(), 4, "1 PS + 3 workers");
    let from_secret =
        serde_json::json!({"secretKeyRef": {"name": "taotoken-secret", "key": "base-url"}});
    for pod in &pods {
        let spec = &pod["spec"];
        assert_eq!(
            env_of(spec, "TAOTOKEN_BASE_URL")["valueFrom"],
            from_secret,
            "{pod}"
        );
        assert_eq!(
            env_of(spec, "OPENAI_BASE_URL")["value"],
            "$(TAOTOKEN_BASE_URL)/v1"
        );
        assert!(
            !pod.to_string().contains("taotoken.net"),
            "default gateway in {pod}"
        );
    }

    // The default namespace's Secret has no base-url: the literal default, as before.
    tfjob(&c, &crate::submit::submit_args(&[])).exit(0);
    let job = c.get("tfjobs", Some("default"), "tf-dist-train").unwrap();
    let spec = &job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
    assert_eq!(
        env_of(spec, "TAOTOKEN_BASE_URL")["value"],
        "https://taotoken.net/api"
    );

    // render is offline and keeps the literal default.
    let mut args = vec!["-n", "team-gw", "render"];
    args.extend(crate::submit::ARTICLE);
    let run = tfjob(&c, &args);
    run.exit(0);
    run.stdout_has("https://taotoken.net/api");
}

#[test]
fn base_urls_must_be_absolute_http() {
    let c = cluster("");
    for bad in [
        "not a url",
        "javascript:alert(1)",
        "gw.example.com/api",
        "https://",
    ] {
        let run = Cli::new(
            Some(&c),
            &["secret", "create", "--from-stdin", "--base-url", bad],
        )
        .stdin(TEST_KEY)
        .run();
        run.exit(2);
        assert!(
            run.stderr
                .contains("e.g. --base-url https://gateway.example.com/api"),
            "{bad}: {}",
            run.stderr
        );
    }
    assert!(c.writes().is_empty());
    let run = Cli::new(
        Some(&c),
        &args("secret create --from-stdin --base-url https://gw.example/api/v1/"),
    )
    .stdin(TEST_KEY)
    .run();
    run.exit(0);
    run.stderr_has("ends in /v1");
}

/// Issue 14 item 8: keys over the limit or with bytes an HTTP header cannot carry are refused
/// (exit 2) before any request, never cut to fit; every input is read bounded.
#[test]
fn long_and_malformed_keys_are_refused_whole() {
    let c = cluster("");
    let long = "k".repeat(70_000);
    let run = Cli::new(Some(&c), &args("secret create --from-stdin"))
        .stdin(&long)
        .run();
    run.exit(2);
    run.stderr_has("<stdin>: too large: over the 16 KiB limit for an API key");
    let run = Cli::new(Some(&c), &args("secret create --from-env E2E_LONG_KEY"))
        .env("E2E_LONG_KEY", &long)
        .run();
    run.exit(2);
    run.stderr_has("is 70000 bytes");
    for (key, why) in [
        ("sk-abc\0def", "contains a NUL byte"),
        ("sk-abc\x07def", "contains a control character"),
        ("sk-abc def", "contains whitespace"),
        ("sk-abcdéf", "contains non-ASCII characters"),
    ] {
        let run = Cli::new(Some(&c), &args("secret create --from-stdin"))
            .stdin(key)
            .run();
        run.exit(2);
        assert!(run.stderr.contains(why), "{key:?}: {}", run.stderr);
        run.stderr_has("an HTTP Authorization header cannot carry it");
        assert!(!run.stderr.contains("sk-abc"), "key echoed: {}", run.stderr);
    }
    // A device is read bounded, and a missing file is invalid input.
    let run = tfjob(&c, &args("secret create --from-file /dev/zero"));
    run.exit(2);
    run.stderr_has("/dev/zero: too large");
    let run = tfjob(&c, &args("secret create --from-file /no/such/key-file"));
    run.exit(2);
    run.stderr_has("/no/such/key-file: cannot read");
    assert!(c.requests().is_empty(), "requests: {:?}", c.requests());
    // At the limit it is stored whole.
    let exact = "k".repeat(16 * 1024 - 1);
    Cli::new(Some(&c), &args("secret create --from-stdin"))
        .stdin(&format!("{exact}\n"))
        .run()
        .exit(0);
    assert_eq!(
        stored_key(&c, "default", "taotoken-secret", "api-key").unwrap(),
        exact.as_bytes()
    );
}

/// Issue 14 item 14: `--from-env VAR` is gone from the environment before the client starts an
/// exec credential plugin, so the plugin never sees the key.
#[test]
fn an_exec_credential_plugin_does_not_inherit_the_from_env_variable() {
    let c = cluster("token: exec-token-7");
    let kubeconfig = c.write_kubeconfig(
        "exec-config",
        &tfjob_testcluster::Credential::Exec {
            token: "exec-token-7".into(),
        },
    );
    let script = format!("{}.exec-credential.sh", kubeconfig.display());
    let seen = kubeconfig.with_file_name("plugin-env.txt");
    let original = std::fs::read_to_string(&script).unwrap();
    let body = original.strip_prefix("#!/bin/sh\n").unwrap();
    std::fs::write(
        &script,
        format!("#!/bin/sh\nenv > '{}'\n{body}", seen.display()),
    )
    .unwrap();
    let k = kubeconfig.display().to_string();
    let run = Cli::new(
        None,
        &[
            "--kubeconfig",
            &k,
            "secret",
            "create",
            "--from-env",
            "E2E_GATEWAY_KEY",
        ],
    )
    .env("E2E_GATEWAY_KEY", TEST_KEY)
    .run();
    run.exit(0);
    assert_eq!(
        stored_key(&c, "default", "taotoken-secret", "api-key").unwrap(),
        TEST_KEY.as_bytes()
    );
    let env = std::fs::read_to_string(&seen).expect("the exec plugin ran");
    assert!(env.contains("PATH="), "{env}");
    assert!(
        !env.contains("E2E_GATEWAY_KEY"),
        "the plugin inherited the variable"
    );
    assert!(!env.contains(TEST_KEY), "the plugin saw the key");
}

#[test]
fn secret_check_in_a_namespace_that_does_not_exist_says_so() {
    let c = cluster("");
    let run = tfjob(&c, &args("secret check -n nope"));
    run.exit(3);
    run.stderr_has("namespace \"nope\" does not exist");
    run.stderr_has("kubectl create namespace nope");
    assert!(!run.stderr.contains("secret create"), "{}", run.stderr);
}

/// Issue 47 item 8: a gateway whose model list answers anyone (vLLM, Ollama, OpenRouter without
/// a key) says nothing about the key: `--verify` stores it with a warning that it was not
/// verified, never "accepted the key".
#[test]
fn verify_on_a_public_model_list_says_the_key_was_not_verified() {
    let c = cluster("");
    // The key, then none, then a wrong one: all listed.
    let base = gateway_listing(3, true);
    let run = Cli::new(
        Some(&c),
        &[
            "secret",
            "create",
            "--from-stdin",
            "--verify",
            "--base-url",
            &base,
        ],
    )
    .stdin("sk-any-key-at-all")
    .run();
    run.exit(0);
    run.stderr_has("warning: not verified: GET ");
    run.stderr_has("lists 3 models without a key and to a wrong one too");
    assert!(!run.stderr.contains("accepted the key"), "{}", run.stderr);
    assert!(!run.all().contains("sk-any-key-at-all"), "{}", run.all());
    assert!(stored_key(&c, "default", "taotoken-secret", "api-key").is_some());
}
