//! Case-by-case tests of the pure model: one per filter, per admission rule and per verdict.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{LimitRange, PodSpec, ResourceQuota, Taint};
use serde_json::json;

use super::filters::{Rejection, node_reject_reason};
use super::*;
use crate::model::TFJob;

fn res(pairs: &[(&str, &str)]) -> Res {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), parse_quantity(v).unwrap()))
        .collect()
}

fn node(name: &str, cpu: &str, mem: &str, gpu: &str) -> NodeInfo {
    NodeInfo {
        name: name.into(),
        labels: BTreeMap::from([("kubernetes.io/hostname".into(), name.into())]),
        allocatable: res(&[
            ("cpu", cpu),
            ("memory", mem),
            ("nvidia.com/gpu", gpu),
            ("pods", "110"),
        ]),
        ..Default::default()
    }
}

fn spec(v: serde_json::Value) -> PodSpec {
    serde_json::from_value(v).unwrap()
}

fn job(v: serde_json::Value) -> TFJob {
    serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "mnist", "namespace": "default"},
        "spec": {"tfReplicaSpecs": v}
    }))
    .unwrap()
}

fn replica(n: i32, requests: serde_json::Value, limits: serde_json::Value) -> serde_json::Value {
    json!({"replicas": n, "template": {"spec": {"containers": [{
        "name": "tensorflow", "image": "tf:2",
        "resources": {"requests": requests, "limits": limits}
    }]}}})
}

fn snap(nodes: Vec<NodeInfo>, bound: Vec<BoundPod>) -> ClusterState {
    ClusterState {
        namespace: "default".into(),
        nodes: Some(nodes),
        bound_pods: Some(bound.into_iter().collect()),
        ..Default::default()
    }
}

fn bound(name: &str, node: &str, r: &[(&str, &str)]) -> BoundPod {
    BoundPod {
        namespace: "other".into(),
        name: name.into(),
        node: node.into(),
        requests: res(r),
        owner: String::new(),
    }
}

fn reject(s: &PodSpec, n: &NodeInfo) -> Option<Rejection> {
    node_reject_reason(s, &effective_requests(s), n, &Res::new(), 0)
}

#[test]
fn quantities_parse_exactly_in_milli_units() {
    for (q, want) in [
        ("500m", 500),
        ("2", 2000),
        ("1.5", 1500),
        ("1Gi", 1_073_741_824_000),
        ("1e3", 1_000_000),
        ("100M", 100_000_000_000),
        ("0.1m", 1),
    ] {
        assert_eq!(parse_quantity(q), Some(want), "{q}");
    }
    assert_eq!(parse_quantity("1x"), None);
    assert_eq!(format_quantity("memory", 4 * 1_073_741_824_000), "4Gi");
    assert_eq!(format_quantity("cpu", 1500), "1500m");
}

#[test]
fn limits_stand_in_for_missing_requests() {
    let s = spec(json!({"containers": [{"name": "a", "resources": {
        "limits": {"cpu": "2", "nvidia.com/gpu": "1"}, "requests": {"memory": "1Gi"}}}]}));
    assert_eq!(
        effective_requests(&s),
        res(&[("cpu", "2"), ("memory", "1Gi"), ("nvidia.com/gpu", "1")])
    );
}

#[test]
fn init_containers_count_as_max_of_init_and_sum_of_apps_plus_overhead() {
    let s = spec(json!({
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}}},
            {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        "initContainers": [
            {"name": "i", "resources": {"requests": {"cpu": "3", "memory": "512Mi"}}}],
        "overhead": {"cpu": "250m"}
    }));
    assert_eq!(
        effective_requests(&s),
        res(&[("cpu", "3250m"), ("memory", "1Gi")])
    );
}

#[test]
fn sidecar_init_containers_add_to_the_sum() {
    let s = spec(json!({
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        "initContainers": [
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "i", "resources": {"requests": {"cpu": "1500m"}}}]
    }));
    // sum = 1 + 1 (sidecar); the init runs with the sidecar: 1.5 + 1 = 2.5 > 2.
    assert_eq!(effective_requests(&s), res(&[("cpu", "2500m")]));
}

#[test]
fn node_resources_fit_names_each_shortage() {
    let s = spec(
        json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "8", "nvidia.com/gpu": "2"}}}]}),
    );
    let r = reject(&s, &node("n", "4", "8Gi", "1")).unwrap();
    assert!(r.resolvable);
    assert_eq!(
        r.reasons,
        vec!["Insufficient cpu", "Insufficient nvidia.com/gpu"]
    );
}

