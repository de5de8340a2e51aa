//! The placement model against the test cluster's scheduler and admission, on generated
//! scenarios (a seeded generator, so every run draws the same cases). For each scenario:
//! collect a snapshot through the API and predict; then create the TFJob and let the cluster
//! decide every pod (bound, `PodScheduled=False`, or refused with `FailedCreatePod`): all bound
//! → fits; otherwise the same on a cluster without the pods already bound: all bound → waits;
//! else never. Decisions are read from the cluster's state, never from elapsed time.
//!
//! Workers of one job are identical and the PS requests nothing, so the order in which a
//! scheduler takes the pods cannot change the outcome: model and cluster must agree exactly.

use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use kubectl_tfjob::model::TFJob;
use kubectl_tfjob::placement::{self, Verdict};
use serde_json::{Value, json};
use tfjob_testcluster::{NodeSpec, Scenario, Taint, TestCluster};

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize].clone()
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
}

struct Case {
    scenario: Scenario,
    job: Value,
    prebound: usize,
}

fn generate(seed: u64) -> Case {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let n_nodes = 1 + (r.next() % 4) as usize;
    let mut nodes = vec![];
    for i in 0..n_nodes {
        let mut n = NodeSpec::new(
            &format!("node-{i}"),
            r.pick(&["2", "4", "8"]),
            r.pick(&["4Gi", "8Gi", "16Gi"]),
            r.pick(&[0, 1, 2, 4]),
        );
        n.labels
            .insert("pool".into(), r.pick(&["cpu", "gpu"]).into());
        if r.chance(30) {
            n.taints.push(r.pick(&[
                Taint {
                    key: "nvidia.com/gpu".into(),
                    value: "present".into(),
                    effect: "NoSchedule".into(),
                },
                Taint {
                    key: "dedicated".into(),
                    value: "ml".into(),
                    effect: "NoExecute".into(),
                },
                Taint {
                    key: "soft".into(),
                    value: String::new(),
                    effect: "PreferNoSchedule".into(),
                },
            ]));
        }
        n.unschedulable = r.chance(15);
        nodes.push(n);
    }
    let mut objects = vec![];
    let prebound = (r.next() % 4) as usize;
    for i in 0..prebound {
        let node = format!("node-{}", r.next() % n_nodes as u64);
        let mut limits = json!({"cpu": r.pick(&["500m", "1", "2"]), "memory": "1Gi"});
        if r.chance(50) {
            limits["nvidia.com/gpu"] = json!("1");
        }
        objects.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("busy-{i}"), "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "busy", "image": "busy:1", "resources": {"limits": limits}}]}}));
    }
    if r.chance(25) {
        let (k, v) = r.pick(&[
            ("requests.nvidia.com/gpu", "2"),
            ("pods", "3"),
            ("requests.cpu", "4"),
            ("count/pods", "2"),
        ]);
        objects.push(json!({"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "team-quota", "namespace": "default"}, "spec": {"hard": {k: v}}}));
    }
    if r.chance(20) {
        let item = r.pick(&[
            json!({"type": "Container", "defaultRequest": {"cpu": "1"}, "default": {"cpu": "1"}}),
            json!({"type": "Container", "max": {"cpu": "2"}}),
        ]);
        objects.push(json!({"apiVersion": "v1", "kind": "LimitRange",
            "metadata": {"name": "limits", "namespace": "default"}, "spec": {"limits": [item]}}));
    }
    let mut worker = json!({"containers": [{"name": "tensorflow", "image": "tf:2"}]});
    if r.chance(85) {
        let mut limits =
            json!({"cpu": r.pick(&["500m", "1", "2", "4"]), "memory": r.pick(&["1Gi", "4Gi"])});
        let gpu = r.pick(&[0, 0, 1, 2]);
        if gpu > 0 {
            limits["nvidia.com/gpu"] = json!(gpu.to_string());
        }
        worker["containers"][0]["resources"] = json!({"limits": limits});
    }
    let mut tolerations = vec![];
    if r.chance(50) {
        tolerations.push(json!({"key": "nvidia.com/gpu", "operator": "Exists"}));
    }
    if r.chance(20) {
        tolerations.push(json!({"operator": "Exists"}));
    }
    if r.chance(10) {
        tolerations.push(json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}));
    }
    if !tolerations.is_empty() {
        worker["tolerations"] = json!(tolerations);
    }
    match r.next() % 5 {
        0 => worker["nodeSelector"] = json!({"pool": "gpu"}),
        1 => {
            let expr = r.pick(&[
                json!({"key": "pool", "operator": "NotIn", "values": ["cpu"]}),
                json!({"key": "pool", "operator": "Exists"}),
                json!({"key": "zone", "operator": "DoesNotExist"}),
                json!({"key": "pool", "operator": "In", "values": ["cpu"]}),
            ]);
            worker["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}});
        }
        _ => {}
    }
    let mut specs =
        json!({"Worker": {"replicas": 1 + r.next() % 3, "template": {"spec": worker.clone()}}});
    if r.chance(50) {
        let mut ps = worker;
        ps["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("resources");
        // The PS asks for nothing; a LimitRange default would give it cpu, so keep it off then.
        if !objects.iter().any(|o| o["kind"] == "LimitRange") {
            specs["PS"] = json!({"replicas": 1, "template": {"spec": ps}});
        }
    }
    let job = json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "gen", "namespace": "default"}, "spec": {"tfReplicaSpecs": specs}});
    let mut scenario = Scenario::default().with_nodes(nodes);
    for o in objects {
        scenario = scenario.with_object(o);
    }
    Case {
        scenario,
        job,
        prebound,
    }
}

