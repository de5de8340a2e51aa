//! Minimal OpenAPI v3 documents: enough for kubectl to see that every resource's PATCH
//! accepts `fieldValidation` (so it validates server-side) and to find schemas for CRs.

use serde_json::{Value, json};

use crate::resources::{self, ResourceInfo};
use crate::store::Store;

fn gv_key(r: &ResourceInfo) -> String {
    if r.group.is_empty() {
        format!("api/{}", r.version)
    } else {
        format!("apis/{}/{}", r.group, r.version)
    }
}

/// `/openapi/v3`: the index of per-group-version documents.
pub fn index(store: &Store) -> Value {
    let mut paths = serde_json::Map::new();
    for r in resources::all(store) {
        let k = gv_key(&r);
        let hash = format!("{:016X}", store.current_rv());
        paths.entry(k.clone()).or_insert_with(
            || json!({"serverRelativeURL": format!("/openapi/v3/{k}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

fn params() -> Value {
    json!([
        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}}
    ])
}

/// `/openapi/v3/<api/v1|apis/g/v>` document.
pub fn group_version_doc(store: &Store, gv: &str) -> Option<Value> {
    let rs: Vec<ResourceInfo> = resources::all(store)
        .into_iter()
        .filter(|r| gv_key(r) == gv)
        .collect();
    if rs.is_empty() {
        return None;
    }
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for r in &rs {
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let schema_name = format!(
            "{}.{}.{}",
            if r.group.is_empty() {
                "io.k8s.api.core"
            } else {
                &r.group
            },
            r.version,
            r.kind
        );
        let mut schema = r
            .crd_version
            .as_ref()
            .map(|v| v["schema"]["openAPIV3Schema"].clone())
            .filter(Value::is_object)
            .unwrap_or_else(
                || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            );
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(schema_name.clone(), schema);
        let sref = json!({"$ref": format!("#/components/schemas/{schema_name}")});
        let base = if r.namespaced {
            format!("/{gv}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("/{gv}/{}", r.plural)
        };
        let ok = json!({"200": {"description": "OK", "content": {"application/json": {"schema": sref}}}});
        let body = |types: &[&str]| {
            let content: serde_json::Map<String, Value> = types
                .iter()
                .map(|t| (t.to_string(), json!({"schema": sref})))
                .collect();
            json!({"content": content, "required": true})
        };
        // Built-ins deliberately omit strategic-merge here: kubectl then falls back to its
        // compiled-in types for strategic merge rather than needing full schemas from us.
        let patch_types: Vec<&str> = vec![
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ];
        paths.insert(
            base.clone(),
            json!({
                "get": {"operationId": format!("list{}", r.kind), "x-kubernetes-action": "list", "x-kubernetes-group-version-kind": gvk, "responses": ok},
                "post": {"operationId": format!("create{}", r.kind), "x-kubernetes-action": "post", "x-kubernetes-group-version-kind": gvk, "parameters": params(), "requestBody": body(&["*/*"]), "responses": ok}
            }),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({
                "get": {"operationId": format!("read{}", r.kind), "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk, "responses": ok},
                "put": {"operationId": format!("replace{}", r.kind), "x-kubernetes-action": "put", "x-kubernetes-group-version-kind": gvk, "parameters": params(), "requestBody": body(&["*/*"]), "responses": ok},
                "patch": {"operationId": format!("patch{}", r.kind), "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk, "parameters": params(), "requestBody": body(&patch_types), "responses": ok},
                "delete": {"operationId": format!("delete{}", r.kind), "x-kubernetes-action": "delete", "x-kubernetes-group-version-kind": gvk, "responses": ok}
            }),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.1"},
        "paths": paths,
        "components": {"schemas": schemas}
    }))
}
