//! Issue 40: the printers under hostile expressions, text from a hostile cluster, and `submit
//! -o` deciding its printer before it writes. The real binary against the test cluster.

use serde_json::json;

use crate::{cluster, tfjob};

fn tiny_job(name: &str) -> serde_json::Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"a": "b"}, "annotations": {"x": "y"}},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0",
             "args": ["a", "b", "c"], "env": [{"name": "A", "value": "1"}]}]}}}}},
        "status": {"conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated",
            "message": "created", "lastTransitionTime": "2026-12-01T10:00:00Z"}]}})
}

#[test]
fn hostile_printer_expressions_are_exit_2_with_the_limit_never_a_crash_or_a_runaway() {
    let c = cluster("operator: installed\n");
    for i in 0..20 {
        c.insert(tiny_job(&format!("tf-{i}")));
    }
    // 14 dots: exponential in client-go; here the value budget ends it.
    let dots = format!("jsonpath={{{}}}", ".".repeat(14));
    let run = tfjob(&c, &["list", "-o", &dots]);
    run.expect_code(2);
    assert!(run.stderr.contains("4000000 values"), "{}", run.stderr);
    // 60,000 nested ranges: a parse error naming the limit, not a stack overflow.
    let ranges = format!(
        "jsonpath={}{}",
        "{range .a}".repeat(60_000),
        "{end}".repeat(60_000)
    );
    let (_dir, file) = crate::manifest_file(&ranges["jsonpath=".len()..]);
    let file_arg = format!("jsonpath-file={}", file.display());
    let run = tfjob(&c, &["list", "-o", &file_arg]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("nested more than 100 deep"),
        "{}",
        run.stderr
    );
    for template in [
        r#"{{printf "%0999999999d" 1}}"#,
        r#"{{printf "%*d" 999999999 1}}"#,
        r#"{{printf "%.999999999f" 1.5}}"#,
        r#"{{printf "%-999999999v" 1}}"#,
    ] {
        let run = tfjob(&c, &["list", "-o", &format!("go-template={template}")]);
        run.expect_code(2);
        assert!(
            run.stderr.contains("past 10000 (the limit)"),
            "{template}: {}",
            run.stderr
        );
    }
    let me = r#"go-template={{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}"#;
    let run = tfjob(&c, &["list", "-o", me]);
    run.expect_code(2);
    assert!(run.stderr.contains("calls itself"), "{}", run.stderr);
    let deep = format!(
        "{}{}",
        "{{with .}}".repeat(60_000),
        "{{end}}".repeat(60_000)
    );
    let (_dir2, file) = crate::manifest_file(&deep);
    let run = tfjob(
        &c,
        &[
            "list",
            "-o",
            &format!("go-template-file={}", file.display()),
        ],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("at byte 1000"), "{}", run.stderr);
    // What is fine still prints.
    let run = tfjob(
        &c,
        &["list", "-o", r#"go-template={{printf "%5d" (len .items)}}"#],
    );
    run.expect_code(0);
    assert_eq!(run.stdout, "   20");
}

#[test]
fn submit_dry_runs_its_printer_before_creating_and_says_the_job_exists_if_printing_fails() {
    let c = cluster(&format!("objects:{}", crate::submit::SECRET));
    let base = [
        "submit",
        "--name",
        "tf-p",
        "--image",
        "tensorflow/tensorflow:2.13.0",
        "--workers",
        "1",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend(extra);
        tfjob(&c, &a)
    };
    let run = with(&["-o", r#"go-template={{printf "%.999999999f" 1.5}}"#]);
    run.expect_code(2);
    assert!(run.stderr.contains("nothing was created"), "{}", run.stderr);
    assert!(c.get("tfjobs", Some("default"), "tf-p").is_none());
    assert!(
        !c.writes().iter().any(|w| w.resource == "tfjobs"),
        "no write before the printer is known to work"
    );
    // A printer that passes on the sample (its placeholder uid) and fails on the real one.
    let run = with(&[
        "-o",
        r#"go-template={{if eq .metadata.uid "00000000-0000-0000-0000-000000000000"}}ok{{else}}{{index .nope 3}}{{end}}"#,
    ]);
    assert_ne!(run.code, 0, "{}", run.all());
    let created = c.get("tfjobs", Some("default"), "tf-p").expect("created");
    let uid = created["metadata"]["uid"].as_str().unwrap();
    assert!(
        run.stderr.contains(&format!(
            "TFJob default/tf-p was created (uid {uid}); printing it failed:"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn terminal_escapes_from_the_cluster_are_shown_not_obeyed() {
    let c = cluster("operator: installed\n");
    let mut job = tiny_job("tf-esc");
    job["status"]["conditions"][0]["message"] =
        json!("bad \u{1b}[2J\u{1b}]52;c;SGVsbG8=\u{7} msg\r");
    c.insert(job);
    let uid = c.get("tfjobs", Some("default"), "tf-esc").unwrap()["metadata"]["uid"].clone();
    c.insert(json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "tf-esc.1", "namespace": "default"},
        "involvedObject": {"kind": "TFJob", "name": "tf-esc", "namespace": "default",
                           "apiVersion": "kubeflow.org/v1", "uid": uid},
        "reason": "Evil\u{1b}]8;;http://x\u{1b}\\", "message": "clip \u{1b}]52;c;SGVsbG8=\u{7}\u{9b}31m",
        "type": "Warning", "count": 1,
        "firstTimestamp": "2026-12-01T10:00:00Z", "lastTimestamp": "2026-12-01T10:00:00Z"}));
    let run = tfjob(&c, &["get", "tf-esc"]);
    run.expect_code(0);
    for forbidden in ['\u{1b}', '\u{7}', '\r', '\u{9b}'] {
        assert!(
            !run.stdout.contains(forbidden),
            "{forbidden:?} in {:?}",
            run.stdout
        );
    }
    assert!(
        run.stdout.contains("bad ^[[2J^[]52;c;SGVsbG8=^G msg\\r"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("clip ^[]52;c;SGVsbG8=^G\\u009b31m"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Evil^[]8;;http://x^[\\"),
        "{}",
        run.stdout
    );
}
