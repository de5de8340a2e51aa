//! `render`: flags and values keys meet in one manifest, and a slip in either is named.

use crate::args;

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
