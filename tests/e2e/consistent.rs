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
