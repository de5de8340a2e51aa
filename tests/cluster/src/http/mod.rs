//! The HTTP front: parses kube-apiserver paths into (verb, resource, namespace, name),
//! applies faults/auth/RBAC, and dispatches to the verb handlers.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Method, Response, body::Incoming};
use serde_json::{Value, json};

use crate::auth::User;
use crate::queueing::kueue::visibility as kvis;
use crate::resources::{self, ResourceInfo};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::{Request, Shared};
use crate::status::{self, ApiError, FieldError};
use crate::store::StoreError;
use crate::util::{now_rfc3339, random_suffix};
use crate::{metrics, openapi, patch, table, validation, watch};

mod writes;
use writes::*;

/// Response body type.
pub type Body = BoxBody<Bytes, Infallible>;

/// Parsed query string (last value wins).
pub type Query = HashMap<String, String>;

pub(crate) fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                    out.push(v);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn parse_query(q: &str) -> Query {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (pct_decode(k), pct_decode(v)),
            None => (pct_decode(p), String::new()),
        })
        .collect()
}

/// JSON response.
pub fn json_response(code: u16, v: &Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-cache, private")
        .body(Full::new(Bytes::from(serde_json::to_vec(v).unwrap())).boxed())
        .unwrap()
}

pub(crate) fn text_response(code: u16, s: String) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("Content-Type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(s)).boxed())
        .unwrap()
}

/// Status error response (with Retry-After when set).
pub fn error_response(e: &ApiError) -> Response<Body> {
    let mut r = match &e.body {
        Value::String(text) => text_response(e.code, text.clone()),
        body => json_response(e.code, body),
    };
    if let Some(s) = e.retry_after {
        r.headers_mut()
            .insert("Retry-After", s.to_string().parse().unwrap());
    }
    r
}

/// Where a request points.
#[derive(Debug, Default, Clone)]
pub struct Target {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Resource plural ("" for discovery/non-resource).
    pub resource: String,
    /// Namespace in the path.
    pub namespace: Option<String>,
    /// Name in the path.
    pub name: Option<String>,
    /// Subresource.
    pub sub: String,
    /// Legacy `/watch/` prefix.
    pub legacy_watch: bool,
    /// What follows `…/proxy/` (the `services/proxy` subresource).
    pub proxy_path: String,
}

fn parse_target(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, mut rest) = match segs.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => (String::new(), v.to_string(), rest.to_vec()),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => {
            (g.to_string(), v.to_string(), rest.to_vec())
        }
        _ => return None,
    };
    let mut t = Target {
        group,
        version,
        ..Default::default()
    };
    if rest[0] == "watch" {
        t.legacy_watch = true;
        rest.remove(0);
        if rest.is_empty() {
            return None;
        }
    }
    let core_ns_sub =
        t.group.is_empty() && rest.len() == 3 && matches!(rest[2], "status" | "finalize");
    if rest[0] == "namespaces" && rest.len() >= 3 && !core_ns_sub {
        t.namespace = Some(rest[1].to_string());
        rest = rest[2..].to_vec();
    }
    t.resource = rest[0].to_string();
    t.name = rest.get(1).map(|s| s.to_string());
    t.sub = rest.get(2).map(|s| s.to_string()).unwrap_or_default();
    if rest.len() > 3 {
        if t.sub != "proxy" {
            return None;
        }
        t.proxy_path = rest[3..].join("/");
    }
    Some(t)
}

fn verb_for(method: &Method, t: &Target, q: &Query) -> &'static str {
    let watch = t.legacy_watch || q.get("watch").is_some_and(|w| w == "1" || w == "true");
    match *method {
        // A WebSocket exec is a GET that needs `create` on pods/exec since 1.31
        // (AuthorizePodWebsocketUpgradeCreatePermission).
        Method::GET if t.sub == "exec" => "create",
        Method::GET if watch => "watch",
        Method::GET if t.name.is_some() => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if t.name.is_some() => "delete",
        Method::DELETE => "deletecollection",
        _ => "unknown",
    }
}

