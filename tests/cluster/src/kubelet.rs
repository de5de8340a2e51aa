//! Simulated kubelet (and the node and operator-pod objects): image pull, config resolution,
//! container start/exit/crash-loop with kubelet-style statuses and events. Binding is in
//! `binding`, the scheduler's filters in `scheduler`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::scenario::{ContainerBehaviour, Disruption, NodeSpec, Taint};
use crate::state::Shared;
use crate::util::{glob_match, new_uid, now_rfc3339};

/// The Node object for a scenario node.
pub(crate) fn node_object(n: &NodeSpec, version: &str, index: usize) -> Value {
    let ip = format!("10.0.0.{}", 10 + index % 240);
    let mut labels = json!({
        "kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"
    });
    for (k, v) in &n.labels {
        labels[k] = json!(v);
    }
    let mut cap = json!({"cpu": n.cpu, "memory": n.memory, "pods": n.pods.to_string(), "ephemeral-storage": "100Gi"});
    if n.gpu > 0 {
        cap["nvidia.com/gpu"] = json!(n.gpu.to_string());
    }
    let mut node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": n.name, "labels": labels},
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": {
            "capacity": cap, "allocatable": cap,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": now_rfc3339(), "lastTransitionTime": now_rfc3339()}],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": n.name}],
            "nodeInfo": {"kubeletVersion": version, "containerRuntimeVersion": "containerd://2.1.0", "operatingSystem": "linux", "architecture": "amd64", "osImage": "Debian GNU/Linux 13 (trixie)", "kernelVersion": "6.12.0"}
        }
    });
    // A cordoned node also carries the taint the node lifecycle controller adds.
    let cordon = Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        value: String::new(),
        effect: "NoSchedule".into(),
    };
    if n.unschedulable {
        node["spec"]["unschedulable"] = json!(true);
    }
    if !n.taints.is_empty() || n.unschedulable {
        node["spec"]["taints"] = json!(
            n.taints
                .iter()
                .chain(n.unschedulable.then_some(&cordon))
                .map(|t| {
                    let mut v = json!({"key": t.key, "effect": t.effect});
                    if !t.value.is_empty() {
                        v["value"] = json!(t.value);
                    }
                    v
                })
                .collect::<Vec<_>>()
        );
    }
    node
}

/// The training-operator pod (Running and ready, or crash-looping when merely "installed").
pub(crate) fn operator_pod(ns: &str, running: bool) -> Value {
    let now = now_rfc3339();
    let state = if running {
        json!({"running": {"startedAt": now}})
    } else {
        json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container=training-operator pod=training-operator-7f8b9c6d5-x2x4z_kubeflow"}})
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "training-operator-7f8b9c6d5-x2x4z", "namespace": ns, "labels": {"control-plane": "kubeflow-training-operator", "pod-template-hash": "7f8b9c6d5"}},
        "spec": {"nodeName": "node-1", "restartPolicy": "Always", "schedulerName": "default-scheduler", "containers": [{"name": "training-operator", "image": "ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489"}]},
        "status": {
            "phase": "Running", "podIP": "10.244.0.2", "hostIP": "10.0.0.10", "startTime": now, "qosClass": "BestEffort",
            "conditions": [{"type": "Ready", "status": if running {"True"} else {"False"}, "lastTransitionTime": now}],
            "containerStatuses": [{"name": "training-operator", "image": "ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489", "imageID": "", "ready": running, "started": running, "restartCount": if running {0} else {5}, "state": state, "lastState": {}}]
        }
    })
}

// ---------------------------------------------------------------- kubelet

