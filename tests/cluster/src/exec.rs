//! The `pods/exec` subresource over WebSocket, as kube-apiserver serves it since 1.31
//! (`TranslateStreamCloseWebsocketRequests`), with a simulated container behind it.
//!
//! The wire, as upstream has it:
//! * `staging/src/k8s.io/apimachinery/pkg/util/remotecommand/constants.go`: the subprotocols
//!   `v5.channel.k8s.io` (adds the client's CLOSE signal for stdin, channel 255) and `v4.channel.k8s.io` (the
//!   error channel carries a JSON `metav1.Status`). The server takes the first protocol of the
//!   client's `Sec-WebSocket-Protocol` list it supports (`apiserver/pkg/util/wsstream/conn.go`
//!   `handshake`); a request offering neither gets 400.
//! * Every binary message starts with its channel byte: 0 stdin, 1 stdout, 2 stderr, 3 error,
//!   4 resize.
//! * `pkg/kubelet/cri/streaming/remotecommand/websocket.go` + `httpstream.go` `writeStatus`:
//!   success is `{"status":"Success"}`; a non-zero exit is `Failure`, reason `NonZeroExitCode`,
//!   `details.causes[0] = {reason: ExitCode, message: "<code>"}`.
//! * `pkg/registry/core/pod/strategy.go` `ExecLocation`: the container must be named when the
//!   pod has several, must exist, and the pod must be bound (400 otherwise); the kubelet refuses
//!   a container that is not running (`container not found`).
//! * Authorization: a WebSocket exec is a GET, but since 1.31 it needs `create` on `pods/exec`
//!   (`AuthorizePodWebsocketUpgradeCreatePermission`, on by default).
//!
//! The simulated container answers from the pod itself. It has the programs its image has
//! (`Scenario::image_tools`): `env`, `printenv [NAME]`, `cat /proc/1/environ`, `nvidia-smi`
//! (its answer in prometheus.rs), and the checks
//! kubectl-tfjob's `probe` runs as `python3 -c SCRIPT MODE ARGS…` or `sh -c SCRIPT MODE ARGS…`
//! (the shell script answering only as far as the image's other programs let it: `getent`,
//! `bash` with `timeout` or `nc`, `curl`, `sha256sum`).
//! For those it does not interpret the script: it answers MODE the way the script answers in a
//! real pod (the plugin's own tests run the scripts under a real python3 and sh), from the
//! cluster's state: the environment the kubelet gave the container at its start (so a Secret
//! changed later is not seen), name resolution as CoreDNS does it (a headless Service resolves
//! to its Ready pods only), TCP connects that succeed only to a Running pod declaring the port,
//! and the model gateway of [`crate::scenario::Scenario::gateway_key`].

use std::sync::Arc;

use bytes::Bytes;
use futures::SinkExt;
use http_body_util::{BodyExt, Empty};
use hyper::Response;
use hyper::upgrade::OnUpgrade;
use serde_json::{Value, json};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Message, Role};

use crate::http::{Body, Target};
use crate::state::Shared;
use crate::status::{self, ApiError};

const V5: &str = "v5.channel.k8s.io";
const V4: &str = "v4.channel.k8s.io";
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;

/// What one exec produced.
#[derive(Debug, PartialEq)]
pub(crate) struct Outcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The exit code; `Err(message)` when the runtime could not start the command.
    pub exit: Result<i32, String>,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome {
            stdout: vec![],
            stderr: vec![],
            exit: Ok(0),
        }
    }
}

/// The repeated `command=` values of the query, in order (the shared parser keeps only the last).
fn commands(query: &str) -> Vec<String> {
    query
        .split('&')
        .filter_map(|p| p.strip_prefix("command="))
        .map(crate::http::pct_decode)
        .collect()
}

