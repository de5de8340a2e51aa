//! The two streams a command writes to: `out` for data only (what was asked: YAML, JSON, names,
//! tables) and `err` for progress, warnings and hints. Commands receive an [`Output`] instead of
//! printing, so tests can hand in buffers and assert each stream on its own.
//!
//! A reader that closes stdout early (`| head -1`) ends the command quietly, as ripgrep and
//! kubectl do: a failed data write becomes [`Error::BrokenPipe`], which exits without a message.
//!
//! Every byte either stream carries passes one redactor ([`redact`]), the log layer's too
//! ([`logging`]): the one place a key is kept out of what the command writes.

pub mod logging;
pub mod redact;

use std::io::{self, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// How findings and progress are printed (`-o text|json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportFormat {
    #[default]
    Text,
    Json,
}

/// How an object is printed (`-o yaml|json|name`), as kubectl's printers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestFormat {
    Yaml,
    Json,
    Name,
}

/// The stdout/stderr pair a command writes through.
pub struct Output {
    out: DataStream,
    err: Box<dyn Write + Send>,
    out_tty: bool,
    err_tty: bool,
    /// See [`Output::data_to_stderr`].
    data_to_err: bool,
}

impl Output {
    /// The process's stdout and stderr.
    pub fn stdio() -> Self {
        Output {
            out: DataStream::new(Box::new(
                crate::output::redact::Redacting::new(io::stdout()),
            )),
            err: Box::new(crate::output::redact::Redacting::new(io::stderr())),
            out_tty: io::stdout().is_terminal(),
            err_tty: io::stderr().is_terminal(),
            data_to_err: false,
        }
    }

    /// Any pair of writers (never treated as a terminal).
    pub fn new(out: impl Write + Send + 'static, err: impl Write + Send + 'static) -> Self {
        Output {
            out: DataStream::new(Box::new(out)),
            err: Box::new(err),
            out_tty: false,
            err_tty: false,
            data_to_err: false,
        }
    }

    /// Two in-memory buffers, for tests: returns the output and handles to read each stream.
    pub fn buffers() -> (Self, Buffer, Buffer) {
        let (out, err) = (Buffer::default(), Buffer::default());
        (Output::new(out.clone(), err.clone()), out, err)
    }

    /// Whether stdout gets ANSI colour ([`use_color`]).
    pub fn out_color(&self) -> bool {
        use_color(self.out_tty)
    }

    /// Whether stderr gets ANSI colour ([`use_color`]).
    pub fn err_color(&self) -> bool {
        use_color(self.err_tty)
    }

    /// Whether stderr is a terminal (live progress instead of one line per change).
    pub fn err_is_terminal(&self) -> bool {
        self.err_tty
    }

    /// Writes data to stdout and flushes it, so a consumer sees each record as it is made.
    /// A closed pipe becomes [`Error::BrokenPipe`].
    pub fn data(&mut self, text: &str) -> Result<()> {
        if self.data_to_err {
            self.note(text);
            return Ok(());
        }
        self.out
            .write_all(text.as_bytes())
            .and_then(|_| self.out.flush())
            .map_err(stdout_error)
    }

    /// For as long as the returned guard lives, what a command writes as data through it goes to
    /// stderr instead: `submit -o json --wait` prints the object on stdout and lets `wait`'s
    /// report (its data when run alone) follow on stderr, so stdout stays one parseable object.
    /// A guard rather than a toggle, so the switch cannot outlive its scope (an early `?` or a
    /// panic included).
    pub fn data_to_stderr(&mut self, on: bool) -> DataToStderr<'_> {
        let before = std::mem::replace(&mut self.data_to_err, on);
        DataToStderr { out: self, before }
    }

    /// [`Output::data`] plus a newline.
    pub fn data_line(&mut self, text: &str) -> Result<()> {
        self.data(&format!("{text}\n"))
    }

    /// Writes a note (progress, warning, hint) to stderr. A failure to write a note is ignored:
    /// there is nowhere left to report it, and the command's outcome does not depend on it.
    pub fn note(&mut self, text: &str) {
        let _ = self
            .err
            .write_all(text.as_bytes())
            .and_then(|_| self.err.flush());
    }

    /// For data printed after a write to the cluster: when stdout is gone, `fact` (e.g.
    /// `tfjob.kubeflow.org/x created`) still reaches stderr, so nobody is left guessing whether
    /// the write happened. Returns `printed` unchanged.
    pub fn after_write(&mut self, printed: Result<()>, fact: &str) -> Result<()> {
        if let Err(Error::BrokenPipe) = printed {
            self.note_line(fact);
        }
        printed
    }

    /// [`Output::note`] plus a newline.
    pub fn note_line(&mut self, text: &str) {
        self.note(&format!("{text}\n"));
    }

    /// Both streams at once, for a core that takes `(out, err)` writers (the day-two commands).
    /// Pass the core's result through [`Output::data_result`] afterwards, so a closed stdout
    /// still ends the command quietly whatever error the core wrapped the EPIPE in.
    pub fn streams(&mut self) -> (&mut dyn Write, &mut dyn Write) {
        (&mut self.out, &mut *self.err)
    }

    /// Turns any failure into [`Error::BrokenPipe`] when a data write through
    /// [`Output::streams`] met a closed stdout: the reader went away, nothing else is wrong.
    pub fn data_result<T>(&self, result: Result<T>) -> Result<T> {
        match result {
            Err(_) if self.out.closed => Err(Error::BrokenPipe),
            r => r,
        }
    }
}

/// stdout, remembering whether its reader went away.
struct DataStream {
    inner: Box<dyn Write + Send>,
    closed: bool,
}

/// An [`Output`] whose data goes to stderr until dropped ([`Output::data_to_stderr`]).
pub struct DataToStderr<'a> {
    out: &'a mut Output,
    before: bool,
}

