//! Every way a command can end badly, and the one place that maps each to an exit code.
//!
//! Exit codes are part of the interface (scripts and CI branch on them), so they are listed in
//! README.md and in `--help`; change them only together with those.

use std::fmt;

/// Process exit codes. Kept small and stable, in the spirit of `kubectl wait`'s 0/1, with the
/// cases a pipeline wants to tell apart given their own numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum ExitCode {
    /// The command did what was asked (for `wait`: the condition was reached).
    Ok = 0,
    /// Anything unexpected: the API failed after retries, an I/O error, a bug.
    Failure = 1,
    /// Bad input: flags, values, template or manifest. Nothing was sent to the cluster.
    Invalid = 2,
    /// The cluster is not ready for the job, or the object is missing or already there.
    NotReady = 3,
    /// The TFJob failed, or will not run without someone fixing something.
    JobFailed = 4,
    /// `--timeout` passed before the condition was reached.
    Timeout = 5,
    /// A write (create, delete) was sent, and whether it was applied could not be learned.
    WriteUnknown = 6,
    /// Interrupted by the user (Ctrl-C); the cluster was left as it was.
    Interrupted = 130,
}

impl ExitCode {
    /// Every code, in the order of [`EXIT_CODES_HELP`] (a test keeps the help, README.md and
    /// this list in agreement).
    pub const ALL: [ExitCode; 8] = [
        ExitCode::Ok,
        ExitCode::Failure,
        ExitCode::Invalid,
        ExitCode::NotReady,
        ExitCode::JobFailed,
        ExitCode::Timeout,
        ExitCode::WriteUnknown,
        ExitCode::Interrupted,
    ];
}

/// One failure, typed by what the user should do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Flags or arguments that do not make sense together.
    #[error("{0}")]
    Usage(String),

    /// The input (values, template, manifest) is wrong; the message already lists every problem.
    #[error("{0}")]
    Invalid(String),

    /// A precondition on the cluster does not hold (CRD missing, Secret missing, RBAC, namespace).
    /// `hint` is the next step to take.
    #[error("{message}")]
    NotReady {
        message: String,
        hint: Option<String>,
    },

    /// The object asked for does not exist.
    #[error("{0}")]
    NotFound(String),

    /// The object exists and differs, and nothing said to overwrite it.
    #[error("{message}")]
    Conflict {
        message: String,
        hint: Option<String>,
    },

    /// The TFJob failed or cannot make progress (image missing, crash loop, unschedulable).
    #[error("{0}")]
    JobFailed(String),

    /// Judged inside the pods, not stated by the cluster: from their logs (training stopped
    /// advancing, a replica has not reached its peers) or their in-pod checks (the gateway
    /// rejects the key). Exit 4 like a failure, but a verdict only: no write that destroys
    /// anything is made on it (`--delete-on-failure` leaves the job).
    #[error("{0}")]
    Stalled(String),

    /// The pre-flight model says the job can never run on this cluster as it is.
    #[error("{message}")]
    WontRun {
        message: String,
        hint: Option<String>,
    },

    /// Waited as long as allowed.
    #[error("{0}")]
    Timeout(String),

    /// A write was sent and its outcome could not be learned (the reply was lost and so was
    /// every read-back); `hint` says how to check.
    #[error("{message}")]
    WriteUnknown {
        message: String,
        hint: Option<String>,
    },

    /// Ctrl-C. The message says how to resume.
    #[error("{0}")]
    Interrupted(String),

    /// The API server failed in a way retries did not cure.
    #[error("{context}: {}", chain(source))]
    Kube {
        context: String,
        #[source]
        source: kube::Error,
    },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    /// Anything else worth a message but not a category of its own.
    #[error("{0}")]
    Other(String),

    /// The reader of stdout went away (`| head -1`). Ends the command quietly with exit 0, as
    /// ripgrep does: the consumer has what it wanted, and kubectl prints nothing either.
    #[error("stdout was closed by its reader")]
    BrokenPipe,
}