#[test]
fn pod_count_limit_gives_too_many_pods() {
    let mut n = node("n", "4", "8Gi", "0");
    n.allocatable.insert("pods".into(), 2000);
    let s = spec(json!({"containers": [{"name": "a"}]}));
    let r = node_reject_reason(&s, &Res::new(), &n, &Res::new(), 2).unwrap();
    assert_eq!(r.reasons, vec!["Too many pods"]);
    assert!(node_reject_reason(&s, &Res::new(), &n, &Res::new(), 1).is_none());
}

#[test]
fn cordoned_node_is_unschedulable_unless_tolerated() {
    let mut n = node("n", "4", "8Gi", "0");
    n.unschedulable = true;
    let s = spec(json!({"containers": [{"name": "a"}]}));
    assert_eq!(
        reject(&s, &n).unwrap().reasons,
        vec!["node(s) were unschedulable"]
    );
    let t = spec(json!({"containers": [{"name": "a"}], "tolerations": [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}));
    assert!(reject(&t, &n).is_none());
}

#[test]
fn taints_need_matching_tolerations() {
    let mut n = node("n", "4", "8Gi", "1");
    n.taints = vec![
        Taint {
            key: "soft".into(),
            effect: "PreferNoSchedule".into(),
            ..Default::default()
        },
        Taint {
            key: "nvidia.com/gpu".into(),
            value: Some("present".into()),
            effect: "NoSchedule".into(),
            ..Default::default()
        },
    ];
    let none = spec(json!({"containers": [{"name": "a"}]}));
    let r = reject(&none, &n).unwrap();
    assert_eq!(
        r.reasons,
        vec!["node(s) had untolerated taint {nvidia.com/gpu: present}"]
    );
    assert!(!r.resolvable);
    for (tol, ok) in [
        (json!({"key": "nvidia.com/gpu", "operator": "Exists"}), true),
        (json!({"operator": "Exists"}), true),
        (json!({"key": "nvidia.com/gpu", "value": "present"}), true),
        (
            json!({"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}),
            false,
        ),
        (
            json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}),
            false,
        ),
    ] {
        let s = spec(json!({"containers": [{"name": "a"}], "tolerations": [tol]}));
        assert_eq!(reject(&s, &n).is_none(), ok, "{tol}");
    }
    n.taints = vec![Taint {
        key: "evict".into(),
        effect: "NoExecute".into(),
        ..Default::default()
    }];
    assert!(reject(&none, &n).is_some(), "NoExecute also filters");
}

#[test]
fn node_selector_and_required_affinity_operators() {
    let mut n = node("n", "4", "8Gi", "0");
    n.labels.insert("pool".into(), "gpu".into());
    n.labels.insert("gen".into(), "5".into());
    let with = |expr: serde_json::Value| {
        spec(
            json!({"containers": [{"name": "a"}], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}}),
        )
    };
    for (expr, ok) in [
        (
            json!({"key": "pool", "operator": "In", "values": ["gpu", "x"]}),
            true,
        ),
        (
            json!({"key": "pool", "operator": "NotIn", "values": ["gpu"]}),
            false,
        ),
        (
            json!({"key": "zone", "operator": "NotIn", "values": ["a"]}),
            true,
        ),
        (json!({"key": "pool", "operator": "Exists"}), true),
        (json!({"key": "pool", "operator": "DoesNotExist"}), false),
        (
            json!({"key": "gen", "operator": "Gt", "values": ["4"]}),
            true,
        ),
        (
            json!({"key": "gen", "operator": "Lt", "values": ["5"]}),
            false,
        ),
        (
            json!({"key": "pool", "operator": "Gt", "values": ["1"]}),
            false,
        ),
    ] {
        let r = reject(&with(expr.clone()), &n);
        assert_eq!(r.is_none(), ok, "{expr}");
        if !ok {
            assert_eq!(
                r.unwrap().reasons,
                vec!["node(s) didn't match Pod's node affinity/selector"]
            );
        }
    }
    let sel = spec(json!({"containers": [{"name": "a"}], "nodeSelector": {"pool": "cpu"}}));
    assert!(reject(&sel, &n).is_some());
}

#[test]
fn node_name_pins_the_pod() {
    let s = spec(json!({"containers": [{"name": "a"}], "nodeName": "other"}));
    assert_eq!(
        reject(&s, &node("n", "1", "1Gi", "0")).unwrap().reasons,
        vec!["node(s) didn't match the requested node name"]
    );
}

