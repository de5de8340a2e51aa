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

/// `diagnose`: every row names its layer, and `-o json` speaks camelCase with pod counts as
/// numbers, as `check -o json` and kubectl do.
#[test]
fn diagnose_names_every_rows_layer_and_its_json_is_camel_case() {
    let c = cluster("");
    // A job the operator failed: the controller row is ok, the job's failure is another row.
    c.insert(
        serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "tensorflow",
                "image": "tensorflow/tensorflow:2.13.0"}]}}}}}}),
    );
    let mut pods = 0;
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        pods = c.list("pods", Some("default")).len();
        pods == 2
    }));
    c.exit_container("default", "bad-worker-0", "tensorflow", 1);
    assert!(c.wait_for(std::time::Duration::from_secs(30), |c| {
        c.get("tfjobs", Some("default"), "bad").is_some_and(|j| {
            j["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|x| x["type"] == "Failed" && x["status"] == "True")
            })
        })
    }));
    let run = tfjob(&c, &["diagnose", "bad"]);
    for line in run.stdout.lines().filter(|l| l.starts_with('[')) {
        let label = line[7..].split_whitespace().next().unwrap_or("");
        assert!(
            [
                "CRD",
                "Controller",
                "Queue",
                "Objects",
                "Scheduling",
                "Runtime"
            ]
            .contains(&label),
            "a row without its layer: {line:?}\n{}",
            run.stdout
        );
    }
    let run = tfjob(&c, &["diagnose", "bad", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    out.push(k.clone());
                    keys(x, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    keys(&v, &mut all);
    assert!(
        all.iter().all(|k| !k.contains('_')),
        "snake_case keys: {all:?}"
    );
    assert!(all.iter().any(|k| k == "nextStep"), "{all:?}");
    assert!(v["pods"].is_object(), "{}", v["pods"]);
    let total: u64 = v["pods"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(total, 2, "{}", v["pods"]);
}

/// A crash-looping job: `list` (RESTARTS), `list -o wide` (REASON) and `get` (a Problem line)
/// say the same thing.
#[test]
fn a_crash_loop_is_said_by_list_wide_and_get_alike() {
    let c = cluster("operator: installed\n");
    c.insert(serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "loop", "namespace": "default", "creationTimestamp": "2026-12-01T10:00:00Z"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [{"name": "tensorflow",
                "image": "tensorflow/tensorflow:2.13.0"}]}}}}},
        "status": {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}],
            "replicaStatuses": {"Worker": {"active": 1}}}}));
    c.insert(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "loop-worker-0", "namespace": "default", "labels": {
            "training.kubeflow.org/job-name": "loop", "training.kubeflow.org/operator-name": "tfjob-controller",
            "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "tensorflow", "ready": false, "restartCount": 16,
            "image": "tensorflow/tensorflow:2.13.0", "imageID": "",
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}}));
    let run = tfjob(&c, &["list"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("16 (CrashLoopBackOff)"),
        "{}",
        run.stdout
    );
    let run = tfjob(&c, &["list", "-o", "wide"]);
    run.expect_code(0);
    let row = run.stdout.lines().find(|l| l.starts_with("loop")).unwrap();
    assert!(row.contains("CrashLoopBackOff"), "{}", run.stdout);
    assert!(!row.contains("<none>"), "REASON <none>: {}", run.stdout);
    let run = tfjob(&c, &["get", "loop"]);
    run.expect_code(0);
    let problem = run
        .stdout
        .lines()
        .find(|l| l.starts_with("Problem:"))
        .unwrap_or_else(|| panic!("no Problem line:\n{}", run.stdout));
    assert!(problem.contains("CrashLoopBackOff"), "{problem}");
    assert!(problem.contains("Worker-0"), "{problem}");
}
