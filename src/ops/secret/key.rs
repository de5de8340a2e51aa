//! Getting the key in: choosing its source from the flags and the terminal, reading it under
//! the key-size limit, and refusing keys that cannot be right, without ever echoing them.

use secrecy::SecretString;
use zeroize::Zeroizing;

use super::SecretCreateOptions;
use crate::error::{Error, Result};
use crate::output::Output;

/// Where the key came from, as chosen by the flags and the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Prompt,
    Stdin,
    Env(String),
    File(std::path::PathBuf),
    Literal,
}

/// Pure: picks the source. With no flag, a terminal on stdin means a hidden prompt; anything
/// else is refused rather than silently reading a pipe the user may not have meant.
pub fn choose_source(args: &SecretCreateOptions, stdin_is_tty: bool) -> Result<KeySource> {
    Ok(if args.from_stdin {
        KeySource::Stdin
    } else if let Some(var) = &args.from_env {
        KeySource::Env(var.clone())
    } else if let Some(path) = &args.from_file {
        KeySource::File(path.clone())
    } else if args.from_literal.is_some() {
        KeySource::Literal
    } else if stdin_is_tty {
        KeySource::Prompt
    } else {
        return Err(Error::Usage(
            "no API key given and stdin is not a terminal to prompt on; pass --from-stdin to read \
             it from the pipe, or --from-env VAR / --from-file PATH"
                .into(),
        ));
    })
}

/// The longest key accepted, in bytes: [`crate::input::KEY`], the limit every key source is read
/// under. Anything longer is the wrong file or pipe, refused whole rather than cut.
pub const MAX_KEY_BYTES: usize = crate::input::KEY.bytes;

/// Pure: trims one trailing newline (what `echo` and editors add) and refuses keys that cannot
/// be right: empty, several lines, over [`MAX_KEY_BYTES`], or holding anything but printable
/// ASCII (an HTTP header cannot carry NUL, control characters, inner spaces or non-ASCII).
/// Messages describe the key by length and position only, never by content.
pub fn clean_key(raw: Zeroizing<Vec<u8>>, origin: &str) -> Result<SecretString> {
    let refuse = |why: String| {
        Err(Error::Invalid(format!(
            "the API key from {origin} {why}; nothing was stored"
        )))
    };
    let trimmed = raw
        .strip_suffix(b"\r\n")
        .or_else(|| raw.strip_suffix(b"\n"))
        .unwrap_or(&raw);
    if trimmed.len() > MAX_KEY_BYTES {
        let limit = crate::input::KEY;
        return refuse(format!(
            "is {} bytes: too large: over the {} limit for {} ({})",
            trimmed.len(),
            crate::input::human(limit.bytes),
            limit.what,
            limit.why
        ));
    }
    if trimmed.iter().all(u8::is_ascii_whitespace) {
        return refuse("is empty".into());
    }
    if trimmed.contains(&b'\n') {
        // Every line break counts once: LF, CRLF or a lone CR.
        let breaks = trimmed
            .iter()
            .enumerate()
            .filter(|&(i, b)| *b == b'\n' || (*b == b'\r' && trimmed.get(i + 1) != Some(&b'\n')))
            .count();
        return refuse(format!("has {} lines; expected a single line", breaks + 1));
    }
    if let Some(at) = trimmed.iter().position(|b| *b == b'\r') {
        return refuse(format!(
            "contains a carriage return (CR, at byte {}; a Windows or old Mac line end?); expected a single line",
            at + 1
        ));
    }
    if trimmed.first().is_some_and(u8::is_ascii_whitespace)
        || trimmed.last().is_some_and(u8::is_ascii_whitespace)
    {
        return refuse("starts or ends with spaces; remove them".into());
    }
    let header = "an HTTP Authorization header cannot carry it";
    if let Some(at) = trimmed.iter().position(|b| !b.is_ascii_graphic()) {
        let why = match trimmed[at] {
            0 => "contains a NUL byte",
            b' ' | b'\t' => "contains whitespace",
            b if b.is_ascii_control() => "contains a control character",
            _ => "contains non-ASCII characters",
        };
        return refuse(format!("{why} (at byte {}; {header})", at + 1));
    }
    // Printable ASCII only, so this is UTF-8; exact capacity, so boxing it does not copy.
    let mut key = String::with_capacity(trimmed.len());
    key.push_str(std::str::from_utf8(trimmed).unwrap_or_default());
    // From here on no output can show it (server messages that echo the Secret included).
    crate::output::redact::register(key.as_bytes());
    Ok(SecretString::from(key))
}

/// Reads the key from its source, before any client or thread exists: `--from-env VAR` is
/// removed from the environment once read, so no child process (an exec credential plugin the
/// client starts) inherits it.
pub(super) fn read_key(
    args: &mut SecretCreateOptions,
    source: &KeySource,
    out: &mut Output,
) -> Result<SecretString> {
    match source {
        KeySource::Prompt => {
            let key = dialoguer::Password::new()
                .with_prompt(format!("API key for Secret {:?}", args.name))
                .with_confirmation("Repeat the API key", "the two entries differ")
                .interact()
                .map_err(|e| Error::Other(format!("reading the key at the prompt: {e}")))?;
            clean_key(Zeroizing::new(key.into_bytes()), "the prompt")
        }
        KeySource::Stdin => {
            // All of stdin, bounded: a second line means the wrong thing was piped in, and
            // silently keeping only the first line would store a wrong key.
            let bytes =
                crate::input::read_key_from(std::io::stdin().lock(), "<stdin>", crate::input::KEY)?;
            clean_key(bytes, "stdin")
        }
        KeySource::Env(var) => {
            let value = std::env::var_os(var);
            if value.is_some() {
                // SAFETY: called from `commands::secret::exec` before the async runtime (or any
                // other thread) starts, so nothing reads the environment concurrently.
                unsafe { std::env::remove_var(var) };
            }
            match value.map(|v| v.into_string()) {
                Some(Ok(value)) => {
                    clean_key(Zeroizing::new(value.into_bytes()), &format!("${var}"))
                }
                None => Err(Error::Invalid(format!(
                    "environment variable {var} is not set (--from-env {var}); nothing was stored"
                ))),
                Some(Err(raw)) => {
                    drop(Zeroizing::new(raw.into_encoded_bytes()));
                    Err(Error::Invalid(format!(
                        "the API key from ${var} contains non-ASCII characters (not even UTF-8; an HTTP Authorization header cannot carry it); nothing was stored"
                    )))
                }
            }
        }
        KeySource::File(path) => {
            let what = path.display().to_string();
            let file = std::fs::File::open(path).map_err(|e| {
                Error::Invalid(format!(
                    "{what}: cannot read: {e} (--from-file); nothing was stored"
                ))
            })?;
            clean_key(
                crate::input::read_key_from(file, &what, crate::input::KEY)?,
                &what,
            )
        }
        KeySource::Literal => {
            out.note_line(
                "warning: --from-literal puts the key in your shell history and in `ps` output; \
                 prefer the prompt or --from-stdin",
            );
            let literal = args.from_literal.take().unwrap_or_default();
            clean_key(Zeroizing::new(literal.into_bytes()), "--from-literal")
        }
    }
}