/// kube-apiserver's default request body limit (`MaxRequestBodyBytes`, 3 MiB).
pub const MAX_REQUEST_BODY: usize = 3 * 1024 * 1024;

/// Entry point for every request. `Err` aborts the connection (fault `reset`).
pub async fn handle(
    sh: Arc<Shared>,
    peer: Option<Arc<User>>,
    mut req: hyper::Request<Incoming>,
) -> Result<Response<Body>, std::io::Error> {
    let at = Instant::now();
    // Taken before the body is read: hyper hands over the upgraded connection through it.
    let upgrade = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query_str = req.uri().query().unwrap_or("").to_string();
    let headers = req.headers().clone();
    let hdr = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    // Read at most the API server's limit: a bigger body is refused before it is parsed (and
    // costs no more than the limit to refuse).
    let body = match http_body_util::Limited::new(req.into_body(), MAX_REQUEST_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Ok(error_response(&crate::status::request_too_large(
                MAX_REQUEST_BODY,
            )));
        }
        Err(_) => Bytes::new(),
    };
    let q = parse_query(&query_str);
    let target = parse_target(&path);
    let (verb, resource, group, sub, ns, name) = match &target {
        Some(t) => (
            verb_for(&method, t, &q).to_string(),
            t.resource.clone(),
            t.group.clone(),
            t.sub.clone(),
            t.namespace.clone(),
            t.name.clone(),
        ),
        None => (
            "get".to_string(),
            String::new(),
            String::new(),
            String::new(),
            None,
            None,
        ),
    };
    let content_type = hdr("content-type");
    let user = crate::auth::authenticate(
        &sh.scenario.security,
        &sh.scenario.token,
        peer.as_deref(),
        &hdr("authorization"),
    );
    let parsed_body = if body.is_empty() {
        None
    } else {
        parse_body(&body, &content_type).ok()
    };
    let mut log = Request {
        method: method.to_string(),
        verb: verb.clone(),
        resource: resource.clone(),
        group,
        subresource: sub.clone(),
        namespace: ns.clone(),
        name: name.clone(),
        path: path.clone(),
        query: query_str.clone(),
        status: 0,
        response_bytes: None,
        dry_run: q.get("dryRun").is_some_and(|d| d == "All"),
        body: parsed_body,
        content_type: content_type.clone(),
        user_agent: hdr("user-agent"),
        user: user.as_ref().map(|u| u.name.clone()).unwrap_or_default(),
        at,
        at_ms: at.duration_since(sh.started).as_millis() as u64,
    };

    let decision = sh.decide_faults(
        method.as_str(),
        &verb,
        &resource,
        &sub,
        ns.as_deref(),
        name.as_deref(),
    );
    if decision.hold {
        // Subscribed before the request is seen as arrived: a release after that is not missed.
        let mut released = sh.released.subscribe();
        sh.arrived.lock().unwrap().push(log.clone());
        let _ = released.changed().await;
    } else {
        sh.arrived.lock().unwrap().push(log.clone());
    }
    if !decision.latency.is_zero() {
        tokio::time::sleep(decision.latency).await;
    }
    let drop_reply = decision.drop_reply;
    if decision.reset {
        sh.log_request(log);
        return Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "injected reset",
        ));
    }
    // Protobuf is accepted for the few kinds typed kubectl commands create (see proto.rs).
    let proto_err = if content_type.starts_with("application/vnd.kubernetes.protobuf")
        && method != Method::DELETE
        && !body.is_empty()
    {
        crate::proto::decode(&body).err()
    } else {
        None
    };
    let resp = if decision.endless_body {
        endless_body(&verb)
    } else if let Some(e) = proto_err {
        error_response(&status::unsupported_media(&format!("{content_type} ({e})")))
    } else if content_type.starts_with("application/cbor") {
        error_response(&status::unsupported_media(&content_type))
    } else if let Some(f) = &decision.status {
        let echoed = f.echo_body.then(|| {
            format!(
                "{}: {}",
                f.message.as_deref().unwrap_or("denied"),
                String::from_utf8_lossy(&body)
            )
        });
        error_response(&status::injected(
            f.status.unwrap_or(500),
            echoed.as_deref().or(f.message.as_deref()),
            f.retry_after_seconds,
        ))
    } else {
        let ctx = Ctx {
            sh: sh.clone(),
            q,
            accept: hdr("accept"),
            content_type,
            body,
            decision,
            user: user.clone().unwrap_or_default(),
            query: query_str.clone(),
            headers: headers.clone(),
            upgrade: std::sync::Mutex::new(upgrade),
        };
        route(&ctx, &method, &path, target, &verb, user.is_ok()).await
    };
    log.status = resp.status().as_u16();
    log.response_bytes = hyper::body::Body::size_hint(resp.body()).exact();
    if drop_reply {
        // Committed, but the client never hears so (logged with status 0, like a reset).
        log.status = 0;
        sh.log_request(log);
        return Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "injected reset after commit",
        ));
    }
    sh.log_request(log);
    Ok(resp)
}

