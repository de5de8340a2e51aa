//! The one model of the pods the training-operator makes of a TFJob: job → replicas → pods,
//! with their names, labels, ports, restart policy, TF_CONFIG and headless Services. Pure (no
//! I/O), importing only [`crate::model`], so every layer that needs the operator's pods (the pod
//! dry run, placement, the JobSet export, `wait`'s expectations, `get`, `diagnose`) asks this
//! module instead of building them again. [`expand`] is the entry point.
//!
//! Facts, kubeflow/training-operator v1.9 (`pkg/controller.v1/tensorflow/`):
//! - defaults (`pkg/apis/kubeflow.org/v1/tensorflow_defaults.go`): `replicas` 1, `restartPolicy`
//!   Never, and `{name: tfjob-port, containerPort: 2222}` appended to the `tensorflow`
//!   container (else container 0, `getDefaultContainerIndex`) when it has no `tfjob-port`;
//! - pods (`tfjob_controller.go`, `common/pod.go`, `common/util.go` `GenGeneralName`): name
//!   `<job>-<lowercase type>-<i>` with `/` → `-`; labels `GenLabels` over the template's plus
//!   `job-role: master` for the master role (`IsMasterRole`); restartPolicy from the replica
//!   spec with ExitCode written as Never (`setRestartPolicy`);
//! - Services (`common/service.go`): one headless Service per pod, with the pod's name and the
//!   labels without job-role;
//! - TF_CONFIG (`tensorflow.go` `genTFConfigJSONStr`, `genClusterSpec`): only for distributed
//!   jobs, appended to the first `tensorflow` container; the cluster lists **every** replica key,
//!   the evaluator included (the old tf-operator skipped it; training-operator's genClusterSpec
//!   does not), as `<pod>.<ns>.svc:<tfjob-port>` (`GetPortFromTFJob`); `enableDynamicWorker`
//!   switches to the sparse form. The operator's `CUSTOM_CLUSTER_DOMAIN` is a setting of its own
//!   process, unknown here: addresses end at `.svc`, as with it unset.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EnvVar, Pod, PodSpec, PodTemplateSpec};

use crate::model::{self, ReplicaSpec, ReplicaType, TFJob};

pub mod wire;

/// A TFJob as the operator expands it. Built by [`expand`].
#[derive(Debug)]
pub struct OperatorJob<'a> {
    pub job: &'a TFJob,
    /// The job's name (`metadata.name`; see [`OperatorJob::named`]).
    pub name: String,
    /// Where the pods live: the job's namespace, else `default` (see
    /// [`OperatorJob::in_namespace`]).
    pub namespace: String,
    /// Whether the pods get TF_CONFIG: the replicas of the known types do not add up to 1.
    pub distributed: bool,
    /// One per key of `tfReplicaSpecs`, in key order; unknown keys get pods too.
    pub replicas: Vec<Replica<'a>>,
    /// TF_CONFIG's `cluster` object, written once for every pod that asks.
    cluster: OnceCell<String>,
}

/// One replica type of the job.
#[derive(Debug, Clone)]
pub struct Replica<'a> {
    /// The key as written in `tfReplicaSpecs`.
    pub key: &'a str,
    /// The known type it names (any case), `None` for an unknown key.
    pub rtype: Option<ReplicaType>,
    /// The canonical type (`Worker`), or the key itself when unknown: how `replicaStatuses` and
    /// the plugin's messages name it.
    pub type_name: String,
    /// Lowercase: in pod names, the replica-type label and TF_CONFIG.
    pub lower: String,
    /// `replicas`, defaulted to 1; a negative count makes no pods.
    pub count: i32,
    /// The `tfjob-port` of the `tensorflow` container, else 2222.
    pub port: i32,
    pub spec: &'a ReplicaSpec,
}