#[test]
fn fit_error_message_matches_the_scheduler_wording() {
    let un = Rejection {
        reasons: vec!["node(s) were unschedulable".into()],
        resolvable: false,
    };
    let taint = Rejection {
        reasons: vec!["node(s) had untolerated taint {nvidia.com/gpu: present}".into()],
        resolvable: false,
    };
    let msg = fit_error_message(4, &[un, taint.clone(), taint.clone(), taint]);
    assert_eq!(
        msg,
        "0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    );
    assert_eq!(
        fit_error_message(0, &[]),
        "no nodes available to schedule pods"
    );
}

#[test]
fn verdict_fits_spreads_onto_least_allocated_nodes() {
    let j = job(json!({"Worker": replica(2, json!({"cpu": "2"}), json!({}))}));
    let r = check(
        &snap(
            vec![node("a", "4", "8Gi", "0"), node("b", "4", "8Gi", "0")],
            vec![],
        ),
        &j,
    );
    assert_eq!(r.placement.verdict, Verdict::Fits);
    let nodes: BTreeSet<_> = r
        .placement
        .pods
        .iter()
        .map(|p| p.node.clone().unwrap())
        .collect();
    assert_eq!(nodes.len(), 2, "{:?}", r.placement.pods);
}

#[test]
fn verdict_waits_names_the_holders() {
    let j = job(json!({"Worker": replica(2, json!({}), json!({"nvidia.com/gpu": "1"}))}));
    let s = snap(
        vec![node("node-a", "8", "8Gi", "2")],
        vec![
            bound("x", "node-a", &[("nvidia.com/gpu", "1")]),
            bound("y", "node-a", &[("nvidia.com/gpu", "1")]),
            bound("z", "node-a", &[("cpu", "1")]),
        ],
    );
    let r = check(&s, &j);
    assert_eq!(
        r.placement.verdict,
        Verdict::Waits,
        "{}",
        r.placement.reason
    );
    assert!(
        r.placement
            .reason
            .contains("2 nvidia.com/gpu held by 2 pods on node-a"),
        "{}",
        r.placement.reason
    );
}

/// Issue 46: the jobs holding the GPUs are named, and a GPU node that does not report Ready is
/// said rather than left out of the story.
#[test]
fn verdict_waits_names_the_jobs_holding_gpus_and_a_node_not_ready() {
    let j = job(json!({"Worker": replica(2, json!({}), json!({"nvidia.com/gpu": "1"}))}));
    let owned = |name: &str, owner: &str| BoundPod {
        owner: owner.into(),
        ..bound(name, "gpu-a", &[("nvidia.com/gpu", "1"), ("cpu", "1")])
    };
    let mut lost = node("gpu-b", "8", "8Gi", "4");
    lost.not_ready = Some("Ready Unknown: Kubelet stopped posting node status.".into());
    lost.taints = vec![k8s_openapi::api::core::v1::Taint {
        key: "node.kubernetes.io/unreachable".into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    }];
    let s = snap(
        vec![node("gpu-a", "8", "8Gi", "2"), lost],
        vec![
            owned("x", "TFJob team-b/bert"),
            owned("y", "TFJob team-b/bert"),
        ],
    );
    let r = check(&s, &j);
    assert_eq!(
        r.placement.verdict,
        Verdict::Waits,
        "{}",
        r.placement.reason
    );
    assert!(
        r.placement.reason.contains(
            "2 nvidia.com/gpu held by 2 pods on gpu-a (TFJob team-b/bert), gpu-b (4 nvidia.com/gpu) is not Ready: Ready Unknown: Kubelet stopped posting node status."
        ),
        "{}",
        r.placement.reason
    );
    // A cpu holder is not named: every pod holds cpu.
    let mut usage = BoundPods::default();
    usage.add(owned("z", "Deployment team-c/web"), false);
    let u = &usage.by_node()["gpu-a"];
    assert!(!u.holders.contains_key("cpu"));
    assert_eq!(u.holders["nvidia.com/gpu"]["Deployment team-c/web"], 1);
}

#[test]
fn verdict_never_when_a_replica_fits_no_empty_node() {
    let j = job(json!({"Worker": replica(1, json!({}), json!({"nvidia.com/gpu": "4"}))}));
    let r = check(
        &snap(
            vec![node("a", "8", "8Gi", "2"), node("b", "8", "8Gi", "1")],
            vec![],
        ),
        &j,
    );
    assert_eq!(r.placement.verdict, Verdict::Never);
    let p = &r.placement.pods[0];
    assert_eq!((p.verdict, p.node.clone()), (Verdict::Never, None));
    assert!(p.reason.contains("needs 4 nvidia.com/gpu"), "{}", p.reason);
    assert!(
        p.reason
            .contains("largest allocatable nvidia.com/gpu is 2 on a"),
        "{}",
        p.reason
    );
    assert!(
        p.reason
            .contains("0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),
        "{}",
        p.reason
    );
}

#[test]
fn article_job_one_ps_three_gpu_workers_on_one_gpu_is_never() {
    let j = job(json!({
        "PS": replica(1, json!({"cpu": "1"}), json!({})),
        "Worker": replica(3, json!({}), json!({"nvidia.com/gpu": "1"}))
    }));
    let r = check(&snap(vec![node("gpu-1", "16", "64Gi", "1")], vec![]), &j);
    assert_eq!(r.placement.verdict, Verdict::Never);
    assert!(
        r.placement.reason.contains("3 nvidia.com/gpu at once"),
        "{}",
        r.placement.reason
    );
    assert!(
        r.placement.reason.contains("have 1 allocatable"),
        "{}",
        r.placement.reason
    );
    assert_eq!(r.placement.pods.len(), 4);
    assert!(r.placement.pods.iter().all(|p| p.verdict == Verdict::Never));
}

#[test]
fn verdict_unknown_without_permission_to_list_nodes() {
    let j = job(json!({"Worker": replica(1, json!({}), json!({}))}));
    let s = ClusterState {
        missing_permissions: vec!["list nodes (cluster-wide)".into()],
        ..Default::default()
    };
    let r = check(&s, &j);
    assert_eq!(r.placement.verdict, Verdict::Unknown);
    assert!(r.placement.reason.contains("list nodes (cluster-wide)"));
}

fn limit_range(v: serde_json::Value) -> LimitRange {
    serde_json::from_value(json!({"metadata": {"name": "lr"}, "spec": {"limits": [v]}})).unwrap()
}

#[test]
fn limit_range_defaults_fill_missing_requests_and_limits() {
    let lr = limit_range(
        json!({"type": "Container", "default": {"cpu": "2"}, "defaultRequest": {"cpu": "500m", "memory": "1Gi"}}),
    );
    let j = job(json!({"Worker": replica(1, json!({}), json!({"memory": "2Gi"}))}));
    let pods = job_pods(&j, &[lr]);
    // memory: the limit stood in for the request before LimitRanger ran, so 2Gi not 1Gi.
    assert_eq!(pods[0].requests, res(&[("cpu", "500m"), ("memory", "2Gi")]));
    let lim = pods[0].spec.containers[0]
        .resources
        .as_ref()
        .unwrap()
        .limits
        .clone()
        .unwrap();
    assert_eq!(lim["cpu"].0, "2");
}

#[test]
fn limit_range_max_rejects_the_pod() {
    let lr = limit_range(json!({"type": "Container", "max": {"cpu": "2"}}));
    let j = job(json!({"Worker": replica(1, json!({}), json!({"cpu": "4"}))}));
    let s = ClusterState {
        limit_ranges: vec![lr],
        ..snap(vec![node("a", "8", "8Gi", "0")], vec![])
    };
    let r = check(&s, &j);
    assert_eq!(r.placement.verdict, Verdict::Never);
    assert_eq!(
        r.quota[0].message,
        "pods \"mnist-worker-0\" is forbidden: [maximum cpu usage per Container is 2, but limit is 4]"
    );
}

fn quota(hard: serde_json::Value, used: serde_json::Value) -> ResourceQuota {
    serde_json::from_value(json!({"metadata": {"name": "gpu-quota"}, "spec": {"hard": hard}, "status": {"hard": hard, "used": used}})).unwrap()
}

#[test]
fn quota_exceeded_by_used_capacity_waits_with_the_real_message() {
    let j = job(json!({"Worker": replica(2, json!({}), json!({"nvidia.com/gpu": "1"}))}));
    let q = quota(
        json!({"requests.nvidia.com/gpu": "2"}),
        json!({"requests.nvidia.com/gpu": "1"}),
    );
    let s = ClusterState {
        quotas: vec![q],
        ..snap(vec![node("a", "8", "8Gi", "4")], vec![])
    };
    let r = check(&s, &j);
    assert_eq!(r.quota[0].verdict, Verdict::Waits);
    assert_eq!(
        r.quota[0].message,
        "pods \"mnist-worker-1\" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2"
    );
    assert_eq!(r.placement.verdict, Verdict::Waits);
}

#[test]
fn quota_smaller_than_the_job_is_never() {
    let j = job(json!({"Worker": replica(3, json!({"cpu": "1"}), json!({}))}));
    let q = quota(json!({"pods": "2"}), json!({}));
    let s = ClusterState {
        quotas: vec![q],
        ..snap(vec![node("a", "8", "8Gi", "0")], vec![])
    };
    let r = check(&s, &j);
    assert_eq!(
        (r.quota[0].verdict, r.quota[0].resource.as_str()),
        (Verdict::Never, "pods")
    );
    assert_eq!(r.placement.verdict, Verdict::Never);
}

#[test]
fn quota_on_limits_requires_every_container_to_set_them() {
    let j = job(json!({"Worker": replica(1, json!({"cpu": "1"}), json!({}))}));
    let q = quota(
        json!({"limits.cpu": "10", "limits.memory": "10Gi"}),
        json!({}),
    );
    let r = check(
        &ClusterState {
            quotas: vec![q],
            ..snap(vec![node("a", "8", "8Gi", "0")], vec![])
        },
        &j,
    );
    assert_eq!(
        r.quota[0].message,
        "pods \"mnist-worker-0\" is forbidden: failed quota: gpu-quota: must specify limits.cpu,limits.memory"
    );
}

#[test]
fn references_that_leave_pods_stuck_are_reported() {
    let j: TFJob = serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "mnist"},
        "spec": {"runPolicy": {"schedulingPolicy": {"queue": "q"}}, "tfReplicaSpecs": {"Worker": {"template": {"spec": {
            "priorityClassName": "high", "serviceAccountName": "trainer", "schedulerName": "volcano",
            "imagePullSecrets": [{"name": "regcred"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                        {"name": "c", "configMap": {"name": "cfg"}}],
            "containers": [{"name": "tensorflow", "image": "tf", "env": [
                {"name": "K", "valueFrom": {"secretKeyRef": {"name": "gw", "key": "api-key"}}}]}]
        }}}}}
    }))
    .unwrap();
    let s = ClusterState {
        priority_classes: Some(BTreeSet::new()),
        service_accounts: Some(BTreeSet::from(["default".to_string()])),
        pvcs: Some(BTreeMap::from([(
            "data".to_string(),
            PvcInfo {
                phase: "Pending".into(),
                wait_for_first_consumer: false,
            },
        )])),
        config_maps: Some(BTreeMap::new()),
        secrets: Some(BTreeMap::from([(
            "gw".to_string(),
            BTreeSet::from(["other".to_string()]),
        )])),
        ..snap(vec![node("a", "8", "8Gi", "0")], vec![])
    };
    let r = check(&s, &j);
    let kinds: Vec<(&str, &str)> = r
        .references
        .iter()
        .map(|f| (f.kind.as_str(), f.name.as_str()))
        .collect();
    for want in [
        ("PriorityClass", "high"),
        ("ServiceAccount", "trainer"),
        ("Scheduler", "volcano"),
        ("PersistentVolumeClaim", "data"),
        ("ConfigMap", "cfg"),
        ("Secret", "gw"),
        ("Secret", "regcred"),
        (
            "CustomResourceDefinition",
            "podgroups.scheduling.volcano.sh",
        ),
    ] {
        assert!(kinds.contains(&want), "{want:?} missing from {kinds:?}");
    }
    let key = r.references.iter().find(|f| f.name == "gw").unwrap();
    assert!(
        key.message
            .contains("couldn't find key api-key in Secret gw"),
        "{}",
        key.message
    );
}