/// The `endlessBody` fault: a 200 whose body never ends a line.
fn endless_body(verb: &str) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<hyper::body::Frame<Bytes>, Infallible>>(4);
    let (content_type, head) = if verb == "watch" {
        (
            "application/json",
            &b"{\"type\":\"ADDED\",\"object\":{\"kind\":\""[..],
        )
    } else {
        ("text/plain", &b""[..])
    };
    let head = Bytes::from_static(head);
    tokio::spawn(async move {
        let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
        if tx.send(Ok(hyper::body::Frame::data(head))).await.is_err() {
            return;
        }
        // Until the client hangs up.
        while tx
            .send(Ok(hyper::body::Frame::data(chunk.clone())))
            .await
            .is_ok()
        {}
    });
    Response::builder()
        .status(200)
        .header("Content-Type", content_type)
        .body(
            http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx))
                .boxed(),
        )
        .unwrap()
}

fn parse_body(body: &[u8], content_type: &str) -> Result<Value, String> {
    if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        return crate::proto::decode(body);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => Ok(v),
        Err(e) => {
            if content_type.contains("yaml") {
                let s = std::str::from_utf8(body).map_err(|e| e.to_string())?;
                serde_saphyr::from_str::<Value>(s).map_err(|e| e.to_string())
            } else {
                Err(e.to_string())
            }
        }
    }
}

pub(crate) struct Ctx {
    pub sh: Arc<Shared>,
    pub q: Query,
    pub accept: String,
    pub content_type: String,
    pub body: Bytes,
    pub decision: crate::state::FaultDecision,
    /// Who is asking (default when unauthenticated; such requests end at 401).
    pub user: User,
    /// The raw query (exec's `command=` repeats).
    pub query: String,
    pub headers: hyper::HeaderMap,
    /// The connection upgrade a WebSocket request (`pods/exec`) takes over.
    pub upgrade: std::sync::Mutex<Option<hyper::upgrade::OnUpgrade>>,
}

fn is_public(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/livez" | "/version")
        || path.starts_with("/healthz/")
        || path.starts_with("/readyz/")
        || path.starts_with("/livez/")
}

