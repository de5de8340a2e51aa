//! Minimal CRDs for the kinds the stand-ins serve: names, scope, versions, printer columns and
//! the `default`s of the upstream files (Kueue v0.19.2 `config/components/crd/bases`, Volcano
//! v1.15.1 `config/crd/volcano/bases`, scheduler-plugins v0.34.7 `config/crd/bases`); the rest
//! of spec and status is kept as sent (x-kubernetes-preserve-unknown-fields). Only `v1beta2` of
//! Kueue is served: the base CRDs have no conversion webhook, so clients read and write it.

use serde_json::{Value, json};

/// `kueue.x-k8s.io`.
pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";
/// Kueue's storage version.
pub const KUEUE_VERSION: &str = "v1beta2";
/// `scheduling.volcano.sh`.
pub const VOLCANO_GROUP: &str = "scheduling.volcano.sh";
/// `scheduling.x-k8s.io` (scheduler-plugins' coscheduling).
pub const COSCHED_GROUP: &str = "scheduling.x-k8s.io";

fn col(name: &str, path: &str, ty: &str) -> Value {
    json!({"name": name, "jsonPath": path, "type": ty})
}

fn open() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// An object whose listed properties carry defaults; everything else is kept.
fn open_with(props: Value) -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": props})
}

#[allow(clippy::too_many_arguments)]
fn crd(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    short: &[&str],
    namespaced: bool,
    status_sub: bool,
    columns: Vec<Value>,
    spec: Value,
) -> Value {
    let mut v = json!({
        "name": version, "served": true, "storage": true,
        "additionalPrinterColumns": columns,
        "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"type": "object"}, "spec": spec, "status": open()
            }
        }}
    });
    // Volcano's PodGroup CRD declares `subresources: {}`: status is written with the object.
    v["subresources"] = if status_sub {
        json!({"status": {}})
    } else {
        json!({})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"), "annotations": {"controller-gen.kubebuilder.io/version": "v0.19.0"}},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": kind.to_lowercase(), "shortNames": short},
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "versions": [v]
        }
    })
}

/// ResourceFlavor, ClusterQueue, LocalQueue and Workload (`kueue.x-k8s.io/v1beta2`).
pub fn kueue() -> Vec<Value> {
    let (g, v) = (KUEUE_GROUP, KUEUE_VERSION);
    vec![
        crd(
            g,
            v,
            "ResourceFlavor",
            "resourceflavors",
            &["flavor", "flavors", "rf"],
            false,
            false,
            vec![col("Age", ".metadata.creationTimestamp", "date")],
            open(),
        ),
        crd(
            g,
            v,
            "ClusterQueue",
            "clusterqueues",
            &["cq"],
            false,
            true,
            vec![
                col("Cohort", ".spec.cohortName", "string"),
                col("Strategy", ".spec.queueingStrategy", "string"),
                col("Pending Workloads", ".status.pendingWorkloads", "integer"),
                col("Admitted Workloads", ".status.admittedWorkloads", "integer"),
            ],
            open_with(json!({
                "queueingStrategy": {"type": "string", "default": "BestEffortFIFO", "enum": ["StrictFIFO", "BestEffortFIFO"]},
                "stopPolicy": {"type": "string", "default": "None", "enum": ["None", "Hold", "HoldAndDrain"]},
                "flavorFungibility": {"type": "object", "default": {}, "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "whenCanBorrow": {"type": "string", "default": "MayStopSearch"},
                    "whenCanPreempt": {"type": "string", "default": "TryNextFlavor"}
                }},
                "preemption": {"type": "object", "default": {}, "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "borrowWithinCohort": {"type": "object", "default": {}, "x-kubernetes-preserve-unknown-fields": true, "properties": {"policy": {"type": "string", "default": "Never"}}},
                    "reclaimWithinCohort": {"type": "string", "default": "Never"},
                    "withinClusterQueue": {"type": "string", "default": "Never"}
                }}
            })),
        ),
        crd(
            g,
            v,
            "LocalQueue",
            "localqueues",
            &["queue", "queues", "lq"],
            true,
            true,
            vec![
                col("ClusterQueue", ".spec.clusterQueue", "string"),
                col("Pending Workloads", ".status.pendingWorkloads", "integer"),
                col("Admitted Workloads", ".status.admittedWorkloads", "integer"),
            ],
            open_with(json!({
                "stopPolicy": {"type": "string", "default": "None", "enum": ["None", "Hold", "HoldAndDrain"]}
            })),
        ),
        crd(
            g,
            v,
            "Workload",
            "workloads",
            &["kwl", "kueueworkload", "kueueworkloads"],
            true,
            true,
            vec![
                col("Queue", ".spec.queueName", "string"),
                col("Reserved in", ".status.admission.clusterQueue", "string"),
                col(
                    "Admitted",
                    ".status.conditions[?(@.type=='Admitted')].status",
                    "string",
                ),
                col(
                    "Finished",
                    ".status.conditions[?(@.type=='Finished')].status",
                    "string",
                ),
                col("Age", ".metadata.creationTimestamp", "date"),
            ],
            open_with(json!({"active": {"type": "boolean", "default": true}})),
        ),
    ]
}

/// Volcano's PodGroup and Queue (`scheduling.volcano.sh/v1beta1`).
pub fn volcano() -> Vec<Value> {
    vec![
        crd(
            VOLCANO_GROUP,
            "v1beta1",
            "PodGroup",
            "podgroups",
            &["pg", "podgroup-v1beta1"],
            true,
            false,
            vec![
                col("STATUS", ".status.phase", "string"),
                col("minMember", ".spec.minMember", "integer"),
                col("RUNNINGS", ".status.running", "integer"),
                col("AGE", ".metadata.creationTimestamp", "date"),
                col("QUEUE", ".spec.queue", "string"),
            ],
            open_with(json!({"queue": {"type": "string", "default": "default"}})),
        ),
        crd(
            VOLCANO_GROUP,
            "v1beta1",
            "Queue",
            "queues",
            &["q", "queue-v1beta1"],
            false,
            true,
            vec![col("PARENT", ".spec.parent", "string")],
            open_with(json!({
                "weight": {"type": "integer", "default": 1},
                "dequeueStrategy": {"type": "string", "default": "traverse"}
            })),
        ),
    ]
}

/// scheduler-plugins' PodGroup (`scheduling.x-k8s.io/v1alpha1`).
pub fn coscheduling() -> Vec<Value> {
    vec![crd(
        COSCHED_GROUP,
        "v1alpha1",
        "PodGroup",
        "podgroups",
        &["pg", "pgs"],
        true,
        true,
        vec![
            col("Phase", ".status.phase", "string"),
            col("MinMember", ".spec.minMember", "integer"),
            col("Running", ".status.running", "integer"),
            col("Succeeded", ".status.succeeded", "integer"),
            col("Failed", ".status.failed", "integer"),
            col("Age", ".metadata.creationTimestamp", "date"),
        ],
        open(),
    )]
}
