//! Fields kube-apiserver fills in on create (registry defaulting and strategies), for the
//! kinds the simulated components create.

use serde_json::{Value, json};

use crate::util::random_suffix;

/// Fills fields the real apiserver defaults, per kind.
pub(crate) fn apply_defaults(plural: &str, obj: &mut Value) {
    match plural {
        "pods" => {
            let spec = &mut obj["spec"];
            for (k, v) in [
                ("restartPolicy", json!("Always")),
                ("dnsPolicy", json!("ClusterFirst")),
                ("schedulerName", json!("default-scheduler")),
                ("terminationGracePeriodSeconds", json!(30)),
                ("securityContext", json!({})),
                ("enableServiceLinks", json!(true)),
                ("preemptionPolicy", json!("PreemptLowerPriority")),
                ("priority", json!(0)),
                ("serviceAccountName", json!("default")),
                ("serviceAccount", json!("default")),
            ] {
                if spec.get(k).is_none_or(Value::is_null) {
                    spec[k] = v;
                }
            }
            for c in spec["containers"].as_array_mut().into_iter().flatten() {
                if c.get("imagePullPolicy").is_none() {
                    let img = c["image"].as_str().unwrap_or("");
                    let tag = img.rsplit('/').next().unwrap_or("");
                    let latest = !tag.contains(':') || tag.ends_with(":latest");
                    c["imagePullPolicy"] = json!(if latest && !img.contains('@') {
                        "Always"
                    } else {
                        "IfNotPresent"
                    });
                }
                if c.get("terminationMessagePath").is_none() {
                    c["terminationMessagePath"] = json!("/dev/termination-log");
                    c["terminationMessagePolicy"] = json!("File");
                }
                if c.get("resources").is_none() {
                    c["resources"] = json!({});
                }
                // Requests default to limits when only limits are set.
                if let Some(limits) = c["resources"]["limits"].as_object().cloned() {
                    let req = c["resources"]
                        .as_object_mut()
                        .unwrap()
                        .entry("requests")
                        .or_insert(json!({}));
                    for (k, v) in limits {
                        if req.get(&k).is_none() {
                            req[&k] = v;
                        }
                    }
                }
                for p in c["ports"].as_array_mut().into_iter().flatten() {
                    if p.get("protocol").is_none() {
                        p["protocol"] = json!("TCP");
                    }
                }
            }
            if obj.get("status").is_none_or(|s| s.get("phase").is_none()) {
                let qos = qos_class(&obj["spec"]);
                obj["status"] = json!({"phase": "Pending", "qosClass": qos});
            }
        }
        "services" => {
            let spec = &mut obj["spec"];
            if spec.get("type").is_none() {
                spec["type"] = json!("ClusterIP");
            }
            if spec.get("sessionAffinity").is_none() {
                spec["sessionAffinity"] = json!("None");
            }
            if spec
                .get("clusterIP")
                .is_none_or(|c| c.as_str().unwrap_or("").is_empty())
            {
                let n = crate::util::unix_now() as u64 ^ crate::util::new_uid().len() as u64;
                let ip = format!(
                    "10.96.{}.{}",
                    (n / 7) % 250 + 1,
                    random_suffix().len() as u64 * 37 % 250 + 2
                );
                spec["clusterIP"] = json!(ip);
            }
            let cip = spec["clusterIP"].clone();
            spec["clusterIPs"] = json!([cip]);
            spec["ipFamilies"] = json!(["IPv4"]);
            spec["ipFamilyPolicy"] = json!("SingleStack");
            spec["internalTrafficPolicy"] = json!("Cluster");
            for p in spec["ports"].as_array_mut().into_iter().flatten() {
                if p.get("protocol").is_none() {
                    p["protocol"] = json!("TCP");
                }
                if p.get("targetPort").is_none() {
                    p["targetPort"] = p["port"].clone();
                }
            }
            if obj.get("status").is_none() {
                obj["status"] = json!({"loadBalancer": {}});
            }
        }
        "secrets" => {
            if obj["type"].as_str().unwrap_or("").is_empty() {
                obj["type"] = json!("Opaque");
            }
            // stringData is write-only: merged into data (base64) on write.
            if let Some(sd) = obj.as_object_mut().and_then(|m| m.remove("stringData"))
                && let Some(sd) = sd.as_object()
            {
                use base64::Engine;
                if !obj["data"].is_object() {
                    obj["data"] = json!({});
                }
                for (k, v) in sd {
                    obj["data"][k] = json!(
                        base64::engine::general_purpose::STANDARD.encode(v.as_str().unwrap_or(""))
                    );
                }
            }
        }
        "namespaces" => {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
            let name = obj["metadata"]["name"].clone();
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        }
        "customresourcedefinitions"
            if obj
                .get("status")
                .is_none_or(|s| s.get("conditions").is_none()) =>
        {
            *obj = crate::crd::with_established_status(obj.take());
        }
        _ => {}
    }
}

fn qos_class(spec: &Value) -> &'static str {
    let cs: Vec<&Value> = spec["containers"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let any = cs.iter().any(|c| {
        c["resources"]["requests"]
            .as_object()
            .is_some_and(|m| !m.is_empty())
            || c["resources"]["limits"]
                .as_object()
                .is_some_and(|m| !m.is_empty())
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = cs.iter().all(|c| {
        let l = &c["resources"]["limits"];
        let r = &c["resources"]["requests"];
        ["cpu", "memory"]
            .iter()
            .all(|k| l.get(*k).is_some() && (r.get(*k).is_none() || r[*k] == l[*k]))
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}