/// What Ctrl-C means for the command at this moment, said by the code that knows (`wait` says
/// how to resume). There is one handler, `commands::block_on`'s, installed before any request;
/// a second listener inside a command would race it (the handler wins whenever the command is
/// awaiting anything but its own listener).
static ON_INTERRUPT: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Set (by the one listener, commands/runtime.rs) when SIGINT/SIGTERM/SIGHUP arrives: work
/// that runs without yielding to the runtime (a printer over a long list) polls it and stops.
static INTERRUPT_REQUESTED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Records that an interrupt arrived.
pub fn request_interrupt() {
    INTERRUPT_REQUESTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether an interrupt arrived (see [`request_interrupt`]).
pub fn interrupt_requested() -> bool {
    INTERRUPT_REQUESTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Sets the message an interrupt ends the command with, from now on.
pub fn on_interrupt(message: impl Into<String>) {
    *ON_INTERRUPT.lock().unwrap_or_else(|e| e.into_inner()) = Some(message.into());
}

/// What an interrupt means while a write is in flight: its outcome is unknown, so name the
/// object (`kind namespace/name`), what was being done to it (`created`, `deleted`,
/// `patched`) and `check`, the command that tells which way it went. Call it just before the
/// request; [`on_interrupt_settled`] once its answer is in.
pub fn on_interrupt_write(kind: &str, namespace: &str, name: &str, doing: &str, check: &str) {
    on_interrupt(format!(
        "interrupted while {kind} {namespace}/{name} was being {doing}: the request was sent and \
         may or may not have been applied; check with `{check}`"
    ));
}

/// What an interrupt means once every write sent has been answered: each was reported above.
pub fn on_interrupt_settled() {
    on_interrupt(
        "interrupted: the changes reported above were made; no other request was in flight",
    );
}

/// The error for an interrupt now: the message set by [`on_interrupt`], else `default`.
pub fn interrupted(default: &str) -> Error {
    let said = ON_INTERRUPT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    Error::Interrupted(said.unwrap_or_else(|| default.to_string()))
}

impl Error {
    /// The single mapping from failure kind to exit code.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Usage(_) | Error::Invalid(_) => ExitCode::Invalid,
            Error::NotReady { .. } | Error::NotFound(_) | Error::Conflict { .. } => {
                ExitCode::NotReady
            }
            Error::JobFailed(_) | Error::Stalled(_) | Error::WontRun { .. } => ExitCode::JobFailed,
            Error::Timeout(_) => ExitCode::Timeout,
            Error::WriteUnknown { .. } => ExitCode::WriteUnknown,
            Error::Interrupted(_) => ExitCode::Interrupted,
            Error::Kube { .. } | Error::Io { .. } | Error::Other(_) => ExitCode::Failure,
            Error::BrokenPipe => ExitCode::Ok,
        }
    }

    /// Errors that end the command without a message.
    pub fn is_quiet(&self) -> bool {
        matches!(self, Error::BrokenPipe)
    }

    /// The next step to suggest under the message, when there is one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::NotReady { hint, .. }
            | Error::Conflict { hint, .. }
            | Error::WontRun { hint, .. }
            | Error::WriteUnknown { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub fn kube(context: impl Into<String>, source: kube::Error) -> Self {
        // The command's deadline, not the request, ended it: that is a timeout (exit 5).
        if let Some(ran_out) = deadline_reached(&source) {
            return Error::Timeout(ran_out.0.clone());
        }
        // kubectl's wording and exit for a server that cannot be reached at all, whichever
        // command met it.
        if let Some(why) = unreachable(&source) {
            return unreachable_error(why, &source);
        }
        // kube words a failed exec plugin with the Debug form of its output; say it in words.
        if let kube::Error::Auth(kube::client::AuthError::AuthExecRun { cmd, out }) = &source {
            // Our helper's command line (`… "--" "plugin" "arg"`): name the user's plugin.
            let plugin = cmd
                .split_once("\"--\" ")
                .or_else(|| cmd.split_once(" -- "))
                .map_or(cmd.as_str(), |(_, p)| p);
            let said = String::from_utf8_lossy(&out.stderr);
            let said = said.trim();
            return Error::NotReady {
                message: format!(
                    "{}: the exec credential plugin `{plugin}` failed ({}){}",
                    context.into(),
                    out.status,
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(": {said}")
                    }
                ),
                hint: Some(
                    "Check the exec command of your kubeconfig's user (`kubectl config view \
                     --minify`) and run it by hand to see why."
                        .into(),
                ),
            };
        }
        Error::Kube {
            context: context.into(),
            source,
        }
    }

    pub fn not_ready(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::NotReady {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A request cut off because the command's deadline (`--timeout`) ran out, not because the
/// server failed; the message names the flag and what the command was doing. `cluster::retry`
/// returns it (inside `kube::Error::Service`), and [`Error::kube`] and `cluster::explain` turn
/// it into [`Error::Timeout`] (exit 5).
#[derive(Debug, Clone)]
pub struct DeadlineReached(pub String);

impl std::fmt::Display for DeadlineReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeadlineReached {}

/// The [`DeadlineReached`] behind a failed request, if that is what ended it.
pub fn deadline_reached(err: &kube::Error) -> Option<&DeadlineReached> {
    match err {
        kube::Error::Service(inner) => inner.downcast_ref::<DeadlineReached>(),
        _ => None,
    }
}

/// An error and its causes in one line, each cause once (kube's `ServiceError: client error
/// (Connect)` alone says nothing; its sources say "Connection refused").
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    // kube words an API error as "ApiError: <status> (<Status as Debug>)": say it in words, and
    // stop there (its source is the same Status again).
    let words = |e: &(dyn std::error::Error + 'static)| match e.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(s)) if s.reason.is_empty() => {
            Some(format!("{} (HTTP {})", s.message, s.code))
        }
        Some(kube::Error::Api(s)) => Some(format!("{} ({}, HTTP {})", s.message, s.reason, s.code)),
        _ => None,
    };
    if let Some(text) = words(err) {
        return text;
    }
    let mut out = err.to_string();
    for e in causes(err).skip(1) {
        if let Some(text) = words(e) {
            out.push_str(": ");
            out.push_str(&text);
            break;
        }
        let text = e.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// The one walk down an error's chain: the error, then each cause, where the next cause is
/// `source()`, or the error an `io::Error` wraps (whose `source()` skips it; hyper-rustls nests
/// io::Errors around a rustls::Error, kube's body limit sits inside one).
pub fn causes<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |e| match e.downcast_ref::<std::io::Error>() {
        Some(io) => io
            .get_ref()
            .map(|inner| inner as &(dyn std::error::Error + 'static)),
        None => e.source(),
    })
}

/// The first error of type `T` in `err`'s chain ([`causes`]).
pub fn find_cause<'a, T: std::error::Error + 'static>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    causes(err).find_map(|e| e.downcast_ref::<T>())
}

/// Why a connection could not even be opened, when kubectl gives up at once for it: refused
/// (nothing listens at that address) or the host name does not resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreachable {
    Refused,
    Dns,
}

/// The [`Unreachable`] behind an error, if any of its causes is one.
pub fn unreachable(err: &(dyn std::error::Error + 'static)) -> Option<Unreachable> {
    causes(err).find_map(|e| {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return Some(Unreachable::Refused);
        }
        // hyper-util's HttpConnector names a failed lookup "dns error" (its ConnectError).
        e.to_string()
            .starts_with("dns error")
            .then_some(Unreachable::Dns)
    })
}

/// The API server's URL, set once the client is configured, for the refused-connection line.
static API_SERVER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub fn set_api_server(url: &str) {
    let _ = API_SERVER.set(url.to_string());
}

/// The server's host as kubectl names it: Go's `url.URL.Host` of the request URL, i.e. the
/// authority without userinfo and with a port only when the URL has one (client-go's
/// `rest.DefaultServerURL` adds none; kubectl `StandardErrorMessage` prints `server.Host`).
fn host_port(server: &str) -> String {
    let rest = server.split_once("://").map_or(server, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_string()
}

/// kubectl's words for it (staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go: `checkErr` hands
/// a `*url.Error` to `StandardErrorMessage`, which says
/// "The connection to the server %s was refused - did you specify the right host or port?",
/// and "Unable to connect to the server: %v" for other dial errors). Exit 3: the cluster is
/// not there; nothing was sent.
pub fn unreachable_error(why: Unreachable, err: &(dyn std::error::Error + 'static)) -> Error {
    let server = API_SERVER
        .get()
        .map(String::as_str)
        .unwrap_or("the API server");
    Error::NotReady {
        message: match why {
            Unreachable::Refused => format!(
                "The connection to the server {} was refused - did you specify the right host or port?",
                host_port(server)
            ),
            Unreachable::Dns => {
                let all = chain(err);
                let from = all.find("dns error").unwrap_or(0);
                format!("Unable to connect to the server: {}", &all[from..])
            }
        },
        hint: Some(
            "Nothing was sent. Check the server address in your kubeconfig or --server, and \
             that the cluster is up (`kubectl cluster-info`)."
                .to_string(),
        ),
    }
}

impl fmt::Display for ExitCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", *self as i32)
    }
}

/// The invalid-input error for a webhook's refusal: names the webhook, lists its errors one per
/// line, says who refused. Nothing was created: admission runs before anything is stored.
pub fn admission_denied(webhook: &str, errors: &[String]) -> Error {
    let who = if webhook.contains("training-operator") || webhook.contains("kubeflow") {
        "the training-operator's validating webhook"
    } else {
        "a validating admission webhook (a policy engine or another operator)"
    };
    let mut message =
        format!("the TFJob was rejected by {who} {webhook:?}; nothing was created. It said:");
    for e in errors {
        message.push_str("\n  - ");
        message.push_str(e);
    }
    message.push_str("\nFix the manifest (or ask whoever owns that policy); `kubectl tfjob validate -f FILE` checks the operator's rules offline.");
    Error::Invalid(message)
}

/// The exit-code table as shown in `--help` and README.md.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0    success (for wait: the condition was reached)
  1    unexpected failure (API error or throttling after retries, I/O error)
  2    invalid input: flags, values, template or manifest; nothing was sent
  3    cluster not ready or object missing/conflicting (CRD, operator, namespace, Secret, RBAC, name taken)
  4    the TFJob failed or will not run (image, Secret, crash loop, unschedulable, can never fit)
  5    timed out
  6    the outcome of a write is unknown (its reply was lost and the object could not be read back)
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP); a write in flight may have happened: the message names the object and how to check it";

