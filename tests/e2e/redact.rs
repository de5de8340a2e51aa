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
