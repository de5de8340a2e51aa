//! `metav1.Status` errors with kube-apiserver's wording.

use serde_json::{Value, json};

/// An API error: HTTP code plus the Status body the apiserver would send.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The full `metav1.Status` JSON.
    pub body: Value,
    /// Seconds for a `Retry-After` header (429/503).
    pub retry_after: Option<u64>,
}

/// One field error (`field.Error`) rendered as apimachinery does.
#[derive(Debug, Clone)]
pub struct FieldError {
    /// e.g. `FieldValueRequired`.
    pub reason: &'static str,
    /// Message without the field prefix, e.g. `Required value: must be required`.
    pub message: String,
    /// Field path, e.g. `spec.tfReplicaSpecs`.
    pub field: String,
}

impl FieldError {
    /// `field.Required`.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        FieldError {
            reason: "FieldValueRequired",
            message,
            field: field.into(),
        }
    }
    /// `field.Invalid` with a value rendered like Go's `%q` for strings.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        let v = match value {
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        };
        let message = if detail.is_empty() {
            format!("Invalid value: {v}")
        } else {
            format!("Invalid value: {v}: {detail}")
        };
        FieldError {
            reason: "FieldValueInvalid",
            message,
            field: field.into(),
        }
    }
    /// `<field>: <message>` as in the aggregated error string.
    pub fn render(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}

fn status(code: u16, reason: &str, message: String, details: Value) -> ApiError {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if !details.is_null() {
        body["details"] = details;
    }
    ApiError {
        code,
        body,
        retry_after: None,
    }
}

/// The API server's answer to a body past its limit (k8s.io/apiserver `pkg/server/config.go`
/// `MaxRequestBodyBytes` 3 MiB; `pkg/endpoints/handlers/rest.go` `limitedReadBody`).
pub fn request_too_large(limit: usize) -> ApiError {
    status(
        413,
        "RequestEntityTooLarge",
        format!("Request entity too large: limit is {limit}"),
        Value::Null,
    )
}

/// `<resource>.<group>` or `<resource>` for the core group, the "qualified resource" in messages.
pub fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

fn details(name: &str, group: &str, kind: &str) -> Value {
    let mut d = json!({ "name": name, "kind": kind });
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

/// 404 for a missing object.
pub fn not_found(resource: &str, group: &str, name: &str) -> ApiError {
    status(
        404,
        "NotFound",
        format!("{} {name:?} not found", qualified(resource, group)),
        details(name, group, resource),
    )
}

/// 503 ServiceUnavailable with a message (`errors.NewServiceUnavailable`), e.g. the service
/// proxy's `no endpoints available for service "NAME"`.
pub fn service_unavailable(message: &str) -> ApiError {
    status(503, "ServiceUnavailable", message.to_string(), Value::Null)
}

/// The body of [`unknown_resource`]: Go's `http.NotFound`, which kube-apiserver's
/// NotFoundHandler serves for a path no group, version or resource is registered at.
pub const PAGE_NOT_FOUND: &str = "404 page not found\n";

/// 404 for an unknown path: what the apiserver says when a group/version/resource is not served:
/// not a Status but the plain text `404 page not found` (compared on the wire with a real
/// kube-apiserver 1.36 by the real tier's `wire` test). A JSON string body is sent as text.
pub fn unknown_resource() -> ApiError {
    ApiError {
        code: 404,
        body: Value::String(PAGE_NOT_FOUND.into()),
        retry_after: None,
    }
}

/// 409 AlreadyExists.
pub fn already_exists(resource: &str, group: &str, name: &str) -> ApiError {
    status(
        409,
        "AlreadyExists",
        format!("{} {name:?} already exists", qualified(resource, group)),
        details(name, group, resource),
    )
}

/// 409 Conflict for a stale resourceVersion.
pub fn conflict(resource: &str, group: &str, name: &str) -> ApiError {
    status(
        409,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {} {name:?}: the object has been modified; please apply your changes to the latest version and try again",
            qualified(resource, group)
        ),
        details(name, group, resource),
    )
}

/// 422 Invalid, `Kind.group "name" is invalid: ...`.
pub fn invalid(kind: &str, group: &str, name: &str, errs: &[FieldError]) -> ApiError {
    let gk = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let rendered: Vec<String> = errs.iter().map(FieldError::render).collect();
    let msg = if rendered.len() == 1 {
        format!("{gk} {name:?} is invalid: {}", rendered[0])
    } else {
        format!("{gk} {name:?} is invalid: [{}]", rendered.join(", "))
    };
    let causes: Vec<Value> = errs
        .iter()
        .map(|e| json!({"reason": e.reason, "message": e.message, "field": e.field}))
        .collect();
    let mut d = details(name, group, kind);
    d["causes"] = json!(causes);
    status(422, "Invalid", msg, d)
}

