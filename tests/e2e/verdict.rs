//! One reading, one verdict: `validate -f` and `submit -f` refuse the same manifests with the
//! same `file:line:column`, and names the API server could never store are refused offline.

use super::submit::SECRET;
use super::{Cli, cluster, manifest_file, tfjob};

const JOB: &str = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: verdict
  labels:
    team: a
  annotations:
    note: x
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.13.0
";

/// `(what, the line of JOB to replace, its replacement)`: each makes the manifest invalid in a way
/// only the reading (YAML 1.1 scalars, types) can tell. The finding is on the replaced line, or
/// (for a wrong collection) on its parent key's line just above.
const BROKEN: &[(&str, &str, &str)] = &[
    (
        "a label value that is a mapping",
        "    team: a",
        "    team: {a: b}",
    ),
    ("replicas: 2.5", "      replicas: 2", "      replicas: 2.5"),
    (
        "an annotation that is a boolean",
        "    note: x",
        "    note: yes",
    ),
    (
        "an annotation that is a list",
        "    note: x",
        "    note: [a]",
    ),
    ("a name that is a number", "  name: verdict", "  name: 123"),
    (
        "an image that is a list",
        "            image: tensorflow/tensorflow:2.13.0",
        "            image: [a]",
    ),
    (
        "containers as a mapping",
        "          - name: tensorflow",
        "            name: tensorflow",
    ),
];

#[test]
fn validate_and_submit_refuse_the_same_input_at_the_same_position() {
    let c = cluster(&format!("objects:{SECRET}"));
    let dir = tempfile::tempdir().unwrap();
    for (what, from, to) in BROKEN {
        assert!(JOB.contains(from), "{what}");
        let body = JOB.replacen(from, to, 1);
        let mut line = body.lines().position(|l| l == *to).unwrap() + 1;
        if to.trim_start().starts_with("name: tensorflow") {
            line -= 1;
        }
        let path = dir.path().join("job.yaml");
        std::fs::write(&path, &body).unwrap();
        let file = path.to_str().unwrap();
        let validate = Cli::new(None, &["validate", "-f", file]).run();
        let before = c.requests().len();
        let submit = tfjob(&c, &["submit", "-f", file]);
        assert_eq!(validate.code, 2, "{what}: validate\n{}", validate.stderr);
        assert_eq!(submit.code, 2, "{what}: submit\n{}", submit.stderr);
        assert_eq!(c.requests().len(), before, "{what}: submit made a request");
        // Both name the file and the offending line, with a column.
        let at = format!("{file}:{line}:");
        for (cmd, run) in [("validate", &validate), ("submit", &submit)] {
            let hit = run
                .stderr
                .lines()
                .find(|l| l.contains(&at))
                .unwrap_or_else(|| panic!("{what}: {cmd} does not say {at}COL:\n{}", run.stderr));
            let column = hit[hit.find(&at).unwrap() + at.len()..]
                .split(|ch: char| !ch.is_ascii_digit())
                .next()
                .unwrap();
            assert!(column.parse::<usize>().is_ok(), "{what}: {cmd}: {hit}");
        }
    }
}

/// go-yaml v2's resolver (resolve.go) reads `1e3` as the float 1000, which Go's encoding/json
/// sends as `1000`: kubectl submits `replicas: 1000`. Both commands must agree on that.
#[test]
fn validate_and_submit_agree_on_replicas_1e3() {
    let c = cluster(&format!("objects:{SECRET}"));
    let (_dir, path) = manifest_file(&JOB.replacen("replicas: 2", "replicas: 1e3", 1));
    let file = path.to_str().unwrap();
    let validate = Cli::new(None, &["validate", "-f", file]).run();
    // 1,000 workers do not fit the test cluster: the pre-flight would refuse them (exit 4), which
    // is not what this test is about.
    let submit = tfjob(
        &c,
        &[
            "submit",
            "--dry-run=server",
            "--skip-capacity-check",
            "-f",
            file,
        ],
    );
    assert_eq!(
        validate.code, submit.code,
        "{}\n{}",
        validate.stderr, submit.stderr
    );
    assert_eq!(validate.code, 0, "{}", validate.stderr);
}

#[test]
fn names_the_api_server_would_refuse_are_refused_before_any_request() {
    let c = cluster(&format!("objects:{SECRET}"));
    let cases: &[(&[&str], &str)] = &[
        (
            &["secret", "create", "t-bad_name!", "--from-literal", "sk-x"],
            "DNS-1123 subdomain",
        ),
        (
            &[
                "secret",
                "create",
                "t-bad_name!",
                "--from-literal",
                "sk-x",
                "--dry-run",
            ],
            "DNS-1123 subdomain",
        ),
        (&["secret", "check", "Bad"], "DNS-1123 subdomain"),
        (&["wait", "Bad_Job"], "DNS-1123 subdomain"),
        (&["wait", "tfjob/a b"], "DNS-1123 subdomain"),
        (&["diagnose", "UPPER"], "DNS-1123 subdomain"),
        (&["diagnose", "ok", "-n", "Bad NS"], "DNS-1123 label"),
        (&["wait", "ok", "-n", "Bad NS"], "DNS-1123 label"),
        (&["secret", "check", "-n", "Bad NS"], "DNS-1123 label"),
        (
            &[
                "secret",
                "create",
                "--from-literal",
                "sk-x",
                "--dry-run",
                "-n",
                "Bad NS",
            ],
            "DNS-1123 label",
        ),
    ];
    for (args, rule) in cases {
        let run = tfjob(&c, args);
        assert_eq!(run.code, 2, "{args:?}\n{}", run.stderr);
        assert!(run.stderr.contains(rule), "{args:?}: {}", run.stderr);
        assert!(c.requests().is_empty(), "{args:?}: {:?}", c.requests());
    }
}