#[test]
fn wait_for_first_consumer_pvc_is_fine() {
    let j: TFJob = serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "m"},
        "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
            "containers": [{"name": "tensorflow", "image": "tf"}]}}}}}
    }))
    .unwrap();
    let s = ClusterState {
        pvcs: Some(BTreeMap::from([(
            "data".to_string(),
            PvcInfo {
                phase: "Pending".into(),
                wait_for_first_consumer: true,
            },
        )])),
        ..snap(vec![node("a", "8", "8Gi", "0")], vec![])
    };
    assert!(check(&s, &j).references.is_empty());
}

#[test]
fn report_json_has_the_documented_shape() {
    let j = job(json!({"Worker": replica(1, json!({}), json!({"nvidia.com/gpu": "2"}))}));
    let r = check(&snap(vec![node("a", "8", "8Gi", "1")], vec![]), &j);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["placement"]["verdict"], "never");
    let pod = &v["placement"]["pods"][0];
    for k in ["name", "replicaType", "index", "node", "verdict", "reason"] {
        assert!(pod.get(k).is_some(), "missing {k} in {pod}");
    }
    assert_eq!(pod["replicaType"], "Worker");
    assert!(pod["node"].is_null());
    assert!(v["quota"].is_array() && v["references"].is_array() && v["readiness"].is_array());
}