/// The operator's view of `job`: its replicas and, on demand, each pod
/// ([`OperatorJob::pod`]), its name, labels, TF_CONFIG and Service.
pub fn expand(job: &TFJob) -> OperatorJob<'_> {
    let replicas = job
        .spec
        .tf_replica_specs
        .iter()
        .map(|(key, spec)| {
            let rtype = ReplicaType::from_any_case(key);
            Replica {
                key,
                rtype,
                type_name: rtype.map_or_else(|| key.clone(), |t| t.as_str().to_string()),
                lower: key.to_lowercase(),
                count: spec.replicas.unwrap_or(1).max(0),
                port: tf_port(&spec.template),
                spec,
            }
        })
        .collect();
    OperatorJob {
        job,
        name: job.metadata.name.clone().unwrap_or_default(),
        namespace: job
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        distributed: job.is_distributed(),
        replicas,
        cluster: OnceCell::new(),
    }
}

/// `GetPortFromTFJob`: the `tfjob-port` of the `tensorflow` container, else the default.
fn tf_port(template: &PodTemplateSpec) -> i32 {
    template
        .spec
        .as_ref()
        .and_then(|s| {
            s.containers
                .iter()
                .find(|c| c.name == model::DEFAULT_CONTAINER_NAME)
        })
        .and_then(|c| c.ports.as_ref())
        .and_then(|ps| {
            ps.iter()
                .find(|p| p.name.as_deref() == Some(model::DEFAULT_PORT_NAME))
        })
        .map_or(model::DEFAULT_PORT, |p| p.container_port)
}

/// The pod restartPolicy for a replica restartPolicy (defaulted Never): ExitCode is the
/// operator's own policy, carried out with pods that never restart.
pub fn pod_restart_policy(replica_policy: Option<&str>) -> &str {
    match replica_policy.unwrap_or("Never") {
        "ExitCode" => "Never",
        other => other,
    }
}

