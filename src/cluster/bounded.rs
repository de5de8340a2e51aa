//! Bounded response bodies: a layer on kube's client stack, so no reply from the API server can
//! make us hold more than a fixed amount, whichever call reads it.
//!
//! kube collects a reply whole (`Client::request_text`) and splits a watch into lines with an
//! unbounded `LinesCodec` (kube-client `client/mod.rs`, `request_events`), so a server that
//! never ends a body or a line would grow us without limit. Here:
//! - a plain reply may be at most [`REPLY`] bytes;
//! - a watch stream may run forever, but one event (one line) at most [`EVENT`] bytes;
//! - a log stream passes through: `logs` reads it in bounded chunks itself.
//!
//! Going over ends the body with [`TooLarge`], which [`super::client::is_transient`] does not
//! retry (asking again would read the same again).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::{Request, Response};

/// One watch event: no stored object is over etcd's 1.5 MiB request limit (`--max-request-bytes`,
/// `DefaultMaxRequestBytes = 1.5 * 1024 * 1024` in etcd's server/embed/config.go; a larger
/// write fails with "etcdserver: request is too large"), and an event is one object; 16 MiB is
/// ten times the largest.
pub const EVENT: usize = 16 * 1024 * 1024;

/// One reply: a page of a list (500 objects, as `list` and `check` page them) of large pods is
/// tens of MiB; 64 MiB leaves room and stays far below what would strain memory.
pub const REPLY: usize = 64 * 1024 * 1024;

/// A reply or event over its bound.
#[derive(Debug)]
pub struct TooLarge {
    pub limit: usize,
    pub event: bool,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = crate::input::human(self.limit);
        if self.event {
            write!(
                f,
                "a watch event from the API server is over {size} (no object is over 1.5 MiB); \
                 stopped reading it"
            )
        } else {
            write!(
                f,
                "the API server's reply is over {size}; stopped reading it"
            )
        }
    }
}

impl std::error::Error for TooLarge {}

/// What a request's reply is, from its URL (kube builds them as kube-apiserver serves them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reply,
    Watch,
    Log,
}

fn kind(uri: &hyper::Uri) -> Kind {
    let path = uri.path();
    let query = uri.query().unwrap_or_default();
    let watch = query
        .split('&')
        .any(|p| matches!(p, "watch=true" | "watch=1" | "watch=True"))
        || path.contains("/watch/");
    if watch {
        Kind::Watch
    } else if path.ends_with("/log") {
        Kind::Log
    } else {
        Kind::Reply
    }
}

/// The layer: wraps every reply body in a [`Capped`] one.
#[derive(Clone, Copy, Default)]
pub struct Bound;

impl<S> tower::Layer<S> for Bound {
    type Service = BoundService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        BoundService { inner }
    }
}

#[derive(Clone)]
pub struct BoundService<S> {
    inner: S,
}

impl<S, ReqBody, B> tower::Service<Request<ReqBody>> for BoundService<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<B>>,
    S::Future: Send + 'static,
{
    type Response = Response<Capped<B>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let kind = kind(req.uri());
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map(|res| res.map(|body| Capped::new(body, kind))) })
    }
}

/// A body that ends with [`TooLarge`] past its bound.
pub struct Capped<B> {
    inner: B,
    kind: Kind,
    /// Bytes of the whole reply (Reply) or since the last newline (Watch).
    run: usize,
    failed: bool,
}

impl<B> Capped<B> {
    fn new(inner: B, kind: Kind) -> Self {
        Capped {
            inner,
            kind,
            run: 0,
            failed: false,
        }
    }
}

/// Pure: the new run length after `chunk`, for a reply or a line-delimited stream.
fn advance(run: usize, chunk: &[u8], lines: bool) -> usize {
    if lines {
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(i) => chunk.len() - i - 1,
            None => run.saturating_add(chunk.len()),
        }
    } else {
        run.saturating_add(chunk.len())
    }
}