async fn client(c: &TestCluster) -> Client {
    let kc = Kubeconfig::read_from(c.kubeconfig()).expect("kubeconfig");
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    Client::try_from(cfg).expect("client")
}

fn expected_pods(job: &Value) -> Vec<String> {
    let mut out = vec![];
    for (rtype, rs) in job["spec"]["tfReplicaSpecs"].as_object().unwrap() {
        for i in 0..rs["replicas"].as_u64().unwrap_or(1) {
            out.push(format!("gen-{}-{i}", rtype.to_lowercase()));
        }
    }
    out
}

/// Creates the job and returns whether every pod got bound, once the cluster decided each one.
async fn run_job(c: &TestCluster, job: &Value) -> bool {
    let cl = client(c).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kubeflow.org", "v1", "TFJob"),
        "tfjobs",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(cl, "default", &ar);
    api.create(
        &PostParams::default(),
        &serde_json::from_value(job.clone()).unwrap(),
    )
    .await
    .expect("create TFJob");
    let names = expected_pods(job);
    let decided = |c: &TestCluster| {
        let events = c.list("events", Some("default"));
        names.iter().all(|n| {
            let refused = events.iter().any(|e| {
                e["reason"] == "FailedCreatePod"
                    && e["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(&format!("pods \"{n}\"")))
            });
            refused
                || c.get("pods", Some("default"), n).is_some_and(|p| {
                    p["spec"]["nodeName"].is_string()
                        || p["status"]["conditions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|cd| cd["type"] == "PodScheduled" && cd["status"] == "False")
                })
        })
    };
    // The bound is only a safety net against a hang; the outcome comes from the state.
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while !decided(c) {
        assert!(
            std::time::Instant::now() < end,
            "the cluster never decided every pod of {job}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    names.iter().all(|n| {
        c.get("pods", Some("default"), n)
            .is_some_and(|p| p["spec"]["nodeName"].is_string())
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn model_verdict_equals_the_test_cluster_on_generated_scenarios() {
    const CASES: u64 = 40;
    let mut seen = std::collections::BTreeMap::new();
    for seed in 0..CASES {
        let case = generate(seed);
        let job: TFJob = serde_json::from_value(case.job.clone()).unwrap();
        let c = TestCluster::start_async(case.scenario.clone()).await;
        let snap = placement::collect(&client(&c).await, "default", &job)
            .await
            .expect("collect");
        let report = placement::check(&snap, &job);
        let actual = if run_job(&c, &case.job).await {
            Verdict::Fits
        } else if case.prebound == 0 {
            Verdict::Never
        } else {
            drop(c);
            let mut empty = case.scenario.clone();
            empty.objects.retain(|o| o["kind"] != "Pod");
            let c2 = TestCluster::start_async(empty).await;
            if run_job(&c2, &case.job).await {
                Verdict::Waits
            } else {
                Verdict::Never
            }
        };
        assert_eq!(
            report.verdict(),
            actual,
            "seed {seed}: model said {:?} ({}), cluster did {:?}\nscenario: {}\njob: {}\nquota: {:?}",
            report.verdict(),
            report.placement.reason,
            actual,
            serde_json::to_string(&case.scenario).unwrap(),
            case.job,
            report.quota
        );
        *seen.entry(actual).or_insert(0) += 1;
    }
    eprintln!("verdicts over {CASES} generated scenarios: {seen:?}");
    // The generator must exercise every verdict, or the comparison proves little.
    for v in [Verdict::Fits, Verdict::Waits, Verdict::Never] {
        assert!(
            seen.contains_key(&v),
            "no scenario produced {v:?}: {seen:?}"
        );
    }
}
