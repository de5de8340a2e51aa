//! Every fact about the cluster a command needs, in one place: how to connect
//! ([`ConnectionOptions`] → [`connect`]), whether the TFJob CRD is there and established
//! ([`crd`]), whether a training-operator runs ([`operator`]), whether the gateway Secret holds its
//! key ([`secret`]), how a job is named on the command line ([`parse_job_name`]), and the next step
//! to suggest when one of those is missing ([`install_operator_hint`]). Pod facts have their one
//! owner in [`pod`] (and the `kubectl get pods` Table in [`podtable`]), a job's pod events in
//! [`events`] (pod by pod, never the namespace's); what a 403 means is told apart in [`forbidden`].
//!
//! `submit`, `wait`, `diagnose` and any new command read these facts from here and repeat none.

pub mod bounded;
pub mod budget;
pub mod client;
pub mod crd;
pub mod events;
pub mod exec_guard;
pub mod forbidden;
pub mod kubeconfig;
pub mod notfound;
pub mod operator;
pub mod pod;
pub mod podexec;
pub mod podtable;
pub mod prometheus;
pub mod queue;
pub mod secret;

use std::path::PathBuf;
use std::time::Duration;

pub use client::{
    Action, DEFAULT_RETRY_DEADLINE, Kube, connect, explain, for_look, invalid_field, is_not_found,
    is_transport, not_served, outcome_unknown, retry, status_code, unknown_reason,
};
pub use crd::CrdState;
pub use operator::OperatorState;
pub use secret::SecretState;

use crate::error::{Error, Result};
use crate::model;
use crate::model::duration::go as go_duration;

/// One of kubectl's connection flags, as a hint repeats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnFlag {
    Kubeconfig,
    Context,
    Cluster,
    User,
    Namespace,
    As,
    AsGroup,
    AsUid,
    Token,
    Server,
    CertificateAuthority,
    ClientCertificate,
    ClientKey,
    InsecureSkipTlsVerify,
    TlsServerName,
    RequestTimeout,
}

impl ConnFlag {
    /// Every flag, in the order used for flags whose position on the command line is unknown.
    pub const ALL: [ConnFlag; 16] = [
        ConnFlag::Kubeconfig,
        ConnFlag::Context,
        ConnFlag::Cluster,
        ConnFlag::User,
        ConnFlag::Namespace,
        ConnFlag::As,
        ConnFlag::AsGroup,
        ConnFlag::AsUid,
        ConnFlag::Token,
        ConnFlag::Server,
        ConnFlag::CertificateAuthority,
        ConnFlag::ClientCertificate,
        ConnFlag::ClientKey,
        ConnFlag::InsecureSkipTlsVerify,
        ConnFlag::TlsServerName,
        ConnFlag::RequestTimeout,
    ];

    /// The spelling a hint uses (kubectl's; `-n` as users type it).
    pub fn flag(self) -> &'static str {
        match self {
            ConnFlag::Kubeconfig => "--kubeconfig",
            ConnFlag::Context => "--context",
            ConnFlag::Cluster => "--cluster",
            ConnFlag::User => "--user",
            ConnFlag::Namespace => "-n",
            ConnFlag::As => "--as",
            ConnFlag::AsGroup => "--as-group",
            ConnFlag::AsUid => "--as-uid",
            ConnFlag::Token => "--token",
            ConnFlag::Server => "--server",
            ConnFlag::CertificateAuthority => "--certificate-authority",
            ConnFlag::ClientCertificate => "--client-certificate",
            ConnFlag::ClientKey => "--client-key",
            ConnFlag::InsecureSkipTlsVerify => "--insecure-skip-tls-verify",
            ConnFlag::TlsServerName => "--tls-server-name",
            ConnFlag::RequestTimeout => "--request-timeout",
        }
    }
}