pub(crate) fn start_pod(sh: Arc<Shared>, pod: Value) {
    let names: Vec<String> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(String::from))
        .collect();
    let ns = pod["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let now = now_rfc3339();
    let images: Vec<(String, String)> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_string(),
                c["image"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let ip = format!(
        "10.244.{}.{}",
        (uid.len() + name.len()) % 200 + 1,
        (name.bytes().map(|b| b as usize).sum::<usize>() % 250) + 2
    );
    // hostIP is the node's InternalIP.
    let host_ip = pod["spec"]["nodeName"]
        .as_str()
        .and_then(|n| sh.store.get("nodes", "", n))
        .and_then(|node| {
            node["status"]["addresses"].as_array().and_then(|a| {
                a.iter()
                    .find(|x| x["type"] == "InternalIP")
                    .and_then(|x| x["address"].as_str().map(String::from))
            })
        })
        .unwrap_or_else(|| "10.0.0.10".into());
    update_pod(&sh, &ns, &name, &uid, move |p| {
        p["status"]["startTime"] = json!(now);
        p["status"]["hostIP"] = json!(host_ip);
        p["status"]["hostIPs"] = json!([{"ip": host_ip}]);
        p["status"]["podIP"] = json!(ip);
        p["status"]["podIPs"] = json!([{"ip": ip}]);
        set_pod_condition(p, "PodReadyToStartContainers", "True", None, None, &now);
        set_pod_condition(p, "Initialized", "True", None, None, &now);
        set_pod_condition(
            p,
            "Ready",
            "False",
            Some("ContainersNotReady"),
            Some(&format!(
                "containers with unready status: [{}]",
                names.join(" ")
            )),
            &now,
        );
        set_pod_condition(
            p,
            "ContainersReady",
            "False",
            Some("ContainersNotReady"),
            Some(&format!(
                "containers with unready status: [{}]",
                names.join(" ")
            )),
            &now,
        );
        let statuses: Vec<Value> = images
            .iter()
            .map(|(n, img)| json!({"name": n, "image": img, "imageID": "", "ready": false, "started": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}))
            .collect();
        p["status"]["containerStatuses"] = json!(statuses);
        recompute_phase(p);
        true
    });
    for (i, c) in pod["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        tokio::spawn(run_container(sh.clone(), pod.clone(), c, i));
    }
}

/// Read-modify-write of a pod that still has `uid`; false when it is gone.
fn update_pod(
    sh: &Shared,
    ns: &str,
    name: &str,
    uid: &str,
    f: impl Fn(&mut Value) -> bool,
) -> bool {
    let mut alive = false;
    let uid = uid.to_string();
    let r = sh.store.modify("pods", ns, name, |p| {
        if p["metadata"]["uid"] != json!(uid) {
            return false;
        }
        f(p)
    });
    if let Some(p) = r {
        alive = p["metadata"]["uid"] == json!(uid);
    }
    alive
}

fn recompute_phase(p: &mut Value) {
    let cs = p["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let started = |c: &Value| {
        c["state"].get("running").is_some()
            || c["state"].get("terminated").is_some()
            || c["restartCount"].as_i64().unwrap_or(0) > 0
    };
    let all_started = !cs.is_empty() && cs.iter().all(started);
    let all_term = !cs.is_empty() && cs.iter().all(|c| c["state"].get("terminated").is_some());
    let phase = if all_term {
        if cs
            .iter()
            .all(|c| c["state"]["terminated"]["exitCode"] == json!(0))
        {
            "Succeeded"
        } else {
            "Failed"
        }
    } else if all_started {
        "Running"
    } else {
        "Pending"
    };
    p["status"]["phase"] = json!(phase);
    let now = now_rfc3339();
    let unready: Vec<String> = cs
        .iter()
        .filter(|c| c["ready"] != json!(true))
        .filter_map(|c| c["name"].as_str().map(String::from))
        .collect();
    if unready.is_empty() {
        set_pod_condition(p, "Ready", "True", None, None, &now);
        set_pod_condition(p, "ContainersReady", "True", None, None, &now);
    } else {
        let reason = if all_term {
            "PodCompleted"
        } else {
            "ContainersNotReady"
        };
        let msg = format!("containers with unready status: [{}]", unready.join(" "));
        let (r, m) = if all_term {
            (reason, None)
        } else {
            (reason, Some(msg.as_str()))
        };
        set_pod_condition(p, "Ready", "False", Some(r), m, &now);
        set_pod_condition(p, "ContainersReady", "False", Some(r), m, &now);
    }
    if all_term {
        set_pod_condition(p, "PodReadyToStartContainers", "False", None, None, &now);
    }
}

fn set_container(sh: &Shared, pod: &Value, cname: &str, f: impl Fn(&mut Value)) -> bool {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("");
    update_pod(sh, ns, name, uid, |p| {
        let Some(c) = p["status"]["containerStatuses"]
            .as_array_mut()
            .and_then(|cs| cs.iter_mut().find(|c| c["name"] == cname))
        else {
            return false;
        };
        f(c);
        recompute_phase(p);
        true
    })
}

fn kubelet_event(sh: &Shared, pod: &Value, cname: &str, etype: &str, reason: &str, msg: &str) {
    // A reference to the pod, not a copy of it (pods can carry ~100KB of TF_CONFIG).
    let p = json!({
        "apiVersion": "v1",
        "metadata": {
            "name": pod["metadata"]["name"], "namespace": pod["metadata"]["namespace"],
            "uid": pod["metadata"]["uid"], "resourceVersion": pod["metadata"]["resourceVersion"],
        },
        "spec": {"nodeName": pod["spec"]["nodeName"]},
        "__fieldPath": format!("spec.containers{{{cname}}}"),
    });
    sh.record_event(&p, "Pod", etype, reason, msg, "kubelet");
}

fn behaviour_for<'a>(
    sh: &'a Shared,
    pod: &Value,
    cname: &str,
    is_main: bool,
) -> Option<&'a ContainerBehaviour> {
    let labels = &pod["metadata"]["labels"];
    // A JobSet pod is matched by its replicatedJob and completion index.
    let rtype = labels["training.kubeflow.org/replica-type"]
        .as_str()
        .or(labels["jobset.sigs.k8s.io/replicatedjob-name"].as_str());
    let idx = labels["training.kubeflow.org/replica-index"]
        .as_str()
        .or(labels["batch.kubernetes.io/job-completion-index"].as_str())
        .and_then(|i| i.parse::<u32>().ok());
    let pname = pod["metadata"]["name"].as_str().unwrap_or("");
    sh.scenario.container_behaviour.iter().find(|b| {
        let m = &b.matches;
        m.replica_type
            .as_deref()
            .is_none_or(|t| rtype.is_some_and(|r| r.eq_ignore_ascii_case(t)))
            && m.index.is_none_or(|i| idx == Some(i))
            && m.pod_name.as_deref().is_none_or(|g| glob_match(g, pname))
            && match m.container.as_deref() {
                Some(c) => c == cname,
                None => is_main,
            }
    })
}

