//! The one I/O part: reads the [`ClusterState`] the model needs. Every list is paged
//! (`limit`/`continue`) and decoded into slim types that keep only what placement reads, so
//! memory stays bounded on big clusters. A 403 on a list is not an error: the field stays
//! `None` and the permission is named.
//!
//! The lists go out together; the pods come last and only from the nodes where the job could
//! ever run ([`super::scope`]), one indexed read per node, many in flight, until a placement
//! for the whole job is found: what `check` costs follows the job, not the cluster (issue 63).
//! Each page is decoded straight from its text into per-node sums; no pod object is built.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota, Taint};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Client;
use kube::api::ListParams;
use serde::Deserialize;
use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::filters::{ContainerResources, Res, pod_requests};
use super::{BoundPod, BoundPods, ClusterState, NodeInfo, PvcInfo, scope};
use crate::cluster::{client, forbidden};
use crate::model::TFJob;
use crate::model::quantity::parse_quantity;

/// Items per page: big enough to keep the request count low, small enough to bound memory.
const PAGE: u32 = 500;

/// `null` where a list or map is expected reads as empty (servers and proxies do send it).
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize)]
struct List<T> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(
        default = "Vec::new",
        deserialize_with = "null_default",
        bound(deserialize = "T: Deserialize<'de>")
    )]
    items: Vec<T>,
}

#[derive(Deserialize, Default)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Meta {
    name: String,
    namespace: String,
    #[serde(deserialize_with = "null_default")]
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SlimNode {
    metadata: Meta,
    spec: SlimNodeSpec,
    status: SlimNodeStatus,
}
#[derive(Deserialize, Default)]
#[serde(default)]
struct SlimNodeSpec {
    #[serde(deserialize_with = "null_default")]
    taints: Vec<Taint>,
    unschedulable: bool,
}
#[derive(Deserialize, Default)]
#[serde(default)]
struct SlimNodeStatus {
    #[serde(deserialize_with = "null_default")]
    allocatable: BTreeMap<String, String>,
    #[serde(deserialize_with = "null_default")]
    conditions: Vec<SlimCondition>,
}
#[derive(Deserialize, Default)]
#[serde(default)]
struct SlimCondition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    reason: String,
    message: String,
}

impl SlimNodeStatus {
    /// `Unknown: Kubelet stopped posting node status.` when `Ready` is not True; None when it
    /// is, or when the node reports no `Ready` at all (then nothing is known against it).
    fn not_ready(&self) -> Option<String> {
        let ready = self.conditions.iter().find(|c| c.type_ == "Ready")?;
        (ready.status != "True").then(|| {
            let why = if ready.message.is_empty() {
                &ready.reason
            } else {
                &ready.message
            };
            format!("Ready {}: {why}", ready.status)
        })
    }
}

/// A pod row with only what resource accounting needs (no env, volumes, status), its strings
/// borrowed from the page's text.
#[derive(Deserialize, Default)]
#[serde(default)]
struct PodRow<'a> {
    #[serde(borrow)]
    metadata: RowMeta<'a>,
    #[serde(borrow)]
    spec: PodRowSpec<'a>,
}
#[derive(Deserialize, Default)]
#[serde(default)]
struct RowMeta<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    namespace: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "null_default")]
    labels: RowLabels<'a>,
    #[serde(borrow, rename = "ownerReferences", deserialize_with = "null_default")]
    owners: Vec<RowOwner<'a>>,
}
/// The one label that names a pod's TFJob; the others are skipped while reading.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RowLabels<'a> {
    #[serde(borrow, rename = "training.kubeflow.org/job-name")]
    job: Option<Cow<'a, str>>,
}
#[derive(Deserialize, Default)]
#[serde(default)]
struct RowOwner<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    controller: Option<bool>,
}

