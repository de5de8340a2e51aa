//! Access to the cluster: a kube client built from kubectl's own flags, retries for transient
//! failures, and API errors turned into messages that say what to do.
//!
//! Configuration follows kubectl: `--kubeconfig` (that file only), else `$KUBECONFIG` (several
//! files, merged), else `~/.kube/config`, else the in-cluster service account. Exec credential
//! plugins and tokens are handled by kube itself.
//!
//! Retries happen in one place, [`retry`], under one budget: kube's own retry layer (429/503/504
//! with up to 15 tries, kube-client `client/builder.rs`, `Config::default_retry`) is switched
//! off, so the two can no longer multiply. `--request-timeout` bounds each attempt (connect,
//! read and write, and the whole attempt), the retry deadline bounds all attempts together.

use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use tokio::time::Instant;

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
    /// The connection flags as the user gave them (token removed), for next-step hints.
    pub hints: ConnectionOptions,
    /// How long [`retry`] may keep trying one request, all attempts and pauses included.
    pub retry_deadline: Duration,
    /// The command's one deadline (`--timeout`): no request, attempt or pause of [`retry`]
    /// outlives it.
    pub deadline: super::budget::Deadline,
}

/// The default budget of one request and its retries: a persistent 429 or 5xx ends the command
/// within about a minute instead of never.
pub const DEFAULT_RETRY_DEADLINE: Duration = Duration::from_secs(60);

impl Kube {
    /// A `Kube` around an already built client (tests, or callers that build their own).
    pub fn from_client(client: Client, namespace: &str, server: &str) -> Self {
        Kube {
            client,
            namespace: namespace.to_string(),
            namespace_from_flag: false,
            server: server.to_string(),
            request_timeout: None,
            retry_deadline: DEFAULT_RETRY_DEADLINE,
            hints: ConnectionOptions::default(),
            deadline: Default::default(),
        }
    }
}

