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
    /// Interrupted by the user (Ctrl-C); the cluster was left as it was.
    Interrupted = 130,
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

    /// The pre-flight model says the job can never run on this cluster as it is.
    #[error("{message}")]
    WontRun {
        message: String,
        hint: Option<String>,
    },

    /// Waited as long as allowed.
    #[error("{0}")]
    Timeout(String),

    /// Ctrl-C. The message says how to resume.
    #[error("{0}")]
    Interrupted(String),

    /// The API server failed in a way retries did not cure.
    #[error("{context}: {source}")]
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

impl Error {
    /// The single mapping from failure kind to exit code.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Usage(_) | Error::Invalid(_) => ExitCode::Invalid,
            Error::NotReady { .. } | Error::NotFound(_) | Error::Conflict { .. } => {
                ExitCode::NotReady
            }
            Error::JobFailed(_) | Error::WontRun { .. } => ExitCode::JobFailed,
            Error::Timeout(_) => ExitCode::Timeout,
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
            | Error::WontRun { hint, .. } => hint.as_deref(),
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

impl fmt::Display for ExitCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", *self as i32)
    }
}

/// The exit-code table as shown in `--help` and README.md.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0    success (for wait: the condition was reached)
  1    unexpected failure (API error after retries, I/O error)
  2    invalid input: flags, values, template or manifest; nothing was sent
  3    cluster not ready or object missing/conflicting (CRD, operator, namespace, Secret, RBAC)
  4    the TFJob failed or will not run (image, Secret, crash loop, unschedulable,
       or the pre-flight finds it can never fit on this cluster)
  5    timed out
  130  interrupted (Ctrl-C); the job was left untouched";
