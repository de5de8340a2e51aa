//! `kubectl tfjob version`: this binary's version and, unless `--client`, what it talks to: the
//! API server's (`GET /version`) and the training-operator it finds. `kubectl tfjob --version`
//! never reaches the plugin (kubectl answers it), so this verb is the one a user can run.
//!
//! Absence of evidence is not evidence: an operator that may not be read is "unknown" with why,
//! never "not installed".

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use serde::Serialize;

use super::Context;
use crate::cluster::{self, OperatorState};
use crate::error::Result;
use crate::output::{Output, ReportFormat};

pub struct VersionOptions {
    /// Only this binary's version: no connection is made.
    pub client: bool,
    pub format: ReportFormat,
}

/// What `-o json` prints (kubectl version's `clientVersion`/`serverVersion` keys).
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    pub client_version: ClientVersion,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_operator: Option<OperatorVersion>,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClientVersion {
    pub version: String,
    pub platform: String,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OperatorVersion {
    /// `running`, `not ready`, `not found` or `unknown`.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
    /// The operator container's image: the only version an operator shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The release the image is, when its tag says it ([`release_of`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why the state is what it is, when not running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

pub fn client_version() -> ClientVersion {
    ClientVersion {
        version: format!("v{}", env!("CARGO_PKG_VERSION")),
        platform: format!("{}/{}", std::env::consts::OS, go_arch()),
    }
}

/// Go's names for the architectures (what kubectl prints): amd64, arm64.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

pub async fn run(ctx: &Context, opts: VersionOptions, out: &mut Output) -> Result<()> {
    let client = client_version();
    if opts.client {
        let v = Versions {
            client_version: client,
            server_version: None,
            training_operator: None,
        };
        return print(&v, opts.format, out);
    }
    // kubectl prints the client's line before it learns the server is unreachable.
    if opts.format == ReportFormat::Text {
        out.data(&format!("Client Version: {}\n", client.version))?;
    }
    let kube = ctx.kube().await?;
    let info = cluster::retry(kube, || kube.client.apiserver_version())
        .await
        .map_err(|e| cluster::explain(e, &cluster::Action::new("get", "version", None), kube))?;
    let operator = operator_version(kube).await?;
    let v = Versions {
        client_version: client,
        server_version: Some(info.git_version),
        training_operator: Some(operator),
    };
    match opts.format {
        ReportFormat::Text => out.data(&server_lines(&v)),
        ReportFormat::Json => print(&v, opts.format, out),
    }
}

async fn operator_version(kube: &cluster::Kube) -> Result<OperatorVersion> {
    let state = cluster::operator::current(kube).await?;
    let (namespace, name) = match &state {
        OperatorState::Running { namespace, name }
        | OperatorState::NotReady {
            namespace, name, ..
        } => (namespace.clone(), name.clone()),
        OperatorState::NotFound => {
            return Ok(OperatorVersion {
                state: "not found".into(),
                deployment: None,
                image: None,
                version: None,
                detail: Some(state.to_string()),
            });
        }
        OperatorState::Unknown(why) => {
            return Ok(OperatorVersion {
                state: "unknown".into(),
                deployment: None,
                image: None,
                version: None,
                detail: Some(why.clone()),
            });
        }
    };
    let deployments: Api<Deployment> = Api::namespaced(kube.client.clone(), &namespace);
    // The image is a nicety: a Deployment that may not be read leaves it out.
    let image = cluster::retry(kube, || deployments.get_opt(&name))
        .await
        .ok()
        .flatten()
        .and_then(|d| operator_image(&d));
    let running = matches!(state, OperatorState::Running { .. });
    Ok(OperatorVersion {
        state: if running { "running" } else { "not ready" }.into(),
        deployment: Some(format!("{namespace}/{name}")),
        version: image.as_deref().and_then(release_of),
        image,
        detail: (!running).then(|| state.to_string()),
    })
}

/// The release an operator image is. A release tag (`v1.8.1`) says it; the standalone
/// manifests of recent releases pin a commit tag instead, known here for the v1 releases that
/// serve TFJob (kubeflow/trainer `manifests/overlays/standalone/kustomization.yaml` at each
/// tag). Any other tag: `None` (the image is shown as it is).
pub fn release_of(image: &str) -> Option<String> {
    const COMMITS: [(&str, &str); 3] = [
        ("v1-93c5489", "v1.9.4"),
        ("v1-5170a36", "v1.9.0"),
        ("v1-04f9f13", "v1.8.1"),
    ];
    let tag = image.split('@').next()?.rsplit_once(':')?.1;
    if tag.contains('/') {
        return None; // a registry port, not a tag
    }
    if let Some((_, v)) = COMMITS.iter().find(|(c, _)| *c == tag) {
        return Some((*v).to_string());
    }
    let plain = tag.strip_prefix('v')?;
    let parts: Vec<&str> = plain.split('.').collect();
    (parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then(|| tag.to_string())
}

/// The training-operator container's image (the one named so, else the first). Pure.
pub fn operator_image(d: &Deployment) -> Option<String> {
    let containers = &d.spec.as_ref()?.template.spec.as_ref()?.containers;
    containers
        .iter()
        .find(|c| {
            c.image
                .as_deref()
                .is_some_and(|i| i.contains("training-operator"))
        })
        .or(containers.first())
        .and_then(|c| c.image.clone())
}

/// The lines after `Client Version:`. What the cluster sent is escaped for the terminal.
pub fn server_lines(v: &Versions) -> String {
    use crate::print::terminal::escape;
    let mut s = String::new();
    if let Some(server) = &v.server_version {
        s.push_str(&format!("Server Version: {}\n", escape(server)));
    }
    if let Some(op) = &v.training_operator {
        let mut line = format!("Training Operator: {}", op.state);
        if let Some(d) = &op.deployment {
            line.push_str(&format!(" ({})", escape(d)));
        }
        match (&op.version, &op.image) {
            (Some(v), Some(i)) => line.push_str(&format!(", {v} (image {})", escape(i))),
            (_, Some(i)) => line.push_str(&format!(", image {}", escape(i))),
            _ => {}
        }
        if let Some(why) = &op.detail {
            line.push_str(&format!(": {}", escape(why)));
        }
        s.push_str(&line);
        s.push('\n');
    }
    s
}

fn print(v: &Versions, format: ReportFormat, out: &mut Output) -> Result<()> {
    match format {
        ReportFormat::Text => {
            out.data(&format!("Client Version: {}\n", v.client_version.version))?;
            out.data(&server_lines(v))
        }
        ReportFormat::Json => {
            let text = serde_json::to_string_pretty(v).expect("plain structs serialize");
            out.data(&format!("{text}\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_line_names_state_deployment_and_image_escaped() {
        let v = Versions {
            client_version: client_version(),
            server_version: Some("v1.36.2".into()),
            training_operator: Some(OperatorVersion {
                state: "running".into(),
                deployment: Some("kubeflow/training-operator".into()),
                image: Some("kubeflow/training-operator:v1-855e096\u{1b}[2J".into()),
                version: None,
                detail: None,
            }),
        };
        let text = server_lines(&v);
        assert_eq!(
            text,
            "Server Version: v1.36.2\nTraining Operator: running (kubeflow/training-operator), image kubeflow/training-operator:v1-855e096^[[2J\n"
        );
        assert!(client_version().version.starts_with('v'));
    }

    #[test]
    fn the_release_is_read_from_a_release_tag_or_a_known_commit_tag() {
        for (image, want) in [
            (
                "ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489",
                Some("v1.9.4"),
            ),
            ("kubeflow/training-operator:v1-04f9f13", Some("v1.8.1")),
            ("kubeflow/training-operator:v1.7.0", Some("v1.7.0")),
            (
                "registry:5000/kubeflow/training-operator:v1.9.2@sha256:abc",
                Some("v1.9.2"),
            ),
            ("kubeflow/training-operator:v1-855e096", None),
            ("registry:5000/training-operator", None),
            ("kubeflow/training-operator:latest", None),
            ("kubeflow/training-operator:v1.9", None),
        ] {
            assert_eq!(release_of(image).as_deref(), want, "{image}");
        }
        let v = Versions {
            client_version: client_version(),
            server_version: None,
            training_operator: Some(OperatorVersion {
                state: "running".into(),
                deployment: Some("kubeflow/training-operator".into()),
                image: Some("kubeflow/training-operator:v1-04f9f13".into()),
                version: Some("v1.8.1".into()),
                detail: None,
            }),
        };
        assert_eq!(
            server_lines(&v),
            "Training Operator: running (kubeflow/training-operator), v1.8.1 (image kubeflow/training-operator:v1-04f9f13)\n"
        );
    }
}
