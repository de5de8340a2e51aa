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
use crate::resources::{self, ResourceInfo};
use crate::scenario::OperatorMode;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::{Request, Shared};
use crate::status::{self, ApiError, FieldError};
use crate::store::StoreError;
use crate::util::{now_rfc3339, random_suffix};
use crate::{openapi, patch, table, validation, watch};

/// Response body type.
pub type Body = BoxBody<Bytes, Infallible>;

/// Parsed query string (last value wins).
pub type Query = HashMap<String, String>;

fn pct_decode(s: &str) -> String {
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

fn parse_query(q: &str) -> Query {
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
    let mut r = json_response(e.code, &e.body);
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
        return None;
    }
    Some(t)
}

fn verb_for(method: &Method, t: &Target, q: &Query) -> &'static str {
    let watch = t.legacy_watch || q.get("watch").is_some_and(|w| w == "1" || w == "true");
    match *method {
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

/// Entry point for every request. `Err` aborts the connection (fault `reset`).
pub async fn handle(
    sh: Arc<Shared>,
    peer: Option<Arc<User>>,
    req: hyper::Request<Incoming>,
) -> Result<Response<Body>, std::io::Error> {
    let at = Instant::now();
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
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
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
    let resp = if let Some(e) = proto_err {
        error_response(&status::unsupported_media(&format!("{content_type} ({e})")))
    } else if content_type.starts_with("application/cbor") {
        error_response(&status::unsupported_media(&content_type))
    } else if let Some(f) = &decision.status {
        error_response(&status::injected(
            f.status.unwrap_or(500),
            f.message.as_deref(),
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
        };
        route(&ctx, &method, &path, target, &verb, user.is_ok()).await
    };
    log.status = resp.status().as_u16();
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
        "/apis" => return json_response(200, &resources::group_list(store)),
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
    let (mut items, rv) = store.list_filtered_shared(&info.plural, ns, |o| {
        f.labels.matches(o) && f.fields.matches(o)
    });
    // limit/continue: the token is the namespace/name of the last item returned.
    let mut cont = String::new();
    if let Some(after) = ctx.q.get("continue").filter(|c| !c.is_empty()) {
        let key = |o: &Value| {
            format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        };
        items.retain(|o| key(o).as_str() > after.as_str());
    }
    let remaining;
    if let Some(limit) = ctx
        .q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        && items.len() > limit
    {
        remaining = items.len() - limit;
        items.truncate(limit);
        let last = items.last().unwrap();
        cont = format!(
            "{}/{}",
            last["metadata"]["namespace"].as_str().unwrap_or(""),
            last["metadata"]["name"].as_str().unwrap_or("")
        );
    } else {
        remaining = 0;
    }
    if wants_table(&ctx.accept) {
        let owned: Vec<Value> = items.iter().map(|a| (**a).clone()).collect();
        let mut tb = table::table(store, info, &owned, &rv.to_string(), &ctx.q, true);
        if !cont.is_empty() {
            tb["metadata"]["continue"] = json!(cont);
        }
        return Ok(json_response(200, &tb));
    }
    if info.group == "events.k8s.io" {
        items = items
            .iter()
            .map(|o| Arc::new(resources::convert_out(info, o)))
            .collect();
    }
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if !cont.is_empty() {
        meta["continue"] = json!(cont);
        meta["remainingItemCount"] = json!(remaining);
    }
    let head = json!({"kind": info.list_kind, "apiVersion": info.api_version(), "metadata": meta});
    let mut buf = serde_json::to_vec(&head).unwrap();
    buf.pop(); // the closing brace; items follow
    buf.extend_from_slice(b",\"items\":[");
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        serde_json::to_writer(&mut buf, &**it).unwrap();
    }
    buf.extend_from_slice(b"]}");
    Ok(Response::builder()
        .status(200)
        .header("Content-Type", "application/json")
        .header("Cache-Control", "no-cache, private")
        .body(Full::new(Bytes::from(buf)).boxed())
        .unwrap())
}

fn decode_body(ctx: &Ctx) -> Result<Value, ApiError> {
    parse_body(&ctx.body, &ctx.content_type).map_err(|e| {
        status::bad_request(format!("the body of the request could not be decoded: {e}"))
    })
}

/// Schema + webhook admission for custom resources; metadata checks for everything.
fn admit(
    ctx: &Ctx,
    info: &ResourceInfo,
    old: Option<&Value>,
    obj: &mut Value,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let mut errs = validation::check_metadata(obj, &info.kind, &info.api_version())
        .map_err(status::bad_request)?;
    if let Some(v) = &info.crd_version {
        let schema = &v["schema"]["openAPIV3Schema"];
        if schema.is_object() {
            let out = validation::check_schema(schema, obj);
            errs.extend(out.errors);
            if !out.unknown.is_empty() {
                let strict = ctx.q.get("fieldValidation").is_some_and(|f| f == "Strict");
                if strict {
                    let list: Vec<String> = out
                        .unknown
                        .iter()
                        .map(|u| format!("unknown field {:?}", u.trim_start_matches('.')))
                        .collect();
                    return Err(status::bad_request(format!(
                        "{} in version {:?} cannot be handled as a {}: strict decoding error: {}",
                        info.kind,
                        info.version,
                        info.kind,
                        list.join(", ")
                    )));
                }
                if ctx.q.get("fieldValidation").is_none_or(|f| f != "Ignore") {
                    warnings.extend(
                        out.unknown
                            .iter()
                            .map(|u| format!("unknown field {:?}", u.trim_start_matches('.'))),
                    );
                }
            }
        }
    }
    if !errs.is_empty() {
        return Err(status::invalid(&info.kind, &info.group, &name, &errs));
    }
    if info.plural == "tfjobs"
        && info.group == "kubeflow.org"
        && ctx.sh.scenario.webhook_unavailable
    {
        // failurePolicy: Fail with no ready operator pod behind the webhook Service.
        let ns = &ctx.sh.scenario.operator_namespace;
        let msg = format!(
            "failed calling webhook \"validator.tfjob.training-operator.kubeflow.org\": failed to call webhook: Post \"https://training-operator.{ns}.svc:443/validate-kubeflow-org-v1-tfjob?timeout=10s\": no endpoints available for service \"training-operator\""
        );
        let mut e = status::injected(500, Some(&format!("Internal error occurred: {msg}")), None);
        e.body["details"] = json!({"causes": [{"message": msg}]});
        return Err(e);
    }
    if info.plural == "tfjobs"
        && info.group == "kubeflow.org"
        && *ctx.sh.mode.borrow() == OperatorMode::Running
    {
        let errs: Vec<FieldError> = validation::validate_tfjob(old, obj);
        if !errs.is_empty() {
            // Called on dry runs too: the webhook declares sideEffects None.
            return Err(status::webhook_denied(
                "validator.tfjob.training-operator.kubeflow.org",
                &errs,
            ));
        }
    }
    Ok(())
}

fn with_warnings(mut r: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        if let Ok(v) = format!("299 - {w:?}").parse() {
            r.headers_mut().append("Warning", v);
        }
    }
    r
}

