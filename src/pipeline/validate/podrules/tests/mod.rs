use super::*;

mod upstream;
use serde_json::json;

fn paths(pod: Value) -> Vec<String> {
    let mut out = Vec::new();
    pod_spec(&pod, "p", &mut out);
    out.into_iter().map(|f| f.path).collect()
}

fn ctr(extra: Value) -> Value {
    let mut c = json!({"name": "tensorflow", "image": "i:1"});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({"containers": [c]})
}

#[test]
fn what_1_36_accepts_passes() {
    assert!(
        paths(ctr(json!({
            "ports": [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}],
            "resources": {"limits": {"cpu": "100m", "nvidia.com/gpu": 1, "hugepages-2Mi": "1Gi", "memory": "1Gi"},
                          "requests": {"cpu": 0.1, "hugepages-2Mi": "1Gi"}},
            "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app.kubernetes.io/name']"}}},
                    {"name": "IPS", "valueFrom": {"fieldRef": {"fieldPath": "status.podIPs"}}},
                    {"name": "EMPTY", "value": "", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
            "livenessProbe": {"httpGet": {"port": "tfjob-port"}, "successThreshold": 1},
        })))
        .is_empty()
    );
    // A sidecar (restartable init container) may have probes.
    assert!(
        paths(json!({"initContainers": [{"name": "proxy", "image": "i:1", "restartPolicy": "Always",
            "readinessProbe": {"tcpSocket": {"port": 1}}}], "containers": [{"name": "tensorflow", "image": "i:1"}]}))
        .is_empty()
    );
}