/// Env/volume references the kubelet must resolve before starting a container.
fn config_error(sh: &Shared, ns: &str, pod: &Value, c: &Value) -> Option<(String, String)> {
    for v in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        if let Some(sn) = v["secret"]["secretName"].as_str()
            && v["secret"]["optional"] != json!(true)
            && sh.store.get("secrets", ns, sn).is_none()
        {
            return Some((
                "ContainerCreating".into(),
                format!(
                    "MountVolume.SetUp failed for volume {:?} : secret {sn:?} not found",
                    v["name"].as_str().unwrap_or("")
                ),
            ));
        }
        // pkg/volume/configmap/configmap.go `SetUpAt`: a missing, non-optional ConfigMap
        // fails the mount the same way (the pod stays ContainerCreating).
        if let Some(cm) = v["configMap"]["name"].as_str()
            && v["configMap"]["optional"] != json!(true)
            && sh.store.get("configmaps", ns, cm).is_none()
        {
            return Some((
                "ContainerCreating".into(),
                format!(
                    "MountVolume.SetUp failed for volume {:?} : configmap {cm:?} not found",
                    v["name"].as_str().unwrap_or("")
                ),
            ));
        }
    }
    let has_key = |obj: &Value, key: &str| {
        obj["data"].get(key).is_some()
            || obj["binaryData"].get(key).is_some()
            || obj["stringData"].get(key).is_some()
    };
    for e in c["env"].as_array().into_iter().flatten() {
        for (field, res, kind, lower) in [
            ("secretKeyRef", "secrets", "Secret", "secret"),
            ("configMapKeyRef", "configmaps", "ConfigMap", "configmap"),
        ] {
            let r = &e["valueFrom"][field];
            if !r.is_object() {
                continue;
            }
            let (n, key) = (
                r["name"].as_str().unwrap_or(""),
                r["key"].as_str().unwrap_or(""),
            );
            let optional = r["optional"] == json!(true);
            match sh.store.get(res, ns, n) {
                None if !optional => {
                    return Some((
                        "CreateContainerConfigError".into(),
                        format!("{lower} {n:?} not found"),
                    ));
                }
                Some(o) if !optional && !has_key(&o, key) => {
                    return Some((
                        "CreateContainerConfigError".into(),
                        format!("couldn't find key {key} in {kind} {ns}/{n}"),
                    ));
                }
                _ => {}
            }
        }
    }
    for e in c["envFrom"].as_array().into_iter().flatten() {
        for (field, res, lower) in [
            ("secretRef", "secrets", "secret"),
            ("configMapRef", "configmaps", "configmap"),
        ] {
            let r = &e[field];
            if r.is_object() && r["optional"] != json!(true) {
                let n = r["name"].as_str().unwrap_or("");
                if sh.store.get(res, ns, n).is_none() {
                    return Some((
                        "CreateContainerConfigError".into(),
                        format!("{lower} {n:?} not found"),
                    ));
                }
            }
        }
    }
    None
}

