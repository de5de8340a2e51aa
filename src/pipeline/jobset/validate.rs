//! Will the API server, the JobSet webhook and then the Job API take what `export` made?
//!
//! - the schema: our typed model's (kube's derive over k8s-openapi's Job types, translated as
//!   the TFJob schema is, `validate::schema`); a test cross-checks it against the upstream CRD;
//! - the JobSet webhook (kubernetes-sigs/jobset v0.12.0 `pkg/webhooks/jobset_webhook.go`
//!   `ValidateCreate`): generated Job and pod names, group names, targets, managedBy;
//! - what the Job API checks when the controller creates each child Job (kubernetes
//!   `pkg/apis/batch/validation/validation.go` `validateJobSpec`), which the JobSet's own
//!   admission does not: a refusal there shows only as a `JobCreationFailed` event later;
//! - core Pod validation on every pod template (`validate::pod`, `validate::podrules`).

use std::sync::OnceLock;

use jsonschema::Validator;
use kube::CustomResourceExt;
use serde_json::Value;

use super::model::JobSet;
use crate::pipeline::manifest::join_key;
use crate::pipeline::validate::names::{dns1035, dns1123_subdomain, generated_name};
use crate::pipeline::validate::{Finding, Severity, schema};

/// The webhook's limit on `spec.managedBy` (`maxManagedByLength`).
const MAX_MANAGED_BY: usize = 63;
/// What the webhook appends to the longest pod name for the Job controller's random suffix.
const POD_SUFFIX: &str = "-abcde";

fn error(rule: &'static str, path: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding::new(Severity::Error, rule, path.into(), message.into())
}

/// Our model's JSON Schema, translated with the API server's semantics (slow: tests and
/// regeneration only).
pub fn model_schema() -> Value {
    let crd = serde_json::to_value(JobSet::crd()).expect("CRD serializes");
    schema::translate(schema::crd_openapi_schema(&crd).expect("derived CRD has a schema"))
}

/// What is embedded in `jobset-schema.json`: deriving it costs ten times the rest of an
/// export, so it is generated once, as the TFJob schema is (`UPDATE_GOLDEN=1 cargo test
/// embedded_schema` regenerates both).
pub fn embeddable_schema() -> Value {
    schema::share_subschemas(schema::with_root_identity(model_schema()))
}

const EMBEDDED_SCHEMA: &str = include_str!("jobset-schema.json");

fn validator() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| {
        let s: Value = serde_json::from_str(EMBEDDED_SCHEMA).expect("embedded schema is JSON");
        schema::compile_translated(&s).expect("the embedded JobSet schema compiles")
    })
}

/// The most parallelism an Indexed Job may have (kubernetes `pkg/apis/batch/validation/
/// validation.go` `maxParallelismForIndexedJob`); an export sets completions = parallelism.
pub const MAX_INDEXED_PARALLELISM: i64 = 100_000;
/// The API server's default limit on a request body (k8s.io/apiserver `pkg/server/config.go`,
/// `MaxRequestBodyBytes: 3 * 1024 * 1024`): past it, 413 before anything else.
pub const MAX_REQUEST_BYTES: usize = 3 * 1024 * 1024;
/// etcd's default `--max-request-bytes` (1.5 MiB, `embed.DefaultMaxRequestBytes`): a bigger
/// object passes a server dry run but its create fails ("etcdserver: request is too large").
pub const MAX_ETCD_BYTES: usize = 1536 * 1024;

/// Every problem found, all at once.
pub fn check(js: &JobSet) -> Vec<Finding> {
    let value = serde_json::to_value(js).expect("a JobSet serializes");
    let mut out = schema::check_with(validator(), &value);
    webhook(js, &mut out);
    job_rules(&value, &mut out);
    pod_templates(&value, &mut out);
    size(&value, &mut out);
    out
}

/// The object's encoded size against the request and etcd limits, naming its largest field.
fn size(value: &Value, out: &mut Vec<Finding>) {
    let bytes = serde_json::to_vec(value).map(|v| v.len()).unwrap_or(0);
    let (limit, whose) = if bytes > MAX_REQUEST_BYTES {
        (
            MAX_REQUEST_BYTES,
            "the API server's request body limit (3 MiB)",
        )
    } else if bytes > MAX_ETCD_BYTES {
        (
            MAX_ETCD_BYTES,
            "etcd's request limit (1.5 MiB, --max-request-bytes)",
        )
    } else {
        return;
    };
    let (path, largest) = largest_field(value, String::new());
    out.push(Finding {
        hint: Some(
            "Fewer replicas per replicatedJob (the TF_CONFIG each pod gets lists every address), or split the job.".into(),
        ),
        ..error(
            "size",
            path.clone(),
            format!(
                "the JobSet encodes to {bytes} bytes of JSON, over {whose} of {limit} bytes; its largest field, {path}, is {largest} bytes"
            ),
        )
    });
}

