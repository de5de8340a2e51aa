//! One tool call = one command line, run in-process through the same parser and dispatch as the
//! binary's (`commands::exec`), so an agent gets exactly what a person gets: the verbs' flags and
//! defaults, their verdicts and exit codes, and their redaction. Both streams are captured
//! through the one redactor (`redact::Redacting`), bounded, and returned with the exit code.
//!
//! The command runs on a thread of its own: a cluster command starts its own runtime
//! (`commands::block_on`), which cannot be nested in the server's. The call's deadline and the
//! client's cancellation reach it through the global flags (`Global::call`).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::commands::{self, Cli, Global};
use crate::error::ExitCode;
use crate::ops::context::Call;
use crate::output::Output;
use crate::output::redact::Redacting;

/// The stack of a call's thread: twice a Linux main thread's, which runs the same command.
const COMMAND_STACK: usize = 16 * 1024 * 1024;

/// Bytes kept of each stream; the rest is dropped and said (`truncated`).
pub const MAX_STREAM: usize = 256 * 1024;

/// A command line for one call (without the binary's name), and the files it reads.
#[derive(Debug, Default)]
pub struct Invocation {
    pub args: Vec<String>,
    /// `-n` for this call (else the server's).
    pub namespace: Option<String>,
    /// Files written for the call (a manifest, values): deleted when the call ends. Their folder
    /// is taken out of every message, so the agent reads `manifest.yaml:3`.
    pub files: Option<tempfile::TempDir>,
}

impl Invocation {
    pub fn new<S: Into<String>>(args: impl IntoIterator<Item = S>) -> Self {
        Invocation {
            args: args.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Writes `text` to `name` in the call's own private folder, and returns the path to pass.
    pub fn file(&mut self, name: &str, text: &str) -> io::Result<String> {
        if self.files.is_none() {
            self.files = Some(tempfile::Builder::new().prefix("tfjob-mcp-").tempdir()?);
        }
        let dir = self
            .files
            .as_ref()
            .map(|d| d.path())
            .unwrap_or(".".as_ref());
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        Ok(path.to_string_lossy().into_owned())
    }

    /// The command as a person would type it (for the result; no secret is ever an argument).
    pub fn command_line(&self) -> String {
        let mut words = vec!["kubectl".to_string(), "tfjob".to_string()];
        words.extend(self.args.iter().map(|a| self.unfoldered(a)));
        if let Some(ns) = &self.namespace {
            words.push(format!("-n={ns}"));
        }
        words.join(" ")
    }

    fn unfoldered(&self, text: &str) -> String {
        match &self.files {
            Some(dir) => {
                let prefix = format!("{}/", dir.path().display());
                text.replace(&prefix, "")
            }
            None => text.to_string(),
        }
    }
}

/// What the command did: its exit code and both streams, redacted and bounded.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub truncated: bool,
}

impl Outcome {
    /// The exit code's name in the one table ([`ExitCode`]).
    pub fn exit_class(&self) -> &'static str {
        class(self.exit_code)
    }
}

/// The name of an exit code, as README.md's table says it.
pub fn class(code: i32) -> &'static str {
    match ExitCode::ALL.iter().find(|c| **c as i32 == code) {
        Some(ExitCode::Ok) => "ok",
        Some(ExitCode::Failure) => "failure",
        Some(ExitCode::Invalid) => "invalid",
        Some(ExitCode::NotReady) => "not-ready",
        Some(ExitCode::JobFailed) => "job-failed",
        Some(ExitCode::Timeout) => "timeout",
        Some(ExitCode::WriteUnknown) => "write-unknown",
        Some(ExitCode::Interrupted) => "interrupted",
        None => "failure",
    }
}

