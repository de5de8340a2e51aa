//! The `pods/log` subresource, as kube-apiserver proxies it to the kubelet.
//!
//! Upstream behaviour modelled here (kubernetes/kubernetes):
//! * `pkg/registry/core/pod/strategy.go` `LogLocation`: the container must be named when the pod
//!   has several (`a container name must be specified for pod P, choose one of: [a b]`), a named
//!   container must exist (`container C is not valid for pod P`), both 400; a pod without a node
//!   gets an empty 200 (nil location).
//! * `pkg/kubelet/kubelet_pods.go` `validateContainerLogStatus`: `previous` serves the
//!   `lastState.terminated` instance (else `previous terminated container "C" in pod "P" not
//!   found`); otherwise running → current, terminated → current, waiting with a last
//!   termination → that one, waiting → `container "C" in pod "P" is waiting to start: REASON`.
//!   The apiserver returns these as 400 BadRequest.
//! * `pkg/kubelet/kuberuntime/logs/logs.go`: `tailLines` picks the last N lines first, then lines
//!   before `since` (the later of sinceSeconds/sinceTime) are skipped; `timestamps` prefixes each
//!   line with `RFC3339NanoFixed` (9 fractional digits) and a space; `limitBytes` cuts the output
//!   (mid-line); `follow` streams until the container instance stops running.
//!
//! Each container keeps its instances by container ID (the previous one is what `previous`
//! reaches);
//! a recreated pod (new uid, same name) starts with no log.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Response;
use serde_json::{Value, json};

use crate::http::{Body, Ctx, Target, text_response};
use crate::state::Shared;
use crate::status::{self, ApiError};

/// One log line as the container runtime recorded it.
#[derive(Clone, Debug)]
struct Line {
    /// Nanoseconds since the Unix epoch.
    at: u128,
    text: String,
}

#[derive(Debug, Default)]
struct Instance {
    id: u64,
    /// The runtime's container ID (`containerd://…`), as the pod status names the instance.
    cid: String,
    /// Bumped when a test replaces the text (`set_log`): followers resend from the start.
    generation: u64,
    lines: Vec<Line>,
}

#[derive(Debug, Default)]
struct ContainerLog {
    pod_uid: String,
    /// Oldest first; at most three (previous, current, one being started).
    instances: Vec<Instance>,
    last_at: u128,
}

/// Log text of every container, plus a wake-up for followers and the scripted exits tests ask for.
#[derive(Default)]
pub(crate) struct LogStore {
    inner: Mutex<HashMap<(String, String, String), ContainerLog>>,
    next_id: Mutex<u64>,
    /// Woken on every append and restart (followers wait on it).
    pub(crate) changed: tokio::sync::Notify,
    /// Woken on scripted exits only, so idle containers are not woken by every log line.
    kill_notify: tokio::sync::Notify,
    /// Scripted exits: (ns, pod, container) → exit code, taken by the kubelet's container loop.
    kills: Mutex<HashMap<(String, String, String), i32>>,
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn key(ns: &str, pod: &str, c: &str) -> (String, String, String) {
    (ns.to_string(), pod.to_string(), c.to_string())
}

impl LogStore {
    /// A container instance is created (first start or restart), before the pod status names
    /// it: a new, empty current instance. A different pod uid means the pod was recreated:
    /// earlier instances are forgotten.
    pub(crate) fn start_instance(
        &self,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        cid: &str,
    ) {
        let id = {
            let mut n = self.next_id.lock().unwrap();
            *n += 1;
            *n
        };
        let mut m = self.inner.lock().unwrap();
        let e = m.entry(key(ns, pod, container)).or_default();
        if e.pod_uid != uid {
            e.instances.clear();
            e.pod_uid = uid.to_string();
        }
        e.instances.push(Instance {
            id,
            cid: cid.to_string(),
            ..Default::default()
        });
        if e.instances.len() > 3 {
            e.instances.remove(0);
        }
        drop(m);
        self.changed.notify_waiters();
    }

    /// Appends lines to the current instance, each stamped now (strictly increasing per container).
    pub(crate) fn append(&self, ns: &str, pod: &str, container: &str, text: &str) {
        let mut m = self.inner.lock().unwrap();
        let e = m.entry(key(ns, pod, container)).or_default();
        if e.instances.is_empty() {
            e.instances.push(Instance::default());
        }
        for l in text.lines() {
            let at = now_nanos().max(e.last_at + 1);
            e.last_at = at;
            let cur = e.instances.last_mut().unwrap();
            cur.lines.push(Line {
                at,
                text: l.to_string(),
            });
        }
        drop(m);
        self.changed.notify_waiters();
    }