/// Serves one `GET …/pods/NAME/exec` with an `Upgrade: websocket` header. Checks the pod and
/// container first (plain HTTP errors, as the API server answers before upgrading), then
/// answers 101 and runs the command on the upgraded connection.
pub(crate) fn serve(
    sh: &Arc<Shared>,
    t: &Target,
    query: &str,
    headers: &hyper::HeaderMap,
    upgrade: Option<OnUpgrade>,
) -> Result<Response<Body>, ApiError> {
    let ns = t.namespace.as_deref().unwrap_or("default");
    let name = t.name.as_deref().unwrap_or("");
    let Some(upgrade) = upgrade.filter(|_| is_websocket(headers)) else {
        return Err(status::bad_request(
            "Upgrade request required (this test cluster serves pods/exec over WebSocket only)",
        ));
    };
    let offered = headers
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(protocol) = offered
        .split(',')
        .map(str::trim)
        .find(|p| *p == V5 || *p == V4)
    else {
        return Err(status::bad_request(format!(
            "unable to upgrade: no supported subprotocol in {offered:?} (want {V5} or {V4})"
        )));
    };
    let pod = sh
        .store
        .get("pods", ns, name)
        .ok_or_else(|| status::not_found("pods", "", name))?;
    let q = crate::http::parse_query(query);
    let container = container_of(&pod, q.get("container").map(String::as_str))?;
    let argv = commands(query);
    if argv.is_empty() {
        return Err(status::bad_request("you must specify at least 1 command"));
    }
    if pod["spec"]["nodeName"].as_str().unwrap_or("").is_empty() {
        return Err(status::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    if !running(&pod, &container) {
        return Err(status::bad_request(format!(
            "unable to upgrade connection: container not found (\"{container}\")"
        )));
    }
    let key = headers
        .get("sec-websocket-key")
        .map(|k| tokio_tungstenite::tungstenite::handshake::derive_accept_key(k.as_bytes()))
        .unwrap_or_default();
    let outcome = run(sh, &pod, &container, &argv);
    tokio::spawn(async move {
        let Ok(io) = upgrade.await else { return };
        let io = hyper_util::rt::TokioIo::new(io);
        let mut ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
        let frame = |ch: u8, data: &[u8]| {
            let mut b = Vec::with_capacity(data.len() + 1);
            b.push(ch);
            b.extend_from_slice(data);
            Message::Binary(b.into())
        };
        // The kubelet streams output in pieces; 32 KiB frames keep big outputs realistic.
        for chunk in outcome.stdout.chunks(32 * 1024) {
            if ws.send(frame(STDOUT, chunk)).await.is_err() {
                return;
            }
        }
        for chunk in outcome.stderr.chunks(32 * 1024) {
            if ws.send(frame(STDERR, chunk)).await.is_err() {
                return;
            }
        }
        let status = exit_status(&outcome.exit);
        let _ = ws.send(frame(ERROR, status.to_string().as_bytes())).await;
        // The streams end with the connection: a normal close (1000), which client-go reads as
        // EOF on every stream (a close without a code, 1005, is an error to it). v5's CLOSE
        // signal runs the other way, from the client for stdin.
        let _ = ws
            .close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            }))
            .await;
    });
    Ok(Response::builder()
        .status(101)
        .header("Upgrade", "websocket")
        .header("Connection", "Upgrade")
        .header("Sec-WebSocket-Accept", key)
        .header("Sec-WebSocket-Protocol", protocol)
        .body(
            Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed(),
        )
        .unwrap())
}

fn is_websocket(headers: &hyper::HeaderMap) -> bool {
    headers
        .get("upgrade")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The Status the error channel carries (`writeStatus` in the kubelet's remotecommand).
fn exit_status(exit: &Result<i32, String>) -> Value {
    match exit {
        Ok(0) => json!({"metadata": {}, "status": "Success"}),
        Ok(code) => json!({
            "metadata": {}, "status": "Failure",
            "message": format!("command terminated with non-zero exit code: error executing command, exit code {code}"),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
        }),
        Err(message) => json!({
            "metadata": {}, "status": "Failure", "message": message,
            "reason": "InternalError", "code": 500,
        }),
    }
}

/// The container the exec names, or the only one (`ExecLocation`'s rule).
fn container_of(pod: &Value, named: Option<&str>) -> Result<String, ApiError> {
    let names: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or("");
    match named.filter(|n| !n.is_empty()) {
        Some(n) if names.contains(&n) => Ok(n.to_string()),
        Some(n) => Err(status::bad_request(format!(
            "container {n} is not valid for pod {pod_name}"
        ))),
        None if names.len() == 1 => Ok(names[0].to_string()),
        None => Err(status::bad_request(format!(
            "a container name must be specified for pod {pod_name}, choose one of: [{}]",
            names.join(" ")
        ))),
    }
}

fn running(pod: &Value, container: &str) -> bool {
    pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| s["name"] == container && s["state"]["running"].is_object())
}

fn container_spec<'a>(pod: &'a Value, container: &str) -> &'a Value {
    pod["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == container))
        .unwrap_or(&Value::Null)
}

/// The programs the container's image has.
fn tools(sh: &Shared, image: &str) -> Vec<String> {
    match sh
        .scenario
        .image_tools
        .iter()
        .find(|t| !t.image.is_empty() && image.contains(&t.image))
    {
        Some(t) => t.tools.clone(),
        None => crate::scenario::DEFAULT_TOOLS
            .iter()
            .map(|s| s.to_string())
            .collect(),
    }
}