/// The path and encoded size of the largest scalar (a string, in practice) in `v`.
fn largest_field(v: &Value, path: String) -> (String, usize) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| largest_field(x, join(k)))
            .max_by_key(|(_, n)| *n)
            .unwrap_or((path, 2)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| largest_field(x, format!("{path}[{i}]")))
            .max_by_key(|(_, n)| *n)
            .unwrap_or((path, 2)),
        other => (path, other.to_string().len()),
    }
}

/// The name the webhook sees: the API server fills in `generateName` before admission.
fn effective_name(js: &JobSet) -> String {
    match (&js.metadata.name, &js.metadata.generate_name) {
        (Some(n), _) => n.clone(),
        (None, Some(prefix)) => generated_name(prefix),
        (None, None) => String::new(),
    }
}

/// `ValidateCreate`.
fn webhook(js: &JobSet, out: &mut Vec<Finding>) {
    const RULE: &str = "jobset-webhook";
    let name = effective_name(js);
    if name.is_empty() {
        out.push(error(
            RULE,
            "metadata.name",
            "a JobSet needs a name (or generateName)",
        ));
        return;
    }
    if let Err(e) = dns1123_subdomain(&name) {
        out.push(error(RULE, "metadata.name", format!("{name:?} {e}")));
    }
    let spec = &js.spec;
    if let Some(sub) = spec.network.as_ref().and_then(|n| n.subdomain.as_deref())
        && !sub.is_empty()
        && let Err(e) = dns1035(sub).and_then(|()| dns1123_subdomain(sub))
    {
        out.push(error(
            RULE,
            "spec.network.subdomain",
            format!("{sub:?} {e}"),
        ));
    }
    if let Some(m) = &spec.managed_by {
        if m.len() > MAX_MANAGED_BY {
            out.push(error(
                RULE,
                "spec.managedBy",
                format!(
                    "must be at most {MAX_MANAGED_BY} characters, is {}",
                    m.len()
                ),
            ));
        }
        // IsDomainPrefixedPath: a DNS subdomain, then a path.
        let ok = m
            .split_once('/')
            .is_some_and(|(host, path)| dns1123_subdomain(host).is_ok() && !path.is_empty());
        if !ok {
            out.push(error(
                RULE,
                "spec.managedBy",
                format!("{m:?} must be a domain-prefixed path, e.g. kueue.x-k8s.io/multikueue"),
            ));
        }
    }
    let names: Vec<&str> = spec
        .replicated_jobs
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    for (i, rj) in spec.replicated_jobs.iter().enumerate() {
        let path = format!("spec.replicatedJobs[{i}]");
        let replicas = i64::from(rj.replicas.unwrap_or(1));
        let job = rj.template.spec.as_ref();
        let parallelism = i64::from(job.and_then(|j| j.parallelism).unwrap_or(1));
        if parallelism * replicas > i64::from(i32::MAX) {
            out.push(error(
                RULE,
                format!("{path}.replicas"),
                format!(
                    "the product of replicas and parallelism must not exceed {} for replicatedJob '{}'",
                    i32::MAX,
                    rj.name
                ),
            ));
        }
        let group = rj.group_name.as_deref().unwrap_or("default");
        if let Err(e) = dns1035(group) {
            out.push(error(
                RULE,
                format!("{path}.groupName"),
                format!("{group:?} {e}"),
            ));
        }
        // placement.GenJobName with the largest job index, then GenPodName with the
        // largest pod index plus the random suffix.
        let longest_job = super::job_name(&name, &rj.name, replicas - 1);
        // The replicatedJob's name is part of every Job and pod name: a character those names
        // may not hold is the problem to name, not their length (no shortening fixes it).
        if let Err(e) = dns1035(&super::job_name("a", &rj.name, 0)) {
            out.push(error(
                RULE,
                format!("{path}.name"),
                format!(
                    "replicatedJob name {:?} is not allowed in the names of its Jobs and pods (such as {longest_job:?}), which must be DNS-1123 labels: {e}; rename it (the TFJob's replica type) to lowercase letters, digits and '-'",
                    rj.name
                ),
            ));
        } else if let Err(e) = dns1035(&longest_job) {
            out.push(error(
                RULE,
                format!("{path}.name"),
                format!(
                    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters: {longest_job:?} {e}"
                ),
            ));
        }
        let indexed = job.and_then(|j| j.completion_mode.as_deref()) == Some("Indexed");
        let chars_ok = dns1035(&super::job_name("a", &rj.name, 0)).is_ok();
        if let Some(completions) = job
            .and_then(|j| j.completions)
            .filter(|_| indexed && chars_ok)
        {
            let longest_pod = format!(
                "{}{POD_SUFFIX}",
                super::pod_hostname(&name, &rj.name, replicas - 1, i64::from(completions) - 1)
            );
            if let Err(e) = dns1035(&longest_pod) {
                out.push(error(
                    RULE,
                    format!("{path}.name"),
                    format!(
                        "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters: {longest_pod:?} {e}; shorten metadata.name by {} characters",
                        longest_pod.len().saturating_sub(63)
                    ),
                ));
            }
        }
        if names[..i].contains(&rj.name.as_str()) {
            // The CRD's list-map key: the API server refuses a duplicate.
            out.push(error(
                "schema",
                format!("{path}.name"),
                format!("duplicate replicatedJob name {:?}", rj.name),
            ));
        }
    }
    if let Some(sp) = &spec.success_policy {
        for t in &sp.target_replicated_jobs {
            if !names.contains(&t.as_str()) {
                out.push(error(
                    RULE,
                    "spec.successPolicy.targetReplicatedJobs",
                    format!(
                        "invalid replicatedJob name '{t}' does not appear in .spec.ReplicatedJobs"
                    ),
                ));
            }
        }
    }
}

