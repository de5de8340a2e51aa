//! Issue 39 item 6: one problem, one line, consistent verdicts.

use crate::submit::article_args;
use crate::{cluster, tfjob};

/// A missing gateway Secret: one line for it, and the verdict line, the JSON and the exit
/// code (3) all say "not ready".
#[test]
fn a_missing_secret_is_one_line_and_the_verdict_agrees_with_the_exit_code() {
    let c = cluster("");
    let run = tfjob(&c, &article_args("check", &[]));
    run.expect_code(3);
    // One finding line (its hint, under it, names the Secret to create).
    let lines = run
        .stdout
        .lines()
        .filter(|l| l.contains("taotoken-secret") && !l.trim_start().starts_with('→'))
        .count();
    assert_eq!(lines, 1, "{}", run.stdout);
    let verdict = run
        .stdout
        .lines()
        .find(|l| l.starts_with("Verdict:"))
        .unwrap();
    assert!(verdict.starts_with("Verdict: not ready"), "{verdict}");
    let run = tfjob(&c, &article_args("check", &["-o", "json"]));
    run.expect_code(3);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["verdict"], "notReady", "{v:#}");
}

/// `--name T1_bad` is the flag's fault, said as such, not the template's.
#[test]
fn a_bad_name_is_blamed_on_the_flag() {
    let mut a = vec!["render", "--name", "T1_bad"];
    a.extend_from_slice(&crate::submit::ARTICLE[2..]);
    let run = crate::Cli::new(None, &a).run();
    run.expect_code(2);
    assert!(
        run.stderr
            .starts_with("error: --name: \"T1_bad\" is not a valid TFJob name"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("template"), "{}", run.stderr);
    assert!(run.stderr.contains("\"t1-bad\""), "{}", run.stderr);
}

/// A missing job is said in one wording by every command, with the namespace where it does
/// exist, or the name meant.
#[test]
fn not_found_is_one_wording_with_where_it_is_or_the_name_meant() {
    let c = cluster("namespaces: [default, kubeflow, team-a]");
    let job = |ns: &str, name: &str| {
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
                "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}}})
    };
    c.insert(job("team-a", "mnist"));
    c.insert(job("default", "resnet-50"));
    let commands: [&[&str]; 8] = [
        &["get"],
        &["logs"],
        &["delete"],
        &["suspend"],
        &["top"],
        &["diagnose"],
        &["wait", "--timeout", "5s"],
        &["probe"],
    ];
    for cmd in commands {
        for (name, helps) in [
            ("mnist", "It exists in namespace team-a: add `-n team-a`."),
            ("resnet-5", "Did you mean \"resnet-50\"?"),
        ] {
            let mut a = vec![cmd[0], name];
            a.extend_from_slice(&cmd[1..]);
            let run = tfjob(&c, &a);
            run.expect_code(3);
            let want =
                format!("error: tfjobs.kubeflow.org \"{name}\" not found in namespace default");
            assert!(run.stderr.contains(&want), "{a:?}: {}", run.stderr);
            assert!(run.stderr.contains(helps), "{a:?}: {}", run.stderr);
        }
    }
}
