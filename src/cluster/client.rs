//! Access to the cluster: a kube client built from kubectl's own flags, retries for transient
//! failures, and API errors turned into messages that say what to do.
//!
//! Configuration follows kubectl: `--kubeconfig` (that file only), else `$KUBECONFIG` (several
//! files, merged), else `~/.kube/config`, else the in-cluster service account. Exec credential
//! plugins and tokens are handled by kube itself. kube's client already retries 429/503/504 and
//! honours `Retry-After`; [`retry`] adds the cases it leaves to callers (500, 502, dropped
//! connections) for requests that are safe to repeat.

use std::future::Future;
use std::time::Duration;

use hyper::header::{HeaderValue, USER_AGENT};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use secrecy::SecretString;

use super::ConnectionOptions;
use crate::error::{Error, Result};

/// A connected client plus what kubectl would have resolved from the same flags.
#[derive(Clone)]
pub struct Kube {
    pub client: Client,
    /// `-n` if given, else the context's namespace, else `default`.
    pub namespace: String,
    /// Whether the namespace came from `-n` (kubectl refuses a manifest that says otherwise).
    pub namespace_from_flag: bool,
    /// The API server URL, for messages.
    pub server: String,
    /// Per-request limit from `--request-timeout`.
    pub request_timeout: Option<Duration>,
}

/// Loads the configuration exactly as kubectl would and builds a client.
///
/// Precedence follows client-go's clientcmd (kubernetes/kubernetes
/// staging/src/k8s.io/client-go/tools/clientcmd/client_config.go): the kubeconfig picked by
/// `--kubeconfig`/`$KUBECONFIG`, its context (or `--context`), that context's cluster and user
/// (or `--cluster`/`--user`), and then every explicit flag overrides what the kubeconfig says.
pub async fn connect(args: &ConnectionOptions) -> Result<Kube> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        cluster: args.cluster.clone(),
        user: args.user.clone(),
    };
    let mut config = match &args.kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path).map_err(|e| {
                Error::not_ready(
                    format!("cannot read kubeconfig {}: {e}", path.display()),
                    "Check the --kubeconfig path, or drop the flag to use $KUBECONFIG / ~/.kube/config.",
                )
            })?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| config_error(&e.to_string()))?
        }
        None => match Config::from_kubeconfig(&options).await {
            Ok(config) => config,
            // `--server` alone is a complete configuration for kubectl, kubeconfig or not.
            Err(_) if args.server.is_some() && args.context.is_none() => {
                Config::new(parse_server(args.server.as_deref().unwrap_or_default())?)
            }
            // Like kubectl, fall back to the pod's service account when no kubeconfig exists,
            // but only when nothing asked for a particular context.
            Err(kubeconfig_err) if args.context.is_none() => {
                Config::incluster().map_err(|_| config_error(&kubeconfig_err.to_string()))?
            }
            Err(e) => return Err(config_error(&e.to_string())),
        },
    };
    apply_overrides(&mut config, args)?;
    if let Some(timeout) = args.request_timeout.filter(|t| !t.is_zero()) {
        config.connect_timeout = Some(timeout);
    }
    config.headers.push((
        USER_AGENT,
        HeaderValue::from_str(&user_agent()).expect("the user agent is ASCII"),
    ));
    let server = config.cluster_url.to_string();
    let (namespace, namespace_from_flag) = match &args.namespace {
        Some(ns) => (ns.clone(), true),
        None => (config.default_namespace.clone(), false),
    };
    let client = Client::try_from(config).map_err(|e| Error::kube("building the API client", e))?;
    Ok(Kube {
        client,
        namespace,
        namespace_from_flag,
        server: server.trim_end_matches('/').to_string(),
        request_timeout: args.request_timeout.filter(|t| !t.is_zero()),
    })
}

/// `kubectl-tfjob/0.1.0 (linux/amd64)`: kubectl's User-Agent shape (client-go's
/// `rest.DefaultKubernetesUserAgent`: command/version (GOOS/GOARCH)), so an audit log can tell
/// this plugin's requests from everyone else's.
pub fn user_agent() -> String {
    // Go's names for the platform, as kubectl reports it.
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "loongarch64" => "loong64",
        other => other,
    };
    format!("kubectl-tfjob/{} ({os}/{arch})", env!("CARGO_PKG_VERSION"))
}

