//! Loading the kubeconfig through the one bounded reader ([`crate::input`]).
//!
//! kube reads kubeconfig, certificate, key and token files with `fs::read`, whole and without
//! limit (kube-client `config/file_config.rs`, `read_path` and `load_from_file`), so
//! `KUBECONFIG=/dev/zero` would eat memory until the kernel stepped in. Here the files are read
//! bounded and handed to kube as data: the merged [`Kubeconfig`] value, and the selected cluster's
//! and user's files inlined as their `*-data` fields, so kube has nothing left to read.
//!
//! The file list and merge follow kube's `Kubeconfig::from_env`/`read_from` (which follow
//! client-go's clientcmd loading rules): `--kubeconfig` alone, else every path in `$KUBECONFIG`,
//! else `~/.kube/config`; relative file references are resolved against their file's folder
//! (an exec command only when it contains a `/`, as client-go's `GetAuthInfoFileReferences`).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use secrecy::SecretString;

use crate::error::{Error, Result};
use crate::input::{self, CREDENTIAL_FILE, KUBECONFIG};

/// Where the kubeconfig comes from, in kubectl's order: `--kubeconfig` (which must exist), else
/// the `$KUBECONFIG` list and else `~/.kube/config`, of which missing files are skipped as
/// client-go's `ClientConfigLoadingRules.Load` (tools/clientcmd/loader.go) skips them: it
/// `os.Stat`s an explicit path and fails if it is missing, and for the precedence list it
/// `continue`s past `os.IsNotExist` while any other read or parse error is reported.
pub fn sources(flag: Option<&Path>) -> Vec<PathBuf> {
    if let Some(path) = flag {
        return vec![path.to_path_buf()];
    }
    let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    let candidates = if listed.is_empty() {
        std::env::home_dir()
            .map(|h| vec![h.join(".kube").join("config")])
            .unwrap_or_default()
    } else {
        listed
    };
    candidates
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect()
}

/// Reads one file bounded; errors name the file and are `Invalid`-free (a kubeconfig problem
/// is the cluster configuration's, reported by the caller).
fn read(path: &Path, limit: input::Limit) -> std::result::Result<Vec<u8>, String> {
    let name = path.display().to_string();
    input::read_bytes(&name, limit)
        .map(|(_, bytes)| bytes)
        .map_err(|e| e.to_string())
}

/// Reads and merges the kubeconfig files (first file to set a value wins).
pub fn load(paths: &[PathBuf]) -> std::result::Result<Kubeconfig, String> {
    let mut merged = Kubeconfig::default();
    for path in paths {
        let name = path.display().to_string();
        let bytes = read(path, KUBECONFIG).map_err(|e| format!("cannot read kubeconfig {e}"))?;
        let text =
            input::decode_text(&name, bytes).map_err(|e| format!("cannot read kubeconfig {e}"))?;
        let mut file = Kubeconfig::from_yaml(&text)
            .map_err(|e| format!("cannot read kubeconfig {name}: {e}"))?;
        if let Some(dir) = path.parent() {
            absolutize(&mut file, dir);
        }
        merged = merged
            .merge(file)
            .map_err(|e| format!("cannot merge kubeconfig {name}: {e}"))?;
    }
    Ok(merged)
}