fn store_err(e: StoreError, info: &ResourceInfo, name: &str) -> ApiError {
    match e {
        StoreError::NotFound => status::not_found(&info.plural, &info.group, name),
        StoreError::AlreadyExists => status::already_exists(&info.plural, &info.group, name),
        StoreError::Conflict => status::conflict(&info.plural, &info.group, name),
    }
}

fn check_ns(ctx: &Ctx, info: &ResourceInfo, ns: &str) -> Result<(), ApiError> {
    if info.namespaced && !ctx.sh.store.namespace_exists(ns) {
        return Err(status::not_found("namespaces", "", ns));
    }
    Ok(())
}

fn create(ctx: &Ctx, info: &ResourceInfo, t: &Target) -> Result<Response<Body>, ApiError> {
    if t.name.is_some() {
        return Err(status::method_not_allowed());
    }
    let mut obj = decode_body(ctx)?;
    if info.plural == "selfsubjectaccessreviews" {
        return Ok(json_response(201, &self_subject_access_review(ctx, obj)));
    }
    let ns = ns_of(info, t);
    if let Some(bns) = obj["metadata"]["namespace"].as_str()
        && info.namespaced
        && !bns.is_empty()
        && bns != ns
    {
        return Err(status::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if obj["kind"].as_str().is_some_and(|k| k != info.kind)
        || obj["apiVersion"]
            .as_str()
            .is_some_and(|a| a != info.api_version())
    {
        return Err(status::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            obj["apiVersion"].as_str().unwrap_or(""),
            info.api_version()
        )));
    }
    obj["kind"] = json!(info.kind);
    obj["apiVersion"] = json!(info.api_version());
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    if obj["metadata"]["name"].as_str().unwrap_or("").is_empty()
        && let Some(g) = obj["metadata"]["generateName"]
            .as_str()
            .filter(|g| !g.is_empty())
    {
        // k8s.io/apiserver/pkg/storage/names/generate.go: the prefix is cut to 63 - 5
        // characters so the name fits, then 5 random characters are appended; this happens
        // before admission, so the webhook checks the generated name.
        let base: String = g.chars().take(58).collect();
        obj["metadata"]["name"] = json!(format!("{base}{}", random_suffix()));
    }
    check_ns(ctx, info, &ns)?;
    let mut warnings = Vec::new();
    admit(ctx, info, None, &mut obj, &mut warnings)?;
    crate::defaults::apply_defaults(&info.plural, &mut obj);
    if info.plural == "pods" && info.group.is_empty() {
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        crate::admission::admit_pod(&ctx.sh, &ns, &mut obj)
            .map_err(|m| crate::admission::forbidden(&name, &m))?;
    }
    if info.subresources.iter().any(|s| s == "status") && info.crd_version.is_some() {
        // Custom resources with a status subresource ignore status on create.
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
        }
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    if ctx.q.get("dryRun").is_some_and(|d| d == "All") {
        if ctx.sh.store.get(&info.plural, &ns, &name).is_some() {
            return Err(status::already_exists(&info.plural, &info.group, &name));
        }
        obj["metadata"]["uid"] = json!(crate::util::new_uid());
        obj["metadata"]["creationTimestamp"] = json!(now_rfc3339());
        if info.namespaced {
            obj["metadata"]["namespace"] = json!(ns);
        }
        return Ok(with_warnings(json_response(201, &obj), &warnings));
    }
    let created = ctx
        .sh
        .store
        .create(&info.plural, &ns, obj)
        .map_err(|e| store_err(e, info, &name))?;
    Ok(with_warnings(json_response(201, &created), &warnings))
}