impl<B> Body for Capped<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if this.kind != Kind::Log
                    && let Some(data) = frame.data_ref()
                {
                    let limit = if this.kind == Kind::Watch {
                        EVENT
                    } else {
                        REPLY
                    };
                    this.run = advance(this.run, data, this.kind == Kind::Watch);
                    if this.run > limit {
                        this.failed = true;
                        return Poll::Ready(Some(Err(Box::new(TooLarge {
                            limit,
                            event: this.kind == Kind::Watch,
                        }))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.failed {
            SizeHint::with_exact(0)
        } else {
            self.inner.size_hint()
        }
    }
}

/// The [`TooLarge`] behind a kube error, if that is what ended it.
pub fn too_large(err: &kube::Error) -> Option<&TooLarge> {
    crate::error::find_cause(err)
}

/// One pod log read whole, at most `max` bytes of it, then the connection dropped. `Api::logs`
/// collects the body however long it is, and the layer above passes logs through (a followed
/// log is endless by design); `limitBytes` binds only a kubelet that honours it. A log that
/// never ends, or a server that ignores the limit, stops here at `max`.
pub async fn read_log(
    api: &kube::Api<k8s_openapi::api::core::v1::Pod>,
    name: &str,
    lp: &kube::api::LogParams,
    max: usize,
) -> Result<String, kube::Error> {
    use futures::AsyncReadExt;
    let stream = api.log_stream(name, lp).await?;
    let mut buf = Vec::new();
    stream
        .take(max as u64)
        .read_to_end(&mut buf)
        .await
        .map_err(kube::Error::ReadEvents)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Lines of a running replica read for its progress and its stalls: as many as a training log
/// needs to show a step and what came after, each with the kubelet's time.
pub const RECENT_LINES: i64 = 200;
/// The most of those lines read (a server that ignores `limitBytes` is cut here too).
pub const RECENT_BYTES: usize = 64 * 1024;

/// The recent lines of `container` of `pod` ([`RECENT_LINES`], at most [`RECENT_BYTES`],
/// `timestamps=true`): the one read `diagnose`, `get` and `wait` make of a running replica.
pub async fn recent_lines(
    api: &kube::Api<k8s_openapi::api::core::v1::Pod>,
    pod: &str,
    container: &str,
) -> Result<String, kube::Error> {
    let params = kube::api::LogParams {
        container: Some(container.to_string()),
        tail_lines: Some(RECENT_LINES),
        timestamps: true,
        limit_bytes: Some(RECENT_BYTES as i64),
        ..kube::api::LogParams::default()
    };
    read_log(api, pod, &params, RECENT_BYTES).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_count_every_byte_watches_only_the_current_line() {
        assert_eq!(advance(10, b"abc", false), 13);
        assert_eq!(advance(10, b"a\nbc", false), 14);
        assert_eq!(advance(10, b"abc", true), 13);
        assert_eq!(advance(10, b"a\nbc", true), 2);
        assert_eq!(advance(10, b"abc\n", true), 0);
    }

    #[test]
    fn the_kind_of_a_reply_comes_from_its_url() {
        let k = |s: &str| kind(&s.parse().unwrap());
        assert_eq!(
            k("/apis/kubeflow.org/v1/namespaces/d/tfjobs?watch=true&resourceVersion=1"),
            Kind::Watch
        );
        assert_eq!(k("/api/v1/watch/pods"), Kind::Watch);
        assert_eq!(k("/api/v1/namespaces/d/pods/p/log?follow=true"), Kind::Log);
        assert_eq!(k("/api/v1/namespaces/d/pods?limit=500"), Kind::Reply);
    }

    #[tokio::test]
    async fn an_endless_line_ends_the_watch_body_at_the_event_limit() {
        use http_body_util::BodyExt as _;
        // A stream of 1 MiB chunks with no newline, for ever.
        let chunks = futures::stream::repeat_with(|| {
            Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(vec![b'x'; 1 << 20])))
        });
        let body = http_body_util::StreamBody::new(chunks);
        let mut capped = Capped::new(body, Kind::Watch);
        let mut read = 0;
        let err = loop {
            match capped.frame().await {
                Some(Ok(f)) => read += f.into_data().map(|d| d.len()).unwrap_or(0),
                Some(Err(e)) => break e,
                None => panic!("an endless body ended"),
            }
        };
        assert!(read <= EVENT, "{read}");
        assert!(err.to_string().contains("watch event"), "{err}");
        assert!(capped.frame().await.is_none());
    }
}