    /// Replaces the current instance's text (tests' `set_log`).
    pub(crate) fn replace(&self, ns: &str, pod: &str, container: &str, text: &str) {
        {
            let mut m = self.inner.lock().unwrap();
            let e = m.entry(key(ns, pod, container)).or_default();
            if e.instances.is_empty() {
                e.instances.push(Instance::default());
            }
            let cur = e.instances.last_mut().unwrap();
            cur.lines.clear();
            cur.generation += 1;
        }
        self.append(ns, pod, container, text);
    }

    /// Moves the current instance's line times `by` into the past (tests' `age_log`).
    pub(crate) fn age(&self, ns: &str, pod: &str, container: &str, by: Duration) {
        let mut m = self.inner.lock().unwrap();
        if let Some(cur) = m
            .get_mut(&key(ns, pod, container))
            .and_then(|e| e.instances.last_mut())
        {
            for l in &mut cur.lines {
                l.at = l.at.saturating_sub(by.as_nanos());
            }
        }
    }

    /// Asks the kubelet to end the running container with `code` (a crash a test scripts).
    pub(crate) fn kill(&self, ns: &str, pod: &str, container: &str, code: i32) {
        self.kills
            .lock()
            .unwrap()
            .insert(key(ns, pod, container), code);
        self.kill_notify.notify_waiters();
    }

    /// The kubelet's side of `kill`: waits until an exit is scripted for this container.
    pub(crate) async fn killed(&self, ns: &str, pod: &str, container: &str) -> i32 {
        let k = key(ns, pod, container);
        loop {
            let notified = self.kill_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(code) = self.kills.lock().unwrap().remove(&k) {
                return code;
            }
            notified.await;
        }
    }

    /// The lines of the instance with container ID `cid` (the kubelet looks instances up by
    /// ID), else the newest (text set by a test before any start), or None.
    fn snapshot(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
        cid: &str,
    ) -> Option<(u64, u64, Vec<Line>)> {
        let m = self.inner.lock().unwrap();
        let e = m.get(&key(ns, pod, container))?;
        let inst = e
            .instances
            .iter()
            .find(|i| !cid.is_empty() && i.cid == cid)
            .or(if cid.is_empty() {
                e.instances.last()
            } else {
                None
            })?;
        Some((inst.id, inst.generation, inst.lines.clone()))
    }

    /// Lines of instance `id` from index `from`, its generation, and whether it is still the newest.
    fn since_index(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
        id: u64,
        from: usize,
    ) -> Option<(u64, Vec<Line>, bool)> {
        let m = self.inner.lock().unwrap();
        let e = m.get(&key(ns, pod, container))?;
        let pos = e.instances.iter().position(|i| i.id == id)?;
        let inst = &e.instances[pos];
        let lines = inst.lines.get(from..).unwrap_or_default().to_vec();
        Some((inst.generation, lines, pos + 1 == e.instances.len()))
    }