fn self_subject_access_review(ctx: &Ctx, mut obj: Value) -> Value {
    let ra = obj["spec"]["resourceAttributes"].clone();
    let verb = ra["verb"].as_str().unwrap_or("");
    let resource = ra["resource"].as_str().unwrap_or("");
    let ns = ra["namespace"].as_str();
    let user = &ctx.user.name;
    let denied = ctx.sh.denied(user, verb, resource, ns);
    obj["status"] = if denied {
        json!({"allowed": false, "denied": false, "reason": ""})
    } else {
        json!({"allowed": true, "reason": format!("RBAC: allowed by ClusterRoleBinding \"{user}-admin\" of ClusterRole \"cluster-admin\" to User \"{user}\"")})
    };
    obj["metadata"] = json!({"creationTimestamp": null});
    obj["apiVersion"] = json!("authorization.k8s.io/v1");
    obj["kind"] = json!("SelfSubjectAccessReview");
    obj
}

/// Writes `new` over the stored object, honouring the status subresource split.
fn write_update(
    ctx: &Ctx,
    info: &ResourceInfo,
    t: &Target,
    old: Value,
    mut new: Value,
    expected_rv: Option<String>,
    code: u16,
) -> Result<Response<Body>, ApiError> {
    let ns = ns_of(info, t);
    let name = t.name.clone().unwrap_or_default();
    let has_status_sub = info.subresources.iter().any(|s| s == "status");
    if t.sub == "status" {
        // Only status changes through /status.
        let status = new.get("status").cloned();
        new = old.clone();
        match status {
            Some(s) => new["status"] = s,
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    } else if has_status_sub {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    new["kind"] = json!(info.kind);
    new["apiVersion"] = json!(info.api_version());
    let mut warnings = Vec::new();
    if t.sub != "status" {
        admit(ctx, info, Some(&old), &mut new, &mut warnings)?;
    } else if let Some(v) = &info.crd_version {
        // Status writes are schema-validated (and pruned) too; the webhook does not see them.
        let schema = &v["schema"]["openAPIV3Schema"];
        if schema.is_object() {
            let out = validation::check_schema(schema, &mut new);
            if !out.errors.is_empty() {
                let name = new["metadata"]["name"].as_str().unwrap_or("").to_string();
                return Err(status::invalid(&info.kind, &info.group, &name, &out.errors));
            }
        }
    }
    if info.plural == "secrets" {
        crate::defaults::apply_defaults(&info.plural, &mut new);
    }
    if ctx.q.get("dryRun").is_some_and(|d| d == "All") {
        return Ok(with_warnings(json_response(code, &new), &warnings));
    }
    let out = ctx
        .sh
        .store
        .update(&info.plural, &ns, &name, new, expected_rv.as_deref())
        .map_err(|e| store_err(e, info, &name))?;
    Ok(with_warnings(json_response(code, &out), &warnings))
}

fn update(ctx: &Ctx, info: &ResourceInfo, t: &Target) -> Result<Response<Body>, ApiError> {
    let name = t.name.clone().ok_or_else(status::method_not_allowed)?;
    let new = decode_body(ctx)?;
    if let Some(bn) = new["metadata"]["name"].as_str()
        && bn != name
    {
        return Err(status::bad_request(format!(
            "the name of the object ({bn}) does not match the name on the URL ({name})"
        )));
    }
    let ns = ns_of(info, t);
    let old = ctx
        .sh
        .store
        .get(&info.plural, &ns, &name)
        .ok_or_else(|| status::not_found(&info.plural, &info.group, &name))?;
    let rv = new["metadata"]["resourceVersion"]
        .as_str()
        .map(String::from);
    if rv.as_deref().is_none_or(str::is_empty) && info.crd_version.is_some() {
        return Err(status::invalid(
            &info.kind,
            &info.group,
            &name,
            &[FieldError::invalid(
                "metadata.resourceVersion",
                &json!(0),
                "must be specified for an update",
            )],
        ));
    }
    if let Some(r) = &rv
        && !r.is_empty()
        && Some(r.as_str()) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(status::conflict(&info.plural, &info.group, &name));
    }
    write_update(ctx, info, t, old, new, rv, 200)
}

fn patch_obj(ctx: &Ctx, info: &ResourceInfo, t: &Target) -> Result<Response<Body>, ApiError> {
    let name = t.name.clone().ok_or_else(status::method_not_allowed)?;
    let ns = ns_of(info, t);
    let ct = ctx
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let p = decode_body(ctx)?;
    let manager = ctx.q.get("fieldManager").cloned().unwrap_or_default();
    let apply_key = (
        info.plural.clone(),
        ns.clone(),
        name.clone(),
        t.sub.clone(),
        manager,
    );
    let dry = ctx.q.get("dryRun").is_some_and(|d| d == "All");
    let mut prev_applied = None;
    if ct == "application/apply-patch+yaml" {
        if p["apiVersion"].as_str().unwrap_or("").is_empty()
            || p["kind"].as_str().unwrap_or("").is_empty()
        {
            return Err(status::bad_request("invalid object type: /, Kind="));
        }
        let mut applied = ctx.sh.applied.lock().unwrap();
        // Remembered before the write; a rejected apply leaves a stale entry, which only
        // matters if the same manager later drops fields it never managed to apply.
        prev_applied = if dry {
            applied.get(&apply_key).cloned()
        } else {
            applied.insert(apply_key, p.clone())
        };
    }
    let existing = ctx.sh.store.get(&info.plural, &ns, &name);
    let Some(old) = existing else {
        if ct == "application/apply-patch+yaml" {
            if ctx.q.get("fieldManager").is_none_or(String::is_empty) {
                return Err(status::bad_request(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                ));
            }
            // Server-side apply creates missing objects.
            let mut obj = p;
            obj["metadata"]["name"] = json!(name);
            check_ns(ctx, info, &ns)?;
            let mut warnings = Vec::new();
            admit(ctx, info, None, &mut obj, &mut warnings)?;
            crate::defaults::apply_defaults(&info.plural, &mut obj);
            if ctx.q.get("dryRun").is_some_and(|d| d == "All") {
                return Ok(json_response(201, &obj));
            }
            let created = ctx
                .sh
                .store
                .create(&info.plural, &ns, obj)
                .map_err(|e| store_err(e, info, &name))?;
            return Ok(with_warnings(json_response(201, &created), &warnings));
        }
        return Err(status::not_found(&info.plural, &info.group, &name));
    };
    let mut new = old.clone();
    match ct.as_str() {
        "application/merge-patch+json" => patch::merge_patch(&mut new, &p),
        "application/strategic-merge-patch+json" => {
            if info.crd_version.is_some() {
                return Err(ApiError {
                    code: 415,
                    body: status::unsupported_media(&ct).body,
                    retry_after: None,
                });
            }
            patch::strategic_merge_patch(&mut new, &p)
        }
        "application/json-patch+json" => patch::json_patch(&mut new, &p).map_err(|e| {
            let mut err = status::invalid(&info.kind, &info.group, &name, &[]);
            err.body["message"] = json!(e);
            err
        })?,
        "application/apply-patch+yaml" => {
            if ctx.q.get("fieldManager").is_none_or(String::is_empty) {
                return Err(status::bad_request(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                ));
            }
            patch::apply_patch(&mut new, &p);
            if let Some(prev) = &prev_applied {
                patch::remove_dropped(&mut new, prev, &p);
            }
        }
        other => return Err(status::unsupported_media(other)),
    }
    let rv = p["metadata"]["resourceVersion"].as_str().map(String::from);
    if let Some(r) = &rv
        && Some(r.as_str()) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(status::conflict(&info.plural, &info.group, &name));
    }
    write_update(ctx, info, t, old, new, rv, 200)
}

