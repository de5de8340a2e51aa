//! A model of what krew does with a plugin manifest and its archive, written from krew's source
//! (kubernetes-sigs/krew), so tests can hold the packaging to it without krew installed:
//! - pkg/constants/constants.go: apiVersion `krew.googlecontainertools.github.com/v1alpha2`, kind
//!   `Plugin`.
//! - pkg/index/types.go: the Plugin, PluginSpec, Platform and FileOperation fields.
//! - internal/index/validation/validate.go: name matches `^[\w-]+$` and is no Windows device name;
//!   shortDescription is set and one line; at least one platform; every platform has `uri`, `bin`,
//!   a `sha256` matching `^[a-f0-9]{64}$`, `files` unset or non-empty with `from` and `to` set, and
//!   a non-empty selector whose only keys are `os` and `arch`.
//! - internal/installation/semver/version.go: the version is semver with a leading `v`.
//! - internal/installation/platform.go: the first platform whose selector matches GOOS/GOARCH wins.
//! - internal/download/downloader.go, verifier.go: the sha256 is of the archive bytes; gzip is
//!   recognised by content; tar entries must be regular files or directories, with no `..` and no
//!   absolute names.
//! - internal/installation/move.go: a `from` naming an existing file moves directly (`to: .` keeps
//!   its name), anything else is a filepath.Glob that must match; `to` must be a clean path.
//! - internal/installation/install.go and internal/environment/environment.go: files land in
//!   `<root>/store/<name>/<version>`, `bin` is linked as `<root>/bin/kubectl-<name with - → _>`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

