//! What of a pod template reaches the API server when the operator creates the pod. The
//! operator reads the TFJob into Go structs (k8s.io/api/core/v1) and its client writes them
//! with encoding/json, which leaves out a non-pointer field tagged `omitempty` that holds its
//! zero value. So `dnsPolicy: ""` in a template is, on the wire, no dnsPolicy at all (the API
//! server then defaults it), while a pointer field such as `runtimeClassName` or
//! `preemptionPolicy` is sent as `""` and judged as written.
//!
//! Only the fields whose `""` a validator could refuse are listed: the non-pointer `omitempty`
//! strings of k8s.io/api/core/v1/types.go (PodSpec, Container, ContainerPort, EnvVar,
//! VolumeMount, HTTPGetAction, TCPSocketAction, Toleration, EmptyDirVolumeSource,
//! SecretVolumeSource, LocalObjectReference, PodDNSConfigOption).

use serde_json::Value;

const POD_SPEC: &[&str] = &[
    "restartPolicy",
    "dnsPolicy",
    "serviceAccountName",
    "serviceAccount",
    "nodeName",
    "hostname",
    "subdomain",
    "schedulerName",
    "priorityClassName",
];
const CONTAINER: &[&str] = &[
    "image",
    "workingDir",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
];
const PORT: &[&str] = &["name", "hostIP", "protocol"];
const ENV: &[&str] = &["value"];
const MOUNT: &[&str] = &["subPath", "subPathExpr"];
const HTTP_GET: &[&str] = &["path", "host", "scheme"];
const TCP_SOCKET: &[&str] = &["host"];
const TOLERATION: &[&str] = &["key", "operator", "value", "effect"];
const NAME: &[&str] = &["name"];

/// The operator's defaulting (`setDefaultPort`): `{name: tfjob-port, containerPort: 2222}`
/// appended to the `tensorflow` container (else the first) when it has no `tfjob-port`. What
/// validate judges and what the pods carry both come from here.
pub fn add_default_port(pod_spec: &mut Value) {
    let Some(containers) = pod_spec.get_mut("containers").and_then(Value::as_array_mut) else {
        return;
    };
    let main = containers
        .iter()
        .position(|c| c["name"] == crate::model::DEFAULT_CONTAINER_NAME)
        .unwrap_or(0);
    let Some(c) = containers.get_mut(main).and_then(Value::as_object_mut) else {
        return;
    };
    let ports = c.entry("ports").or_insert_with(|| Value::Array(Vec::new()));
    if ports.is_null() {
        *ports = Value::Array(Vec::new());
    }
    let Some(ports) = ports.as_array_mut() else {
        return;
    };
    if !ports
        .iter()
        .any(|p| p["name"] == crate::model::DEFAULT_PORT_NAME)
    {
        ports.push(serde_json::json!({
            "name": crate::model::DEFAULT_PORT_NAME,
            "containerPort": crate::model::DEFAULT_PORT,
        }));
    }
}

/// Drops from `pod_spec` (a template's `spec`, as JSON) the empty strings the operator's Go
/// client leaves out. Anything of another shape is left as it is, for the validators to name.
pub fn omit_empty(pod_spec: &mut Value) {
    strip(pod_spec, POD_SPEC);
    for list in ["containers", "initContainers"] {
        for c in items_mut(pod_spec, list) {
            strip(c, CONTAINER);
            for p in items_mut(c, "ports") {
                strip(p, PORT);
            }
            for e in items_mut(c, "env") {
                strip(e, ENV);
            }
            for m in items_mut(c, "volumeMounts") {
                strip(m, MOUNT);
            }
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                if let Some(h) = c.get_mut(probe) {
                    handler(h);
                }
            }
            if let Some(l) = c.get_mut("lifecycle") {
                for hook in ["postStart", "preStop"] {
                    if let Some(h) = l.get_mut(hook) {
                        handler(h);
                    }
                }
            }
        }
    }
    for t in items_mut(pod_spec, "tolerations") {
        strip(t, TOLERATION);
    }
    for s in items_mut(pod_spec, "imagePullSecrets") {
        strip(s, NAME);
    }
    if let Some(d) = pod_spec.get_mut("dnsConfig") {
        for o in items_mut(d, "options") {
            strip(o, NAME);
        }
    }
    for v in items_mut(pod_spec, "volumes") {
        if let Some(e) = v.get_mut("emptyDir") {
            strip(e, &["medium"]);
        }
        if let Some(s) = v.get_mut("secret") {
            strip(s, &["secretName"]);
        }
        if let Some(c) = v.get_mut("configMap") {
            strip(c, NAME);
        }
    }
}

/// `spec` as the operator's client sends it ([`omit_empty`] on the typed spec).
pub fn as_sent(spec: k8s_openapi::api::core::v1::PodSpec) -> k8s_openapi::api::core::v1::PodSpec {
    match serde_json::to_value(&spec) {
        Ok(mut v) => {
            omit_empty(&mut v);
            serde_json::from_value(v).unwrap_or(spec)
        }
        Err(_) => spec,
    }
}

/// A probe or lifecycle handler: its httpGet and tcpSocket actions.
fn handler(h: &mut Value) {
    if let Some(a) = h.get_mut("httpGet") {
        strip(a, HTTP_GET);
    }
    if let Some(a) = h.get_mut("tcpSocket") {
        strip(a, TCP_SOCKET);
    }
}

fn strip(obj: &mut Value, keys: &[&str]) {
    if let Some(m) = obj.as_object_mut() {
        m.retain(|k, v| !(v.as_str() == Some("") && keys.contains(&k.as_str())));
    }
}

fn items_mut<'a>(obj: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_strings_of_omitempty_fields_are_not_sent_and_pointers_are() {
        let mut ps = json!({
            "dnsPolicy": "", "serviceAccountName": "", "runtimeClassName": "",
            "preemptionPolicy": "", "hostname": "h",
            "containers": [{"name": "", "image": "i", "imagePullPolicy": "",
                "ports": [{"name": "", "containerPort": 2222, "protocol": ""}],
                "env": [{"name": "A", "value": ""}],
                "livenessProbe": {"httpGet": {"port": 80, "scheme": "", "path": ""}},
                "lifecycle": {"preStop": {"tcpSocket": {"port": 1, "host": ""}}}}],
            "tolerations": [{"key": "", "operator": "Exists", "effect": ""}],
            "volumes": [{"name": "v", "emptyDir": {"medium": ""}}],
        });
        omit_empty(&mut ps);
        assert_eq!(
            ps,
            json!({
                "runtimeClassName": "", "preemptionPolicy": "", "hostname": "h",
                "containers": [{"name": "", "image": "i",
                    "ports": [{"containerPort": 2222}],
                    "env": [{"name": "A"}],
                    "livenessProbe": {"httpGet": {"port": 80}},
                    "lifecycle": {"preStop": {"tcpSocket": {"port": 1}}}}],
                "tolerations": [{"operator": "Exists"}],
                "volumes": [{"name": "v", "emptyDir": {}}],
            })
        );
    }

    #[test]
    fn other_shapes_are_left_for_the_validators() {
        let mut ps = json!({"dnsPolicy": 3, "containers": {"name": ""}, "tolerations": [""]});
        let before = ps.clone();
        omit_empty(&mut ps);
        assert_eq!(ps, before);
    }
}