    /// Whole text of the current instance (for `TestCluster::log_text`).
    pub(crate) fn text(&self, ns: &str, pod: &str, container: &str) -> Option<String> {
        let m = self.inner.lock().unwrap();
        let inst = m.get(&key(ns, pod, container))?.instances.last()?;
        Some(inst.lines.iter().map(|l| format!("{}\n", l.text)).collect())
    }
}

/// `RFC3339NanoFixed`: `2006-01-02T15:04:05.000000000Z07:00` in UTC.
fn format_nanos(at: u128) -> String {
    let secs = (at / 1_000_000_000) as u64;
    let base = crate::util::format_rfc3339(UNIX_EPOCH + Duration::from_secs(secs));
    format!("{}.{:09}Z", base.trim_end_matches('Z'), at % 1_000_000_000)
}

/// `sinceTime` as `metav1.Time` parses it (RFC 3339, fractional seconds accepted).
fn parse_since_time(s: &str) -> Option<u128> {
    let secs = crate::util::parse_rfc3339(s)?;
    let frac = s.get(19..).unwrap_or("");
    let nanos = match frac.strip_prefix('.') {
        Some(f) => {
            let digits: String = f.chars().take_while(|c| c.is_ascii_digit()).collect();
            let padded = format!("{digits:0<9}");
            padded.get(..9)?.parse::<u128>().ok()?
        }
        None => 0,
    };
    Some(secs.max(0) as u128 * 1_000_000_000 + nanos)
}

struct Opts {
    tail: Option<usize>,
    since: u128,
    timestamps: bool,
    limit: Option<usize>,
    follow: bool,
    previous: bool,
}

fn bool_param(ctx: &Ctx, k: &str) -> bool {
    ctx.q.get(k).is_some_and(|v| v == "true" || v == "1")
}

fn opts(ctx: &Ctx) -> Result<Opts, ApiError> {
    let num = |k: &str| -> Result<Option<i64>, ApiError> {
        match ctx.q.get(k) {
            None => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
                status::bad_request(format!("{k}: Invalid value: {v:?}: must be an integer"))
            }),
        }
    };
    let tail = num("tailLines")?;
    let limit = num("limitBytes")?;
    let since_seconds = num("sinceSeconds")?;
    // Field names and rules from pkg/apis/core/validation ValidatePodLogOptions.
    if tail.is_some_and(|t| t < 0) {
        return Err(status::bad_request(format!(
            "tailLines: Invalid value: {}: must be greater than or equal to 0",
            tail.unwrap_or(0)
        )));
    }
    if limit.is_some_and(|l| l < 1) {
        return Err(status::bad_request(format!(
            "limitBytes: Invalid value: {}: must be greater than 0",
            limit.unwrap_or(0)
        )));
    }
    if since_seconds.is_some_and(|s| s < 1) {
        return Err(status::bad_request(format!(
            "sinceSeconds: Invalid value: {}: must be greater than 0",
            since_seconds.unwrap_or(0)
        )));
    }
    let since_time = ctx.q.get("sinceTime").map(|s| s.as_str());
    if since_seconds.is_some() && since_time.is_some() {
        return Err(status::bad_request(
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ));
    }
    let mut since = 0u128;
    if let Some(s) = since_seconds {
        since = now_nanos().saturating_sub(s as u128 * 1_000_000_000);
    }
    if let Some(t) = since_time {
        since = parse_since_time(t).ok_or_else(|| {
            status::bad_request(format!(
                "parsing time {t:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse"
            ))
        })?;
    }
    Ok(Opts {
        tail: tail.map(|t| t as usize),
        since,
        timestamps: bool_param(ctx, "timestamps"),
        limit: limit.map(|l| l as usize),
        follow: bool_param(ctx, "follow"),
        previous: bool_param(ctx, "previous"),
    })
}

/// Renders lines per the options; returns the text and the bytes budget left.
fn render(lines: &[Line], o: &Opts, budget: &mut Option<usize>) -> String {
    let mut out = String::new();
    for l in lines {
        if l.at < o.since {
            continue;
        }
        let mut s = if o.timestamps {
            format!("{} {}\n", format_nanos(l.at), l.text)
        } else {
            format!("{}\n", l.text)
        };
        if let Some(b) = budget {
            if *b == 0 {
                break;
            }
            if s.len() > *b {
                let mut cut = *b;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
            }
            *b -= s.len();
        }
        out.push_str(&s);
    }
    out
}

fn container_state(pod: &Value, container: &str) -> Option<Value> {
    pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == json!(container)).cloned())
}

pub(crate) fn pod_log(ctx: &Ctx, t: &Target) -> Result<Response<Body>, ApiError> {
    let ns = t.namespace.clone().unwrap_or_default();
    let name = t.name.clone().unwrap_or_default();
    let pod = ctx
        .sh
        .store
        .get("pods", &ns, &name)
        .ok_or_else(|| status::not_found("pods", "", &name))?;
    let o = opts(ctx)?;
    let names: Vec<String> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(String::from))
        .collect();
    let container = match ctx.q.get("container").filter(|c| !c.is_empty()) {
        Some(c) => {
            if !names.contains(c) {
                return Err(status::bad_request(format!(
                    "container {c} is not valid for pod {name}"
                )));
            }
            c.clone()
        }
        None if names.len() == 1 => names[0].clone(),
        None => {
            return Err(status::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                names.join(" ")
            )));
        }
    };
    // strategy.go: no node yet → nil location → an empty log.
    if pod["spec"]["nodeName"].as_str().unwrap_or("").is_empty() {
        return Ok(text_response(200, String::new()));
    }
    let cs = container_state(&pod, &container);
    let cs = cs.unwrap_or_else(|| json!({"state": {"waiting": {"reason": "ContainerCreating"}}}));
    let has_last = cs["lastState"].get("terminated").is_some();
    let state = &cs["state"];
    // validateContainerLogStatus: which instance (by container ID), or why none.
    let last_cid = cs["lastState"]["terminated"]["containerID"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let cid = if o.previous {
        if !has_last {
            return Err(status::bad_request(format!(
                "previous terminated container {container:?} in pod {name:?} not found"
            )));
        }
        last_cid
    } else if state.get("running").is_some() || state.get("terminated").is_some() {
        cs["containerID"].as_str().unwrap_or("").to_string()
    } else if has_last {
        last_cid
    } else {
        let reason = state["waiting"]["reason"]
            .as_str()
            .unwrap_or("ContainerCreating");
        return Err(status::bad_request(format!(
            "container {container:?} in pod {name:?} is waiting to start: {reason}"
        )));
    };
    let Some((id, generation, mut lines)) = ctx.sh.logs.snapshot(&ns, &name, &container, &cid)
    else {
        return Ok(text_response(200, String::new()));
    };
    // Everything up to here counts as sent: following resumes after the snapshot's last line.
    let sent = lines.len();
    if let Some(n) = o.tail {
        let start = lines.len().saturating_sub(n);
        lines.drain(..start);
    }
    let mut budget = o.limit;
    let first = render(&lines, &o, &mut budget);
    // Only the running, current instance is followed; anything else is complete already.
    let live = o.follow && !o.previous && state.get("running").is_some();
    if !live || budget == Some(0) {
        return Ok(text_response(200, first));
    }
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_string();
    Ok(follow_log(
        ctx.sh.clone(),
        Follow {
            ns,
            pod: name,
            uid,
            container,
            id,
            generation,
            sent,
            budget,
            opts: o,
        },
        first,
    ))
}