async fn route(
    ctx: &Ctx,
    method: &Method,
    path: &str,
    target: Option<Target>,
    verb: &str,
    authenticated: bool,
) -> Response<Body> {
    let sh = &ctx.sh;
    // Rules in auth.rs: a wrong token is always 401; no credentials only with requireAuth.
    if !is_public(path) && !authenticated {
        return error_response(&status::unauthorized());
    }
    let Some(t) = target else {
        return non_resource(ctx, path);
    };
    if t.group == metrics::GROUP {
        // An aggregated API (metrics-server behind an APIService), not a stored resource.
        if !sh.scenario.metrics_api || t.version != metrics::VERSION || !t.sub.is_empty() {
            return error_response(&status::unknown_resource());
        }
        if verb != "get" && verb != "list" {
            return error_response(&status::method_not_allowed());
        }
        return match metrics::serve(
            &sh.store,
            &t.resource,
            t.namespace.as_deref(),
            t.name.as_deref(),
            ctx.q.get("labelSelector").map(String::as_str),
        ) {
            Ok(v) => json_response(200, &v),
            Err(e) => error_response(&e),
        };
    }
    if t.group == kvis::GROUP && kueue_visibility(sh) {
        // Kueue's aggregated visibility API (the manager behind an APIService).
        let known = t.version == kvis::VERSION
            && t.sub == "pendingworkloads"
            && t.name.is_some()
            && matches!(
                (t.resource.as_str(), t.namespace.is_some()),
                ("clusterqueues", false) | ("localqueues", true)
            );
        if !known {
            return error_response(&status::unknown_resource());
        }
        if verb != "get" {
            return error_response(&status::method_not_allowed());
        }
        // RBAC on the subresource, as the ClusterRoles pending-workloads-{cq,lq}-viewer grant it.
        let sub = format!("{}/pendingworkloads", t.resource);
        if sh.denied(&ctx.user.name, verb, &sub, t.namespace.as_deref()) {
            return error_response(&status::forbidden(
                &ctx.user.name,
                verb,
                &sub,
                kvis::GROUP,
                t.namespace.as_deref(),
                t.name.as_deref().unwrap_or(""),
            ));
        }
        let num = |k: &str, d: usize| ctx.q.get(k).and_then(|v| v.parse().ok()).unwrap_or(d);
        return json_response(
            200,
            &kvis::pending_workloads(
                sh,
                t.namespace.as_deref(),
                t.name.as_deref().unwrap_or(""),
                num("limit", 1000),
                num("offset", 0),
            ),
        );
    }
    if t.group.is_empty() && t.resource == "services" && t.sub == "proxy" {
        return service_proxy(ctx, &t, verb);
    }
    let Some(info) = resources::find(&sh.store, &t.group, &t.version, &t.resource) else {
        return error_response(&status::unknown_resource());
    };
    if !t.sub.is_empty() && !info.subresources.contains(&t.sub) {
        return error_response(&status::unknown_resource());
    }
    if t.namespace.is_some() && !info.namespaced {
        return error_response(&status::unknown_resource());
    }
    if sh.denied(&ctx.user.name, verb, &info.plural, t.namespace.as_deref())
        && info.plural != "selfsubjectaccessreviews"
    {
        return error_response(&status::forbidden(
            &ctx.user.name,
            verb,
            &info.plural,
            &info.group,
            t.namespace.as_deref(),
            t.name.as_deref().unwrap_or(""),
        ));
    }
    let r = match (verb, t.sub.as_str()) {
        ("get", "log") => crate::logs::pod_log(ctx, &t),
        ("create", "exec") if *method == Method::GET => crate::exec::serve(
            &ctx.sh,
            &t,
            &ctx.query,
            &ctx.headers,
            ctx.upgrade.lock().unwrap().take(),
        ),
        ("get", _) => get(ctx, &info, &t),
        ("list", _) => list(ctx, &info, &t),
        ("watch", _) => return watch::watch(ctx, &info, &t),
        ("create", _) => create(ctx, &info, &t),
        ("update", _) => update(ctx, &info, &t),
        ("patch", _) => patch_obj(ctx, &info, &t),
        ("delete", _) => delete(ctx, &info, &t),
        ("deletecollection", _) => delete_collection(ctx, &info, &t),
        _ => {
            let _ = method;
            Err(status::method_not_allowed())
        }
    };
    r.unwrap_or_else(|e| error_response(&e))
}

fn kueue_visibility(sh: &Shared) -> bool {
    sh.scenario.kueue.as_ref().is_some_and(|k| k.visibility)
}