/// Runs `argv` in the simulated container.
pub(crate) fn run(sh: &Shared, pod: &Value, container: &str, argv: &[String]) -> Outcome {
    let image = container_spec(pod, container)["image"]
        .as_str()
        .unwrap_or("");
    let have = tools(sh, image);
    let program = argv[0].rsplit('/').next().unwrap_or("");
    if !have.iter().any(|t| t == program) {
        // containerd's wording for a program missing from the image (runc's exec error).
        return Outcome {
            exit: Err(format!(
                "Internal error occurred: error executing command in container: failed to exec in \
                 container: failed to start exec: OCI runtime exec failed: exec failed: unable to \
                 start container process: exec: \"{}\": executable file not found in $PATH: unknown",
                argv[0]
            )),
            ..Outcome::default()
        };
    }
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let env = sh
        .container_env
        .lock()
        .unwrap()
        .get(&(ns.to_string(), name.to_string(), container.to_string()))
        .cloned()
        .unwrap_or_default();
    let lookup = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let ok = |stdout: String| Outcome {
        stdout: stdout.into_bytes(),
        exit: Ok(0),
        ..Outcome::default()
    };
    match (program, argv.get(1).map(String::as_str)) {
        ("env", None) | ("printenv", None) => ok(env
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect::<String>()),
        ("printenv", Some(var)) => match lookup(var) {
            Some(v) => ok(format!("{v}\n")),
            None => Outcome {
                exit: Ok(1),
                ..Outcome::default()
            },
        },
        ("cat", Some("/proc/1/environ")) => ok(env
            .iter()
            .map(|(k, v)| format!("{k}={v}\0"))
            .collect::<String>()),
        ("python3" | "sh", Some("-c")) if argv.len() >= 4 => {
            let mode = argv[3].as_str();
            let args = &argv[4..];
            // python3 does every check itself; the shell script needs the image's programs
            // (inpod.sh): sha256sum for fingerprints, getent to resolve, bash's /dev/tcp under
            // timeout or nc to connect, curl for the gateway.
            let by_python = program == "python3";
            let has = |tool: &str| by_python || have.iter().any(|t| t == tool);
            match mode {
                "env" => ok(probe_env(&lookup, args, has("sha256sum"))),
                "peers" if !has("getent") => ok("missing=getent\n".into()),
                "peers" => ok(probe_peers(
                    sh,
                    ns,
                    args,
                    (has("bash") && has("timeout")) || has("nc"),
                )),
                "gateway" | "chat" if !has("curl") => ok("missing=curl\n".into()),
                "gateway" | "chat" if by_python && illegal_header(&lookup, args) => {
                    python_header_error(&lookup, mode, args)
                }
                "gateway" | "chat" => ok(probe_gateway(sh, &lookup, mode, args)),
                "gpus" => ok(probe_gpus(sh, pod, container)),
                _ => Outcome {
                    stderr: format!("{program}: unknown probe mode {mode:?}\n").into_bytes(),
                    exit: Ok(2),
                    ..Outcome::default()
                },
            }
        }
        // `top`'s GPU reading, for an image that has it (imageTools).
        ("nvidia-smi", _) => {
            let (stdout, code) =
                crate::prometheus::nvidia_smi(sh, pod, container_spec(pod, container));
            Outcome {
                stdout: stdout.into_bytes(),
                exit: Ok(code),
                ..Outcome::default()
            }
        }
        _ => Outcome {
            stderr: format!("{program}: this simulated image runs only env, printenv, cat /proc/1/environ and the probe checks\n").into_bytes(),
            exit: Ok(127),
            ..Outcome::default()
        },
    }
}

