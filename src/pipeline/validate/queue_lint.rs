//! Lints for a job meant for Kueue (the `kueue.x-k8s.io/queue-name` label): what Kueue v0.19 would
//! make of it. Warnings only: the API server stores the job either way.
//!
//! - Kueue looks replica types up under their exact keys (Kueue
//!   `pkg/controller/jobs/kubeflow/jobs/tfjob/tfjob_controller.go` `OrderedReplicaTypes`), so a
//!   lowercase key is left out of the Workload's pod sets; with none left, the API server refuses
//!   the Workload ("spec.podSets in body should have at least 1 items") and the job stays
//!   suspended for good.
//! - Kueue's validating webhook requires the label to be a DNS-1123 subdomain
//!   (`pkg/controller/jobframework/validation.go`).

use serde_json::{Map, Value};

use super::{Finding, Severity};
use crate::cluster::queue::{POD_SET_ORDER, QUEUE_LABEL};

pub fn check(root: &Map<String, Value>, replicas: &Map<String, Value>, out: &mut Vec<Finding>) {
    let Some(queue) = root
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(QUEUE_LABEL))
        .and_then(Value::as_str)
        .filter(|q| !q.is_empty())
    else {
        return;
    };
    let path = format!("metadata.labels[{QUEUE_LABEL}]");
    if !is_dns1123_subdomain(queue) {
        out.push(
            Finding::new(
                Severity::Warning,
                "kueue-queue-name",
                path.clone(),
                format!(
                    "{queue:?} is not a DNS-1123 subdomain: Kueue's webhook refuses the job at create"
                ),
            )
            .with_hint(Some(
                "use the LocalQueue's name (lowercase letters, digits, '-' and '.')".into(),
            )),
        );
    }
    let unseen: Vec<&String> = replicas
        .keys()
        .filter(|k| !POD_SET_ORDER.contains(&k.as_str()))
        .collect();
    if unseen.is_empty() {
        return;
    }
    let names = unseen
        .iter()
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let message = if unseen.len() == replicas.len() {
        format!(
            "queued in Kueue LocalQueue {queue:?}, but no replica key is one Kueue reads ({}): its Workload would have no pod sets, the API server refuses that, and the job stays suspended",
            POD_SET_ORDER.join(", ")
        )
    } else {
        format!(
            "queued in Kueue LocalQueue {queue:?}, but Kueue reads replica types by their exact key: {names} would be left out of the quota it reserves"
        )
    };
    out.push(
        Finding::new(Severity::Warning, "kueue-pod-sets", path, message).with_hint(Some(format!(
            "rename {names} to the canonical case (e.g. Worker, PS)"
        ))),
    );
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(labels: Value, replicas: Value) -> Vec<Finding> {
        let root = json!({"metadata": {"labels": labels}});
        let mut out = vec![];
        check(
            root.as_object().unwrap(),
            replicas.as_object().unwrap(),
            &mut out,
        );
        out
    }

    #[test]
    fn lowercase_keys_under_a_queue_label_warn() {
        let all_lower = run(
            json!({QUEUE_LABEL: "team-a"}),
            json!({"worker": {}, "ps": {}}),
        );
        assert_eq!(all_lower.len(), 1);
        assert_eq!(all_lower[0].severity, Severity::Warning);
        assert!(
            all_lower[0].message.contains("no pod sets"),
            "{:?}",
            all_lower
        );
        let mixed = run(
            json!({QUEUE_LABEL: "team-a"}),
            json!({"Worker": {}, "ps": {}}),
        );
        assert!(
            mixed[0].message.contains("\"ps\" would be left out"),
            "{:?}",
            mixed
        );
        assert!(run(json!({QUEUE_LABEL: "team-a"}), json!({"Worker": {}})).is_empty());
        // No label: Kueue ignores the job, nothing to say.
        assert!(run(json!({}), json!({"worker": {}})).is_empty());
    }

    #[test]
    fn a_label_kueues_webhook_refuses_warns() {
        let f = run(json!({QUEUE_LABEL: "Team_A"}), json!({"Worker": {}}));
        assert_eq!(f[0].rule, "kueue-queue-name");
    }
}