fn parse_server(server: &str) -> Result<hyper::Uri> {
    server.parse::<hyper::Uri>().map_err(|e| {
        Error::Usage(format!(
            "--server {server:?} is not a URL ({e}); use e.g. https://10.0.0.1:6443"
        ))
    })
}

/// The explicit flags win over the kubeconfig, field by field.
fn apply_overrides(config: &mut Config, args: &ConnectionOptions) -> Result<()> {
    if let Some(server) = &args.server {
        config.cluster_url = parse_server(server)?;
    }
    if let Some(ca) = &args.certificate_authority {
        config.root_cert_file = Some(ca.clone());
    }
    if args.insecure_skip_tls_verify {
        if args.certificate_authority.is_some() {
            return Err(Error::Usage(
                "--certificate-authority and --insecure-skip-tls-verify contradict each other; pass one"
                    .into(),
            ));
        }
        config.accept_invalid_certs = true;
        config.root_cert = None;
        config.root_cert_file = None;
    }
    if let Some(name) = &args.tls_server_name {
        config.tls_server_name = Some(name.clone());
    }
    let auth = &mut config.auth_info;
    if let Some(token) = &args.token {
        // A token given on the command line is the credential: the kubeconfig's token file,
        // exec plugin or auth provider would only override it.
        auth.token = Some(SecretString::from(token.clone()));
        auth.token_file = None;
        auth.exec = None;
        auth.auth_provider = None;
    }
    if let Some(cert) = &args.client_certificate {
        auth.client_certificate = Some(cert.display().to_string());
        auth.client_certificate_data = None;
    }
    if let Some(key) = &args.client_key {
        auth.client_key = Some(key.display().to_string());
        auth.client_key_data = None;
    }
    if let Some(user) = &args.impersonate {
        auth.impersonate = Some(user.clone());
    }
    if !args.impersonate_groups.is_empty() {
        auth.impersonate_groups = Some(args.impersonate_groups.clone());
    }
    if let Some(uid) = &args.impersonate_uid {
        auth.impersonate_uid = Some(uid.clone());
    }
    Ok(())
}

fn config_error(detail: &str) -> Error {
    Error::not_ready(
        format!("no usable cluster configuration: {detail}"),
        "Point kubectl at a cluster first (`kubectl config current-context` should print one), \
         or pass --kubeconfig / --context.",
    )
}

/// What a request was trying to do, for error messages (`create tfjobs in namespace "x"`).
#[derive(Debug, Clone)]
pub struct Action {
    pub verb: &'static str,
    pub resource: &'static str,
    pub group: &'static str,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl Action {
    pub fn new(verb: &'static str, resource: &'static str, namespace: Option<&str>) -> Self {
        let group = match resource {
            "tfjobs" => "kubeflow.org",
            "deployments" => "apps",
            "customresourcedefinitions" => "apiextensions.k8s.io",
            "selfsubjectaccessreviews" => "authorization.k8s.io",
            _ => "",
        };
        Action {
            verb,
            resource,
            group,
            namespace: namespace.map(str::to_string),
            name: None,
        }
    }

    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    fn describe(&self) -> String {
        let mut s = format!("{} {}", self.verb, self.resource);
        if let Some(name) = &self.name {
            s.push_str(&format!(" {name:?}"));
        }
        if let Some(ns) = &self.namespace {
            s.push_str(&format!(" in namespace {ns:?}"));
        }
        s
    }

    /// The `kubectl auth can-i` line that confirms an RBAC denial.
    pub fn can_i(&self) -> String {
        let resource = if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        };
        match &self.namespace {
            Some(ns) => format!("kubectl auth can-i {} {resource} -n {ns}", self.verb),
            None => format!(
                "kubectl auth can-i {} {resource} --all-namespaces",
                self.verb
            ),
        }
    }
}

/// The HTTP status of an API error, if the server answered at all.
pub fn status_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

pub fn is_not_found(err: &kube::Error) -> bool {
    status_code(err) == Some(404)
}

