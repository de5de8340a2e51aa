//! A TFJob as Kueue's TFJob integration sees it: its pod sets
//! (`pkg/controller/jobs/kubeflow/jobs/tfjob/tfjob_controller.go` `OrderedReplicaTypes`,
//! `pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go` `PodSets`), what each
//! requests (`pkg/workload/workload.go` `totalRequestsFromPodSets`), and the quantity text Kueue
//! prints (`pkg/resources/resource_formatter.go`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Resource name → milli-units (as the test cluster's scheduler counts them).
pub type Res = BTreeMap<String, i128>;

/// The replica types Kueue looks up, in this order and under these exact keys: a lowercase
/// key (which the training-operator accepts) is not a pod set.
pub const ORDERED_REPLICA_TYPES: [&str; 5] = ["Chief", "Master", "PS", "Worker", "Evaluator"];

/// `training.kubeflow.org/replica-index`, the pod index label TAS is given.
pub const REPLICA_INDEX_LABEL: &str = "training.kubeflow.org/replica-index";

/// `spec.podSets` of the Workload for `job`: one per replica type present under its exact
/// key, `count` = replicas (1 when unset), the template deep-copied with duplicate env vars
/// removed (`SanitizePodSet`: the last of each name is kept).
pub fn pod_sets(job: &Value) -> Vec<Value> {
    let specs = &job["spec"]["tfReplicaSpecs"];
    ORDERED_REPLICA_TYPES
        .iter()
        .filter_map(|rt| {
            let rs = specs.get(*rt)?;
            let mut template = rs["template"].clone();
            if !template.is_object() {
                template = json!({});
            }
            for key in ["containers", "initContainers"] {
                // get_mut, not indexing: indexing would add `key: null` to the template.
                let list = template
                    .get_mut("spec")
                    .and_then(|s| s.get_mut(key))
                    .and_then(Value::as_array_mut);
                for c in list.into_iter().flatten() {
                    dedupe_env(c);
                }
            }
            Some(json!({
                "name": rt.to_lowercase(),
                "count": rs["replicas"].as_i64().unwrap_or(1),
                "template": template,
                "topologyRequest": {"podIndexLabel": REPLICA_INDEX_LABEL},
            }))
        })
        .collect()
}

fn dedupe_env(c: &mut Value) {
    let Some(env) = c["env"].as_array() else {
        return;
    };
    let mut last: BTreeMap<String, usize> = BTreeMap::new();
    for (i, e) in env.iter().enumerate() {
        last.insert(e["name"].as_str().unwrap_or("").to_string(), i);
    }
    let kept: Vec<Value> = env
        .iter()
        .enumerate()
        .filter(|(i, e)| last.get(e["name"].as_str().unwrap_or("")) == Some(i))
        .map(|(_, e)| e.clone())
        .collect();
    c["env"] = json!(kept);
}

/// What one pod of a pod set requests, as Kueue counts it: the pod requests helper (containers
/// summed, init containers as the max, sidecars, overhead) with a limit standing in for a
/// missing request (`UseLimitsAsMissingRequestsInPod`). `pods` is not counted here.
pub fn per_pod_requests(template: &Value) -> Res {
    let pod = json!({"spec": template["spec"]});
    let mut r = crate::scheduler::pod_requests(&pod);
    r.remove("pods");
    r.retain(|_, v| *v != 0);
    r
}

/// The total a pod set requests (`count` pods).
pub fn pod_set_requests(ps: &Value) -> Res {
    let count = ps["count"].as_i64().unwrap_or(1) as i128;
    per_pod_requests(&ps["template"])
        .into_iter()
        .map(|(k, v)| (k, v * count))
        .collect()
}

/// A quantity as Kueue prints it (`ResourceQuantityString`): cpu in milli form (`9`,
/// `500m`), memory as a canonical binary or decimal quantity (`17Gi`, `1G`), anything else
/// as a whole number of units (rounded up).
pub fn quantity(resource: &str, milli: i128) -> String {
    if resource == "cpu" {
        return if milli % 1000 == 0 {
            (milli / 1000).to_string()
        } else {
            format!("{milli}m")
        };
    }
    let units = if milli >= 0 {
        (milli + 999) / 1000
    } else {
        milli / 1000
    };
    if resource == "memory" && units != 0 {
        for (s, shift) in [
            ("Ei", 60),
            ("Pi", 50),
            ("Ti", 40),
            ("Gi", 30),
            ("Mi", 20),
            ("Ki", 10),
        ] {
            if units % (1i128 << shift) == 0 {
                return format!("{}{s}", units >> shift);
            }
        }
        for (s, p) in [
            ("E", 18),
            ("P", 15),
            ("T", 12),
            ("G", 9),
            ("M", 6),
            ("k", 3),
        ] {
            let d = 10i128.pow(p);
            if units % d == 0 {
                return format!("{}{s}", units / d);
            }
        }
    }
    units.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpl(cpu: &str, gpu: Option<i64>) -> Value {
        let mut limits = json!({});
        if let Some(g) = gpu {
            limits["nvidia.com/gpu"] = json!(g);
        }
        json!({"spec": {"containers": [{"name": "tensorflow", "image": "x",
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"}],
            "resources": {"requests": {"cpu": cpu, "memory": "8Gi"}, "limits": limits}}]}})
    }

    #[test]
    fn pod_sets_follow_kueue_order_and_exact_keys() {
        let job = json!({"spec": {"tfReplicaSpecs": {
            "Worker": {"replicas": 3, "template": tmpl("4", Some(1))},
            "PS": {"template": tmpl("2", None)},
            "evaluator": {"replicas": 1, "template": tmpl("1", None)}
        }}});
        let ps = pod_sets(&job);
        let names: Vec<(&str, i64)> = ps
            .iter()
            .map(|p| (p["name"].as_str().unwrap(), p["count"].as_i64().unwrap()))
            .collect();
        // The lowercase "evaluator" key is no pod set: Kueue looks keys up exactly.
        assert_eq!(names, vec![("ps", 1), ("worker", 3)]);
        assert_eq!(
            ps[1]["topologyRequest"]["podIndexLabel"],
            REPLICA_INDEX_LABEL
        );
        let env = &ps[1]["template"]["spec"]["containers"][0]["env"];
        assert_eq!(
            env,
            &json!([{"name": "B", "value": "2"}, {"name": "A", "value": "3"}])
        );
        let r = pod_set_requests(&ps[1]);
        assert_eq!(r["cpu"], 12_000);
        assert_eq!(r["nvidia.com/gpu"], 3_000);
        assert_eq!(quantity("memory", r["memory"]), "24Gi");
        let lower = json!({"spec": {"tfReplicaSpecs": {"worker": {"template": tmpl("1", None)}}}});
        assert!(pod_sets(&lower).is_empty());
    }

    #[test]
    fn quantities_print_as_kueue_formats_them() {
        assert_eq!(quantity("cpu", 9000), "9");
        assert_eq!(quantity("cpu", 500), "500m");
        assert_eq!(quantity("memory", 17 * (1 << 30) * 1000), "17Gi");
        assert_eq!(quantity("memory", 1_000_000_000_000), "1G");
        assert_eq!(quantity("nvidia.com/gpu", 3000), "3");
        assert_eq!(quantity("nvidia.com/gpu", 0), "0");
    }
}