/// Runs `inv` as the binary would with the server's global flags, within `timeout`, ended early
/// by `cancel`. Waits on a thread of its own (see the module docs).
pub async fn run(
    global: &Global,
    inv: Invocation,
    timeout: Duration,
    cancel: CancellationToken,
) -> Outcome {
    let mut global = global.clone();
    if let Some(ns) = &inv.namespace {
        global.namespace = Some(ns.clone());
    }
    global.call = Some(Call { timeout, cancel });
    let (tx, rx) = tokio::sync::oneshot::channel();
    let args = inv.args.clone();
    // A command line runs on a main thread's stack (8 MiB on Linux); a spawned thread gets
    // 2 MiB, which a debug build's deepest futures overflow.
    let spawned = std::thread::Builder::new()
        .name("mcp-call".into())
        .stack_size(COMMAND_STACK)
        .spawn(move || {
            let _ = tx.send(run_here(global, args));
        });
    if let Err(e) = spawned {
        return Outcome {
            exit_code: ExitCode::Failure as i32,
            stdout: String::new(),
            stderr: format!("error: starting the command's thread: {e}"),
            truncated: false,
        };
    }
    let outcome = rx.await.unwrap_or_else(|_| Outcome {
        exit_code: ExitCode::Failure as i32,
        stdout: String::new(),
        stderr: "error: the command ended without an answer".into(),
        truncated: false,
    });
    Outcome {
        stdout: inv.unfoldered(&outcome.stdout),
        stderr: inv.unfoldered(&outcome.stderr),
        ..outcome
    }
}

/// The command, on this thread: parsed as the binary parses, run, its error reported as the
/// binary reports it (`report_error`), every byte through the redactor.
fn run_here(global: Global, args: Vec<String>) -> Outcome {
    let (out, err) = (Capped::default(), Capped::default());
    let argv = std::iter::once("kubectl-tfjob".to_string()).chain(args);
    let code = match Cli::try_parse_with_order(argv) {
        Ok(mut cli) => {
            cli.global = Global {
                order: cli.global.order,
                ..global
            };
            let mut output = Output::new(Redacting::new(out.clone()), Redacting::new(err.clone()));
            let result = commands::exec(cli, &mut output);
            // The redacting streams hold a partial line until dropped.
            drop(output);
            match result {
                Ok(()) => ExitCode::Ok,
                Err(e) => commands::report_error(&e, &mut Redacting::new(err.clone())),
            }
        }
        Err(e) => {
            let _ = write!(Redacting::new(err.clone()), "{}", e.render());
            ExitCode::Invalid
        }
    };
    Outcome {
        exit_code: code as i32,
        truncated: out.truncated() || err.truncated(),
        stdout: out.text(),
        stderr: err.text(),
    }
}

/// An in-memory stream that keeps its first [`MAX_STREAM`] bytes and drops the rest without an
/// error (a full buffer is not a closed pipe: the command goes on to its verdict).
#[derive(Clone, Default)]
struct Capped {
    buf: Arc<Mutex<Vec<u8>>>,
    dropped: Arc<AtomicBool>,
}

impl Capped {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    fn truncated(&self) -> bool {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        let room = MAX_STREAM.saturating_sub(buf.len());
        if data.len() > room {
            self.dropped.store(true, Ordering::Relaxed);
        }
        buf.extend_from_slice(&data[..data.len().min(room)]);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_stream_keeps_its_start_and_says_it_dropped_the_rest() {
        let mut c = Capped::default();
        c.write_all(&vec![b'a'; MAX_STREAM - 1]).unwrap();
        assert!(!c.truncated());
        c.write_all(b"bc").unwrap();
        assert!(c.truncated());
        assert_eq!(c.text().len(), MAX_STREAM);
        assert!(c.text().ends_with('b'));
    }

    #[test]
    fn every_exit_code_has_a_class_and_unknown_codes_are_failures() {
        let names: Vec<_> = ExitCode::ALL.iter().map(|c| class(*c as i32)).collect();
        assert_eq!(
            names,
            [
                "ok",
                "failure",
                "invalid",
                "not-ready",
                "job-failed",
                "timeout",
                "write-unknown",
                "interrupted"
            ]
        );
        assert_eq!(class(77), "failure");
    }

    #[test]
    fn the_calls_folder_is_taken_out_of_what_is_said() {
        let mut inv = Invocation::new(["validate"]);
        let path = inv.file("manifest.yaml", "kind: TFJob\n").unwrap();
        inv.args.push(format!("--filename={path}"));
        assert_eq!(
            inv.command_line(),
            "kubectl tfjob validate --filename=manifest.yaml"
        );
        assert!(std::fs::read_to_string(&path).unwrap().contains("TFJob"));
        let dir = inv.files.take().unwrap();
        let gone = dir.path().to_path_buf();
        drop(dir);
        assert!(!gone.exists());
    }
}
