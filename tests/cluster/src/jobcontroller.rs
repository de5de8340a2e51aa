//! The Kubernetes Job controller for the Jobs JobSet makes (kubernetes
//! `pkg/controller/job/job_controller.go` `manageJob`, `indexed_job_utils.go`,
//! `pod_failure_policy.go`, `success_policy.go`): Indexed pods named `<job>-<i>-<random>` with
//! hostname `<job>-<i>`, the completion-index annotation and label, JOB_COMPLETION_INDEX
//! appended to every container that lacks it, at most `parallelism` active; a failed pod counts
//! against `backoffLimit` unless the pod failure policy decides (FailJob / Ignore); Complete
//! once every index succeeded or the Job's successPolicy is met (remaining pods deleted);
//! suspend deletes active pods. Mirrors the real controller on purpose; shares no code with
//! the plugin.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::controller::{Changes, Controller};
use crate::state::Shared;
use crate::store::StoreEvent;
use crate::util::{now_rfc3339, random_suffix};

const INDEX_KEY: &str = "batch.kubernetes.io/job-completion-index";
const COMPONENT: &str = "job-controller";

type Key = (String, String);

/// Runs the controller until the cluster stops (kube-controller-manager always runs it).
pub(crate) async fn run(sh: Arc<Shared>) {
    let delay = Duration::from_millis(sh.scenario.timing.reconcile_ms);
    Changes::subscribe(&sh)
        .run(
            delay,
            Loop {
                sh,
                dirty: BTreeSet::new(),
            },
        )
        .await;
}

/// The Job controller in the shared controller loop: the Jobs a change touched are due.
struct Loop {
    sh: Arc<Shared>,
    dirty: BTreeSet<Key>,
}

impl Controller for Loop {
    fn note(&mut self, ev: &StoreEvent) {
        note(ev, &mut self.dirty);
    }
    fn lagged(&mut self) {
        self.dirty.extend(all(&self.sh));
    }
    fn due(&mut self) -> bool {
        !self.dirty.is_empty()
    }
    fn reconcile(&mut self) {
        for key in std::mem::take(&mut self.dirty) {
            reconcile(&self.sh, &key);
        }
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

fn all(sh: &Shared) -> BTreeSet<Key> {
    sh.store
        .list("jobs", None)
        .0
        .iter()
        .map(|j| {
            (
                s(&j["metadata"], "namespace").into(),
                s(&j["metadata"], "name").into(),
            )
        })
        .collect()
}

fn note(ev: &StoreEvent, dirty: &mut BTreeSet<Key>) {
    match ev.resource.as_str() {
        "jobs" if ev.kind != crate::store::EventType::Deleted => {
            dirty.insert((
                ev.namespace.clone(),
                s(&ev.object["metadata"], "name").into(),
            ));
        }
        "pods" => {
            for o in ev.object["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if o["kind"] == "Job" && o["controller"] == json!(true) {
                    dirty.insert((ev.namespace.clone(), s(o, "name").into()));
                }
            }
        }
        _ => {}
    }
}

fn cond(obj: &Value, t: &str) -> bool {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == t && c["status"] == "True")
}

fn phase(p: &Value) -> &str {
    p["status"]["phase"].as_str().unwrap_or("Pending")
}

fn index_of(p: &Value) -> Option<i64> {
    p["metadata"]["annotations"][INDEX_KEY]
        .as_str()?
        .parse()
        .ok()
}

/// "0-2,4": the API's compressed list of indexes (`completedIndexes`).
fn compress(ix: &BTreeSet<i64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = ix.iter().peekable();
    while let Some(&a) = it.next() {
        let mut b = a;
        while it.peek().is_some_and(|&&n| n == b + 1) {
            b = *it.next().expect("peeked");
        }
        out.push(if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        });
    }
    out.join(",")
}

/// Whether `succeededIndexes` ("0", "1-3,5") covers every index it names.
fn covers(spec: &str, done: &BTreeSet<i64>) -> bool {
    spec.split(',').filter(|p| !p.is_empty()).all(|part| {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        match (a.trim().parse::<i64>(), b.trim().parse::<i64>()) {
            (Ok(a), Ok(b)) => (a..=b).all(|i| done.contains(&i)),
            _ => false,
        }
    })
}