#[test]
fn a_runtime_class_must_exist_and_an_unreadable_list_is_unknown() {
    let j: TFJob = serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "mnist"},
        "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {
            "runtimeClassName": "gvisor", "priorityClassName": "high",
            "containers": [{"name": "tensorflow", "image": "tf"}]
        }}}}}
    }))
    .unwrap();
    let base = snap(vec![node("a", "8", "8Gi", "0")], vec![]);
    let found = |s: &ClusterState, kind: &str| -> Vec<(Severity, String)> {
        check(s, &j)
            .references
            .into_iter()
            .filter(|f| f.kind == kind)
            .map(|f| (f.severity, f.message))
            .collect()
    };
    let missing = ClusterState {
        runtime_classes: Some(BTreeMap::new()),
        priority_classes: Some(BTreeSet::from(["high".to_string()])),
        ..base.clone()
    };
    let f = found(&missing, "RuntimeClass");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, Severity::Error);
    assert!(
        f[0].1.contains("RuntimeClass \"gvisor\" not found"),
        "{f:?}"
    );
    assert!(found(&missing, "PriorityClass").is_empty());
    let present = ClusterState {
        runtime_classes: Some(BTreeMap::from([(
            "gvisor".to_string(),
            RuntimeClassInfo::default(),
        )])),
        ..missing.clone()
    };
    assert!(found(&present, "RuntimeClass").is_empty());
    let unreadable = ClusterState {
        runtime_classes: None,
        priority_classes: None,
        ..base
    };
    for kind in ["RuntimeClass", "PriorityClass"] {
        let f = found(&unreadable, kind);
        assert_eq!(f.len(), 1, "{kind}: {f:?}");
        assert_eq!(f[0].0, Severity::Warning, "{kind}");
        assert!(f[0].1.starts_with("unknown whether"), "{f:?}");
    }
}

