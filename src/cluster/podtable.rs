//! The pods of TFJobs as `kubectl get pods` shows them, without their specs.
//!
//! Why a server-side Table: the operator puts the whole cluster's addresses into every pod's
//! TF_CONFIG (~90 KB per pod at 2,000 workers), so a JSON list moves the specs for nothing. A
//! `PartialObjectMetadata` list drops the spec but also the status (no phase, node or reasons).
//! The Table (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, what kubectl asks for)
//! carries exactly kubectl's columns — STATUS (its reason logic: `CrashLoopBackOff`,
//! `ImagePullBackOff`, `Completed`, …), RESTARTS, AGE, NODE — plus each row's metadata (labels)
//! with the default `includeObject=Metadata`. One request whatever the number of jobs and pods;
//! the counts we show then agree with `kubectl get pods` by construction.

use std::collections::BTreeMap;

use kube::api::ListParams;
use serde::Deserialize;
use serde_json::Value;

use super::{self as cluster, Kube};
use crate::error::{Error, Result};

#[derive(Deserialize)]
struct Table {
    #[serde(rename = "columnDefinitions", default)]
    columns: Vec<Column>,
    #[serde(default)]
    rows: Vec<Row>,
}

#[derive(Deserialize)]
struct Column {
    name: String,
}

#[derive(Deserialize)]
struct Row {
    cells: Vec<Value>,
    #[serde(default)]
    object: Option<PartialObject>,
}

#[derive(Deserialize)]
struct PartialObject {
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
}

/// One pod row: kubectl's columns plus the labels that tie it to a job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodRow {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// The pod's uid (empty when the row carried no object): events of an earlier pod of the
    /// same name are not this one's.
    pub uid: String,
    /// kubectl's READY (`1/1`).
    pub ready: String,
    /// kubectl's STATUS (phase or the container/scheduling reason kubectl derives).
    pub status: String,
    /// kubectl's RESTARTS (`2 (5s ago)`).
    pub restarts: String,
    /// kubectl's AGE.
    pub age: String,
    /// The node, `<none>` when not scheduled.
    pub node: String,
}

impl PodRow {
    /// The job it belongs to (`training.kubeflow.org/job-name`).
    pub fn job(&self) -> Option<&str> {
        self.labels
            .get(crate::model::LABEL_JOB_NAME)
            .map(String::as_str)
    }
}

/// Lists the pods matching `selector` (in `namespace`, or everywhere with None) as Table rows.
pub async fn list(kube: &Kube, namespace: Option<&str>, selector: &str) -> Result<Vec<PodRow>> {
    let path = match namespace {
        Some(ns) => format!("/api/v1/namespaces/{ns}/pods"),
        None => "/api/v1/pods".to_string(),
    };
    let lp = ListParams::default().labels(selector);
    let request = || {
        let mut req = kube::core::Request::new(&path).list(&lp)?;
        req.headers_mut().insert(
            hyper::header::ACCEPT,
            hyper::header::HeaderValue::from_static(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            ),
        );
        Ok::<_, kube::core::request::Error>(req)
    };
    // A request is single-use, so each attempt builds its own; a bad selector is reported first.
    request().map_err(|e| Error::Other(format!("building the pod list request: {e}")))?;
    let t: Table = cluster::retry(kube, || async {
        let req = request().map_err(kube::Error::BuildRequest)?;
        kube.client.request(req).await
    })
    .await
    .map_err(|e| Error::kube("listing pods", e))?;
    let col = |n: &str| t.columns.iter().position(|c| c.name == n);
    let (ready, status, restarts, age, node) = (
        col("Ready"),
        col("Status"),
        col("Restarts"),
        col("Age"),
        col("Node"),
    );
    let cell = |r: &Row, i: Option<usize>| -> String {
        i.and_then(|i| r.cells.get(i))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_default()
    };
    Ok(t.rows
        .iter()
        .map(|r| {
            let meta = r.object.as_ref().map(|o| &o.metadata);
            PodRow {
                namespace: meta
                    .and_then(|m| m.namespace.clone())
                    .unwrap_or_else(|| namespace.unwrap_or_default().to_string()),
                name: meta
                    .and_then(|m| m.name.clone())
                    .unwrap_or_else(|| cell(r, Some(0))),
                labels: meta.and_then(|m| m.labels.clone()).unwrap_or_default(),
                uid: meta.and_then(|m| m.uid.clone()).unwrap_or_default(),
                ready: cell(r, ready),
                status: cell(r, status),
                restarts: cell(r, restarts),
                age: cell(r, age),
                node: cell(r, node),
            }
        })
        .collect())
}