/// `services/proxy` (the only proxy served): RBAC on the subresource as kube-apiserver checks
/// it, then the scenario's Prometheus (prometheus.rs).
fn service_proxy(ctx: &Ctx, t: &Target, verb: &str) -> Response<Body> {
    let (Some(ns), Some(name)) = (t.namespace.as_deref(), t.name.as_deref()) else {
        return error_response(&status::unknown_resource());
    };
    if verb != "get" {
        return error_response(&status::method_not_allowed());
    }
    if ctx
        .sh
        .denied(&ctx.user.name, verb, "services/proxy", Some(ns))
    {
        return error_response(&status::forbidden(
            &ctx.user.name,
            verb,
            "services/proxy",
            "",
            Some(ns),
            name,
        ));
    }
    match crate::prometheus::proxy(
        &ctx.sh,
        ns,
        name,
        &t.proxy_path,
        ctx.q.get("query").map(String::as_str),
    ) {
        Ok((code, v)) => json_response(code, &v),
        Err(e) => error_response(&e),
    }
}

fn non_resource(ctx: &Ctx, path: &str) -> Response<Body> {
    let sh = &ctx.sh;
    let store = &sh.store;
    let path = path.trim_end_matches('/');
    match path {
        "/healthz" | "/readyz" | "/livez" => return text_response(200, "ok".into()),
        "/version" => {
            let v = &sh.scenario.kubernetes_version;
            let minor = v
                .trim_start_matches('v')
                .split('.')
                .nth(1)
                .unwrap_or("36")
                .to_string();
            return json_response(
                200,
                &json!({
                    "major": "1", "minor": minor, "emulationMajor": "1", "emulationMinor": minor,
                    "minCompatibilityMajor": "1", "minCompatibilityMinor": minor,
                    "gitVersion": v, "gitCommit": "0000000000000000000000000000000000000000",
                    "gitTreeState": "clean", "buildDate": "2026-10-01T00:00:00Z", "goVersion": "go1.25.5",
                    "compiler": "gc", "platform": "linux/amd64"
                }),
            );
        }
        "/api" => {
            let port = *sh.port.lock().unwrap();
            return json_response(
                200,
                &json!({
                    "kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.1:{port}")}]
                }),
            );
        }
        "/apis" => {
            let mut groups = resources::group_list(store);
            if sh.scenario.metrics_api
                && let Some(gs) = groups["groups"].as_array_mut()
            {
                gs.push(resources::group_json(
                    metrics::GROUP,
                    &[metrics::VERSION.to_string()],
                ));
            }
            if kueue_visibility(sh)
                && let Some(gs) = groups["groups"].as_array_mut()
            {
                gs.push(resources::group_json(
                    kvis::GROUP,
                    &[kvis::VERSION.to_string()],
                ));
            }
            return json_response(200, &groups);
        }
        "/openapi/v2" => return openapi_v2(&ctx.accept, &sh.scenario.kubernetes_version),
        "/openapi/v3" => return json_response(200, &openapi::index(store)),
        _ => {}
    }
    if let Some(gv) = path.strip_prefix("/openapi/v3/") {
        return match openapi::group_version_doc(store, gv) {
            Some(d) => json_response(200, &d),
            None => error_response(&status::unknown_resource()),
        };
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let found = match segs.as_slice() {
        ["apis", metrics::GROUP] if sh.scenario.metrics_api => Some(resources::group_json(
            metrics::GROUP,
            &[metrics::VERSION.to_string()],
        )),
        ["apis", metrics::GROUP, metrics::VERSION] if sh.scenario.metrics_api => {
            Some(metrics::resource_list())
        }
        ["apis", kvis::GROUP] if kueue_visibility(sh) => Some(resources::group_json(
            kvis::GROUP,
            &[kvis::VERSION.to_string()],
        )),
        ["apis", kvis::GROUP, kvis::VERSION] if kueue_visibility(sh) => Some(kvis::resource_list()),
        ["api", v] => resources::resource_list(store, "", v),
        ["apis", g, v] => resources::resource_list(store, g, v),
        ["apis", g] => {
            let vs: Vec<String> = resources::all(store)
                .into_iter()
                .filter(|r| r.group == *g)
                .map(|r| r.version)
                .fold(Vec::new(), |mut acc, v| {
                    if !acc.contains(&v) {
                        acc.push(v)
                    }
                    acc
                });
            (!vs.is_empty()).then(|| resources::group_json(g, &vs))
        }
        _ => None,
    };
    match found {
        Some(v) => json_response(200, &v),
        None => error_response(&status::unknown_resource()),
    }
}