#[test]
fn karpenter_or_the_cluster_autoscaler_turn_never_into_waiting_for_nodes() {
    let j = job(json!({"Worker": replica(5, json!({}), json!({"nvidia.com/gpu": "1"}))}));
    let mut s = snap(vec![node("node-a", "32", "128Gi", "4")], vec![]);
    assert_eq!(check(&s, &j).placement.verdict, Verdict::Never);
    assert_eq!(Forecast::autoscaler(&s), None);
    assert_eq!(
        live::unschedulable(s.clone(), "default", &j).map(|u| u.verdict),
        Some(Verdict::Never)
    );
    s.karpenter = true;
    assert!(Forecast::autoscaler(&s).unwrap().contains("Karpenter"));
    // The live question has nothing to add: nodes may come.
    assert_eq!(live::unschedulable(s.clone(), "default", &j), None);
    // What `wait` reports as the current nodes' verdict is still never.
    assert_eq!(
        live::placement(s.clone(), "default", &j).map(|u| u.verdict),
        Some(Verdict::Never)
    );
    s.karpenter = false;
    s.autoscaler = true;
    assert!(
        Forecast::autoscaler(&s)
            .unwrap()
            .contains("cluster-autoscaler")
    );
}

#[test]
fn a_runtime_class_gives_its_overhead_and_node_selector_and_refuses_a_conflict() {
    let with = |extra: serde_json::Value| {
        let mut pod = json!({"runtimeClassName": "kata",
            "containers": [{"name": "tensorflow", "image": "tf",
                "resources": {"requests": {"cpu": "3500m", "memory": "1Gi"}}}]});
        pod.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value::<TFJob>(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "mnist"},
            "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": pod}}}}
        }))
        .unwrap()
    };
    let kata = RuntimeClassInfo {
        overhead: Some(BTreeMap::from([(
            "cpu".to_string(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("1".into()),
        )])),
        node_selector: BTreeMap::from([("sandbox".to_string(), "kata".to_string())]),
        tolerations: vec![],
    };
    let mut kata_node = node("b", "8", "8Gi", "0");
    kata_node.labels.insert("sandbox".into(), "kata".into());
    let s = ClusterState {
        runtime_classes: Some(BTreeMap::from([("kata".to_string(), kata)])),
        ..snap(vec![node("a", "8", "8Gi", "0"), kata_node], vec![])
    };
    let refs = |j: &TFJob| -> Vec<String> {
        check(&s, j)
            .references
            .into_iter()
            .filter(|f| f.kind == "RuntimeClass" && f.severity == Severity::Error)
            .map(|f| f.message)
            .collect()
    };
    // The class's overhead is the pod's (3.5 + 1 CPU) and only the kata node is a candidate.
    let plain = with(json!({}));
    assert!(refs(&plain).is_empty());
    let pods = admitted_pods(&plain, &s.limit_ranges, s.runtime_classes.as_ref());
    assert_eq!(
        pods[0].spec.node_selector.as_ref().unwrap()["sandbox"],
        "kata"
    );
    assert_eq!(check(&s, &plain).placement.verdict, Verdict::Fits);
    let big = with(json!({"containers": [{"name": "tensorflow", "image": "tf",
        "resources": {"requests": {"cpu": "7500m"}}}]}));
    assert_eq!(check(&s, &big).placement.verdict, Verdict::Never);
    // The same overhead written as 1000m passes; another, or one the class lacks, is refused.
    assert!(refs(&with(json!({"overhead": {"cpu": "1000m"}}))).is_empty());
    let r = refs(&with(json!({"overhead": {"cpu": "2"}})));
    assert!(
        r.len() == 1
            && r[0].starts_with(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
            ),
        "{r:?}"
    );
    let r = refs(&with(json!({"nodeSelector": {"sandbox": "gvisor"}})));
    assert!(
        r.len() == 1
            && r[0].starts_with("conflict: runtimeClass.scheduling.nodeSelector[sandbox] = kata; pod.spec.nodeSelector[sandbox] = gvisor"),
        "{r:?}"
    );
    let bare = ClusterState {
        runtime_classes: Some(BTreeMap::from([(
            "kata".to_string(),
            RuntimeClassInfo::default(),
        )])),
        ..s.clone()
    };
    let r: Vec<String> = check(&bare, &with(json!({"overhead": {"cpu": "1"}})))
        .references
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.message)
        .collect();
    assert!(
        r.len() == 1
            && r[0].starts_with(
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
            ),
        "{r:?}"
    );
}

