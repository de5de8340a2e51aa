//! The built-in `tfjobs.kubeflow.org` CRD: a hand-written structural schema covering
//! the parts of TFJob the plugin uses (the upstream file can be passed in a Scenario).

use serde_json::{Value, json};

/// controller-gen's pattern for `resource.Quantity` (as in kubeflow.org_tfjobs.yaml).
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

fn containers() -> Value {
    let quantities = json!({
        "type": "object",
        "additionalProperties": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": true
        }
    });
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {
                "resources": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"limits": quantities, "requests": quantities}
                }
            }
        }
    })
}

fn replica_spec() -> Value {
    json!({
        "type": "object",
        "description": "ReplicaSpec is a description of the replica",
        "properties": {
            "replicas": {"type": "integer", "format": "int32"},
            "restartPolicy": {"type": "string"},
            "template": {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {
                            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                            "finalizers": {"type": "array", "items": {"type": "string"}},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "name": {"type": "string"},
                            "namespace": {"type": "string"}
                        }
                    },
                    // The pod spec is kept whole; only container resources are described, with
                    // the quantity pattern of the upstream CRD (controller-gen's for
                    // resource.Quantity), so a quantity the API server refuses is refused here.
                    "spec": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {
                            "containers": containers(),
                            "initContainers": containers()
                        }
                    }
                }
            }
        }
    })
}

fn schema() -> Value {
    json!({
        "type": "object",
        "description": "TFJob represents a TFJob resource.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["tfReplicaSpecs"],
                "properties": {
                    "enableDynamicWorker": {"type": "boolean"},
                    "runPolicy": {
                        "type": "object",
                        "properties": {
                            "activeDeadlineSeconds": {"type": "integer", "format": "int64"},
                            "backoffLimit": {"type": "integer", "format": "int32"},
                            "cleanPodPolicy": {"type": "string"},
                            "managedBy": {"type": "string"},
                            "schedulingPolicy": {
                                "type": "object",
                                "properties": {
                                    "minAvailable": {"type": "integer", "format": "int32"},
                                    "minResources": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}},
                                    "priorityClass": {"type": "string"},
                                    "queue": {"type": "string"},
                                    "scheduleTimeoutSeconds": {"type": "integer", "format": "int32"}
                                }
                            },
                            "suspend": {"type": "boolean", "default": false},
                            "ttlSecondsAfterFinished": {"type": "integer", "format": "int32"}
                        }
                    },
                    "successPolicy": {"type": "string"},
                    "tfReplicaSpecs": {"type": "object", "additionalProperties": replica_spec()}
                }
            },
            "status": {
                "type": "object",
                "properties": {
                    "completionTime": {"type": "string", "format": "date-time"},
                    "conditions": {
                        "type": "array",
                        "x-kubernetes-list-type": "atomic",
                        "items": {
                            "type": "object",
                            "required": ["status", "type"],
                            "properties": {
                                "lastTransitionTime": {"type": "string", "format": "date-time"},
                                "lastUpdateTime": {"type": "string", "format": "date-time"},
                                "message": {"type": "string"},
                                "reason": {"type": "string"},
                                "status": {"type": "string"},
                                "type": {"type": "string"}
                            }
                        }
                    },
                    "lastReconcileTime": {"type": "string", "format": "date-time"},
                    "replicaStatuses": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {
                                "active": {"type": "integer", "format": "int32"},
                                "failed": {"type": "integer", "format": "int32"},
                                "labelSelector": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                                "selector": {"type": "string"},
                                "succeeded": {"type": "integer", "format": "int32"}
                            }
                        }
                    },
                    "startTime": {"type": "string", "format": "date-time"}
                }
            }
        }
    })
}

/// The built-in CRD object (as `kubectl get crd tfjobs.kubeflow.org -o json` would show it).
pub fn builtin_tfjob_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "tfjobs.kubeflow.org",
            "annotations": {"controller-gen.kubebuilder.io/version": "v0.16.5"}
        },
        "spec": {
            "group": "kubeflow.org",
            "names": {"kind": "TFJob", "listKind": "TFJobList", "plural": "tfjobs", "singular": "tfjob"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"},
                    {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}
                ],
                "schema": {"openAPIV3Schema": schema()}
            }]
        }
    })
}

/// Adds the status an apiextensions-apiserver writes once a CRD is accepted.
pub fn with_established_status(mut crd: Value) -> Value {
    let now = crate::util::now_rfc3339();
    let names = crd["spec"]["names"].clone();
    let stored: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == json!(true))
        .map(|v| v["name"].clone())
        .collect();
    crd["status"] = json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now}
        ],
        "storedVersions": stored
    });
    crd
}

/// Keeps only the listed versions served (simulates version skew).
pub fn restrict_served(mut crd: Value, served: &[String]) -> Value {
    if let Some(vs) = crd["spec"]["versions"].as_array_mut() {
        let names: Vec<String> = vs
            .iter()
            .filter_map(|v| v["name"].as_str().map(String::from))
            .collect();
        for s in served {
            if !names.contains(s) {
                let mut v = vs[0].clone();
                v["name"] = json!(s);
                v["storage"] = json!(false);
                vs.push(v);
            }
        }
        for v in vs.iter_mut() {
            let name = v["name"].as_str().unwrap_or_default().to_string();
            v["served"] = json!(served.contains(&name));
        }
    }
    crd
}

/// The training-operator Deployment as installed by the standalone overlay.
/// `gang`: the `--gang-scheduler-name` the scenario runs the operator with (training-operator
/// `cmd/training-operator.v1/main.go` flag), put in the container's args as an install would.
pub fn operator_deployment(namespace: &str, ready: bool, gang: Option<&str>) -> Value {
    let labels = json!({"control-plane": "kubeflow-training-operator"});
    let n = if ready { 1 } else { 0 };
    let mut status = json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1});
    if ready {
        status["readyReplicas"] = json!(n);
        status["availableReplicas"] = json!(n);
        status["conditions"] = json!([{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]);
    } else {
        status["unavailableReplicas"] = json!(1);
        status["conditions"] = json!([{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."}]);
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "training-operator", "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": {
                    "serviceAccountName": "training-operator",
                    "containers": [{
                        "name": "training-operator",
                        "image": "ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489",
                        "command": ["/manager"],
                        "args": gang.map(|g| vec![format!("--gang-scheduler-name={g}")]).unwrap_or_default(),
                        "ports": [{"containerPort": 8080}, {"containerPort": 9443, "name": "webhook-server", "protocol": "TCP"}]
                    }]
                }
            }
        },
        "status": status
    })
}