/// An empty but valid Swagger 2.0 document. Old kubectl (≤1.26) needs it for apply and
/// client-side validation; with no definitions it skips schema validation of every kind
/// and falls back to its compiled-in types, as it does for unknown kinds.
fn openapi_v2(accept: &str, version: &str) -> Response<Body> {
    if accept.contains("protobuf") {
        // gnostic openapi_v2.Document{swagger: 1, info: 2{title: 1, version: 2}}
        let mut info = vec![0x0a, 10];
        info.extend_from_slice(b"Kubernetes");
        info.push(0x12);
        info.push(version.len() as u8);
        info.extend_from_slice(version.as_bytes());
        let mut doc = vec![0x0a, 3];
        doc.extend_from_slice(b"2.0");
        doc.push(0x12);
        doc.push(info.len() as u8);
        doc.extend_from_slice(&info);
        return Response::builder()
            .status(200)
            .header("Content-Type", "application/octet-stream")
            .body(Full::new(Bytes::from(doc)).boxed())
            .unwrap();
    }
    json_response(
        200,
        &json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": version}, "paths": {}, "definitions": {}}),
    )
}

fn ns_of(info: &ResourceInfo, t: &Target) -> String {
    if info.namespaced {
        t.namespace.clone().unwrap_or_default()
    } else {
        String::new()
    }
}

fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|a| a.contains("as=Table"))
}

fn get(ctx: &Ctx, info: &ResourceInfo, t: &Target) -> Result<Response<Body>, ApiError> {
    let name = t.name.as_deref().unwrap_or("");
    let obj = ctx
        .sh
        .store
        .get(&info.plural, &ns_of(info, t), name)
        .ok_or_else(|| status::not_found(&info.plural, &info.group, name))?;
    if wants_table(&ctx.accept) {
        let rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        return Ok(json_response(
            200,
            &table::table(&ctx.sh.store, info, &[obj], &rv, &ctx.q, true),
        ));
    }
    Ok(json_response(200, &resources::convert_out(info, &obj)))
}

