//! One test per upstream validation function listed as ported in docs/pod-validation.md,
//! named for it (snake case of the Go name): a value a 1.36 API server accepts passes, and one
//! it refuses fails at the field path it names. `coverage_table_is_complete` checks the table
//! against the upstream names in docs/pod-validation-upstream.txt and these test names.

use serde_json::{Value, json};

use crate::pipeline::validate::Severity;

/// Error paths of the full pod-spec check (pod.rs and podrules) under the path `p`.
fn errors(ps: &Value) -> Vec<String> {
    let mut out = Vec::new();
    crate::pipeline::validate::pod::pod_spec(ps, "p", &mut out);
    out.into_iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.path)
        .collect()
}

/// A pod spec of one valid container, with `extra` merged into the spec.
fn pod(extra: Value) -> Value {
    let mut p =
        json!({"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]});
    p.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    p
}

/// A pod spec whose one container has `extra` merged in, plus pod-level `spec`.
fn ctr(extra: Value, spec: Value) -> Value {
    let mut c = json!({"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let mut p = pod(spec);
    p["containers"] = json!([c]);
    p
}

/// A pod spec with one volume (`source` merged into `{"name": "v"}`).
fn vol(source: Value) -> Value {
    let mut v = json!({"name": "v"});
    v.as_object_mut()
        .unwrap()
        .extend(source.as_object().unwrap().clone());
    pod(json!({ "volumes": [v] }))
}

fn check(name: &str, valid: Value, invalid: Value, path: &str) {
    let ok = errors(&valid);
    assert!(
        ok.is_empty(),
        "{name}: refused what 1.36 accepts: {ok:?}\n{valid}"
    );
    let bad = errors(&invalid);
    assert!(
        bad.iter().any(|p| p == path),
        "{name}: expected an error at {path}, got {bad:?}\n{invalid}"
    );
}

/// `upstream!(snake_name, valid, invalid, "path")`: the test named for an upstream function.
macro_rules! upstream {
    ($name:ident, $valid:expr, $invalid:expr, $path:expr) => {
        #[test]
        fn $name() {
            check(stringify!($name), $valid, $invalid, $path);
        }
    };
}

const C: &str = "p.containers[0]";

fn c(rest: &str) -> String {
    format!("{C}.{rest}")
}

// ---- pod spec, names and DNS -------------------------------------------------------------
upstream!(
    validate_dns1123_label,
    pod(json!({"hostname": "worker-0"})),
    pod(json!({"hostname": "Worker_0"})),
    "p.hostname"
);
upstream!(
    validate_dns1123_subdomain,
    pod(json!({"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a.b"]}]})),
    pod(json!({"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["A_B"]}]})),
    "p.hostAliases[0].hostnames[0]"
);
upstream!(
    validate_qualified_name,
    pod(json!({"readinessGates": [{"conditionType": "example.com/ready"}]})),
    pod(json!({"readinessGates": [{"conditionType": "-bad"}]})),
    "p.readinessGates[0].conditionType"
);
upstream!(
    validate_dns_policy,
    pod(json!({"dnsPolicy": "ClusterFirstWithHostNet"})),
    pod(json!({"dnsPolicy": "ClusterFrist"})),
    "p.dnsPolicy"
);
upstream!(
    validate_pod_dns_config,
    pod(
        json!({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"], "searches": ["ns.svc.cluster.local.", "_tcp.example.com", "."], "options": [{"name": "ndots", "value": "2"}]}})
    ),
    pod(json!({"dnsConfig": {"options": [{"value": "2"}]}})),
    "p.dnsConfig.options[0]"
);
upstream!(
    validate_host_aliases,
    pod(json!({"hostAliases": [{"ip": "fe80::1", "hostnames": ["foo.local"]}]})),
    pod(json!({"hostAliases": [{"ip": "10.0.0.256", "hostnames": ["foo.local"]}]})),
    "p.hostAliases[0].ip"
);
upstream!(
    validate_readiness_gates,
    pod(json!({"readinessGates": [{"conditionType": "ready"}]})),
    pod(json!({"readinessGates": [{"conditionType": "a b"}]})),
    "p.readinessGates[0].conditionType"
);
upstream!(
    validate_scheduling_gates,
    pod(json!({"schedulingGates": [{"name": "example.com/quota"}, {"name": "b"}]})),
    pod(json!({"schedulingGates": [{"name": "a"}, {"name": "a"}]})),
    "p.schedulingGates[1]"
);
upstream!(
    validate_preemption_policy,
    pod(json!({"preemptionPolicy": "Never"})),
    pod(json!({"preemptionPolicy": "Sometimes"})),
    "p.preemptionPolicy"
);
upstream!(
    validate_pod_spec,
    pod(json!({"activeDeadlineSeconds": 60})),
    pod(json!({"activeDeadlineSeconds": 0})),
    "p.activeDeadlineSeconds"
);
upstream!(
    validate_runtime_class_name,
    pod(json!({"runtimeClassName": "gvisor"})),
    pod(json!({"runtimeClassName": "G Visor"})),
    "p.runtimeClassName"
);
upstream!(
    validate_overhead,
    pod(json!({"runtimeClassName": "kata", "overhead": {"cpu": "250m", "memory": "120Mi"}})),
    pod(json!({"runtimeClassName": "kata", "overhead": {"gpu": "1"}})),
    "p.overhead.limits.gpu"
);
upstream!(
    validate_pod_host_network_deps,
    pod(
        json!({"hostNetwork": true, "containers": [{"name": "t", "image": "i:1", "ports": [{"containerPort": 80, "hostPort": 80}]}]})
    ),
    pod(
        json!({"hostNetwork": true, "containers": [{"name": "t", "image": "i:1", "ports": [{"containerPort": 80, "hostPort": 81}]}]})
    ),
    "p.containers[0].ports[0].hostPort"
);

// ---- scheduling ----------------------------------------------------------------------------
upstream!(
    validate_tolerations,
    pod(
        json!({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]})
    ),
    pod(json!({"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]})),
    "p.tolerations[0].value"
);
upstream!(
    validate_taint_effect,
    pod(json!({"tolerations": [{"operator": "Exists", "effect": "NoExecute"}]})),
    pod(json!({"tolerations": [{"operator": "Exists", "effect": "NoScheduleNoAdmit"}]})),
    "p.tolerations[0].effect"
);
upstream!(
    validate_affinity,
    pod(
        json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}})
    ),
    pod(
        json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}})
    ),
    "p.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"
);
upstream!(
    validate_node_selector,
    pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}})
    ),
    pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}})
    ),
    "p.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
);
upstream!(
    validate_node_selector_requirement,
    pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["3"]}]}]}}}})
    ),
    pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}})
    ),
    "p.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values"
);
upstream!(
    validate_node_field_selector_requirement,
    pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}}})
    ),
    pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}]}}}})
    ),
    "p.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key"
);
upstream!(
    validate_preferred_scheduling_terms,
    pod(
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}}})
    ),
    pod(
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}})
    ),
    "p.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"
);
upstream!(
    validate_pod_affinity_term,
    pod(
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": "tf"}}}]}}})
    ),
    pod(
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}})
    ),
    "p.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"
);
upstream!(
    validate_pod_affinity_term_selector,
    pod(
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}}]}}})
    ),
    pod(
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}}]}}})
    ),
    "p.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator"
);
upstream!(
    validate_topology_spread_constraints,
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2, "nodeTaintsPolicy": "Honor", "labelSelector": {"matchLabels": {"app": "tf"}}}]})
    ),
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}, {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})
    ),
    "p.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}"
);
upstream!(
    validate_max_skew,
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 3, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]})
    ),
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]})
    ),
    "p.topologySpreadConstraints[0].maxSkew"
);
upstream!(
    validate_topology_key,
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}]})
    ),
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}]})
    ),
    "p.topologySpreadConstraints[0].topologyKey"
);
upstream!(
    validate_when_unsatisfiable,
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]})
    ),
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "Never"}]})
    ),
    "p.topologySpreadConstraints[0].whenUnsatisfiable"
);
upstream!(
    validate_spread_constraint_not_repeat,
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}, {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway"}]})
    ),
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway"}, {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway"}]})
    ),
    "p.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}"
);
upstream!(
    validate_min_domains,
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 3}]})
    ),
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 3}]})
    ),
    "p.topologySpreadConstraints[0].minDomains"
);
upstream!(
    validate_node_inclusion_policy,
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "nodeAffinityPolicy": "Ignore"}]})
    ),
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "nodeAffinityPolicy": "Maybe"}]})
    ),
    "p.topologySpreadConstraints[0].nodeAffinityPolicy"
);
upstream!(
    validate_pod_resource_claims,
    pod(json!({"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]})),
    pod(
        json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]})
    ),
    "p.resourceClaims[0]"
);
upstream!(
    validate_pod_resource_claim,
    pod(json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpu"}]})),
    pod(json!({"resourceClaims": [{"name": "GPU", "resourceClaimName": "shared-gpu"}]})),
    "p.resourceClaims[0].name"
);
upstream!(
    validate_resource_claim_names,
    ctr(
        json!({"resources": {"claims": [{"name": "gpu"}]}}),
        json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "g"}]})
    ),
    ctr(
        json!({"resources": {"claims": [{"name": "tpu"}]}}),
        json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "g"}]})
    ),
    &c("resources.claims[0]")
);

