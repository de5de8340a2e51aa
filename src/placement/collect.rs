//! The one I/O part: reads the [`Snapshot`] the model needs. The number of requests does not
//! depend on the job's size; every list is paged (`limit`/`continue`) and decoded into slim
//! types that keep only what placement reads, so memory stays bounded on big clusters. A 403
//! on a list is not an error: the field stays `None` and the permission is named.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Container, LimitRange, PodSpec, ResourceQuota, ResourceRequirements, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Client;
use kube::api::ListParams;
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

use super::filters::{Res, effective_requests};
use super::{BoundPod, NodeInfo, PvcInfo, Snapshot};
use crate::model::TFJob;
use crate::quantity::parse_quantity;

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
}

/// A pod with only what resource accounting needs (no env, volumes, status details).
#[derive(Deserialize, Default)]
#[serde(default)]
struct SlimPod {
    metadata: Meta,
    spec: SlimPodSpec,
}
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SlimPodSpec {
    node_name: Option<String>,
    #[serde(deserialize_with = "null_default")]
    containers: Vec<SlimContainer>,
    #[serde(deserialize_with = "null_default")]
    init_containers: Vec<SlimContainer>,
    overhead: Option<BTreeMap<String, Quantity>>,
}
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SlimContainer {
    resources: Option<ResourceRequirements>,
    restart_policy: Option<String>,
}

impl SlimPodSpec {
    /// Just enough of a PodSpec for [`effective_requests`].
    fn requests(self) -> Res {
        let conv = |c: SlimContainer| Container {
            resources: c.resources,
            restart_policy: c.restart_policy,
            ..Default::default()
        };
        effective_requests(&PodSpec {
            containers: self.containers.into_iter().map(conv).collect(),
            init_containers: Some(self.init_containers.into_iter().map(conv).collect()),
            overhead: self.overhead,
            ..Default::default()
        })
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

async fn list_paged<T: DeserializeOwned>(
    client: &Client,
    path: &str,
    fields: Option<&str>,
    mut each: impl FnMut(T),
) -> Result<Listed, kube::Error> {
    let mut lp = ListParams::default().limit(PAGE);
    if let Some(f) = fields {
        lp = lp.fields(f);
    }
    loop {
        let req = kube::core::Request::new(path)
            .list(&lp)
            .map_err(kube::Error::BuildRequest)?;
        // Decoded here rather than by `Client::request`, which logs the whole body when decoding
        // fails: that body may be a page of Secrets.
        let page: List<T> = match client.request_text(req).await {
            Ok(text) => serde_json::from_str(&text).map_err(kube::Error::SerdeError)?,
            Err(kube::Error::Api(s)) if s.is_forbidden() => return Ok(Listed::Forbidden),
            // Optional APIs (e.g. storage classes on a minimal server) may be absent.
            Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(Listed::Ok),
            Err(e) => return Err(e),
        };
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
        Err(kube::Error::Api(s)) if s.is_not_found() || s.is_forbidden() => Ok(false),
        Err(e) => Err(e),
    }
}

fn res_of(m: &BTreeMap<String, String>) -> Res {
    m.iter()
        .filter_map(|(k, v)| Some((k.clone(), parse_quantity(v)?)))
        .collect()
}

/// Reads the snapshot for `job` in `namespace`.
pub async fn collect(
    client: &Client,
    namespace: &str,
    job: &TFJob,
) -> Result<Snapshot, kube::Error> {
    let _ = job; // The request set is the same for every job: constant in job size.
    let mut snap = Snapshot {
        namespace: namespace.to_string(),
        ..Default::default()
    };
    let mut nodes = vec![];
    if let Listed::Ok = list_paged(client, "/api/v1/nodes", None, |n: SlimNode| {
        nodes.push(NodeInfo {
            name: n.metadata.name,
            labels: n.metadata.labels,
            taints: n.spec.taints,
            unschedulable: n.spec.unschedulable,
            allocatable: res_of(&n.status.allocatable),
        })
    })
    .await?
    {
        snap.nodes = Some(nodes);
    } else {
        snap.missing_permissions
            .push("list nodes (cluster-wide)".into());
    }
    let mut bound = vec![];
    let fields = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";
    if let Listed::Ok = list_paged(client, "/api/v1/pods", Some(fields), |p: SlimPod| {
        if let Some(node) = p.spec.node_name.clone().filter(|n| !n.is_empty()) {
            bound.push(BoundPod {
                requests: p.spec.requests(),
                namespace: p.metadata.namespace,
                name: p.metadata.name,
                node,
            })
        }
    })
    .await?
    {
        snap.bound_pods = Some(bound);
    } else {
        snap.missing_permissions
            .push("list pods (all namespaces)".into());
    }
    let ns_path = |r: &str| format!("/api/v1/namespaces/{namespace}/{r}");
    let mut lrs = vec![];
    list_paged(client, &ns_path("limitranges"), None, |l: LimitRange| {
        lrs.push(l)
    })
    .await?;
    snap.limit_ranges = lrs;
    let mut quotas = vec![];
    list_paged(
        client,
        &ns_path("resourcequotas"),
        None,
        |q: ResourceQuota| quotas.push(q),
    )
    .await?;
    snap.quotas = quotas;

    let mut pcs = BTreeSet::new();
    if let Listed::Ok = list_paged(
        client,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        None,
        |p: Named| {
            pcs.insert(p.metadata.name);
        },
    )
    .await?
    {
        snap.priority_classes = Some(pcs);
    }
    let mut wffc = BTreeSet::new();
    list_paged(
        client,
        "/apis/storage.k8s.io/v1/storageclasses",
        None,
        |s: SlimStorageClass| {
            if s.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer") {
                wffc.insert(s.metadata.name);
            }
        },
    )
    .await?;
    let mut pvcs = BTreeMap::new();
    if let Listed::Ok = list_paged(
        client,
        &ns_path("persistentvolumeclaims"),
        None,
        |p: SlimPvc| {
            let wait = p
                .spec
                .storage_class_name
                .as_ref()
                .is_some_and(|c| wffc.contains(c));
            pvcs.insert(
                p.metadata.name,
                PvcInfo {
                    phase: p.status.phase,
                    wait_for_first_consumer: wait,
                },
            );
        },
    )
    .await?
    {
        snap.pvcs = Some(pvcs);
    }
    for (r, slot) in [
        ("configmaps", &mut snap.config_maps),
        ("secrets", &mut snap.secrets),
    ] {
        let mut m = BTreeMap::new();
        if let Listed::Ok = list_paged(client, &ns_path(r), None, |o: KeysOnly| {
            let keys = o
                .data
                .into_keys()
                .chain(o.binary_data.into_keys())
                .collect();
            m.insert(o.metadata.name, keys);
        })
        .await?
        {
            *slot = Some(m);
        }
    }
    let mut sas = BTreeSet::new();
    if let Listed::Ok = list_paged(client, &ns_path("serviceaccounts"), None, |s: Named| {
        sas.insert(s.metadata.name);
    })
    .await?
    {
        snap.service_accounts = Some(sas);
    }
    for crd in [
        "podgroups.scheduling.volcano.sh",
        "podgroups.scheduling.x-k8s.io",
    ] {
        if exists(
            client,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd,
        )
        .await?
        {
            snap.crds.insert(crd.to_string());
        }
    }
    snap.autoscaler = exists(
        client,
        "/api/v1/namespaces/kube-system/configmaps",
        "cluster-autoscaler-status",
    )
    .await?;
    Ok(snap)
}
