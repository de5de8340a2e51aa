//! Cases and messages from Kueue's own scheduler (`pkg/scheduler/flavorassigner/flavorassigner.go`
//! and its tests, `pkg/scheduler/scheduler_test.go`), as collected in the queueing notes.

use super::*;
use serde_json::{Value, json};

fn job(replicas: Value) -> TFJob {
    serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "j", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"tfReplicaSpecs": replicas}
    }))
    .unwrap()
}

fn replica(n: i32, requests: Value) -> Value {
    json!({"replicas": n, "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "i", "resources": {"requests": requests}}]}}})
}

fn lq() -> LocalQueue {
    serde_json::from_value(json!({"metadata": {"name": "lq", "namespace": "team-a"},
        "spec": {"clusterQueue": "cq"}}))
    .unwrap()
}

/// (resource, nominalQuota, borrowingLimit) of one flavor.
type Quotas<'a> = &'a [(&'a str, &'a str, Option<&'a str>)];

/// A ClusterQueue with one resource group over `resources`, flavors as (name, [(res, nominal,
/// borrowingLimit)]), and reservations as (flavor, res, total).
fn cq(
    name: &str,
    cohort: Option<&str>,
    resources: &[&str],
    flavors: &[(&str, Quotas<'_>)],
    used: &[(&str, &str, &str)],
) -> ClusterQueue {
    let flavors: Vec<Value> = flavors
        .iter()
        .map(|(f, rs)| {
            json!({"name": f, "resources": rs.iter().map(|(r, n, b)| {
                let mut q = json!({"name": r, "nominalQuota": n});
                if let Some(b) = b { q["borrowingLimit"] = json!(b); }
                q
            }).collect::<Vec<_>>()})
        })
        .collect();
    let mut by_flavor: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (f, r, t) in used {
        by_flavor
            .entry(f)
            .or_default()
            .push(json!({"name": r, "total": t, "borrowed": "0"}));
    }
    let reservation: Vec<Value> = by_flavor
        .into_iter()
        .map(|(f, rs)| json!({"name": f, "resources": rs}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"cohortName": cohort, "namespaceSelector": {},
                 "resourceGroups": [{"coveredResources": resources, "flavors": flavors}]},
        "status": {"flavorsReservation": reservation}
    }))
    .unwrap()
}

fn flavor(name: &str, spec: Value) -> ResourceFlavor {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

fn run(
    job: &TFJob,
    cq: &ClusterQueue,
    all: &[ClusterQueue],
    flavors: &[ResourceFlavor],
) -> Admission {
    let lq = lq();
    admit(
        Input {
            local_queue: "lq",
            lq: Some(&lq),
            cq: Some(cq),
            all_cqs: all,
            flavors,
            ns_labels: None,
        },
        &pod_sets(job, &[], &Default::default()),
    )
}

fn default_flavor() -> Vec<ResourceFlavor> {
    vec![flavor("default-flavor", json!({}))]
}

#[test]
fn pod_sets_follow_kueues_order_and_exact_keys() {
    let j = job(json!({
        "Worker": replica(3, json!({"cpu": "1"})),
        "PS": replica(1, json!({"cpu": "2"})),
        "evaluator": replica(1, json!({"cpu": "1"})),
    }));
    let ps = pod_sets(&j, &[], &Default::default());
    let names: Vec<(&str, i64)> = ps.iter().map(|p| (p.name.as_str(), p.count)).collect();
    assert_eq!(names, [("ps", 1), ("worker", 3)]);
    assert_eq!(unseen_replica_keys(&j), ["evaluator"]);
    // All lowercase: Kueue builds no pod set at all.
    let lower = job(json!({"worker": replica(2, json!({"cpu": "1"}))}));
    assert!(pod_sets(&lower, &[], &Default::default()).is_empty());
}

#[test]
fn a_limit_stands_in_for_a_missing_request() {
    let j = job(
        json!({"Worker": {"replicas": 2, "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}),
    );
    let ps = pod_sets(&j, &[], &Default::default());
    assert_eq!(ps[0].per_pod.get("nvidia.com/gpu"), Some(&1000));
}

#[test]
fn a_runtime_class_overhead_counts_unless_the_pod_set_has_its_own() {
    let with = |extra: serde_json::Value| {
        let mut spec = json!({"runtimeClassName": "kata", "containers": [
            {"name": "tensorflow", "image": "i", "resources": {"requests": {"cpu": "1"}}}]});
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        job(json!({"Worker": {"replicas": 1, "template": {"spec": spec}}}))
    };
    let overheads: Overheads = BTreeMap::from([(
        "kata".to_string(),
        BTreeMap::from([(
            "cpu".to_string(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("250m".into()),
        )]),
    )]);
    let cpu = |j: &TFJob, o: &Overheads| pod_sets(j, &[], o)[0].per_pod.get("cpu").copied();
    assert_eq!(cpu(&with(json!({})), &overheads), Some(1250));
    assert_eq!(cpu(&with(json!({})), &Default::default()), Some(1000));
    assert_eq!(
        cpu(&with(json!({"overhead": {"cpu": "500m"}})), &overheads),
        Some(1500)
    );
}

#[test]
fn fits_within_unused_nominal_quota() {
    let j = job(json!({"Worker": replica(4, json!({"nvidia.com/gpu": "1"}))}));
    let q = cq(
        "cq",
        None,
        &["nvidia.com/gpu"],
        &[("default-flavor", &[("nvidia.com/gpu", "8", None)])],
        &[("default-flavor", "nvidia.com/gpu", "4")],
    );
    let a = run(&j, &q, &[], &default_flavor());
    assert_eq!(a.verdict, QueueVerdict::Fits, "{a:?}");
    assert_eq!(a.message, "");
    assert_eq!(a.flavors["worker"]["nvidia.com/gpu"], "default-flavor");
}

#[test]
fn waits_for_unused_quota_with_kueues_message() {
    // Kueue: "couldn't assign flavors to pod set worker: insufficient unused quota for
    // nvidia.com/gpu in flavor default-flavor, 1 more needed"
    let j = job(json!({"Worker": replica(3, json!({"nvidia.com/gpu": "1"}))}));
    let q = cq(
        "cq",
        None,
        &["nvidia.com/gpu"],
        &[("default-flavor", &[("nvidia.com/gpu", "4", None)])],
        &[("default-flavor", "nvidia.com/gpu", "2")],
    );
    let a = run(&j, &q, &[], &default_flavor());
    assert_eq!(a.verdict, QueueVerdict::Queued);
    assert_eq!(
        a.message,
        "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 1 more needed"
    );
    assert_eq!(
        sentence(&a, "lq"),
        "queued in ClusterQueue cq (LocalQueue lq): needs 3 nvidia.com/gpu, 2 unused in flavor default-flavor"
    );
}

#[test]
fn more_than_nominal_outside_a_cohort_is_never() {
    // Kueue: "... previously considered podsets requests (0) + current podset request (5) >
    // maximum capacity (4)"
    let j = job(json!({"Worker": replica(5, json!({"nvidia.com/gpu": "1"}))}));
    let q = cq(
        "cq",
        None,
        &["nvidia.com/gpu"],
        &[("default-flavor", &[("nvidia.com/gpu", "4", None)])],
        &[],
    );
    let a = run(&j, &q, &[], &default_flavor());
    assert_eq!(a.verdict, QueueVerdict::Never);
    assert_eq!(
        a.message,
        "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu in flavor default-flavor, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
    );
}

#[test]
fn two_pod_sets_count_the_earlier_ones_request() {
    // The two-pod-set message Kueue writes (notes §1.6): ps waits for cpu, worker can never
    // fit cpu with ps counted and waits for a GPU.
    let j = job(json!({
        "PS": replica(1, json!({"cpu": "15"})),
        "Worker": replica(1, json!({"cpu": "4", "nvidia.com/gpu": "3"})),
    }));
    let q = cq(
        "cq",
        None,
        &["cpu", "nvidia.com/gpu"],
        &[(
            "default-flavor",
            &[("cpu", "16", None), ("nvidia.com/gpu", "4", None)],
        )],
        &[
            ("default-flavor", "cpu", "7"),
            ("default-flavor", "nvidia.com/gpu", "2"),
        ],
    );
    let a = run(&j, &q, &[], &default_flavor());
    assert_eq!(a.verdict, QueueVerdict::Never);
    assert_eq!(
        a.message,
        "couldn't assign flavors to pod set ps: insufficient unused quota for cpu in flavor default-flavor, 6 more needed; couldn't assign flavors to pod set worker: insufficient quota for cpu in flavor default-flavor, previously considered podsets requests (15) + current podset request (4) > maximum capacity (16), insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 1 more needed"
    );
}

#[test]
fn a_resource_no_group_covers_is_never() {
    let j = job(json!({"Worker": replica(1, json!({"cpu": "1", "memory": "1Gi"}))}));
    let q = cq(
        "cq",
        None,
        &["cpu"],
        &[("default-flavor", &[("cpu", "4", None)])],
        &[],
    );
    let a = run(&j, &q, &[], &default_flavor());
    assert_eq!(a.verdict, QueueVerdict::Never);
    assert_eq!(
        a.message,
        "couldn't assign flavors to pod set worker: resource memory unavailable in ClusterQueue"
    );
}

#[test]
fn borrowing_within_the_cohort_up_to_the_limit() {
    let gpu = ["nvidia.com/gpu"];
    let me = cq(
        "cq",
        Some("org"),
        &gpu,
        &[("a100", &[("nvidia.com/gpu", "4", Some("2"))])],
        &[],
    );
    let other = cq(
        "other",
        Some("org"),
        &gpu,
        &[("a100", &[("nvidia.com/gpu", "4", None)])],
        &[],
    );
    let all = [me.clone(), other.clone()];
    let flavors = [flavor("a100", json!({}))];
    let six = job(json!({"Worker": replica(6, json!({"nvidia.com/gpu": "1"}))}));
    assert_eq!(run(&six, &me, &all, &flavors).verdict, QueueVerdict::Fits);
    // Nominal 4 + borrowingLimit 2 is the most it can ever get.
    let seven = job(json!({"Worker": replica(7, json!({"nvidia.com/gpu": "1"}))}));
    let a = run(&seven, &me, &all, &flavors);
    assert_eq!(a.verdict, QueueVerdict::Never);
    assert!(
        a.message.ends_with("> maximum capacity (6)"),
        "{}",
        a.message
    );
    // The lender uses 3 of its 4: only 1 can be borrowed now, so 6 waits.
    let busy = cq(
        "other",
        Some("org"),
        &gpu,
        &[("a100", &[("nvidia.com/gpu", "4", None)])],
        &[("a100", "nvidia.com/gpu", "3")],
    );
    let a = run(&six, &me, &[me.clone(), busy], &flavors);
    assert_eq!(a.verdict, QueueVerdict::Queued);
    assert!(a.message.contains("1 more needed"), "{}", a.message);
}

#[test]
fn a_tainted_flavor_is_skipped_and_the_next_ones_labels_applied() {
    let j = job(json!({"Worker": replica(2, json!({"nvidia.com/gpu": "1"}))}));
    let q = cq(
        "cq",
        None,
        &["nvidia.com/gpu"],
        &[
            ("spot", &[("nvidia.com/gpu", "8", None)]),
            ("a100", &[("nvidia.com/gpu", "8", None)]),
        ],
        &[],
    );
    let flavors = [
        flavor(
            "spot",
            json!({"nodeTaints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}]}),
        ),
        flavor(
            "a100",
            json!({"nodeLabels": {"gpu": "a100"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}),
        ),
    ];
    let a = run(&j, &q, &[], &flavors);
    assert_eq!(a.verdict, QueueVerdict::Fits, "{a:?}");
    assert_eq!(a.flavors["worker"]["nvidia.com/gpu"], "a100");
    let mut admitted = j.clone();
    apply_flavors(&mut admitted, &a, &flavors);
    let spec = admitted.spec.tf_replica_specs["Worker"]
        .template
        .spec
        .clone()
        .unwrap();
    assert_eq!(spec.node_selector.unwrap()["gpu"], "a100");
    assert_eq!(spec.tolerations.unwrap()[0].key.as_deref(), Some("gpu"));
}

#[test]
fn missing_queues_and_selectors() {
    let j = job(json!({"Worker": replica(1, json!({"cpu": "1"}))}));
    let sets = pod_sets(&j, &[], &Default::default());
    let none = admit(
        Input {
            local_queue: "lq",
            lq: None,
            cq: None,
            all_cqs: &[],
            flavors: &[],
            ns_labels: None,
        },
        &sets,
    );
    assert_eq!(none.missing, Some(Missing::LocalQueue));
    assert_eq!(none.message, "LocalQueue lq doesn't exist");
    let lq = lq();
    let no_cq = admit(
        Input {
            local_queue: "lq",
            lq: Some(&lq),
            cq: None,
            all_cqs: &[],
            flavors: &[],
            ns_labels: None,
        },
        &sets,
    );
    assert_eq!(no_cq.missing, Some(Missing::ClusterQueue("cq".into())));
    assert_eq!(no_cq.message, "ClusterQueue cq doesn't exist");
    // A nil namespaceSelector selects no namespace.
    let mut closed = cq(
        "cq",
        None,
        &["cpu"],
        &[("default-flavor", &[("cpu", "4", None)])],
        &[],
    );
    closed.spec.namespace_selector = None;
    let a = run(&j, &closed, &[], &default_flavor());
    assert_eq!(a.verdict, QueueVerdict::Never);
    assert_eq!(
        a.message,
        "workload namespace doesn't match ClusterQueue selector"
    );
    closed.spec.namespace_selector = Some(json!({}));
    closed.spec.stop_policy = Some("Hold".into());
    let a = run(&j, &closed, &[], &default_flavor());
    assert_eq!(a.verdict, QueueVerdict::Queued);
    assert_eq!(a.message, "ClusterQueue cq is inactive");
}

#[test]
fn pods_count_only_when_the_queue_covers_them() {
    let j = job(json!({"Worker": replica(3, json!({"cpu": "1"}))}));
    let q = cq(
        "cq",
        None,
        &["cpu", "pods"],
        &[(
            "default-flavor",
            &[("cpu", "10", None), ("pods", "2", None)],
        )],
        &[],
    );
    let a = run(&j, &q, &[], &default_flavor());
    assert_eq!(a.verdict, QueueVerdict::Never);
    assert!(
        a.message
            .contains("insufficient quota for pods in flavor default-flavor, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"),
        "{}",
        a.message
    );
}
