//! Wording: no "1 restarts"-style plural in any message the binary carries, and the slips users
//! met are gone ("1 error in 0 documents", a value hidden behind "(3 chars)").

use crate::{Cli, manifest_file};

const NOUNS: &[&str] = &[
    "restarts",
    "errors",
    "warnings",
    "documents",
    "pods",
    "replicas",
    "workers",
    "jobs",
    "containers",
    "findings",
    "seconds",
    "minutes",
    "times",
    "requests",
    "lines",
    "keys",
    "roles",
    "services",
    "GPUs",
    "attempts",
];

/// Every "1 <plural noun>" in `bytes` (printable text, as `strings` shows it), with context.
fn singular_plurals(bytes: &[u8]) -> Vec<String> {
    let printable = |b: u8| (0x20..0x7f).contains(&b);
    let mut hits = Vec::new();
    for i in 1..bytes.len().saturating_sub(2) {
        if bytes[i] != b'1' || bytes[i + 1] != b' ' {
            continue;
        }
        // "11 pods", "0/1 nodes" (the scheduler's own wording) and "1.1 pods" are fine.
        let before = bytes[i - 1];
        if printable(before) && (before.is_ascii_digit() || before == b'/' || before == b'.') {
            continue;
        }
        let rest = &bytes[i + 2..];
        for noun in NOUNS {
            let n = noun.as_bytes();
            if rest.starts_with(n) && rest.get(n.len()).is_none_or(|c| !c.is_ascii_alphanumeric()) {
                let from = i.saturating_sub(40);
                let to = (i + 2 + n.len() + 20).min(bytes.len());
                hits.push(String::from_utf8_lossy(&bytes[from..to]).into_owned());
            }
        }
    }
    hits
}

#[test]
fn the_binary_carries_no_singular_count_with_a_plural_noun() {
    // The scan finds what it looks for, and only that.
    assert_eq!(singular_plurals(b"\0after 1 restarts\0").len(), 1);
    assert!(singular_plurals(b"\0 0/1 nodes, 11 pods, 1 restart\0").is_empty());
    let bin = std::fs::read(env!("CARGO_BIN_EXE_kubectl-tfjob")).expect("read the binary");
    let hits = singular_plurals(&bin);
    assert!(
        hits.is_empty(),
        "singular count with a plural noun:\n{}",
        hits.join("\n")
    );
}

#[test]
fn validate_counts_documents_only_when_there_are_some_and_shows_short_values() {
    let (_d, empty) = manifest_file("");
    let run = Cli::new(None, &["validate", "-f", empty.to_str().unwrap()]).run();
    run.expect_code(2);
    assert!(
        run.stderr.contains("validation failed (1 error):"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("0 documents"), "{}", run.stderr);

    let (_d, bad) = manifest_file(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: x\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: two\n      template:\n        spec:\n          containers: [{name: tensorflow, image: \"i:1\"}]\n",
    );
    let run = Cli::new(None, &["validate", "-f", bad.to_str().unwrap()]).run();
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("validation failed (1 error in 1 document):"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("expected integer, got a string \"two\""),
        "{}",
        run.stderr
    );
    // Information (one replica, the istio sidecar offline) is for -v; --strict does not fail on it.
    assert!(!run.stderr.contains("info:"), "{}", run.stderr);
    let run = Cli::new(None, &["validate", "-f", bad.to_str().unwrap(), "-v"]).run();
    assert!(
        run.stderr.contains("info:") && run.stderr.contains("istio"),
        "{}",
        run.stderr
    );
    let (_d, good) = manifest_file(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: x\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n        spec:\n          containers: [{name: tensorflow, image: \"i:1\"}]\n",
    );
    let run = Cli::new(
        None,
        &["validate", "-f", good.to_str().unwrap(), "--strict"],
    )
    .run();
    run.expect_code(0);
    assert_eq!(
        run.stderr, "",
        "a hand-written manifest on a cluster without a mesh: quiet"
    );
}