impl<'a> OperatorJob<'a> {
    /// The same job under another name: the name the API server will give a job named by
    /// `generateName`.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self.cluster = OnceCell::new();
        self
    }

    /// The same job created in `namespace` (a job that names none goes where `-n` says).
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self.cluster = OnceCell::new();
        self
    }

    /// The replica of a known type, matched case-insensitively.
    pub fn replica(&self, rtype: ReplicaType) -> Option<&Replica<'a>> {
        self.replicas.iter().find(|r| r.rtype == Some(rtype))
    }

    /// Whether a Chief or Master key is present (the master role, then).
    fn has_chief(&self) -> bool {
        self.replicas
            .iter()
            .any(|r| r.rtype.is_some_and(ReplicaType::is_chief_like))
    }

    /// Pod `index` of `r`: `<job>-<type>-<index>`, also its headless Service's name.
    pub fn pod_name(&self, r: &Replica, index: i32) -> String {
        model::pod_name(&self.name, &r.lower, i64::from(index))
    }

    /// The headless Service the operator makes for pod `index` of `r` (named as the pod).
    pub fn service_name(&self, r: &Replica, index: i32) -> String {
        self.pod_name(r, index)
    }

    /// How the other pods reach pod `index` of `r`: its Service's DNS name and the port.
    pub fn address(&self, r: &Replica, index: i32) -> String {
        format!(
            "{}.{}.svc:{}",
            self.service_name(r, index),
            self.namespace,
            r.port
        )
    }

    /// The operator's labels of pod `index` of `r` (`GenLabels`), which are also its Service's
    /// labels and selector.
    pub fn operator_labels(&self, r: &Replica, index: i32) -> BTreeMap<String, String> {
        BTreeMap::from([
            (model::LABEL_JOB_NAME.into(), self.name.replace('/', "-")),
            (
                model::LABEL_OPERATOR_NAME.into(),
                model::OPERATOR_NAME.into(),
            ),
            (model::LABEL_REPLICA_TYPE.into(), r.lower.clone()),
            (model::LABEL_REPLICA_INDEX.into(), index.to_string()),
        ])
    }

    /// Every label of pod `index` of `r`: the template's, the operator's over them, and
    /// `job-role: master` for every Chief/Master pod, else for Worker 0 (`IsMasterRole`).
    pub fn pod_labels(&self, r: &Replica, index: i32) -> BTreeMap<String, String> {
        let mut labels = r
            .spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        labels.extend(self.operator_labels(r, index));
        let master = match r.rtype {
            Some(t) if t.is_chief_like() => true,
            Some(ReplicaType::Worker) => index == 0 && !self.has_chief(),
            _ => false,
        };
        if master {
            labels.insert(model::LABEL_JOB_ROLE.into(), model::JOB_ROLE_MASTER.into());
        }
        labels
    }

    /// TF_CONFIG's members: every replica key with its count and port.
    pub fn cluster_members(&self) -> Vec<ClusterMember> {
        self.replicas
            .iter()
            .map(|r| ClusterMember {
                lower: r.lower.clone(),
                replicas: i64::from(r.count),
                port: i64::from(r.port),
            })
            .collect()
    }

    fn address_of(&self) -> impl Fn(&str, &str, i64) -> String + '_ {
        |lower, index, port| {
            // GenGeneralName, then the Service's DNS name.
            let host = format!("{}-{lower}-{index}", self.name).replace('/', "-");
            format!("{host}.{}.svc:{port}", self.namespace)
        }
    }

    /// The TF_CONFIG pod `index` of `r` gets, or `None` when the job is not distributed.
    pub fn tf_config(&self, r: &Replica, index: i32) -> Option<String> {
        if !self.distributed {
            return None;
        }
        let idx = index.to_string();
        if self.job.spec.enable_dynamic_worker == Some(true) {
            return Some(sparse_tf_config(
                &self.cluster_members(),
                &r.lower,
                &idx,
                self.address_of(),
            ));
        }
        let cluster = self
            .cluster
            .get_or_init(|| cluster_json(&self.cluster_members(), self.address_of()));
        Some(dense_tf_config(cluster, &r.lower, &idx))
    }

    /// The pod spec every pod of `r` shares: the template's as the operator sends it
    /// ([`wire`]), with the pod restartPolicy and the default `tfjob-port`; no TF_CONFIG,
    /// which differs per pod ([`OperatorJob::pod`]).
    pub fn pod_spec(&self, r: &Replica) -> PodSpec {
        let mut spec = wire::as_sent(r.spec.template.spec.clone().unwrap_or_default());
        spec.restart_policy =
            Some(pod_restart_policy(r.spec.restart_policy.as_deref()).to_string());
        add_default_port(&mut spec);
        spec
    }

    /// Pod `index` of `r` as the operator creates it, without the ownerReference (the job's uid
    /// is the server's): name, namespace, labels, spec, and TF_CONFIG last in the `tensorflow`
    /// container's env.
    pub fn pod(&self, r: &Replica, index: i32) -> Pod {
        let mut meta = r.spec.template.metadata.clone().unwrap_or_default();
        meta.name = Some(self.pod_name(r, index));
        meta.generate_name = None;
        meta.namespace = Some(self.namespace.clone());
        meta.labels = Some(self.pod_labels(r, index));
        let mut spec = self.pod_spec(r);
        if let Some(value) = self.tf_config(r, index)
            && let Some(c) = spec
                .containers
                .iter_mut()
                .find(|c| c.name == model::DEFAULT_CONTAINER_NAME)
        {
            c.env.get_or_insert_with(Vec::new).push(EnvVar {
                name: "TF_CONFIG".into(),
                value: Some(value),
                value_from: None,
            });
        }
        Pod {
            metadata: meta,
            spec: Some(spec),
            status: None,
        }
    }

    /// Every pod name, in replica order then index order; at most
    /// [`model::MAX_LISTED_PODS_PER_TYPE`] per type, so a hostile `replicas` cannot exhaust
    /// memory.
    pub fn pod_names(&self) -> Vec<String> {
        self.replicas
            .iter()
            .flat_map(|r| {
                (0..r.count.min(model::MAX_LISTED_PODS_PER_TYPE)).map(move |i| self.pod_name(r, i))
            })
            .collect()
    }

    /// The pods expected per canonical type name (keys differing only in case add up): what
    /// `wait` counts running pods against.
    pub fn expected(&self) -> BTreeMap<String, i32> {
        let mut out = BTreeMap::new();
        for r in &self.replicas {
            *out.entry(r.type_name.clone()).or_insert(0) += r.count;
        }
        out
    }
}

