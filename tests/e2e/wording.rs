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

/// Shapes of Rust's `{:?}` output of internal types (issue 24, item 6): `Some("x")`,
/// `Status { … }`, `kind: NotFound`, `Duration`-style `1.500212345s`, `std::io::…` paths.
fn debug_shapes(text: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for line in text.lines() {
        let b = line.as_bytes();
        let struct_brace = b.windows(3).enumerate().any(|(i, w)| {
            w == b" { " && i > 0 && b[..i].last().is_some_and(|c| c.is_ascii_alphanumeric())
        });
        let rust_path = b
            .windows(4)
            .any(|w| w[0].is_ascii_alphabetic() && &w[1..3] == b"::" && w[3].is_ascii_alphabetic());
        let long_fraction = line
            .split(|c: char| !c.is_ascii_digit() && c != '.')
            .any(|n| {
                n.split_once('.')
                    .is_some_and(|(_, f)| f.len() >= 6 && f.bytes().all(|c| c.is_ascii_digit()))
            });
        let markers = [
            "Some(",
            "Ok(",
            "Err(",
            "None)",
            "ErrorKind",
            "Os {",
            "kind: ",
        ];
        if struct_brace || rust_path || long_fraction || markers.iter().any(|m| line.contains(m)) {
            hits.push(line.to_string());
        }
    }
    hits
}

#[test]
fn debug_shapes_are_recognised() {
    assert!(!debug_shapes("error: Status { code: 404 }").is_empty());
    assert!(!debug_shapes("type Some(\"x\")").is_empty());
    assert!(!debug_shapes("retrying in 1.500212345s").is_empty());
    assert!(!debug_shapes("std::io::Error").is_empty());
    assert!(debug_shapes("registry [::1]:5000 at https://h:6443, in 1.5s {{ x }}").is_empty());
}

#[test]
fn error_paths_speak_in_words_not_debug_structures() {
    let c = crate::cluster("");
    let (_d, bad_schema) = manifest_file(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: -1\n      template: {spec: {containers: [{name: tensorflow, image: \"busybox:1\", resources: {limits: {memory: \" 4Gi\"}}}]}}\n",
    );
    let (_e, not_yaml) = manifest_file("a: [\n");
    let (_f, template) = manifest_file("{{ [1] * 100000000 }}");
    let bad_schema = bad_schema.to_str().unwrap();
    let not_yaml = not_yaml.to_str().unwrap();
    let template = template.to_str().unwrap();
    let no_cluster: &[&[&str]] = &[
        &["validate", "-f", bad_schema],
        &["validate", "-f", not_yaml],
        &["validate", "-f", "/nonexistent/job.yaml"],
        &["render", "-t", template],
        &["render", "-t", "no-such-template"],
        &["list", "--server", "http://127.0.0.1:1"],
        &["get", "j", "--server", "http://[::1]:1"],
        &["wait", "j", "--timeout", "10parsecs"],
        &["logs", "j", "--since-time", "yesterday"],
        &["secret", "create", "--base-url", "ftp://user:pw@host/x"],
    ];
    let with_cluster: &[&[&str]] = &[
        &["get", "no-such-job"],
        &["delete", "no-such-job"],
        &["logs", "no-such-job"],
        &["describe", "no-such-job"],
        &["submit", "-f", bad_schema],
        &["submit", "-f", not_yaml],
        &["get", "-n", "NOT_A_NAMESPACE", "j"],
    ];
    let mut failures = Vec::new();
    let runs = no_cluster
        .iter()
        .map(|a| (a, Cli::new(None, a).env("KUBECONFIG", "/nonexistent").run()))
        .chain(
            with_cluster
                .iter()
                .map(|a| (a, Cli::new(Some(&c), a).run())),
        );
    for (args, run) in runs {
        assert_ne!(run.code, 0, "{args:?} should fail: {}", run.all());
        assert!(!run.stderr.trim().is_empty(), "{args:?}: no message");
        for hit in debug_shapes(&run.stderr) {
            failures.push(format!("{args:?}: {hit}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One namespace rule, one wording (issue 59): a manifest naming another namespace than `-n`
/// is refused alike by every verb that sends or checks it, in kubectl's words, before any
/// write (exit 2); without `-n` the manifest's namespace is used, as kubectl uses it.
#[test]
fn a_namespace_the_file_and_the_flag_disagree_on_is_said_alike_by_every_verb() {
    let secret = crate::submit::SECRET;
    let c = crate::cluster(&format!(
        "namespaces: [default, team, other]\nobjects:{secret}{}",
        secret.replace("namespace: default", "namespace: other")
    ));
    let render = Cli::new(None, &{
        let mut a = vec!["render"];
        a.extend_from_slice(crate::submit::ARTICLE);
        a
    })
    .run();
    render.expect_code(0);
    let body = render
        .stdout
        .replacen("metadata:\n", "metadata:\n  namespace: other\n", 1);
    let (_d, path) = manifest_file(&body);
    let file = path.to_str().unwrap();
    let words = "the namespace from the provided object \"other\" does not match the namespace \
                 \"team\". You must pass '--namespace=other' to perform this operation.";
    for verb in [
        vec!["submit", "-f", file, "-n", "team"],
        vec!["check", "-f", file, "-n", "team"],
        vec!["validate", "--dry-run=server", "-f", file, "-n", "team"],
        vec!["submit", "-f", file, "-n", "team", "--dry-run=server"],
    ] {
        c.clear_requests();
        let run = crate::tfjob(&c, &verb);
        assert_eq!(run.code, 2, "{verb:?}: {}", run.all());
        assert!(run.stdout.is_empty(), "{verb:?}: {}", run.stdout);
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: ") && first.ends_with(words),
            "{verb:?}: {}",
            run.stderr
        );
        assert!(c.writes().is_empty(), "{verb:?}: {:?}", c.writes());
    }
    crate::tfjob(&c, &["submit", "-f", file, "--skip-capacity-check"]).exit(0);
    assert!(c.get("tfjobs", Some("other"), "tf-dist-train").is_some());
}
