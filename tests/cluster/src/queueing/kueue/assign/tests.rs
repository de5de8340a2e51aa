//! Messages checked against the examples the reference notes quote from Kueue v0.19
//! (queueing.md §1.6), and the quota tree against `resource_node.go`'s rules.

use serde_json::json;

use super::*;

fn cq(
    name: &str,
    cohort: Option<&str>,
    quotas: &[(&str, i128, Option<i128>, Option<i128>)],
) -> ClusterQueue {
    ClusterQueue {
        name: name.into(),
        cohort: cohort.map(String::from),
        groups: vec![Group {
            covered: quotas.iter().map(|q| q.0.to_string()).collect(),
            flavors: vec![(
                "default-flavor".into(),
                quotas
                    .iter()
                    .map(|(r, n, b, l)| {
                        (
                            r.to_string(),
                            Quota {
                                nominal: n * 1000,
                                borrowing_limit: b.map(|b| b * 1000),
                                lending_limit: l.map(|l| l * 1000),
                            },
                        )
                    })
                    .collect(),
            )],
        }],
    }
}

fn snap(queues: Vec<ClusterQueue>, used: &[(&str, &str, i128)]) -> Snapshot {
    let mut s = Snapshot::default();
    for q in queues {
        s.queues.insert(q.name.clone(), q);
    }
    for (q, r, v) in used {
        s.usage.insert(
            (q.to_string(), "default-flavor".into(), r.to_string()),
            v * 1000,
        );
    }
    s
}

fn ps(name: &str, reqs: &[(&str, i128)]) -> PodSetRequest {
    PodSetRequest {
        name: name.into(),
        count: 1,
        requests: reqs
            .iter()
            .map(|(r, v)| (r.to_string(), v * 1000))
            .collect(),
        ..Default::default()
    }
}

fn flavors() -> BTreeMap<String, Value> {
    [("default-flavor".to_string(), json!({}))]
        .into_iter()
        .collect()
}

#[test]
fn unused_quota_shortfall() {
    let q = cq("cq", None, &[("nvidia.com/gpu", 4, None, None)]);
    let s = snap(vec![q.clone()], &[("cq", "nvidia.com/gpu", 4)]);
    let a = assign(
        &s,
        &q,
        &[ps("worker", &[("nvidia.com/gpu", 1)])],
        &flavors(),
    );
    assert!(!a.fits());
    assert_eq!(a.mode(), Mode::Preempt);
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 1 more needed"
    );
    assert_eq!(a.granular_reason(), "WaitingForQuota");
}

#[test]
fn above_maximum_capacity_never_fits() {
    let q = cq("cq", None, &[("nvidia.com/gpu", 4, None, None)]);
    let s = snap(vec![q.clone()], &[]);
    let a = assign(
        &s,
        &q,
        &[ps("worker", &[("nvidia.com/gpu", 5)])],
        &flavors(),
    );
    assert_eq!(a.mode(), Mode::NoFit);
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu in flavor default-flavor, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
    );
    assert_eq!(a.granular_reason(), "ExceedsMaxQuota");
}

#[test]
fn two_pod_sets_count_earlier_requests() {
    let q = cq(
        "cq",
        None,
        &[("cpu", 16, None, None), ("nvidia.com/gpu", 4, None, None)],
    );
    let s = snap(
        vec![q.clone()],
        &[("cq", "cpu", 7), ("cq", "nvidia.com/gpu", 1)],
    );
    let a = assign(
        &s,
        &q,
        &[
            ps("ps", &[("cpu", 15)]),
            ps("worker", &[("cpu", 4), ("nvidia.com/gpu", 4)]),
        ],
        &flavors(),
    );
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set ps: insufficient unused quota for cpu in flavor default-flavor, 6 more needed; couldn't assign flavors to pod set worker: insufficient quota for cpu in flavor default-flavor, previously considered podsets requests (15) + current podset request (4) > maximum capacity (16), insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 1 more needed"
    );
}

