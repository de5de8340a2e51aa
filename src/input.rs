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

/// Kubeconfig files: client-go reads them whole with no limit; real ones (many clusters, each
/// with an inline CA) are tens of KiB, so 8 MiB is generous and keeps `/dev/zero` out.
pub const KUBECONFIG: Limit = Limit {
    bytes: 8 * 1024 * 1024,
    what: "a kubeconfig file",
    why: "real kubeconfigs are a few KiB per cluster",
};

/// Certificate, key and token files (`--certificate-authority`, `--client-certificate`,
/// `--client-key`, and their kubeconfig fields): a CA bundle of a few hundred certificates fits.
pub const CREDENTIAL_FILE: Limit = Limit {
    bytes: 1024 * 1024,
    what: "a certificate, key or token file",
    why: "a bundle of hundreds of certificates is well under 1 MiB",
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

/// [`read_secret_from`] for a key whose source may end with a newline the caller strips
/// (`echo KEY |`, an editor's last line): up to `limit` plus `\r\n` is read, so a key exactly at
/// the limit is judged after stripping; more is refused naming `limit` itself.
pub fn read_key_from(
    reader: impl Read,
    name: &str,
    limit: Limit,
) -> Result<zeroize::Zeroizing<Vec<u8>>> {
    const NEWLINE: usize = 2;
    let mut buf = zeroize::Zeroizing::new(Vec::with_capacity(limit.bytes + NEWLINE + 64));
    reader
        .take((limit.bytes + NEWLINE) as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::Invalid(format!("{name}: cannot read: {e}")))?;
    if buf.len() > limit.bytes + NEWLINE {
        return Err(too_large(name, limit));
    }
    Ok(buf)
}

/// Reads `path` ("-" is stdin) as raw bytes, bounded. Returns the display name and the bytes.
pub fn read_bytes(path: &str, limit: Limit) -> Result<(String, Vec<u8>)> {
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

/// Reads `path` ("-" is stdin) as text, bounded, decoded as [`decode_text`] does.
pub fn read_text(path: &str, limit: Limit) -> Result<(String, String)> {
    let (name, bytes) = read_bytes(path, limit)?;
    let text = decode_text(&name, bytes)?;
    Ok((name, text))
}

/// Bytes to text as kubectl reads a file: k8s.io/cli-runtime pkg/resource/visitor.go
/// (`FileVisitor.Visit`) wraps it in `unicode.BOMOverride(unicode.UTF8.NewDecoder())`, so a
/// UTF-8 BOM is dropped and a UTF-16 BOM (either byte order) switches to UTF-16. Nothing else is
/// sniffed: a UTF-32 BOM starts like UTF-16LE's, decodes to NULs and fails as YAML, as there.
pub fn decode_text(name: &str, bytes: Vec<u8>) -> Result<String> {
    let utf16 = |rest: &[u8], from: fn([u8; 2]) -> u16| {
        if !rest.len().is_multiple_of(2) {
            return Err(Error::Invalid(format!(
                "{name}: UTF-16 text (it starts with a byte order mark) with an odd number of bytes"
            )));
        }
        let units = rest.chunks_exact(2).map(|c| from([c[0], c[1]]));
        // x/text's UTF-16 decoder writes U+FFFD for a lone surrogate, as this does.
        Ok(char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect())
    };
    match bytes.as_slice() {
        [0xEF, 0xBB, 0xBF, rest @ ..] => std::str::from_utf8(rest)
            .map(str::to_string)
            .map_err(|e| Error::Invalid(format!("{name}: not UTF-8 text: {e}"))),
        [0xFF, 0xFE, rest @ ..] => utf16(rest, u16::from_le_bytes),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, u16::from_be_bytes),
        _ => String::from_utf8(bytes)
            .map_err(|e| Error::Invalid(format!("{name}: not UTF-8 text: {e}"))),
    }
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
    fn byte_order_marks_are_read_as_kubectl_reads_them() {
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("kind: TFJob\n".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(decode_text("x", le).unwrap(), "kind: TFJob\n");
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain("é".encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(decode_text("x", be).unwrap(), "é");
        assert_eq!(
            decode_text("x", b"\xEF\xBB\xBFa: 1".to_vec()).unwrap(),
            "a: 1"
        );
        // UTF-32LE's BOM is UTF-16LE's followed by a NUL unit: NULs, which YAML then refuses.
        let utf32: Vec<u8> = vec![0xFF, 0xFE, 0, 0, b'a', 0, 0, 0];
        assert_eq!(decode_text("x", utf32).unwrap(), "\0a\0");
        assert!(decode_text("x", vec![0xFF, 0xFE, b'a']).is_err());
        assert!(decode_text("x", vec![0xC3]).is_err());
    }

    #[test]
    fn a_key_at_the_limit_with_its_newline_is_read_whole() {
        let mut at = vec![b'k'; KEY.bytes];
        at.extend_from_slice(b"\r\n");
        assert_eq!(
            read_key_from(&at[..], "k", KEY).unwrap().len(),
            KEY.bytes + 2
        );
        let over = vec![b'k'; KEY.bytes + 3];
        let e = read_key_from(&over[..], "k", KEY).unwrap_err().to_string();
        assert!(e.contains("over the 16 KiB limit for an API key"), "{e}");
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(3 * 1024 * 1024), "3 MiB");
        assert_eq!(human(16 * 1024), "16 KiB");
        assert_eq!(human(100), "100 bytes");
    }
}