/// The operator's defaulting (`setDefaultPort`), as [`wire::add_default_port`] states it.
fn add_default_port(spec: &mut PodSpec) {
    let Ok(mut v) = serde_json::to_value(&*spec) else {
        return;
    };
    wire::add_default_port(&mut v);
    if let Ok(with_port) = serde_json::from_value(v) {
        *spec = with_port;
    }
}

// ---------------------------------------------------------------------------------------------
// TF_CONFIG's text, shared with the JobSet export, whose addresses and index differ (`$(VAR)`
// references the kubelet expands) but whose layout is the operator's.

/// One replica type as TF_CONFIG lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMember {
    /// Lowercase type: the cluster key and the task type.
    pub lower: String,
    pub replicas: i64,
    pub port: i64,
}

/// The `"cluster"` object: one lowercase key per type, sorted (Go's encoding/json sorts map
/// keys), each listing indexes 0..replicas-1 through `address(type, index, port)`; compact, as
/// `json.Marshal` writes it.
pub fn cluster_json(
    members: &[ClusterMember],
    address: impl Fn(&str, &str, i64) -> String,
) -> String {
    let cluster: BTreeMap<&str, Vec<String>> = members
        .iter()
        .map(|m| {
            (
                m.lower.as_str(),
                (0..m.replicas)
                    .map(|i| address(&m.lower, &i.to_string(), m.port))
                    .collect(),
            )
        })
        .collect();
    serde_json::to_string(&cluster).expect("strings serialize")
}

/// The normal form for a pod of type `own` with task index `index` (written as is: a number,
/// or a reference the kubelet replaces by one): cluster, task, environment, in the Go struct's
/// field order.
pub fn dense_tf_config(cluster_json: &str, own: &str, index: &str) -> String {
    format!(
        "{{\"cluster\":{cluster_json},\"task\":{{\"type\":{},\"index\":{index}}},\"environment\":\"cloud\"}}",
        quoted(own)
    )
}

/// The sparse form of `enableDynamicWorker` (`convertClusterSpecToSparseClusterSpec`; no
/// environment, fields `worker` then `ps`): a worker lists itself under its index and every PS;
/// a PS lists only itself; other types get empty ones. A job without a PS key has `"ps":null`
/// for its workers (a nil slice).
pub fn sparse_tf_config(
    members: &[ClusterMember],
    own: &str,
    index: &str,
    address: impl Fn(&str, &str, i64) -> String,
) -> String {
    let port_of = |t: &str| {
        members
            .iter()
            .find(|m| m.lower == t)
            .map_or(i64::from(model::DEFAULT_PORT), |m| m.port)
    };
    let ps = members.iter().find(|m| m.lower == "ps");
    let (worker, ps_list) = match own {
        "worker" => {
            let me = address("worker", index, port_of("worker"));
            let all_ps = match ps {
                Some(m) => serde_json::to_string(
                    &(0..m.replicas)
                        .map(|i| address("ps", &i.to_string(), m.port))
                        .collect::<Vec<_>>(),
                )
                .expect("strings serialize"),
                None => "null".into(),
            };
            (format!("{{{}:{}}}", quoted(index), quoted(&me)), all_ps)
        }
        "ps" => {
            let me = address("ps", index, port_of("ps"));
            ("{}".into(), format!("[{}]", quoted(&me)))
        }
        _ => ("{}".into(), "[]".into()),
    };
    format!(
        "{{\"cluster\":{{\"worker\":{worker},\"ps\":{ps_list}}},\"task\":{{\"type\":{},\"index\":{index}}}}}",
        quoted(own)
    )
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

#[cfg(test)]
mod tests;