fn fingerprint(value: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, value.as_bytes());
    d.as_ref()[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// `env ENVIRON SECRET_VAR… -- PLAIN_VAR…`: `value=NAME:VALUE` for plain variables,
/// `fp=NAME:HEX8` (the SHA-256 of the value) for secret ones, `absent=NAME` for either.
/// Without `sha256sum` (the shell script's only way to hash) a fingerprint is `no-tool`.
fn probe_env(lookup: &dyn Fn(&str) -> Option<String>, args: &[String], hashes: bool) -> String {
    let mut out = String::new();
    let mut plain = false;
    for a in args.iter().skip(1) {
        if a == "--" {
            plain = true;
            continue;
        }
        match lookup(a) {
            None => out += &format!("absent={a}\n"),
            Some(v) if plain => out += &format!("value={a}:{}\n", v.replace('\n', " ")),
            Some(_) if !hashes => out += &format!("fp={a}:no-tool\n"),
            Some(v) => out += &format!("fp={a}:{}\n", fingerprint(&v)),
        }
    }
    out
}

/// `peers TIMEOUT HOST:PORT…`: one line per peer, `peer=HOST:PORT resolve=… connect=…`;
/// `connect=no-tool` for a resolved peer when the image has nothing to connect with.
fn probe_peers(sh: &Shared, ns: &str, args: &[String], connects: bool) -> String {
    let mut out = String::new();
    // The pods of each namespace asked about, listed once for all the peers (a 64-replica
    // job asks 64 names of every pod).
    let mut pods_of = std::collections::HashMap::new();
    for a in args.iter().skip(1) {
        let Some((host, port)) = a.rsplit_once(':') else {
            out += &format!("peer={a} resolve=error:bad-address connect=skipped\n");
            continue;
        };
        let port: i64 = port.parse().unwrap_or(-1);
        let (resolve, connect) = match resolve(sh, ns, host, &mut pods_of) {
            None => ("nxdomain".to_string(), "skipped".to_string()),
            Some(_) if !connects => ("ok".to_string(), "no-tool".to_string()),
            Some(pods) => {
                let open = pods.iter().any(|p| listens(p, port));
                (
                    "ok".to_string(),
                    if open { "ok" } else { "refused" }.to_string(),
                )
            }
        };
        out += &format!("peer={a} resolve={resolve} connect={connect}\n");
    }
    out
}

/// CoreDNS's answer for `host` asked from namespace `ns`: the pods behind the Service
/// (`NAME`, `NAME.NS`, `NAME.NS.svc`, `NAME.NS.svc.cluster.local`), or the one pod of
/// `HOSTNAME.SUBDOMAIN.NS.svc` (coredns `plugin/kubernetes` pod hostname records of a headless
/// Service's endpoints). A headless Service publishes
/// only Ready pods (unless `publishNotReadyAddresses`); no ready pod is NXDOMAIN.
fn resolve(
    sh: &Shared,
    ns: &str,
    host: &str,
    pods_of: &mut std::collections::HashMap<String, Vec<Value>>,
) -> Option<Vec<Value>> {
    let host = host.trim_end_matches('.');
    let host = host.strip_suffix(".cluster.local").unwrap_or(host);
    let host = host.strip_suffix(".svc").unwrap_or(host);
    // `<hostname>.<subdomain>.<ns>`: the pod whose spec.hostname and spec.subdomain these are,
    // behind the headless Service named as the subdomain (CoreDNS's pod records, as a JobSet's
    // pods are addressed).
    let parts: Vec<&str> = host.split('.').collect();
    let (svc_name, svc_ns, hostname) = match parts.as_slice() {
        [svc] => (*svc, ns, None),
        [svc, svc_ns] => (*svc, *svc_ns, None),
        [hostname, svc, svc_ns] => (*svc, *svc_ns, Some(*hostname)),
        _ => return None,
    };
    let svc = sh.store.get("services", svc_ns, svc_name)?;
    let selector = svc["spec"]["selector"].as_object()?.clone();
    let publish_not_ready = svc["spec"]["publishNotReadyAddresses"] == true;
    let pods = pods_of
        .entry(svc_ns.to_string())
        .or_insert_with(|| sh.store.list("pods", Some(svc_ns)).0);
    let backing: Vec<Value> = pods
        .iter()
        .filter(|p| {
            selector
                .iter()
                .all(|(k, v)| p["metadata"]["labels"].get(k) == Some(v))
        })
        .filter(|p| publish_not_ready || ready(p))
        .filter(|p| {
            hostname
                .is_none_or(|h| p["spec"]["hostname"] == h && p["spec"]["subdomain"] == svc_name)
        })
        .cloned()
        .collect();
    (!backing.is_empty()).then_some(backing)
}

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// Something accepts connections on `port`: a running container of the pod declares it.
fn listens(pod: &Value, port: i64) -> bool {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| running(pod, c["name"].as_str().unwrap_or("")))
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .any(|p| p["containerPort"].as_i64() == Some(port))
}

