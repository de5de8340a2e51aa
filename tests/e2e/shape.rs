//! What every command shares: the User-Agent on every request, kubectl's connection flags, and
//! one behaviour when stdout's reader has gone away.

use super::submit::{ARTICLE, SECRET, submit_args};
use super::{Cli, cluster, tfjob};

/// kubectl's shape (client-go's `rest.DefaultKubernetesUserAgent`): `name/version (os/arch)`.
fn expected_user_agent() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("kubectl-tfjob/{} ({os}/{arch})", env!("CARGO_PKG_VERSION"))
}

#[test]
fn every_request_carries_the_plugin_user_agent() {
    let c = cluster(&format!("objects:{SECRET}"));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    tfjob(&c, &["diagnose", "tf-dist-train"]);
    let requests = c.requests();
    assert!(requests.len() > 5, "{requests:?}");
    let expected = expected_user_agent();
    for r in &requests {
        assert_eq!(r.user_agent, expected, "{} {}", r.method, r.path);
    }
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        assert!(expected.ends_with(" (linux/amd64)"), "{expected}");
    }
}

#[test]
fn server_and_token_flags_reach_the_cluster_without_a_kubeconfig() {
    let c = cluster(&format!("token: flag-token-1\nobjects:{SECRET}"));
    let url = c.url();
    // No --kubeconfig, and HOME has none: only -s says where the API server is, and --token is
    // the credential (a wrong one is refused, so the flag is what authenticates).
    let check =
        |token: &str| Cli::new(None, &["secret", "check", "-s", &url, "--token", token]).run();
    let wrong = check("not-the-token");
    wrong.expect_code(3);
    assert!(
        wrong.stderr.contains("rejected your credentials"),
        "{}",
        wrong.stderr
    );
    let run = check("flag-token-1");
    run.expect_code(0);
    assert!(
        run.stdout.contains("secret/taotoken-secret"),
        "{}",
        run.stdout
    );
    assert!(!run.all().contains("flag-token-1"), "the token was printed");
    assert!(
        c.requests()
            .iter()
            .any(|r| r.resource == "secrets" && r.status == 200),
        "{:?}",
        c.requests()
    );
}

#[test]
fn a_closed_stdout_ends_offline_commands_quietly() {
    for args in [
        &["templates", "show", "ps-worker"][..],
        &["templates", "list"][..],
        &["completion", "bash"][..],
    ] {
        let run = Cli::new(None, args).run_with_closed_stdout();
        run.expect_code(0);
        assert_eq!(run.stderr, "", "{args:?}");
    }
    let mut render = vec!["render"];
    render.extend_from_slice(ARTICLE);
    let yaml = Cli::new(None, &render).run();
    yaml.expect_code(0);
    let run = Cli::new(None, &["validate", "-f", "-", "-o", "json"])
        .stdin(&yaml.stdout)
        .run_with_closed_stdout();
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    let run = Cli::new(None, &render).run_with_closed_stdout();
    run.expect_code(0);
}

#[test]
fn a_closed_stdout_after_submit_still_reports_the_created_job() {
    let c = cluster(&format!("objects:{SECRET}"));
    let args = submit_args(&[]);
    let run = Cli::new(Some(&c), &args).run_with_closed_stdout();
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("tfjob.kubeflow.org/tf-dist-train created"),
        "{}",
        run.stderr
    );
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
}

#[test]
fn next_step_hints_repeat_the_connection_flags() {
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(&c, &submit_args(&["--context", "test"]));
    run.expect_code(0);
    let kubeconfig = c.kubeconfig().display().to_string();
    assert!(
        run.stderr.contains(&format!(
            "kubectl tfjob wait tf-dist-train -n default --kubeconfig {kubeconfig} --context test"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_closed_stdout_ends_wait_and_diagnose_quietly() {
    let c = cluster(&format!("objects:{SECRET}"));
    tfjob(&c, &submit_args(&[])).expect_code(0);
    for args in [
        &["wait", "tf-dist-train", "--for", "created", "-o", "json"][..],
        &["diagnose", "tf-dist-train", "-o", "json"][..],
        &["secret", "check"][..],
    ] {
        let run = Cli::new(Some(&c), args).run_with_closed_stdout();
        run.expect_code(0);
        assert_eq!(run.stderr, "", "{args:?}");
    }
}
