//! The last line of defence for the key: every stream the process prints to (stdout, stderr, the
//! `-v` log, the final error) passes through [`Redacting`], which replaces the key and its
//! base64 forms with `[REDACTED]`. A command that handles the key ([`register`]s it the moment it
//! is read) can then print any server message as it came: an admission webhook that echoes the
//! request (a Secret's `data`) or a proxy's error page cannot show the key.
//!
//! Output is held until a newline (or a flush) only while a key is registered, so a key split
//! across two writes of one line is still found; other commands write straight through.

use std::io::Write;
use std::sync::Mutex;

use base64::Engine as _;
use zeroize::Zeroizing;

/// What replaces a key in any output.
pub const MARK: &str = "[REDACTED]";

/// Shorter secrets are not searched for: they would match ordinary text.
const MIN_LEN: usize = 6;

static NEEDLES: Mutex<Vec<Zeroizing<String>>> = Mutex::new(Vec::new());

/// A run of a key between characters some printer escapes is searched for alone from this
/// length on: shorter runs would match ordinary words.
const MIN_RUN: usize = 8;

/// Characters a printer may write otherwise than as themselves: controls, quotes, backslash,
/// space, Go's HTML-safe `<>&`, anything beyond ASCII.
fn rewritten(c: char) -> bool {
    c.is_control() || !c.is_ascii() || matches!(c, '"' | '\\' | '\'' | ' ' | '<' | '>' | '&')
}

/// The key as JSON strings carry it (serde's escapes, and Go's HTML-safe ones on top), and as
/// a terminal printer shows it (carets for controls).
fn escaped_forms(text: &str) -> Vec<Zeroizing<String>> {
    let json = Zeroizing::new(serde_json::to_string(text).unwrap_or_default());
    let json = json.get(1..json.len().saturating_sub(1)).unwrap_or("");
    let mut go = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => go.push_str("\\u003c"),
            '>' => go.push_str("\\u003e"),
            '&' => go.push_str("\\u0026"),
            c => go.push(c),
        }
    }
    let caret: String = text
        .chars()
        .map(|c| match c {
            '\r' => "\\r".to_string(),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {
                format!("^{}", (b'@' + c as u8) as char)
            }
            c => c.to_string(),
        })
        .collect();
    vec![
        Zeroizing::new(json.to_string()),
        Zeroizing::new(go),
        Zeroizing::new(caret),
    ]
}

