//! A Prometheus inside the cluster, reached through the API server's service proxy
//! (`GET /api/v1/namespaces/NS/services/NAME:PORT/proxy/PATH`, the `services/proxy`
//! subresource; pkg/registry/core/service/proxy.go), so no port-forward or network route is
//! needed, and RBAC on `services/proxy` decides, as for `kubectl get --raw`.
//!
//! Found by the labels its installers give the Service: prometheus-operator's governing
//! Service `prometheus-operated` carries `operated-prometheus: "true"` with port `web` (9090)
//! (prometheus-operator pkg/prometheus/server `makeStatefulSetService`); the community chart's
//! and kube-prometheus' Services carry `app.kubernetes.io/name: prometheus`.

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use serde_json::Value;

use super::{Kube, forbidden};

/// The label selectors tried, in order.
pub const SELECTORS: &[&str] = &[
    "operated-prometheus=true",
    "app.kubernetes.io/name=prometheus",
];

/// A Service in front of Prometheus, and the port to reach it on (a name or a number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromService {
    pub namespace: String,
    pub name: String,
    pub port: String,
}

impl std::fmt::Display for PromService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}:{}", self.namespace, self.name, self.port)
    }
}

impl PromService {
    /// `--prometheus NAMESPACE/SERVICE[:PORT]` (port 9090 when left out).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "--prometheus {s:?}: expected NAMESPACE/SERVICE[:PORT], e.g. \
                 monitoring/prometheus-operated:9090"
            )
        };
        let (namespace, rest) = s.split_once('/').ok_or_else(bad)?;
        let (name, port) = rest.split_once(':').unwrap_or((rest, "9090"));
        let label = |v: &str| crate::model::names::dns1123_label(v).is_ok();
        // A number 1-65535, or a port name (IANA_SVC_NAME: at most 15 of a-z, 0-9 and '-',
        // one letter at least, no '--', no '-' at either end; validation.IsValidPortName).
        let port_ok = if port.bytes().all(|b| b.is_ascii_digit()) {
            port.parse::<u16>().is_ok_and(|p| p > 0)
        } else {
            port.len() <= 15
                && port
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && port.bytes().any(|b| b.is_ascii_lowercase())
                && !port.contains("--")
                && !port.starts_with('-')
                && !port.ends_with('-')
        };
        if !label(namespace) || !label(name) || !port_ok {
            return Err(bad());
        }
        Ok(PromService {
            namespace: namespace.into(),
            name: name.into(),
            port: port.into(),
        })
    }

    /// The proxy path of Prometheus's instant query for `promql`.
    pub fn query_path(&self, promql: &str) -> String {
        let q = form_urlencoded::Serializer::new(String::new())
            .append_pair("query", promql)
            .finish();
        format!(
            "/api/v1/namespaces/{}/services/{}:{}/proxy/api/v1/query?{q}",
            self.namespace, self.name, self.port
        )
    }
}

/// The port of a found Service: the one named `web` or `http-web` (the installers' names), else
/// its first.
fn port_of(svc: &Service) -> Option<String> {
    let ports = svc.spec.as_ref()?.ports.as_ref()?;
    let named = ports
        .iter()
        .find(|p| matches!(p.name.as_deref(), Some("web" | "http-web")));
    let p = named.or(ports.first())?;
    Some(match &p.name {
        Some(n) if !n.is_empty() => n.clone(),
        _ => p.port.to_string(),
    })
}

/// The Prometheus Service found (by [`SELECTORS`] in turn, cluster-wide), `None` when there is
/// none, or why none is used: it could not be looked for, or several carry the same label (a
/// team's Prometheus in another namespace answers for other pods; which one answers for these
/// is not known, so the choice is the user's, never a silent first).
pub async fn find(kube: &Kube) -> Result<Option<PromService>, String> {
    let api: Api<Service> = Api::all(kube.client.clone());
    for sel in SELECTORS {
        let lp = ListParams::default().labels(sel).limit(20);
        let list = match super::retry(kube, || api.list(&lp)).await {
            Ok(l) => l,
            Err(e) if forbidden::refused(&e).is_some() => {
                return Err(
                    "listing Services in all namespaces is forbidden (name one with \
                     --prometheus NAMESPACE/SERVICE[:PORT])"
                        .into(),
                );
            }
            Err(e) => return Err(format!("listing Services failed: {}", short(&e))),
        };
        let mut found: Vec<PromService> = list
            .items
            .iter()
            .filter_map(|s| {
                Some(PromService {
                    namespace: s.namespace().unwrap_or_default(),
                    name: s.name_any(),
                    port: port_of(s)?,
                })
            })
            .collect();
        found.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        match found.len() {
            0 => continue,
            1 => return Ok(found.pop()),
            n => {
                let names: Vec<String> = found.iter().map(ToString::to_string).collect();
                return Err(format!(
                    "{n} Prometheus Services carry {sel} ({}); which one has these pods' \
                     metrics is not known, so none was asked: name one with --prometheus \
                     NAMESPACE/SERVICE[:PORT]",
                    names.join(", ")
                ));
            }
        }
    }
    Ok(None)
}

/// Prometheus's answer to an instant query through the service proxy, or why there is none.
pub async fn query(kube: &Kube, svc: &PromService, promql: &str) -> Result<Value, String> {
    let path = svc.query_path(promql);
    let req = hyper::Request::get(&path)
        .header(hyper::header::ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(|e| format!("{svc}: {e}"))?;
    // One attempt: a 503 here is the proxy's "no endpoints", not an API server to wait for,
    // and the caller's budget bounds it.
    let text = match kube.client.request_text(req).await {
        Ok(t) => t,
        // Prometheus answers a bad query 400/422 with its JSON; the proxy passes it on.
        Err(kube::Error::Api(s)) if matches!(s.code, 400 | 422) && !s.message.is_empty() => {
            s.message.clone()
        }
        Err(e) if forbidden::refused(&e).is_some() => {
            return Err(format!(
                "reading {svc} through the API server's service proxy is forbidden \
                 (it needs get on services/proxy)"
            ));
        }
        Err(e) => return Err(format!("{svc} did not answer: {}", short(&e))),
    };
    serde_json::from_str(&text).map_err(|_| {
        format!(
            "{svc} answered something that is not Prometheus's JSON ({} bytes)",
            text.len()
        )
    })
}

/// An error in a few words: the HTTP code and the server's message, or how the request failed.
fn short(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => {
            let msg: String = s.message.chars().take(160).collect();
            format!("HTTP {}: {}", s.code, msg.trim())
        }
        other => {
            let s = other.to_string();
            s.chars().take(160).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_names_a_namespace_a_service_and_a_port() {
        let p = PromService::parse("monitoring/prometheus-operated").unwrap();
        assert_eq!(p.port, "9090");
        assert_eq!(
            PromService::parse("monitoring/prom:web").unwrap().port,
            "web"
        );
        for bad in [
            "prom",
            "monitoring/",
            "/prom",
            "a/b:0",
            "a/B",
            "a/b:x_y",
            "a/b:70000",
        ] {
            let e = PromService::parse(bad).unwrap_err();
            assert!(e.contains("NAMESPACE/SERVICE[:PORT]"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_query_goes_through_the_service_proxy_url_encoded() {
        let p = PromService::parse("monitoring/prometheus-operated:web").unwrap();
        let path = p.query_path("{a=\"b\"} or {c!=\"\"}");
        assert_eq!(
            path,
            "/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy/api/v1/query\
             ?query=%7Ba%3D%22b%22%7D+or+%7Bc%21%3D%22%22%7D"
        );
    }
}