/// What `collect` does with the candidates (`scope`), over an in-memory cluster: the pods of
/// the nodes read so far, batch by batch, until the job fits on them. Returns the snapshot the
/// model then sees and how many nodes' pods were read.
fn scoped(nodes: &[NodeInfo], all: &[BoundPod], j: &TFJob) -> (ClusterState, usize) {
    let pods = admitted_pods(j, &[], None);
    let order: Vec<String> = scope::candidates(nodes, &pods)
        .into_iter()
        .map(|i| nodes[i].name.clone())
        .collect();
    let mut s = snap(nodes.to_vec(), vec![]);
    s.unread = order.iter().cloned().collect();
    let mut read = 0;
    let mut rest = order.as_slice();
    for size in scope::batches(order.len()) {
        let (batch, later) = rest.split_at(size);
        rest = later;
        let mut b = s.bound_pods.take().unwrap_or_default();
        b.merge(
            all.iter()
                .filter(|p| batch.contains(&p.node))
                .cloned()
                .collect(),
        );
        s.bound_pods = Some(b);
        batch.iter().for_each(|n| {
            s.unread.remove(n);
        });
        read += size;
        if scope::fits_on_read(&s, &pods) {
            break;
        }
    }
    (s, read)
}

/// A small deterministic generator (no dependency on a seed source).
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A random cluster: nodes with or without GPUs, some tainted or cordoned, each holding some
/// pods; and a job of a CPU parameter server and workers with or without a GPU.
fn random_case(r: &mut Lcg, n_nodes: usize) -> (Vec<NodeInfo>, Vec<BoundPod>, TFJob) {
    let mut nodes = vec![];
    let mut pods = vec![];
    for i in 0..n_nodes {
        let name = format!("n{i:04}");
        let gpu = ["0", "0", "1", "4", "8"][r.below(5) as usize];
        let mut n = node(&name, &format!("{}", 2 + r.below(15)), "64Gi", gpu);
        match r.below(8) {
            0 => {
                n.taints = vec![Taint {
                    key: "dedicated".into(),
                    value: Some("infra".into()),
                    effect: "NoSchedule".into(),
                    ..Default::default()
                }]
            }
            1 => n.unschedulable = true,
            _ => {}
        }
        for k in 0..r.below(4) {
            let cpu = format!("{}", 1 + r.below(6));
            let g = format!("{}", r.below(3));
            pods.push(bound(
                &format!("p{i}-{k}"),
                &name,
                &[("cpu", &cpu), ("nvidia.com/gpu", &g)],
            ));
        }
        nodes.push(n);
    }
    let gpus = r.below(3);
    let worker_limits = if gpus == 0 {
        json!({})
    } else {
        json!({"nvidia.com/gpu": gpus.to_string()})
    };
    let j = job(json!({
        "PS": replica(1, json!({"cpu": "1"}), json!({})),
        "Worker": replica(1 + r.below(6) as i32, json!({"cpu": format!("{}", 1 + r.below(4))}), worker_limits),
    }));
    (nodes, pods, j)
}

