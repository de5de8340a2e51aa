//! What `probe` reads of the cluster: the job (or the exported JobSet) with its pods, the
//! TF_CONFIG each replica should see, the facts that name a peer's failure (Services, pod
//! readiness, declared ports, NetworkPolicies) and the gateway Secret's fingerprint.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};
use serde_json::Value;

use super::judge::not_probed;
use crate::cluster::{self, Kube, Target};
use crate::diagnose::inpod::PeerFacts;
use crate::error::Result;
use crate::model::TFJob;
use crate::ops::workload::{Workload, replica_of};

/// What is probed, read from the cluster.
pub(super) struct Subject {
    /// The TFJob (None for a JobSet).
    pub(super) job: Option<TFJob>,
    pub(super) pods: Vec<Pod>,
    /// The Services peers' names go through (None: not readable).
    pub(super) services: Option<Vec<Service>>,
    /// The TF_CONFIG each replica (`worker-1`) should see.
    pub(super) expected: BTreeMap<String, Value>,
    /// How many replicas the job has.
    pub(super) total: usize,
}

/// The job read once with its pods. A TFJob's peers go through the operator's Services (its
/// pods' labels) and its TF_CONFIGs are the operator's. A JobSet that `export --to jobset`
/// made: the headless Service its pods' subdomain names, and the TF_CONFIG the export wrote
/// into each pod's template, expanded as the kubelet expands it for that pod
/// (`jobset::tfconfig::expand`).
pub(super) async fn read(
    kube: &Kube,
    ns: &str,
    target: &Target,
    container: &str,
) -> Result<Subject> {
    let job = Workload::read(kube, target).await?;
    let pods = job.pods(kube).await?;
    let total = job.expected_pods();
    let api: Api<Service> = Api::namespaced(kube.client.clone(), ns);
    // Facts that only name causes: unreadable ones leave the cause unnamed, never a verdict.
    let (services, expected) = match &job {
        Workload::TfJob(tfjob) => {
            let by_job = ListParams::default().labels(&job.selector());
            let services = cluster::retry(kube, || api.list(&by_job)).await;
            (
                services.ok().map(|l| l.items),
                expected_tf_configs(tfjob, ns),
            )
        }
        Workload::JobSet(_) => {
            let subdomain = pods
                .iter()
                .find_map(|p| p.spec.as_ref()?.subdomain.clone())
                .unwrap_or_else(|| job.name());
            let service = cluster::retry(kube, || api.get_opt(&subdomain)).await;
            let expected = pods
                .iter()
                .filter_map(|p| {
                    let mut config = exported_tf_config(p, container, ns)?;
                    sized_to_the_jobset(&mut config, &job, &pods);
                    Some((replica_of(p), config))
                })
                .collect();
            (service.ok().map(|s| s.into_iter().collect()), expected)
        }
    };
    let job = match job {
        Workload::TfJob(tfjob) => Some(tfjob),
        Workload::JobSet(_) => None,
    };
    Ok(Subject {
        job,
        pods,
        services,
        expected,
        total,
    })
}

/// The template's TF_CONFIG is what the export wrote, not what the JobSet runs now: a worker
/// added later runs with a cluster spec that lists one worker too few, which the process sees
/// as the template says. A role whose host count is not the number of pods that run for it
/// is given that many hosts, so the judgement names the difference instead of passing a
/// replica whose peers are not all in its cluster spec.
fn sized_to_the_jobset(config: &mut Value, job: &Workload, pods: &[Pod]) {
    let Some(cluster) = config["cluster"].as_object_mut() else {
        return;
    };
    for (role, hosts) in cluster.iter_mut() {
        // The pods the JobSet should run for the role, or those that exist when more do (a
        // child Job's parallelism raised by hand).
        let live = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| {
                crate::ops::workload::jobset::jobset_task(&p.metadata)
                    .0
                    .is_some_and(|r| r.eq_ignore_ascii_case(role))
            })
            .count();
        let runs = job.expected_selected(Some(role), None).max(live);
        let Some(listed) = hosts.as_array_mut() else {
            continue;
        };
        if runs == 0 || runs == listed.len() {
            continue;
        }
        // Hosts no template names: only their number is compared.
        listed.resize(
            runs,
            Value::String(format!("{role} pod not in the template")),
        );
    }
}

/// The TF_CONFIG a JobSet pod's template gives `container`, with the `$(VAR)` references the
/// export wrote expanded from the variables declared before it (literals, and the fieldRefs to
/// the pod's own name, namespace, labels and annotations), as the kubelet does.
pub(super) fn exported_tf_config(pod: &Pod, container: &str, ns: &str) -> Option<Value> {
    let env = pod
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == container)?
        .env
        .clone()?;
    let at = env.iter().position(|e| e.name == "TF_CONFIG")?;
    let template = env[at].value.clone()?;
    let meta = &pod.metadata;
    let value_of = |e: &k8s_openapi::api::core::v1::EnvVar| -> Option<String> {
        if let Some(v) = &e.value {
            return Some(v.clone());
        }
        let path = e
            .value_from
            .as_ref()?
            .field_ref
            .as_ref()?
            .field_path
            .clone();
        let key = |prefix: &str| {
            path.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix("']"))
                .map(str::to_string)
        };
        match path.as_str() {
            "metadata.name" => meta.name.clone(),
            "metadata.namespace" => Some(meta.namespace.clone().unwrap_or_else(|| ns.into())),
            _ => {
                if let Some(k) = key("metadata.annotations['") {
                    meta.annotations.as_ref()?.get(&k).cloned()
                } else if let Some(k) = key("metadata.labels['") {
                    meta.labels.as_ref()?.get(&k).cloned()
                } else {
                    None
                }
            }
        }
    };
    let declared = &env[..at];
    let value = crate::pipeline::jobset::tfconfig::expand(&template, |name| {
        declared
            .iter()
            .rev()
            .find(|e| e.name == name)
            .and_then(value_of)
    });
    serde_json::from_str(&value).ok()
}