fn backoff_text(restarts: i64) -> String {
    let secs = (10u64 << restarts.clamp(0, 5) as u64).min(300);
    if secs >= 60 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else {
        format!("{secs}s")
    }
}

async fn run_container(sh: Arc<Shared>, pod: Value, c: Value, index: usize) {
    let t = sh.scenario.timing.clone();
    let ns = pod["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let pname = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
    let puid = pod["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let cname = c["name"].as_str().unwrap_or("").to_string();
    let image = c["image"].as_str().unwrap_or("").to_string();
    let containers = pod["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let main_idx = containers
        .iter()
        .position(|x| x["name"] == "tensorflow")
        .unwrap_or(0);
    let is_main = index == main_idx;
    let restart_policy = pod["spec"]["restartPolicy"]
        .as_str()
        .unwrap_or("Always")
        .to_string();
    let sleep = |ms: u64| tokio::time::sleep(Duration::from_millis(ms));

    // Pull; a missing image cycles ErrImagePull → ImagePullBackOff with a doubling back-off
    // (kubelet: 10s..5m; here imagePullBackOffMs..30x) until the image appears or the pod goes.
    let mut backoff = t.image_pull_back_off_ms.max(10);
    loop {
        kubelet_event(
            &sh,
            &pod,
            &cname,
            "Normal",
            "Pulling",
            &format!("Pulling image {image:?}"),
        );
        sleep(t.pull_ms).await;
        let missing = sh.missing_images.lock().unwrap().contains(&image);
        let unreachable = sh.unreachable_images.lock().unwrap().contains(&image);
        if !missing && !unreachable {
            break;
        }
        // containerd's CRI errors, as the kubelet passes them on: the registry's "not found"
        // (gRPC NotFound), or a request that never got an answer (gRPC Unknown).
        let rpc = if missing {
            format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image {image:?}: failed to resolve reference {image:?}: {image}: not found"
            )
        } else {
            let host = image.split('/').next().unwrap_or("registry");
            format!(
                "rpc error: code = Unknown desc = failed to pull and unpack image {image:?}: failed to resolve reference {image:?}: failed to do request: Head \"https://{host}/v2/\": dial tcp: i/o timeout"
            )
        };
        let r2 = rpc.clone();
        if !set_container(&sh, &pod, &cname, move |cs| {
            cs["state"] = json!({"waiting": {"reason": "ErrImagePull", "message": r2}})
        }) {
            return;
        }
        kubelet_event(
            &sh,
            &pod,
            &cname,
            "Warning",
            "Failed",
            &format!("Failed to pull image {image:?}: {rpc}"),
        );
        kubelet_event(
            &sh,
            &pod,
            &cname,
            "Warning",
            "Failed",
            "Error: ErrImagePull",
        );
        sleep(t.image_pull_back_off_ms.max(10)).await;
        let msg = format!("Back-off pulling image {image:?}: ErrImagePull: {rpc}");
        if !set_container(&sh, &pod, &cname, move |cs| {
            cs["state"] = json!({"waiting": {"reason": "ImagePullBackOff", "message": msg}})
        }) {
            return;
        }
        kubelet_event(
            &sh,
            &pod,
            &cname,
            "Normal",
            "BackOff",
            &format!("Back-off pulling image {image:?}"),
        );
        kubelet_event(
            &sh,
            &pod,
            &cname,
            "Warning",
            "Failed",
            "Error: ImagePullBackOff",
        );
        sleep(backoff).await;
        backoff = (backoff * 2).min(t.image_pull_back_off_ms.max(10) * 30);
    }
    kubelet_event(
        &sh,
        &pod,
        &cname,
        "Normal",
        "Pulled",
        &format!(
            "Successfully pulled image {image:?} in {}ms ({}ms including waiting). Image size: 104857600 bytes.",
            t.pull_ms, t.pull_ms
        ),
    );
    loop {
        let Some(cur) = sh
            .store
            .get("pods", &ns, &pname)
            .filter(|p| p["metadata"]["uid"] == json!(puid))
        else {
            return;
        };
        match config_error(&sh, &ns, &cur, &c) {
            None => break,
            Some((reason, msg)) => {
                let (r2, m2) = (reason.clone(), msg.clone());
                let changed = set_container(&sh, &pod, &cname, move |cs| {
                    cs["state"] = if r2 == "ContainerCreating" {
                        json!({"waiting": {"reason": r2}})
                    } else {
                        json!({"waiting": {"reason": r2, "message": m2}})
                    };
                });
                if !changed {
                    return;
                }
                if reason == "ContainerCreating" {
                    sh.record_event(&cur, "Pod", "Warning", "FailedMount", &msg, "kubelet");
                } else {
                    kubelet_event(
                        &sh,
                        &pod,
                        &cname,
                        "Warning",
                        "Failed",
                        &format!("Error: {msg}"),
                    );
                }
                sleep(t.config_retry_ms.max(10)).await;
            }
        }
    }
    if let Some(cur) = sh.store.get("pods", &ns, &pname) {
        crate::expansion::record(&sh, &cur, &c);
    }
    sleep(t.start_ms).await;
    let image_id = format!(
        "docker.io/library/{}@sha256:{}",
        image.split(':').next().unwrap_or(""),
        "0".repeat(64)
    );
    let mut attempt = 0i64;
    loop {
        let cid = format!("containerd://{}", new_uid().replace('-', ""));
        let started = now_rfc3339();
        // The runtime creates the instance (and its log) before the status reports it.
        sh.logs.start_instance(&ns, &pname, &puid, &cname, &cid);
        // The start-up lines are in the log before the status says running, so a test that
        // waits for running and then replaces the log never races the kubelet's own lines.
        let b = behaviour_for(&sh, &pod, &cname, is_main).cloned();
        let text = b.as_ref().and_then(|b| b.log.clone()).unwrap_or_else(|| {
            if is_main { format!("INFO:tensorflow:{pname} started (attempt {attempt})\nINFO:tensorflow:Using MirroredStrategy\n") } else { format!("{cname} started\n") }
        });
        sh.logs.append(&ns, &pname, &cname, &text);
        let (cid2, st2, img2) = (cid.clone(), started.clone(), image_id.clone());
        if !set_container(&sh, &pod, &cname, move |cs| {
            cs["state"] = json!({"running": {"startedAt": st2}});
            cs["ready"] = json!(true);
            cs["started"] = json!(true);
            cs["containerID"] = json!(cid2);
            cs["imageID"] = json!(img2);
        }) {
            return;
        }
        kubelet_event(
            &sh,
            &pod,
            &cname,
            "Normal",
            "Created",
            &format!("Created container: {cname}"),
        );
        kubelet_event(
            &sh,
            &pod,
            &cname,
            "Normal",
            "Started",
            &format!("Started container {cname}"),
        );
        if let Some(d) = b
            .as_ref()
            .and_then(|b| b.disruption)
            .filter(|_| attempt == 0)
            .filter(|_| {
                // Once per replica: the pod recreated under its name is not disrupted again.
                sh.disrupted
                    .lock()
                    .unwrap()
                    .insert((ns.clone(), pname.clone()))
            })
        {
            tokio::select! {
                _ = sleep(b.as_ref().and_then(|b| b.run_ms).unwrap_or(50)) => {}
                _ = sh.logs.killed(&ns, &pname, &cname) => {}
            }
            disrupt(&sh, &pod, &cname, d).await;
            return;
        }
        let exit: Option<(u64, i64, bool)> = match &b {
            Some(b)
                if (b.crash_loop || attempt < i64::from(b.crash_times.unwrap_or(1)))
                    && (b.exit_code.is_some() || b.oom_killed) =>
            {
                let code = if b.oom_killed {
                    137
                } else {
                    b.exit_code.unwrap_or(1) as i64
                };
                Some((b.run_ms.unwrap_or(50), code, b.oom_killed))
            }
            _ => match sh.scenario.succeed_after_ms {
                Some(ms) if c["name"] == "tensorflow" => Some((ms, 0, false)),
                _ => None,
            },
        };
        // A running container ends on its configured exit or when a test scripts one
        // (`TestCluster::exit_container`), whichever comes first.
        let (code, oom) = match exit {
            Some((run_ms, code, oom)) => tokio::select! {
                _ = sleep(run_ms) => (code, oom),
                c = sh.logs.killed(&ns, &pname, &cname) => (c as i64, false),
            },
            None => (sh.logs.killed(&ns, &pname, &cname).await as i64, false),
        };
        if sh
            .store
            .get("pods", &ns, &pname)
            .is_none_or(|p| p["metadata"]["uid"] != json!(puid))
        {
            return;
        }
        let finished = now_rfc3339();
        let reason = if oom {
            "OOMKilled"
        } else if code == 0 {
            "Completed"
        } else {
            "Error"
        };
        let term = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished, "containerID": cid}});
        let restart = match restart_policy.as_str() {
            "Never" => false,
            "OnFailure" => code != 0,
            _ => true,
        };
        if !restart {
            let t2 = term.clone();
            set_container(&sh, &pod, &cname, move |cs| {
                cs["state"] = t2.clone();
                cs["ready"] = json!(false);
                cs["started"] = json!(false);
            });
            return;
        }
        attempt += 1;
        let msg = format!(
            "back-off {} restarting failed container={cname} pod={pname}_{ns}({puid})",
            backoff_text(attempt - 1)
        );
        let (t2, m2) = (term.clone(), msg.clone());
        if !set_container(&sh, &pod, &cname, move |cs| {
            cs["lastState"] = t2.clone();
            cs["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": m2}});
            cs["ready"] = json!(false);
            cs["started"] = json!(false);
            cs["restartCount"] = json!(attempt);
        }) {
            return;
        }
        kubelet_event(
            &sh,
            &pod,
            &cname,
            "Warning",
            "BackOff",
            &format!("Back-off restarting failed container {cname} in pod {pname}_{ns}({puid})"),
        );
        sleep(t.crash_back_off_ms).await;
    }
}