/// `gateway ENVIRON BASE_VAR KEY_VAR TIMEOUT`: `gateway url=URL status=CODE models=yes|no`, or
/// `gateway url=URL error=KIND`, as the script prints it; `chat … MODEL` likewise for
/// `POST …/v1/chat/completions` (`choices=yes|no`): the gateway answers a completion with
/// `choices` for the right key and a model name.
fn probe_gateway(
    sh: &Shared,
    lookup: &dyn Fn(&str) -> Option<String>,
    mode: &str,
    args: &[String],
) -> String {
    let (path, word) = match mode {
        "chat" => ("/v1/chat/completions", "choices"),
        _ => ("/v1/models", "models"),
    };
    let (Some(base_var), Some(key_var)) = (args.get(1), args.get(2)) else {
        return format!("{mode} error=usage\n");
    };
    let Some(base) = lookup(base_var).filter(|b| !b.is_empty()) else {
        return format!("{mode} error=no-base-url var={base_var}\n");
    };
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let Some(expected) = &sh.scenario.gateway_key else {
        return format!("{mode} url={url} error=dns\n");
    };
    let key = lookup(key_var).unwrap_or_default();
    let path = url.split_once("://").map(|(_, r)| r).unwrap_or(&url);
    let path = path.find('/').map(|i| &path[i..]).unwrap_or("/");
    if path.contains("/v1/v1/") {
        return format!("{mode} url={url} status=404 {word}=no\n");
    }
    if key != *expected {
        return format!("{mode} url={url} status=401 {word}=no\n");
    }
    // An OpenAI-compatible gateway answers 400 to a completion without a model.
    if mode == "chat" && args.get(4).is_none_or(|m| m.is_empty()) {
        return format!("{mode} url={url} status=400 {word}=no\n");
    }
    format!("{mode} url={url} status=200 {word}=yes\n")
}

/// Whether python's http.client refuses `Bearer KEY` as a header value: a newline not
/// followed by a space or tab, or a CR not followed by one of those or a newline
/// (cpython Lib/http/client.py `_is_illegal_header_value`, checked in `putheader`). A Secret
/// made with `kubectl create secret --from-file` keeps the file's last newline.
fn illegal_header(lookup: &dyn Fn(&str) -> Option<String>, args: &[String]) -> bool {
    let Some(key) = args.get(2).and_then(|v| lookup(v)) else {
        return false;
    };
    let b = key.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        let next = b.get(i + 1).copied();
        (c == b'\n' && !matches!(next, Some(b' ' | b'\t')))
            || (c == b'\r' && !matches!(next, Some(b' ' | b'\t' | b'\n')))
    })
}

/// What the python check prints for such a key: it looks before sending, so the key is
/// never quoted (inpod.py `request`).
fn python_header_error(
    lookup: &dyn Fn(&str) -> Option<String>,
    mode: &str,
    args: &[String],
) -> Outcome {
    let path = if mode == "chat" {
        "/v1/chat/completions"
    } else {
        "/v1/models"
    };
    let base = args.get(1).and_then(|v| lookup(v)).unwrap_or_default();
    Outcome {
        stdout: format!(
            "{mode} url={}{path} error=header\n",
            base.trim_end_matches('/')
        )
        .into_bytes(),
        exit: Ok(0),
        ..Outcome::default()
    }
}

/// The GPU check's answer (`gpus devices=N driver=M|none`): the container's requested
/// `nvidia.com/gpu` as device files, or what the scenario's `gpuDevices` says; the driver lists
/// as many GPUs as there are devices (none without any).
fn probe_gpus(sh: &Shared, pod: &Value, container: &str) -> String {
    let requested = crate::prometheus::requested(container_spec(pod, container));
    let devices = sh.scenario.gpu_devices.map_or(requested, u64::from);
    let driver = if devices == 0 {
        "none".to_string()
    } else {
        devices.to_string()
    };
    format!("gpus devices={devices} driver={driver}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_is_the_kubelets() {
        assert_eq!(exit_status(&Ok(0))["status"], "Success");
        let s = exit_status(&Ok(3));
        assert_eq!(s["reason"], "NonZeroExitCode");
        assert_eq!(s["details"]["causes"][0]["message"], "3");
        assert_eq!(exit_status(&Err("x".into()))["reason"], "InternalError");
    }

    #[test]
    fn repeated_commands_keep_their_order() {
        assert_eq!(
            commands("command=sh&container=c&command=-c&command=echo%20hi"),
            ["sh", "-c", "echo hi"]
        );
    }

    #[test]
    fn env_mode_fingerprints_secrets_and_prints_plain_values() {
        let env = [
            ("K".to_string(), "secret".to_string()),
            ("B".into(), "https://x/api".into()),
        ];
        let lookup = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let args: Vec<String> = ["/proc/1/environ", "K", "--", "B", "TF_CONFIG"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let out = probe_env(&lookup, &args, true);
        assert!(!out.contains("secret"), "{out}");
        assert!(
            out.contains(&format!("fp=K:{}", fingerprint("secret"))),
            "{out}"
        );
        assert!(out.contains("value=B:https://x/api"), "{out}");
        assert!(out.contains("absent=TF_CONFIG"), "{out}");
    }
}
