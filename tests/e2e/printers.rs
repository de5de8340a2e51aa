//! kubectl's printers on `list` and `get`, compared byte for byte with real kubectl 1.36 on the
//! same objects of the same test cluster. kubectl is the one tests/cluster/install-kubectl-1.36.sh
//! installs (`.ci/run` installs it before the suite and sets `KUBECTL_1_36`, so there the
//! comparison always runs); without it the comparison is skipped with a message.
//!
//! The operator is `installed` (it reconciles nothing), so the objects do not change between
//! the two commands: no comparison depends on timing.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use tfjob_testcluster::TestCluster;

use crate::{cluster, tfjob};

/// kubectl 1.36: `$KUBECTL_1_36` (must then exist), else the installer's cache.
pub(crate) fn kubectl_1_36() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KUBECTL_1_36") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "KUBECTL_1_36={} does not exist", p.display());
        return Some(p);
    }
    let cache = std::env::var_os("TFJOB_TESTCLUSTER_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/tfjob-testcluster"))
        })?;
    let p = cache.join("kubectl-v1.36");
    p.is_file().then_some(p)
}

fn job(name: &str, labels: Value, workers: i64, created: &str, conditions: Value) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "labels": labels,
                     "annotations": {"note": "a<b && c>d"}, "creationTimestamp": created},
        "spec": {"runPolicy": {"cleanPodPolicy": "Running", "suspend": false},
                 "tfReplicaSpecs": {
            "PS": {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0",
                 "resources": {"limits": {"cpu": "2", "memory": "4Gi"}}}]}}},
            "Worker": {"replicas": workers, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu",
                 "env": [{"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "api-key"}}},
                         {"name": "TAOTOKEN_BASE_URL", "value": "https://taotoken.net/api"}],
                 "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}},
        "status": {"conditions": conditions, "startTime": created}})
}

fn cond(t: &str, at: &str) -> Value {
    json!({"type": t, "status": "True", "reason": format!("TFJob{t}"), "message": format!("TFJob is {t}."),
           "lastTransitionTime": at, "lastUpdateTime": at})
}

fn static_cluster() -> TestCluster {
    let c = cluster("operator: installed\n");
    c.insert(job(
        "tf-10",
        json!({"team": "nlp", "app.kubernetes.io/name": "bert"}),
        10,
        "2026-12-01T10:00:00Z",
        json!([
            cond("Created", "2026-12-01T10:00:00Z"),
            cond("Running", "2026-12-01T10:01:00Z")
        ]),
    ));
    c.insert(job(
        "tf-9",
        json!({"team": "vision"}),
        3,
        "2026-12-01T09:00:00Z",
        json!([
            cond("Created", "2026-12-01T09:00:00Z"),
            cond("Succeeded", "2026-12-01T09:30:00Z")
        ]),
    ));
    c.insert(job(
        "tf-a",
        json!({}),
        2,
        "2026-12-01T11:00:00Z",
        json!([cond("Created", "2026-12-01T11:00:00Z")]),
    ));
    c
}

struct Compared {
    code: i32,
    stdout: String,
}