fn delete(ctx: &Ctx, info: &ResourceInfo, t: &Target) -> Result<Response<Body>, ApiError> {
    let name = t.name.clone().unwrap_or_default();
    let ns = ns_of(info, t);
    let obj = ctx
        .sh
        .store
        .get(&info.plural, &ns, &name)
        .ok_or_else(|| status::not_found(&info.plural, &info.group, &name))?;
    let opts = if ctx.body.is_empty() {
        json!({})
    } else {
        decode_body(ctx).unwrap_or(json!({}))
    };
    if let Some(uid) = opts["preconditions"]["uid"].as_str()
        && Some(uid) != obj["metadata"]["uid"].as_str()
    {
        return Err(status::conflict(&info.plural, &info.group, &name));
    }
    let dry = ctx.q.get("dryRun").is_some_and(|d| d == "All")
        || opts["dryRun"]
            .as_array()
            .is_some_and(|a| a.iter().any(|d| d == "All"));
    if dry {
        return Ok(json_response(200, &obj));
    }
    let orphan = ctx
        .q
        .get("propagationPolicy")
        .or(opts["propagationPolicy"]
            .as_str()
            .map(String::from)
            .as_ref())
        .is_some_and(|p| p == "Orphan");
    if orphan {
        // Orphan: strip the owner references from dependents first.
        let uid = obj["metadata"]["uid"].as_str().unwrap_or("").to_string();
        for r in ["pods", "services"] {
            let (deps, _) = ctx.sh.store.list_filtered(r, Some(&ns), |o| {
                o["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x["uid"] == json!(uid)))
            });
            for d in deps {
                let dn = d["metadata"]["name"].as_str().unwrap_or("").to_string();
                let uid = uid.clone();
                ctx.sh.store.modify(r, &ns, &dn, move |o| {
                    if let Some(a) = o["metadata"]["ownerReferences"].as_array_mut() {
                        a.retain(|x| x["uid"] != json!(uid));
                    }
                    true
                });
            }
        }
    }
    let mut removed = ctx
        .sh
        .store
        .delete(&info.plural, &ns, &name)
        .map_err(|e| store_err(e, info, &name))?;
    if info.plural == "namespaces" {
        removed["status"]["phase"] = json!("Terminating");
        removed["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
    }
    Ok(json_response(200, &removed))
}

fn delete_collection(
    ctx: &Ctx,
    info: &ResourceInfo,
    t: &Target,
) -> Result<Response<Body>, ApiError> {
    let f = filters(ctx, info)?;
    let ns = if info.namespaced {
        t.namespace.as_deref()
    } else {
        None
    };
    let (items, _) = ctx.sh.store.list_filtered(&info.plural, ns, |o| {
        f.labels.matches(o) && f.fields.matches(o)
    });
    let dry = ctx.q.get("dryRun").is_some_and(|d| d == "All");
    let mut out = Vec::new();
    for o in items {
        let n = o["metadata"]["name"].as_str().unwrap_or("").to_string();
        let ons = o["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if dry {
            out.push(o);
        } else if let Ok(v) = ctx.sh.store.delete(&info.plural, &ons, &n) {
            out.push(v);
        }
    }
    let rv = ctx.sh.store.current_rv();
    Ok(json_response(
        200,
        &json!({"kind": info.list_kind, "apiVersion": info.api_version(), "metadata": {"resourceVersion": rv.to_string()}, "items": out}),
    ))
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
        .await;
}
