//! A stand-in for training-operator v1.9.4 against a real API server, for the real-node tier:
//! no operator image can be had here, so this loop does the part of its reconcile the tier
//! needs, after `../shared/reference/operator-behavior.md`: one pod and one headless Service
//! per replica (the pods as `operator_pods` models them, with TF_CONFIG and the job as
//! controller owner), `replicaStatuses` counted from the pods, the conditions Created → Running
//! → Succeeded/Failed with the operator's reasons and messages, and cleanPodPolicy on the end.
//! It polls (every 300 ms) instead of watching: simple, and the tier's verdicts do not depend on
//! its speed.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kubectl_tfjob::model::TFJob;
use serde_json::{Value, json};

/// Starts the loop on its own thread for the cluster of `kubeconfig`; it runs until the test
/// process ends.
pub fn start(kubeconfig: &std::path::Path) {
    let kubeconfig = kubeconfig.to_path_buf();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let kc = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
            let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .unwrap();
            let client = kube::Client::try_from(config).unwrap();
            loop {
                if let Ok(jobs) = Api::<TFJob>::all(client.clone())
                    .list(&ListParams::default())
                    .await
                {
                    for job in jobs.items {
                        let _ = reconcile(&client, &job).await;
                    }
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        });
    });
}

/// The operator's `FailedCreatePod` event on the job, as the tool reads it (by the job's uid
/// and reason); once per message, where the operator's recorder would count repeats.
async fn failed_create(client: &kube::Client, job: &TFJob, message: &str) {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), &ns);
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let said = ListParams::default().fields(&format!("involvedObject.uid={uid}"));
    if let Ok(list) = events.list(&said).await
        && list
            .items
            .iter()
            .any(|e| e.message.as_deref() == Some(message))
    {
        return;
    }
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let event = json!({"metadata": {"generateName": format!("{name}.")},
        "involvedObject": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": name,
                           "namespace": ns, "uid": job.metadata.uid},
        "reason": "FailedCreatePod", "type": "Warning", "message": message,
        "source": {"component": "tfjob-controller"}, "count": 1,
        "firstTimestamp": now, "lastTimestamp": now});
    if let Ok(event) = serde_json::from_value(event) {
        let _ = events.create(&PostParams::default(), &event).await;
    }
}

fn has(conditions: &[Value], t: &str) -> bool {
    conditions
        .iter()
        .any(|c| c["type"] == t && c["status"] == "True")
}

