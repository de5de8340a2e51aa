//! `check`: will this job run here? The same inputs and readiness checks as `submit`, then the
//! placement/quota/reference pre-flight of [`crate::placement`]; nothing is written.
//!
//! Also the pre-flight's other surfaces: [`gate`] (what `submit` does before its server dry run)
//! and [`on_unschedulable`] (what `wait` and `diagnose` ask when a pod is Unschedulable).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::PodStatus;
use serde::Serialize;

use super::readiness::{self, Readiness};
use super::submit;
use crate::cluster::{self, Action, ConnectionOptions, Kube};
use crate::error::{Error, Result};
use crate::model::TFJob;
use crate::output::{Output, ReportFormat};
use crate::placement::{self, Report, Severity, Snapshot, Verdict};
use crate::render::{self, RenderOptions};

/// What `check` does (the flags, clap-free).
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub render: RenderOptions,
    pub output: ReportFormat,
    /// `--allow-missing-refs`: objects the pods need that do not exist yet are warnings.
    pub allow_missing_refs: bool,
}

/// One readiness finding as it appears in the report's `readiness` array.
#[derive(Debug, Clone, Serialize)]
struct ReadinessFinding {
    /// `error` (submit would stop, exit 3) or `warning`.
    severity: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

fn readiness_findings(r: &Readiness, job: &TFJob) -> Vec<ReadinessFinding> {
    let mut v: Vec<ReadinessFinding> = r
        .failures
        .iter()
        .map(|e| ReadinessFinding {
            severity: "error",
            message: e.to_string(),
            hint: e.hint().map(str::to_string),
        })
        .collect();
    v.extend(r.warnings.iter().map(|w| ReadinessFinding {
        severity: "warning",
        message: w.clone(),
        hint: None,
    }));
    if r.existing.is_some() {
        let name = job.metadata.name.as_deref().unwrap_or_default();
        v.push(ReadinessFinding {
            severity: "warning",
            message: format!("a TFJob named {name:?} already exists here"),
            hint: Some(
                "`submit` refuses it unless given --replace (or choose another --name)".into(),
            ),
        });
    }
    v
}

/// Reads the snapshot (retrying transient failures as a whole) and runs the pure model.
pub async fn preflight(kube: &Kube, namespace: &str, job: &TFJob) -> Result<(Snapshot, Report)> {
    let snapshot = cluster::retry(kube, || placement::collect(&kube.client, namespace, job))
        .await
        .map_err(|e| cluster::explain(e, &Action::new("list", "nodes", None), kube))?;
    let report = placement::check(&snapshot, job);
    Ok((snapshot, report))
}

/// `kubectl tfjob check`: prints the report; exit 3 when not ready, 4 when it can never run.
pub async fn run(conn: &ConnectionOptions, opts: CheckOptions, out: &mut Output) -> Result<()> {
    let prepared = render::prepare(conn, &opts.render)?;
    submit::print_warnings(&prepared.report, out);
    let mut job = prepared.job;
    let kube = cluster::connect(conn).await?;
    let namespace = submit::resolve_namespace(&kube, job.metadata.namespace.as_deref())?;
    job.metadata.namespace = Some(namespace.clone());

    // `replace: true`: an existing job is reported as a warning here, not a failure.
    let (readiness, pre) = tokio::join!(
        readiness::check_readiness(&kube, &namespace, &job, &prepared.gateway, true),
        preflight(&kube, &namespace, &job),
    );
    let (snapshot, mut report) = pre?;
    let mut findings = readiness_findings(&readiness, &job);
    if let Some((message, hint)) = readiness::istio_warning(
        &prepared.report,
        &namespace,
        readiness.istio_injection.as_deref(),
    ) {
        findings.push(ReadinessFinding {
            severity: "warning",
            message,
            hint: Some(hint),
        });
    }
    let missing = missing_references(&report, &job, &namespace, &kube);
    findings.extend(missing.iter().map(|(message, hint)| ReadinessFinding {
        severity: if opts.allow_missing_refs {
            "warning"
        } else {
            "error"
        },
        message: message.clone(),
        hint: Some(hint.clone()),
    }));
    report.readiness = findings
        .iter()
        .map(|f| serde_json::to_value(f).unwrap_or_default())
        .collect();
    match opts.output {
        ReportFormat::Json => out.data_line(
            &serde_json::to_string_pretty(&report).map_err(|e| Error::Other(e.to_string()))?,
        )?,
        ReportFormat::Text => out.data(&render_text(&report, &findings))?,
    }
    let problems = readiness.failures.len()
        + if opts.allow_missing_refs {
            0
        } else {
            missing.len()
        };
    if problems > 0 {
        return Err(Error::NotReady {
            message: format!(
                "the cluster is not ready for this job ({} problem{}, listed under Readiness)",
                problems,
                if problems == 1 { "" } else { "s" }
            ),
            hint: Some("Fix them, then run `kubectl tfjob check` again.".into()),
        });
    }
    act_on_verdict(&report, &snapshot, &job, false, out)?;
    // In submit's order: readiness, references, the verdict, then the replica pods as server
    // dry runs (a note when the user may not create pods there).
    super::pod_dry_run::check(&kube, &namespace, &job, out).await
}

/// What `submit` does before its server dry run: `never` refuses (exit 4, nothing written)
/// unless the cluster-autoscaler may add nodes; `waits` and `unknown` warn; `fits` goes on.
/// A pre-flight that cannot be read at all is a warning, never a reason to block.
pub async fn gate(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    opts: GateOptions,
    out: &mut Output,
) -> Result<()> {
    let (snapshot, report) = match preflight(kube, namespace, job).await {
        Ok(r) => r,
        Err(e) => {
            out.note_line(&format!(
                "warning: could not run the capacity pre-flight ({e}); going on without it"
            ));
            return Ok(());
        }
    };
    let missing = missing_references(&report, job, namespace, kube);
    if !missing.is_empty() && !opts.allow_missing_refs {
        let mut message = format!(
            "the job's pods need {} object{} that do not exist in namespace {namespace:?}; nothing was created:",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        );
        for (m, hint) in &missing {
            message.push_str(&format!("\n  - {m}\n    → {hint}"));
        }
        return Err(Error::NotReady {
            message,
            hint: Some(
                "Create them first, or pass --allow-missing-refs if they will be created after the job on purpose."
                    .into(),
            ),
        });
    }
    for (m, _) in &missing {
        out.note_line(&format!("warning: {m} (--allow-missing-refs)"));
    }
    if !opts.capacity {
        return Ok(());
    }
    if opts.show_verdict {
        out.note_line(&format!(
            "pre-flight: {} — {}",
            report.verdict().as_str(),
            report.placement.reason
        ));
    }
    act_on_verdict(&report, &snapshot, job, true, out)
}

/// What [`gate`] enforces.
#[derive(Debug, Clone, Copy)]
pub struct GateOptions {
    /// Print the verdict (`--dry-run=server`).
    pub show_verdict: bool,
    /// Act on the placement verdict (off with `--skip-capacity-check`).
    pub capacity: bool,
    /// `--allow-missing-refs`.
    pub allow_missing_refs: bool,
}

/// The objects the pods need that do not exist (the pre-flight's reference errors), each as
/// (message, how to create it). Secrets taken as env are left out: readiness requires those
/// itself, with their keys.
fn missing_references(
    report: &Report,
    job: &TFJob,
    ns: &str,
    kube: &Kube,
) -> Vec<(String, String)> {
    let env_secrets: BTreeSet<String> = job
        .spec
        .tf_replica_specs
        .values()
        .filter_map(|s| s.template.spec.as_ref())
        .flat_map(cluster::secret::references)
        .map(|r| r.secret)
        .collect();
    let flags = kube.hints.ns_flags(ns);
    // The pre-flight reports an object once per replica type ("PS pods …", "Worker pods …"):
    // one entry per object here, naming every type it stops.
    let mut by_object: Vec<(&placement::ReferenceFinding, Vec<String>)> = Vec::new();
    for r in report
        .references
        .iter()
        .filter(|r| r.severity == Severity::Error)
        .filter(|r| !(r.kind == "Secret" && env_secrets.contains(&r.name)))
    {
        let who = job
            .spec
            .tf_replica_specs
            .keys()
            .find(|t| r.message.contains(&format!("{t} pods")))
            .cloned();
        match by_object
            .iter_mut()
            .find(|(seen, _)| seen.kind == r.kind && seen.name == r.name)
        {
            Some((_, types)) => types.extend(who),
            None => by_object.push((r, who.into_iter().collect())),
        }
    }
    by_object
        .into_iter()
        .map(|(r, types)| {
            let mut message = r.message.clone();
            if types.len() > 1 {
                message = message.replacen(
                    &format!("{} pods", types[0]),
                    &format!("{} pods", types.join(" and ")),
                    1,
                );
            }
            let name = &r.name;
            let hint =
                placement::refs::create_hint(&r.kind, name, &flags, &kube.hints.hint_suffix());
            (format!("{} {ns}/{name}: {message}", r.kind), hint)
        })
        .collect()
}

/// Exit status and warnings for a verdict (shared by `check` and `submit`).
fn act_on_verdict(
    report: &Report,
    snapshot: &Snapshot,
    job: &TFJob,
    submitting: bool,
    out: &mut Output,
) -> Result<()> {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    let reason = &report.placement.reason;
    match report.verdict() {
        Verdict::Fits => Ok(()),
        Verdict::Waits => {
            out.note_line(&format!(
                "warning: TFJob {ns}/{name} would wait for capacity: {reason}"
            ));
            Ok(())
        }
        Verdict::Unknown => {
            out.note_line(&format!(
                "warning: cannot tell whether TFJob {ns}/{name} fits: {reason}{}",
                if submitting { "; going on" } else { "" }
            ));
            Ok(())
        }
        Verdict::Never if Report::autoscaled(snapshot) => {
            out.note_line(&format!(
                "warning: TFJob {ns}/{name} does not fit on the current nodes ({reason}), but the \
                 cluster-autoscaler is present (kube-system/cluster-autoscaler-status), so nodes may be added"
            ));
            Ok(())
        }
        Verdict::Never => Err(Error::WontRun {
            message: format!(
                "TFJob {ns}/{name} can never run on this cluster as it is: {}{}",
                // The scheduler's reasons end with a period of their own.
                if submitting {
                    reason.trim_end_matches('.')
                } else {
                    reason.as_str()
                },
                if submitting {
                    ". Nothing was created."
                } else {
                    ""
                }
            ),
            hint: Some(match (selector_hint(job, snapshot, reason), submitting) {
                (Some(hint), _) => hint,
                (None, true) => {
                    "Lower the replicas or their requests, or add capacity. If an autoscaler adds nodes \
                 on demand, pass --skip-capacity-check."
                        .into()
                }
                (None, false) => {
                    "Lower the replicas or their requests, or add capacity; `kubectl tfjob check -o json` \
                 lists every pod's reason."
                        .into()
                }
            }),
        }),
    }
}

/// When pods select nodes that do not exist, capacity is not the cure: name each nodeSelector
/// pair no node carries (kube-scheduler's NodeAffinity filter, `didn't match Pod's node
/// affinity/selector`), or the required affinity when every pair is carried somewhere.
fn selector_hint(job: &TFJob, snapshot: &Snapshot, reason: &str) -> Option<String> {
    let nodes = snapshot.nodes.as_ref()?;
    let mut unmatched: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (role, spec) in &job.spec.tf_replica_specs {
        let Some(selector) = spec
            .template
            .spec
            .as_ref()
            .and_then(|p| p.node_selector.as_ref())
        else {
            continue;
        };
        for (k, v) in selector {
            if !nodes.iter().any(|n| n.labels.get(k) == Some(v)) {
                unmatched
                    .entry(format!("{k}={v}"))
                    .or_default()
                    .push(role.clone());
            }
        }
    }
    if unmatched.is_empty() {
        return reason.contains("node affinity/selector").then(|| {
            "The pods' node affinity or nodeSelector matches no node that could hold them: compare \
             it with `kubectl get nodes --show-labels`."
                .to_string()
        });
    }
    let pairs: Vec<String> = unmatched
        .iter()
        .map(|(pair, roles)| format!("nodeSelector {pair} ({})", roles.join(", ")))
        .collect();
    let first = unmatched.keys().next().expect("not empty");
    Some(format!(
        "No node matches {}: label the nodes meant for the job (`kubectl label node NODE {first}`) or fix the selector; adding capacity elsewhere will not help.",
        pairs.join(", ")
    ))
}

/// The human report: one section per layer.
fn render_text(report: &Report, readiness: &[ReadinessFinding]) -> String {
    let mut s = String::new();
    s.push_str("Readiness\n");
    if readiness.is_empty() {
        s.push_str(
            "  [OK]   CRD served, operator running, namespace, access and Secrets in place\n",
        );
    }
    for f in readiness {
        let tag = if f.severity == "error" {
            "[FAIL]"
        } else {
            "[WARN]"
        };
        s.push_str(&format!("  {tag} {}\n", f.message));
        if let Some(h) = &f.hint {
            s.push_str(&format!("         → {h}\n"));
        }
    }
    let p = &report.placement;
    s.push_str(&format!(
        "Placement: {} — {}\n",
        p.verdict.as_str(),
        p.reason
    ));
    let width = p.pods.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for pod in &p.pods {
        let node = pod.node.as_deref().unwrap_or("-");
        s.push_str(&format!(
            "  {:<6} {:<width$}  {:<6} {node}",
            pod.verdict.as_str(),
            pod.name,
            pod.replica_type,
        ));
        // A reason that only repeats the job's (shown above) is left out.
        if pod.verdict != Verdict::Fits
            && !pod.reason.is_empty()
            && !pod.reason.ends_with(&p.reason)
        {
            s.push_str(&format!("  ({})", pod.reason));
        }
        s.push('\n');
    }
    s.push_str("Quota and admission\n");
    if report.quota.is_empty() {
        s.push_str("  [OK]   no ResourceQuota or LimitRange would refuse the pods\n");
    }
    for q in &report.quota {
        let tag = if q.verdict == Verdict::Never {
            "[FAIL]"
        } else {
            "[WARN]"
        };
        s.push_str(&format!(
            "  {tag} {} ({}): {}\n",
            q.name, q.resource, q.message
        ));
    }
    s.push_str("References\n");
    if report.references.is_empty() {
        s.push_str("  [OK]   every referenced object exists\n");
    }
    for r in &report.references {
        let tag = match r.severity {
            Severity::Error => "[FAIL]",
            Severity::Warning => "[WARN]",
        };
        s.push_str(&format!("  {tag} {} {}: {}\n", r.kind, r.name, r.message));
    }
    s.push_str(&format!("Verdict: {}\n", report.verdict().as_str()));
    s
}

/// For a job already created whose pods are Unschedulable: the model's verdict for it, with the
/// job's own bound pods taken out of the cluster (they would otherwise hold resources against
/// themselves). `None` when the model has nothing to add (fits, unknown, or unreadable).
pub async fn unschedulable_verdict(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
) -> Option<(Verdict, String)> {
    unschedulable_model(kube, namespace, job)
        .await
        .map(|(v, why, _)| (v, why))
}

/// [`unschedulable_verdict`], with the hint for `never` when a selector is the cause.
async fn unschedulable_model(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
) -> Option<(Verdict, String, Option<String>)> {
    let mut snapshot = cluster::retry(kube, || placement::collect(&kube.client, namespace, job))
        .await
        .map_err(|e| tracing::debug!(error = %e, "pre-flight for an unschedulable pod failed"))
        .ok()?;
    let pods = placement::job_pods(job, &snapshot.limit_ranges);
    let own: BTreeSet<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    if let Some(bound) = &mut snapshot.bound_pods {
        bound.remove_kept(|p| p.namespace == namespace && own.contains(p.name.as_str()));
    }
    // Quota usage already counts the job's created pods, so only placement is asked here.
    let placed = placement::place(&snapshot, &pods);
    match placed.verdict {
        Verdict::Never if Report::autoscaled(&snapshot) => None,
        v @ (Verdict::Never | Verdict::Waits) => {
            let hint = selector_hint(job, &snapshot, &placed.reason);
            Some((v, placed.reason, hint))
        }
        Verdict::Fits | Verdict::Unknown => None,
    }
}

/// Whether any pod (given by its status) has been found Unschedulable (PodScheduled False).
pub fn any_unschedulable<'a>(statuses: impl IntoIterator<Item = Option<&'a PodStatus>>) -> bool {
    statuses.into_iter().flatten().any(|s| {
        s.conditions.iter().flatten().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })
    })
}

