//! The `pods/log` subresource: kubelet log text, `tailLines`, `follow`.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Response;
use serde_json::json;

use crate::http::{Body, Ctx, Target, text_response};
use crate::state::Shared;
use crate::status::{self, ApiError};

pub(crate) fn pod_log(ctx: &Ctx, t: &Target) -> Result<Response<Body>, ApiError> {
    let ns = t.namespace.clone().unwrap_or_default();
    let name = t.name.clone().unwrap_or_default();
    let pod = ctx
        .sh
        .store
        .get("pods", &ns, &name)
        .ok_or_else(|| status::not_found("pods", "", &name))?;
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
    let cs = pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == json!(container)).cloned());
    let started = cs.as_ref().is_some_and(|c| {
        c["state"].get("waiting").is_none()
            || c["restartCount"].as_i64().unwrap_or(0) > 0
            || c["lastState"].get("terminated").is_some()
    });
    if !started {
        let reason = cs
            .as_ref()
            .and_then(|c| c["state"]["waiting"]["reason"].as_str().map(String::from))
            .unwrap_or_else(|| "ContainerCreating".into());
        return Err(status::bad_request(format!(
            "container {container:?} in pod {name:?} is waiting to start: {reason}"
        )));
    }
    let full = ctx.sh.log_text(&ns, &name, &container).unwrap_or_default();
    let seen = full.len();
    let text = full;
    let text = match ctx.q.get("tailLines").and_then(|n| n.parse::<usize>().ok()) {
        Some(n) => {
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(n);
            let mut s = lines[start..].join("\n");
            if !s.is_empty() {
                s.push('\n');
            }
            s
        }
        None => text,
    };
    if ctx.q.get("follow").is_some_and(|f| f == "true" || f == "1") {
        return Ok(follow_log(ctx.sh.clone(), ns, name, container, text, seen));
    }
    Ok(text_response(200, text))
}

/// `follow=true`: stream new log text until the container stops for good or the pod goes.
fn follow_log(
    sh: Arc<Shared>,
    ns: String,
    pod: String,
    container: String,
    first: String,
    mut seen: usize,
) -> Response<Body> {
    use hyper::body::Frame;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(16);
    tokio::spawn(async move {
        if !first.is_empty() && tx.send(Ok(Frame::data(Bytes::from(first)))).await.is_err() {
            return;
        }
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let text = sh.log_text(&ns, &pod, &container).unwrap_or_default();
            if text.len() < seen {
                seen = 0; // replaced via set_log: send it all again
            }
            if text.len() > seen {
                let new = text.get(seen..).unwrap_or(&text).to_string();
                if tx.send(Ok(Frame::data(Bytes::from(new)))).await.is_err() {
                    return;
                }
                seen = text.len();
            }
            let Some(p) = sh.store.get("pods", &ns, &pod) else {
                return;
            };
            let done = p["status"]["containerStatuses"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["name"] == json!(container)))
                .is_some_and(|c| c["state"].get("terminated").is_some());
            if done || tx.is_closed() {
                return;
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
