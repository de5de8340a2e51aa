//! From flags, values and a template (or a ready manifest) to a validated, credential-injected
//! TFJob: [`prepare`] is shared by `render` and `submit`.
//!
//! Order matters: validation runs on the job as the user wrote it (so a literal key in their
//! file is reported with its line before injection would replace it), then the gateway env and
//! istio annotation are applied by typed code, so every source gets them the same way.

use serde_json::Value;

use crate::cluster::ConnectionOptions;
use crate::error::{Error, Result};
use crate::gateway::GatewayConfig;
use crate::model::TFJob;
use crate::pipeline::manifest::{self, Document};
// The manifest printers live in `print`; re-exported for the callers that name them here.
use crate::pipeline::templates::{self, DEFAULT_TEMPLATE};
use crate::pipeline::validate::{self, Inputs, Report};
use crate::pipeline::values;
// The option types belong to `values` (the pipeline's input), not to its top; re-exported here
// because `render`/`submit` callers name them `render::RenderOptions`.
pub use crate::pipeline::values::{PodOptions, RenderOptions};

/// A job ready to print or submit.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The typed job, with gateway env and annotations applied.
    pub job: TFJob,
    /// The same job as JSON (what is printed or sent).
    pub value: Value,
    /// Findings (no errors: those make [`prepare`] fail); warnings and info remain.
    pub report: Report,
    pub gateway: GatewayConfig,
    /// A `-f` manifest sent as written: its values exactly as read (`cpu: 1` stays a number, a
    /// field our types do not know stays), which `submit` sends instead of the typed job, with
    /// only the metadata it sets replaced. `None` for templates and `--inject-gateway-env`.
    pub as_written: Option<Value>,
    /// "template ps-worker", "template ./my.yaml.j2" or the manifest file name.
    pub source: String,
    /// Per role that runs: the cpu and memory it got and from where (rendered jobs only).
    pub resources: Vec<String>,
}

/// Renders (or reads) the job, validates it, injects the gateway credentials.
/// `Err(Error::Invalid)` lists every error found; `Err(Error::Usage)` for contradictory flags.
pub fn prepare(kube: &ConnectionOptions, args: &RenderOptions) -> Result<Prepared> {
    let gateway = GatewayConfig::from_args(&args.gateway);
    gateway.check()?;
    let docs = read_files(&args.files)?;
    let manifests: Vec<&Document> = docs.iter().filter(|d| d.is_manifest()).collect();

    let mut read_warnings = Vec::new();
    let mut resources = Vec::new();
    let (value, positions, source) = if manifests.is_empty() {
        let (mut value, source, lines) = render_template(kube, args, &docs)?;
        resources = lines;
        // --generate-name: the template rendered the prefix as the name; hand it to the API
        // server as metadata.generateName instead.
        if let (Some(prefix), Some(meta)) = (
            &args.generate_name,
            value.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            meta.remove("name");
            meta.insert("generateName".into(), Value::String(prefix.clone()));
        }
        (value, None, source)
    } else {
        check_manifest_usage(args, &docs, manifests.len())?;
        let doc = manifests[0];
        let mut value = doc.value.clone();
        apply_namespace(&mut value, kube.namespace.as_deref(), &doc.file)?;
        read_warnings = validate::read_findings(doc);
        (value, Some(doc.positions.clone()), doc.file.clone())
    };
    let mut value = value;
    // --local-queue: on the TFJob only (on pods Kueue's pod integration would gate them).
    if let Some(lq) = &args.local_queue
        && let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut)
    {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(l) = labels.as_object_mut() {
            l.insert(
                crate::cluster::queue::QUEUE_LABEL.into(),
                Value::String(lq.clone()),
            );
        }
    }
    let stripped = strip_server_fields(&mut value);
    // A manifest is sent as written, as `kubectl create -f` sends it; only templates (whose job
    // it is) and an explicit --inject-gateway-env add the gateway env and the istio opt-out.
    let from_manifest = positions.is_some();
    let inject = !from_manifest || args.gateway.inject_gateway_env;

    let inputs = Inputs {
        gateway: gateway.clone(),
        will_inject: inject,
        positions: positions.as_ref(),
    };
    let mut report = validate::validate_value(&value, &inputs);
    report.findings.extend(read_warnings);
    report
        .findings
        .extend(validate::gateway_flag_findings(&gateway));
    if !stripped.is_empty() {
        report.findings.push(validate::Finding::new(
            validate::Severity::Info,
            "server-fields",
            "metadata",
            format!(
                "dropped fields the API server sets (the file looks like `kubectl get -o yaml` output): {}",
                stripped.join(", ")
            ),
        ));
    }
    // A name from --name that the API would refuse is the flag's fault, not the template's:
    // said as the flag's, before whatever else is wrong with the rest.
    let mut flag_errors = Vec::new();
    if !from_manifest && args.generate_name.is_none() && args.name.is_some() {
        report.findings.retain(|f| {
            let name_error = f.severity == validate::Severity::Error && f.path == "metadata.name";
            if name_error {
                let hint = f
                    .hint
                    .as_deref()
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                flag_errors.push(format!("--name: {}{hint}", f.message));
            }
            !name_error
        });
    }
    if !flag_errors.is_empty() {
        let mut message = flag_errors.join("\n");
        if report.has_errors() {
            message.push('\n');
            message.push_str(&invalid(&source, &report, positions.is_none()).to_string());
        }
        return Err(Error::Invalid(message));
    }
    if report.has_errors() {
        return Err(invalid(&source, &report, positions.is_none()));
    }
    validate::credentials::refuse(&report, args.allow_literal_credentials)?;
    // Read as the API server decodes it: nulls its schema does not admit are dropped.
    let mut job: TFJob = manifest::from_value(
        &validate::schema::prune_model_nulls(&value),
        positions.as_ref(),
        &source,
    )?;
    let as_written = (!inject).then(|| value.clone());
    let gateway = if inject {
        gateway.apply(&mut job);
        if from_manifest && let Some(added) = gateway.describe_injection() {
            report.findings.push(validate::Finding::new(
                validate::Severity::Info,
                "inject-gateway-env",
                "spec.tfReplicaSpecs",
                format!("--inject-gateway-env added {added}"),
            ));
        }
        gateway
    } else {
        // Nothing was added, so nothing beyond what the manifest references is required.
        gateway.not_injected()
    };
    let value = serde_json::to_value(&job).expect("a TFJob serializes");
    Ok(Prepared {
        job,
        value,
        report,
        gateway,
        as_written,
        source,
        resources,
    })
}

