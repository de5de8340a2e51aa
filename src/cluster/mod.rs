//! Every fact about the cluster a command needs, in one place: how to connect
//! ([`ConnectionOptions`] → [`connect`]), whether the TFJob CRD is there and established
//! ([`crd`]), whether a training-operator runs ([`operator`]), whether the gateway Secret holds its
//! key ([`secret`]), how a job is named on the command line ([`parse_job_name`]), and the next step
//! to suggest when one of those is missing ([`install_operator_hint`]).
//!
//! `submit`, `wait`, `diagnose` and any new command read these facts from here and repeat none.

pub mod client;
pub mod crd;
pub mod operator;
pub mod secret;

use std::path::PathBuf;
use std::time::Duration;

pub use client::{
    ATTEMPTS, Action, Kube, connect, explain, is_not_found, is_transient, is_transport, retry,
    status_code,
};
pub use crd::CrdState;
pub use operator::OperatorState;
pub use secret::SecretState;

use crate::error::{Error, Result};
use crate::model;

/// How to reach the cluster: kubectl's connection flags, clap-free. Built by `commands/` from
/// the global flags; [`connect`] resolves it as kubectl would.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionOptions {
    /// `--kubeconfig`: that file only (else `$KUBECONFIG`, else `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// `-n/--namespace` (else the context's namespace, else `default`).
    pub namespace: Option<String>,
    /// `--request-timeout`; zero means no limit.
    pub request_timeout: Option<Duration>,
}

/// The only training-operator release that serves TFJob `kubeflow.org/v1` with the behaviour
/// this tool models (see /work/shared/reference/operator-behavior.md).
pub const OPERATOR_RELEASE: &str = "v1.9.4";

/// The command that installs that release (the upstream standalone overlay, server-side apply
/// because the CRDs exceed the client-side annotation limit).
pub const INSTALL_OPERATOR_COMMAND: &str = "kubectl apply --server-side -k \"github.com/kubeflow/trainer.git/manifests/overlays/standalone?ref=v1.9.4\"";

/// The next step when the CRD or the operator is missing.
pub fn install_operator_hint() -> String {
    format!("Install the training-operator {OPERATOR_RELEASE}: {INSTALL_OPERATOR_COMMAND}")
}

/// The resource forms kubectl accepts before `/NAME` for a TFJob: singular, plural,
/// `resource.group` and `resource.version.group` (kubectl's `schema.ParseResourceArg` in
/// k8s.io/apimachinery/pkg/runtime/schema/group_version.go), and the kind, matched without case
/// as kubectl's RESTMapper does.
const JOB_RESOURCE_FORMS: [&str; 6] = [
    "tfjob",
    "tfjobs",
    "tfjob.kubeflow.org",
    "tfjobs.kubeflow.org",
    "tfjob.v1.kubeflow.org",
    "tfjobs.v1.kubeflow.org",
];

/// `NAME`, `tfjob/NAME`, `tfjobs/NAME`, `tfjob.kubeflow.org/NAME`, `tfjobs.kubeflow.org/NAME`
/// (and the `.v1.` forms) → `NAME`. `command` names the command in the error.
pub fn parse_job_name<'a>(arg: &'a str, command: &str) -> Result<&'a str> {
    let name = match arg.split_once('/') {
        Some((kind, name)) if JOB_RESOURCE_FORMS.contains(&kind.to_ascii_lowercase().as_str()) => {
            name
        }
        Some((kind, _)) => {
            return Err(Error::Usage(format!(
                "{arg:?}: {command} takes a TFJob name or tfjob/NAME, not a {kind}"
            )));
        }
        None => arg,
    };
    if name.is_empty() {
        return Err(Error::Usage("the TFJob name is empty".into()));
    }
    Ok(name)
}

/// The message when the API server does not serve the TFJob resource at all.
pub fn crd_not_served() -> Error {
    Error::not_ready(
        format!(
            "the API server does not serve {}.{}/{}: the TFJob CRD is not installed",
            model::PLURAL,
            model::GROUP,
            model::VERSION
        ),
        install_operator_hint(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_in_every_form_kubectl_accepts() {
        for arg in [
            "mnist",
            "tfjob/mnist",
            "tfjobs/mnist",
            "TFJob/mnist",
            "tfjob.kubeflow.org/mnist",
            "tfjobs.kubeflow.org/mnist",
            "tfjobs.v1.kubeflow.org/mnist",
        ] {
            assert_eq!(parse_job_name(arg, "wait").unwrap(), "mnist", "{arg}");
        }
        let e = parse_job_name("pod/mnist", "wait").unwrap_err().to_string();
        assert!(e.contains("wait takes a TFJob name"), "{e}");
        assert!(parse_job_name("tfjob/", "wait").is_err());
    }

    #[test]
    fn the_install_hint_names_the_release_and_the_command() {
        let h = install_operator_hint();
        assert!(h.contains("v1.9.4"));
        assert!(h.ends_with(INSTALL_OPERATOR_COMMAND));
        assert!(
            crd_not_served()
                .to_string()
                .contains("tfjobs.kubeflow.org/v1")
        );
    }
}