/// How to reach the cluster: kubectl's connection flags (cli-runtime's ConfigFlags), clap-free.
/// Built by `commands/` from the global flags; [`connect`] resolves it as kubectl would.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionOptions {
    /// `--kubeconfig`: that file only (else `$KUBECONFIG`, else `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// `--cluster`: the kubeconfig cluster to use instead of the context's.
    pub cluster: Option<String>,
    /// `--user`: the kubeconfig user to use instead of the context's.
    pub user: Option<String>,
    /// `-n/--namespace` (else the context's namespace, else `default`).
    pub namespace: Option<String>,
    /// `--as`: user to impersonate.
    pub impersonate: Option<String>,
    /// `--as-group` (repeatable).
    pub impersonate_groups: Vec<String>,
    /// `--as-uid`.
    pub impersonate_uid: Option<String>,
    /// `--token`: bearer token. Never repeated in hints (see [`ConnectionOptions::as_args`]).
    pub token: Option<String>,
    /// `-s/--server`: API server URL.
    pub server: Option<String>,
    /// `--certificate-authority`.
    pub certificate_authority: Option<PathBuf>,
    /// `--client-certificate`.
    pub client_certificate: Option<PathBuf>,
    /// `--client-key`.
    pub client_key: Option<PathBuf>,
    /// `--insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
    /// `--tls-server-name`.
    pub tls_server_name: Option<String>,
    /// `--request-timeout`; zero means no limit.
    pub request_timeout: Option<Duration>,
    /// The order in which the user gave the flags (from argv, by `commands/`), so a hint
    /// repeats them as typed. Flags set but not listed here follow in [`ConnFlag::ALL`] order.
    pub order: Vec<ConnFlag>,
    /// How long one request may be retried in all (default [`DEFAULT_RETRY_DEADLINE`]).
    pub retry_deadline: Option<Duration>,
}

impl ConnectionOptions {
    /// The flags that were given, user's order first (each once), then the rest.
    fn flags_in_order(&self) -> Vec<ConnFlag> {
        let mut flags: Vec<ConnFlag> = Vec::new();
        for f in self.order.iter().chain(ConnFlag::ALL.iter()) {
            if !flags.contains(f) {
                flags.push(*f);
            }
        }
        flags
    }

    /// The arguments for one flag (`[]` when not given). The token is never returned.
    fn args_of(&self, flag: ConnFlag, namespace: Option<&str>) -> Vec<String> {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let value = match flag {
            ConnFlag::Kubeconfig => path(&self.kubeconfig),
            ConnFlag::Context => self.context.clone(),
            ConnFlag::Cluster => self.cluster.clone(),
            ConnFlag::User => self.user.clone(),
            ConnFlag::Namespace => namespace.map(str::to_string),
            ConnFlag::As => self.impersonate.clone(),
            ConnFlag::AsGroup => {
                return self
                    .impersonate_groups
                    .iter()
                    .flat_map(|g| [flag.flag().to_string(), g.clone()])
                    .collect();
            }
            ConnFlag::AsUid => self.impersonate_uid.clone(),
            // A hint must not print a credential.
            ConnFlag::Token => None,
            ConnFlag::Server => self.server.clone(),
            ConnFlag::CertificateAuthority => path(&self.certificate_authority),
            ConnFlag::ClientCertificate => path(&self.client_certificate),
            ConnFlag::ClientKey => path(&self.client_key),
            ConnFlag::InsecureSkipTlsVerify => {
                return if self.insecure_skip_tls_verify {
                    vec![flag.flag().to_string()]
                } else {
                    Vec::new()
                };
            }
            ConnFlag::TlsServerName => self.tls_server_name.clone(),
            ConnFlag::RequestTimeout => self.request_timeout.map(go_duration),
        };
        value
            .map(|v| vec![flag.flag().to_string(), v])
            .unwrap_or_default()
    }

    /// The connection flags that were given, as arguments to put in a suggested command line
    /// (`kubectl tfjob wait x --context prod -n team`), in the order the user typed them, so
    /// the hint reaches the same cluster. `--token` is left out on purpose: a hint must not
    /// print a credential.
    pub fn as_args(&self) -> Vec<String> {
        self.args_with_namespace(self.namespace.as_deref())
    }

    /// Like [`ConnectionOptions::as_args`], with `-n namespace` instead of the flag's value
    /// (placed where the user put `-n`, else first), or no `-n` at all for `None`.
    pub fn args_with_namespace(&self, namespace: Option<&str>) -> Vec<String> {
        let mut flags = self.flags_in_order();
        if !self.order.contains(&ConnFlag::Namespace) {
            // Not typed by the user: a hint names the namespace up front.
            flags.retain(|f| *f != ConnFlag::Namespace);
            flags.insert(0, ConnFlag::Namespace);
        }
        flags
            .into_iter()
            .flat_map(|f| self.args_of(f, namespace))
            .collect()
    }

    /// The flags for a suggested command in `namespace`, as shell text without a leading space:
    /// `-n team` or `--context prod -n team --kubeconfig /k` (user's order).
    pub fn ns_flags(&self, namespace: &str) -> String {
        shell_join(&self.args_with_namespace(Some(namespace)))
    }