pub(crate) fn set_pod_condition(
    p: &mut Value,
    ctype: &str,
    status: &str,
    reason: Option<&str>,
    message: Option<&str>,
    now: &str,
) {
    if !p["status"]["conditions"].is_array() {
        p["status"]["conditions"] = json!([]);
    }
    let conds = p["status"]["conditions"].as_array_mut().unwrap();
    let mut c =
        json!({"type": ctype, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    match conds.iter_mut().find(|x| x["type"] == ctype) {
        Some(x) => {
            if x["status"] == status {
                c["lastTransitionTime"] = x["lastTransitionTime"].clone();
            }
            *x = c;
        }
        None => conds.push(c),
    }
    // The kubelet reports conditions in this order.
    const ORDER: [&str; 5] = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ];
    conds.sort_by_key(|c| {
        ORDER
            .iter()
            .position(|o| c["type"] == *o)
            .unwrap_or(ORDER.len())
    });
}

// ---------------------------------------------------------------- disruptions (issue 37)

/// Every container of a pod terminated as the kubelet leaves them when it kills the pod.
fn terminate_all(p: &mut Value, code: i64, reason: &str, message: Option<&str>, now: &str) {
    for cs in p["status"]["containerStatuses"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let started = cs["state"]["running"]["startedAt"].clone();
        let mut t =
            json!({"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now});
        if let Some(m) = message {
            t["message"] = json!(m);
        }
        cs["state"] = json!({"terminated": t});
        cs["ready"] = json!(false);
        cs["started"] = json!(false);
    }
}

/// Takes a running pod away as the cluster does (scenario `disruption`):
/// - `evicted`: the kubelet's eviction manager (kubernetes `pkg/kubelet/eviction/
///   eviction_manager.go` evictPod, messages from `helpers.go`): phase Failed, reason
///   `Evicted` with its message, a `DisruptionTarget` condition `TerminationByKubelet`, the
///   containers gone (`ContainerStatusUnknown`, 137), a Warning `Evicted` event.
/// - `preempted`: kube-scheduler's preemption (`pkg/scheduler/framework/preemption`): the
///   victim gets `DisruptionTarget` `PreemptionByScheduler` ("<scheduler>: preempting to
///   accommodate a higher priority pod") and a graceful delete; the kubelet stops it (143);
///   it is deleted after its grace period (shortened here).
/// - `nodeNotReady`: the node stops posting status (`Ready` Unknown, `NodeStatusUnknown`,
///   "Kubelet stopped posting node status.", the `unreachable` taints); the taint manager
///   marks its pods `DisruptionTarget` `DeletionByTaintManager` and deletes them, and they stay
///   Terminating (phase Running) since no kubelet confirms.
pub(crate) async fn disrupt(sh: &Arc<Shared>, pod: &Value, cname: &str, d: Disruption) {
    let ns = pod["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let node = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
    let now = now_rfc3339();
    match d {
        Disruption::Evicted => {
            let msg = format!(
                "The node was low on resource: memory. Threshold quantity: 100Mi, available: 52Mi. Container {cname} was using 7Gi, request is 1Gi, has larger consumption of memory. "
            );
            let m = msg.clone();
            update_pod(sh, &ns, &name, &uid, move |p| {
                set_pod_condition(
                    p,
                    "DisruptionTarget",
                    "True",
                    Some("TerminationByKubelet"),
                    Some(&m),
                    &now,
                );
                terminate_all(
                    p,
                    137,
                    "ContainerStatusUnknown",
                    Some("The container could not be located when the pod was terminated"),
                    &now,
                );
                recompute_phase(p);
                p["status"]["phase"] = json!("Failed");
                p["status"]["reason"] = json!("Evicted");
                p["status"]["message"] = json!(m);
                true
            });
            kubelet_event(sh, pod, cname, "Warning", "Evicted", &msg);
            kubelet_event(
                sh,
                pod,
                cname,
                "Normal",
                "Killing",
                &format!("Stopping container {cname}"),
            );
        }
        Disruption::Preempted => {
            let msg = "default-scheduler: preempting to accommodate a higher priority pod";
            let n2 = now.clone();
            update_pod(sh, &ns, &name, &uid, move |p| {
                set_pod_condition(
                    p,
                    "DisruptionTarget",
                    "True",
                    Some("PreemptionByScheduler"),
                    Some(msg),
                    &n2,
                );
                true
            });
            sh.store.mark_deleting("pods", &ns, &name, &uid, &now, 30);
            let p = json!({"apiVersion": "v1", "metadata": {"name": name, "namespace": ns, "uid": uid}});
            sh.record_event(
                &p,
                "Pod",
                "Normal",
                "Preempted",
                &format!("Preempted by pod {} on node {node}", new_uid()),
                "default-scheduler",
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
            let n3 = now_rfc3339();
            update_pod(sh, &ns, &name, &uid, move |p| {
                terminate_all(p, 143, "Error", None, &n3);
                recompute_phase(p);
                true
            });
            tokio::time::sleep(Duration::from_millis(400)).await;
            if sh
                .store
                .get("pods", &ns, &name)
                .is_some_and(|p| p["metadata"]["uid"] == json!(uid))
            {
                let _ = sh.store.delete("pods", &ns, &name);
            }
        }
        Disruption::NodeNotReady => {
            let n2 = now.clone();
            let _ = sh.store.modify("nodes", "", &node, move |n| {
                set_node_not_ready(n, &n2);
                true
            });
            let on_node: Vec<Arc<Value>> = sh.store.list_shared("pods", &ns, |p| {
                p["spec"]["nodeName"] == json!(node)
                    && p["metadata"].get("deletionTimestamp").is_none()
            });
            for p in on_node {
                let pn = p["metadata"]["name"].as_str().unwrap_or("").to_string();
                let pu = p["metadata"]["uid"].as_str().unwrap_or("").to_string();
                let n3 = now.clone();
                update_pod(sh, &ns, &pn, &pu, move |p| {
                    set_pod_condition(p, "Ready", "False", None, None, &n3);
                    set_pod_condition(
                        p,
                        "DisruptionTarget",
                        "True",
                        Some("DeletionByTaintManager"),
                        Some("Taint manager: deleting due to NoExecute taint"),
                        &n3,
                    );
                    true
                });
                // The taint manager's delete: graceful, so the pod stays Terminating.
                sh.store.mark_deleting("pods", &ns, &pn, &pu, &now, 30);
                sh.record_event(
                    &p,
                    "Pod",
                    "Normal",
                    "TaintManagerEviction",
                    &format!("Marking for deletion Pod {ns}/{pn}"),
                    "taint-eviction-controller",
                );
            }
        }
    }
}

/// A node whose kubelet stopped posting status, as the node lifecycle controller marks it
/// (`pkg/controller/nodelifecycle`: Ready Unknown, `NodeStatusUnknown`, the unreachable taints).
fn set_node_not_ready(n: &mut Value, now: &str) {
    n["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": now, "lastTransitionTime": now}]);
    let mut taints = n["spec"]["taints"].as_array().cloned().unwrap_or_default();
    for effect in ["NoSchedule", "NoExecute"] {
        let mut t = json!({"key": "node.kubernetes.io/unreachable", "effect": effect});
        if effect == "NoExecute" {
            t["timeAdded"] = json!(now);
        }
        taints.push(t);
    }
    n["spec"]["taints"] = json!(taints);
}