fn kubectl(k: &PathBuf, c: &TestCluster, cache: &std::path::Path, args: &[&str]) -> Compared {
    let out = Command::new(k)
        .env("KUBECONFIG", c.kubeconfig())
        .env("HOME", cache)
        .arg("--cache-dir")
        .arg(cache.join("kube-cache"))
        .args(args)
        .output()
        .expect("run kubectl");
    Compared {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

#[test]
fn printers_match_kubectl_1_36_byte_for_byte() {
    let Some(k) = kubectl_1_36() else {
        eprintln!(
            "skipped: kubectl 1.36 is not installed (tests/cluster/install-kubectl-1.36.sh installs it; .ci/run does)"
        );
        return;
    };
    let c = static_cluster();
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let cc_file = file(
        "cols.txt",
        "NAME WORKERS TEAM\n.metadata.name {.spec.tfReplicaSpecs.Worker.replicas} .metadata.labels.team\n",
    );
    let jp_file = file(
        "jp.txt",
        "{range .items[*]}{.metadata.name}={.status.conditions[-1:].type}{\"\\n\"}{end}",
    );
    let gt_file = file(
        "gt.txt",
        "{{range .items}}{{.metadata.name}} {{.spec.tfReplicaSpecs.Worker.replicas}}\n{{end}}",
    );
    let cc_file_arg = format!("custom-columns-file={cc_file}");
    let jp_file_arg = format!("jsonpath-file={jp_file}");
    let gt_file_arg = format!("go-template-file={gt_file}");

    // (what kubectl runs after `get tfjobs`, what the plugin runs after `list`)
    let list_cases: Vec<Vec<&str>> = vec![
        vec!["-o", "json"],
        vec!["-o", "yaml"],
        vec!["-o", "name"],
        vec!["-o", "jsonpath={.items[*].metadata.name}"],
        vec![
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}{\"\\t\"}{.status.conditions[-1:].type}{\"\\n\"}{end}",
        ],
        vec![
            "-o",
            "jsonpath={.items[0].metadata.labels} {.items[0].spec.runPolicy.suspend} {.items[0].metadata.annotations.note}",
        ],
        vec![
            "-o",
            "jsonpath={.items[?(@.metadata.labels.team==\"nlp\")].spec.tfReplicaSpecs.Worker.replicas}",
        ],
        vec![
            "-o",
            "jsonpath={.items[*].spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[?(@.valueFrom)].name}",
        ],
        vec![
            "-o",
            "jsonpath={.items[-1:].metadata.name} {.items[0:2].metadata.name} {.items[0]['kind','apiVersion']}",
        ],
        vec![
            "-o",
            r"jsonpath={.items[0].metadata.labels.app\.kubernetes\.io/name}",
        ],
        vec!["-o", "jsonpath-as-json={.items[*].metadata.name}"],
        vec!["-o", &jp_file_arg],
        vec![
            "-o",
            "custom-columns=NAME:.metadata.name,LABELS:.metadata.labels,TYPES:.status.conditions[*].type,NONE:.nope",
        ],
        vec![
            "-o",
            "custom-columns=N:metadata.name,W:{.spec.tfReplicaSpecs.Worker.replicas}",
            "--no-headers",
        ],
        vec!["-o", &cc_file_arg],
        vec![
            "-o",
            "go-template={{range .items}}{{.metadata.name}}:{{.spec.tfReplicaSpecs.Worker.replicas}}:{{.spec.runPolicy.suspend}}{{\"\\n\"}}{{end}}",
        ],
        vec!["-o", &gt_file_arg],
        vec!["--sort-by=.metadata.name", "-o", "name"],
        vec![
            "--sort-by={.metadata.creationTimestamp}",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ],
        vec![
            "--sort-by=.spec.tfReplicaSpecs.Worker.replicas",
            "-o",
            "name",
        ],
        vec![
            "--sort-by=.metadata.labels.team",
            "-o",
            "custom-columns=N:.metadata.name",
        ],
        vec![
            "--sort-by=.spec.tfReplicaSpecs.Worker.replicas",
            "-o",
            "json",
        ],
        vec!["-l", "team=nlp", "-o", "name"],
        vec!["-n", "kubeflow", "-o", "json"],
        vec!["-n", "kubeflow", "-o", "jsonpath={.items}"],
    ];
    let mut failures = Vec::new();
    for args in &list_cases {
        let mut kargs = vec!["get", "tfjobs"];
        kargs.extend(args);
        let want = kubectl(&k, &c, dir.path(), &kargs);
        let mut pargs = vec!["list"];
        pargs.extend(args);
        let got = tfjob(&c, &pargs);
        if want.code != 0 || got.code != 0 || want.stdout != got.stdout {
            failures.push(format!(
                "list {args:?}\n--- kubectl (exit {}):\n{}\n--- plugin (exit {}):\n{}{}",
                want.code, want.stdout, got.code, got.stdout, got.stderr
            ));
        }
    }
    let get_cases: Vec<Vec<&str>> = vec![
        vec!["-o", "json"],
        vec!["-o", "yaml"],
        vec!["-o", "name"],
        vec!["-o", "jsonpath={.metadata}"],
        vec!["-o", "jsonpath={.status.conditions[-1:].type}"],
        vec![
            "-o",
            "jsonpath={.spec.tfReplicaSpecs.Worker.template.spec.containers[*].resources}",
        ],
        vec![
            "-o",
            "custom-columns=NAME:.metadata.name,TYPES:.status.conditions[*].type",
        ],
        vec![
            "-o",
            "go-template={{.metadata.name}} {{.metadata.labels.team}}",
        ],
    ];
    // Wildcards over maps and `..` follow Go's map iteration order, which is random: kubectl
    // prints these values in any order (and the plugin in sorted key order), so only the
    // values are compared.
    let unordered: Vec<Vec<&str>> = vec![
        vec!["-o", "jsonpath={.spec.tfReplicaSpecs.*.replicas}"],
        vec!["-o", "jsonpath={..image}"],
        vec![
            "-o",
            "custom-columns=NAME:.metadata.name,IMAGES:.spec.tfReplicaSpecs.*.template.spec.containers[0].image",
        ],
    ];
    let tokens = |s: &str| {
        let mut t: Vec<String> = s
            .split([' ', ',', '\n'])
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect();
        t.sort();
        t
    };
    for args in &unordered {
        let mut kargs = vec!["get", "tfjob", "tf-10"];
        kargs.extend(args);
        let want = kubectl(&k, &c, dir.path(), &kargs);
        let mut pargs = vec!["get", "tf-10"];
        pargs.extend(args);
        let got = tfjob(&c, &pargs);
        if want.code != 0 || got.code != 0 || tokens(&want.stdout) != tokens(&got.stdout) {
            failures.push(format!(
                "get {args:?} (values, any order)\n--- kubectl (exit {}):\n{}\n--- plugin (exit {}):\n{}{}",
                want.code, want.stdout, got.code, got.stdout, got.stderr
            ));
        }
    }
    for args in &get_cases {
        let mut kargs = vec!["get", "tfjob", "tf-10"];
        kargs.extend(args);
        let want = kubectl(&k, &c, dir.path(), &kargs);
        let mut pargs = vec!["get", "tf-10"];
        pargs.extend(args);
        let got = tfjob(&c, &pargs);
        if want.code != 0 || got.code != 0 || want.stdout != got.stdout {
            failures.push(format!(
                "get {args:?}\n--- kubectl (exit {}):\n{}\n--- plugin (exit {}):\n{}{}",
                want.code, want.stdout, got.code, got.stdout, got.stderr
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn printer_errors_are_input_errors_and_label_columns_decorate_the_table() {
    let c = static_cluster();
    let run = tfjob(&c, &["list", "-o", "bogus"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("allowed formats are: custom-columns,"),
        "{}",
        run.stderr
    );
    let run = tfjob(&c, &["list", "-o", "jsonpath={.items[0"]);
    run.expect_code(2);
    let run = tfjob(&c, &["list", "--sort-by=.nope", "-o", "name"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("couldn't find any field with path \"{.nope}\" in the list of objects"),
        "{}",
        run.stderr
    );
    // Three jobs with different label sets: the -L columns and LABELS come last, kubectl's way.
    let run = tfjob(
        &c,
        &[
            "list",
            "--show-labels",
            "-L",
            "team,app.kubernetes.io/name",
            "--sort-by=.metadata.name",
        ],
    );
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].ends_with("GPUS   REASON   TEAM     NAME   LABELS"),
        "{}",
        run.stdout
    );
    // kubectl 1.36 sorts names byte by byte: tf-10 before tf-9.
    assert!(
        lines[1].starts_with("tf-10 ")
            && lines[1].ends_with("nlp      bert   app.kubernetes.io/name=bert,team=nlp"),
        "{}",
        run.stdout
    );
    assert!(
        lines[2].starts_with("tf-9 ") && lines[2].ends_with("vision          team=vision"),
        "{}",
        run.stdout
    );
    assert!(
        lines[3].starts_with("tf-a ") && lines[3].ends_with("<none>"),
        "{}",
        run.stdout
    );
    let run = tfjob(&c, &["list", "-n", "kubeflow", "-o", "name"]);
    run.expect_code(0);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str()),
        ("", "No resources found in kubeflow namespace.\n")
    );
}

#[test]
fn submit_prints_the_object_with_kubectls_printers() {
    let c = cluster(&format!("objects:{}", crate::submit::SECRET));
    let base = [
        "submit",
        "--name",
        "tf-p",
        "--image",
        "tensorflow/tensorflow:2.13.0",
        "--workers",
        "3",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend(extra);
        tfjob(&c, &a)
    };
    let run = with(&[
        "--dry-run=client",
        "-o",
        "jsonpath={.spec.tfReplicaSpecs.Worker.replicas}",
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "3");
    // Go's indentation, as kubectl create -o json.
    let run = with(&["--dry-run=client", "-o", "json"]);
    run.expect_code(0);
    assert!(
        run.stdout
            .starts_with("{\n    \"apiVersion\": \"kubeflow.org/v1\",\n"),
        "{}",
        run.stdout
    );
    let run = with(&[
        "-o",
        "custom-columns=NAME:.metadata.name,PS:.spec.tfReplicaSpecs.PS.replicas",
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "NAME   PS\ntf-p   1\n");
    assert!(c.get("tfjobs", Some("default"), "tf-p").is_some());
    let run = with(&["--dry-run=client", "-o", "wide"]);
    run.expect_code(2);
}

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
