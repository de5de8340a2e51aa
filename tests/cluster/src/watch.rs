//! Watch streams: newline-delimited JSON events, flushed one per chunk, with
//! bookmarks, timeouts, the 410 Expired ERROR event, and injected stream faults.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::Response;
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::http::{Body, Ctx, Filters, Target, error_response, filters};
use crate::resources::ResourceInfo;
use crate::status;
use crate::store::{EventType, StoreEvent};

fn line(kind: &str, obj: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&json!({"type": kind, "object": obj})).unwrap();
    v.push(b'\n');
    Bytes::from(v)
}

fn bookmark(info: &ResourceInfo, rv: u64, initial_end: bool) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": meta})
}

/// A watch line built around the event's shared serialization of its object.
fn shared_line(kind: &str, ev: &StoreEvent) -> Bytes {
    let body = ev
        .json
        .get_or_init(|| Bytes::from(serde_json::to_vec(&*ev.object).unwrap()));
    let mut v = Vec::with_capacity(body.len() + 40);
    v.extend_from_slice(b"{\"type\":\"");
    v.extend_from_slice(kind.as_bytes());
    v.extend_from_slice(b"\",\"object\":");
    v.extend_from_slice(body);
    v.extend_from_slice(b"}\n");
    Bytes::from(v)
}

/// What one store event becomes for a watcher with selectors (None: not visible).
fn translate(ev: &StoreEvent, f: &Filters) -> Option<(&'static str, Arc<Value>)> {
    let m = |o: &Value| f.labels.matches(o) && f.fields.matches(o);
    let now = m(&ev.object);
    match ev.kind {
        EventType::Modified => {
            let before = ev.old.as_deref().map(m).unwrap_or(true);
            match (before, now) {
                (true, true) => Some(("MODIFIED", ev.object.clone())),
                (false, true) => Some(("ADDED", ev.object.clone())),
                (true, false) => Some(("DELETED", ev.object.clone())),
                (false, false) => None,
            }
        }
        k => now.then(|| (k.as_str(), ev.object.clone())),
    }
}

fn expired_line(rv: &str, oldest: u64) -> Bytes {
    line("ERROR", &status::expired(rv, oldest).body)
}

/// Starts a watch response.
#[allow(unused_assignments)]
pub(crate) fn watch(ctx: &Ctx, info: &ResourceInfo, t: &Target) -> Response<Body> {
    let mut f = match filters(ctx, info) {
        Ok(f) => f,
        Err(e) => return error_response(&e),
    };
    if let Some(name) = &t.name {
        // Legacy /watch/.../name paths watch one object.
        f.fields = crate::selectors::FieldSelector::parse(
            &info.plural,
            &info.kind,
            &format!("metadata.name={name}"),
        )
        .unwrap_or_default();
    }
    let store = &ctx.sh.store;
    let rv_param = ctx.q.get("resourceVersion").cloned().unwrap_or_default();
    let send_initial = ctx.q.get("sendInitialEvents").is_some_and(|s| s == "true");
    let from_rv = if send_initial || rv_param.is_empty() || rv_param == "0" {
        None
    } else {
        rv_param.parse::<u64>().ok()
    };
    let bookmarks = ctx
        .q
        .get("allowWatchBookmarks")
        .is_some_and(|b| b == "true" || b == "1");
    let timeout = ctx
        .q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1800);
    let as_table = ctx
        .accept
        .split(',')
        .next()
        .is_some_and(|a| a.contains("as=Table"));
    let ns = if info.namespaced {
        t.namespace.clone()
    } else {
        None
    };
    let close_after = ctx.decision.close_after_events;
    let bookmark_every = Duration::from_millis(ctx.sh.scenario.timing.bookmark_ms.max(10));

    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(256);
    let resp = Response::builder()
        .status(200)
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-cache, private")
        .body(StreamBody::new(ReceiverStream::new(rx)).boxed())
        .unwrap();

    if ctx.decision.gone_on_rewatch && from_rv.is_some() {
        let l = expired_line(&rv_param, store.oldest_rv());
        tokio::spawn(async move {
            let _ = tx.send(Ok(Frame::data(l))).await;
        });
        return resp;
    }
    let sub = store.watch_from(&info.plural, ns.as_deref(), from_rv);
    let info = info.clone();
    let sh = ctx.sh.clone();
    let q = ctx.q.clone();
    tokio::spawn(async move {
        let (backlog, mut brx, start_rv) = match sub {
            Ok(s) => s,
            Err(oldest) => {
                let _ = tx
                    .send(Ok(Frame::data(expired_line(&rv_param, oldest))))
                    .await;
                return;
            }
        };
        let mut sent = 0usize;
        let mut first_table = true;
        let mut last_rv = start_rv;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
        macro_rules! emit {
            ($kind:expr, $obj:expr) => {{
                let converted;
                let obj: &Value = if info.group == "events.k8s.io" {
                    converted = crate::resources::convert_out(&info, $obj);
                    &converted
                } else {
                    $obj
                };
                let l = if as_table && $kind != "ERROR" && $kind != "BOOKMARK" {
                    let rv = obj["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    let tb = crate::table::table(
                        &sh.store,
                        &info,
                        std::slice::from_ref(obj),
                        &rv,
                        &q,
                        first_table,
                    );
                    first_table = false;
                    line($kind, &tb)
                } else {
                    line($kind, obj)
                };
                if tx.send(Ok(Frame::data(l))).await.is_err() {
                    return;
                }
                if $kind != "BOOKMARK" {
                    sent += 1;
                    if close_after.is_some_and(|k| sent >= k) {
                        return;
                    }
                }
            }};
        }
        // Plain JSON watchers share one serialization per event; tables and converted
        // events.k8s.io objects are rendered per watcher.
        let plain = !as_table && info.group != "events.k8s.io";
        macro_rules! emit_event {
            ($kind:expr, $ev:expr, $obj:expr) => {{
                if plain {
                    if tx
                        .send(Ok(Frame::data(shared_line($kind, $ev))))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    sent += 1;
                    if close_after.is_some_and(|k| sent >= k) {
                        return;
                    }
                } else {
                    emit!($kind, $obj);
                }
            }};
        }
        for ev in &backlog {
            if let Some((k, o)) = translate(ev, &f) {
                emit_event!(k, ev, &o);
            }
        }
        if send_initial && bookmarks {
            emit!("BOOKMARK", &bookmark(&info, start_rv, true));
        }
        loop {
            tokio::select! {
                r = brx.recv() => match r {
                    Ok(ev) => {
                        if ev.rv <= start_rv && from_rv.is_none() {
                            continue;
                        }
                        last_rv = last_rv.max(ev.rv);
                        let ns_ok = ns.as_deref().is_none_or(|n| n == ev.namespace);
                        if ev.resource == info.plural && ns_ok && ev.rv > start_rv.min(from_rv.unwrap_or(start_rv))
                            && let Some((k, o)) = translate(&ev, &f) {
                            emit_event!(k, &ev, &o);
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // The watcher fell behind the fan-out buffer: tell it to re-list.
                        let _ = tx.send(Ok(Frame::data(expired_line(&rv_param, sh.store.oldest_rv())))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = tokio::time::sleep(bookmark_every), if bookmarks => {
                    emit!("BOOKMARK", &bookmark(&info, last_rv, false));
                }
                _ = tokio::time::sleep_until(deadline) => {
                    if bookmarks {
                        emit!("BOOKMARK", &bookmark(&info, last_rv, false));
                    }
                    return;
                }
            }
        }
    });
    resp
}