#[test]
fn the_rules_upstream_applies_and_their_paths() {
    let c = "p.containers[0]";
    for (pod, want) in [
        (ctr(json!({"resources": {"requests": {"hugepages-2Mi": "1Gi"}}})),
         vec![format!("{c}.resources.limits.hugepages-2Mi"), format!("{c}.resources")]),
        (ctr(json!({"resources": {"requests": {"nvidia.com/gpu": 1}}})),
         vec![format!("{c}.resources.limits[nvidia.com/gpu]")]),
        (ctr(json!({"livenessProbe": {"exec": {"command": ["x"]}, "successThreshold": 2}})),
         vec![format!("{c}.livenessProbe.successThreshold")]),
        (ctr(json!({"envFrom": [{"prefix": "A=", "secretRef": {"name": "s"}}]})),
         vec![format!("{c}.envFrom[0].prefix")]),
        (ctr(json!({"env": [{"name": "X", "valueFrom": {}}]})),
         vec![format!("{c}.env[0].valueFrom")]),
        (ctr(json!({"volumeMounts": [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/a", "subPath": "../x"}]})),
         vec![format!("{c}.volumeMounts[1].mountPath"), format!("{c}.volumeMounts[1].subPath")]),
        (json!({"hostNetwork": true, "containers": [{"name": "t", "image": "i:1", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}),
         vec![format!("{c}.ports[0].hostPort")]),
        (json!({"initContainers": [{"name": "i", "image": "i:1", "livenessProbe": {"exec": {"command": ["x"]}}}], "containers": []}),
         vec!["p.initContainers[0].livenessProbe".to_string()]),
        (json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}],
             "matchExpressions": [{"key": "n", "operator": "Gt", "values": ["x"]}]}]}},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": {}}]}}}),
         vec![
            "p.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values".to_string(),
            "p.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values".to_string(),
            "p.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight".to_string(),
            "p.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey".to_string(),
         ]),
        (json!({"dnsPolicy": "None", "priority": 5, "priorityClassName": "high"}),
         vec!["p.dnsConfig".to_string(), "p.priority".to_string()]),
        // No source: defaulted to emptyDir by the API server (SetDefaults_Volume), stored.
        (json!({"volumes": [{"name": "v"}]}), vec![]),
        (json!({"volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]}),
         vec!["p.volumes[0].hostPath".to_string()]),
    ] {
        assert_eq!(paths(pod.clone()), want, "{pod}");
    }
    // A priority with a class is only a warning: the class's value is not known offline.
    let mut out = Vec::new();
    pod_spec(
        &json!({"priority": 5, "priorityClassName": "high"}),
        "p",
        &mut out,
    );
    assert_eq!(out[0].severity, Severity::Warning);
    assert_eq!(port_name("a-1"), Ok(()));
    for bad in ["1234", "a--b", "-a", "A", "a_b", ""] {
        assert!(port_name(bad).is_err(), "{bad}");
    }
}

#[test]
fn an_overhead_without_a_runtime_class_is_forbidden_by_admission() {
    // plugin/pkg/admission/runtimeclass validateOverhead.
    let with = |extra: Value| {
        let mut p = ctr(json!({}));
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        paths(p)
    };
    assert_eq!(
        with(json!({"overhead": {"cpu": "250m"}})),
        vec!["p.overhead".to_string()]
    );
    assert_eq!(
        with(json!({"overhead": {"cpu": "250m"}, "runtimeClassName": ""})),
        vec!["p.overhead".to_string()]
    );
    // With a class named, the class decides; an empty map is omitted on the wire.
    assert!(with(json!({"overhead": {"cpu": "250m"}, "runtimeClassName": "kata"})).is_empty());
    assert!(with(json!({"overhead": {}})).is_empty());
}

/// Each case as a real kube-apiserver 1.36.2 answered its dry run (the differential run found
/// the first: a fileKeyRef to a Secret volume, which validate passed).
#[test]
fn a_file_key_ref_needs_an_empty_dir_of_the_pod_and_a_clean_path() {
    let c = "p.containers[0].env[0].valueFrom.fileKeyRef";
    let pod = |volume: Value, fk: Value| {
        json!({"volumes": [volume], "containers": [{"name": "tensorflow", "image": "i:1",
            "env": [{"name": "A", "valueFrom": {"fileKeyRef": fk}}]}]})
    };
    let empty = json!({"name": "v", "emptyDir": {}});
    for (p, want) in [
        // Accepted: a volume with no source (defaulted to an emptyDir), an absolute path,
        // `..x`, a key with a space or a leading digit, optional.
        (
            pod(
                json!({"name": "v"}),
                json!({"key": "A", "path": "e", "volumeName": "v"}),
            ),
            vec![],
        ),
        (
            pod(
                empty.clone(),
                json!({"key": "A", "path": "/abs.txt", "volumeName": "v"}),
            ),
            vec![],
        ),
        (
            pod(
                empty.clone(),
                json!({"key": "1A B", "path": "..x", "volumeName": "v", "optional": true}),
            ),
            vec![],
        ),
        (
            pod(
                json!({"name": "v", "secret": {"secretName": "s"}}),
                json!({"key": "A", "path": "e", "volumeName": "v"}),
            ),
            vec![format!("{c}.volumeName")],
        ),
        (
            pod(
                empty.clone(),
                json!({"key": "A", "path": "e", "volumeName": "nope"}),
            ),
            vec![format!("{c}.volumeName")],
        ),
        (
            pod(
                empty.clone(),
                json!({"key": "A", "path": "a/../b", "volumeName": "v"}),
            ),
            vec![format!("{c}.path")],
        ),
        (
            pod(
                empty.clone(),
                json!({"key": "A=B", "path": "e", "volumeName": "v"}),
            ),
            vec![format!("{c}.key")],
        ),
        (
            pod(
                empty.clone(),
                json!({"key": "", "path": "e", "volumeName": "v"}),
            ),
            vec![format!("{c}.key")],
        ),
        // Both volumeName errors, as the server lists them for an empty name.
        (
            pod(empty, json!({"key": "A", "path": ""})),
            vec![
                format!("{c}.volumeName"),
                format!("{c}.path"),
                format!("{c}.volumeName"),
            ],
        ),
    ] {
        assert_eq!(paths(p.clone()), want, "{p}");
    }
}

/// With hostNetwork every port's hostPort defaults to its containerPort, and the operator adds
/// its `tfjob-port` 2222: a template port on 2222 is then a duplicate host port, as a real
/// kube-apiserver 1.36.2 refused it (the differential run, seed 11).
#[test]
fn host_network_ports_default_their_host_port_before_the_conflict_check() {
    let mut spec = json!({"hostNetwork": true, "containers": [{"name": "tensorflow", "image": "i:1",
        "ports": [{"containerPort": 2222}]}]});
    crate::operator_pods::wire::add_default_port(&mut spec);
    assert_eq!(
        paths(spec),
        vec!["p.containers[0].ports[1].hostPort".to_string()]
    );
    // Without hostNetwork, or on another port, nothing conflicts.
    for spec in [
        json!({"containers": [{"name": "tensorflow", "image": "i:1", "ports": [{"containerPort": 2222}]}]}),
        json!({"hostNetwork": true, "containers": [{"name": "tensorflow", "image": "i:1", "ports": [{"containerPort": 8080}]}]}),
    ] {
        let mut spec = spec;
        crate::operator_pods::wire::add_default_port(&mut spec);
        assert!(paths(spec.clone()).is_empty(), "{spec}");
    }
}