// ---- security contexts and OS rules -------------------------------------------------------
upstream!(
    validate_pod_spec_security_context,
    pod(
        json!({"securityContext": {"runAsUser": 1000, "fsGroup": 2000, "supplementalGroups": [3000]}})
    ),
    pod(json!({"securityContext": {"runAsUser": -1}})),
    "p.securityContext.runAsUser"
);
upstream!(
    validate_sysctls,
    pod(
        json!({"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}, {"name": "kernel/shm_rmid_forced", "value": "0"}]}})
    ),
    pod(json!({"securityContext": {"sysctls": [{"name": "Net.IPv4.x", "value": "1"}]}})),
    "p.securityContext.sysctls[0].name"
);
upstream!(
    is_valid_sysctl_name,
    pod(json!({"securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}})),
    pod(json!({"securityContext": {"sysctls": [{"name": "net..core", "value": "1"}]}})),
    "p.securityContext.sysctls[0].name"
);
upstream!(
    validate_host_sysctl,
    pod(
        json!({"hostNetwork": true, "securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}]}})
    ),
    pod(
        json!({"hostNetwork": true, "securityContext": {"sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1 2"}]}})
    ),
    "p.securityContext.sysctls[0].name"
);
upstream!(
    validate_fs_group_change_policy,
    pod(json!({"securityContext": {"fsGroupChangePolicy": "OnRootMismatch"}})),
    pod(json!({"securityContext": {"fsGroupChangePolicy": "Sometimes"}})),
    "p.securityContext.fsGroupChangePolicy"
);
upstream!(
    validate_seccomp_profile_field,
    pod(
        json!({"securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/audit.json"}}})
    ),
    pod(
        json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x.json"}}})
    ),
    "p.securityContext.seccompProfile.localhostProfile"
);
upstream!(
    validate_seccomp_profile_type,
    ctr(
        json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
        json!({})
    ),
    ctr(
        json!({"securityContext": {"seccompProfile": {}}}),
        json!({})
    ),
    &c("securityContext.seccompProfile.type")
);
upstream!(
    validate_app_armor_profile_field,
    pod(
        json!({"securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-apparmor-example"}}})
    ),
    pod(json!({"securityContext": {"appArmorProfile": {"type": "Localhost"}}})),
    "p.securityContext.appArmorProfile.localhostProfile"
);
upstream!(
    validate_supplemental_groups_policy,
    pod(json!({"securityContext": {"supplementalGroupsPolicy": "Strict"}})),
    pod(json!({"securityContext": {"supplementalGroupsPolicy": "Loose"}})),
    "p.securityContext.supplementalGroupsPolicy"
);
upstream!(
    validate_se_linux_change_policy,
    pod(json!({"securityContext": {"seLinuxChangePolicy": "MountOption"}})),
    pod(json!({"securityContext": {"seLinuxChangePolicy": "Never"}})),
    "p.securityContext.seLinuxChangePolicy"
);
upstream!(
    validate_windows_security_context_options,
    ctr(
        json!({"securityContext": {"windowsOptions": {"runAsUserName": "NT AUTHORITY\\NETWORK SERVICE"}}}),
        json!({})
    ),
    ctr(
        json!({"securityContext": {"windowsOptions": {"runAsUserName": "a\\b\\c"}}}),
        json!({})
    ),
    &c("securityContext.windowsOptions.runAsUserName")
);
upstream!(
    validate_windows_host_process_pod,
    pod(json!({"hostNetwork": true, "securityContext": {"windowsOptions": {"hostProcess": true}}})),
    pod(json!({"securityContext": {"windowsOptions": {"hostProcess": true}}})),
    "p.hostNetwork"
);
upstream!(
    validate_host_users,
    pod(json!({"hostUsers": false})),
    pod(json!({"hostUsers": false, "hostPID": true})),
    "p.HostPID"
);
upstream!(
    validate_security_context,
    ctr(
        json!({"securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"add": ["NET_ADMIN"]}}}),
        json!({})
    ),
    ctr(
        json!({"securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"add": ["CAP_SYS_ADMIN"]}}}),
        json!({})
    ),
    &c("securityContext")
);
upstream!(
    validate_proc_mount_type,
    ctr(
        json!({"securityContext": {"procMount": "Unmasked"}}),
        json!({"hostUsers": false})
    ),
    ctr(
        json!({"securityContext": {"procMount": "Unmasked"}}),
        json!({})
    ),
    &c("securityContext.procMount")
);
upstream!(
    validate_os,
    pod(json!({"os": {"name": "linux"}})),
    pod(json!({"os": {"name": "darwin"}})),
    "p.os"
);
upstream!(
    validate_linux,
    pod(json!({"os": {"name": "linux"}, "securityContext": {"runAsUser": 1}})),
    pod(
        json!({"os": {"name": "linux"}, "securityContext": {"windowsOptions": {"runAsUserName": "u"}}})
    ),
    "p.securityContext.windowsOptions"
);
upstream!(
    validate_windows,
    pod(
        json!({"os": {"name": "windows"}, "securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}})
    ),
    ctr(
        json!({"securityContext": {"privileged": false}}),
        json!({"os": {"name": "windows"}})
    ),
    &c("securityContext.privileged")
);

// ---- containers ---------------------------------------------------------------------------
upstream!(
    validate_containers,
    pod(json!({})),
    pod(json!({"containers": [{"name": "a", "image": "i:1"}, {"name": "a", "image": "i:1"}]})),
    "p.containers[1].name"
);
upstream!(
    validate_container_common,
    pod(json!({})),
    pod(json!({"containers": [{"name": "tensorflow"}]})),
    "p.containers[0].image"
);
upstream!(
    validate_init_containers,
    pod(
        json!({"initContainers": [{"name": "proxy", "image": "i:1", "restartPolicy": "Always", "startupProbe": {"tcpSocket": {"port": 1}}}]})
    ),
    pod(
        json!({"initContainers": [{"name": "setup", "image": "i:1", "startupProbe": {"tcpSocket": {"port": 1}}}]})
    ),
    "p.initContainers[0].startupProbe"
);
upstream!(
    validate_container_ports,
    ctr(
        json!({"ports": [{"name": "tfjob-port", "containerPort": 2222}]}),
        json!({})
    ),
    ctr(json!({"ports": [{"containerPort": 70000}]}), json!({})),
    &c("ports[0].containerPort")
);
upstream!(
    validate_pull_policy,
    ctr(json!({"imagePullPolicy": "IfNotPresent"}), json!({})),
    ctr(json!({"imagePullPolicy": "IfNotPresnt"}), json!({})),
    &c("imagePullPolicy")
);
upstream!(
    validate_env,
    ctr(
        json!({"env": [{"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"}]}),
        json!({})
    ),
    ctr(json!({"env": [{"name": "A=B"}]}), json!({})),
    &c("env[0].name")
);
upstream!(
    validate_env_var_value_from,
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}),
        json!({})
    ),
    ctr(
        json!({"env": [{"name": "N", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}),
        json!({})
    ),
    &c("env[0].valueFrom")
);
upstream!(
    validate_object_field_selector,
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}),
        json!({})
    ),
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.hostname"}}}]}),
        json!({})
    ),
    &c("env[0].valueFrom.fieldRef.fieldPath")
);
upstream!(
    validate_container_resource_field_selector,
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}]}),
        json!({})
    ),
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}]}),
        json!({})
    ),
    &c("env[0].valueFrom.resourceFieldRef.resource")
);
upstream!(
    validate_config_map_key_selector,
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a.b"}}}]}),
        json!({})
    ),
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a/b"}}}]}),
        json!({})
    ),
    &c("env[0].valueFrom.configMapKeyRef.key")
);
upstream!(
    validate_secret_key_selector,
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}}]}),
        json!({})
    ),
    ctr(
        json!({"env": [{"name": "N", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}),
        json!({})
    ),
    &c("env[0].valueFrom.secretKeyRef.key")
);
upstream!(
    validate_env_from,
    ctr(
        json!({"envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "cm"}}]}),
        json!({})
    ),
    ctr(
        json!({"envFrom": [{"configMapRef": {"name": "cm"}, "secretRef": {"name": "s"}}]}),
        json!({})
    ),
    &c("envFrom[0]")
);
upstream!(
    validate_volume_mounts,
    ctr(
        json!({"volumeMounts": [{"name": "v", "mountPath": "/data", "subPathExpr": "$(POD)"}]}),
        json!({"volumes": [{"name": "v", "emptyDir": {}}]})
    ),
    ctr(
        json!({"volumeMounts": [{"name": "v", "mountPath": "/data", "subPath": "a", "subPathExpr": "$(POD)"}]}),
        json!({"volumes": [{"name": "v", "emptyDir": {}}]})
    ),
    &c("volumeMounts[0].subPathExpr")
);
upstream!(
    validate_mount_propagation,
    ctr(
        json!({"securityContext": {"privileged": true}, "volumeMounts": [{"name": "v", "mountPath": "/d", "mountPropagation": "Bidirectional"}]}),
        json!({"volumes": [{"name": "v", "emptyDir": {}}]})
    ),
    ctr(
        json!({"volumeMounts": [{"name": "v", "mountPath": "/d", "mountPropagation": "Bidirectional"}]}),
        json!({"volumes": [{"name": "v", "emptyDir": {}}]})
    ),
    &c("volumeMounts.mountPropagation")
);
upstream!(
    validate_mount_recursive_read_only,
    ctr(
        json!({"volumeMounts": [{"name": "v", "mountPath": "/d", "readOnly": true, "recursiveReadOnly": "IfPossible"}]}),
        json!({"volumes": [{"name": "v", "emptyDir": {}}]})
    ),
    ctr(
        json!({"volumeMounts": [{"name": "v", "mountPath": "/d", "recursiveReadOnly": "Enabled"}]}),
        json!({"volumes": [{"name": "v", "emptyDir": {}}]})
    ),
    &c("volumeMounts.recursiveReadOnly")
);
upstream!(
    validate_volume_devices,
    ctr(
        json!({"volumeDevices": [{"name": "v", "devicePath": "/dev/xvda"}]}),
        json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]})
    ),
    ctr(
        json!({"volumeDevices": [{"name": "v", "devicePath": "/dev/xvda"}]}),
        json!({"volumes": [{"name": "v", "emptyDir": {}}]})
    ),
    &c("volumeDevices[0].name")
);
upstream!(
    validate_container_resource_requirements,
    ctr(
        json!({"resources": {"limits": {"cpu": "2", "nvidia.com/gpu": 2}, "requests": {"cpu": "1"}}}),
        json!({})
    ),
    ctr(
        json!({"resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}),
        json!({})
    ),
    &c("resources.requests.cpu")
);
upstream!(
    validate_container_resource_name,
    ctr(
        json!({"resources": {"limits": {"example.com/foo": 1}}}),
        json!({})
    ),
    ctr(json!({"resources": {"limits": {"gpu": 1}}}), json!({})),
    &c("resources.limits.gpu")
);
upstream!(
    validate_resource_quantity_value,
    ctr(
        json!({"resources": {"limits": {"nvidia.com/gpu": "2"}}}),
        json!({})
    ),
    ctr(
        json!({"resources": {"limits": {"nvidia.com/gpu": "500m"}}}),
        json!({})
    ),
    &c("resources.limits[nvidia.com/gpu]")
);
upstream!(
    validate_resource_quantity_huge_page_value,
    ctr(
        json!({"resources": {"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}}),
        json!({})
    ),
    ctr(
        json!({"resources": {"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}}}),
        json!({})
    ),
    &c("resources.limits.hugepages-2Mi")
);
upstream!(
    validate_resize_policy,
    ctr(
        json!({"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}, {"resourceName": "memory", "restartPolicy": "RestartContainer"}]}),
        json!({})
    ),
    ctr(
        json!({"resizePolicy": [{"resourceName": "nvidia.com/gpu", "restartPolicy": "NotRequired"}]}),
        json!({})
    ),
    &c("resizePolicy")
);
upstream!(
    validate_probe,
    ctr(
        json!({"livenessProbe": {"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 10}}),
        json!({})
    ),
    ctr(
        json!({"livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": -1}}),
        json!({})
    ),
    &c("livenessProbe.periodSeconds")
);
upstream!(
    validate_liveness_probe,
    ctr(
        json!({"livenessProbe": {"tcpSocket": {"port": 2222}, "successThreshold": 1}}),
        json!({})
    ),
    ctr(
        json!({"livenessProbe": {"tcpSocket": {"port": 2222}, "successThreshold": 3}}),
        json!({})
    ),
    &c("livenessProbe.successThreshold")
);
upstream!(
    validate_readiness_probe,
    ctr(
        json!({"readinessProbe": {"tcpSocket": {"port": 2222}, "successThreshold": 3}}),
        json!({})
    ),
    ctr(
        json!({"readinessProbe": {"tcpSocket": {"port": 2222}, "terminationGracePeriodSeconds": 5}}),
        json!({})
    ),
    &c("readinessProbe.terminationGracePeriodSeconds")
);
upstream!(
    validate_startup_probe,
    ctr(
        json!({"startupProbe": {"grpc": {"port": 9000}, "failureThreshold": 30}}),
        json!({})
    ),
    ctr(
        json!({"startupProbe": {"grpc": {"port": 9000}, "successThreshold": 2}}),
        json!({})
    ),
    &c("startupProbe.successThreshold")
);
upstream!(
    validate_handler,
    ctr(
        json!({"livenessProbe": {"httpGet": {"port": 8080, "path": "/healthz"}}}),
        json!({})
    ),
    ctr(
        json!({"livenessProbe": {"httpGet": {"port": 8080}, "tcpSocket": {"port": 8080}}}),
        json!({})
    ),
    &c("livenessProbe.tcpSocket")
);
upstream!(
    validate_exec_action,
    ctr(
        json!({"lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 1"]}}}}),
        json!({})
    ),
    ctr(json!({"lifecycle": {"preStop": {"exec": {}}}}), json!({})),
    &c("lifecycle.preStop.exec.command")
);
upstream!(
    validate_http_get_action,
    ctr(
        json!({"readinessProbe": {"httpGet": {"port": 80, "httpHeaders": [{"name": "X-Probe", "value": "1"}]}}}),
        json!({})
    ),
    ctr(
        json!({"readinessProbe": {"httpGet": {"port": 80, "httpHeaders": [{"name": "X Probe", "value": "1"}]}}}),
        json!({})
    ),
    &c("readinessProbe.httpGet.httpHeaders")
);
upstream!(
    validate_port_num_or_name,
    ctr(
        json!({"livenessProbe": {"tcpSocket": {"port": "tfjob-port"}}}),
        json!({})
    ),
    ctr(
        json!({"livenessProbe": {"tcpSocket": {"port": 0}}}),
        json!({})
    ),
    &c("livenessProbe.tcpSocket.port")
);
upstream!(
    validate_sleep_action,
    ctr(
        json!({"lifecycle": {"preStop": {"sleep": {"seconds": 0}}}}),
        json!({})
    ),
    ctr(
        json!({"lifecycle": {"preStop": {"sleep": {"seconds": 60}}}}),
        json!({"terminationGracePeriodSeconds": 30})
    ),
    &c("lifecycle.preStop.sleep")
);
upstream!(
    validate_lifecycle,
    ctr(
        json!({"lifecycle": {"postStart": {"httpGet": {"port": 80}}}}),
        json!({})
    ),
    ctr(json!({"lifecycle": {"postStart": {}}}), json!({})),
    &c("lifecycle.postStart")
);
upstream!(
    check_host_port_conflicts,
    pod(
        json!({"containers": [{"name": "a", "image": "i:1", "ports": [{"containerPort": 1, "hostPort": 8080}]}, {"name": "b", "image": "i:1", "ports": [{"containerPort": 1, "hostPort": 8080, "protocol": "UDP"}]}]})
    ),
    pod(
        json!({"containers": [{"name": "a", "image": "i:1", "ports": [{"containerPort": 1, "hostPort": 8080}]}, {"name": "b", "image": "i:1", "ports": [{"containerPort": 2, "hostPort": 8080}]}]})
    ),
    "p.containers[1].ports[0].hostPort"
);

// ---- volumes ------------------------------------------------------------------------------
upstream!(
    validate_volumes,
    vol(json!({"emptyDir": {}})),
    pod(json!({"volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]})),
    "p.volumes[1].name"
);
upstream!(
    validate_volume_source,
    vol(json!({"emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}})),
    vol(json!({"emptyDir": {}, "hostPath": {"path": "/x"}})),
    "p.volumes[0].hostPath"
);
upstream!(
    validate_host_path_volume_source,
    vol(json!({"hostPath": {"path": "/var/log", "type": "Directory"}})),
    vol(json!({"hostPath": {"path": "/var/../etc"}})),
    "p.volumes[0].hostPath.path"
);
upstream!(
    validate_host_path_type,
    vol(json!({"hostPath": {"path": "/dev/nvidia0", "type": "CharDevice"}})),
    vol(json!({"hostPath": {"path": "/d", "type": "Dir"}})),
    "p.volumes[0].hostPath.type"
);
upstream!(
    validate_git_repo_volume_source,
    vol(json!({"gitRepo": {"repository": "https://example.com/r.git", "directory": "src"}})),
    vol(json!({"gitRepo": {"repository": "https://example.com/r.git", "directory": "/abs"}})),
    "p.volumes[0].gitRepo.directory"
);
upstream!(
    validate_iscsi_volume_source,
    vol(
        json!({"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 0}})
    ),
    vol(json!({"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "storage", "lun": 0}})),
    "p.volumes[0].iscsi.iqn"
);
upstream!(
    validate_fc_volume_source,
    vol(json!({"fc": {"targetWWNs": ["500a0982991b8dc5"], "lun": 2}})),
    vol(json!({"fc": {"targetWWNs": ["500a0982991b8dc5"]}})),
    "p.volumes[0].fc.lun"
);
upstream!(
    validate_gce_persistent_disk_volume_source,
    vol(json!({"gcePersistentDisk": {"pdName": "data", "partition": 1}})),
    vol(json!({"gcePersistentDisk": {"pdName": "data", "partition": 300}})),
    "p.volumes[0].persistentDisk.partition"
);
upstream!(
    validate_aws_elastic_block_store_volume_source,
    vol(json!({"awsElasticBlockStore": {"volumeID": "vol-1"}})),
    vol(json!({"awsElasticBlockStore": {}})),
    "p.volumes[0].awsElasticBlockStore.volumeID"
);
upstream!(
    validate_secret_volume_source,
    vol(json!({"secret": {"secretName": "s", "defaultMode": 0o400}})),
    vol(json!({"secret": {"secretName": "s", "defaultMode": 0o1000}})),
    "p.volumes[0].secret.defaultMode"
);
upstream!(
    validate_config_map_volume_source,
    vol(json!({"configMap": {"name": "cm", "items": [{"key": "a", "path": "conf/a"}]}})),
    vol(json!({"configMap": {"items": [{"key": "a", "path": "a"}]}})),
    "p.volumes[0].configMap.name"
);
upstream!(
    validate_key_to_path,
    vol(
        json!({"configMap": {"name": "cm", "items": [{"key": "a", "path": "a.txt", "mode": 0o644}]}})
    ),
    vol(json!({"configMap": {"name": "cm", "items": [{"key": "a", "path": "../a"}]}})),
    "p.volumes[0].configMap.items[0].path"
);
upstream!(
    validate_local_descending_path,
    vol(json!({"gitRepo": {"repository": "r", "directory": "a/b"}})),
    vol(json!({"gitRepo": {"repository": "r", "directory": "a/../../b"}})),
    "p.volumes[0].gitRepo.directory"
);
upstream!(
    validate_path_no_backsteps,
    vol(json!({"hostPath": {"path": "/var/lib/..data"}})),
    vol(json!({"hostPath": {"path": "/var/lib/../data"}})),
    "p.volumes[0].hostPath.path"
);
upstream!(
    validate_local_non_reserved_path,
    vol(json!({"secret": {"secretName": "s", "items": [{"key": "k", "path": "a..b"}]}})),
    vol(json!({"secret": {"secretName": "s", "items": [{"key": "k", "path": "..data"}]}})),
    "p.volumes[0].secret.items[0].path"
);
upstream!(
    validate_persistent_claim_volume_source,
    vol(json!({"persistentVolumeClaim": {"claimName": "data"}})),
    vol(json!({"persistentVolumeClaim": {"claimName": ""}})),
    "p.volumes[0].persistentVolumeClaim.claimName"
);
upstream!(
    validate_nfs_volume_source,
    vol(json!({"nfs": {"server": "nfs.example.com", "path": "/exports"}})),
    vol(json!({"nfs": {"server": "nfs.example.com", "path": "exports"}})),
    "p.volumes[0].nfs.path"
);
upstream!(
    validate_quobyte_volume_source,
    vol(json!({"quobyte": {"registry": "reg:7861", "volume": "v"}})),
    vol(json!({"quobyte": {"registry": "reg", "volume": "v"}})),
    "p.volumes[0].quobyte.registry"
);
upstream!(
    validate_glusterfs_volume_source,
    vol(json!({"glusterfs": {"endpoints": "gfs", "path": "vol"}})),
    vol(json!({"glusterfs": {"endpoints": "gfs"}})),
    "p.volumes[0].glusterfs.path"
);
upstream!(
    validate_flocker_volume_source,
    vol(json!({"flocker": {"datasetName": "ds"}})),
    vol(json!({"flocker": {"datasetName": "ds", "datasetUUID": "u"}})),
    "p.volumes[0].flocker"
);
upstream!(
    validate_downward_api_volume_source,
    vol(
        json!({"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}})
    ),
    vol(json!({"downwardAPI": {"defaultMode": -1, "items": []}})),
    "p.volumes[0].downwardAPI.defaultMode"
);
upstream!(
    validate_downward_api_volume_file,
    vol(
        json!({"downwardAPI": {"items": [{"path": "mem", "resourceFieldRef": {"containerName": "tensorflow", "resource": "limits.memory"}}]}})
    ),
    vol(
        json!({"downwardAPI": {"items": [{"path": "node", "fieldRef": {"fieldPath": "spec.nodeName"}}]}})
    ),
    "p.volumes[0].downwardAPI.fieldRef.fieldPath"
);
upstream!(
    validate_projected_volume_source,
    vol(json!({"projected": {"defaultMode": 0o440, "sources": [{"configMap": {"name": "a"}}]}})),
    vol(json!({"projected": {"defaultMode": 0o7777, "sources": []}})),
    "p.volumes[0].projected.defaultMode"
);
upstream!(
    validate_projection_sources,
    vol(
        json!({"projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}, {"secret": {"name": "s"}}]}})
    ),
    vol(
        json!({"projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 60}}]}})
    ),
    "p.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds"
);
upstream!(
    validate_rbd_volume_source,
    vol(json!({"rbd": {"monitors": ["10.0.0.1:6789"], "image": "img"}})),
    vol(json!({"rbd": {"image": "img"}})),
    "p.volumes[0].rbd.monitors"
);
upstream!(
    validate_cinder_volume_source,
    vol(json!({"cinder": {"volumeID": "v"}})),
    vol(json!({"cinder": {"volumeID": "v", "secretRef": {}}})),
    "p.volumes[0].cinder.secretRef.name"
);
upstream!(
    validate_ceph_fs_volume_source,
    vol(json!({"cephfs": {"monitors": ["m:6789"]}})),
    vol(json!({"cephfs": {"monitors": []}})),
    "p.volumes[0].cephfs.monitors"
);
upstream!(
    validate_flex_volume_source,
    vol(json!({"flexVolume": {"driver": "example/lvm", "options": {"size": "1G"}}})),
    vol(json!({"flexVolume": {"driver": "example/lvm", "options": {"kubernetes.io/x": "1"}}})),
    "p.volumes[0].flexVolume.options[kubernetes.io/x]"
);
upstream!(
    validate_azure_file,
    vol(json!({"azureFile": {"secretName": "s", "shareName": "share"}})),
    vol(json!({"azureFile": {"secretName": "s"}})),
    "p.volumes[0].azureFile.shareName"
);
upstream!(
    validate_azure_disk,
    vol(
        json!({"azureDisk": {"diskName": "d", "diskURI": "/subscriptions/x/disks/d", "kind": "Managed"}})
    ),
    vol(
        json!({"azureDisk": {"diskName": "d", "diskURI": "https://a.blob.core.windows.net/c/d.vhd", "kind": "Managed"}})
    ),
    "p.volumes[0].azureDisk.diskURI"
);
upstream!(
    validate_vsphere_volume_source,
    vol(json!({"vsphereVolume": {"volumePath": "[ds] v.vmdk"}})),
    vol(json!({"vsphereVolume": {}})),
    "p.volumes[0].vsphereVolume.volumePath"
);
upstream!(
    validate_photon_persistent_disk_volume_source,
    vol(json!({"photonPersistentDisk": {"pdID": "p"}})),
    vol(json!({"photonPersistentDisk": {}})),
    "p.volumes[0].photonPersistentDisk.pdID"
);
upstream!(
    validate_portworx_volume_source,
    vol(json!({"portworxVolume": {"volumeID": "p"}})),
    vol(json!({"portworxVolume": {}})),
    "p.volumes[0].portworxVolume.volumeID"
);
upstream!(
    validate_scale_io_volume_source,
    vol(
        json!({"scaleIO": {"gateway": "g", "system": "s", "volumeName": "v", "secretRef": {"name": "x"}}})
    ),
    vol(json!({"scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "x"}}})),
    "p.volumes[0].scaleIO.volumeName"
);
upstream!(
    validate_storage_os_volume_source,
    vol(json!({"storageos": {"volumeName": "data", "volumeNamespace": "team"}})),
    vol(json!({"storageos": {"volumeName": "Data"}})),
    "p.volumes[0].storageos.volumeName"
);
upstream!(
    validate_csi_driver_name,
    vol(json!({"csi": {"driver": "csi.example.com"}})),
    vol(json!({"csi": {"driver": "csi_example"}})),
    "p.volumes[0].csi.driver"
);
upstream!(
    validate_csi_volume_source,
    vol(
        json!({"csi": {"driver": "secrets-store.csi.k8s.io", "nodePublishSecretRef": {"name": "creds"}}})
    ),
    vol(json!({"csi": {"driver": "secrets-store.csi.k8s.io", "nodePublishSecretRef": {}}})),
    "p.volumes[0].csi.nodePublishSecretRef.name"
);
upstream!(
    validate_ephemeral_volume_source,
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}})
    ),
    vol(json!({"ephemeral": {}})),
    "p.volumes[0].ephemeral.volumeClaimTemplate"
);
upstream!(
    validate_persistent_volume_claim_template,
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"metadata": {"labels": {"app": "tf"}}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}})
    ),
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"metadata": {"name": "x"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}})
    ),
    "p.volumes[0].ephemeral.volumeClaimTemplate.metadata.name"
);
upstream!(
    validate_template_object_meta,
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"metadata": {"annotations": {"a": "b"}}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}})
    ),
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"metadata": {"labels": {"a": "b c"}}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}})
    ),
    "p.volumes[0].ephemeral.volumeClaimTemplate.metadata.labels.a"
);
upstream!(
    validate_persistent_volume_claim_spec,
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOncePod"], "storageClassName": "fast", "volumeMode": "Block", "resources": {"requests": {"storage": "10Gi"}}}}}})
    ),
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {}}}}}})
    ),
    "p.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]"
);
upstream!(
    validate_data_source,
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSource": {"kind": "VolumeSnapshot", "apiGroup": "snapshot.storage.k8s.io", "name": "snap"}}}}})
    ),
    vol(
        json!({"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSource": {"kind": "VolumeSnapshot", "name": "snap"}}}}})
    ),
    "p.volumes[0].ephemeral.volumeClaimTemplate.spec.dataSource"
);
upstream!(
    validate_image_volume_source,
    vol(
        json!({"image": {"reference": "registry.example.com/models/bert:1", "pullPolicy": "IfNotPresent"}})
    ),
    vol(json!({"image": {"pullPolicy": "IfNotPresent"}})),
    "p.volumes[0].image.reference"
);
upstream!(
    validate_nonnegative_field,
    ctr(
        json!({"readinessProbe": {"exec": {"command": ["true"]}, "initialDelaySeconds": 0}}),
        json!({})
    ),
    ctr(
        json!({"readinessProbe": {"exec": {"command": ["true"]}, "initialDelaySeconds": -5}}),
        json!({})
    ),
    &c("readinessProbe.initialDelaySeconds")
);
upstream!(
    accumulate_unique_host_ports,
    pod(
        json!({"containers": [{"name": "a", "image": "i:1", "ports": [{"containerPort": 1, "hostPort": 80, "hostIP": "10.0.0.1"}, {"containerPort": 2, "hostPort": 80, "hostIP": "10.0.0.2"}]}]})
    ),
    pod(
        json!({"containers": [{"name": "a", "image": "i:1", "ports": [{"containerPort": 1, "hostPort": 80}, {"containerPort": 2, "hostPort": 80}]}]})
    ),
    "p.containers[0].ports[1].hostPort"
);
upstream!(
    validate_tcp_socket_action,
    ctr(
        json!({"livenessProbe": {"tcpSocket": {"port": 2222}}}),
        json!({})
    ),
    ctr(
        json!({"livenessProbe": {"tcpSocket": {"port": "TFJOB"}}}),
        json!({})
    ),
    &c("livenessProbe.tcpSocket.port")
);
upstream!(
    validate_grpc_action,
    ctr(
        json!({"livenessProbe": {"grpc": {"port": 50051}}}),
        json!({})
    ),
    ctr(
        json!({"livenessProbe": {"grpc": {"port": 70000}}}),
        json!({})
    ),
    &c("livenessProbe.grpc.port")
);
upstream!(
    validate_node_selector_term,
    pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}}})
    ),
    pod(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "-bad", "operator": "Exists"}]}]}}}})
    ),
    "p.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key"
);
upstream!(
    validate_pod_affinity_terms,
    pod(
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "a"}, {"topologyKey": "b"}]}}})
    ),
    pod(
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "a"}, {"topologyKey": ""}]}}})
    ),
    "p.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey"
);
upstream!(
    validate_weighted_pod_affinity_terms,
    pod(
        json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": {"topologyKey": "z"}}]}}})
    ),
    pod(
        json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": {"topologyKey": "a b"}}]}}})
    ),
    "p.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey"
);
upstream!(
    validate_pod_anti_affinity,
    pod(
        json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": "mnist"}}}]}}})
    ),
    pod(
        json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "h", "labelSelector": {"matchLabels": {"job": "a b"}}}]}}})
    ),
    "p.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels.job"
);
upstream!(
    validate_node_affinity,
    pod(
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n"]}]}}]}}})
    ),
    pod(
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}}]}}})
    ),
    "p.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].operator"
);
upstream!(
    validate_pod_affinity,
    pod(
        json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "z", "namespaceSelector": {}}}]}}})
    ),
    pod(
        json!({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "z", "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]}}}]}}})
    ),
    "p.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaceSelector.matchExpressions[0].values"
);
upstream!(
    validate_resource_name,
    ctr(
        json!({"resources": {"requests": {"ephemeral-storage": "1Gi"}}}),
        json!({})
    ),
    ctr(
        json!({"resources": {"requests": {"storage": "1Gi"}}}),
        json!({})
    ),
    &c("resources.requests.storage")
);
upstream!(
    validate_resource_requirements,
    ctr(
        json!({"resources": {"limits": {"hugepages-1Gi": "2Gi", "cpu": "1"}, "requests": {"hugepages-1Gi": "2Gi"}}}),
        json!({})
    ),
    ctr(
        json!({"resources": {"limits": {"hugepages-1Gi": "2Gi"}}}),
        json!({})
    ),
    &c("resources")
);
upstream!(
    validate_container_only_for_pod,
    ctr(
        json!({"image": "registry.example.com:5000/tf/train@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}),
        json!({})
    ),
    ctr(json!({"image": " tensorflow/tensorflow:2.13.0"}), json!({})),
    &c("image")
);
upstream!(
    validate_containers_only_for_pod,
    pod(json!({"initContainers": [{"name": "fetch", "image": "busybox:1.36"}]})),
    pod(json!({"initContainers": [{"name": "fetch", "image": "busybox:1.36\n"}]})),
    "p.initContainers[0].image"
);
upstream!(
    validate_dns1123_subdomain_with_under_score,
    pod(json!({"dnsConfig": {"searches": ["_ldap._tcp.example.com"]}})),
    pod(json!({"dnsConfig": {"searches": ["-bad.example.com"]}})),
    "p.dnsConfig.searches[0]"
);
upstream!(
    validate_pod_create,
    pod(json!({})),
    pod(json!({"ephemeralContainers": [{"name": "debug", "image": "busybox:1.36"}]})),
    "p.ephemeralContainers"
);
upstream!(
    validate_config_map_env_source,
    ctr(
        json!({"envFrom": [{"configMapRef": {"name": "train-config"}}]}),
        json!({})
    ),
    ctr(
        json!({"envFrom": [{"configMapRef": {"name": "Train_Config"}}]}),
        json!({})
    ),
    &c("envFrom[0].configMapRef.name")
);
upstream!(
    validate_secret_env_source,
    ctr(
        json!({"envFrom": [{"secretRef": {"name": "creds"}}]}),
        json!({})
    ),
    ctr(json!({"envFrom": [{"secretRef": {}}]}), json!({})),
    &c("envFrom[0].secretRef.name")
);

fn job(ps: Value, annotations: Value) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "mnist"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {
            "metadata": {"annotations": annotations}, "spec": ps}}}}})
}