    /// The flags without `-n` (for cluster-scoped commands, or hints that name the namespace
    /// themselves), as text to append to a suggested command: `""` or `" --context prod"`.
    /// Arguments with spaces or quotes are single-quoted for a POSIX shell.
    pub fn hint_suffix(&self) -> String {
        self.args_with_namespace(None)
            .iter()
            .map(|a| format!(" {}", shell_quote(a)))
            .collect()
    }
}

/// One argument, single-quoted for a POSIX shell when it needs it.
pub(crate) fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The only training-operator release that serves TFJob `kubeflow.org/v1` with the behaviour
/// this tool models (see /work/shared/reference/operator-behavior.md).
/// Field manager for everything this tool writes (the job, the gateway Secret, pod dry runs).
pub const FIELD_MANAGER: &str = "kubectl-tfjob";

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

/// The forms `kubectl` takes for a JobSet (resource, singular, with the group).
const JOBSET_RESOURCE_FORMS: [&str; 4] = [
    "jobset",
    "jobsets",
    "jobset.jobset.x-k8s.io",
    "jobsets.jobset.x-k8s.io",
];

/// What a command's NAME argument names, parsed once by `commands/` and dispatched on: a TFJob
/// (`NAME`, `tfjob/NAME`, …) or a JobSet (`jobset/NAME`, …). The namespace is the command
/// context's, resolved once with its client (`ops::Context::namespace`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    TfJob(String),
    JobSet(String),
}

impl Target {
    /// Parses `arg` (invalid names are exit 2); `command` names the command in the error.
    pub fn parse(arg: &str, command: &str) -> Result<Target> {
        if let Some((kind, name)) = arg.split_once('/')
            && JOBSET_RESOURCE_FORMS.contains(&kind.to_ascii_lowercase().as_str())
        {
            check_name("JobSet", name)?;
            return Ok(Target::JobSet(name.to_string()));
        }
        parse_job_name(arg, command).map(|n| Target::TfJob(n.to_string()))
    }

    pub fn name(&self) -> &str {
        match self {
            Target::TfJob(n) | Target::JobSet(n) => n,
        }
    }

    /// The kind, as messages name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::TfJob(_) => "TFJob",
            Target::JobSet(_) => "JobSet",
        }
    }
}

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
    check_name("TFJob", name)?;
    Ok(name)
}

/// A name the API server could never have stored: every object name it accepts is a DNS-1123
/// subdomain (apimachinery's `ValidateObjectMeta` with `NameIsDNSSubdomain`, which custom
/// resources and Secrets both use), so refuse it offline, before any request (exit 2).
pub fn check_name(kind: &str, name: &str) -> Result<()> {
    crate::model::names::dns1123_subdomain(name).map_err(|rule| {
        Error::Usage(format!(
            "{kind} name {name:?} is not a valid name: a DNS-1123 subdomain {rule}"
        ))
    })
}

