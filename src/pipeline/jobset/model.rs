//! The `jobset.x-k8s.io/v1alpha2` JobSet, typed after kubernetes-sigs/jobset v0.12.0
//! `api/jobset/v1alpha2/jobset_types.go`: only the fields an exported TFJob uses, plus the status
//! fields a client reads. The embedded Job template is k8s-openapi's `batch/v1` JobTemplateSpec
//! (Kubernetes 1.36, as the v0.12.0 CRD embeds it).
//!
//! Like the TFJob model, every optional field is skipped when `None`: the JobSet webhook's
//! defaults (`pkg/webhooks/jobset_webhook.go` `Default`) are its business.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the JobSet wants: its replicated Jobs and the policies over them.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "jobset.x-k8s.io",
    version = "v1alpha2",
    kind = "JobSet",
    plural = "jobsets",
    singular = "jobset",
    namespaced,
    status = "JobSetStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct JobSetSpec {
    /// One entry per TF replica type (map-keyed by `name` upstream).
    pub replicated_jobs: Vec<ReplicatedJob>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_policy: Option<SuccessPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<FailurePolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Unset or `jobset.sigs.k8s.io/jobset-controller`: the built-in controller; MultiKueue
    /// sets its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

impl JobSet {
    /// `spec.suspend: true`: the JobSet controller keeps its Jobs suspended, so no pod runs.
    pub fn is_suspended(&self) -> bool {
        self.spec.suspend == Some(true)
    }
}

/// `replicas` Jobs stamped from one Job template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedJob {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_name: Option<String>,
    pub template: JobTemplateSpec,
    /// How many Jobs (not pods); the CRD defaults it to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// Pod DNS: hostnames under one headless Service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Network {
    #[serde(
        rename = "enableDNSHostnames",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_dns_hostnames: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_not_ready_addresses: Option<bool>,
}

/// When the JobSet is Completed: `All` or `Any` of the target replicatedJobs' Jobs complete.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuccessPolicy {
    pub operator: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_replicated_jobs: Vec<String>,
}

/// How many times the whole set is recreated after a failed Job.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restarts: Option<i32>,
}

/// What the controller reports (`JobSetStatus`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSetStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarts: Option<i32>,
    /// `Completed` or `Failed`; empty while running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_state: Option<String>,
    /// Counts in Jobs, keyed by name, in random order (a Go map is ranged over).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicated_jobs_status: Vec<ReplicatedJobStatus>,
}

/// Per replicatedJob: how many of its Jobs are ready, succeeded, failed, active, suspended.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedJobStatus {
    pub name: String,
    #[serde(default)]
    pub ready: i32,
    #[serde(default)]
    pub succeeded: i32,
    #[serde(default)]
    pub failed: i32,
    #[serde(default)]
    pub active: i32,
    #[serde(default)]
    pub suspended: i32,
}