/// `validateJobSpec` and the pod-template rules of `ValidateJob` that an export can break.
fn job_rules(value: &Value, out: &mut Vec<Finding>) {
    const RULE: &str = "job";
    for (i, rj) in value["spec"]["replicatedJobs"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("spec.replicatedJobs[{i}].template.spec");
        let js = &rj["template"]["spec"];
        let indexed = js["completionMode"] == "Indexed";
        let completions = js["completions"].as_i64();
        if let Some(p) = js["parallelism"].as_i64()
            && indexed
            && p > MAX_INDEXED_PARALLELISM
        {
            out.push(error(
                RULE,
                format!("{path}.parallelism"),
                format!(
                    "{p}: must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed (the replicas of one replica type)"
                ),
            ));
        }
        if indexed && completions.is_none() {
            out.push(error(
                RULE,
                format!("{path}.completions"),
                "when completion mode is Indexed, completions must be set",
            ));
        }
        for k in [
            "parallelism",
            "completions",
            "backoffLimit",
            "activeDeadlineSeconds",
        ] {
            if let Some(n) = js[k].as_i64()
                && (n < 0 || (k == "activeDeadlineSeconds" && n == 0))
            {
                out.push(error(
                    RULE,
                    format!("{path}.{k}"),
                    format!(
                        "{k} must be {}, is {n}",
                        if k == "activeDeadlineSeconds" {
                            "greater than 0"
                        } else {
                            "greater than or equal to 0"
                        }
                    ),
                ));
            }
        }
        let restart = js["template"]["spec"]["restartPolicy"]
            .as_str()
            .unwrap_or("");
        if !matches!(restart, "Never" | "OnFailure") {
            out.push(error(
                RULE,
                format!("{path}.template.spec.restartPolicy"),
                format!("{restart:?} is not supported: a Job's pods take Never or OnFailure"),
            ));
        }
        if let Some(rules) = js["podFailurePolicy"]["rules"].as_array() {
            if restart != "Never" {
                out.push(error(
                    RULE,
                    format!("{path}.podFailurePolicy"),
                    "only Never is supported as restartPolicy when podFailurePolicy is set",
                ));
            }
            for (r, rule) in rules.iter().enumerate() {
                let codes = &rule["onExitCodes"]["values"];
                let vals = codes.as_array().map(Vec::len).unwrap_or(0);
                let rpath = format!("{path}.podFailurePolicy.rules[{r}].onExitCodes.values");
                if vals == 0 || vals > 255 {
                    out.push(error(
                        RULE,
                        rpath.clone(),
                        format!("must have between 1 and 255 values, has {vals}"),
                    ));
                }
                if rule["onExitCodes"]["operator"] == "In"
                    && codes
                        .as_array()
                        .is_some_and(|a| a.contains(&Value::from(0)))
                {
                    out.push(error(RULE, rpath, "0 is not allowed with the In operator"));
                }
            }
        }
        if js["successPolicy"].is_object() {
            if !indexed {
                out.push(error(
                    RULE,
                    format!("{path}.successPolicy"),
                    "requires completionMode Indexed",
                ));
            }
            for (r, rule) in js["successPolicy"]["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                if let (Some(ix), Some(c)) = (rule["succeededIndexes"].as_str(), completions)
                    && ix
                        .split([',', '-'])
                        .any(|n| n.parse::<i64>().map_or(true, |n| n >= c))
                {
                    out.push(error(
                        RULE,
                        format!("{path}.successPolicy.rules[{r}].succeededIndexes"),
                        format!("{ix:?} must be indexes below completions ({c})"),
                    ));
                }
            }
        }
    }
}

/// Core Pod validation on every pod template, with the JobSet's field paths.
fn pod_templates(value: &Value, out: &mut Vec<Finding>) {
    for (i, rj) in value["spec"]["replicatedJobs"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(ps) = rj.pointer("/template/spec/template/spec") {
            let path = join_key(
                &format!("spec.replicatedJobs[{i}].template.spec.template"),
                "spec",
            );
            crate::pipeline::validate::pod::pod_spec(ps, &path, out);
        }
    }
}

#[cfg(test)]
mod tests;
