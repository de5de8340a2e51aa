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

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::cli::KubeArgs;
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
pub async fn connect(args: &KubeArgs) -> Result<Kube> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        cluster: None,
        user: None,
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
            // Like kubectl, fall back to the pod's service account when no kubeconfig exists,
            // but only when nothing asked for a particular context.
            Err(kubeconfig_err) if args.context.is_none() => {
                Config::incluster().map_err(|_| config_error(&kubeconfig_err.to_string()))?
            }
            Err(e) => return Err(config_error(&e.to_string())),
        },
    };
    if let Some(timeout) = args.request_timeout.filter(|t| !t.is_zero()) {
        config.connect_timeout = Some(timeout);
    }
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
                "Refresh your login (e.g. re-run your cloud's get-credentials command).".into(),
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

/// True for failures worth repeating: no answer at all, or a server-side hiccup.
/// (429/503/504 are already retried inside kube's client, honouring Retry-After.)
pub fn is_transient(err: &kube::Error) -> bool {
    is_transport(err) || matches!(status_code(err), Some(429 | 500 | 502 | 503 | 504))
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
