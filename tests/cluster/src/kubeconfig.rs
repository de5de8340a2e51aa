//! The kubeconfigs the cluster writes for its clients.

use std::path::{Path, PathBuf};

use base64::Engine;

use crate::auth::Credential;
use crate::tls::Pki;

/// Kubeconfig YAML (context/cluster "test", user "tester", namespace "default") with an optional CA (PEM, for `certificate-authority-data`) and the
/// `user:` stanza's lines (already indented by four spaces; empty for no credentials).
fn render_with(url: &str, ca_pem: Option<&str>, user_lines: &str) -> String {
    let ca = ca_pem
        .map(|pem| format!("    certificate-authority-data: {}\n", b64(pem)))
        .unwrap_or_default();
    let user = if user_lines.is_empty() {
        "  user: {}\n".to_string()
    } else {
        format!("  user:\n{user_lines}")
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {url}
{ca}contexts:
- name: test
  context:
    cluster: test
    user: tester
    namespace: default
current-context: test
preferences: {{}}
users:
- name: tester
{user}"
    )
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Writes a kubeconfig for `credential` at `path`. `ca_pem` is the CA the client trusts
/// (None over plain HTTP). An exec credential writes its plugin script next to `path`.
pub(crate) fn write(
    path: &Path,
    url: &str,
    ca_pem: Option<&str>,
    pki: Option<&Pki>,
    credential: &Credential,
) -> std::io::Result<()> {
    let user_lines = match credential {
        Credential::Token(token) => format!("    token: {token}\n"),
        Credential::ClientCert { user, groups } => {
            let pki = pki.expect("client certificates need a cluster started with security.tls");
            let pair = pki.issue_client(user, groups);
            format!(
                "    client-certificate-data: {}\n    client-key-data: {}\n",
                b64(&pair.cert_pem),
                b64(&pair.key_pem)
            )
        }
        Credential::Exec { token } => {
            let script = write_exec_plugin(path, token)?;
            // client.authentication.k8s.io/v1 requires interactiveMode (kubectl refuses the
            // stanza without it); kube-rs reads apiVersion, command and interactiveMode.
            format!(
                "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: {}
      interactiveMode: Never
      provideClusterInfo: false
",
                script.display()
            )
        }
        Credential::None => String::new(),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, render_with(url, ca_pem, &user_lines))
}

/// A shell script that prints an ExecCredential carrying `token`, written as
/// `<kubeconfig>.exec-credential.sh`, readable and runnable by its owner only.
fn write_exec_plugin(kubeconfig: &Path, token: &str) -> std::io::Result<PathBuf> {
    let mut name = kubeconfig.as_os_str().to_owned();
    name.push(".exec-credential.sh");
    let script = PathBuf::from(name);
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    });
    std::fs::write(
        &script,
        format!("#!/bin/sh\ncat <<'EOF'\n{credential}\nEOF\n"),
    )?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(script)
}
