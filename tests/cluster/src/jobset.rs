//! A simulated JobSet v0.12.0 (kubernetes-sigs/jobset): its CRD (a minimal copy of the fields,
//! the Job template left open), its webhooks (`pkg/webhooks/jobset_webhook.go` `Default` and
//! `ValidateCreate`) and its controller (`pkg/controllers/jobset_controller.go`): child Jobs
//! `<js>-<rjob>-<i>` with the JobSet labels and annotations on Jobs and their pod templates,
//! the headless Service, the Completed/Failed/Suspended conditions and replicatedJobsStatus.
//! Source of truth: the reference notes `jobset/jobset.md` §1–4. Written for the test cluster
//! alone; it shares nothing with the plugin.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::controller::{Changes, Controller};
use crate::scenario::OperatorMode;
use crate::state::Shared;
use crate::status::ApiError;
use crate::util::{dns1035_errors, dns1123_subdomain_errors, now_rfc3339};

const GROUP: &str = "jobset.x-k8s.io";
const CRD_NAME: &str = "jobsets.jobset.x-k8s.io";
/// Where the upstream manifests install the controller.
pub(crate) const NAMESPACE: &str = "jobset-system";
const DEPLOYMENT: &str = "jobset-controller-manager";
const K: &str = "jobset.sigs.k8s.io/";

fn spec_schema() -> Value {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let rjob = json!({"type": "object", "required": ["name", "template"], "properties": {
        "name": {"type": "string"},
        "groupName": {"type": "string", "default": "default"},
        "replicas": {"type": "integer", "format": "int32", "default": 1},
        "dependsOn": {"type": "array", "maxItems": 1, "items": open},
        "template": open
    }});
    let network = json!({"type": "object", "properties": {
        "enableDNSHostnames": {"type": "boolean"},
        "subdomain": {"type": "string"},
        "publishNotReadyAddresses": {"type": "boolean"}
    }});
    let success = json!({"type": "object", "required": ["operator"], "properties": {
        "operator": {"type": "string", "enum": ["All", "Any"]},
        "targetReplicatedJobs": {"type": "array", "items": {"type": "string"}}
    }});
    json!({"type": "object", "properties": {
        "replicatedJobs": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"], "items": rjob},
        "network": network,
        "successPolicy": success,
        "failurePolicy": open, "startupPolicy": open, "coordinator": open,
        "volumeClaimPolicies": {"type": "array", "items": open},
        "suspend": {"type": "boolean"},
        "managedBy": {"type": "string"},
        "ttlSecondsAfterFinished": {"type": "integer", "format": "int32", "minimum": 0}
    }})
}

fn crd() -> Value {
    let schema = json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": spec_schema(),
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    }});
    let columns = json!([
        {"jsonPath": ".status.terminalState", "name": "TerminalState", "type": "string"},
        {"jsonPath": ".status.restarts", "name": "Restarts", "type": "string"},
        {"jsonPath": ".status.conditions[?(@.type==\"Completed\")].status", "name": "Completed", "type": "string"},
        {"jsonPath": ".spec.suspend", "name": "Suspended", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}
    ]);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "annotations": {"controller-gen.kubebuilder.io/version": "v0.17.2"}},
        "spec": {
            "group": GROUP,
            "names": {"kind": "JobSet", "listKind": "JobSetList", "plural": "jobsets", "singular": "jobset"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha2", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": schema}
            }]
        }
    })
}

fn deployment(ready: bool) -> Value {
    let labels = json!({"control-plane": "controller-manager", "app.kubernetes.io/name": "jobset"});
    let n = i64::from(ready);
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "manager", "image": "registry.k8s.io/jobset/jobset:v0.12.0"}]}}},
        "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": n, "availableReplicas": n}
    })
}