/// `-n/--namespace` must be a DNS-1123 label (apimachinery's `ValidateNamespaceName`); checked
/// before any request so `-n 'Bad NS'` is invalid input (exit 2), not a server round trip.
pub fn check_namespace(namespace: Option<&str>) -> Result<()> {
    let Some(ns) = namespace else { return Ok(()) };
    crate::model::names::dns1123_label(ns).map_err(|rule| {
        Error::Usage(format!(
            "-n/--namespace {ns:?} is not a valid namespace name: a DNS-1123 label {rule}"
        ))
    })
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

/// A failed TFJob request, said alike by every verb: the resource not served is the missing CRD
/// ([`crd_not_served`], exit 3), not a bare `404 page not found` (exit 1); the rest as
/// [`Error::kube`] says it.
pub fn tfjob_error(context: impl Into<String>, err: kube::Error) -> Error {
    if not_served(&err) {
        return crd_not_served();
    }
    Error::kube(context, err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_404_is_the_missing_crd_and_a_status_404_is_not() {
        // kube's client turns a body that is no Status into this reason (client/mod.rs).
        let plain = kube::Error::Api(Box::new(
            kube::core::Status::failure("404 page not found", "Failed to parse error data")
                .with_code(404),
        ));
        assert!(not_served(&plain));
        let err = tfjob_error("listing tfjobs", plain);
        assert_eq!(err.exit_code(), crate::error::ExitCode::NotReady);
        assert!(
            err.to_string().contains("the TFJob CRD is not installed"),
            "{err}"
        );
        let missing = kube::Error::Api(Box::new(
            kube::core::Status::failure("tfjobs.kubeflow.org \"x\" not found", "NotFound")
                .with_code(404),
        ));
        assert!(!not_served(&missing));
        assert!(is_not_found(&missing));
    }

    #[test]
    fn namespace_flag_must_be_a_dns_label() {
        for ok in ["default", "team-a", "a", "x1", &"n".repeat(63)] {
            check_namespace(Some(ok)).unwrap();
        }
        for bad in [
            "",
            "Bad NS",
            "Team",
            "-a",
            "a-",
            "a.b",
            "a_b",
            &"n".repeat(64),
        ] {
            let e = check_namespace(Some(bad)).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid, "{bad:?}");
        }
    }

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
        for bad in ["Mnist", "t-bad_name!", "tfjob/a b", "-x", "a..b"] {
            let e = parse_job_name(bad, "wait").unwrap_err();
            assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid, "{bad}");
            assert!(e.to_string().contains("DNS-1123 subdomain"), "{bad}: {e}");
        }
        for bad in ["Bad NS", "a.b", "", "-a", &"a".repeat(64)] {
            let e = check_namespace(Some(bad)).unwrap_err();
            assert!(e.to_string().contains("DNS-1123 label"), "{bad:?}: {e}");
        }
        assert!(check_namespace(Some("team-a")).is_ok());
        assert!(check_namespace(None).is_ok());
        let e = parse_job_name("pod/mnist", "wait").unwrap_err().to_string();
        assert!(e.contains("wait takes a TFJob name"), "{e}");
        assert!(parse_job_name("tfjob/", "wait").is_err());
    }

    #[test]
    fn a_target_is_a_tfjob_or_one_of_the_jobset_forms_kubectl_takes() {
        for arg in [
            "jobset/x",
            "JobSets/x",
            "jobset.jobset.x-k8s.io/x",
            "jobsets.jobset.x-k8s.io/x",
        ] {
            assert_eq!(
                Target::parse(arg, "get").unwrap(),
                Target::JobSet("x".into()),
                "{arg}"
            );
        }
        assert_eq!(
            Target::parse("x", "get").unwrap(),
            Target::TfJob("x".into())
        );
        assert_eq!(Target::parse("tfjob/x", "get").unwrap().name(), "x");
        assert!(Target::parse("jobset/Bad_Name", "get").is_err());
        assert!(Target::parse("pod/x", "get").is_err());
    }

    #[test]
    fn hints_repeat_the_connection_flags_but_never_the_token() {
        let c = ConnectionOptions {
            context: Some("prod".into()),
            namespace: Some("team".into()),
            impersonate_groups: vec!["a".into(), "b".into()],
            token: Some("sekret".into()),
            insecure_skip_tls_verify: true,
            request_timeout: Some(Duration::from_secs(90)),
            ..Default::default()
        };
        let args = c.as_args();
        assert_eq!(
            args,
            [
                "-n",
                "team",
                "--context",
                "prod",
                "--as-group",
                "a",
                "--as-group",
                "b",
                "--insecure-skip-tls-verify",
                "--request-timeout",
                "1m30s"
            ]
        );
        assert!(!args.join(" ").contains("sekret"));
        let c = ConnectionOptions {
            kubeconfig: Some("/my dir/kc".into()),
            namespace: Some("team".into()),
            ..Default::default()
        };
        assert_eq!(c.hint_suffix(), " --kubeconfig '/my dir/kc'");
        assert_eq!(c.ns_flags("other"), "-n other --kubeconfig '/my dir/kc'");
        assert_eq!(ConnectionOptions::default().hint_suffix(), "");
        assert_eq!(ConnectionOptions::default().ns_flags("x"), "-n x");
    }

    #[test]
    fn hints_keep_the_users_order() {
        // As typed: `--context gpu --kubeconfig /k -n team --token t --as-group g`.
        let c = ConnectionOptions {
            kubeconfig: Some("/k".into()),
            context: Some("gpu".into()),
            namespace: Some("team".into()),
            token: Some("t".into()),
            impersonate_groups: vec!["g".into()],
            order: vec![
                ConnFlag::Context,
                ConnFlag::Kubeconfig,
                ConnFlag::Namespace,
                ConnFlag::Token,
                ConnFlag::AsGroup,
            ],
            ..Default::default()
        };
        assert_eq!(
            c.as_args().join(" "),
            "--context gpu --kubeconfig /k -n team --as-group g"
        );
        // The hint's own namespace takes the user's -n position.
        assert_eq!(
            c.ns_flags("other"),
            "--context gpu --kubeconfig /k -n other --as-group g"
        );
        assert_eq!(
            c.hint_suffix(),
            " --context gpu --kubeconfig /k --as-group g"
        );
    }

    #[test]
    fn durations_print_as_kubectl_reads_them() {
        assert_eq!(go_duration(Duration::from_secs(5)), "5s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(go_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(go_duration(Duration::ZERO), "0");
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
