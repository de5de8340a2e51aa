//! Asks an OpenAI-compatible gateway whether an API key works: `GET {base}/v1/models` with
//! bearer auth. Used by `secret create --verify`.
//!
//! The classification ([`classify`]) is pure so every verdict is unit tested; [`check_models`]
//! only does the HTTP call. The key goes into the Authorization header and nowhere else.

use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use secrecy::{ExposeSecret, SecretString};

/// What the gateway said about the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx with an OpenAI-style model list: the key works.
    Ok { models: usize },
    /// 2xx but the body is not a model list (a login page, a proxy, the wrong host): nothing
    /// says the key works.
    NotAModelList { status: u16, why: String },
    /// 401/403: the gateway rejected the key.
    Rejected { status: u16 },
    /// 404 and the base URL already ends in /v1, so the path became …/v1/v1/models.
    DoubledV1 { suggested_base: String },
    /// Any other answer.
    Unexpected { status: u16 },
    /// No HTTP answer at all.
    Unreachable { error: String },
}

impl Verdict {
    pub fn is_ok(&self) -> bool {
        matches!(self, Verdict::Ok { .. })
    }

    /// A one-line explanation with the next step. Never includes the key.
    pub fn explain(&self, url: &str) -> String {
        match self {
            Verdict::Ok { models: n } => {
                format!("the gateway accepted the key (GET {url}: {n} models)")
            }
            Verdict::NotAModelList { status, why } => format!(
                "GET {url} answered HTTP {status} but not with a model list ({why}), so nothing \
                 says the key works; check --base-url: an OpenAI-compatible gateway answers \
                 {{\"object\": \"list\", \"data\": [...]}} there"
            ),
            Verdict::Rejected { status } => format!(
                "the gateway rejected the key (GET {url}: HTTP {status}); check you copied the whole key \
                 and that it belongs to this gateway"
            ),
            Verdict::DoubledV1 { suggested_base } => format!(
                "GET {url} answered 404: the base URL already ends in /v1 and clients append /v1 again; \
                 use --base-url {suggested_base}"
            ),
            Verdict::Unexpected { status } => {
                format!("unexpected answer from the gateway (GET {url}: HTTP {status})")
            }
            Verdict::Unreachable { error } => {
                format!("cannot reach the gateway (GET {url}): {error}")
            }
        }
    }
}

/// The URL probed for a base URL (a trailing slash is tolerated).
pub fn models_url(base_url: &str) -> String {
    format!("{}/v1/models", base_url.trim_end_matches('/'))
}

/// Pure: maps an HTTP status (and the list body, when 2xx) to a verdict.
pub fn classify(base_url: &str, status: u16, body: &[u8]) -> Verdict {
    let base = base_url.trim_end_matches('/');
    match status {
        // What OpenAI's `GET /v1/models` returns: `{"object": "list", "data": [{"id": …}]}`.
        200..=299 => match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(serde_json::Value::Object(m)) => match m.get("data") {
                Some(serde_json::Value::Array(models)) => Verdict::Ok {
                    models: models.len(),
                },
                Some(_) => Verdict::NotAModelList {
                    status,
                    why: "its \"data\" is not an array".into(),
                },
                None => Verdict::NotAModelList {
                    status,
                    why: "a JSON object without \"data\"".into(),
                },
            },
            Ok(_) => Verdict::NotAModelList {
                status,
                why: "JSON, but not an object".into(),
            },
            Err(_) if body.is_empty() => Verdict::NotAModelList {
                status,
                why: "an empty body".into(),
            },
            Err(_) => Verdict::NotAModelList {
                status,
                why: "not JSON".into(),
            },
        },
        401 | 403 => Verdict::Rejected { status },
        404 if base.ends_with("/v1") => Verdict::DoubledV1 {
            suggested_base: base.trim_end_matches("/v1").to_string(),
        },
        _ => Verdict::Unexpected { status },
    }
}

/// Calls `GET {base}/v1/models` with the key as a bearer token.
pub async fn check_models(base_url: &str, key: &SecretString, timeout: Duration) -> Verdict {
    let url = models_url(base_url);
    match tokio::time::timeout(timeout, fetch(&url, key)).await {
        Ok(Ok((status, body))) => classify(base_url, status, &body),
        Ok(Err(error)) => Verdict::Unreachable { error },
        Err(_) => Verdict::Unreachable {
            error: format!("no answer within {}s", timeout.as_secs()),
        },
    }
}

async fn fetch(url: &str, key: &SecretString) -> Result<(u16, Bytes), String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("invalid URL: {e}"))?;
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("no TLS root certificates: {e}"))?
        .https_or_http()
        .enable_http1()
        .build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Empty<Bytes>>(https);
    let mut auth = hyper::header::HeaderValue::from_str(&format!("Bearer {}", key.expose_secret()))
        .map_err(|_| "the key contains characters that cannot go in an HTTP header".to_string())?;
    // Keeps the header out of any HTTP-level debug output.
    auth.set_sensitive(true);
    let request = hyper::Request::get(uri)
        .header(hyper::header::AUTHORIZATION, auth)
        .header(hyper::header::ACCEPT, "application/json")
        .header(
            hyper::header::USER_AGENT,
            concat!("kubectl-tfjob/", env!("CARGO_PKG_VERSION")),
        )
        .body(Empty::new())
        .map_err(|e| e.to_string())?;
    // The legacy client's Display is terse ("client error (Connect)"); the causes say why.
    let response = client
        .request(request)
        .await
        .map_err(|e| crate::error::chain(&e))?;
    let status = response.status().as_u16();
    // Only the model list is read, and it is bounded: a hostile gateway can't exhaust memory.
    let limited = http_body_util::Limited::new(response.into_body(), 4 * 1024 * 1024);
    let body = limited
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let base = "https://taotoken.net/api";
        assert_eq!(models_url(base), "https://taotoken.net/api/v1/models");
        assert_eq!(models_url("http://x/api/"), "http://x/api/v1/models");
        assert_eq!(
            classify(
                base,
                200,
                br#"{"object":"list","data":[{"id":"a"},{"id":"b"}]}"#
            ),
            Verdict::Ok { models: 2 }
        );
        // Any 200 is not a yes: only a model list says the key works.
        for (body, why) in [
            (&b"<html>login</html>"[..], "not JSON"),
            (b"", "an empty body"),
            (b"[1,2]", "JSON, but not an object"),
            (br#"{"ok":true}"#, "a JSON object without \"data\""),
            (br#"{"data":{}}"#, "its \"data\" is not an array"),
        ] {
            let v = classify(base, 200, body);
            assert_eq!(
                v,
                Verdict::NotAModelList {
                    status: 200,
                    why: why.into()
                }
            );
            assert!(!v.is_ok());
            assert!(v.explain("u").contains("check --base-url"));
        }
        assert_eq!(classify(base, 401, b""), Verdict::Rejected { status: 401 });
        assert_eq!(classify(base, 403, b""), Verdict::Rejected { status: 403 });
        assert_eq!(
            classify(base, 404, b""),
            Verdict::Unexpected { status: 404 }
        );
        assert_eq!(
            classify("https://taotoken.net/api/v1/", 404, b""),
            Verdict::DoubledV1 {
                suggested_base: "https://taotoken.net/api".into()
            }
        );
        assert_eq!(
            classify(base, 500, b""),
            Verdict::Unexpected { status: 500 }
        );
        let text = classify("https://g/v1", 404, b"").explain("https://g/v1/v1/models");
        assert!(text.contains("--base-url https://g"), "{text}");
    }
}