fn absolutize(config: &mut Kubeconfig, dir: &Path) {
    let abs = |p: &mut Option<String>| {
        if let Some(path) = p.as_deref()
            && Path::new(path).is_relative()
            && let Some(joined) = dir.join(path).to_str()
        {
            *p = Some(joined.to_string());
        }
    };
    for named in &mut config.clusters {
        if let Some(cluster) = &mut named.cluster {
            abs(&mut cluster.certificate_authority);
        }
    }
    for named in &mut config.auth_infos {
        if let Some(auth) = &mut named.auth_info {
            abs(&mut auth.client_certificate);
            abs(&mut auth.client_key);
            abs(&mut auth.token_file);
            if let Some(exec) = &mut auth.exec
                && exec.command.as_deref().is_some_and(|c| c.contains('/'))
            {
                abs(&mut exec.command);
            }
        }
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The selected cluster's CA file becomes its `certificate-authority-data`, read bounded; the
/// user's files are inlined later on the built config ([`inline_user_files`]).
pub fn inline_cluster_files(
    config: &mut Kubeconfig,
    options: &KubeConfigOptions,
) -> std::result::Result<(), String> {
    let context = options
        .context
        .clone()
        .or_else(|| config.current_context.clone());
    let from_context = context.and_then(|name| {
        config
            .contexts
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.context.as_ref())
            .map(|c| c.cluster.clone())
    });
    let Some(cluster_name) = options.cluster.clone().or(from_context) else {
        return Ok(());
    };
    for named in &mut config.clusters {
        if named.name != cluster_name {
            continue;
        }
        if let Some(cluster) = &mut named.cluster
            && cluster.certificate_authority_data.is_none()
            && let Some(path) = cluster.certificate_authority.take()
        {
            cluster.certificate_authority_data =
                Some(b64(&read(Path::new(&path), CREDENTIAL_FILE)?));
        }
    }
    Ok(())
}

/// The user's certificate, key and token files, read bounded. Certificate and key become their
/// `*-data` fields; a token file is only checked (kube re-reads it, so a rotated token is seen).
pub fn inline_user_files(auth: &mut kube::config::AuthInfo) -> std::result::Result<(), String> {
    if auth.client_certificate_data.is_none()
        && let Some(path) = auth.client_certificate.take()
    {
        auth.client_certificate_data = Some(b64(&read(Path::new(&path), CREDENTIAL_FILE)?));
    }
    if auth.client_key_data.is_none()
        && let Some(path) = auth.client_key.take()
    {
        let key = input::read_secret_from(
            std::fs::File::open(&path).map_err(|e| format!("{path}: cannot read: {e}"))?,
            &path,
            CREDENTIAL_FILE,
        )
        .map_err(|e| e.to_string())?;
        auth.client_key_data = Some(SecretString::from(b64(&key)));
    }
    if let Some(path) = &auth.token_file {
        let token = input::read_secret_from(
            std::fs::File::open(path).map_err(|e| format!("{path}: cannot read: {e}"))?,
            path,
            CREDENTIAL_FILE,
        )
        .map_err(|e| e.to_string())?;
        drop(token);
    }
    Ok(())
}

/// `--certificate-authority FILE`, read bounded, as the DER certificates kube's TLS setup takes.
pub fn read_ca_file(path: &Path) -> Result<Vec<Vec<u8>>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let pem = read(path, CREDENTIAL_FILE).map_err(Error::Usage)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| {
            Error::Usage(format!(
                "--certificate-authority {}: not a PEM certificate bundle ({e})",
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(Error::Usage(format!(
            "--certificate-authority {}: holds no PEM certificate",
            path.display()
        )));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn an_endless_kubeconfig_is_refused_after_its_limit() {
        let e = load(&[PathBuf::from("/dev/zero")]).unwrap_err();
        assert!(
            e.contains(
                "cannot read kubeconfig /dev/zero: too large: over the 8 MiB limit for a kubeconfig"
            ),
            "{e}"
        );
        let mut auth = kube::config::AuthInfo {
            client_key: Some("/dev/zero".into()),
            ..Default::default()
        };
        let e = inline_user_files(&mut auth).unwrap_err();
        assert!(e.contains("over the 1 MiB limit"), "{e}");
        let e = read_ca_file(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("over the 1 MiB limit"), "{e}");
    }

    #[test]
    fn relative_references_resolve_against_the_file() {
        let mut k = Kubeconfig::from_yaml(
            "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority: ca.crt}}]\n\
             users: [{name: u, user: {client-key: /abs/k, exec: {command: ./bin/plugin, apiVersion: client.authentication.k8s.io/v1}}}]\n",
        )
        .unwrap();
        absolutize(&mut k, Path::new("/home/me/.kube"));
        let c = k.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(
            c.certificate_authority.as_deref(),
            Some("/home/me/.kube/ca.crt")
        );
        let u = k.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(u.client_key.as_deref(), Some("/abs/k"));
        assert_eq!(
            u.exec.as_ref().unwrap().command.as_deref(),
            Some("/home/me/.kube/./bin/plugin")
        );
    }
}