impl RowMeta<'_> {
    /// `TFJob team-b/bert` (the operator's label), else its controller (`ReplicaSet ns/x`).
    fn owner(&self) -> String {
        if let Some(job) = &self.labels.job {
            return format!("TFJob {}/{job}", self.namespace);
        }
        self.owners
            .iter()
            .find(|o| o.controller == Some(true))
            .map(|o| format!("{} {}/{}", o.kind, self.namespace, o.name))
            .unwrap_or_default()
    }
}
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PodRowSpec<'a> {
    #[serde(borrow)]
    node_name: Option<Borrowed<'a>>,
    #[serde(borrow, deserialize_with = "null_default")]
    containers: Vec<RowContainer<'a>>,
    #[serde(borrow, deserialize_with = "null_default")]
    init_containers: Vec<RowContainer<'a>>,
    #[serde(borrow, deserialize_with = "null_default")]
    overhead: Pairs<'a>,
}
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RowContainer<'a> {
    #[serde(borrow, deserialize_with = "null_default")]
    resources: RowResources<'a>,
    #[serde(borrow)]
    restart_policy: Option<Borrowed<'a>>,
}
#[derive(Deserialize, Default)]
#[serde(default)]
struct RowResources<'a> {
    #[serde(borrow, deserialize_with = "null_default")]
    limits: Pairs<'a>,
    #[serde(borrow, deserialize_with = "null_default")]
    requests: Pairs<'a>,
}