/// Issue 63: reading only the candidate nodes' pods gives the full read's verdict; on fewer
/// candidates than kube-scheduler's `minFeasibleNodesToFind` (every candidate read at once) it
/// gives the same node for every pod too; past it, a `fits` found early stays `fits`.
#[test]
fn reading_the_candidates_pods_gives_the_full_reads_verdict() {
    let mut r = Lcg(63);
    let mut early = 0;
    for case in 0..400 {
        let n_nodes = if case % 4 == 0 {
            260
        } else {
            1 + r.below(40) as usize
        };
        let (nodes, pods, j) = random_case(&mut r, n_nodes);
        let full = check(&snap(nodes.clone(), pods.clone()), &j).placement;
        let (s, read) = scoped(&nodes, &pods, &j);
        let part = check(&s, &j).placement;
        assert_eq!(
            part.verdict, full.verdict,
            "case {case}: {full:?}\n{part:?}"
        );
        let verdicts = |p: &Placement| p.pods.iter().map(|p| p.verdict).collect::<Vec<_>>();
        assert_eq!(verdicts(&part), verdicts(&full), "case {case}");
        if read < nodes.len() && s.unread.is_empty() {
            // Every candidate read: the same placement, node for node.
            let on = |p: &Placement| p.pods.iter().map(|p| p.node.clone()).collect::<Vec<_>>();
            assert_eq!(on(&part), on(&full), "case {case}");
        }
        if !s.unread.is_empty() {
            early += 1;
            assert_eq!(full.verdict, Verdict::Fits, "case {case}");
            // Nothing is placed where the pods were not read (such a node looks empty).
            for p in &part.pods {
                let on = p.node.as_deref().unwrap_or_default();
                assert!(
                    !s.unread.contains(on),
                    "case {case}: {p:?} on an unread node"
                );
            }
        }
    }
    assert!(
        early > 10,
        "the early stop was exercised only {early} times"
    );
}

#[test]
fn candidates_put_the_nodes_for_the_most_demanding_pod_first() {
    let mut tainted = node("c", "8", "8Gi", "8");
    tainted.taints = vec![Taint {
        key: "dedicated".into(),
        value: None,
        effect: "NoSchedule".into(),
        ..Default::default()
    }];
    let nodes = vec![
        node("a", "8", "8Gi", "0"),
        node("b", "8", "8Gi", "4"),
        tainted,
        node("d", "1", "8Gi", "0"),
        node("e", "8", "8Gi", "8"),
    ];
    let j = job(json!({
        "PS": replica(1, json!({"cpu": "2"}), json!({})),
        "Worker": replica(4, json!({"cpu": "1"}), json!({"nvidia.com/gpu": "1"})),
    }));
    let pods = admitted_pods(&j, &[], None);
    let names: Vec<&str> = scope::candidates(&nodes, &pods)
        .into_iter()
        .map(|i| nodes[i].name.as_str())
        .collect();
    // GPU nodes first, then a CPU node the PS fits on; the tainted node and the one too small
    // for any pod even when empty are not read at all.
    assert_eq!(names, ["b", "e", "a"]);
    assert_eq!(scope::batches(0), Vec::<usize>::new());
    assert_eq!(scope::batches(5), [5]);
    assert_eq!(scope::batches(1000), [100, 200, 400, 300]);
}

/// Issue 61 item 5: the advice fits the cause when fewer replicas would not help.
#[test]
fn the_advice_names_a_lone_control_plane_and_a_resource_no_node_has() {
    let j = job(json!({
        "Worker": replica(2, json!({"cpu": "1"}), json!({"nvidia.com/gpu": "1"})),
    }));
    // No node offers nvidia.com/gpu.
    let s = snap(
        vec![node("a", "8", "8Gi", "0"), node("b", "8", "8Gi", "0")],
        vec![],
    );
    let hint = live::cause_hint(&j, &s, "").unwrap();
    assert!(
        hint.starts_with("No node offers nvidia.com/gpu at all"),
        "{hint}"
    );
    // The only node is a control plane.
    let cpu = job(json!({"Worker": replica(2, json!({"cpu": "1"}), json!({}))}));
    let mut cp = node("cp", "8", "8Gi", "0");
    cp.taints = vec![Taint {
        key: "node-role.kubernetes.io/control-plane".into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    }];
    let hint = live::cause_hint(&cpu, &snap(vec![cp.clone()], vec![]), "").unwrap();
    assert!(
        hint.contains("The only node, cp, is a control plane"),
        "{hint}"
    );
    assert!(
        hint.contains("kubectl taint nodes cp node-role.kubernetes.io/control-plane:NoSchedule-"),
        "{hint}"
    );
    // One untainted node: a shortage, the generic advice fits.
    let s = snap(vec![cp, node("w", "1", "8Gi", "0")], vec![]);
    assert_eq!(live::cause_hint(&cpu, &s, ""), None);
}
