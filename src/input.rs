//! The one bounded reader every input goes through: manifests and values files, stdin, FIFOs,
//! devices, process substitution (`<(…)`), templates, key files and `--set-file`.
//!
//! A size check on file metadata is not enough: pipes, FIFOs and `/dev/zero` report a length of
//! 0. So every read is `take(limit + 1)`: at most one byte past the limit is ever read, and that
//! byte is what tells us the input is too large.

use std::io::Read;

use crate::error::{Error, Result};

/// A named size limit: what kind of input it is for, and why the figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub bytes: usize,
    /// "a manifest or values file", for the message.
    pub what: &'static str,
    /// Why this figure, for the message.
    pub why: &'static str,
}

/// Manifests and values files: the API server refuses request bodies over 3 MiB
/// (k8s.io/apiserver pkg/server/config.go, `MaxRequestBodyBytes = 3 * 1024 * 1024`).
pub const MANIFEST: Limit = Limit {
    bytes: 3 * 1024 * 1024,
    what: "a manifest or values file",
    why: "the API server refuses requests over 3 MiB",
};

/// Template files: the built-ins are a few KiB; 1 MiB leaves room for any hand-written one.
pub const TEMPLATE: Limit = Limit {
    bytes: 1024 * 1024,
    what: "a template",
    why: "the built-in templates are a few KiB",
};

/// API keys: they travel in an HTTP header, and common servers refuse headers over 8–16 KiB.
pub const KEY: Limit = Limit {
    bytes: 16 * 1024,
    what: "an API key",
    why: "keys travel in an HTTP header, which servers cap at 8-16 KiB",
};

/// `--set-file` values end up in the manifest, so they share its limit.
pub const SET_FILE: Limit = Limit {
    bytes: 3 * 1024 * 1024,
    what: "a --set-file value",
    why: "the API server refuses requests over 3 MiB",
};

/// Human-readable size: "3 MiB", "16 KiB", "512 bytes".
pub fn human(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// The error for an input over its limit (exit 2).
fn too_large(name: &str, limit: Limit) -> Error {
    Error::Invalid(format!(
        "{name}: too large: over the {} limit for {} ({}); nothing was read past the limit",
        human(limit.bytes),
        limit.what,
        limit.why
    ))
}

/// Reads at most `limit.bytes` from `reader` into `buf`; more is an error naming `name`.
fn read_limited_into(reader: impl Read, name: &str, limit: Limit, buf: &mut Vec<u8>) -> Result<()> {
    reader
        .take(limit.bytes as u64 + 1)
        .read_to_end(buf)
        .map_err(|e| Error::Invalid(format!("{name}: cannot read: {e}")))?;
    if buf.len() > limit.bytes {
        return Err(too_large(name, limit));
    }
    Ok(())
}

/// Reads at most `limit.bytes` from `reader`; more is an error naming `name`.
fn read_bytes_from(reader: impl Read, name: &str, limit: Limit) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_limited_into(reader, name, limit, &mut buf)?;
    Ok(buf)
}

/// [`read_bytes_from`] for key material: the whole limit allocated up front, so no reallocation
/// leaves a copy of the key behind, and the buffer zeroed when dropped.
pub fn read_secret_from(
    reader: impl Read,
    name: &str,
    limit: Limit,
) -> Result<zeroize::Zeroizing<Vec<u8>>> {
    let mut buf = zeroize::Zeroizing::new(Vec::with_capacity(limit.bytes + 64));
    read_limited_into(reader, name, limit, &mut buf)?;
    Ok(buf)
}

/// Reads `path` ("-" is stdin) as raw bytes, bounded. Returns the display name and the bytes.
fn read_bytes(path: &str, limit: Limit) -> Result<(String, Vec<u8>)> {
    if path == "-" {
        let bytes = read_bytes_from(std::io::stdin().lock(), "<stdin>", limit)?;
        return Ok(("<stdin>".to_string(), bytes));
    }
    let cannot = |e: std::io::Error| Error::Invalid(format!("{path}: cannot read: {e}"));
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if meta.is_dir() {
        return Err(Error::Invalid(format!(
            "{path}: is a directory; pass a file"
        )));
    }
    // Regular files say their size up front: refuse without reading anything.
    if meta.is_file() && meta.len() > limit.bytes as u64 {
        return Err(too_large(path, limit));
    }
    let file = std::fs::File::open(path).map_err(cannot)?;
    Ok((path.to_string(), read_bytes_from(file, path, limit)?))
}

/// Reads `path` ("-" is stdin) as UTF-8 text, bounded.
pub fn read_text(path: &str, limit: Limit) -> Result<(String, String)> {
    let (name, bytes) = read_bytes(path, limit)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| Error::Invalid(format!("{name}: not UTF-8 text: {e}")))?;
    Ok((name, text))
}

/// A manifest or values file (`-f`).
pub fn read_manifest(path: &str) -> Result<(String, String)> {
    read_text(path, MANIFEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limit = Limit {
        bytes: 10,
        what: "a test input",
        why: "test",
    };

    #[test]
    fn reads_up_to_the_limit_and_refuses_one_byte_more() {
        assert_eq!(
            read_bytes_from(&b"0123456789"[..], "x", SMALL)
                .unwrap()
                .len(),
            10
        );
        let e = read_bytes_from(&b"0123456789A"[..], "x", SMALL).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        assert_eq!(
            e.to_string(),
            "x: too large: over the 10 bytes limit for a test input (test); nothing was read past the limit"
        );
    }

    #[test]
    fn an_endless_stream_stops_one_byte_past_the_limit() {
        // /dev/zero as a reader: counts what was pulled from it.
        struct Endless(usize);
        impl Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                buf.fill(0);
                self.0 += buf.len();
                Ok(buf.len())
            }
        }
        let mut src = Endless(0);
        let e = read_bytes_from(&mut src, "/dev/zero", MANIFEST).unwrap_err();
        assert!(
            e.to_string()
                .contains("/dev/zero: too large: over the 3 MiB limit"),
            "{e}"
        );
        assert!(
            src.0 <= MANIFEST.bytes + 1 + 64 * 1024,
            "read {} bytes",
            src.0
        );
    }

    #[test]
    #[cfg(unix)]
    fn devices_and_directories() {
        let e = read_text("/dev/zero", TEMPLATE).unwrap_err().to_string();
        assert!(
            e.contains("/dev/zero: too large: over the 1 MiB limit for a template"),
            "{e}"
        );
        let e = read_text("/", MANIFEST).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let e = read_text("/no/such/file", MANIFEST).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(3 * 1024 * 1024), "3 MiB");
        assert_eq!(human(16 * 1024), "16 KiB");
        assert_eq!(human(100), "100 bytes");
    }
}