/// Go's `field.ErrorList.ToAggregate().Error()` (k8s.io/apimachinery util/errors `aggregate`):
/// one error alone as is; several deduplicated by message, joined with ", " inside `[...]`.
pub fn aggregate(errs: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        let m = e.render();
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    if seen.len() == 1 {
        seen.remove(0)
    } else {
        format!("[{}]", seen.join(", "))
    }
}

/// A validating webhook's denial as the API server returns it. controller-runtime turns the
/// validator's error into `admission.Denied(err.Error())` (pkg/webhook/admission/response.go
/// `ValidationResponse`: code 403, reason Forbidden), and kube-apiserver's
/// `ToStatusErr` (k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go)
/// prefixes `admission webhook "<name>" denied the request: `. No details, no causes.
pub fn webhook_denied(webhook: &str, errs: &[FieldError]) -> ApiError {
    status(
        403,
        "Forbidden",
        format!(
            "admission webhook {webhook:?} denied the request: {}",
            aggregate(errs)
        ),
        Value::Null,
    )
}

/// 403 Forbidden with the RBAC authorizer's sentence.
pub fn forbidden(
    user: &str,
    verb: &str,
    resource: &str,
    group: &str,
    namespace: Option<&str>,
    name: &str,
) -> ApiError {
    let mut msg = format!(
        "{} is forbidden: User {user:?} cannot {verb} resource {resource:?} in API group {group:?}",
        if name.is_empty() {
            qualified(resource, group)
        } else {
            format!("{} {name:?}", qualified(resource, group))
        }
    );
    match namespace {
        Some(ns) if !ns.is_empty() => msg.push_str(&format!(" in the namespace {ns:?}")),
        _ => msg.push_str(" at the cluster scope"),
    }
    status(403, "Forbidden", msg, details(name, group, resource))
}

/// 401 for a missing or wrong token.
pub fn unauthorized() -> ApiError {
    status(401, "Unauthorized", "Unauthorized".into(), Value::Null)
}

/// 400 BadRequest.
pub fn bad_request(msg: impl Into<String>) -> ApiError {
    status(400, "BadRequest", msg.into(), Value::Null)
}

/// 405 MethodNotAllowed.
pub fn method_not_allowed() -> ApiError {
    status(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource".into(),
        json!({}),
    )
}

/// 415 for an unsupported patch content type.
pub fn unsupported_media(ct: &str) -> ApiError {
    status(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {ct}"
        ),
        Value::Null,
    )
}

/// 410 Expired for a too-old resourceVersion.
pub fn expired(rv: &str, oldest: u64) -> ApiError {
    status(
        410,
        "Expired",
        format!("too old resource version: {rv} ({oldest})"),
        Value::Null,
    )
}

/// Any code a fault injects, with the reason/message kube-apiserver uses for it.
pub fn injected(code: u16, message: Option<&str>, retry_after: Option<u64>) -> ApiError {
    let (reason, default_msg) = match code {
        400 => ("BadRequest", "bad request"),
        401 => ("Unauthorized", "Unauthorized"),
        403 => ("Forbidden", "forbidden"),
        404 => (
            "NotFound",
            "the server could not find the requested resource",
        ),
        409 => ("Conflict", "conflict"),
        410 => ("Expired", "too old resource version"),
        422 => ("Invalid", "invalid"),
        429 => (
            "TooManyRequests",
            "Too many requests, please try again later.",
        ),
        500 => ("InternalError", "Internal error occurred: injected fault"),
        503 => (
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        ),
        504 => (
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
        ),
        _ => ("InternalError", "injected fault"),
    };
    let mut details = Value::Null;
    if let Some(s) = retry_after {
        details = json!({ "retryAfterSeconds": s });
    }
    let mut e = status(
        code,
        reason,
        message.unwrap_or(default_msg).to_string(),
        details,
    );
    e.retry_after = retry_after.or(if code == 429 { Some(1) } else { None });
    e
}

#[cfg(test)]
mod webhook_tests {
    use super::*;

    #[test]
    fn denial_aggregates_like_go() {
        let a = FieldError::required("spec.x", "must be specified");
        let b = FieldError {
            reason: "FieldValueForbidden",
            message: "Forbidden: no".into(),
            field: "spec.y".into(),
        };
        // One error: no brackets. Repeated messages are printed once (utilerrors aggregate).
        let one = webhook_denied("w.example", &[a.clone(), a.clone()]);
        assert_eq!(one.code, 403);
        assert_eq!(one.body["reason"], "Forbidden");
        assert_eq!(
            one.body["message"],
            "admission webhook \"w.example\" denied the request: spec.x: Required value: must be specified"
        );
        assert!(one.body.get("details").is_none());
        let two = webhook_denied("w.example", &[a, b]);
        assert_eq!(
            two.body["message"],
            "admission webhook \"w.example\" denied the request: [spec.x: Required value: must be specified, spec.y: Forbidden: no]"
        );
    }
}
