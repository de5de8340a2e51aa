//! The write verbs: create, update (and status), patch, delete and deletecollection, each
//! through admission (defaults, validation, webhooks, quota) in the API server's order.

use super::*;

pub(super) fn decode_body(ctx: &Ctx) -> Result<Value, ApiError> {
    parse_body(&ctx.body, &ctx.content_type).map_err(|e| {
        status::bad_request(format!("the body of the request could not be decoded: {e}"))
    })
}

/// Schema + webhook admission for custom resources; metadata checks for everything.
pub(super) fn admit(
    ctx: &Ctx,
    info: &ResourceInfo,
    old: Option<&Value>,
    obj: &mut Value,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let is_tfjob = info.plural == "tfjobs" && info.group == "kubeflow.org";
    if is_tfjob && old.is_none() {
        // Mutating admission runs before schema validation and the validating webhooks.
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if let Some(msg) = crate::queueing::kueue::webhook::unavailable(&ctx.sh, &ns) {
            // failurePolicy: Fail, and no ready manager pod behind the webhook Service.
            let mut e =
                status::injected(500, Some(&format!("Internal error occurred: {msg}")), None);
            e.body["details"] = json!({"causes": [{"message": msg}]});
            return Err(e);
        }
        crate::queueing::kueue::webhook::mutate_tfjob(&ctx.sh, &ns, obj);
    }
    let errs = validation::check_metadata(obj, &info.kind, &info.api_version())
        .map_err(status::bad_request)?;
    if let Some(v) = &info.crd_version {
        let schema = &v["schema"]["openAPIV3Schema"];
        if schema.is_object() {
            let out = validation::check_schema(schema, obj);
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
    // A custom resource's schema errors and its validating webhooks are the scenario's to
    // state (refusals.rs); pods get theirs with Pod admission.
    if info.plural != "pods"
        && let Some(e) =
            crate::refusals::refused(&ctx.sh, &info.plural, &info.kind, &info.group, &name)
    {
        return Err(e);
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
    if info.plural == "jobsets" && info.group == "jobset.x-k8s.io" {
        crate::jobset::admit(&ctx.sh, old, obj)?;
    }
    if is_tfjob {
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let errs = crate::queueing::kueue::webhook::validate_tfjob(&ctx.sh, &ns, old, obj);
        if !errs.is_empty() {
            return Err(status::webhook_denied(
                crate::queueing::kueue::webhook::VALIDATING,
                &errs,
            ));
        }
    }
    Ok(())
}

pub(super) fn with_warnings(mut r: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        if let Ok(v) = format!("299 - {w:?}").parse() {
            r.headers_mut().append("Warning", v);
        }
    }
    r
}

pub(super) fn store_err(e: StoreError, info: &ResourceInfo, name: &str) -> ApiError {
    match e {
        StoreError::NotFound => status::not_found(&info.plural, &info.group, name),
        StoreError::AlreadyExists => status::already_exists(&info.plural, &info.group, name),
        StoreError::Conflict => status::conflict(&info.plural, &info.group, name),
    }
}

pub(super) fn check_ns(ctx: &Ctx, info: &ResourceInfo, ns: &str) -> Result<(), ApiError> {
    if info.namespaced && !ctx.sh.store.namespace_exists(ns) {
        return Err(status::not_found("namespaces", "", ns));
    }
    Ok(())
}

pub(super) fn create(
    ctx: &Ctx,
    info: &ResourceInfo,
    t: &Target,
) -> Result<Response<Body>, ApiError> {
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
    if info.namespaced {
        // The apiserver fills the namespace from the request before admission.
        obj["metadata"]["namespace"] = json!(ns);
    }
    let mut warnings = Vec::new();
    admit(ctx, info, None, &mut obj, &mut warnings)?;
    crate::defaults::apply_defaults(&info.plural, &mut obj);
    if info.plural == "pods" && info.group.is_empty() {
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        crate::podadmission::check_create(&ctx.sh, &mut obj)?;
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

pub(super) fn self_subject_access_review(ctx: &Ctx, mut obj: Value) -> Value {
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
pub(super) fn write_update(
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
    // metadata.uid is immutable (apimachinery ValidateObjectMetaUpdate): an update or patch
    // that names another uid is 422, which makes a uid in a patch a precondition. Measured on
    // kube-apiserver 1.36.2, for a ConfigMap and a TFJob alike: the message once, the cause
    // twice (the generic store and the strategy both validate the object's metadata).
    let uid = &new["metadata"]["uid"];
    if !uid.is_null() && *uid != old["metadata"]["uid"] {
        let e = FieldError::invalid("metadata.uid", uid, "field is immutable");
        let mut err = status::invalid(&info.kind, &info.group, &name, std::slice::from_ref(&e));
        let cause = err.body["details"]["causes"][0].clone();
        err.body["details"]["causes"] = json!([cause.clone(), cause]);
        return Err(err);
    }
    let mut warnings = Vec::new();
    if t.sub != "status" {
        admit(ctx, info, Some(&old), &mut new, &mut warnings)?;
    } else if let Some(v) = &info.crd_version {
        // Status writes are pruned by the schema too; the webhook does not see them.
        let schema = &v["schema"]["openAPIV3Schema"];
        if schema.is_object() {
            validation::check_schema(schema, &mut new);
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

pub(super) fn update(
    ctx: &Ctx,
    info: &ResourceInfo,
    t: &Target,
) -> Result<Response<Body>, ApiError> {
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

pub(super) fn patch_obj(
    ctx: &Ctx,
    info: &ResourceInfo,
    t: &Target,
) -> Result<Response<Body>, ApiError> {
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
            if info.namespaced {
                obj["metadata"]["namespace"] = json!(ns);
            }
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

pub(super) fn delete(
    ctx: &Ctx,
    info: &ResourceInfo,
    t: &Target,
) -> Result<Response<Body>, ApiError> {
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

pub(super) fn delete_collection(
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
