//! No key in any message (issue 24, item 4): a server that echoes the request (a policy
//! webhook's denial quoting the Secret) cannot make the key or its base64 appear at any
//! verbosity, and a base URL carrying a password is refused without printing it. Every run also
//! goes through [`crate::Run`]'s own check that neither form of the test key ever appears.

use crate::{Cli, TEST_KEY, cluster, test_key_b64};

#[test]
fn a_webhook_denial_that_echoes_the_secret_never_shows_the_key_at_any_verbosity() {
    let c = cluster(
        "faults:\n- match: {verb: create, resource: secrets}\n  status: 403\n  message: 'admission webhook \"policy.example.com\" denied the request: object'\n  echoBody: true\n  times: 0",
    );
    for verbosity in [None, Some("-v"), Some("-vvv")] {
        let mut args = vec!["secret", "create", "--from-stdin"];
        if let Some(v) = verbosity {
            args.insert(0, v);
        }
        let run = Cli::new(Some(&c), &args)
            .stdin(&format!("{TEST_KEY}\n"))
            .run();
        // The denial is reported (the webhook's name and its words), the key is not.
        run.expect_code(2);
        assert!(
            run.stderr.contains("policy.example.com"),
            "{verbosity:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("[REDACTED]"),
            "{verbosity:?}: {}",
            run.stderr
        );
        assert!(!run.all().contains(&test_key_b64()));
    }
    // The server did see the Secret (the echo is real, not a fault that hid the body).
    let echoed = c
        .requests()
        .into_iter()
        .filter(|r| r.verb == "create" && r.resource == "secrets")
        .count();
    assert_eq!(echoed, 3);
}

#[test]
fn a_base_url_with_a_password_is_refused_and_never_printed() {
    let run = Cli::new(
        None,
        &[
            "render",
            "--name",
            "t",
            "--image",
            "tensorflow/tensorflow:2.13.0",
            "--api-base-url",
            "https://user:hunter2-pass@gateway.example/api",
        ],
    )
    .run();
    run.expect_code(2);
    assert!(
        run.stderr.contains("user name or password"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("https://***@gateway.example/api"),
        "{}",
        run.stderr
    );
    assert!(!run.all().contains("hunter2-pass"), "{}", run.all());

    let c = cluster("");
    let run = Cli::new(
        Some(&c),
        &[
            "secret",
            "create",
            "--from-stdin",
            "--base-url",
            "https://user:hunter2-pass@gateway.example/api",
        ],
    )
    .stdin(&format!("{TEST_KEY}\n"))
    .run();
    run.expect_code(2);
    assert!(!run.all().contains("hunter2-pass"), "{}", run.all());
    assert!(c.writes().is_empty(), "{:?}", c.writes());
}

/// Issue 60: one redaction layer on every sink. Each hostile key (a newline, quotes, a
/// backslash, spaces, a tab, non-ASCII) sits in the gateway Secret and in two replicas' logs
/// (`key=…`, `Authorization: Bearer …`), and every reading verb runs in every output format,
/// `--save` folders included: no byte written holds the key or a run of it.
#[test]
fn no_verb_in_any_format_writes_a_hostile_key() {
    use base64::Engine as _;
    for key in crate::HOSTILE_KEYS {
        let b64 = base64::engine::general_purpose::STANDARD.encode(key);
        let logged = serde_json::to_string(&format!("step 1/10 loss 0.5 key={key}")).unwrap();
        let bearer = serde_json::to_string(&format!("Authorization: Bearer {key}")).unwrap();
        let c = cluster(&format!(
            "gatewayKey: {}\ncontainerBehaviour:\n- match: {{replicaType: worker, index: 0}}\n  log: {logged}\n- match: {{replicaType: ps}}\n  log: {bearer}\nobjects:\n  - apiVersion: v1\n    kind: Secret\n    metadata: {{name: taotoken-secret, namespace: default}}\n    type: Opaque\n    data: {{api-key: {b64}}}\n",
            serde_json::to_string(key.trim()).unwrap()
        ));
        let dir = tempfile::tempdir().unwrap();
        let saved = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
        let (wait_dir, diagnose_dir, logs_dir) = (saved("wait"), saved("diagnose"), saved("logs"));
        let mut outputs: Vec<(String, String)> = Vec::new();
        let owned = |l: &str| -> Vec<String> { l.split(' ').map(String::from).collect() };
        // submit first: the job the others read.
        let mut runs: Vec<Vec<String>> = vec![
            crate::submit::submit_args(&[
                "--skip-capacity-check",
                "--wait",
                "--settle",
                "0",
                "--timeout",
                "60s",
            ])
            .into_iter()
            .map(String::from)
            .collect(),
        ];
        runs.extend(
            [
                "list",
                "list -o wide",
                "list -o json",
                "list -o yaml",
                "list -o name",
                "get tf-dist-train",
                "get tf-dist-train -o json",
                "get tf-dist-train -o yaml",
                "logs tf-dist-train",
                "logs tf-dist-train --timestamps",
                "top tf-dist-train",
                "top tf-dist-train -o wide",
                "top tf-dist-train -o json",
                "diagnose tf-dist-train",
                "diagnose tf-dist-train -o json",
                "diagnose tf-dist-train -o yaml",
                "-v diagnose tf-dist-train",
                "probe tf-dist-train",
                "probe tf-dist-train -o wide",
                "probe tf-dist-train -o json",
                "probe tf-dist-train -o yaml",
                "wait tf-dist-train --settle 0 --timeout 30s",
                "wait tf-dist-train --settle 0 --timeout 30s -o json",
                "export tf-dist-train --to jobset",
            ]
            .map(owned),
        );
        // The job trains on, so a wait for success ends at its deadline, saving as it ends.
        runs.push(owned(&format!(
            "wait tf-dist-train --for succeeded --timeout 2s --save {wait_dir}"
        )));
        runs.push(owned(&format!(
            "diagnose tf-dist-train --save {diagnose_dir}"
        )));
        runs.push(owned(&format!("logs tf-dist-train --save {logs_dir}")));
        for argv in &runs {
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let run = crate::tfjob(&c, &argv);
            assert!(matches!(run.code, 0 | 3 | 4 | 5), "{argv:?}: {}", run.all());
            outputs.push((argv.join(" "), run.all()));
        }
        for folder in [&wait_dir, &diagnose_dir, &logs_dir] {
            let mut stack = vec![std::path::PathBuf::from(folder)];
            let mut files = 0;
            while let Some(p) = stack.pop() {
                if p.is_dir() {
                    stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                } else if p.is_file() {
                    files += 1;
                    let bytes = std::fs::read(&p).unwrap();
                    outputs.push((
                        p.display().to_string(),
                        String::from_utf8_lossy(&bytes).into_owned(),
                    ));
                }
            }
            assert!(files > 0, "--save {folder} wrote nothing");
        }
        // The logs were read and carry the lines, the key replaced.
        let logs = &outputs
            .iter()
            .find(|(cmd, _)| cmd == "logs tf-dist-train")
            .unwrap()
            .1;
        assert!(logs.contains("step 1/10 loss 0.5 key="), "{logs}");
        assert!(logs.contains("[REDACTED]"), "{logs}");
        for (what, text) in &outputs {
            for run in crate::key_runs(key) {
                assert!(
                    !text.contains(&run),
                    "{what} wrote {run:?} of key {key:?}:\n{text}"
                );
            }
        }
    }
}
