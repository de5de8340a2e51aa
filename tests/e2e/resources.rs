//! Per-role resources through the real binary: `--cpu/--memory` reach every role that does not
//! set its own, `--ps-cpu` and friends set one role, and `render`/`submit` say on stderr what
//! each role got and from where.

use serde_json::Value;

use crate::{Cli, cluster, manifest_file, tfjob};

fn limits(yaml: &str, role: &str) -> (String, String) {
    let v: Value = serde_saphyr::from_str(yaml).expect("render prints YAML");
    let l = &v["spec"]["tfReplicaSpecs"][role]["template"]["spec"]["containers"][0]["resources"]["limits"];
    (
        l["cpu"].as_str().unwrap_or("").to_string(),
        l["memory"].as_str().unwrap_or("").to_string(),
    )
}

const ARTICLE: &[&str] = &[
    "render",
    "--name",
    "tf-dist-train",
    "--image",
    "tensorflow/tensorflow:2.13.0-gpu",
    "--ps",
    "1",
    "--workers",
    "3",
    "--gpus",
    "1",
];

#[test]
fn cpu_and_memory_reach_every_role_unless_it_sets_its_own_and_each_role_says_where_from() {
    // The article's flags: the PS used to keep the template's 2 CPU / 4Gi.
    let mut args = ARTICLE.to_vec();
    args.extend(["--cpu", "4", "--memory", "8Gi"]);
    let run = Cli::new(None, &args).run();
    run.expect_code(0);
    assert_eq!(limits(&run.stdout, "PS"), ("4".into(), "8Gi".into()));
    assert_eq!(limits(&run.stdout, "Worker"), ("4".into(), "8Gi".into()));
    assert_eq!(
        run.stderr,
        "resources: PS: cpu 4 (--cpu), memory 8Gi (--memory)\n\
         resources: Worker: cpu 4 (--cpu), memory 8Gi (--memory)\n"
    );

    // Without flags the template's defaults show as such.
    let run = Cli::new(None, ARTICLE).run();
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("resources: PS: cpu 2 (template default), memory 4Gi (template default)\n"),
        "{}",
        run.stderr
    );
    // A role with nothing set anywhere gets no line: that is the usual case, not news.
    assert!(!run.stderr.contains("not set"), "{}", run.stderr);

    // A role's own setting wins over --cpu: its flag, --set, a values file.
    let (_dir, values) = manifest_file("ps:\n  memory: 16Gi\n");
    let values = values.display().to_string();
    let mut args = ARTICLE.to_vec();
    args.extend([
        "--cpu",
        "4",
        "--memory",
        "8Gi",
        "--worker-cpu",
        "6",
        "--set",
        "ps.cpu=1",
        "-f",
        &values,
    ]);
    let run = Cli::new(None, &args).run();
    run.expect_code(0);
    assert_eq!(limits(&run.stdout, "PS"), ("1".into(), "16Gi".into()));
    assert_eq!(limits(&run.stdout, "Worker"), ("6".into(), "8Gi".into()));
    assert!(
        run.stderr.contains(&format!(
            "resources: PS: cpu 1 (--set ps.cpu=1), memory 16Gi (values file {values})\n"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("resources: Worker: cpu 6 (--worker-cpu), memory 8Gi (--memory)\n"),
        "{}",
        run.stderr
    );
    // A bad per-role quantity is refused like any other.
    let mut args = ARTICLE.to_vec();
    args.extend(["--ps-cpu", "lots"]);
    Cli::new(None, &args).run().expect_code(2);
}

#[test]
fn submit_says_what_each_role_got() {
    let c = cluster(&format!("objects:{}", crate::submit::SECRET));
    let mut args = ARTICLE.to_vec();
    args[0] = "submit";
    args.extend(["--ps-cpu", "3", "--dry-run=server"]);
    let run = tfjob(&c, &args);
    run.expect_code(0);
    assert!(
        run.stderr.contains("resources: PS: cpu 3 (--ps-cpu)"),
        "{}",
        run.stderr
    );
}
