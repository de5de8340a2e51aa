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

/// Splits a line the way a POSIX shell would for the quoting hints use (plain words and
/// single-quoted ones), so a hint can be run as a user pasting it would run it.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut in_word) = (false, false);
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The command in a hint line such as `Follow it:   kubectl tfjob wait x -n ns`, as the
/// plugin's own arguments (what follows `kubectl tfjob`).
fn pasted(stderr: &str, marker: &str) -> Vec<String> {
    let line = stderr
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?} line in:\n{stderr}"));
    let start = line
        .find("kubectl tfjob ")
        .expect("a kubectl tfjob command")
        + 14;
    shell_words(line[start..].trim_end_matches(['`', '.']))
}

/// Two clusters in one kubeconfig, the current context pointing at the other one: a hint from
/// a `--context a --kubeconfig K` run, pasted as printed, must reach cluster a again.
#[test]
fn a_pasted_hint_reaches_the_same_cluster() {
    let a = cluster(&format!("objects:{SECRET}"));
    let b = cluster(&format!("objects:{SECRET}"));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("two clusters.yaml");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: b\n\
             clusters:\n- name: a\n  cluster: {{server: '{}'}}\n- name: b\n  cluster: {{server: '{}'}}\n\
             users:\n- name: u\n  user: {{}}\n\
             contexts:\n- name: a\n  context: {{cluster: a, user: u, namespace: default}}\n\
             - name: b\n  context: {{cluster: b, user: u, namespace: default}}\n",
            a.url(),
            b.url()
        ),
    )
    .unwrap();
    let k = kubeconfig.display().to_string();
    let mut args = vec!["--context", "a", "--kubeconfig", &k];
    args.extend(submit_args(&[]));
    let run = Cli::new(None, &args).run();
    run.expect_code(0);
    assert!(a.get("tfjobs", Some("default"), "tf-dist-train").is_some());
    let hint = pasted(&run.stderr, "Follow it:");
    // The user's order, the namespace named, the path quoted for the shell.
    assert_eq!(
        hint,
        [
            "wait",
            "tf-dist-train",
            "-n",
            "default",
            "--context",
            "a",
            "--kubeconfig",
            &k
        ]
    );
    a.clear_requests();
    b.clear_requests();
    let hint: Vec<&str> = hint.iter().map(String::as_str).collect();
    Cli::new(None, &hint).run().expect_code(0);
    assert!(
        a.requests()
            .iter()
            .any(|r| r.resource == "tfjobs" && r.name.as_deref() == Some("tf-dist-train")),
        "the pasted hint did not reach cluster a"
    );
    assert!(
        b.requests().is_empty(),
        "reached cluster b: {:?}",
        b.requests()
    );

    // An error's hint too: a missing Secret on cluster a, fixed by pasting the suggested
    // command (key on stdin), lands on cluster a.
    let c = cluster("");
    let d = cluster("");
    let kubeconfig = dir.path().join("kc2");
    std::fs::write(
        &kubeconfig,
        std::fs::read_to_string(dir.path().join("two clusters.yaml"))
            .unwrap()
            .replace(&a.url(), &c.url())
            .replace(&b.url(), &d.url()),
    )
    .unwrap();
    let k = kubeconfig.display().to_string();
    let run = Cli::new(
        None,
        &[
            "-n",
            "kubeflow",
            "--context",
            "a",
            "secret",
            "check",
            "--kubeconfig",
            &k,
        ],
    )
    .run();
    run.expect_code(3);
    let fix = pasted(&run.stderr, "Create it with:");
    assert_eq!(
        fix,
        [
            "secret",
            "create",
            "taotoken-secret",
            "-n",
            "kubeflow",
            "--context",
            "a",
            "--kubeconfig",
            &k
        ]
    );
    let mut fix: Vec<&str> = fix.iter().map(String::as_str).collect();
    fix.push("--from-stdin");
    Cli::new(None, &fix)
        .stdin(crate::TEST_KEY)
        .run()
        .expect_code(0);
    assert!(
        c.get("secrets", Some("kubeflow"), "taotoken-secret")
            .is_some()
    );
    assert!(
        d.get("secrets", Some("kubeflow"), "taotoken-secret")
            .is_none()
    );
}

/// `-v 2>file`: logs into a pipe or file carry no escape bytes, even with a colour TERM;
/// CLICOLOR_FORCE still asks for them, and NO_COLOR wins over it.
#[test]
fn logs_into_a_file_have_no_escape_codes() {
    let c = cluster(&format!("objects:{SECRET}"));
    for verbosity in ["-v", "-vv", "-vvv"] {
        let run = Cli::new(Some(&c), &["secret", "check", verbosity])
            .env("TERM", "xterm-256color")
            .run();
        run.expect_code(0);
        // -v logs only this tool's info lines (none for a check); -vv adds kube's debug lines.
        assert!(
            verbosity == "-v" || !run.stderr.is_empty(),
            "{verbosity} logged nothing"
        );
        assert!(
            !run.all().contains('\x1b'),
            "{verbosity}: escape codes in:\n{}",
            run.stderr
        );
    }
    let forced = Cli::new(Some(&c), &["secret", "check", "-vv"])
        .env("TERM", "xterm-256color")
        .env("CLICOLOR_FORCE", "1")
        .run();
    assert!(forced.stderr.contains('\x1b'), "{}", forced.stderr);
    let off = Cli::new(Some(&c), &["secret", "check", "-vv"])
        .env("CLICOLOR_FORCE", "1")
        .env("NO_COLOR", "1")
        .run();
    assert!(!off.stderr.contains('\x1b'), "{}", off.stderr);
}