/// Loads the configuration exactly as kubectl would and builds a client.
///
/// Precedence follows client-go's clientcmd (kubernetes/kubernetes
/// staging/src/k8s.io/client-go/tools/clientcmd/client_config.go): the kubeconfig picked by
/// `--kubeconfig`/`$KUBECONFIG`, its context (or `--context`), that context's cluster and user
/// (or `--cluster`/`--user`), and then every explicit flag overrides what the kubeconfig says.
pub async fn connect(args: &ConnectionOptions) -> Result<Kube> {
    super::check_namespace(args.namespace.as_deref())?;
    let options = KubeConfigOptions {
        context: args.context.clone(),
        cluster: args.cluster.clone(),
        user: args.user.clone(),
    };
    // Read through the bounded reader, handed to kube as a value (see `kubeconfig`).
    let paths = super::kubeconfig::sources(args.kubeconfig.as_deref());
    let loaded = if paths.is_empty() {
        Kubeconfig::default()
    } else {
        super::kubeconfig::load(&paths)
            .and_then(|mut k| super::kubeconfig::inline_cluster_files(&mut k, &options).map(|()| k))
            .map_err(|e| match &args.kubeconfig {
                Some(_) => Error::not_ready(
                    e,
                    "Check the --kubeconfig path, or drop the flag to use $KUBECONFIG / ~/.kube/config.",
                ),
                None => config_error(&e),
            })?
    };
    let mut config = match (
        &args.kubeconfig,
        Config::from_custom_kubeconfig(loaded, &options).await,
    ) {
        (_, Ok(config)) => config,
        (Some(_), Err(e)) => return Err(config_error(&e.to_string())),
        // `--server` alone is a complete configuration for kubectl, kubeconfig or not.
        (None, Err(_)) if args.server.is_some() && args.context.is_none() => {
            Config::new(parse_server(args.server.as_deref().unwrap_or_default())?)
        }
        // Like kubectl, fall back to the pod's service account when no kubeconfig exists,
        // but only when nothing asked for a particular context.
        (None, Err(kubeconfig_err)) if args.context.is_none() => {
            Config::incluster().map_err(|_| config_error(&kubeconfig_err.to_string()))?
        }
        (None, Err(e)) => return Err(config_error(&e.to_string())),
    };
    apply_overrides(&mut config, args)?;
    super::kubeconfig::inline_user_files(&mut config.auth_info).map_err(|e| config_error(&e))?;
    // The exec plugin gets the same bound as one request (see `exec_guard`).
    let plugin_timeout = args
        .request_timeout
        .filter(|t| !t.is_zero())
        .unwrap_or(args.retry_deadline.unwrap_or(DEFAULT_RETRY_DEADLINE));
    super::exec_guard::wrap(&mut config.auth_info, plugin_timeout);
    // Our retry is the only one (see the module docs).
    config.default_retry = false;
    let request_timeout = args.request_timeout.filter(|t| !t.is_zero());
    if let Some(timeout) = request_timeout {
        // kubectl's --request-timeout bounds the whole request (client-go sets http.Client's
        // Timeout); a server that accepts and then goes quiet must not hang us either.
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.write_timeout = Some(timeout);
    }
    config.headers.push((
        USER_AGENT,
        HeaderValue::from_str(&user_agent()).expect("the user agent is ASCII"),
    ));
    let server = config.cluster_url.to_string();
    crate::error::set_api_server(&server);
    let (namespace, namespace_from_flag) = match &args.namespace {
        Some(ns) => (ns.clone(), true),
        None => (config.default_namespace.clone(), false),
    };
    // Every reply body bounded (see `bounded`).
    let client = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| Error::kube("building the API client", e))?
        .with_layer(&super::bounded::Bound)
        .build();
    Ok(Kube {
        client,
        namespace,
        namespace_from_flag,
        server: server.trim_end_matches('/').to_string(),
        request_timeout,
        retry_deadline: args.retry_deadline.unwrap_or(DEFAULT_RETRY_DEADLINE),
        hints: ConnectionOptions {
            token: None,
            ..args.clone()
        },
        deadline: Default::default(),
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
        // Read here, bounded; kube would read the file itself, whole.
        config.root_cert = Some(super::kubeconfig::read_ca_file(ca)?);
        config.root_cert_file = None;
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

    /// The `kubectl auth can-i` line that confirms an RBAC denial, with the user's connection
    /// flags so it asks the same cluster as the same user.
    pub fn can_i(&self, conn: &ConnectionOptions) -> String {
        let resource = if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        };
        match &self.namespace {
            Some(ns) => format!(
                "kubectl auth can-i {} {resource} {}",
                self.verb,
                conn.ns_flags(ns)
            ),
            None => format!(
                "kubectl auth can-i {} {resource} --all-namespaces{}",
                self.verb,
                conn.hint_suffix()
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

/// The field a 422 Invalid names first (`metadata.uid` for a patch whose uid precondition
/// failed: the uid is immutable, apimachinery `ValidateObjectMetaUpdate`).
pub fn invalid_field(err: &kube::Error) -> Option<&str> {
    match err {
        kube::Error::Api(s) if s.code == 422 => s
            .details
            .iter()
            .flat_map(|d| d.causes.iter())
            .find_map(|c| (!c.field.is_empty()).then_some(c.field.as_str())),
        _ => None,
    }
}

pub fn is_not_found(err: &kube::Error) -> bool {
    status_code(err) == Some(404)
}

/// A 404 that is not a `Status`: kube-apiserver's plain-text `404 page not found` for a group or
/// resource it does not serve (a CRD not installed), as opposed to the NotFound `Status` of an
/// object that is not there (apiserver's `NotFoundHandler`, kube's `Status::is_not_found`).
pub fn not_served(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404 && !status.is_not_found())
}

/// A refused read (RBAC and the like) becomes the reason to report as unknown; a cluster that
/// cannot be reached, or rejects our credentials (which makes every other read fail too), ends
/// the command with [`explain`]'s error.
pub fn unknown_reason(err: kube::Error, action: &Action, kube: &Kube) -> Result<String> {
    if is_transport(&err) || status_code(&err) == Some(401) {
        // (A request cut off by the deadline is transport-shaped: it ends the command too.)
        return Err(explain(err, action, kube));
    }
    Ok(match status_code(&err) {
        Some(403) => format!(
            "forbidden to {} {}: confirm with `{}`",
            action.verb,
            action.resource,
            action.can_i(&kube.hints)
        ),
        _ => format!(
            "{} {}: {}",
            action.verb,
            action.resource,
            crate::error::chain(&err)
        ),
    })
}

/// Turns a failed request into an error that says what failed and what to do next.
pub fn explain(err: kube::Error, action: &Action, kube: &Kube) -> Error {
    let server = &kube.server;
    let conn = kube.hints.hint_suffix();
    match &err {
        _ if let Some(ran_out) = crate::error::deadline_reached(&err) => {
            Error::Timeout(ran_out.0.clone())
        }
        kube::Error::Api(status)
            if status.code == 403
                && let super::forbidden::Forbidden::AdmissionDenied { webhook, errors } =
                    super::forbidden::classify_forbidden(&status.message) =>
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
                action.can_i(&kube.hints),
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
            hint: Some(format!(
                "Refresh your login (e.g. re-run your cloud's get-credentials command), and check \
                 the user of your current context: `kubectl config view --minify{conn}`."
            )),
        },
        _ if action.resource == "tfjobs" && not_served(&err) => super::crd_not_served(),
        kube::Error::Api(status) if status.code == 404 => {
            Error::NotFound(format!("cannot {}: {}", action.describe(), status.message))
        }
        // Still throttled after every retry the deadline allowed: the server answered, so this
        // is not a reachability problem (kube-apiserver answers 429 from its priority-and-
        // fairness or max-in-flight filters, with Retry-After).
        kube::Error::Api(status) if status.code == 429 => Error::Other(format!(
            "the API server at {server} is throttling requests (HTTP 429 {}) and kept doing so \
             until the retry deadline while trying to {}: {}",
            status.reason,
            action.describe(),
            status.message
        )),
        kube::Error::Api(status) => Error::Other(format!(
            "cannot {}: {} ({}, HTTP {})",
            action.describe(),
            status.message,
            status.reason,
            status.code
        )),
        _ if let Some(big) = super::bounded::too_large(&err) => {
            Error::Other(format!("cannot {}: {big}", action.describe()))
        }
        _ if let Some(tls) = certificate_failure(&err) => Error::NotReady {
            message: format!(
                "the API server at {server} presented a certificate this client does not trust \
                 ({tls}), so nothing was sent to {}",
                action.describe()
            ),
            hint: Some(format!(
                "Check that the cluster's certificate-authority(-data) and server address in your \
                 kubeconfig belong to this cluster (`kubectl config view --minify{conn}`), or \
                 fetch a fresh kubeconfig from the cluster's provider."
            )),
        },
        _ if let Some(why) = unreachable(&err) => crate::error::unreachable_error(why, &err),
        _ if is_transport(&err) => Error::NotReady {
            message: format!(
                "cannot reach the API server at {server} to {}: {err}",
                action.describe()
            ),
            hint: Some(format!(
                "Check the cluster is up and your network/VPN: `kubectl cluster-info{conn}`."
            )),
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
/// certificate), found inside the `std::io::Error`s that wrap it ([`crate::error::causes`]).
pub(crate) fn certificate_failure(err: &kube::Error) -> Option<&rustls::Error> {
    crate::error::find_cause(err)
}

fn unreachable(err: &kube::Error) -> Option<crate::error::Unreachable> {
    crate::error::unreachable(err)
}

/// True when a failed write may still have been applied, so the caller must look before saying
/// what happened: the request may have reached the server and its answer was lost or cut off,
/// the answer came but could not be read (a 201 with a broken body), or the server gave up on
/// its side (5xx: kube-apiserver's 504 "request did not complete" may still commit). A refused
/// connection, an unknown host or a failed TLS handshake sent nothing; any other status is an
/// answer.
pub fn outcome_unknown(err: &kube::Error) -> bool {
    if unreachable(err).is_some() || certificate_failure(err).is_some() {
        return false;
    }
    match err {
        kube::Error::Api(s) => matches!(s.code, 500 | 502 | 503 | 504),
        kube::Error::SerdeError(_) | kube::Error::FromUtf8(_) | kube::Error::ReadEvents(_) => true,
        other => is_transport(other),
    }
}

/// How long the look after a write of unknown outcome may take: the write's own retries have
/// used the deadline already, so this one is short.
pub const LOOK_DEADLINE: Duration = Duration::from_secs(10);

/// A copy of `kube` whose retries end within [`LOOK_DEADLINE`] (or sooner, by its own deadline).
pub fn for_look(kube: &Kube) -> Kube {
    Kube {
        retry_deadline: kube.retry_deadline.min(LOOK_DEADLINE),
        ..kube.clone()
    }
}

/// True for failures worth repeating: no answer at all, throttling, or a server-side hiccup.
/// A certificate the client does not trust will not become trusted by asking again, a reply
/// over its bound would be as large again, and a refused connection or unknown host ends the
/// command at once, as with kubectl.
pub(crate) fn is_transient(err: &kube::Error) -> bool {
    (is_transport(err)
        && crate::error::deadline_reached(err).is_none()
        && certificate_failure(err).is_none()
        && super::bounded::too_large(err).is_none()
        && unreachable(err).is_none())
        || matches!(status_code(err), Some(429 | 500 | 502 | 503 | 504))
}

/// How long retries go on silently before one stderr line says they are happening.
pub(crate) const ANNOUNCE: Duration = Duration::from_secs(3);

/// A failure in a few words for the retry line: the status for an answer, else the error.
fn short_reason(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(s) => format!("HTTP {} {}", s.code, s.reason),
        other => other.to_string(),
    }
}

/// The first pause between attempts; pauses double up to [`MAX_DELAY`] (with jitter).
const FIRST_DELAY: Duration = Duration::from_millis(200);
const MAX_DELAY: Duration = Duration::from_secs(5);
/// The longest `Retry-After` honoured: a server asking for more gets asked again sooner, so
/// one answer cannot spend the whole budget in a single pause.
pub(crate) const RETRY_AFTER_CAP: Duration = Duration::from_secs(10);

/// The server's own hint for when to ask again: `details.retryAfterSeconds` of its Status, which
/// kube-apiserver sets together with the `Retry-After` header on 429 (and some 5xx). client-go
/// waits for it too (staging/src/k8s.io/client-go/rest/request.go, `checkWait`).
pub fn retry_after(err: &kube::Error) -> Option<Duration> {
    match err {
        kube::Error::Api(status) => status
            .details
            .as_ref()
            .map(|d| Duration::from_secs(d.retry_after_seconds.into())),
        _ => None,
    }
}

/// Pure: how long to pause before the next attempt, or `None` to stop. The backoff's delay, or
/// the server's Retry-After (capped) when that is longer; never a pause that would end past the
/// deadline (`remaining` is what is left of it).
pub(crate) fn next_delay(
    backoff: Option<Duration>,
    retry_after: Option<Duration>,
    remaining: Duration,
) -> Option<Duration> {
    let delay = backoff?.max(retry_after.unwrap_or_default().min(RETRY_AFTER_CAP));
    (delay < remaining).then_some(delay)
}

/// An attempt that got no answer in time.
#[derive(Debug)]
struct AttemptTimedOut {
    after: Duration,
    by_deadline: bool,
}

impl std::fmt::Display for AttemptTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.by_deadline {
            write!(
                f,
                "no answer within the retry deadline ({})",
                seconds(self.after)
            )
        } else {
            write!(
                f,
                "request timed out after {} (--request-timeout)",
                seconds(self.after)
            )
        }
    }
}

impl std::error::Error for AttemptTimedOut {}

/// A duration as the user wrote it (`30s`, `1.5s`, `250ms`), not Rust's `Duration` debug form
/// (`1.500212345s`).
pub(crate) fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() < 50 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// Runs a request that is safe to repeat under the one retry policy: transient failures
/// ([`is_transient`]) are retried with exponential backoff and jitter, honouring Retry-After up
/// to [`RETRY_AFTER_CAP`]; each attempt is bounded by `--request-timeout` and all of them by
/// [`Kube::retry_deadline`]. The last error is returned when the deadline comes. Retries are
/// logged at `-v`; at default verbosity one line says so once they have lasted [`ANNOUNCE`].
pub async fn retry<T, F, Fut>(kube: &Kube, mut request: F) -> std::result::Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, kube::Error>>,
{
    let started = Instant::now();
    let per_attempt = kube.request_timeout;
    // `--request-timeout` bounds one request with its retries, as client-go's does: the
    // timeout's context spans every attempt of `Request.request` (client-go rest/request.go).
    let budget = per_attempt.map_or(kube.retry_deadline, |t| t.min(kube.retry_deadline));
    let retry_until = started + budget;
    // The command's deadline, when it comes first, ends the request at that instant.
    let command_until = kube.deadline.until().map(Instant::from_std);
    let until = command_until.map_or(retry_until, |c| c.min(retry_until));
    let by_command = command_until.is_some_and(|c| c <= retry_until);
    let announced = std::cell::Cell::new(false);
    let attempt = || {
        let remaining = until.saturating_duration_since(Instant::now());
        // The last attempt gets at least a moment, so a retry deadline of 0 still makes one
        // request; the command's deadline gets no such moment.
        let budget = if by_command {
            remaining
        } else {
            remaining.max(Duration::from_millis(500))
        };
        let (limit, by_deadline) = match per_attempt {
            Some(t) if t <= budget => (t, false),
            _ => (budget, true),
        };
        let reached = (by_command && by_deadline).then(|| kube.deadline.reached());
        let fut = request();
        async move {
            if let Some(reached) = &reached
                && limit.is_zero()
            {
                return Err(kube::Error::Service(Box::new(reached.clone())));
            }
            match super::budget::Budget::new(limit).attempt(fut).await {
                Some(result) => result,
                None => Err(kube::Error::Service(match reached {
                    Some(reached) => Box::new(reached),
                    None => Box::new(AttemptTimedOut {
                        after: limit,
                        by_deadline,
                    }),
                })),
            }
        }
    };
    let backoff = ExponentialBuilder::default()
        .with_min_delay(FIRST_DELAY)
        .with_max_delay(MAX_DELAY)
        .with_jitter()
        .without_max_times();
    attempt
        .retry(backoff)
        .when(is_transient)
        .adjust(|err, delay| {
            next_delay(
                delay,
                retry_after(err),
                until.saturating_duration_since(Instant::now()),
            )
        })
        .notify(|err, delay| {
            tracing::info!(error = %err, "API request failed; retrying in {}", seconds(delay));
            if !announced.get() && started.elapsed() + delay >= ANNOUNCE {
                announced.set(true);
                eprintln!(
                    "warning: the API server at {} keeps failing ({}); retrying for up to {}s in all",
                    kube.server,
                    short_reason(err),
                    until.saturating_duration_since(started).as_secs()
                );
            }
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_written_not_as_debug() {
        assert_eq!(seconds(Duration::from_secs(30)), "30s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5s");
        assert_eq!(seconds(Duration::from_nanos(1_500_212_345)), "1.5s");
        assert_eq!(seconds(Duration::from_millis(250)), "250ms");
    }

    #[test]
    fn pauses_follow_the_backoff_honour_retry_after_up_to_a_cap_and_stop_at_the_deadline() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        // No hint from the server: the backoff's delay.
        assert_eq!(next_delay(Some(ms(400)), None, s(60)), Some(ms(400)));
        // Retry-After longer than the backoff wins...
        assert_eq!(next_delay(Some(ms(400)), Some(s(3)), s(60)), Some(s(3)));
        // ...but only up to the cap.
        assert_eq!(
            next_delay(Some(ms(400)), Some(s(3600)), s(60)),
            Some(RETRY_AFTER_CAP)
        );
        // A shorter Retry-After (or 0) never shortens the backoff.
        assert_eq!(next_delay(Some(s(2)), Some(s(0)), s(60)), Some(s(2)));
        // A pause that would end past the deadline ends the retries instead.
        assert_eq!(next_delay(Some(ms(400)), Some(s(3)), s(2)), None);
        assert_eq!(next_delay(Some(ms(400)), None, ms(400)), None);
        assert_eq!(next_delay(None, None, s(60)), None);
    }

    #[test]
    fn throttling_and_server_errors_are_transient_client_errors_are_not() {
        let api = |code: u16| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..Default::default()
            }))
        };
        for code in [429, 500, 502, 503, 504] {
            assert!(is_transient(&api(code)), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 422] {
            assert!(!is_transient(&api(code)), "{code}");
        }
    }

    #[tokio::test]
    async fn persistent_throttling_is_reported_as_throttling() {
        let err = kube::Error::Api(Box::new(kube::core::Status {
            code: 429,
            reason: "TooManyRequests".into(),
            message: "too many requests, please try again later".into(),
            ..Default::default()
        }));
        let e = explain(
            err,
            &Action::new("create", "tfjobs", Some("default")),
            &Kube::from_client(
                Client::try_from(Config::new("https://k".parse().unwrap())).unwrap(),
                "default",
                "https://k",
            ),
        );
        assert_eq!(e.exit_code(), crate::error::ExitCode::Failure);
        let text = e.to_string();
        assert!(text.contains("throttling"), "{text}");
        assert!(!text.contains("cannot reach"), "{text}");
    }

    #[test]
    fn can_i_names_group_and_namespace() {
        let none = ConnectionOptions::default();
        let a = Action::new("create", "tfjobs", Some("team-a"));
        assert_eq!(
            a.can_i(&none),
            "kubectl auth can-i create tfjobs.kubeflow.org -n team-a"
        );
        let a = Action::new("get", "secrets", Some("default")).named("taotoken-secret");
        assert_eq!(a.can_i(&none), "kubectl auth can-i get secrets -n default");
        let ctx = ConnectionOptions {
            context: Some("gpu".into()),
            order: vec![super::super::ConnFlag::Context],
            ..Default::default()
        };
        assert_eq!(
            a.can_i(&ctx),
            "kubectl auth can-i get secrets -n default --context gpu"
        );
        assert_eq!(
            a.describe(),
            "get secrets \"taotoken-secret\" in namespace \"default\""
        );
        let a = Action::new("list", "deployments", None);
        assert_eq!(
            a.can_i(&ctx),
            "kubectl auth can-i list deployments.apps --all-namespaces --context gpu"
        );
    }
}