/// The body of python's `repr(bytes)`, as a traceback quotes a header (`b'Bearer sk-…\\n'`).
fn python_bytes(secret: &[u8]) -> Zeroizing<String> {
    let mut out = Zeroizing::new(String::with_capacity(secret.len() + 8));
    for &b in secret {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// Registers a secret: from now on neither it nor its base64 forms (standard and URL-safe, with
/// and without padding: how a Secret's `data` and JSON carry bytes) reach any output. A value
/// with surrounding white space (`kubectl create secret --from-file` keeps the file's newline)
/// is registered trimmed too: a client that quotes it (python's `b'Bearer sk-…\n'`) prints
/// the trimmed text next to an escaped newline, which the untrimmed needle never matches.
pub fn register(secret: &[u8]) {
    let trimmed = secret.trim_ascii();
    if trimmed.len() != secret.len() && !trimmed.is_empty() {
        register(trimmed);
    }
    if secret.len() < MIN_LEN {
        return;
    }
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let mut forms: Vec<Zeroizing<String>> = [STANDARD, STANDARD_NO_PAD]
        .iter()
        .map(|e| Zeroizing::new(e.encode(secret)))
        .chain(
            [URL_SAFE, URL_SAFE_NO_PAD]
                .iter()
                .map(|e| Zeroizing::new(e.encode(secret))),
        )
        .collect();
    if let Ok(text) = std::str::from_utf8(secret) {
        forms.push(Zeroizing::new(text.to_string()));
        forms.extend(escaped_forms(text));
    }
    forms.push(python_bytes(secret));
    // Whatever escaping a printer applies (JSON, YAML, Go's %q, a terminal's caret notation),
    // the runs of the key it leaves alone are still found.
    if let Ok(text) = std::str::from_utf8(secret) {
        forms.extend(
            text.split(rewritten)
                .filter(|run| run.len() >= MIN_RUN && run.len() < text.len())
                .map(|run| Zeroizing::new(run.to_string())),
        );
    }
    forms.retain(|f| f.len() >= MIN_LEN);
    let mut needles = NEEDLES.lock().unwrap_or_else(|e| e.into_inner());
    for f in forms {
        if !needles.iter().any(|n| **n == *f) {
            needles.push(f);
        }
    }
    // Longest first: the padded form before its unpadded prefix.
    needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
}

fn active() -> bool {
    !NEEDLES.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
}

/// `text` with every registered secret replaced by [`MARK`].
pub fn redact(text: &str) -> String {
    let needles = NEEDLES.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = text.to_string();
    for n in needles.iter() {
        if out.contains(n.as_str()) {
            out = out.replace(n.as_str(), MARK);
        }
    }
    out
}

/// A writer that redacts, line by line, while a secret is registered.
pub struct Redacting<W: Write> {
    inner: W,
    line: Vec<u8>,
}

impl<W: Write> Redacting<W> {
    pub fn new(inner: W) -> Self {
        Redacting {
            inner,
            line: Vec::new(),
        }
    }

    fn emit(&mut self) -> std::io::Result<()> {
        if self.line.is_empty() {
            return Ok(());
        }
        let text = redact(&String::from_utf8_lossy(&self.line));
        self.line.clear();
        self.inner.write_all(text.as_bytes())
    }
}

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !active() && self.line.is_empty() {
            return self.inner.write(buf);
        }
        self.line.extend_from_slice(buf);
        if let Some(end) = self.line.iter().rposition(|&b| b == b'\n') {
            let rest = self.line.split_off(end + 1);
            self.emit()?;
            self.line = rest;
        }
        // A line that never ends must not grow without bound: past 1 MiB it goes out as is
        // (redacted), like a line of its own.
        if self.line.len() > 1024 * 1024 {
            self.emit()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.emit()?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for Redacting<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Secret made with `--from-file` ends in a newline; python's header error prints the
    /// key quoted with an escaped newline (issue 47, item 1).
    #[test]
    fn a_key_with_a_trailing_newline_is_redacted_where_a_client_quotes_it() {
        register(b"sk-unit-test-newline-4567\n");
        let line =
            redact("ValueError: Invalid header value b'Bearer sk-unit-test-newline-4567\\n'");
        assert!(!line.contains("sk-unit-test-newline-4567"), "{line}");
        assert!(line.contains(MARK), "{line}");
    }

    /// Quotes, a backslash, a space and non-ASCII: each printer escapes them its own way
    /// (issue 60, item 1).
    #[test]
    fn a_key_is_redacted_in_every_escaped_form_a_printer_gives_it() {
        let key = "sk-unit-\"esc\\aped key-é-0123456789\n";
        register(key.as_bytes());
        let json = serde_json::to_string(key).unwrap();
        let python = format!("b'Bearer {}'", python_bytes(key.as_bytes()).as_str());
        let yaml = serde_saphyr::to_string(&key).unwrap_or_default();
        for printed in [json.as_str(), python.as_str(), yaml.as_str(), key] {
            let line = redact(printed);
            for run in ["sk-unit-", "0123456789"] {
                assert!(!line.contains(run), "{printed} -> {line}");
            }
            assert!(line.contains(MARK), "{printed} -> {line}");
        }
        // Go's HTML-safe JSON of a key with `<` or `&`.
        register(b"sk-unit-<angle>&amp-key");
        let go = redact("\"sk-unit-\\u003cangle\\u003e\\u0026amp-key\"");
        assert!(!go.contains("angle"), "{go}");
    }

    #[test]
    fn a_registered_key_and_its_base64_never_come_out() {
        register(b"sk-unit-test-redact-0123");
        let b64 = base64::engine::general_purpose::STANDARD.encode(b"sk-unit-test-redact-0123");
        let mut buf = Vec::new();
        {
            let mut w = Redacting::new(&mut buf);
            // Split across writes, as writeln! with arguments does.
            write!(w, "denied: {{\"data\":{{\"api-key\":\"{}", &b64[..10]).unwrap();
            writeln!(w, "{}\"}}}} and sk-unit-test-redact-0123", &b64[10..]).unwrap();
            write!(w, "no newline {b64}").unwrap();
        }
        let text = String::from_utf8(buf).unwrap();
        assert!(!text.contains(&b64), "{text}");
        assert!(!text.contains("sk-unit-test-redact-0123"), "{text}");
        assert_eq!(text.matches(MARK).count(), 3, "{text}");
    }
}
