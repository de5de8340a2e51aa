//! What resources the server serves: built-in kinds plus whatever CRDs are stored.

use serde_json::{Value, json};

use crate::store::Store;

/// One served resource (a group/version/plural).
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    /// API group ("" for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural (store key).
    pub plural: String,
    /// Singular.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// List kind.
    pub list_kind: String,
    /// Namespaced?
    pub namespaced: bool,
    /// Short names.
    pub short_names: Vec<String>,
    /// Verbs.
    pub verbs: Vec<String>,
    /// Subresources (e.g. "status", "log").
    pub subresources: Vec<String>,
    /// Categories.
    pub categories: Vec<String>,
    /// For CRDs: the version entry of the CRD (schema, printer columns).
    pub crd_version: Option<Value>,
}

impl ResourceInfo {
    /// `apiVersion` string.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const ALL: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    short: &[&str],
    verbs: &[&str],
    subs: &[&str],
) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        namespaced,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        subresources: subs.iter().map(|s| s.to_string()).collect(),
        categories: vec![],
        crd_version: None,
    }
}

/// Built-in resources (a subset of kube-apiserver's, what the plugin and kubectl touch).
pub fn builtins() -> Vec<ResourceInfo> {
    let mut v = builtin_list();
    // `kubectl get all` expands the "all" category through discovery.
    for r in v.iter_mut() {
        if matches!(r.plural.as_str(), "pods" | "services" | "deployments") {
            r.categories = vec!["all".into()];
        }
    }
    v
}

fn builtin_list() -> Vec<ResourceInfo> {
    vec![
        builtin(
            "",
            "v1",
            "namespaces",
            "Namespace",
            false,
            &["ns"],
            &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ],
            &["status"],
        ),
        builtin(
            "",
            "v1",
            "pods",
            "Pod",
            true,
            &["po"],
            ALL,
            &["status", "log", "exec"],
        ),
        builtin(
            "",
            "v1",
            "services",
            "Service",
            true,
            &["svc"],
            ALL,
            &["status"],
        ),
        builtin("", "v1", "secrets", "Secret", true, &[], ALL, &[]),
        builtin("", "v1", "configmaps", "ConfigMap", true, &["cm"], ALL, &[]),
        builtin("", "v1", "events", "Event", true, &["ev"], ALL, &[]),
        builtin("", "v1", "nodes", "Node", false, &["no"], ALL, &["status"]),
        builtin(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            &["pvc"],
            ALL,
            &["status"],
        ),
        builtin(
            "",
            "v1",
            "resourcequotas",
            "ResourceQuota",
            true,
            &["quota"],
            ALL,
            &["status"],
        ),
        builtin(
            "",
            "v1",
            "limitranges",
            "LimitRange",
            true,
            &["limits"],
            ALL,
            &[],
        ),
        builtin(
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            "PriorityClass",
            false,
            &["pc"],
            ALL,
            &[],
        ),
        builtin(
            "node.k8s.io",
            "v1",
            "runtimeclasses",
            "RuntimeClass",
            false,
            &[],
            ALL,
            &[],
        ),
        builtin(
            "storage.k8s.io",
            "v1",
            "storageclasses",
            "StorageClass",
            false,
            &["sc"],
            ALL,
            &[],
        ),
        builtin(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            true,
            &["sa"],
            ALL,
            &[],
        ),
        builtin(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            true,
            &["ev"],
            &["get", "list", "watch"],
            &[],
        ),
        builtin(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
            &["deploy"],
            ALL,
            &["status"],
        ),
        builtin("batch", "v1", "jobs", "Job", true, &[], ALL, &["status"]),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            ALL,
            &["status"],
        ),
        builtin(
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            false,
            &[],
            &["create"],
            &[],
        ),
    ]
}

