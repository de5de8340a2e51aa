//! The job's status as the operator writes it: `setCondition` (pkg/util/status.go), the
//! per-replica counts and the Running/Succeeded/Failed rules of `UpdateJobStatus`, and the
//! write itself (with the condition log the benchmarks read).

use super::*;

pub(super) fn has_cond(status: &Value, t: &str) -> bool {
    status["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == t && c["status"] == "True"))
}

/// `setCondition` from pkg/util/status.go.
pub(crate) fn set_condition(
    status: &mut Value,
    ctype: &str,
    cstatus: &str,
    reason: &str,
    message: &str,
) {
    if has_cond(status, "Failed") {
        return;
    }
    let conds: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    let cur = conds.iter().find(|c| c["type"] == ctype);
    if let Some(c) = cur
        && c["status"] == cstatus
        && c["reason"] == reason
    {
        return;
    }
    let now = now_rfc3339();
    let mut cond = json!({"type": ctype, "status": cstatus, "reason": reason, "message": message, "lastUpdateTime": now, "lastTransitionTime": now});
    if let Some(c) = cur
        && c["status"] == cstatus
    {
        cond["lastTransitionTime"] = c["lastTransitionTime"].clone();
    }
    let mut out: Vec<Value> = Vec::new();
    for mut c in conds {
        let t = c["type"].as_str().unwrap_or("").to_string();
        if (ctype == "Restarting" && t == "Running")
            || (ctype == "Running" && t == "Restarting")
            || t == ctype
        {
            continue;
        }
        if (ctype == "Failed" || ctype == "Succeeded") && t == "Running" {
            c["status"] = json!("False");
        }
        out.push(c);
    }
    out.push(cond);
    status["conditions"] = json!(out);
}

pub(super) fn update_job_status(
    sh: &Shared,
    job: &Value,
    specs: &BTreeMap<String, Value>,
    pods: &[Arc<Value>],
    status: &mut Value,
) {
    let ns = job["metadata"]["namespace"].as_str().unwrap_or("");
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    if status["startTime"].is_null() {
        status["startTime"] = json!(now_rfc3339());
    }
    let worker0_completed = specs.contains_key("Worker")
        && pods.iter().any(|p| {
            p["metadata"]["labels"][L_TYPE] == "worker"
                && index_of(p) == Some(0)
                && phase(p) == "Succeeded"
                && exit_code(p) == Some(0)
        });
    let all_workers = job["spec"]["successPolicy"] == "AllWorkers";
    let chief = contains_chief(specs);
    // Read before the loop, as the operator does (tfjob_controller.go UpdateJobStatus,
    // `existingRestartingCondition`): a Running condition set below drops Restarting
    // (setCondition), and a replica restarted in this very pass must not fail the job because a
    // peer still runs.
    let existing_restarting = status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Restarting").cloned());
    for rtype in KNOWN {
        let Some(rs) = specs.get(rtype) else { continue };
        let st = &status["replicaStatuses"][rtype];
        let (succ, running, failed) = (
            st["succeeded"].as_i64().unwrap_or(0),
            st["active"].as_i64().unwrap_or(0),
            st["failed"].as_i64().unwrap_or(0),
        );
        let expected = replicas(rs) - succ;
        let drives = if chief {
            rtype == "Chief" || rtype == "Master"
        } else {
            rtype == "Worker"
        };
        if drives {
            let success = if chief {
                expected == 0
            } else {
                expected == 0 || (worker0_completed && !all_workers)
            };
            if chief && running > 0 {
                set_condition(
                    status,
                    "Running",
                    "True",
                    "TFJobRunning",
                    &format!("TFJob {ns}/{name} is running."),
                );
            }
            if success {
                let msg = format!("TFJob {ns}/{name} successfully completed.");
                sh.record_event(job, "TFJob", "Normal", "TFJobSucceeded", &msg, COMPONENT);
                if status["completionTime"].is_null() {
                    status["completionTime"] = json!(now_rfc3339());
                }
                set_condition(status, "Succeeded", "True", "TFJobSucceeded", &msg);
            } else if !chief && running > 0 {
                set_condition(
                    status,
                    "Running",
                    "True",
                    "TFJobRunning",
                    &format!("TFJob {ns}/{name} is running."),
                );
            }
        }
        if failed > 0 {
            if let Some(r) = &existing_restarting {
                set_condition(
                    status,
                    "Restarting",
                    "True",
                    r["reason"].as_str().unwrap_or(""),
                    r["message"].as_str().unwrap_or(""),
                );
            } else {
                if job["spec"]["enableDynamicWorker"] == json!(true) && rtype == "Worker" {
                    continue;
                }
                let msg = format!(
                    "TFJob {ns}/{name} has failed because {failed} {rtype} replica(s) failed."
                );
                sh.record_event(job, "TFJob", "Normal", "TFJobFailed", &msg, COMPONENT);
                if status["completionTime"].is_null() {
                    status["completionTime"] = json!(now_rfc3339());
                }
                set_condition(status, "Failed", "True", "TFJobFailed", &msg);
            }
        }
    }
}

pub(super) fn write_status(sh: &Shared, ns: &str, name: &str, old: &Value, new: &Value) {
    if old == new {
        return;
    }
    let new2 = new.clone();
    let old2 = old.clone();
    let mut applied = false;
    let written = sh.store.modify("tfjobs", ns, name, |j| {
        // Optimistic, as the real operator's status update with its resourceVersion: a status
        // someone else changed since this reconcile read it is not overwritten (that write
        // re-queues the job, and the next pass starts from it).
        if !same_status(&j["status"], &old2) {
            return false;
        }
        j["status"] = new2.clone();
        true
    });
    if let Some(stored) = &written {
        applied = same_status(&stored["status"], new);
    }
    if applied {
        log_new_conditions(sh, name, old, new);
    }
}

/// An absent status and an empty one are the same status.
fn same_status(a: &Value, b: &Value) -> bool {
    let empty = json!({});
    let norm = |v: &Value| {
        if v.is_null() {
            empty.clone()
        } else {
            v.clone()
        }
    };
    norm(a) == norm(b)
}

pub(super) fn log_new_conditions(sh: &Shared, name: &str, old: &Value, new: &Value) {
    let now = Instant::now();
    let olds: Vec<&Value> = old["conditions"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut log = sh.condition_log.lock().unwrap();
    for c in new["conditions"].as_array().into_iter().flatten() {
        let same = olds.iter().any(|o| {
            o["type"] == c["type"] && o["status"] == c["status"] && o["reason"] == c["reason"]
        });
        if !same && c["status"] == "True" {
            log.push((
                name.to_string(),
                c["type"].as_str().unwrap_or("").to_string(),
                now,
            ));
        }
    }
}

/// Writes a condition to a TFJob's status right now (benchmarks); returns the write instant.
pub(crate) fn write_condition(
    sh: &Shared,
    ns: &str,
    name: &str,
    ctype: &str,
    cstatus: &str,
    reason: &str,
    message: &str,
) -> Option<Instant> {
    // Read-modify-write in one step, so a reconcile in flight cannot erase it.
    let at = Instant::now();
    // The status the write started from (the last attempt's, when `modify` retried).
    let before = std::cell::RefCell::new(json!({}));
    let stored = sh.store.modify("tfjobs", ns, name, |j| {
        let old = j.get("status").cloned().unwrap_or(json!({}));
        *before.borrow_mut() = old.clone();
        let mut st = if old.is_object() { old } else { json!({}) };
        set_condition(&mut st, ctype, cstatus, reason, message);
        j["status"] = st;
        true
    })?;
    log_new_conditions(sh, name, &before.borrow(), &stored["status"]);
    Some(at)
}
