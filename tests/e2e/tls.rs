//! The binary over HTTPS with each way a kubeconfig authenticates: client certificate,
//! static token, exec credential plugin; and what it says when the CA or the token is wrong.

use std::path::Path;

use tfjob_testcluster::{Credential, Scenario, TestCluster, unrelated_ca_pem};

use crate::submit::{SECRET, submit_args};
use crate::{Cli, Run};

/// HTTPS, `--anonymous-auth=false`, a token-table user "bob" and the Secret in place.
fn https_cluster() -> TestCluster {
    let mut scenario = Scenario::from_yaml(&format!(
        "security:\n  tls: true\n  requireAuth: true\n  tokens:\n  - {{token: bob-token, user: bob, groups: [ml-team]}}\nobjects:{SECRET}"
    ))
    .expect("scenario parses");
    scenario.security.kubeconfig = tfjob_testcluster::KubeconfigAuth::None;
    TestCluster::start(scenario)
}

fn run_with(kubeconfig: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--kubeconfig", kubeconfig.to_str().unwrap()];
    all.extend_from_slice(args);
    Cli::new(None, &all).run()
}

#[test]
fn submit_and_wait_over_https_with_each_credential() {
    let cases = [
        (
            Credential::ClientCert {
                user: "alice".into(),
                groups: vec!["ml-team".into()],
            },
            "alice",
        ),
        (Credential::Token("bob-token".into()), "bob"),
        (
            Credential::Exec {
                token: "bob-token".into(),
            },
            "bob",
        ),
    ];
    for (credential, user) in cases {
        let c = https_cluster();
        let kubeconfig = c.write_kubeconfig("config", &credential);
        let run = run_with(&kubeconfig, &submit_args(&[]));
        run.expect_code(0);
        assert_eq!(
            run.stdout.trim(),
            "tfjob.kubeflow.org/tf-dist-train created",
            "{credential:?}"
        );
        let run = run_with(
            &kubeconfig,
            &[
                "wait",
                "tf-dist-train",
                "--for",
                "running",
                "--timeout",
                "30s",
            ],
        );
        run.expect_code(0);
        assert!(
            run.stdout.contains("condition met (Running)"),
            "{credential:?}: {}",
            run.stdout
        );
        let requests = c.requests();
        assert!(!requests.is_empty());
        let others: Vec<_> = requests.iter().filter(|r| r.user != user).collect();
        assert!(
            others.is_empty(),
            "{credential:?}: requests not made as {user}: {others:?}"
        );
        let job = c.get("tfjobs", Some("default"), "tf-dist-train");
        assert!(job.is_some(), "{credential:?}: job stored");
    }
}

#[test]
fn secret_check_over_https_with_a_client_certificate() {
    let c = https_cluster();
    let kubeconfig = c.write_kubeconfig(
        "config",
        &Credential::ClientCert {
            user: "alice".into(),
            groups: vec![],
        },
    );
    let run = run_with(&kubeconfig, &["secret", "check"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("non-empty \"api-key\" key"),
        "{}",
        run.stdout
    );
}

#[test]
fn an_unknown_certificate_authority_is_reported_as_such() {
    let c = https_cluster();
    let kubeconfig = c.write_kubeconfig_trusting(
        "config",
        &Credential::Token("bob-token".into()),
        Some(&unrelated_ca_pem()),
    );
    let run = run_with(&kubeconfig, &["secret", "check"]);
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("presented a certificate this client does not trust")
            && run.stderr.contains("UnknownIssuer")
            && run.stderr.contains("certificate-authority"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("cannot reach"),
        "not a reachability problem: {}",
        run.stderr
    );
    assert!(
        c.requests().is_empty(),
        "no request got through the handshake"
    );
}

#[test]
fn rejected_and_missing_credentials_are_reported_as_rejected() {
    let c = https_cluster();
    for credential in [Credential::Token("wrong-token".into()), Credential::None] {
        let kubeconfig = c.write_kubeconfig("config", &credential);
        let run = run_with(&kubeconfig, &["secret", "check"]);
        run.expect_code(3);
        assert!(
            run.stderr.contains("rejected your credentials"),
            "{credential:?}: {}",
            run.stderr
        );
    }
    assert!(c.requests().iter().all(|r| r.status == 401));
}