/// Resources defined by stored CRDs (only versions marked served).
pub fn from_crds(store: &Store) -> Vec<ResourceInfo> {
    let (crds, _) = store.list("customresourcedefinitions", None);
    let mut out = Vec::new();
    for crd in crds {
        let spec = &crd["spec"];
        let names = &spec["names"];
        let Some(plural) = names["plural"].as_str() else {
            continue;
        };
        for v in spec["versions"].as_array().into_iter().flatten() {
            if v["served"] != json!(true) {
                continue;
            }
            let kind = names["kind"].as_str().unwrap_or_default().to_string();
            let mut subs = vec![];
            if v["subresources"]["status"].is_object() {
                subs.push("status".to_string());
            }
            if v["subresources"]["scale"].is_object() {
                subs.push("scale".to_string());
            }
            let strs = |x: &Value| -> Vec<String> {
                x.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            };
            out.push(ResourceInfo {
                group: spec["group"].as_str().unwrap_or_default().into(),
                version: v["name"].as_str().unwrap_or_default().into(),
                plural: plural.into(),
                singular: names["singular"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| kind.to_lowercase()),
                list_kind: names["listKind"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| format!("{kind}List")),
                kind,
                namespaced: spec["scope"] == "Namespaced",
                short_names: strs(&names["shortNames"]),
                verbs: ALL.iter().map(|s| s.to_string()).collect(),
                subresources: subs,
                categories: strs(&names["categories"]),
                crd_version: Some(v.clone()),
            });
        }
    }
    out
}

/// Every served resource right now.
pub fn all(store: &Store) -> Vec<ResourceInfo> {
    let mut v = builtins();
    v.extend(from_crds(store));
    v
}

/// Looks up a resource by group, version and plural.
pub fn find(store: &Store, group: &str, version: &str, plural: &str) -> Option<ResourceInfo> {
    if let Some(r) = builtins()
        .into_iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
    {
        return Some(r);
    }
    from_crds(store)
        .into_iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// Resource info for an object given its apiVersion/kind (for `TestCluster::insert`).
pub fn for_kind(store: &Store, api_version: &str, kind: &str) -> Option<ResourceInfo> {
    all(store)
        .into_iter()
        .find(|r| r.api_version() == api_version && r.kind == kind)
}

/// `APIResourceList` for /api/v1 or /apis/<g>/<v>.
pub fn resource_list(store: &Store, group: &str, version: &str) -> Option<Value> {
    let rs: Vec<ResourceInfo> = all(store)
        .into_iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if rs.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for r in &rs {
        let mut e = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": r.verbs,
        });
        if !r.short_names.is_empty() {
            e["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            e["categories"] = json!(r.categories);
        }
        if r.crd_version.is_none() && r.group.is_empty() {
            e["storageVersionHash"] = json!("");
        }
        resources.push(e);
        for s in &r.subresources {
            let verbs: Vec<&str> = if s == "log" {
                vec!["get"]
            } else {
                vec!["get", "patch", "update"]
            };
            let kind = if s == "log" {
                "Pod".to_string()
            } else {
                r.kind.clone()
            };
            resources.push(json!({"name": format!("{}/{}", r.plural, s), "singularName": "", "namespaced": r.namespaced, "kind": kind, "verbs": verbs}));
        }
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": if group.is_empty() { version.to_string() } else { format!("{group}/{version}") },
        "resources": resources,
    }))
}

/// `APIGroupList` for /apis.
pub fn group_list(store: &Store) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in all(store) {
        if r.group.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, vs)) => {
                if !vs.contains(&r.version) {
                    vs.push(r.version.clone())
                }
            }
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(g, vs)| group_json(&g, &vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `APIGroup` JSON.
pub fn group_json(g: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": vs, "preferredVersion": vs[0]})
}

/// Objects are stored in their core/v1 shape; events.k8s.io/v1 reads get converted the
/// way the apiserver converts between the two Event versions.
pub fn convert_out(info: &ResourceInfo, obj: &Value) -> Value {
    if !(info.group == "events.k8s.io" && info.plural == "events") {
        return obj.clone();
    }
    let mut e = json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": obj["metadata"],
        "eventTime": obj["eventTime"],
        "reportingController": obj["reportingComponent"].as_str().filter(|s| !s.is_empty()).or(obj["source"]["component"].as_str()),
        "reportingInstance": obj["reportingInstance"],
        "reason": obj["reason"],
        "regarding": obj["involvedObject"],
        "note": obj["message"],
        "type": obj["type"],
        "deprecatedSource": obj["source"],
        "deprecatedFirstTimestamp": obj["firstTimestamp"],
        "deprecatedLastTimestamp": obj["lastTimestamp"],
        "deprecatedCount": obj["count"],
    });
    if let Some(m) = e.as_object_mut() {
        m.retain(|_, v| !v.is_null());
    }
    e
}