/// The exit code of the failed pod that a FailJob rule matches (`matchPodFailurePolicy`).
fn fail_job_rule(job: &Value, pod: &Value) -> Option<(usize, String, i64)> {
    let rules = job["spec"]["podFailurePolicy"]["rules"].as_array()?;
    for (i, r) in rules.iter().enumerate() {
        let req = &r["onExitCodes"];
        if !req.is_object() {
            continue;
        }
        let values: Vec<i64> = req["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_i64)
            .collect();
        for cs in pod["status"]["containerStatuses"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if req["containerName"].is_string() && cs["name"] != req["containerName"] {
                continue;
            }
            let Some(code) = cs["state"]["terminated"]["exitCode"].as_i64() else {
                continue;
            };
            if code == 0 {
                continue;
            }
            let hit = match s(req, "operator") {
                "In" => values.contains(&code),
                "NotIn" => !values.contains(&code),
                _ => false,
            };
            if hit {
                return (s(r, "action") == "FailJob").then(|| (i, s(cs, "name").to_string(), code));
            }
        }
    }
    None
}

fn reconcile(sh: &Shared, key: &Key) {
    let (ns, name) = key;
    let Some(job) = sh.store.get("jobs", ns, name) else {
        return;
    };
    if cond(&job, "Complete") || cond(&job, "Failed") {
        return;
    }
    let uid = s(&job["metadata"], "uid").to_string();
    let spec = &job["spec"];
    let indexed = spec["completionMode"] == "Indexed";
    let parallelism = spec["parallelism"].as_i64().unwrap_or(1);
    let completions = spec["completions"].as_i64().unwrap_or(parallelism.max(1));
    let backoff_limit = spec["backoffLimit"].as_i64().unwrap_or(6);
    let pods: Vec<Value> = sh
        .store
        .list("pods", Some(ns))
        .0
        .into_iter()
        .filter(|p| {
            p["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|o| o["uid"] == uid.as_str() && o["controller"] == json!(true))
        })
        .collect();
    let active: Vec<&Value> = pods
        .iter()
        .filter(|p| !matches!(phase(p), "Succeeded" | "Failed"))
        .collect();
    let succeeded: BTreeSet<i64> = pods
        .iter()
        .filter(|p| phase(p) == "Succeeded")
        .filter_map(index_of)
        .collect();
    let failed: Vec<&Value> = pods.iter().filter(|p| phase(p) == "Failed").collect();
    let ready = active
        .iter()
        .filter(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .count();
    let now = now_rfc3339();
    let mut status = if job["status"].is_object() {
        job["status"].clone()
    } else {
        json!({})
    };
    if status["startTime"].is_null() && spec["suspend"] != json!(true) {
        status["startTime"] = json!(now);
    }
    let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    let mut add = |t: &str, reason: &str, message: &str| {
        conditions.retain(|c| c["type"] != t);
        conditions.push(json!({"type": t, "status": "True", "reason": reason, "message": message, "lastProbeTime": now, "lastTransitionTime": now}));
    };
    let mut terminal = false;
    // Pod failure policy first, then the backoff limit (each failed pod counts once).
    let fail_rule = failed
        .iter()
        .find_map(|p| fail_job_rule(&job, p).map(|r| (r, s(&p["metadata"], "name").to_string())));
    let counted = failed
        .iter()
        .filter(|p| fail_job_rule(&job, p).is_none())
        .count() as i64;
    if let Some(((rule, container, code), pod)) = fail_rule {
        let msg = format!(
            "Container {container} for pod {ns}/{pod} failed with exit code {code} matching FailJob rule at index {rule}"
        );
        add("FailureTarget", "PodFailurePolicy", &msg);
        add("Failed", "PodFailurePolicy", &msg);
        terminal = true;
    } else if counted > backoff_limit {
        add(
            "FailureTarget",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        );
        add(
            "Failed",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        );
        terminal = true;
    } else {
        // kubernetes pkg/controller/job/success_policy.go matchSuccessPolicy: the first rule
        // met, named by its index in the message.
        let policy_met = spec["successPolicy"]["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .position(|r| {
                let by_index = r["succeededIndexes"]
                    .as_str()
                    .is_none_or(|ix| covers(ix, &succeeded));
                let by_count = r["succeededCount"]
                    .as_i64()
                    .is_none_or(|c| succeeded.len() as i64 >= c);
                by_index && by_count
            });
        let all_done = (0..completions).all(|i| succeeded.contains(&i));
        if policy_met.is_some() || all_done {
            let (reason, msg) = match policy_met {
                Some(index) if !all_done => {
                    ("SuccessPolicy", format!("Matched rules at index {index}"))
                }
                _ => (
                    "CompletionsReached",
                    "Reached expected number of succeeded pods".to_string(),
                ),
            };
            add("SuccessCriteriaMet", reason, &msg);
            add("Complete", reason, &msg);
            status["completionTime"] = json!(now);
            terminal = true;
        }
    }
    if terminal || spec["suspend"] == json!(true) {
        // Terminated: what still runs is deleted (its pods are not waited for here).
        for p in &active {
            let _ = sh.store.delete("pods", ns, s(&p["metadata"], "name"));
        }
        if spec["suspend"] == json!(true) && !terminal {
            add("Suspended", "JobSuspended", "Job suspended");
        }
    } else {
        conditions.retain(|c| c["type"] != "Suspended");
        let busy: BTreeSet<i64> = active.iter().filter_map(|p| index_of(p)).collect();
        let mut running = active.len() as i64;
        for i in 0..completions {
            if running >= parallelism {
                break;
            }
            if succeeded.contains(&i) || busy.contains(&i) {
                continue;
            }
            create_pod(sh, &job, i, indexed);
            running += 1;
        }
    }
    status["conditions"] = json!(conditions);
    status["active"] = json!(if terminal { 0 } else { active.len() });
    status["ready"] = json!(if terminal { 0 } else { ready });
    status["succeeded"] = json!(succeeded.len());
    status["failed"] = json!(failed.len());
    if indexed {
        status["completedIndexes"] = json!(compress(&succeeded));
    }
    if status != job["status"] {
        sh.store.modify("jobs", ns, name, |j| {
            if j["metadata"]["uid"] != uid.as_str() {
                return false;
            }
            j["status"] = status.clone();
            true
        });
    }
}

/// `manageJob` → pod from the template: the Job's selector labels (`batch.kubernetes.io/job-name`,
/// `controller-uid` and their legacy forms), the completion index as annotation and label
/// (PodIndexLabel, GA in 1.32), hostname `<job>-<i>`, JOB_COMPLETION_INDEX appended.
fn create_pod(sh: &Shared, job: &Value, i: i64, indexed: bool) {
    let ns = s(&job["metadata"], "namespace").to_string();
    let jname = s(&job["metadata"], "name").to_string();
    let uid = s(&job["metadata"], "uid").to_string();
    let t = &job["spec"]["template"];
    let mut labels = t["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut annotations = t["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &jname),
        ("controller-uid", &uid),
        ("job-name", &jname),
    ] {
        labels.insert(k.into(), json!(v));
    }
    let mut spec = t["spec"].clone();
    let prefix = if indexed {
        format!("{jname}-{i}-")
    } else {
        format!("{jname}-")
    };
    if indexed {
        labels.insert(INDEX_KEY.into(), json!(i.to_string()));
        annotations.insert(INDEX_KEY.into(), json!(i.to_string()));
        if spec["hostname"].is_null() {
            spec["hostname"] = json!(format!("{jname}-{i}"));
        }
        for list in ["initContainers", "containers"] {
            for c in spec[list].as_array_mut().into_iter().flatten() {
                let has = c["env"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|v| v["name"] == "JOB_COMPLETION_INDEX"));
                if !has {
                    if !c["env"].is_array() {
                        c["env"] = json!([]);
                    }
                    c["env"].as_array_mut().expect("array").push(json!({"name": "JOB_COMPLETION_INDEX",
                        "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.labels['{INDEX_KEY}']")}}}));
                }
            }
        }
    }
    let pname = format!("{prefix}{}", random_suffix());
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pname, "generateName": prefix, "namespace": ns, "labels": labels, "annotations": annotations,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": jname, "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
        "spec": spec,
    });
    crate::defaults::apply_defaults("pods", &mut pod);
    let refused = crate::podadmission::check_create(sh, &mut pod)
        .map_err(|e| e.body["message"].as_str().unwrap_or("").to_string())
        .and_then(|()| crate::admission::admit_pod(sh, &ns, &mut pod));
    match refused {
        Err(m) => sh.record_event(
            job,
            "Job",
            "Warning",
            "FailedCreate",
            &format!("Error creating: {m}"),
            COMPONENT,
        ),
        Ok(()) => match sh.store.create("pods", &ns, pod) {
            Ok(_) => sh.record_event(
                job,
                "Job",
                "Normal",
                "SuccessfulCreate",
                &format!("Created pod: {pname}"),
                COMPONENT,
            ),
            Err(e) => sh.record_event(
                job,
                "Job",
                "Warning",
                "FailedCreate",
                &format!("Error creating: {e:?}"),
                COMPONENT,
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_are_compressed_as_the_api_writes_them() {
        let ix: BTreeSet<i64> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(compress(&ix), "0-2,4,6-7");
        assert!(covers("0", &ix));
        assert!(covers("0-2,4", &ix));
        assert!(!covers("3", &ix));
    }

    #[test]
    fn a_fail_job_rule_matches_the_named_containers_exit_code() {
        let job = json!({"spec": {"podFailurePolicy": {"rules": [{"action": "FailJob",
            "onExitCodes": {"containerName": "tensorflow", "operator": "In", "values": [1, 2]}}]}}});
        let pod = |code: i64| json!({"status": {"containerStatuses": [{"name": "tensorflow", "state": {"terminated": {"exitCode": code}}}]}});
        assert_eq!(
            fail_job_rule(&job, &pod(1)),
            Some((0, "tensorflow".into(), 1))
        );
        assert_eq!(fail_job_rule(&job, &pod(137)), None);
    }
}