/// A `resource → quantity` map read as pairs in document order, without building a map.
#[derive(Default)]
struct Pairs<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Pairs<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Pairs<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of resource quantities")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Pairs<'a>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<Borrowed<'a>, QuantityText<'a>>()? {
                    out.push((k.0, v.0));
                }
                Ok(Pairs(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A string borrowed from the text when it has no escapes (serde's `Cow` always copies).
struct Borrowed<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Borrowed<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Borrowed<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Borrowed<'a>, E> {
                Ok(Borrowed(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Borrowed<'a>, E> {
                Ok(Borrowed(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// A quantity as written: a string, or a JSON number (some servers echo what a client sent),
/// which reads as its decimal text as k8s-openapi's `Quantity` reads it.
struct QuantityText<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for QuantityText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = QuantityText<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a quantity")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Owned(s.to_owned())))
            }
            fn visit_i64<E>(self, v: i64) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Owned(v.to_string())))
            }
            fn visit_f64<E>(self, v: f64) -> Result<QuantityText<'a>, E> {
                Ok(QuantityText(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl ContainerResources for RowContainer<'_> {
    fn each_limit(&self, f: &mut dyn FnMut(&str, &str)) {
        self.resources.limits.0.iter().for_each(|(k, q)| f(k, q));
    }
    fn each_request(&self, f: &mut dyn FnMut(&str, &str)) {
        self.resources.requests.0.iter().for_each(|(k, q)| f(k, q));
    }
    fn restart_policy(&self) -> Option<&str> {
        self.restart_policy.as_ref().map(|r| r.0.as_ref())
    }
}

/// Which bound pods are kept whole: the job's own, so a caller can leave them out.
struct Own {
    namespace: String,
    names: BTreeSet<String>,
}

/// Decodes one page of bound pods into `bound`, calling `next` with the continue token as soon
/// as the list's metadata has been read.
fn decode_pod_page(
    text: &str,
    bound: &mut BoundPods,
    own: &Own,
    next: &mut dyn FnMut(Option<String>),
) -> serde_json::Result<()> {
    let mut de = serde_json::Deserializer::from_str(text);
    Page {
        on_meta: next,
        on_item: &mut |p: PodRow| {
            let Some(node) = p
                .spec
                .node_name
                .as_ref()
                .map(|n| n.0.as_ref())
                .filter(|n| !n.is_empty())
            else {
                return;
            };
            let requests = pod_requests(
                &p.spec.containers,
                &p.spec.init_containers,
                p.spec
                    .overhead
                    .0
                    .iter()
                    .map(|(k, q)| (k.as_ref(), q.as_ref())),
            );
            let keep = p.metadata.namespace == own.namespace
                && own.names.contains(p.metadata.name.as_ref());
            let owner = p.metadata.owner();
            if keep {
                bound.add(
                    BoundPod {
                        namespace: p.metadata.namespace.into_owned(),
                        name: p.metadata.name.into_owned(),
                        node: node.to_string(),
                        requests,
                        owner,
                    },
                    true,
                );
            } else {
                bound.add_usage(node, &requests, &owner);
            }
        },
        _item: std::marker::PhantomData,
    }
    .deserialize(&mut de)?;
    de.end()
}

/// A list page read as a stream: `on_meta` gets `metadata.continue` when the metadata is read
/// (at the start: the API server writes it before the items), `on_item` each item; nothing
/// of the page is collected.
struct Page<'f, T> {
    on_meta: &'f mut dyn FnMut(Option<String>),
    on_item: &'f mut dyn FnMut(T),
    _item: std::marker::PhantomData<fn(T)>,
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Page<'_, T> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Page<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "lowercase")]
        enum Key {
            Metadata,
            Items,
            #[serde(other)]
            Other,
        }
        let mut told = false;
        while let Some(k) = m.next_key::<Key>()? {
            match k {
                Key::Metadata => {
                    let meta: Option<ListMeta> = m.next_value()?;
                    (self.on_meta)(meta.and_then(|m| m.continue_));
                    told = true;
                }
                Key::Items => m.next_value_seed(Items(&mut *self.on_item))?,
                Key::Other => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !told {
            (self.on_meta)(None);
        }
        Ok(())
    }
}

/// The `items` array, each element handed on as it is read (`null` reads as empty).
struct Items<'f, T>(&'f mut dyn FnMut(T));

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Items<'_, T> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Items<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of items")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while let Some(item) = s.next_element::<T>()? {
            (self.0)(item);
        }
        Ok(())
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Named {
    metadata: Meta,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct KeysOnly {
    metadata: Meta,
    #[serde(deserialize_with = "null_default")]
    data: BTreeMap<String, IgnoredAny>,
    #[serde(rename = "binaryData", deserialize_with = "null_default")]
    binary_data: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SlimPvc {
    metadata: Meta,
    spec: SlimPvcSpec,
    status: SlimPvcStatus,
}
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SlimPvcSpec {
    storage_class_name: Option<String>,
}
#[derive(Deserialize, Default)]
#[serde(default)]
struct SlimPvcStatus {
    phase: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SlimStorageClass {
    metadata: Meta,
    volume_binding_mode: Option<String>,
}

/// A list outcome: the items, or the permission that was refused.
enum Listed {
    Ok,
    Forbidden,
}

/// One page's text, or how the list ended early (`Listed` for 403 and 404).
async fn page_text(
    client: &Client,
    path: &str,
    lp: &ListParams,
) -> Result<Result<String, Listed>, kube::Error> {
    let req = kube::core::Request::new(path)
        .list(lp)
        .map_err(kube::Error::BuildRequest)?;
    // Decoded by the caller rather than by `Client::request`, which logs the whole body when
    // decoding fails: that body may be a page of Secrets.
    match client.request_text(req).await {
        Ok(text) => Ok(Ok(text)),
        Err(e) if forbidden::refused(&e).is_some() => Ok(Err(Listed::Forbidden)),
        // Optional APIs (e.g. storage classes on a minimal server) may be absent. A group that
        // is not installed answers 404 with the plain text `404 page not found`, not a Status,
        // so kube's reason-based `Status::is_not_found` misses it: the code decides.
        Err(e) if client::is_not_found(&e) => Ok(Err(Listed::Ok)),
        Err(e) => Err(e),
    }
}

fn with_fields(fields: Option<&str>) -> ListParams {
    let lp = ListParams::default().limit(PAGE);
    match fields {
        Some(f) => lp.fields(f),
        None => lp,
    }
}

async fn list_paged<T: DeserializeOwned>(
    client: &Client,
    path: &str,
    fields: Option<&str>,
    mut each: impl FnMut(T),
) -> Result<Listed, kube::Error> {
    let mut lp = with_fields(fields);
    loop {
        let text = match page_text(client, path, &lp).await? {
            Ok(text) => text,
            Err(end) => return Ok(end),
        };
        let page: List<T> = serde_json::from_str(&text).map_err(kube::Error::SerdeError)?;
        page.items.into_iter().for_each(&mut each);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp.continue_token = Some(c),
            None => return Ok(Listed::Ok),
        }
    }
}

async fn exists(client: &Client, collection: &str, name: &str) -> Result<bool, kube::Error> {
    let req = kube::core::Request::new(collection)
        .get(name, &Default::default())
        .map_err(kube::Error::BuildRequest)?;
    match client.request::<IgnoredAny>(req).await {
        Ok(_) => Ok(true),
        Err(e) if client::is_not_found(&e) => Ok(false),
        Err(e) if forbidden::refused(&e).is_some() => Ok(false),
        Err(e) => Err(e),
    }
}

/// The cluster-autoscaler's status ConfigMap, judged ([`super::autoscaler::judge`]):
/// `(may add nodes, why not when it exists but rules the autoscaler out)`. Absent or
/// unreadable (403): no autoscaler known.
async fn autoscaler_status(client: &Client) -> Result<(bool, Option<String>), kube::Error> {
    #[derive(Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        annotations: BTreeMap<String, String>,
    }
    #[derive(Deserialize)]
    struct StatusMap {
        #[serde(default)]
        metadata: Meta,
        #[serde(default)]
        data: BTreeMap<String, String>,
    }
    let req = kube::core::Request::new("/api/v1/namespaces/kube-system/configmaps")
        .get("cluster-autoscaler-status", &Default::default())
        .map_err(kube::Error::BuildRequest)?;
    let cm: StatusMap = match client.request(req).await {
        Ok(cm) => cm,
        Err(e) if client::is_not_found(&e) || forbidden::refused(&e).is_some() => {
            return Ok((false, None));
        }
        Err(e) => return Err(e),
    };
    let judged = super::autoscaler::judge(
        cm.metadata
            .annotations
            .get("cluster-autoscaler.kubernetes.io/last-updated")
            .map(String::as_str),
        cm.data.get("status").map(String::as_str),
        k8s_openapi::jiff::Timestamp::now(),
    );
    Ok(match judged {
        Ok(()) => (true, None),
        Err(why) => (false, Some(why)),
    })
}

/// Whether a collection holds at least one object: one item asked for; absent API or 403 = no.
async fn any_listed(client: &Client, path: &str) -> Result<bool, kube::Error> {
    #[derive(Deserialize)]
    struct Items {
        #[serde(default)]
        items: Vec<IgnoredAny>,
    }
    let lp = ListParams::default().limit(1);
    match page_text(client, path, &lp).await? {
        Ok(text) => Ok(!serde_json::from_str::<Items>(&text)
            .map_err(kube::Error::SerdeError)?
            .items
            .is_empty()),
        Err(_) => Ok(false),
    }
}

fn res_of(m: &BTreeMap<String, String>) -> Res {
    m.iter()
        .filter_map(|(k, v)| Some((k.clone(), parse_quantity(v)?)))
        .collect()
}

/// Every node, as the filters see it (`None`: not readable).
async fn nodes(client: &Client) -> Result<Option<Vec<NodeInfo>>, kube::Error> {
    let mut nodes = vec![];
    let listed = list_paged(client, "/api/v1/nodes", None, |n: SlimNode| {
        nodes.push(NodeInfo {
            name: n.metadata.name,
            labels: n.metadata.labels,
            taints: n.spec.taints,
            unschedulable: n.spec.unschedulable,
            not_ready: n.status.not_ready(),
            allocatable: res_of(&n.status.allocatable),
        })
    })
    .await?;
    Ok(matches!(listed, Listed::Ok).then_some(nodes))
}

/// Requests in flight while reading the candidates' pods: enough to hide the round trips, few
/// enough to stay a small client under the API server's priority and fairness.
const IN_FLIGHT: usize = 16;

/// The non-terminal pods bound to `node`. Served by the API server's watch cache through its
/// `spec.nodeName` index (kubernetes `pkg/registry/core/pod/strategy.go`: `Indexers`,
/// `NodeNameIndexFunc`, and `IndexFields` in `Matcher`), at `resourceVersion=0` with
/// `NotOlderThan`, as the kubelet's own pod reflector lists: a recent state is enough for a
/// prediction, and no read reaches etcd. Terminal pods are left out by the server (pods'
/// selectable fields include `status.phase`, `ToSelectableFields`). A continue token, should a
/// node hold more than a page, is followed without a resource version, which the server
/// forbids beside one.
async fn pods_on(
    client: &Client,
    node: &str,
    own: &Own,
) -> Result<(Listed, BoundPods), kube::Error> {
    let mut bound = BoundPods::default();
    let fields = format!("spec.nodeName={node},status.phase!=Succeeded,status.phase!=Failed");
    let mut lp = with_fields(Some(&fields)).match_any();
    loop {
        let text = match page_text(client, "/api/v1/pods", &lp).await? {
            Ok(text) => text,
            Err(end) => return Ok((end, bound)),
        };
        let mut next = None;
        decode_pod_page(&text, &mut bound, own, &mut |c| next = c)
            .map_err(kube::Error::SerdeError)?;
        match next.filter(|c| !c.is_empty()) {
            Some(c) => {
                lp = with_fields(Some(&fields));
                lp.continue_token = Some(c);
            }
            None => return Ok((Listed::Ok, bound)),
        }
    }
}

/// Reads the pods of the candidate nodes ([`super::scope`]) into `state.bound_pods`, a batch at
/// a time, until the whole job has a placement on the nodes read or every candidate is read;
/// those left are named in `state.unread`. Nodes not readable: nothing is read (the verdict is
/// unknown without them). A 403 on pods leaves `bound_pods` empty and names the permission.
async fn candidate_pods(
    client: &Client,
    state: &mut ClusterState,
    job: &TFJob,
) -> Result<(), kube::Error> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    let Some(nodes) = &state.nodes else {
        return Ok(());
    };
    let pods = super::admitted_pods(job, &state.limit_ranges, state.runtime_classes.as_ref());
    let order: Vec<String> = scope::candidates(nodes, &pods)
        .into_iter()
        .map(|i| nodes[i].name.clone())
        .collect();
    let own = Own {
        namespace: state.namespace.clone(),
        names: pods.iter().map(|p| p.name.clone()).collect(),
    };
    state.unread = order.iter().cloned().collect();
    state.bound_pods = Some(BoundPods::default());
    let mut rest = order.as_slice();
    for size in scope::batches(order.len()) {
        let (batch, later) = rest.split_at(size);
        rest = later;
        // Each node's page decoded into its own sums, merged in the order read.
        let pages: Vec<(Listed, BoundPods)> =
            stream::iter(batch.iter().map(|node| pods_on(client, node, &own)))
                .buffered(IN_FLIGHT)
                .try_collect()
                .await?;
        for (listed, bound) in pages {
            if matches!(listed, Listed::Forbidden) {
                state.bound_pods = None;
                state
                    .missing_permissions
                    .push("list pods (all namespaces)".into());
                return Ok(());
            }
            // The sums live in the snapshot the model reads: merged in place, never copied.
            state.bound_pods.get_or_insert_default().merge(bound);
        }
        for node in batch {
            state.unread.remove(node);
        }
        if scope::fits_on_read(state, &pods) {
            break;
        }
    }
    Ok(())
}

/// Reads the snapshot for `job` in `namespace`. The lists are independent, so they go out at
/// once, their number the same for every job; the pods follow, read per candidate node.
pub async fn collect(
    client: &Client,
    namespace: &str,
    job: &TFJob,
) -> Result<ClusterState, kube::Error> {
    let ns_path = |r: &str| format!("/api/v1/namespaces/{namespace}/{r}");
    let (lr_path, quota_path, pvc_path) = (
        ns_path("limitranges"),
        ns_path("resourcequotas"),
        ns_path("persistentvolumeclaims"),
    );
    let (cm_path, secret_path, sa_path) = (
        ns_path("configmaps"),
        ns_path("secrets"),
        ns_path("serviceaccounts"),
    );
    // Cluster Autoscaler writes this ConfigMap (its `--status-config-map-name` default,
    // cluster-autoscaler FAQ "Where can I find the status"); Karpenter launches nodes for a
    // pending pod only through a NodePool (karpenter.sh/v1, karpenter docs "NodePools").
    let autoscaler = async {
        futures::try_join!(
            autoscaler_status(client),
            any_listed(client, "/apis/karpenter.sh/v1/nodepools"),
        )
    };
    let (
        (nodes, limit_ranges, quotas, priority_classes),
        (wffc, pvcs, config_maps, secrets, service_accounts),
        (crds, (autoscaler, karpenter), runtime_classes),
    ) = futures::try_join!(
        async {
            futures::try_join!(
                nodes(client),
                limit_ranges(client, &lr_path),
                quotas(client, &quota_path),
                priority_classes(client)
            )
        },
        async {
            futures::try_join!(
                wffc_classes(client),
                pvcs(client, &pvc_path),
                keys_of(client, &cm_path),
                keys_of(client, &secret_path),
                service_accounts(client, &sa_path)
            )
        },
        async { futures::try_join!(gang_crds(client), autoscaler, runtime_classes(client)) },
    )?;
    let mut missing_permissions = vec![];
    if nodes.is_none() {
        missing_permissions.push("list nodes (cluster-wide)".into());
    }
    let pvcs = pvcs.map(|list| {
        list.into_iter()
            .map(|p| {
                let wait = p
                    .spec
                    .storage_class_name
                    .as_ref()
                    .is_some_and(|c| wffc.contains(c));
                let info = PvcInfo {
                    phase: p.status.phase,
                    wait_for_first_consumer: wait,
                };
                (p.metadata.name, info)
            })
            .collect()
    });
    let mut state = ClusterState {
        namespace: namespace.to_string(),
        nodes,
        bound_pods: None,
        unread: BTreeSet::new(),
        limit_ranges,
        quotas,
        priority_classes,
        runtime_classes,
        pvcs,
        config_maps,
        secrets,
        service_accounts,
        crds,
        autoscaler: autoscaler.0,
        autoscaler_ruled_out: autoscaler.1,
        karpenter,
        missing_permissions,
    };
    // The pods last: which nodes' pods matter depends on the nodes and on the job's pods as
    // admission leaves them (LimitRange defaults, RuntimeClass overhead).
    candidate_pods(client, &mut state, job).await?;
    Ok(state)
}

async fn limit_ranges(client: &Client, path: &str) -> Result<Vec<LimitRange>, kube::Error> {
    let mut lrs = vec![];
    list_paged(client, path, None, |l: LimitRange| lrs.push(l)).await?;
    Ok(lrs)
}

async fn quotas(client: &Client, path: &str) -> Result<Vec<ResourceQuota>, kube::Error> {
    let mut qs = vec![];
    list_paged(client, path, None, |q: ResourceQuota| qs.push(q)).await?;
    Ok(qs)
}

async fn priority_classes(client: &Client) -> Result<Option<BTreeSet<String>>, kube::Error> {
    let mut pcs = BTreeSet::new();
    let path = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let listed = list_paged(client, path, None, |p: Named| {
        pcs.insert(p.metadata.name);
    })
    .await?;
    Ok(matches!(listed, Listed::Ok).then_some(pcs))
}

/// The RuntimeClasses: the admission plugin refuses a pod whose class does not exist, and
/// gives a pod of a known class its overhead, node selector and tolerations.
async fn runtime_classes(
    client: &Client,
) -> Result<Option<BTreeMap<String, super::RuntimeClassInfo>>, kube::Error> {
    let mut rcs = BTreeMap::new();
    let path = "/apis/node.k8s.io/v1/runtimeclasses";
    let listed = list_paged(client, path, None, |rc: RuntimeClass| {
        let scheduling = rc.scheduling.unwrap_or_default();
        rcs.insert(
            rc.metadata.name.unwrap_or_default(),
            super::RuntimeClassInfo {
                overhead: rc.overhead.map(|o| o.pod_fixed.unwrap_or_default()),
                node_selector: scheduling.node_selector.unwrap_or_default(),
                tolerations: scheduling.tolerations.unwrap_or_default(),
            },
        );
    })
    .await?;
    Ok(matches!(listed, Listed::Ok).then_some(rcs))
}

async fn wffc_classes(client: &Client) -> Result<BTreeSet<String>, kube::Error> {
    let mut wffc = BTreeSet::new();
    let path = "/apis/storage.k8s.io/v1/storageclasses";
    list_paged(client, path, None, |s: SlimStorageClass| {
        if s.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer") {
            wffc.insert(s.metadata.name);
        }
    })
    .await?;
    Ok(wffc)
}

async fn pvcs(client: &Client, path: &str) -> Result<Option<Vec<SlimPvc>>, kube::Error> {
    let mut pvcs = vec![];
    let listed = list_paged(client, path, None, |p: SlimPvc| pvcs.push(p)).await?;
    Ok(matches!(listed, Listed::Ok).then_some(pvcs))
}

async fn service_accounts(
    client: &Client,
    path: &str,
) -> Result<Option<BTreeSet<String>>, kube::Error> {
    let mut sas = BTreeSet::new();
    let listed = list_paged(client, path, None, |s: Named| {
        sas.insert(s.metadata.name);
    })
    .await?;
    Ok(matches!(listed, Listed::Ok).then_some(sas))
}

async fn gang_crds(client: &Client) -> Result<BTreeSet<String>, kube::Error> {
    let mut found = BTreeSet::new();
    for crd in [
        "podgroups.scheduling.volcano.sh",
        "podgroups.scheduling.x-k8s.io",
    ] {
        let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        if exists(client, path, crd).await? {
            found.insert(crd.to_string());
        }
    }
    Ok(found)
}

/// The key names of each ConfigMap or Secret under `path` (never their values).
async fn keys_of(
    client: &Client,
    path: &str,
) -> Result<Option<BTreeMap<String, BTreeSet<String>>>, kube::Error> {
    let mut m = BTreeMap::new();
    let listed = list_paged(client, path, None, |o: KeysOnly| {
        let keys = o
            .data
            .into_keys()
            .chain(o.binary_data.into_keys())
            .collect();
        m.insert(o.metadata.name, keys);
    })
    .await?;
    Ok(matches!(listed, Listed::Ok).then_some(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;
    use serde_json::json;

    fn own(names: &[&str]) -> Own {
        Own {
            namespace: "default".into(),
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    /// Decodes `page`, recording each step: `meta:TOKEN` when the token is handed on, and the
    /// pods counted so far at that moment.
    fn decode(page: &serde_json::Value, own: Own) -> (BoundPods, Vec<String>) {
        let text = page.to_string();
        let mut bound = BoundPods::default();
        let mut told = vec![];
        decode_pod_page(&text, &mut bound, &own, &mut |c| {
            told.push(format!("meta:{}", c.unwrap_or_default()))
        })
        .unwrap();
        (bound, told)
    }

    fn pod(ns: &str, name: &str, node: &str, spec: serde_json::Value) -> serde_json::Value {
        let mut spec = spec;
        spec["nodeName"] = json!(node);
        json!({"metadata": {"name": name, "namespace": ns}, "spec": spec, "status": {"phase": "Running"}})
    }

    #[test]
    fn the_continue_token_is_handed_on_wherever_the_metadata_is() {
        let items = json!([pod("a", "p", "n1", json!({"containers": []}))]);
        for page in [
            json!({"kind": "PodList", "metadata": {"continue": "tok"}, "items": items}),
            json!({"kind": "PodList", "items": items, "metadata": {"continue": "tok"}}),
        ] {
            let (bound, told) = decode(&page, own(&[]));
            assert_eq!(told, ["meta:tok"]);
            assert_eq!(bound.by_node()["n1"].pods, 1);
        }
        // No metadata at all, or null items: the list ends, nothing is counted.
        let (bound, told) = decode(&json!({"items": null}), own(&[]));
        assert_eq!(told, ["meta:"]);
        assert!(bound.by_node().is_empty());
    }

    /// The slim rows give each pod the same requests as the typed PodSpec does.
    #[test]
    fn slim_rows_sum_the_requests_the_typed_spec_gives() {
        let specs = [
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                                  {"name": "b", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}}]}),
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
                   "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3", "memory": "2Gi"}}},
                                      {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}}],
                   "overhead": {"cpu": "100m"}}),
            json!({"containers": [{"name": "a", "resources": null}], "initContainers": null, "overhead": null}),
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "bogus", "memory": "1e3"}, "limits": {"memory": "2k"}}}]}),
            // Quantities as JSON numbers (a server echoing what a client sent).
            json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": 1, "memory": 2.5, "nvidia.com/gpu": 2}}}]}),
        ];
        for spec in specs {
            let typed: PodSpec = serde_json::from_value(spec.clone()).unwrap();
            let want = super::super::effective_requests(&typed);
            let page = json!({"metadata": {}, "items": [pod("x", "p", "n", spec.clone())]});
            let (bound, _) = decode(&page, own(&[]));
            assert_eq!(bound.by_node()["n"].requests, want, "{spec}");
        }
    }

    #[test]
    fn only_the_jobs_own_pods_are_kept_and_taking_them_out_restores_the_sums() {
        let c = |cpu: &str| json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": cpu, "nvidia.com/gpu": "1"}}}]});
        let page = json!({"metadata": {}, "items": [
            pod("default", "job-worker-0", "n1", c("1")),
            pod("other", "job-worker-0", "n1", c("2")),
            pod("default", "unrelated", "n1", c("4")),
            pod("default", "job-worker-1", "n2", c("8")),
            pod("default", "pending", "", c("16")),
        ]});
        let (mut bound, _) = decode(&page, own(&["job-worker-0", "job-worker-1"]));
        assert_eq!(bound.by_node()["n1"].requests["cpu"], 7000);
        assert_eq!(bound.by_node()["n1"].held["nvidia.com/gpu"], (3000, 3));
        assert!(
            !bound.by_node().contains_key(""),
            "a pod on no node is not counted"
        );
        bound.remove_kept(|p| p.namespace == "default");
        let n1 = &bound.by_node()["n1"];
        assert_eq!((n1.pods, n1.requests["cpu"]), (2, 6000));
        assert_eq!(n1.held["nvidia.com/gpu"], (2000, 2));
        assert!(
            !bound.by_node().contains_key("n2"),
            "its only pod was the job's"
        );
    }
}
