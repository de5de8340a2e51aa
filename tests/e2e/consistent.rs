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