/// ValidateAnnotations (apimachinery ValidateAnnotationsSize) on the pod template: pod.rs.
#[test]
fn validate_annotations() {
    let ok = crate::pipeline::validate::pod::check(&job(pod(json!({})), json!({"a": "b"})));
    assert!(ok.is_empty(), "{ok:?}");
    let big = "x".repeat(300 * 1024);
    let bad = crate::pipeline::validate::pod::check(&job(pod(json!({})), json!({ "a": big })));
    assert!(
        bad.iter()
            .any(|f| f.path == "spec.tfReplicaSpecs.Worker.template.metadata.annotations"),
        "{bad:?}"
    );
}

/// ValidateNonnegativeQuantity (via ValidateResourceQuantityValue): lint.rs quantity_check.
#[test]
fn validate_nonnegative_quantity() {
    let paths = |ps: Value| -> Vec<String> {
        crate::pipeline::validate::lint::check(
            &job(ps, json!({})),
            &crate::pipeline::validate::Inputs::default(),
        )
        .into_iter()
        .filter(|f| f.severity == Severity::Error && f.path.contains("resources"))
        .map(|f| f.path)
        .collect()
    };
    assert!(
        paths(ctr(
            json!({"resources": {"limits": {"cpu": "1"}}}),
            json!({})
        ))
        .is_empty()
    );
    let bad = paths(ctr(
        json!({"resources": {"limits": {"cpu": "-1"}}}),
        json!({}),
    ));
    assert!(
        bad.iter()
            .any(|p| p.ends_with("containers[0].resources.limits.cpu")),
        "{bad:?}"
    );
}