impl std::ops::Deref for DataToStderr<'_> {
    type Target = Output;
    fn deref(&self) -> &Output {
        self.out
    }
}

impl std::ops::DerefMut for DataToStderr<'_> {
    fn deref_mut(&mut self) -> &mut Output {
        self.out
    }
}

impl Drop for DataToStderr<'_> {
    fn drop(&mut self) {
        self.out.data_to_err = self.before;
    }
}

impl DataStream {
    fn new(inner: Box<dyn Write + Send>) -> Self {
        DataStream {
            inner,
            closed: false,
        }
    }

    fn note_closed<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r
            && e.kind() == io::ErrorKind::BrokenPipe
        {
            self.closed = true;
        }
        r
    }
}

impl Write for DataStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.inner.write(buf);
        self.note_closed(r)
    }
    fn flush(&mut self) -> io::Result<()> {
        let r = self.inner.flush();
        self.note_closed(r)
    }
}

/// The one decision whether a stream gets ANSI escapes (colour, bold), for stdout, stderr and
/// the logs alike: [`color_choice`] over the process's environment.
pub fn use_color(stream_is_terminal: bool) -> bool {
    let var = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    color_choice(stream_is_terminal, var)
}

/// Pure: the conventions users set, in this order. `NO_COLOR` non-empty: never
/// (https://no-color.org). `CLICOLOR_FORCE` non-empty and not `0`: always, even into a pipe;
/// `CLICOLOR=0`: never (https://bixense.com/clicolors). `TERM=dumb` or no `TERM`: never.
/// Otherwise only when the stream is a terminal, so `2>file` gets no escape bytes.
pub fn color_choice(stream_is_terminal: bool, var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
    if set("NO_COLOR") {
        return false;
    }
    if set("CLICOLOR_FORCE") && var("CLICOLOR_FORCE").as_deref() != Some("0") {
        return true;
    }
    if var("CLICOLOR").as_deref() == Some("0") {
        return false;
    }
    match var("TERM") {
        None => false,
        Some(term) if term == "dumb" => false,
        Some(_) => stream_is_terminal,
    }
}

fn stdout_error(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Error::BrokenPipe
    } else {
        Error::io("writing to stdout", e)
    }
}

/// A shared in-memory stream (see [`Output::buffers`]).
#[derive(Debug, Clone, Default)]
pub struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("buffer lock")).into_owned()
    }
}

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("buffer lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader has gone away, like stdout after `| head -1` exits.
    struct ClosedPipe;
    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn colour_follows_the_terminal_and_the_users_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let term = &[("TERM", "xterm-256color")];
        assert!(color_choice(true, env(term)));
        assert!(!color_choice(false, env(term)), "a pipe or file gets none");
        assert!(!color_choice(
            true,
            env(&[("TERM", "xterm"), ("NO_COLOR", "1")])
        ));
        assert!(color_choice(
            true,
            env(&[("TERM", "xterm"), ("NO_COLOR", "")])
        ));
        assert!(!color_choice(true, env(&[("TERM", "dumb")])));
        assert!(!color_choice(true, env(&[])), "no TERM");
        assert!(color_choice(false, env(&[("CLICOLOR_FORCE", "1")])));
        assert!(!color_choice(false, env(&[("CLICOLOR_FORCE", "0")])));
        assert!(!color_choice(
            false,
            env(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")])
        ));
        assert!(!color_choice(
            true,
            env(&[("TERM", "xterm"), ("CLICOLOR", "0")])
        ));
    }

    #[test]
    fn streams_are_kept_apart() {
        let (mut o, out, err) = Output::buffers();
        o.data_line("tfjob.kubeflow.org/x created").unwrap();
        o.note_line("warning: w");
        assert_eq!(out.text(), "tfjob.kubeflow.org/x created\n");
        assert_eq!(err.text(), "warning: w\n");
    }

    #[test]
    fn data_can_be_sent_to_stderr_for_a_while() {
        let (mut o, out, err) = Output::buffers();
        o.data_line("{}").unwrap();
        {
            let mut scoped = o.data_to_stderr(true);
            scoped.data_line("condition met").unwrap();
        }
        o.data_line("[]").unwrap();
        assert_eq!(out.text(), "{}\n[]\n");
        assert_eq!(err.text(), "condition met\n");
    }

    #[test]
    fn a_closed_stdout_is_a_quiet_broken_pipe() {
        let err = Buffer::default();
        let mut o = Output::new(ClosedPipe, err.clone());
        let e = o.data("x").unwrap_err();
        assert!(matches!(e, Error::BrokenPipe), "{e:?}");
        assert_eq!(e.exit_code(), crate::error::ExitCode::Ok);
        assert!(e.is_quiet());
        // Notes still reach stderr.
        o.note("still here");
        assert_eq!(err.text(), "still here");
    }

    #[test]
    fn a_core_writing_to_a_closed_stdout_through_streams_ends_quietly() {
        let err = Buffer::default();
        let mut o = Output::new(ClosedPipe, err.clone());
        let (data, notes) = o.streams();
        writeln!(notes, "progress").unwrap();
        let r: Result<()> = writeln!(data, "row").map_err(|e| Error::io("writing the list", e));
        let e = o.data_result(r).unwrap_err();
        assert!(matches!(e, Error::BrokenPipe), "{e:?}");
        assert_eq!(err.text(), "progress\n");
        // Other failures stay what they were.
        let (mut o, _, _) = Output::buffers();
        let (data, _) = o.streams();
        writeln!(data, "row").unwrap();
        let e = o
            .data_result::<()>(Err(Error::NotFound("x".into())))
            .unwrap_err();
        assert!(matches!(e, Error::NotFound(_)), "{e:?}");
    }
}