fn invalid(source: &str, report: &Report, no_positions: bool) -> Error {
    let origin = no_positions.then_some(source);
    Error::Invalid(format!(
        "{source} is invalid ({}):\n{}",
        report.summary(),
        report.render_text_with_origin(origin).trim_end()
    ))
}

fn read_files(files: &[String]) -> Result<Vec<Document>> {
    let mut docs = Vec::new();
    let mut stdin_used = false;
    for f in files {
        if f == "-" {
            if stdin_used {
                return Err(Error::Usage("stdin (-f -) can be read only once".into()));
            }
            stdin_used = true;
        }
        let (name, text) = crate::input::read_manifest(f)?;
        let parsed = manifest::parse_documents(&text, &name)?;
        if parsed.is_empty() {
            // An empty values file is harmless; keep going.
            continue;
        }
        docs.extend(parsed);
    }
    Ok(docs)
}

/// A manifest stands alone: no template, no values files, no shaping flags, one TFJob.
fn check_manifest_usage(args: &RenderOptions, docs: &[Document], manifests: usize) -> Result<()> {
    if args.template.is_some() {
        return Err(Error::Usage(
            "-f gives a complete TFJob manifest, so --template does not apply; drop one of them"
                .into(),
        ));
    }
    if docs.len() > manifests {
        let values_file = docs
            .iter()
            .find(|d| !d.is_manifest())
            .map(|d| d.file.clone())
            .unwrap_or_default();
        return Err(Error::Usage(format!(
            "-f mixes a TFJob manifest with values ({values_file}); values shape a template, a manifest is used as is"
        )));
    }
    if manifests > 1 {
        return Err(Error::Usage(format!(
            "-f holds {manifests} manifests; render and submit take exactly one TFJob (validate accepts several)"
        )));
    }
    let used = shaping_flags(args);
    if !used.is_empty() {
        return Err(Error::Usage(format!(
            "{} shape(s) a template, but -f gives a complete manifest; edit the manifest instead",
            used.join(", ")
        )));
    }
    Ok(())
}