/// Puts JobSet into `mode`: CRD and controller Deployment created, updated or removed.
pub(crate) fn install(sh: &Shared, mode: OperatorMode) {
    let store = &sh.store;
    if mode == OperatorMode::Absent {
        let _ = store.delete("customresourcedefinitions", "", CRD_NAME);
        let _ = store.delete("deployments", NAMESPACE, DEPLOYMENT);
        return;
    }
    if !store.namespace_exists(NAMESPACE) {
        let _ = store.create(
            "namespaces",
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": {"kubernetes.io/metadata.name": NAMESPACE}}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        );
    }
    if store
        .get("customresourcedefinitions", "", CRD_NAME)
        .is_none()
    {
        let _ = store.create(
            "customresourcedefinitions",
            "",
            crate::crd::with_established_status(crd()),
        );
    }
    let dep = deployment(mode == OperatorMode::Running);
    if store.get("deployments", NAMESPACE, DEPLOYMENT).is_some() {
        let _ = store.update("deployments", NAMESPACE, DEPLOYMENT, dep, None);
    } else {
        let _ = store.create("deployments", NAMESPACE, dep);
    }
}

fn running(sh: &Shared) -> bool {
    sh.store
        .get("deployments", NAMESPACE, DEPLOYMENT)
        .is_some_and(|d| d["status"]["readyReplicas"].as_i64().unwrap_or(0) > 0)
}

// ------------------------------------------------------------------------------- webhooks

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

/// The mutating and validating webhooks on create (only while the controller runs: the
/// webhook server is the controller's pod). Denials read as controller-runtime's
/// `admission.Denied(errors.Join(...).Error())`.
pub(crate) fn admit(sh: &Shared, old: Option<&Value>, obj: &mut Value) -> Result<(), ApiError> {
    if !running(sh) {
        return Ok(());
    }
    // Default.
    let spec = &mut obj["spec"];
    if spec["successPolicy"].is_null() {
        spec["successPolicy"] = json!({"operator": "All"});
    }
    if spec["startupPolicy"].is_null() {
        spec["startupPolicy"] = json!({"startupPolicyOrder": "AnyOrder"});
    }
    for rj in spec["replicatedJobs"].as_array_mut().into_iter().flatten() {
        let js = &mut rj["template"]["spec"];
        if js["completionMode"].is_null() {
            js["completionMode"] = json!("Indexed");
        }
        if js["template"]["spec"]["restartPolicy"]
            .as_str()
            .unwrap_or("")
            .is_empty()
        {
            js["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        }
    }
    if !spec["network"].is_object() {
        spec["network"] = json!({});
    }
    for k in ["enableDNSHostnames", "publishNotReadyAddresses"] {
        if spec["network"][k].is_null() {
            spec["network"][k] = json!(true);
        }
    }
    if old.is_some() {
        return Ok(());
    }
    // ValidateCreate.
    let name = str_of(&obj["metadata"], "name").to_string();
    let spec = &obj["spec"];
    let mut errs: Vec<String> = Vec::new();
    let sub = str_of(&spec["network"], "subdomain");
    if !sub.is_empty() {
        errs.extend(dns1123_subdomain_errors(sub));
        errs.extend(dns1035_errors(sub).into_iter().map(|e| {
            if e.contains("must be no more than 63 characters") {
                ".spec.network.subdomain is too long, must be less than 63 characters".into()
            } else {
                e
            }
        }));
    }
    let rjobs: Vec<&Value> = spec["replicatedJobs"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let names: Vec<&str> = rjobs.iter().map(|r| str_of(r, "name")).collect();
    for rj in &rjobs {
        let replicas = rj["replicas"].as_i64().unwrap_or(1);
        let js = &rj["template"]["spec"];
        let parallelism = js["parallelism"].as_i64().unwrap_or(1);
        if parallelism * replicas > i64::from(i32::MAX) {
            errs.push(format!(
                "the product of replicas and parallelism must not exceed {} for replicatedJob '{}'",
                i32::MAX,
                str_of(rj, "name")
            ));
        }
        let rname = str_of(rj, "name");
        let longest_job = format!("{name}-{rname}-{}", replicas - 1);
        for e in dns1035_errors(&longest_job) {
            errs.push(if e.contains("must be no more than 63 characters") {
                "JobSet name is too long, job names generated for this JobSet will exceed 63 characters".into()
            } else {
                e
            });
        }
        if js["completionMode"] == "Indexed"
            && let Some(c) = js["completions"].as_i64()
        {
            let longest_pod = format!("{name}-{rname}-{}-{}-abcde", replicas - 1, c - 1);
            for e in dns1035_errors(&longest_pod) {
                errs.push(if e.contains("must be no more than 63 characters") {
                    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters".into()
                } else {
                    e
                });
            }
        }
    }
    for t in spec["successPolicy"]["targetReplicatedJobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !names.contains(&t) {
            errs.push(format!(
                "invalid replicatedJob name '{t}' does not appear in .spec.ReplicatedJobs"
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(crate::status::injected(
            403,
            Some(&format!(
                "admission webhook \"vjobset.kb.io\" denied the request: {}",
                errs.join("\n")
            )),
            None,
        ))
    }
}

// ----------------------------------------------------------------------------- controller

type Key = (String, String);

/// Runs the controller until the cluster stops.
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

/// The JobSet controller in the shared controller loop: the JobSets a change touched are due.
struct Loop {
    sh: Arc<Shared>,
    dirty: BTreeSet<Key>,
}

impl Controller for Loop {
    fn note(&mut self, ev: &crate::store::StoreEvent) {
        note(ev, &mut self.dirty);
    }
    fn lagged(&mut self) {
        self.dirty.extend(all(&self.sh));
    }
    fn due(&mut self) -> bool {
        !self.dirty.is_empty()
    }
    fn reconcile(&mut self) {
        if !running(&self.sh) {
            // Nothing reconciles; a controller that becomes ready lists every JobSet.
            self.dirty.clear();
            return;
        }
        for key in std::mem::take(&mut self.dirty) {
            reconcile(&self.sh, &key);
        }
    }
}

fn all(sh: &Shared) -> BTreeSet<Key> {
    sh.store
        .list("jobsets", None)
        .0
        .iter()
        .map(|j| {
            (
                str_of(&j["metadata"], "namespace").to_string(),
                str_of(&j["metadata"], "name").to_string(),
            )
        })
        .collect()
}

fn note(ev: &crate::store::StoreEvent, dirty: &mut BTreeSet<Key>) {
    match ev.resource.as_str() {
        "jobsets" if ev.kind != crate::store::EventType::Deleted => {
            dirty.insert((
                ev.namespace.clone(),
                str_of(&ev.object["metadata"], "name").into(),
            ));
        }
        "jobs" | "services" => {
            for o in ev.object["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if o["kind"] == "JobSet" && o["controller"] == json!(true) {
                    dirty.insert((ev.namespace.clone(), str_of(o, "name").into()));
                }
            }
        }
        // The controller becoming ready lists every JobSet.
        "deployments" if ev.namespace == NAMESPACE => {
            dirty.insert((String::new(), String::new()));
        }
        _ => {}
    }
}

fn condition_true(obj: &Value, t: &str) -> bool {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == t && c["status"] == "True")
}

fn owned_by(obj: &Value, uid: &str) -> bool {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|o| o["uid"] == uid && o["controller"] == json!(true))
}

/// `updateCondition`: a condition is added only when True; an existing one changes in place.
fn set_condition(status: &mut Value, t: &str, s: &str, reason: &str, message: &str) -> bool {
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let conds = status["conditions"].as_array_mut().expect("array");
    if let Some(c) = conds.iter_mut().find(|c| c["type"] == t) {
        if c["status"] == s && c["reason"] == reason {
            return false;
        }
        *c = json!({"type": t, "status": s, "reason": reason, "message": message, "lastTransitionTime": now_rfc3339()});
        return true;
    }
    if s != "True" {
        return false;
    }
    conds.push(json!({"type": t, "status": s, "reason": reason, "message": message, "lastTransitionTime": now_rfc3339()}));
    true
}

fn reconcile(sh: &Shared, key: &Key) {
    if key.1.is_empty() {
        for k in all(sh) {
            reconcile(sh, &k);
        }
        return;
    }
    let (ns, name) = key;
    let Some(js) = sh.store.get("jobsets", ns, name) else {
        return;
    };
    if !js["metadata"]["deletionTimestamp"].is_null() {
        return;
    }
    let uid = str_of(&js["metadata"], "uid").to_string();
    let spec = &js["spec"];
    let rjobs: Vec<Value> = spec["replicatedJobs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let children: Vec<Value> = sh
        .store
        .list("jobs", Some(ns))
        .0
        .into_iter()
        .filter(|j| owned_by(j, &uid))
        .collect();
    let finished_job = |j: &Value| condition_true(j, "Complete") || condition_true(j, "Failed");
    let mut status = if js["status"].is_object() {
        js["status"].clone()
    } else {
        json!({})
    };

    let finished = condition_true(&js, "Completed") || condition_true(&js, "Failed");
    if finished {
        // jobSetFinished: every still active child Job goes, foreground (pods with it).
        for j in children.iter().filter(|j| !finished_job(j)) {
            let _ = sh.store.delete("jobs", ns, str_of(&j["metadata"], "name"));
        }
    } else if let Some(failed) = children.iter().find(|j| condition_true(j, "Failed")) {
        // No failurePolicy: the first failed Job fails the set. Reason and message are
        // jobset pkg/constants/constants.go FailedJobsReason/FailedJobsMessage, with
        // pkg/controllers/failure_policy.go messageWithFirstFailedJob's suffix (checked upstream).
        let msg = format!(
            "jobset failed due to one or more job failures (first failed job: {})",
            str_of(&failed["metadata"], "name")
        );
        set_condition(&mut status, "Failed", "True", "FailedJobs", &msg);
        status["terminalState"] = json!("Failed");
        sh.record_event(
            &js,
            "JobSet",
            "Warning",
            "FailedJobs",
            &msg,
            "jobset-controller",
        );
    } else if success_met(spec, &rjobs, &children) {
        // AllJobsCompletedReason/Message (constants.go); the Suspended reasons below are
        // JobSetSuspendedReason/Message and JobSetResumedReason/Message there.
        set_condition(
            &mut status,
            "Completed",
            "True",
            "AllJobsCompleted",
            "jobset completed successfully",
        );
        status["terminalState"] = json!("Completed");
        sh.record_event(
            &js,
            "JobSet",
            "Normal",
            "AllJobsCompleted",
            "jobset completed successfully",
            "jobset-controller",
        );
    } else {
        let suspend = spec["suspend"] == json!(true);
        if suspend {
            set_condition(
                &mut status,
                "Suspended",
                "True",
                "SuspendedJobs",
                "jobset is suspended",
            );
        } else {
            set_condition(
                &mut status,
                "Suspended",
                "False",
                "ResumeJobs",
                "jobset is resumed",
            );
        }
        for j in &children {
            if !finished_job(j) && (j["spec"]["suspend"] == json!(true)) != suspend {
                sh.store
                    .modify("jobs", ns, str_of(&j["metadata"], "name"), |j| {
                        j["spec"]["suspend"] = json!(suspend);
                        true
                    });
            }
        }
        let dns = spec["network"]["enableDNSHostnames"] != json!(false);
        let subdomain = match str_of(&spec["network"], "subdomain") {
            "" => name.clone(),
            s => s.to_string(),
        };
        if dns && sh.store.get("services", ns, &subdomain).is_none() {
            let svc = json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": subdomain, "namespace": ns, "ownerReferences": [owner(&js)]},
                "spec": {"clusterIP": "None", "clusterIPs": ["None"], "type": "ClusterIP",
                    "selector": {format!("{K}jobset-name"): name},
                    "publishNotReadyAddresses": spec["network"]["publishNotReadyAddresses"] != json!(false)}
            });
            if sh.store.create("services", ns, svc).is_err() {
                sh.record_event(
                    &js,
                    "JobSet",
                    "Warning",
                    "HeadlessServiceCreationFailed",
                    &format!("failed to create headless service {subdomain}"),
                    "jobset-controller",
                );
            }
        }
        let global: i64 = rjobs
            .iter()
            .map(|r| r["replicas"].as_i64().unwrap_or(1))
            .sum();
        let mut earlier = 0;
        let mut group_index: BTreeMap<String, i64> = BTreeMap::new();
        let group_total = |g: &str| -> i64 {
            rjobs
                .iter()
                .filter(|r| r["groupName"].as_str().unwrap_or("default") == g)
                .map(|r| r["replicas"].as_i64().unwrap_or(1))
                .sum()
        };
        for rj in &rjobs {
            let rname = str_of(rj, "name");
            let replicas = rj["replicas"].as_i64().unwrap_or(1);
            let group = rj["groupName"].as_str().unwrap_or("default").to_string();
            for i in 0..replicas {
                let gi = {
                    let e = group_index.entry(group.clone()).or_insert(0);
                    *e += 1;
                    *e - 1
                };
                let jname = format!("{name}-{rname}-{i}");
                if children
                    .iter()
                    .any(|j| str_of(&j["metadata"], "name") == jname)
                {
                    continue;
                }
                let keys = [
                    ("jobset-name", name.clone()),
                    ("jobset-uid", uid.clone()),
                    ("replicatedjob-name", rname.to_string()),
                    ("replicatedjob-replicas", replicas.to_string()),
                    ("global-replicas", global.to_string()),
                    ("job-index", i.to_string()),
                    ("job-global-index", (earlier + i).to_string()),
                    (
                        "restart-attempt",
                        status["restarts"].as_i64().unwrap_or(0).to_string(),
                    ),
                    ("group-name", group.clone()),
                    ("group-replicas", group_total(&group).to_string()),
                    ("job-group-index", gi.to_string()),
                ];
                let job = child_job(&js, rj, &jname, &keys, dns.then_some(subdomain.as_str()));
                if let Err(e) = sh.store.create("jobs", ns, job) {
                    sh.record_event(
                        &js,
                        "JobSet",
                        "Warning",
                        "JobCreationFailed",
                        &format!("{e:?}"),
                        "jobset-controller",
                    );
                }
            }
            earlier += replicas;
        }
    }
    // calculateReplicatedJobStatuses: counts in Jobs.
    let children: Vec<Value> = sh
        .store
        .list("jobs", Some(ns))
        .0
        .into_iter()
        .filter(|j| owned_by(j, &uid))
        .collect();
    let statuses: Vec<Value> = rjobs
        .iter()
        .map(|rj| {
            let rname = str_of(rj, "name");
            let mine: Vec<&Value> = children
                .iter()
                .filter(|j| j["metadata"]["labels"][format!("{K}replicatedjob-name")] == rname)
                .collect();
            let (mut ready, mut succeeded, mut failed, mut active, mut suspended) = (0, 0, 0, 0, 0);
            for j in mine {
                if condition_true(j, "Complete") {
                    succeeded += 1;
                } else if condition_true(j, "Failed") {
                    failed += 1;
                } else {
                    let p = j["spec"]["parallelism"].as_i64().unwrap_or(1);
                    let c = j["spec"]["completions"].as_i64().unwrap_or(p);
                    let pods = p.min(c);
                    let st = &j["status"];
                    if st["ready"].as_i64().unwrap_or(0) + st["succeeded"].as_i64().unwrap_or(0) >= pods {
                        ready += 1;
                    }
                    if st["active"].as_i64().unwrap_or(0) > 0 {
                        active += 1;
                    }
                    if j["spec"]["suspend"] == json!(true) {
                        suspended += 1;
                    }
                }
            }
            json!({"name": rname, "ready": ready, "succeeded": succeeded, "failed": failed, "active": active, "suspended": suspended})
        })
        .collect();
    status["replicatedJobsStatus"] = json!(statuses);
    if status["restarts"].is_null() {
        status["restarts"] = json!(0);
    }
    if status != js["status"] {
        sh.store.modify("jobsets", ns, name, |j| {
            if j["metadata"]["uid"] != uid.as_str() {
                return false;
            }
            j["status"] = status.clone();
            true
        });
    }
}

/// `executeSuccessPolicy`: Jobs whose Complete is True, among the targeted replicatedJobs.
fn success_met(spec: &Value, rjobs: &[Value], children: &[Value]) -> bool {
    let targets: Vec<&str> = spec["successPolicy"]["targetReplicatedJobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let targeted = |r: &str| targets.is_empty() || targets.contains(&r);
    let done = children
        .iter()
        .filter(|j| condition_true(j, "Complete"))
        .filter(|j| {
            targeted(
                j["metadata"]["labels"][format!("{K}replicatedjob-name")]
                    .as_str()
                    .unwrap_or(""),
            )
        })
        .count() as i64;
    match spec["successPolicy"]["operator"].as_str().unwrap_or("All") {
        "Any" => done >= 1,
        _ => {
            let want: i64 = rjobs
                .iter()
                .filter(|r| targeted(str_of(r, "name")))
                .map(|r| r["replicas"].as_i64().unwrap_or(1))
                .sum();
            want > 0 && done >= want
        }
    }
}

fn owner(js: &Value) -> Value {
    json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": js["metadata"]["name"],
        "uid": js["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true})
}

/// `constructJob`: the template's metadata and spec, the JobSet keys as labels and annotations
/// on the Job and its pod template (`labelAndAnnotateObject`; `job-key`, a SHA-1 of the Job's
/// namespace/name, is left out: nothing here reads it), the subdomain, and suspend.
fn child_job(
    js: &Value,
    rj: &Value,
    name: &str,
    keys: &[(&str, String)],
    subdomain: Option<&str>,
) -> Value {
    let tmeta = &rj["template"]["metadata"];
    let mut spec = rj["template"]["spec"].clone();
    let mut labels: Map<String, Value> = tmeta["labels"].as_object().cloned().unwrap_or_default();
    let mut annotations: Map<String, Value> = tmeta["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let pmeta = &mut spec["template"]["metadata"];
    if !pmeta.is_object() {
        *pmeta = json!({});
    }
    for (k, v) in keys {
        let key = format!("{K}{k}");
        labels.insert(key.clone(), json!(v));
        annotations.insert(key.clone(), json!(v));
        pmeta["labels"][&key] = json!(v);
        pmeta["annotations"][&key] = json!(v);
    }
    if let Some(s) = subdomain {
        spec["template"]["spec"]["subdomain"] = json!(s);
    }
    spec["suspend"] = json!(js["spec"]["suspend"] == json!(true));
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": js["metadata"]["namespace"], "labels": labels,
            "annotations": annotations, "ownerReferences": [owner(js)]},
        "spec": spec
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_counts_complete_jobs_of_the_targets() {
        let spec =
            json!({"successPolicy": {"operator": "All", "targetReplicatedJobs": ["worker"]}});
        let rjobs = vec![
            json!({"name": "ps", "replicas": 1}),
            json!({"name": "worker", "replicas": 1}),
        ];
        let job = |r: &str, done: bool| {
            json!({"metadata": {"labels": {"jobset.sigs.k8s.io/replicatedjob-name": r}},
                "status": {"conditions": if done { json!([{"type": "Complete", "status": "True"}]) } else { json!([]) }}})
        };
        assert!(!success_met(
            &spec,
            &rjobs,
            &[job("ps", true), job("worker", false)]
        ));
        assert!(success_met(
            &spec,
            &rjobs,
            &[job("ps", false), job("worker", true)]
        ));
    }

    #[test]
    fn a_child_job_carries_the_jobset_keys_on_itself_and_its_pods() {
        let js = json!({"metadata": {"name": "tf", "namespace": "ns", "uid": "u"}, "spec": {}});
        let rj = json!({"name": "worker", "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"completions": 2, "template": {"spec": {"containers": []}}}}});
        let j = child_job(
            &js,
            &rj,
            "tf-worker-0",
            &[("jobset-name", "tf".into())],
            Some("tf"),
        );
        assert_eq!(j["metadata"]["labels"]["a"], "b");
        assert_eq!(
            j["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"],
            "tf"
        );
        assert_eq!(
            j["metadata"]["annotations"]["jobset.sigs.k8s.io/jobset-name"],
            "tf"
        );
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"],
            "tf"
        );
        assert_eq!(j["spec"]["template"]["spec"]["subdomain"], "tf");
        assert_eq!(j["spec"]["suspend"], false);
        assert_eq!(j["metadata"]["ownerReferences"][0]["kind"], "JobSet");
    }
}
