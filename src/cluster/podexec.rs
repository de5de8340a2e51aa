//! Running one read-only command in a container (`pods/exec`), bounded in time and output.
//!
//! kube's `ws` feature speaks the WebSocket subprotocols kubectl 1.36 offers, `v5.channel.k8s.io`
//! first and `v4.channel.k8s.io` as the fallback (kube-client `upgrade.rs`). The command's words
//! land in the API server's audit log and in the container's `ps`: callers pass fixed scripts and
//! names only, never a secret (the scripts read secrets inside the container).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams};
use tokio::io::AsyncReadExt;

use crate::cluster::Kube;
use crate::cluster::budget::Budget;

/// How an exec ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The command ran and exited with this code.
    Exited(i32),
    /// The runtime could not start the program (`executable file not found`): the image lacks it.
    NoProgram,
    /// The API server or kubelet refused or broke the exec; the text says how.
    Failed(String),
    /// `create pods/exec` is not allowed; the API server's message.
    Forbidden(String),
    /// It did not end within its time.
    TimedOut,
}

/// What one exec printed (each stream cut at the bound) and how it ended.
#[derive(Debug, Clone)]
pub struct Exec {
    pub stdout: String,
    pub stderr: String,
    pub ended: Ended,
}

/// Runs `argv` in `container` of `pod` and collects at most `limit` bytes of each stream, for
/// at most `within`.
pub async fn run(
    kube: &Kube,
    namespace: &str,
    pod: &str,
    container: &str,
    argv: &[String],
    limit: usize,
    within: Duration,
) -> Exec {
    let api: Api<Pod> = Api::namespaced(kube.client.clone(), namespace);
    let params = AttachParams::default()
        .container(container)
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let work = async {
        let mut proc = match api.exec(pod, argv.to_vec(), &params).await {
            Ok(p) => p,
            Err(e) => {
                let ended = match crate::cluster::forbidden::refused(&e) {
                    Some(message) => Ended::Forbidden(message.to_string()),
                    None => Ended::Failed(failed(&e)),
                };
                return Exec {
                    stdout: String::new(),
                    stderr: String::new(),
                    ended,
                };
            }
        };
        let status = proc.take_status();
        let (mut out, mut err) = (proc.stdout(), proc.stderr());
        let read = |r: Option<_>| async move {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let mut r: std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>> = Box::pin(r);
                let _ = (&mut r).take(limit as u64).read_to_end(&mut buf).await;
                // Drain the rest so the stream can end; it is not kept.
                let _ = tokio::io::copy(&mut r, &mut tokio::io::sink()).await;
            }
            String::from_utf8_lossy(&buf).into_owned()
        };
        let (stdout, stderr) = tokio::join!(read(out.take()), read(err.take()));
        let status = match status {
            Some(s) => s.await,
            None => None,
        };
        let _ = proc.join().await;
        Exec {
            stdout,
            stderr,
            ended: ended_by(status),
        }
    };
    match Budget::new(within).attempt(work).await {
        Some(e) => e,
        None => Exec {
            stdout: String::new(),
            stderr: String::new(),
            ended: Ended::TimedOut,
        },
    }
}

/// Why an exec could not start, in one sentence (never kube's `Debug` of the Status). The API
/// server proxies exec to the kubelet of the pod's node; a 5xx there (`no preferred addresses
/// found`, `dial tcp …:10250`) is the API server failing to reach that kubelet.
pub fn failed(e: &kube::Error) -> String {
    through_kubelet(e, "to exec", "kubectl exec")
}

/// A request the API server passes on to the pod's kubelet (exec, logs) that failed: a 5xx is
/// the API server failing to reach that kubelet, said as such with what it answered and the
/// kubectl command that fails the same way; any other error through the one renderer.
pub fn through_kubelet(e: &kube::Error, doing: &str, kubectl: &str) -> String {
    match e {
        kube::Error::Api(s) if s.code >= 500 => format!(
            "the API server could not reach the kubelet of the pod's node {doing} ({}, HTTP {}); \
             `{kubectl}` fails the same way",
            s.message, s.code
        ),
        other => crate::error::chain(other),
    }
}

/// The error channel's Status (the kubelet's `writeStatus`): Success, NonZeroExitCode with the
/// code in `details.causes`, or a failure to start, which for a missing program says
/// `executable file not found` (runc's words, passed on by containerd and CRI-O).
fn ended_by(status: Option<Status>) -> Ended {
    let Some(s) = status else {
        return Ended::Failed("the exec stream ended without a status".into());
    };
    if s.status.as_deref() == Some("Success") {
        return Ended::Exited(0);
    }
    if s.reason.as_deref() == Some("NonZeroExitCode") {
        let code = s
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
            .and_then(|c| c.message.as_deref()?.parse().ok())
            .unwrap_or(1);
        return Ended::Exited(code);
    }
    let message = s.message.unwrap_or_default();
    if message.contains("executable file not found")
        || message.contains("no such file or directory")
    {
        return Ended::NoProgram;
    }
    Ended::Failed(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 61 item 1: an exec the API server cannot open (it cannot reach the kubelet, HTTP
    /// 500, a Status with no reason as kube-apiserver sends it) is one sentence naming the
    /// layer, never kube's `Debug` of the Status.
    #[test]
    fn an_exec_that_cannot_start_is_a_sentence_not_a_debug_form() {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "no preferred addresses found; known addresses: []", "code": 500
        }))
        .unwrap();
        let e = kube::Error::Api(Box::new(status.clone()));
        let said = failed(&e);
        assert_eq!(
            said,
            "the API server could not reach the kubelet of the pod's node to exec (no preferred \
             addresses found; known addresses: [], HTTP 500); `kubectl exec` fails the same way"
        );
        for debug in ["Status {", "ListMeta", "Some(", "ApiError"] {
            assert!(!said.contains(debug), "{said}");
        }
        // Any other kind of error goes through the one renderer, which drops an empty reason.
        let mut s = status;
        s.code = 404;
        let said = failed(&kube::Error::Api(Box::new(s)));
        assert_eq!(
            said,
            "no preferred addresses found; known addresses: [] (HTTP 404)"
        );
    }
}