/// Parsed list/watch filters.
pub(crate) struct Filters {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

pub(crate) fn filters(ctx: &Ctx, info: &ResourceInfo) -> Result<Filters, ApiError> {
    let labels = LabelSelector::parse(ctx.q.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(status::bad_request)?;
    let fields = FieldSelector::parse(
        &info.plural,
        &info.kind,
        ctx.q.get("fieldSelector").map(String::as_str).unwrap_or(""),
    )
    .map_err(status::bad_request)?;
    Ok(Filters { labels, fields })
}

fn list(ctx: &Ctx, info: &ResourceInfo, t: &Target) -> Result<Response<Body>, ApiError> {
    let f = filters(ctx, info)?;
    let store = &ctx.sh.store;
    if let Some(rv) = ctx.q.get("resourceVersion")
        && ctx
            .q
            .get("resourceVersionMatch")
            .is_some_and(|m| m == "Exact")
        && let Ok(n) = rv.parse::<u64>()
        && n < store.oldest_rv()
    {
        return Err(status::expired(rv, store.oldest_rv()));
    }
    let ns = if info.namespaced {
        t.namespace.as_deref()
    } else {
        None
    };
    // Shared handles: big lists (2,000 pods with ~90KB TF_CONFIG each) are serialized
    // straight from the store's objects instead of being deep-copied first.
    // Field values come from the encoded-object cache: read once per object, not per list.
    let encoded = &ctx.sh.encoded;
    let keep = |o: &Arc<Value>| {
        f.labels.matches(o)
            && f.fields
                .matches_by(|field, want| encoded.field_is(o, field, want))
    };
    let limit = ctx
        .q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    // limit/continue: the token is the namespace/name of the last item returned; a page is
    // read from there in key order (cheap per page on 150,000 pods).
    let after = ctx
        .q
        .get("continue")
        .filter(|c| !c.is_empty())
        .map(|c| c.split_once('/').unwrap_or(("", c.as_str())));
    let mut cont = String::new();
    let mut remaining = None;
    let (mut items, rv) = match limit {
        None if after.is_none() => store.list_filtered_shared(&info.plural, ns, keep),
        _ => {
            // The apiserver gives remainingItemCount only for lists without selectors
            // (k8s.io/apiserver storage/etcd3/store.go: a filtered count would be inexact).
            let unfiltered = ctx.q.get("labelSelector").is_none_or(|s| s.is_empty())
                && ctx.q.get("fieldSelector").is_none_or(|s| s.is_empty());
            let (items, rv, more, rest) = store.list_page_shared(
                &info.plural,
                ns,
                after,
                limit.unwrap_or(usize::MAX),
                unfiltered,
                keep,
            );
            if more && let Some(last) = items.last() {
                cont = format!(
                    "{}/{}",
                    last["metadata"]["namespace"].as_str().unwrap_or(""),
                    last["metadata"]["name"].as_str().unwrap_or("")
                );
                remaining = unfiltered.then_some(rest);
            }
            (items, rv)
        }
    };
    if wants_table(&ctx.accept) {
        let owned: Vec<Value> = items.iter().map(|a| (**a).clone()).collect();
        let mut tb = table::table(store, info, &owned, &rv.to_string(), &ctx.q, true);
        if !cont.is_empty() {
            tb["metadata"]["continue"] = json!(cont);
        }
        return Ok(json_response(200, &tb));
    }
    // Converted on the way out: new objects each time, not worth keeping encoded.
    let converted = info.group == "events.k8s.io";
    if converted {
        items = items
            .iter()
            .map(|o| Arc::new(resources::convert_out(info, o)))
            .collect();
    }
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if !cont.is_empty() {
        meta["continue"] = json!(cont);
        if let Some(n) = remaining {
            meta["remainingItemCount"] = json!(n);
        }
    }
    let head = json!({"kind": info.list_kind, "apiVersion": info.api_version(), "metadata": meta});
    let mut buf = serde_json::to_vec(&head).unwrap();
    buf.pop(); // the closing brace; items follow
    buf.extend_from_slice(b",\"items\":[");
    if converted {
        for (i, it) in items.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            serde_json::to_writer(&mut buf, &**it).unwrap();
        }
    } else {
        ctx.sh.encoded.write_all(&items, &mut buf);
    }
    buf.extend_from_slice(b"]}");
    Ok(Response::builder()
        .status(200)
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-cache, private")
        .body(Full::new(Bytes::from(buf)).boxed())
        .unwrap())
}

/// Builds the hyper service loop on an already-bound listener.
pub async fn serve(
    listener: tokio::net::TcpListener,
    sh: Arc<Shared>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    loop {
        tokio::select! {
            acc = listener.accept() => {
                let Ok((stream, _)) = acc else { continue };
                let _ = stream.set_nodelay(true);
                let sh = sh.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let Some(acceptor) = tls else {
                        serve_connection(sh, None, stream).await;
                        return;
                    };
                    // A failed handshake (unknown CA on the client side, plain HTTP to the
                    // TLS port) just closes the connection, as the apiserver does.
                    let Ok(stream) = acceptor.accept(stream).await else { return };
                    let peer = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|chain| chain.first())
                        .and_then(|leaf| crate::tls::cert_user(leaf))
                        .map(Arc::new);
                    serve_connection(sh, peer, stream).await;
                });
            }
            _ = shutdown.changed() => break,
        }
    }
}

async fn serve_connection<S>(sh: Arc<Shared>, peer: Option<Arc<User>>, stream: S)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |req| handle(sh.clone(), peer.clone(), req));
    let _ = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
        .with_upgrades()
        .await;
}