/// The rows of [`EXIT_CODES_HELP`]: `(code, meaning)`.
pub fn exit_code_rows() -> Vec<(i32, &'static str)> {
    EXIT_CODES_HELP
        .lines()
        .skip(1)
        .filter_map(|line| {
            let line = line.trim_start();
            let (code, meaning) = line.split_once(' ')?;
            Some((code.parse().ok()?, meaning.trim()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_are_told_in_words_not_debug_structures() {
        let e = kube::Error::Api(Box::new(kube::core::Status {
            code: 503,
            reason: "ServiceUnavailable".into(),
            message: "the server is currently unable to handle the request".into(),
            ..Default::default()
        }));
        let text = chain(&e);
        assert_eq!(
            text,
            "the server is currently unable to handle the request (ServiceUnavailable, HTTP 503)"
        );
        let wrapped = Error::kube("listing tfjobs", e).to_string();
        assert!(!wrapped.contains("Status {"), "{wrapped}");
        assert!(!wrapped.contains("ApiError"), "{wrapped}");
    }

    #[derive(Debug)]
    struct Inner;
    impl fmt::Display for Inner {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("inner cause")
        }
    }
    impl std::error::Error for Inner {}

    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("outer")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn the_chain_walk_reaches_what_an_io_error_wraps() {
        // io::Error's own source() skips the error it wraps; the walk does not.
        let e = Outer(std::io::Error::other(Inner));
        assert_eq!(causes(&e).count(), 3);
        assert!(find_cause::<Inner>(&e).is_some());
        assert!(find_cause::<std::fmt::Error>(&e).is_none());
        assert_eq!(chain(&e), "outer: inner cause");
        let refused = Outer(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(unreachable(&refused), Some(Unreachable::Refused));
    }

    #[test]
    fn kubectl_names_the_server_by_host_and_port() {
        assert_eq!(host_port("http://127.0.0.1:1"), "127.0.0.1:1");
        assert_eq!(host_port("https://k.example/api"), "k.example");
        assert_eq!(host_port("https://u:p@k.example:6443/x"), "k.example:6443");
        assert_eq!(host_port("http://[::1]:8080/"), "[::1]:8080");
        assert_eq!(host_port("http://[::1]"), "[::1]");
    }

    #[test]
    fn the_help_table_lists_every_exit_code_once_in_order() {
        let codes: Vec<i32> = exit_code_rows().iter().map(|(c, _)| *c).collect();
        let all: Vec<i32> = ExitCode::ALL.iter().map(|c| *c as i32).collect();
        assert_eq!(codes, all);
    }

    #[test]
    fn every_error_kind_maps_to_a_listed_code() {
        let errors = [
            Error::Usage(String::new()),
            Error::Invalid(String::new()),
            Error::not_ready("", ""),
            Error::NotFound(String::new()),
            Error::Conflict {
                message: String::new(),
                hint: None,
            },
            Error::JobFailed(String::new()),
            Error::Timeout(String::new()),
            Error::WriteUnknown {
                message: String::new(),
                hint: None,
            },
            Error::Interrupted(String::new()),
            Error::Other(String::new()),
            Error::io("", std::io::Error::other("x")),
            Error::BrokenPipe,
        ];
        for e in &errors {
            assert!(ExitCode::ALL.contains(&e.exit_code()), "{e:?}");
        }
        // Every code but 0 is reachable from some error.
        for code in ExitCode::ALL.iter().skip(1) {
            assert!(errors.iter().any(|e| e.exit_code() == *code), "{code}");
        }
    }
}
