//! `check`: will this job run here? The same inputs and readiness checks as `submit`, then the
//! placement/quota/reference pre-flight of [`crate::placement`]; nothing is written.
//!
//! The shared steps (the model's read, references, acting on the verdict) are
//! [`super::preflight`]'s; this file is the command and its report.

use serde::Serialize;

use super::preflight;
use super::readiness::{self, Readiness};
use crate::cluster::{self, ConnectionOptions};
use crate::error::{Error, Result};
use crate::model::TFJob;
use crate::output::{Output, ReportFormat};
use crate::placement::{Report, Severity, Verdict};
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

/// `kubectl tfjob check`: prints the report; exit 3 when not ready, 4 when it can never run.
pub async fn run(conn: &ConnectionOptions, opts: CheckOptions, out: &mut Output) -> Result<()> {
    let prepared = render::prepare(conn, &opts.render)?;
    preflight::print_warnings(&prepared.report, out);
    let mut job = prepared.job;
    let kube = cluster::connect(conn).await?;
    let namespace = preflight::resolve_namespace(&kube, job.metadata.namespace.as_deref())?;
    job.metadata.namespace = Some(namespace.clone());

    // `replace: true`: an existing job is reported as a warning here, not a failure.
    let (readiness, pre) = tokio::join!(
        readiness::check_readiness(&kube, &namespace, &job, &prepared.gateway, true),
        preflight::read(&kube, &namespace, &job),
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
    let missing = preflight::missing_references(&report, &job, &namespace, &kube);
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
    preflight::act_on_verdict(&report, &snapshot, &job, false, out)?;
    // In submit's order: readiness, references, the verdict, then the replica pods as server
    // dry runs (a note when the user may not create pods there).
    super::pod_dry_run::check(&kube, &namespace, &job, out).await
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