#[test]
fn fits_and_reserves() {
    let q = cq(
        "cq",
        None,
        &[("cpu", 16, None, None), ("nvidia.com/gpu", 4, None, None)],
    );
    let mut s = snap(vec![q.clone()], &[]);
    let req = [
        ps("ps", &[("cpu", 4)]),
        ps("worker", &[("cpu", 12), ("nvidia.com/gpu", 3)]),
    ];
    let a = assign(&s, &q, &req, &flavors());
    assert!(a.fits(), "{}", a.message());
    assert_eq!(a.message(), "");
    assert_eq!(a.pod_sets[1].flavors["nvidia.com/gpu"], "default-flavor");
    s.add("cq", &a);
    assert_eq!(s.available(&q, "default-flavor", "cpu"), 0);
    assert_eq!(s.available(&q, "default-flavor", "nvidia.com/gpu"), 1000);
    let again = assign(&s, &q, &req, &flavors());
    assert_eq!(again.mode(), Mode::Preempt);
}

#[test]
fn resource_not_covered_and_flavor_missing() {
    let q = cq("cq", None, &[("nvidia.com/gpu", 4, None, None)]);
    let s = snap(vec![q.clone()], &[]);
    let a = assign(
        &s,
        &q,
        &[ps("worker", &[("cpu", 1), ("nvidia.com/gpu", 1)])],
        &flavors(),
    );
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set worker: resource cpu unavailable in ClusterQueue"
    );
    assert_eq!(a.granular_reason(), "NoMatchingFlavor");
    let none = assign(
        &s,
        &q,
        &[ps("worker", &[("nvidia.com/gpu", 1)])],
        &BTreeMap::new(),
    );
    assert_eq!(
        none.message(),
        "couldn't assign flavors to pod set worker: flavor default-flavor not found"
    );
}

#[test]
fn cohort_borrowing_and_limits() {
    let a = cq("a", Some("c"), &[("nvidia.com/gpu", 4, Some(2), None)]);
    let b = cq("b", Some("c"), &[("nvidia.com/gpu", 4, None, Some(1))]);
    let s = snap(vec![a.clone(), b.clone()], &[]);
    // a: nominal 4 + at most 2 borrowed; b lends only 1 of its 4, so b keeps 3 guaranteed.
    assert_eq!(s.potential(&a, "default-flavor", "nvidia.com/gpu"), 5000);
    assert_eq!(s.potential(&b, "default-flavor", "nvidia.com/gpu"), 8000);
    let used = snap(vec![a.clone(), b.clone()], &[("a", "nvidia.com/gpu", 5)]);
    assert_eq!(used.available(&a, "default-flavor", "nvidia.com/gpu"), 0);
    assert_eq!(used.borrowed(&a, "default-flavor", "nvidia.com/gpu"), 1000);
    // b still has its guaranteed 3 whatever a borrowed.
    assert_eq!(used.available(&b, "default-flavor", "nvidia.com/gpu"), 3000);
    let msg = assign(
        &used,
        &a,
        &[ps("worker", &[("nvidia.com/gpu", 6)])],
        &flavors(),
    )
    .message();
    assert!(msg.ends_with("> maximum capacity (5)"), "{msg}");
}

#[test]
fn taints_and_node_labels_pick_the_next_flavor() {
    let mut q = cq("cq", None, &[("nvidia.com/gpu", 4, None, None)]);
    let mut second = q.groups[0].flavors[0].clone();
    second.0 = "a100".into();
    q.groups[0].flavors.push(second);
    let s = snap(vec![q.clone()], &[]);
    let fl: BTreeMap<String, Value> = [
        (
            "default-flavor".to_string(),
            json!({"nodeTaints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}]}),
        ),
        ("a100".to_string(), json!({"nodeLabels": {"gpu": "a100"}})),
    ]
    .into_iter()
    .collect();
    let a = assign(&s, &q, &[ps("worker", &[("nvidia.com/gpu", 1)])], &fl);
    assert!(a.fits());
    assert_eq!(a.pod_sets[0].flavors["nvidia.com/gpu"], "a100");
    let mut p = ps("worker", &[("nvidia.com/gpu", 1)]);
    p.node_selector.insert("gpu".into(), "h100".into());
    let none = assign(&s, &q, &[p], &fl);
    assert_eq!(
        none.message(),
        "couldn't assign flavors to pod set worker: flavor a100 doesn't match node affinity, untolerated taint spot=true:NoSchedule in flavor default-flavor"
    );
}