async fn reconcile(client: &kube::Client, job: &TFJob) -> Result<(), kube::Error> {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let status = serde_json::to_value(&job.status).unwrap_or(Value::Null);
    let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    if has(&conditions, "Succeeded") || has(&conditions, "Failed") {
        return Ok(());
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    let owner = json!([{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": name, "uid": uid,
                        "controller": true, "blockOwnerDeletion": true}]);
    let model = kubectl_tfjob::operator_pods::expand(job).in_namespace(&ns);
    let selector = format!("training.kubeflow.org/job-name={name}");
    let existing = pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items;
    let by_name: BTreeMap<String, &Pod> = existing
        .iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
        .collect();
    let mut counts: BTreeMap<String, (i32, i32, i32)> = BTreeMap::new();
    for r in &model.replicas {
        let entry = counts.entry(r.type_name.clone()).or_default();
        for i in 0..r.count {
            let pod_name = model.pod_name(r, i);
            match by_name.get(&pod_name) {
                None => {
                    let mut pod = serde_json::to_value(model.pod(r, i)).unwrap();
                    pod["metadata"]["ownerReferences"] = owner.clone();
                    let pod: Pod = serde_json::from_value(pod).unwrap();
                    if let Err(kube::Error::Api(s)) =
                        pods.create(&PostParams::default(), &pod).await
                    {
                        // pod_control.go `createPods`: a refused create is a Warning event on the
                        // job, "Error creating: " and the API server's error.
                        failed_create(client, job, &format!("Error creating: {}", s.message)).await;
                        continue;
                    }
                    let svc: Service = serde_json::from_value(json!({
                        "metadata": {"name": model.service_name(r, i), "ownerReferences": owner,
                                     "labels": pod.metadata.labels},
                        "spec": {"clusterIP": "None", "selector": pod.metadata.labels,
                                 "ports": [{"name": "tfjob-port", "port": r.port, "targetPort": r.port}]}}))
                    .unwrap();
                    let _ = services.create(&PostParams::default(), &svc).await;
                }
                Some(p) => {
                    let phase = p
                        .status
                        .as_ref()
                        .and_then(|s| s.phase.clone())
                        .unwrap_or_default();
                    let deleting = p.metadata.deletion_timestamp.is_some();
                    match (phase.as_str(), deleting) {
                        ("Running", false) => entry.0 += 1,
                        ("Running", true) | ("Failed", _) => entry.2 += 1,
                        ("Succeeded", _) => entry.1 += 1,
                        _ => {}
                    }
                }
            }
        }
    }
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let cond = |t: &str, s: &str, reason: &str, message: String| {
        json!({"type": t, "status": s, "reason": reason, "message": message,
               "lastUpdateTime": now, "lastTransitionTime": now})
    };
    let set = |conds: &mut Vec<Value>, c: Value| {
        if conds.iter().any(|o| {
            o["type"] == c["type"] && o["status"] == c["status"] && o["reason"] == c["reason"]
        }) {
            return;
        }
        conds.retain(|o| o["type"] != c["type"]);
        conds.push(c);
    };
    set(
        &mut conditions,
        cond(
            "Created",
            "True",
            "TFJobCreated",
            format!("TFJob {name} is created."),
        ),
    );
    // Without a Chief or Master, Worker drives the outcome (UpdateJobStatus).
    let driver = ["Chief", "Master", "Worker"]
        .into_iter()
        .find(|t| counts.contains_key(*t));
    let failed = counts.iter().find(|(_, c)| c.2 > 0);
    let mut ended = false;
    if let Some((t, c)) = failed {
        set(
            &mut conditions,
            cond(
                "Failed",
                "True",
                "TFJobFailed",
                format!(
                    "TFJob {ns}/{name} has failed because {} {t} replica(s) failed.",
                    c.2
                ),
            ),
        );
        ended = true;
    } else if let Some(d) = driver {
        let (active, succeeded, _) = counts[d];
        let expected = model
            .replicas
            .iter()
            .filter(|r| r.type_name == d)
            .map(|r| r.count)
            .sum::<i32>()
            - succeeded;
        if expected == 0 {
            set(
                &mut conditions,
                cond(
                    "Succeeded",
                    "True",
                    "TFJobSucceeded",
                    format!("TFJob {ns}/{name} successfully completed."),
                ),
            );
            ended = true;
        } else if active > 0 {
            set(
                &mut conditions,
                cond(
                    "Running",
                    "True",
                    "TFJobRunning",
                    format!("TFJob {ns}/{name} is running."),
                ),
            );
        }
    }
    if ended {
        for c in conditions.iter_mut().filter(|c| c["type"] == "Running") {
            c["status"] = "False".into();
        }
    }
    let replica_statuses: serde_json::Map<String, Value> = counts
        .iter()
        .map(|(t, (a, s, f))| {
            let mut m = serde_json::Map::new();
            for (k, v) in [("active", a), ("succeeded", s), ("failed", f)] {
                if *v > 0 {
                    m.insert(k.into(), json!(v));
                }
            }
            (t.clone(), Value::Object(m))
        })
        .collect();
    let mut new_status = json!({"conditions": conditions, "replicaStatuses": replica_statuses,
                                "startTime": status["startTime"].as_str().map_or(now.clone(), str::to_string)});
    if ended {
        new_status["completionTime"] = now.clone().into();
    }
    if new_status["conditions"] != status["conditions"]
        || new_status["replicaStatuses"] != status["replicaStatuses"]
    {
        let jobs: Api<TFJob> = Api::namespaced(client.clone(), &ns);
        jobs.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": new_status})),
        )
        .await?;
    }
    if ended {
        // cleanPodPolicy: Running (the default) deletes the pods still running, All every pod.
        let policy = serde_json::to_value(&job.spec)
            .ok()
            .and_then(|s| {
                s["runPolicy"]["cleanPodPolicy"]
                    .as_str()
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "Running".into());
        for p in &existing {
            let running = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
            if policy == "All" || (policy == "Running" && running) {
                let _ = pods
                    .delete(
                        &p.metadata.name.clone().unwrap_or_default(),
                        &DeleteParams::default(),
                    )
                    .await;
            }
        }
    }
    Ok(())
}
