//! Asks an OpenAI-compatible gateway whether an API key works: `GET {base}/v1/models` with
//! bearer auth. Used by `secret create --verify`.
//!
//! The classification ([`classify`]) is pure so every verdict is unit tested; [`check_models`]
//! only does the HTTP call. The key goes into the Authorization header and nowhere else.

use std::time::Duration;

use crate::cluster::budget::Budget;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use secrecy::{ExposeSecret, SecretString};

/// What the gateway said about the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// 2xx with an OpenAI-style model list, which a request without a key does not get (or a
    /// wrong key is refused): the key works.
    Ok { models: usize },
    /// 2xx with a model list, but the list answers without a key and to a wrong one too
    /// (vLLM, Ollama, OpenRouter): nothing says whether the key works; the gateway may not
    /// need one.
    Public { models: usize },
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

impl Answer {
    /// Whether the key may be stored: accepted, or a gateway whose list says nothing either way
    /// (not a refusal for want of evidence; [`Answer::explain`] says it was not verified).
    pub fn is_ok(&self) -> bool {
        matches!(self, Answer::Ok { .. } | Answer::Public { .. })
    }

    /// A one-line explanation with the next step. Never includes the key.
    pub fn explain(&self, url: &str) -> String {
        match self {
            Answer::Ok { models: n } => {
                format!("the gateway accepted the key (GET {url}: {n} models)")
            }
            Answer::Public { models: n } => format!(
                "not verified: GET {url} lists {n} models without a key and to a wrong one too, \
                 so its answer says nothing about this key (the gateway may need none); \
                 `kubectl tfjob probe JOB --gateway-chat MODEL` makes one tiny completion from \
                 the pods"
            ),
            Answer::NotAModelList { status, why } => format!(
                "GET {url} answered HTTP {status} but not with a model list ({why}), so nothing \
                 says the key works; check --base-url: an OpenAI-compatible gateway answers \
                 {{\"object\": \"list\", \"data\": [...]}} there"
            ),
            Answer::Rejected { status } => format!(
                "the gateway rejected the key (GET {url}: HTTP {status}); check you copied the whole key \
                 and that it belongs to this gateway"
            ),
            Answer::DoubledV1 { suggested_base } => format!(
                "GET {url} answered 404: the base URL already ends in /v1 and clients append /v1 again; \
                 use --base-url {suggested_base}"
            ),
            Answer::Unexpected { status } => {
                format!("unexpected answer from the gateway (GET {url}: HTTP {status})")
            }
            Answer::Unreachable { error } => {
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
pub fn classify(base_url: &str, status: u16, body: &[u8]) -> Answer {
    let base = base_url.trim_end_matches('/');
    match status {
        // What OpenAI's `GET /v1/models` returns: `{"object": "list", "data": [{"id": …}]}`.
        200..=299 => match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(serde_json::Value::Object(m)) => match m.get("data") {
                Some(serde_json::Value::Array(models)) => Answer::Ok {
                    models: models.len(),
                },
                Some(_) => Answer::NotAModelList {
                    status,
                    why: "its \"data\" is not an array".into(),
                },
                None => Answer::NotAModelList {
                    status,
                    why: "a JSON object without \"data\"".into(),
                },
            },
            Ok(_) => Answer::NotAModelList {
                status,
                why: "JSON, but not an object".into(),
            },
            Err(_) if body.is_empty() => Answer::NotAModelList {
                status,
                why: "an empty body".into(),
            },
            Err(_) => Answer::NotAModelList {
                status,
                why: "not JSON".into(),
            },
        },
        401 | 403 => Answer::Rejected { status },
        404 if base.ends_with("/v1") => Answer::DoubledV1 {
            suggested_base: base.trim_end_matches("/v1").to_string(),
        },
        _ => Answer::Unexpected { status },
    }
}

/// Calls `GET {base}/v1/models` with the key as a bearer token.
/// A model list, then, when there is one, whether the list is public: asked again without a
/// key and, if still listed, with a wrong one. One `timeout` for all of it.
pub async fn check_models(base_url: &str, key: &SecretString, timeout: Duration) -> Answer {
    let url = models_url(base_url);
    let asked = async {
        let (status, body) = fetch(&url, Some(key.expose_secret())).await?;
        let verdict = classify(base_url, status, &body);
        let Answer::Ok { models } = verdict else {
            return Ok(verdict);
        };
        let (status, body) = fetch(&url, None).await?;
        if !classify(base_url, status, &body).is_ok() {
            return Ok(verdict);
        }
        let (status, _) = fetch(&url, Some(WRONG_KEY)).await?;
        Ok(public_verdict(models, status))
    };
    match Budget::new(timeout).attempt(asked).await {
        Some(Ok(verdict)) => verdict,
        Some(Err(error)) => Answer::Unreachable { error },
        None => Answer::Unreachable {
            error: format!("no answer within {}s", timeout.as_secs()),
        },
    }
}

/// A key no gateway issued: what a gateway that checks keys refuses.
const WRONG_KEY: &str = "kubectl-tfjob-verify-not-a-key";

/// Pure: the list answered without a key; `wrong_status` is its answer to a wrong key.
pub fn public_verdict(models: usize, wrong_status: u16) -> Answer {
    match wrong_status {
        401 | 403 => Answer::Ok { models },
        _ => Answer::Public { models },
    }
}

async fn fetch(url: &str, key: Option<&str>) -> Result<(u16, Bytes), String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("invalid URL: {e}"))?;
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("no TLS root certificates: {e}"))?
        .https_or_http()
        .enable_http1()
        .build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Empty<Bytes>>(https);
    let mut request = hyper::Request::get(uri);
    if let Some(key) = key {
        let mut auth =
            hyper::header::HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                "the key contains characters that cannot go in an HTTP header".to_string()
            })?;
        // Keeps the header out of any HTTP-level debug output.
        auth.set_sensitive(true);
        request = request.header(hyper::header::AUTHORIZATION, auth);
    }
    let request = request
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
            Answer::Ok { models: 2 }
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
                Answer::NotAModelList {
                    status: 200,
                    why: why.into()
                }
            );
            assert!(!v.is_ok());
            assert!(v.explain("u").contains("check --base-url"));
        }
        // A list that answers without a key: a wrong key refused says keys are checked.
        assert_eq!(public_verdict(2, 401), Answer::Ok { models: 2 });
        let public = public_verdict(2, 200);
        assert_eq!(public, Answer::Public { models: 2 });
        assert!(public.explain("u").starts_with("not verified: "));
        assert_eq!(classify(base, 401, b""), Answer::Rejected { status: 401 });
        assert_eq!(classify(base, 403, b""), Answer::Rejected { status: 403 });
        assert_eq!(classify(base, 404, b""), Answer::Unexpected { status: 404 });
        assert_eq!(
            classify("https://taotoken.net/api/v1/", 404, b""),
            Answer::DoubledV1 {
                suggested_base: "https://taotoken.net/api".into()
            }
        );
        assert_eq!(classify(base, 500, b""), Answer::Unexpected { status: 500 });
        let text = classify("https://g/v1", 404, b"").explain("https://g/v1/v1/models");
        assert!(text.contains("--base-url https://g"), "{text}");
    }
}