/// The flags given that shape a job from a template (what a complete manifest, or `export
/// NAME`'s stored job, cannot take with it).
pub fn shaping_flags(args: &RenderOptions) -> Vec<&'static str> {
    let shaping = [
        ("--set", !args.set.is_empty()),
        ("--name", args.name.is_some()),
        ("--generate-name", args.generate_name.is_some()),
        ("--image", args.image.is_some()),
        ("--ps", args.ps.is_some()),
        ("--workers", args.workers.is_some()),
        ("--chief", args.chief.is_some()),
        ("--evaluator", args.evaluator.is_some()),
        ("--gpus", args.gpus.is_some()),
        ("--cpu", args.cpu.is_some()),
        ("--memory", args.memory.is_some()),
        ("--label", !args.labels.is_empty()),
        ("--annotation", !args.annotations.is_empty()),
        ("--env", !args.env.is_empty()),
        ("--restart-policy", args.restart_policy.is_some()),
        ("--clean-pod-policy", args.clean_pod_policy.is_some()),
        ("--backoff-limit", args.backoff_limit.is_some()),
        (
            "--active-deadline-seconds",
            args.active_deadline_seconds.is_some(),
        ),
        (
            "--ttl-seconds-after-finished",
            args.ttl_seconds_after_finished.is_some(),
        ),
        ("--success-policy", args.success_policy.is_some()),
        ("--queue", args.queue.is_some()),
        ("--priority-class", args.priority_class.is_some()),
        ("--set-string", !args.pod.set_string.is_empty()),
        ("--set-file", !args.pod.set_file.is_empty()),
        ("--cpu-request", args.pod.cpu_request.is_some()),
        ("--memory-request", args.pod.memory_request.is_some()),
        ("--pvc", !args.pod.pvc.is_empty()),
        ("--config-map", !args.pod.config_map.is_empty()),
        ("--secret-volume", !args.pod.secret_volume.is_empty()),
        ("--empty-dir", !args.pod.empty_dir.is_empty()),
        (
            "--image-pull-secret",
            !args.pod.image_pull_secret.is_empty(),
        ),
        ("--service-account", args.pod.service_account.is_some()),
        ("--node-selector", !args.pod.node_selector.is_empty()),
        ("--toleration", !args.pod.toleration.is_empty()),
        (
            "--pod-priority-class",
            args.pod.pod_priority_class.is_some(),
        ),
        ("--env-from-secret", !args.pod.env_from_secret.is_empty()),
        ("a command after --", !args.command.is_empty()),
    ];
    shaping
        .iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| *n)
        .collect()
}

/// Removes what the API server owns (a create with `resourceVersion` set is refused), so that
/// `kubectl get tfjob x -o yaml > job.yaml` can be resubmitted. Returns what was removed.
fn strip_server_fields(value: &mut Value) -> Vec<String> {
    let mut removed = Vec::new();
    if let Some(obj) = value.as_object_mut()
        && obj.remove("status").is_some()
    {
        removed.push("status".to_string());
    }
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        ] {
            if meta.remove(f).is_some() {
                removed.push(format!("metadata.{f}"));
            }
        }
    }
    removed
}

/// `-n` fills in a manifest's namespace; a different one in the file is a conflict, by the one
/// rule ([`crate::model::names::object_namespace`]).
fn apply_namespace(value: &mut Value, ns: Option<&str>, file: &str) -> Result<()> {
    let Some(ns) = ns else { return Ok(()) };
    let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Ok(()); // validation reports the missing metadata
    };
    let written = meta.get("namespace").and_then(Value::as_str);
    let settled =
        crate::model::names::object_namespace(written, ns, true, file).map_err(Error::Usage)?;
    meta.insert("namespace".into(), settled.into());
    Ok(())
}

