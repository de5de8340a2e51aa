//! What a new user tripped on (issue 39), end to end: an autoscaled cluster where `submit
//! --skip-capacity-check --wait` waits for nodes, and what a failed wait leaves behind.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tfjob_testcluster::NodeSpec;

use crate::submit::{SECRET, submit_args};
use crate::{args, cluster, tfjob};

/// `submit … --wait` running as a child, its stderr lines sent on as they come.
fn spawn_with_stderr_lines(
    c: &tfjob_testcluster::TestCluster,
    argv: &[&str],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))
        .env_remove("KUBECONFIG")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(argv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

#[test]
fn skip_capacity_check_waits_for_capacity_and_succeeds_when_a_node_is_added() {
    // 4 GPUs, 5 one-GPU workers: the pre-flight says never; the user says nodes will come.
    let c = cluster(&format!(
        "nodes: [{{name: node-a, cpu: '32', memory: 128Gi, gpu: 4}}]\nobjects:{SECRET}"
    ));
    let (child, lines) = spawn_with_stderr_lines(
        &c,
        &args(
            "submit --name tf-grow --image tensorflow/tensorflow:2.13.0-gpu --workers 5 --gpus 1 \
             --cpu 1 --memory 1Gi --skip-capacity-check --wait --settle 0 --timeout 2m \
             -- python train.py",
        ),
    );
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{e}: no 'waiting for capacity' line in {seen:#?}"));
        // The progress line, which says what the wait waits for now.
        let said = line.starts_with("tfjob/tf-grow: ") && line.contains("waiting for capacity (");
        seen.push(line);
        if said {
            break;
        }
    }
    assert!(
        seen.iter()
            .any(|l| l.contains("--skip-capacity-check") && l.contains("nvidia.com/gpu")),
        "{seen:#?}"
    );
    assert!(
        c.get("tfjobs", Some("default"), "tf-grow").is_some(),
        "the job was created"
    );
    // A node pool scales up.
    c.add_node(&NodeSpec {
        name: "node-b".into(),
        ..NodeSpec::default()
    });
    let out = child.wait_with_output().unwrap();
    let rest: Vec<String> = lines.try_iter().collect();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{seen:#?}\n{rest:#?}");
    assert!(stdout.contains("condition met"), "{stdout}");
    assert!(
        !seen.iter().chain(&rest).any(|l| l.contains("can never")),
        "{seen:#?}\n{rest:#?}"
    );
}

#[test]
fn without_the_flag_or_an_autoscaler_the_wait_still_ends_as_never() {
    // The same job created past the pre-flight, then waited on: nothing says nodes will come.
    let c = cluster(&format!(
        "nodes: [{{name: node-a, cpu: '32', memory: 128Gi, gpu: 1}}]\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    let run = tfjob(&c, &args("wait tf-dist-train --timeout 60s"));
    run.exit(4);
    run.stderr_has("can never be scheduled");
}

/// A job whose PS crash-loops, created past every pre-flight.
fn crash_looping() -> tfjob_testcluster::TestCluster {
    let c = cluster(&format!(
        "containerBehaviour:\n- match: {{replicaType: ps}}\n  exitCode: 1\n  runMs: 50\n  crashLoop: true\n  log: 'ValueError: bad flag'\nobjects:{SECRET}"
    ));
    tfjob(&c, &submit_args(&["--skip-capacity-check"])).expect_code(0);
    c
}

#[test]
fn a_failed_wait_says_the_job_is_still_there_and_how_to_delete_it() {
    let c = crash_looping();
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for succeeded --timeout 60s"),
    );
    run.exit(4);
    run.stderr_has("crash-looping");
    let delete = format!(
        "The job is still there (its pods keep what they requested): `kubectl tfjob delete tf-dist-train -n default --kubeconfig {}`",
        c.kubeconfig().display()
    );
    run.stderr_has(&delete);
    // Said once, as the last thing (the error's end).
    assert_eq!(run.stderr.matches("The job is still there").count(), 1);
    assert!(run.stderr.trim_end().ends_with(&delete), "{}", run.stderr);
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
}

#[test]
fn delete_on_failure_deletes_the_job_after_a_failed_wait() {
    let c = crash_looping();
    let run = tfjob(
        &c,
        &args("wait tf-dist-train --for succeeded --delete-on-failure --timeout 60s"),
    );
    run.exit(4);
    run.stderr_has("TFJob default/tf-dist-train was deleted (--delete-on-failure).");
    assert!(
        !run.stderr.contains("The job is still there"),
        "{}",
        run.stderr
    );
    assert!(
        c.wait_for(Duration::from_secs(10), |c| c
            .get("tfjobs", Some("default"), "tf-dist-train")
            .is_none()),
        "the job is still there"
    );
    // A healthy job is never deleted by the flag.
    let c = cluster(&format!("objects:{SECRET}"));
    let run = tfjob(
        &c,
        &submit_args(&["--wait", "--settle", "0", "--delete-on-failure"]),
    );
    run.exit(0);
    assert!(c.get("tfjobs", Some("default"), "tf-dist-train").is_some());
}

/// Every per-job flag of `render`/`submit`, with the values file that says the same: (extra
/// arguments both runs take, the flags, the values file's lines). Name and image come from
/// `--name tfx --image tf:1` (flags) or `name: tfx` / `image: tf:1` (values) unless the case
/// sets them.
const FLAG_CASES: &[(&[&str], &[&str], &str)] = &[
    (&[], &["--name", "other"], "name: other"),
    (&[], &["--image", "tf:2"], "image: tf:2"),
    (&[], &["--ps", "2"], "ps: 2"),
    (&[], &["--workers", "3"], "workers: 3"),
    (&["-t", "chief-worker"], &["--chief", "0"], "chief: 0"),
    (&["-t", "evaluator"], &["--evaluator", "2"], "evaluator: 2"),
    (&[], &["--gpus", "1"], "gpus: 1"),
    (&[], &["--cpu", "4"], "cpu: 4"),
    (&[], &["--memory", "8Gi"], "memory: 8Gi"),
    (&[], &["--ps-cpu", "2"], "ps-cpu: 2"),
    (&[], &["--ps-memory", "4Gi"], "psMemory: 4Gi"),
    (&[], &["--worker-cpu", "3"], "worker-cpu: 3"),
    (&[], &["--worker-memory", "6Gi"], "worker-memory: 6Gi"),
    (
        &["-t", "chief-worker"],
        &["--chief-cpu", "2"],
        "chief-cpu: 2",
    ),
    (
        &["-t", "chief-worker"],
        &["--chief-memory", "2Gi"],
        "chief-memory: 2Gi",
    ),
    (
        &["-t", "evaluator"],
        &["--evaluator-cpu", "1"],
        "evaluator-cpu: 1",
    ),
    (
        &["-t", "evaluator"],
        &["--evaluator-memory", "1Gi"],
        "evaluator-memory: 1Gi",
    ),
    (
        &[],
        &["--label", "team=nlp", "--label", "tier=a"],
        "label: [team=nlp, tier=a]",
    ),
    (&[], &["--annotation", "owner=me"], "annotation: owner=me"),
    (&[], &["--env", "A=1"], "env: [A=1]"),
    (&[], &["--restart-policy", "Never"], "restart-policy: Never"),
    (&[], &["--clean-pod-policy", "All"], "clean-pod-policy: All"),
    (&[], &["--backoff-limit", "3"], "backoff-limit: 3"),
    (
        &[],
        &["--active-deadline-seconds", "600"],
        "active-deadline-seconds: 600",
    ),
    (
        &[],
        &["--ttl-seconds-after-finished", "60"],
        "ttl-seconds-after-finished: 60",
    ),
    (
        &[],
        &["--success-policy", "AllWorkers"],
        "success-policy: AllWorkers",
    ),
    (&[], &["--queue", "research"], "queue: research"),
    (&[], &["--priority-class", "high"], "priority-class: high"),
    (&[], &["--cpu-request", "1"], "cpu-request: 1"),
    (&[], &["--memory-request", "1Gi"], "memory-request: 1Gi"),
    (&[], &["--pvc", "data:/data:ro"], "pvc: 'data:/data:ro'"),
    (
        &[],
        &["--config-map", "cfg:/etc/cfg"],
        "config-map: 'cfg:/etc/cfg'",
    ),
    (
        &[],
        &["--secret-volume", "creds:/etc/creds"],
        "secret-volume: 'creds:/etc/creds'",
    ),
    (
        &[],
        &["--empty-dir", "/scratch:1Gi"],
        "empty-dir: '/scratch:1Gi'",
    ),
    (
        &[],
        &["--image-pull-secret", "regcred"],
        "image-pull-secret: regcred",
    ),
    (
        &[],
        &["--service-account", "trainer"],
        "service-account: trainer",
    ),
    (
        &[],
        &["--node-selector", "gpu=a100"],
        "node-selector: [gpu=a100]",
    ),
    (
        &[],
        &["--toleration", "gpu:NoSchedule"],
        "toleration: ['gpu:NoSchedule']",
    ),
    (
        &[],
        &["--pod-priority-class", "high"],
        "pod-priority-class: high",
    ),
    (
        &[],
        &["--env-from-secret", "HF_TOKEN=hf/token"],
        "env-from-secret: [HF_TOKEN=hf/token]",
    ),
    (
        &[],
        &["--", "python", "train.py"],
        "command: [python, train.py]",
    ),
    // The values file, on the default (ps-worker) template.
    (
        &[],
        &["--workers", "2", "--gpus", "1", "--cpu", "4"],
        "workers: 2\ngpus: 1\ncpu: 4",
    ),
];

/// `render`'s flags that are not one job's shape: where values come from, the gateway's
/// credentials (a Secret reference the readiness check reads), and the two with no values form.
const NOT_VALUES: &[&str] = &[
    "template",
    "filename",
    "set",
    "set-string",
    "set-file",
    "allow-literal-credentials",
    "api-secret",
    "api-secret-key",
    "api-env-prefix",
    "api-base-url",
    "openai-env",
    "no-api-env",
    "allow-istio-sidecar",
    "inject-gateway-env",
    "help",
    "version",
    // Refused in a values file with the flag to use (see below).
    "generate-name",
    "local-queue",
];

#[test]
fn every_per_job_flag_as_a_values_key_renders_the_same_manifest() {
    let render = |argv: &[&str]| crate::Cli::new(None, argv).run();
    let dir = tempfile::tempdir().unwrap();
    for (i, (common, flags, yaml)) in FLAG_CASES.iter().enumerate() {
        let mut by_flags = vec!["render"];
        by_flags.extend_from_slice(common);
        let mut base_yaml = String::new();
        for (flag, key, value) in [("--name", "name", "tfx"), ("--image", "image", "tf:1")] {
            if !flags.contains(&flag) {
                by_flags.extend([flag, value]);
                base_yaml.push_str(&format!("{key}: {value}\n"));
            }
        }
        by_flags.extend_from_slice(flags);
        let file = dir.path().join(format!("values-{i}.yaml"));
        std::fs::write(&file, format!("{base_yaml}{yaml}\n")).unwrap();
        let mut by_values = vec!["render"];
        by_values.extend_from_slice(common);
        by_values.extend(["-f", file.to_str().unwrap()]);
        let a = render(&by_flags);
        let b = render(&by_values);
        assert_eq!(a.code, 0, "{by_flags:?}: {}", a.stderr);
        assert_eq!(b.code, 0, "{yaml}: {}", b.stderr);
        assert_eq!(a.stdout, b.stdout, "{by_flags:?} vs values {yaml:?}");
    }
    // Every documented flag is covered, or is not a job's shape.
    let help = render(&["render", "--help"]).stdout;
    let covered: Vec<&str> = FLAG_CASES
        .iter()
        .flat_map(|(_, flags, _)| flags.iter())
        .filter_map(|f| f.strip_prefix("--"))
        .collect();
    let mut seen = 0;
    for line in help.lines() {
        // `  --workers <N>` or `  -l, --label <KEY=VALUE>`.
        let t = line.trim_start();
        let t = match t.as_bytes() {
            [b'-', c, b',', ..] if c.is_ascii_alphabetic() => t[3..].trim_start(),
            _ => t,
        };
        let Some(rest) = t.strip_prefix("--") else {
            continue;
        };
        let flag = rest
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .next()
            .unwrap_or_default();
        if flag.is_empty() {
            continue;
        }
        seen += 1;
        assert!(
            covered.contains(&flag) || NOT_VALUES.contains(&flag),
            "--{flag} is neither tested as a values key nor listed as not a job's shape"
        );
    }
    assert!(seen > 50, "render --help lists {seen} flags:\n{help}");
    // The two with no values form are refused with the flag to use.
    let file = dir.path().join("refused.yaml");
    std::fs::write(&file, "name: tfx\nimage: tf:1\nlocal-queue: team-a\n").unwrap();
    let run = render(&["render", "-f", file.to_str().unwrap()]);
    run.exit(2);
    run.stderr_has("refused.yaml:3:1: local-queue: --local-queue has no values form");
    run.stderr_has("pass --local-queue on the command line");
}

#[test]
fn memory_in_decimal_units_is_a_warning_with_the_binary_form() {
    let run = crate::Cli::new(
        None,
        &args("render --name tfx --image tf:1 --workers 1 --ps 0 --memory 8G"),
    )
    .run();
    run.exit(0);
    assert_eq!(
        run.stderr.matches("did you mean 8Gi?").count(),
        1,
        "one container, one line: {}",
        run.stderr
    );
    let run = crate::Cli::new(
        None,
        &args("render --name tfx --image tf:1 --workers 1 --ps 0 --memory 8Gi"),
    )
    .run();
    run.exit(0);
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
}

#[test]
fn submit_of_a_manifest_without_the_gateway_key_says_so_in_one_line() {
    let c = cluster(&format!("objects:{SECRET}"));
    let (_dir, path) = crate::manifest_file(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: plain}\nspec:\n  tfReplicaSpecs:\n    PS:\n      replicas: 1\n      template:\n        spec:\n          containers: [{name: tensorflow, image: 'tf:1'}]\n    Worker:\n      replicas: 2\n      template:\n        spec:\n          containers: [{name: tensorflow, image: 'tf:1'}]\n",
    );
    let run = tfjob(&c, &["submit", "-f", path.to_str().unwrap()]);
    run.exit(0);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("--inject-gateway-env"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("note: no TAOTOKEN_API_KEY in 2 containers"),
        "{}",
        run.stderr
    );
}

/// `kubectl tfjob --version` is answered by kubectl, so the plugin has a verb (issue 48 item 2):
/// its own version, the API server's, and the operator's Deployment and image; `--client`
/// sends nothing.
#[test]
fn version_names_the_plugin_the_server_and_the_operator() {
    let c = cluster("operator: running\n");
    let run = tfjob(&c, &["version"]);
    run.expect_code(0);
    let want_client = format!("Client Version: v{}\n", env!("CARGO_PKG_VERSION"));
    assert!(run.stdout.starts_with(&want_client), "{}", run.stdout);
    assert!(
        run.stdout.contains("\nServer Version: v1.36"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("\nTraining Operator: running (kubeflow/training-operator), image "),
        "{}",
        run.stdout
    );
    let json = tfjob(&c, &["version", "-o", "json"]);
    json.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["trainingOperator"]["state"], "running", "{v}");
    assert!(
        v["serverVersion"].as_str().unwrap().starts_with("v1."),
        "{v}"
    );

    // Without a cluster: only the client, exit 0; a kubeconfig pointing nowhere is not read.
    let run = crate::Cli::new(
        None,
        &["version", "--client", "--server", "https://127.0.0.1:1"],
    )
    .run();
    run.expect_code(0);
    assert_eq!(run.stdout, want_client);

    // An operator with no ready replica, and none at all: said so, not an error (the version
    // is what was asked).
    let stuck = cluster("operator: installed\n");
    let run = tfjob(&stuck, &["version"]);
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("\nTraining Operator: not ready (kubeflow/training-operator), image "),
        "{}",
        run.stdout
    );
    let bare = cluster("operator: absent\n");
    let run = tfjob(&bare, &["version"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("\nTraining Operator: not found: "),
        "{}",
        run.stdout
    );
}

/// Issue 48 item 3: what `probe` and `diagnose` fail on later is said when the job is made:
/// a gateway base URL ending in /v1 (…/v1/v1/models, 404), and a template asking istio for the
/// sidecar that breaks the rendezvous. Warnings: the API server takes both; `--strict` refuses.
#[test]
fn a_v1_base_url_and_an_istio_sidecar_asked_for_are_warned_before_anything_is_sent() {
    let v1 = "--api-base-url=https://taotoken.net/api/v1";
    let run = crate::Cli::new(
        None,
        &[
            "render",
            "-t",
            "ps-worker",
            "--name",
            "t",
            "--image",
            "tensorflow/tensorflow:2.13.0",
            v1,
        ],
    )
    .run();
    run.expect_code(0);
    run.stderr_has("warning: --api-base-url: https://taotoken.net/api/v1 ends in /v1");
    run.stderr_has("--api-base-url https://taotoken.net/api");
    assert!(!run.stdout.contains("ends in /v1"), "{}", run.stdout);
    let (_dir, path) = crate::manifest_file(&mesh_job(""));
    let p = path.to_str().unwrap();
    let run = crate::Cli::new(None, &["validate", "-f", p, v1]).run();
    run.expect_code(0);
    run.stderr_has("ends in /v1");
    crate::Cli::new(None, &["validate", "-f", p, v1, "--strict"])
        .run()
        .expect_code(2);
    // Without /v1: not a word about it.
    let run = crate::Cli::new(
        None,
        &[
            "validate",
            "-f",
            p,
            "--api-base-url=https://taotoken.net/api",
        ],
    )
    .run();
    run.expect_code(0);
    assert!(!run.all().contains("/v1"), "{}", run.all());

    let (_dir, path) = crate::manifest_file(&mesh_job("true"));
    let run = crate::Cli::new(None, &["validate", "-f", path.to_str().unwrap()]).run();
    run.expect_code(0);
    run.stderr_has("sidecar.istio.io/inject: \"true\" asks istio for a sidecar");
    crate::Cli::new(
        None,
        &["validate", "-f", path.to_str().unwrap(), "--strict"],
    )
    .run()
    .expect_code(2);
}

/// One worker; its template's istio annotation set to `inject` (none when empty).
fn mesh_job(inject: &str) -> String {
    let annotations = if inject.is_empty() {
        "{}".to_string()
    } else {
        format!("{{sidecar.istio.io/inject: \"{inject}\"}}")
    };
    format!(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: mesh\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      template:\n        metadata:\n          annotations: {annotations}\n        spec:\n          containers:\n          - name: tensorflow\n            image: tensorflow/tensorflow:2.13.0\n"
    )
}

/// Issue 48 item 11: with an Evaluator, a cleanPodPolicy of Running or All deletes it when the
/// Chief succeeds (kubeflow/trainer#1658): a warning naming the field; None is quiet.
#[test]
fn an_evaluator_cut_short_by_clean_pod_policy_is_warned() {
    let job = |policy: &str| {
        format!(
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: ev\nspec:\n  runPolicy: {{cleanPodPolicy: {policy}}}\n  tfReplicaSpecs:\n    Chief:\n      replicas: 1\n      template:\n        spec:\n          containers: [{{name: tensorflow, image: tensorflow/tensorflow:2.13.0}}]\n    Evaluator:\n      replicas: 1\n      template:\n        spec:\n          containers: [{{name: tensorflow, image: tensorflow/tensorflow:2.13.0}}]\n"
        )
    };
    for policy in ["Running", "All"] {
        let (_dir, path) = crate::manifest_file(&job(policy));
        let run = crate::Cli::new(None, &["validate", "-f", path.to_str().unwrap()]).run();
        run.expect_code(0);
        run.stderr_has("spec.runPolicy.cleanPodPolicy");
        run.stderr_has("when the Chief succeeds the job is Succeeded at once and the operator deletes the Evaluator");
    }
    let (_dir, path) = crate::manifest_file(&job("None"));
    let run = crate::Cli::new(None, &["validate", "-f", path.to_str().unwrap()]).run();
    run.expect_code(0);
    assert!(!run.all().contains("Evaluator"), "{}", run.all());
}

/// Issue 48 item 8: a values file written in the flags' language with a slip (`gpu:` for
/// `gpus:`, `worker_memory:` for `workerMemory:`) is told the flag key it meant.
#[test]
fn a_values_key_near_a_flags_name_is_told_that_name() {
    let (_dir, path) = crate::manifest_file(
        "name: t\nimage: tensorflow/tensorflow:2.13.0\ngpu: 1\nworker_memory: 8Gi\n",
    );
    let run = crate::Cli::new(
        None,
        &["render", "-t", "ps-worker", "-f", path.to_str().unwrap()],
    )
    .run();
    run.expect_code(2);
    run.stderr_has(":3:1: gpu: unknown key `gpu`");
    run.stderr_has("did you mean `gpus`?");
    run.stderr_has("did you mean `workerMemory`?");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}