// --- krew's types (pkg/index/types.go). krew decodes leniently; these refuse unknown fields so
// that a misspelt key, which krew would silently drop, fails here.

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Plugin {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    pub spec: PluginSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PluginSpec {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub short_description: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub caveats: String,
    #[serde(default)]
    pub homepage: String,
    #[serde(default)]
    pub platforms: Vec<Platform>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    #[serde(default)]
    pub uri: String,
    #[serde(default)]
    pub sha256: String,
    pub selector: Option<Selector>,
    pub files: Option<Vec<FileOperation>>,
    pub license: Option<String>,
    #[serde(default)]
    pub bin: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Selector {
    pub match_labels: Option<BTreeMap<String, String>>,
    pub match_expressions: Option<Vec<Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOperation {
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
}

pub fn parse_plugin(text: &str) -> Plugin {
    serde_saphyr::from_str(text).expect("a krew v1alpha2 Plugin")
}

/// krew's ValidatePlugin (internal/index/validation/validate.go) plus its semver rule.
pub fn krew_validate(p: &Plugin) -> Result<(), String> {
    const WINDOWS_FORBIDDEN: [&str; 22] = [
        "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
        "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
    ];
    if p.api_version != "krew.googlecontainertools.github.com/v1alpha2" {
        return Err(format!("apiVersion {:?} is not supported", p.api_version));
    }
    if p.kind != "Plugin" {
        return Err(format!("kind {:?} is not Plugin", p.kind));
    }
    let name = &p.metadata.name;
    // Go's `\w` is ASCII [0-9A-Za-z_].
    let safe = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !WINDOWS_FORBIDDEN
            .iter()
            .any(|f| f.eq_ignore_ascii_case(name));
    if !safe {
        return Err(format!("plugin name {name:?} is not allowed"));
    }
    let spec = &p.spec;
    if spec.short_description.is_empty() || spec.short_description.contains(['\r', '\n']) {
        return Err("shortDescription must be set and be one line".into());
    }
    if spec.platforms.is_empty() {
        return Err("no platform".into());
    }
    if !is_semver_with_v(&spec.version) {
        return Err(format!("version {:?} is not v<semver>", spec.version));
    }
    for (i, pl) in spec.platforms.iter().enumerate() {
        validate_platform(pl).map_err(|e| format!("platforms[{i}]: {e}"))?;
    }
    Ok(())
}

fn is_semver_with_v(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('v') else {
        return false;
    };
    let core = rest.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

fn validate_platform(p: &Platform) -> Result<(), String> {
    if p.uri.is_empty() {
        return Err("uri must be set".into());
    }
    let sha_ok = p.sha256.len() == 64
        && p.sha256
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    if !sha_ok {
        return Err(format!("sha256 {:?} must match ^[a-f0-9]{{64}}$", p.sha256));
    }
    if p.bin.is_empty() {
        return Err("bin must be set".into());
    }
    if let Some(files) = &p.files {
        if files.is_empty() {
            return Err("files must be unset or non-empty".into());
        }
        if files.iter().any(|f| f.from.is_empty() || f.to.is_empty()) {
            return Err("every files entry needs from and to".into());
        }
    }
    let Some(sel) = &p.selector else {
        return Err("no selector".into());
    };
    let exprs = sel.match_expressions.as_deref().unwrap_or_default();
    if sel.match_labels.is_none() && exprs.is_empty() {
        return Err("empty selector".into());
    }
    let keys = sel
        .match_labels
        .iter()
        .flat_map(|m| m.keys().cloned())
        .chain(
            exprs
                .iter()
                .map(|e| e["key"].as_str().unwrap_or("").to_string()),
        );
    for key in keys {
        if key != "os" && key != "arch" {
            return Err(format!("selector key {key:?} is not supported"));
        }
    }
    if sel.match_labels.as_ref().is_some_and(BTreeMap::is_empty) {
        return Err("matchLabels specified but empty".into());
    }
    if sel.match_expressions.as_ref().is_some_and(Vec::is_empty) {
        return Err("matchExpressions specified but empty".into());
    }
    Ok(())
}

#[cfg(unix)]
pub use archive::*;

#[cfg(unix)]
mod archive {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use super::{Platform, Plugin};

    pub fn sha256_hex(bytes: &[u8]) -> String {
        ring::digest::digest(&ring::digest::SHA256, bytes)
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// GOOS/GOARCH of this machine, the labels krew matches selectors against.
    pub fn host_labels() -> (&'static str, &'static str) {
        let os = match std::env::consts::OS {
            "macos" => "darwin",
            other => other,
        };
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        };
        (os, arch)
    }

    /// The platform krew picks: the first whose selector matches (platform.go).
    pub fn matching_platform(p: &Plugin) -> (usize, &Platform) {
        let (os, arch) = host_labels();
        p.spec
            .platforms
            .iter()
            .enumerate()
            .find(|(_, pl)| {
                let sel = pl.selector.as_ref().unwrap();
                assert!(
                    sel.match_expressions.is_none(),
                    "matchExpressions are not evaluated here; the manifest uses matchLabels"
                );
                sel.match_labels
                    .as_ref()
                    .unwrap()
                    .iter()
                    .all(|(k, v)| (k == "os" && v == os) || (k == "arch" && v == arch))
            })
            .unwrap_or_else(|| panic!("no platform for {os}/{arch}"))
    }

    pub struct TarEntry {
        pub name: String,
        pub mode: u32,
        pub mtime: u64,
        pub data: Vec<u8>,
    }

    /// Reads the archive as krew's extractor would see it, entry by entry with no preprocessing,
    /// and holds it to the layout package.sh promises (plain ustar, owned by 0:0).
    pub fn read_archive(bytes: &[u8]) -> Vec<TarEntry> {
        // http.DetectContentType reports application/x-gzip for this magic; krew needs that.
        assert!(bytes.starts_with(&[0x1f, 0x8b, 0x08]), "not a gzip stream");
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
        let mut out = Vec::new();
        for entry in ar.entries().unwrap().raw(true) {
            let mut entry = entry.unwrap();
            let h = entry.header().clone();
            let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
            assert!(h.as_ustar().is_some(), "{name}: not a ustar header");
            assert!(
                !name.contains("..") && !name.starts_with(['/', '\\']),
                "{name}: krew refuses it"
            );
            assert_eq!(
                h.entry_type(),
                tar::EntryType::Regular,
                "{name}: krew extracts regular files and directories only; the archive is flat"
            );
            assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0), "{name}");
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
            out.push(TarEntry {
                name,
                mode: h.mode().unwrap(),
                mtime: h.mtime().unwrap(),
                data,
            });
        }
        out
    }

    /// What `kubectl krew install --manifest --archive` does after validation: verify the sha256,
    /// extract, move `files` into store/<name>/<version>, link `bin` into bin/. Returns the link.
    pub fn krew_install(
        plugin: &Plugin,
        platform: &Platform,
        archive: &[u8],
        root: &Path,
    ) -> PathBuf {
        assert_eq!(
            sha256_hex(archive),
            platform.sha256,
            "checksum does not match"
        );
        let staging = root.join("downloads");
        fs::create_dir_all(&staging).unwrap();
        for e in read_archive(archive) {
            let path = staging.join(&e.name);
            fs::write(&path, &e.data).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(e.mode)).unwrap();
        }
        let moving = root.join("move-tmp");
        fs::create_dir_all(&moving).unwrap();
        let files = platform.files.as_ref().expect("files are listed");
        for fo in files {
            assert!(
                fo.to == "."
                    || fo
                        .to
                        .split('/')
                        .all(|c| !c.is_empty() && c != "." && c != ".."),
                "to {:?} is not a clean path",
                fo.to
            );
            // A literal `from` must name a file in the archive: if it did not, krew would treat
            // it as a glob, which matches nothing and fails the install.
            assert!(
                !fo.from.contains(['*', '?', '[']),
                "from {:?} is a glob; this check expects literal names",
                fo.from
            );
            let from = staging.join(&fo.from);
            assert!(
                from.is_file(),
                "files.from {:?} is not in the archive",
                fo.from
            );
            let to = if fo.to == "." {
                moving.join(from.file_name().unwrap())
            } else {
                moving.join(&fo.to)
            };
            fs::rename(&from, &to).unwrap();
        }
        let store = root
            .join("store")
            .join(&plugin.metadata.name)
            .join(&plugin.spec.version);
        fs::create_dir_all(store.parent().unwrap()).unwrap();
        fs::rename(&moving, &store).unwrap();

        let bin = store.join(&platform.bin);
        let meta = fs::metadata(&bin).expect("bin is among the installed files");
        assert!(
            meta.is_file() && meta.permissions().mode() & 0o111 != 0,
            "bin {} is not an executable file",
            bin.display()
        );
        let bin_dir = root.join("bin");
        fs::create_dir_all(&bin_dir).unwrap();
        let link = bin_dir.join(format!(
            "kubectl-{}",
            plugin.metadata.name.replace('-', "_")
        ));
        let relative = Path::new("..")
            .join("store")
            .join(&plugin.metadata.name)
            .join(&plugin.spec.version)
            .join(&platform.bin);
        std::os::unix::fs::symlink(relative, &link).unwrap();
        link
    }
}