/// The TF_CONFIG the operator gives each replica (`worker-1` → JSON), as the one model of the
/// operator's pods writes it; nothing for a job that is not distributed.
pub(super) fn expected_tf_configs(job: &TFJob, ns: &str) -> BTreeMap<String, Value> {
    let model = crate::operator_pods::expand(job).in_namespace(ns);
    let mut out = BTreeMap::new();
    for r in &model.replicas {
        for i in 0..r.count.max(0) {
            if let Some(v) = model
                .tf_config(r, i)
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            {
                out.insert(format!("{}-{i}", r.type_name), v);
            }
        }
    }
    out
}

/// What the cluster says about a peer `<pod>.<ns>.svc:<port>`: its Service, its pod's
/// readiness and declared ports, the NetworkPolicies that select it.
pub(super) fn peer_facts(
    to: &str,
    ns: &str,
    pods: &[Pod],
    container: &str,
    services: Option<&[Service]>,
    policies: &[NetworkPolicy],
) -> PeerFacts {
    let host = to.rsplit_once(':').map(|(h, _)| h).unwrap_or(to);
    let labels: Vec<&str> = host.split('.').collect();
    // `<hostname>.<subdomain>.<ns>.svc` (a JobSet pod, through its subdomain's headless
    // Service) or `<service>.<ns>.svc` (the operator names each replica's Service after its pod).
    let by_hostname = labels.len() >= 4 && labels[3] == "svc";
    let service = if by_hostname { labels[1] } else { labels[0] }.to_string();
    let service_exists = services.map(|s| {
        s.iter()
            .any(|s| s.metadata.name.as_deref() == Some(service.as_str()))
    });
    let pod = pods.iter().find(|p| {
        if by_hostname {
            p.spec.as_ref().is_some_and(|s| {
                s.hostname.as_deref() == Some(labels[0])
                    && s.subdomain.as_deref() == Some(labels[1])
            })
        } else {
            p.metadata.name.as_deref() == Some(service.as_str())
        }
    });
    let pod_ready = pod.map(|p| {
        p.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True")
    });
    let declared_ports = pod.map(|p| {
        p.spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .flat_map(|c| c.ports.iter().flatten())
            .map(|p| p.container_port)
            .collect()
    });
    let labels = pod
        .and_then(|p| p.metadata.labels.clone())
        .unwrap_or_default();
    let policies = policies
        .iter()
        .filter(|np| np.metadata.namespace.as_deref().unwrap_or(ns) == ns)
        .filter(|np| {
            // An empty podSelector selects every pod of the namespace.
            np.spec.as_ref().is_some_and(|s| match &s.pod_selector {
                None => true,
                Some(sel) => {
                    sel.match_labels
                        .iter()
                        .flatten()
                        .all(|(k, v)| labels.get(k) == Some(v))
                        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
                }
            })
        })
        .filter_map(|np| np.metadata.name.clone())
        .collect();
    // The container probed in the replicas, judged in the peer as it is in them: a peer that
    // crash-loops is not probed either, and its name not resolving is its state's doing.
    let pod_not_running =
        pod.and_then(|p| not_probed(p, container, k8s_openapi::jiff::Timestamp::now()));
    PeerFacts {
        service,
        service_exists,
        pod_ready,
        pod_not_running,
        declared_ports,
        policies,
    }
}

/// The first 8 hex digits of the SHA-256 of the key the pods' key variable comes from (the
/// Secret's value now), or None when it cannot be read. The value itself is dropped here.
pub(super) async fn secret_fingerprint(
    kube: &Kube,
    ns: &str,
    pods: &[Pod],
    container: &str,
    key_var: &str,
) -> Option<String> {
    let (secret, key) = key_ref(pods, container, key_var)?;
    let api: Api<Secret> = Api::namespaced(kube.client.clone(), ns);
    let s = cluster::retry(kube, || api.get_opt(&secret)).await.ok()??;
    let value = s.data.as_ref()?.get(&key)?;
    Some(fingerprint(&value.0))
}

/// The Secret and key the pods' `key_var` comes from (`valueFrom.secretKeyRef`).
pub(super) fn key_ref(pods: &[Pod], container: &str, key_var: &str) -> Option<(String, String)> {
    pods.iter()
        .flat_map(|p| p.spec.iter().flat_map(|s| s.containers.iter()))
        .filter(|c| c.name == container)
        .flat_map(|c| c.env.iter().flatten())
        .filter(|e| e.name == key_var)
        .find_map(|e| {
            let r = e.value_from.as_ref()?.secret_key_ref.as_ref()?;
            Some((r.name.clone(), r.key.clone()))
        })
}

/// SHA-256's first 8 hex digits, as the in-pod scripts print it.
pub(super) fn fingerprint(value: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, value);
    d.as_ref()[..4].iter().map(|b| format!("{b:02x}")).collect()
}