/// `wait`'s hook when a pod is Unschedulable: `never` ends the wait (exit 4) with the model's
/// reason; `waits` says what it waits for and keeps waiting.
pub async fn on_unschedulable(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    out: &mut Output,
) -> Result<()> {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    match unschedulable_model(kube, namespace, job).await {
        Some((Verdict::Never, why, hint)) => Err(Error::WontRun {
            message: format!(
                "TFJob {namespace}/{name} can never be scheduled on this cluster: {why}"
            ),
            hint: Some(hint.unwrap_or_else(|| format!(
                "Lower the replicas or their requests, or add capacity; see `kubectl tfjob diagnose {name} -n {namespace}`."
            ))),
        }),
        Some((_, why, _)) => {
            out.note_line(&format!("waiting for capacity: {why}"));
            Ok(())
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{Placement, PodPlacement, QuotaFinding, ReferenceFinding};

    fn report(verdict: Verdict) -> Report {
        Report {
            placement: Placement {
                verdict,
                reason: "3 nvidia.com/gpu needed at once, 1 allocatable".into(),
                pods: vec![PodPlacement {
                    name: "tf-worker-0".into(),
                    replica_type: "Worker".into(),
                    index: 0,
                    node: None,
                    verdict,
                    reason: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.".into(),
                }],
            },
            quota: vec![QuotaFinding {
                name: "gpu-quota".into(),
                resource: "requests.nvidia.com/gpu".into(),
                verdict: Verdict::Never,
                message: "exceeded quota: gpu-quota".into(),
            }],
            references: vec![ReferenceFinding {
                kind: "Secret".into(),
                name: "creds".into(),
                severity: Severity::Warning,
                message: "not found".into(),
            }],
            readiness: vec![],
        }
    }

    fn job() -> TFJob {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "tf", "namespace": "default"},
            "spec": {"tfReplicaSpecs": {}}
        }))
        .unwrap()
    }

    #[test]
    fn text_report_has_a_section_per_layer_and_each_pod_reason() {
        let text = render_text(&report(Verdict::Never), &[]);
        for want in [
            "Readiness\n  [OK]",
            "Placement: never — 3 nvidia.com/gpu needed at once",
            "tf-worker-0",
            "(0/1 nodes are available: 1 Insufficient nvidia.com/gpu.)",
            "[FAIL] gpu-quota (requests.nvidia.com/gpu): exceeded quota: gpu-quota",
            "[WARN] Secret creds: not found",
            "Verdict: never",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
    }

    #[test]
    fn never_is_exit_4_unless_an_autoscaler_may_add_nodes() {
        let (mut out, _, err) = Output::buffers();
        let plain = Snapshot::default();
        let e =
            act_on_verdict(&report(Verdict::Never), &plain, &job(), true, &mut out).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::JobFailed);
        assert!(e.to_string().contains("Nothing was created"), "{e}");
        assert!(e.hint().unwrap().contains("--skip-capacity-check"));

        let scaled = Snapshot {
            autoscaler: true,
            ..Default::default()
        };
        act_on_verdict(&report(Verdict::Never), &scaled, &job(), true, &mut out).unwrap();
        assert!(err.text().contains("nodes may be added"), "{}", err.text());
    }

    #[test]
    fn waits_and_unknown_warn_and_go_on() {
        for v in [Verdict::Waits, Verdict::Unknown] {
            let (mut out, stdout, err) = Output::buffers();
            act_on_verdict(&report(v), &Snapshot::default(), &job(), false, &mut out).unwrap();
            assert!(err.text().starts_with("warning: "), "{}", err.text());
            assert!(err.text().contains("3 nvidia.com/gpu"), "{}", err.text());
            assert_eq!(stdout.text(), "");
        }
    }

    #[test]
    fn readiness_lists_failures_warnings_and_an_existing_job() {
        let r = Readiness {
            failures: vec![Error::not_ready("CRD missing", "install it")],
            warnings: vec!["operator unknown".into()],
            live_schema: None,
            existing: Some(job()),
            stored_base_url: None,
            istio_injection: None,
        };
        let f = readiness_findings(&r, &job());
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json[0]["severity"], "error");
        assert_eq!(json[0]["hint"], "install it");
        assert_eq!(json[1]["severity"], "warning");
        assert!(json[1].get("hint").is_none());
        assert!(json[2]["hint"].as_str().unwrap().contains("--replace"));
    }
}