struct Follow {
    ns: String,
    pod: String,
    uid: String,
    container: String,
    id: u64,
    generation: u64,
    sent: usize,
    budget: Option<usize>,
    opts: Opts,
}

/// Streams new lines of one container instance until it stops running, the pod goes or the
/// client hangs up. The channel is small, so a slow reader holds the server back (as a TCP
/// window would) instead of making it buffer.
fn follow_log(sh: Arc<Shared>, mut f: Follow, first: String) -> Response<Body> {
    use hyper::body::Frame;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(4);
    tokio::spawn(async move {
        if !first.is_empty() && tx.send(Ok(Frame::data(Bytes::from(first)))).await.is_err() {
            return;
        }
        loop {
            let notified = sh.logs.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let Some((generation, new, newest)) =
                sh.logs
                    .since_index(&f.ns, &f.pod, &f.container, f.id, f.sent)
            else {
                return;
            };
            let new = if generation != f.generation {
                f.generation = generation;
                f.sent = 0;
                sh.logs
                    .since_index(&f.ns, &f.pod, &f.container, f.id, 0)
                    .map(|(_, l, _)| l)
                    .unwrap_or_default()
            } else {
                new
            };
            f.sent += new.len();
            let text = render(&new, &f.opts, &mut f.budget);
            if !text.is_empty() && tx.send(Ok(Frame::data(Bytes::from(text)))).await.is_err() {
                return;
            }
            if f.budget == Some(0) || !newest {
                return;
            }
            let running = sh
                .store
                .get("pods", &f.ns, &f.pod)
                .filter(|p| p["metadata"]["uid"] == json!(f.uid))
                .and_then(|p| container_state(&p, &f.container))
                .is_some_and(|c| c["state"].get("running").is_some());
            if !running {
                // Lines written before the exit were picked up above; the instance is done.
                return;
            }
            // Pod status changes do not notify the log store: re-check now and then.
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = tx.closed() => return,
            }
        }
    });
    Response::builder()
        .status(200)
        .header("Content-Type", "text/plain")
        .body(
            http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx))
                .boxed(),
        )
        .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_have_nine_fractional_digits() {
        let at = 1_764_547_200_000_000_000u128 + 1_500;
        assert_eq!(format_nanos(at), "2025-12-01T00:00:00.000001500Z");
        assert_eq!(parse_since_time("2025-12-01T00:00:00.0000015Z"), Some(at));
        assert_eq!(
            parse_since_time("2025-12-01T00:00:00Z"),
            Some(1_764_547_200_000_000_000)
        );
    }

    #[test]
    fn limit_bytes_cuts_mid_line_and_since_skips_older_lines() {
        let lines = vec![
            Line {
                at: 10,
                text: "old".into(),
            },
            Line {
                at: 20,
                text: "abcdef".into(),
            },
            Line {
                at: 30,
                text: "more".into(),
            },
        ];
        let o = Opts {
            tail: None,
            since: 15,
            timestamps: false,
            limit: Some(4),
            follow: false,
            previous: false,
        };
        let mut budget = o.limit;
        assert_eq!(render(&lines, &o, &mut budget), "abcd");
        assert_eq!(budget, Some(0));
    }
}
