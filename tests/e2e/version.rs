//! `version`: the plugin, the API server and the training-operator, each named.

use crate::{cluster, tfjob};

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
    // The stand-in runs v1.9.4's image, whose commit tag the release is read from.
    assert!(
        run.stdout.contains(
            "\nTraining Operator: running (kubeflow/training-operator), v1.9.4 (image ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489)"
        ),
        "{}",
        run.stdout
    );
    let json = tfjob(&c, &["version", "-o", "json"]);
    json.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["trainingOperator"]["state"], "running", "{v}");
    assert_eq!(v["trainingOperator"]["version"], "v1.9.4", "{v}");
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
        run.stdout.contains(
            "\nTraining Operator: not ready (kubeflow/training-operator), v1.9.4 (image "
        ),
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