/// Turns a failed request into an error that says what failed and what to do next.
pub fn explain(err: kube::Error, action: &Action, server: &str) -> Error {
    match &err {
        kube::Error::Api(status)
            if status.code == 403
                && let crate::error::Forbidden::AdmissionDenied { webhook, errors } =
                    crate::error::classify_forbidden(&status.message) =>
        {
            crate::error::admission_denied(&webhook, &errors)
        }
        kube::Error::Api(status) if status.code == 403 => Error::NotReady {
            message: format!(
                "forbidden: you may not {} (the API server said: {})",
                action.describe(),
                status.message
            ),
            hint: Some(format!(
                "Confirm with `{}`, and ask a cluster admin for a Role granting `{}` on `{}`.",
                action.can_i(),
                action.verb,
                action.resource
            )),
        },
        kube::Error::Api(status) if status.code == 401 => Error::NotReady {
            message: format!(
                "the API server rejected your credentials while trying to {}: {}",
                action.describe(),
                status.message
            ),
            hint: Some(
                "Refresh your login (e.g. re-run your cloud's get-credentials command), and check \
                 the user of your current context: `kubectl config view --minify`."
                    .into(),
            ),
        },
        kube::Error::Api(status) if status.code == 404 => {
            Error::NotFound(format!("cannot {}: {}", action.describe(), status.message))
        }
        kube::Error::Api(status) => Error::Other(format!(
            "cannot {}: {} ({}, HTTP {})",
            action.describe(),
            status.message,
            status.reason,
            status.code
        )),
        _ if let Some(tls) = certificate_failure(&err) => Error::NotReady {
            message: format!(
                "the API server at {server} presented a certificate this client does not trust \
                 ({tls}), so nothing was sent to {}",
                action.describe()
            ),
            hint: Some(
                "Check that the cluster's certificate-authority(-data) and server address in your \
                 kubeconfig belong to this cluster (`kubectl config view --minify`), or fetch a \
                 fresh kubeconfig from the cluster's provider."
                    .into(),
            ),
        },
        _ if is_transport(&err) => Error::NotReady {
            message: format!(
                "cannot reach the API server at {server} to {}: {err}",
                action.describe()
            ),
            hint: Some(
                "Check the cluster is up and your network/VPN: `kubectl cluster-info`.".into(),
            ),
        },
        _ => Error::kube(format!("cannot {}", action.describe()), err),
    }
}

/// True when the request never got an HTTP answer (refused, reset, timed out).
pub fn is_transport(err: &kube::Error) -> bool {
    matches!(
        err,
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::HttpError(_)
    )
}

/// The TLS failure behind a transport error (untrusted CA, wrong host name, expired
/// certificate). rustls errors reach us wrapped in `std::io::Error`s, whose `source()` skips
/// the wrapped error itself, hence `get_ref` for those.
pub fn certificate_failure(err: &kube::Error) -> Option<&rustls::Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match e.downcast_ref::<std::io::Error>() {
            // hyper-rustls nests io::Errors (Other around InvalidData around rustls::Error).
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

/// True for failures worth repeating: no answer at all, or a server-side hiccup.
/// (429/503/504 are already retried inside kube's client, honouring Retry-After.)
/// A certificate the client does not trust will not become trusted by asking again.
pub fn is_transient(err: &kube::Error) -> bool {
    (is_transport(err) && certificate_failure(err).is_none())
        || matches!(status_code(err), Some(429 | 500 | 502 | 503 | 504))
}

/// How many times [`retry`] tries a request in all.
pub const ATTEMPTS: u32 = 5;

/// Runs a request that is safe to repeat, retrying transient failures with exponential backoff
/// (100 ms, 200 ms, … capped at 2 s), each attempt bounded by `--request-timeout`.
pub async fn retry<T, F, Fut>(kube: &Kube, mut request: F) -> std::result::Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        let result = match kube.request_timeout {
            Some(limit) => match tokio::time::timeout(limit, request()).await {
                Ok(result) => result,
                Err(_) => Err(kube::Error::Service(
                    format!("request timed out after {limit:?} (--request-timeout)").into(),
                )),
            },
            None => request().await,
        };
        match result {
            Err(err) if attempt < ATTEMPTS && is_transient(&err) => {
                tracing::debug!(attempt, error = %err, "transient API failure, retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
                attempt += 1;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn can_i_names_group_and_namespace() {
        let a = Action::new("create", "tfjobs", Some("team-a"));
        assert_eq!(
            a.can_i(),
            "kubectl auth can-i create tfjobs.kubeflow.org -n team-a"
        );
        let a = Action::new("get", "secrets", Some("default")).named("taotoken-secret");
        assert_eq!(a.can_i(), "kubectl auth can-i get secrets -n default");
        assert_eq!(
            a.describe(),
            "get secrets \"taotoken-secret\" in namespace \"default\""
        );
        let a = Action::new("list", "deployments", None);
        assert_eq!(
            a.can_i(),
            "kubectl auth can-i list deployments.apps --all-namespaces"
        );
    }
}