fn render_template(
    kube: &ConnectionOptions,
    args: &RenderOptions,
    docs: &[Document],
) -> Result<(Value, String, Vec<String>)> {
    let spec = args.template.as_deref().unwrap_or(DEFAULT_TEMPLATE);
    let template = templates::load(spec)?;
    let source = template.label();
    let mut flags = values::flags_overlay(kube.namespace.as_deref(), args)?;
    // Helm's order: --set, then --set-string, then --set-file.
    let set: Vec<values::SetArg> = args
        .set
        .iter()
        .map(|s| values::SetArg::Typed(s.clone()))
        .chain(
            args.pod
                .set_string
                .iter()
                .map(|s| values::SetArg::String(s.clone())),
        )
        .chain(
            args.pod
                .set_file
                .iter()
                .map(|s| values::SetArg::File(s.clone())),
        )
        .collect();
    values::resources::yield_to_own(&mut flags, docs, &set, args);
    let mut vals = values::resolve_with(&template.defaults, &template.declared, docs, &set, flags)?;
    let resources = values::resources::report(&vals, &template.defaults, docs, &set, args);
    if let Some(prefix) = &args.generate_name {
        vals.name = Some(prefix.clone());
    }
    if template.builtin {
        let mut missing = Vec::new();
        if vals.name.is_none() {
            missing.push("a name: --name NAME (or `name:` in a values file)");
        }
        let needs_image = values::ROLES
            .iter()
            .any(|r| vals.replicas(r) > 0 && vals.role(r).is_some_and(|r| r.image.is_none()));
        if vals.image.is_none() && needs_image {
            missing.push("an image: --image IMAGE (or `image:` in a values file)");
        }
        if values::ROLES.iter().all(|r| vals.replicas(r) == 0) {
            missing.push("at least one replica: every role has 0 (e.g. --workers 2)");
        }
        if !missing.is_empty() {
            return Err(Error::Invalid(format!(
                "{source} needs {}",
                missing.join(" and ")
            )));
        }
    }
    let text = templates::render(&template, &vals)?;
    let mut rendered = manifest::parse_documents(&text, &template.file).map_err(|e| {
        let line = text
            .lines()
            .nth(e.location.line.saturating_sub(1))
            .unwrap_or("");
        Error::Invalid(format!(
            "{} produced invalid YAML at line {} of its output: {}\n  {}",
            template.file, e.location.line, e.message, line
        ))
    })?;
    match rendered.len() {
        1 => Ok((rendered.remove(0).value, source, resources)),
        n => Err(Error::Invalid(format!(
            "{} produced {n} documents; a template must produce exactly one TFJob",
            template.file
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick_start() -> RenderOptions {
        RenderOptions {
            name: Some("tf-dist-train".into()),
            image: Some("tensorflow/tensorflow:2.13.0-gpu".into()),
            workers: Some(3),
            gpus: Some(1),
            command: vec!["python".into(), "-m".into(), "trainer.task".into()],
            ..Default::default()
        }
    }

    #[test]
    fn prepare_renders_injects_and_validates() {
        let kube = ConnectionOptions {
            namespace: Some("team-a".into()),
            ..Default::default()
        };
        let p = prepare(&kube, &quick_start()).unwrap();
        assert_eq!(p.source, "template ps-worker");
        assert_eq!(p.job.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(p.job.replicas(crate::model::ReplicaType::Worker), 3);
        assert!(!p.report.has_errors());
        assert_eq!(p.gateway.secret_name, "taotoken-secret");
        let env = &p.value["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
            ["env"];
        assert_eq!(env[0]["valueFrom"]["secretKeyRef"]["key"], "api-key");
        assert_eq!(serde_json::to_value(&p.job).unwrap(), p.value);
        let yaml = serde_saphyr::to_string(&p.job).unwrap();
        assert!(yaml.starts_with("apiVersion: kubeflow.org/v1\n"), "{yaml}");
    }

    #[test]
    fn prepare_reports_every_error_as_invalid() {
        let mut args = quick_start();
        args.name = Some("Bad_Name".into());
        args.restart_policy = Some("Sometimes".into());
        let err = prepare(&ConnectionOptions::default(), &args).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::ExitCode::Invalid);
        let msg = err.to_string();
        // The name is the flag's fault (issue 39 item 6), said first; the rest still follows.
        assert!(
            msg.starts_with("--name: \"Bad_Name\" is not a valid TFJob name"),
            "{msg}"
        );
        assert!(msg.contains("e.g. \"bad-name\""), "{msg}");
        assert!(!msg.contains("metadata.name"), "{msg}");
        assert!(msg.contains("restartPolicy"), "{msg}");
    }
}