/// snake_case of a Go name, as the tests above are named: `validateDNS1123Label` →
/// `validate_dns1123_label`, `validateSELinuxChangePolicy` → `validate_se_linux_change_policy`.
fn snake(go: &str) -> String {
    let c: Vec<char> = go.chars().collect();
    let mut out = String::new();
    for (i, &ch) in c.iter().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            let prev = c[i - 1];
            let next_lower = c.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push('_');
            }
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

/// A row of the coverage table: `| \`Name\` | ported | ours | test |` or
/// `| \`Name\` | server | reason |`.
fn rows(doc: &str) -> Vec<(String, String, Vec<String>)> {
    doc.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('`').to_string())
                .collect();
            (cells[0].clone(), cells[1].clone(), cells[2..].to_vec())
        })
        .collect()
}

/// The coverage table in docs/pod-validation.md has one row per upstream function listed in
/// docs/pod-validation-upstream.txt and no other; a ported row names a test of this file
/// named for the upstream function; a server row gives a reason.
#[test]
fn coverage_table_is_complete() {
    let doc = include_str!("../../../../../docs/pod-validation.md");
    let names: Vec<&str> = include_str!("../../../../../docs/pod-validation-upstream.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let src = include_str!("upstream.rs");
    let table = rows(doc);
    let mut problems = Vec::new();
    for n in &names {
        match table.iter().filter(|r| r.0 == *n).count() {
            0 => problems.push(format!("{n}: no row in docs/pod-validation.md")),
            1 => {}
            k => problems.push(format!("{n}: {k} rows")),
        }
    }
    for (name, status, rest) in &table {
        if !names.contains(&name.as_str()) {
            problems.push(format!("{name}: a row for a name not in the upstream list"));
        }
        match status.as_str() {
            "ported" => {
                let test = snake(name);
                let named = rest.get(1).map(String::as_str) == Some(test.as_str());
                // However rustfmt lays the macro call out.
                let exists = src.contains(&format!("upstream!({test},"))
                    || src.contains(&format!("upstream!(\n    {test},"))
                    || src.contains(&format!("fn {test}()"));
                if !named || !exists {
                    problems.push(format!(
                        "{name}: ported, but no test named {test} in tests/upstream.rs"
                    ));
                }
            }
            "server" => {
                if rest.first().is_none_or(|r| r.len() < 10) {
                    problems.push(format!("{name}: left to the server without a reason"));
                }
            }
            other => problems.push(format!(
                "{name}: status {other:?} is neither ported nor server"
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn snake_case_of_go_names() {
    for (go, want) in [
        ("validateDNS1123Label", "validate_dns1123_label"),
        (
            "validateSELinuxChangePolicy",
            "validate_se_linux_change_policy",
        ),
        ("validateISCSIVolumeSource", "validate_iscsi_volume_source"),
        ("IsValidSysctlName", "is_valid_sysctl_name"),
        ("validateOS", "validate_os"),
    ] {
        assert_eq!(snake(go), want);
    }
}

// ---- 1.36's newest corners (issue 60 item 11), each as the real 1.36.2 server judged it -----
upstream!(
    validate_pod_resources,
    pod(json!({"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}})),
    pod(json!({"resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}})),
    "p.resources.requests"
);
upstream!(
    validate_pod_resource_consistency,
    ctr(
        json!({"resources": {"requests": {"cpu": "1"}}}),
        json!({"resources": {"requests": {"cpu": "2"}}})
    ),
    ctr(
        json!({"resources": {"requests": {"cpu": "2"}}}),
        json!({"resources": {"requests": {"cpu": "1"}}})
    ),
    "p.resources.requests[cpu]"
);
upstream!(
    validate_match_label_keys_and_mismatch_label_keys,
    pod(
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a"}}, "matchLabelKeys": ["job"]}]}}})
    ),
    pod(
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "matchLabelKeys": ["job"]}]}}})
    ),
    "p.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys"
);
upstream!(
    validate_match_label_keys_in_topology_spread,
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a"}}, "matchLabelKeys": ["job"]}]})
    ),
    pod(
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["job"]}]})
    ),
    "p.topologySpreadConstraints[0].matchLabelKeys"
);
upstream!(
    validate_init_container_restart_policy,
    pod(
        json!({"initContainers": [{"name": "side", "image": "busybox", "restartPolicy": "Never", "restartPolicyRules": [{"action": "RestartAllContainers", "exitCodes": {"operator": "NotIn", "values": [0]}}]}]})
    ),
    pod(
        json!({"initContainers": [{"name": "side", "image": "busybox", "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}]}]})
    ),
    "p.initContainers[0].restartPolicy"
);
upstream!(
    validate_container_resource_divisor,
    ctr(
        json!({"env": [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}]}),
        json!({})
    ),
    ctr(
        json!({"env": [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1024"}}}]}),
        json!({})
    ),
    "p.containers[0].env[0].valueFrom.resourceFieldRef.divisor"
);
