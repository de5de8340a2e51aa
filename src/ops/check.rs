//! `check`: will this job run here? The same inputs and readiness checks as `submit`, then the
//! placement/quota/reference pre-flight of [`crate::placement`]; nothing is written.
//!
//! The shared steps (the model's read, references, acting on the verdict) are
//! [`super::preflight`]'s; this file is the command and its report.

use super::Context;
use super::preflight;
use super::readiness::{self, Readiness};
use crate::error::{Error, Result};
use crate::model::TFJob;
use crate::output::{Output, ReportFormat};
use crate::pipeline::render::{self, RenderOptions};
use crate::placement::ReadinessFinding;
use crate::print;

/// What `check` does (the flags, clap-free).
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub render: RenderOptions,
    pub output: ReportFormat,
    /// `--allow-missing-refs`: objects the pods need that do not exist yet are warnings.
    pub allow_missing_refs: bool,
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

/// The job's verdict: the worse of where its pods would go and what its queue would do (a
/// queue that holds it for good is `never` whatever the nodes say; queued is `waits`).
pub fn overall_verdict(
    placement: crate::placement::Verdict,
    queue: crate::placement::kueue::QueueVerdict,
) -> crate::placement::Verdict {
    use crate::placement::Verdict;
    use crate::placement::kueue::QueueVerdict;
    let q = match queue {
        QueueVerdict::Fits => Verdict::Fits,
        QueueVerdict::Queued => Verdict::Waits,
        QueueVerdict::Never => Verdict::Never,
        QueueVerdict::Unknown => Verdict::Unknown,
    };
    match (placement, q) {
        (Verdict::Never, _) | (_, Verdict::Never) => Verdict::Never,
        (Verdict::Fits, other) => other,
        (p, _) => p,
    }
}

/// The verdict when readiness found problems (exit 3), in the JSON's `verdict`.
pub const NOT_READY: &str = "notReady";

/// `kubectl tfjob check`: prints the report; exit 3 when not ready, 4 when it can never run.
pub async fn run(ctx: &Context, opts: CheckOptions, out: &mut Output) -> Result<()> {
    let prepared = render::prepare(ctx.conn(), &opts.render)?;
    preflight::print_warnings(&prepared.report, out);
    let mut job = prepared.job;
    let kube = ctx.kube().await?;
    let namespace = preflight::settle_namespace(kube, &mut job)?;

    // The queue first: the placement model then sees the pods as Kueue admits them.
    let queue = super::queue::assess(kube, &namespace, &job).await?;
    // `replace: true`: an existing job is reported as a warning here, not a failure.
    let (readiness, pre) = tokio::join!(
        readiness::check_readiness(kube, &namespace, &job, &prepared.gateway, true),
        preflight::read(kube, &namespace, queue.placement_job(&job)),
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
    let missing = preflight::missing_references(&report, &job, &namespace, kube);
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
    // One verdict for the line, the JSON and the exit code: the queue's joins placement's, and
    // a readiness problem (exit 3) is the verdict whatever the nodes say.
    let overall = overall_verdict(report.verdict(), queue.report.verdict);
    let problems = readiness.failures.len()
        + if opts.allow_missing_refs {
            0
        } else {
            missing.len()
        };
    match opts.output {
        ReportFormat::Json => {
            let mut value =
                serde_json::to_value(&report).map_err(|e| Error::Other(e.to_string()))?;
            value["queue"] = serde_json::to_value(&queue.report).unwrap_or_default();
            if queue.report.system == Some("kueue") {
                value["queue"]["note"] =
                    serde_json::json!(crate::cluster::queue::KUEUE_PODS_READY_NOTE);
            }
            value["verdict"] = serde_json::json!(if problems > 0 {
                NOT_READY
            } else {
                overall.as_str()
            });
            out.data_line(
                &serde_json::to_string_pretty(&value).map_err(|e| Error::Other(e.to_string()))?,
            )?
        }
        ReportFormat::Text => out.data(&print::check::text(
            &report,
            &findings,
            Some(&super::queue::render_text(&queue.report)),
            overall,
            problems,
        ))?,
    }
    for w in &queue.warnings {
        out.note_line(&format!("warning: {w}"));
    }
    if problems > 0 {
        return Err(Error::NotReady {
            message: format!(
                "the cluster is not ready for this job ({} problem{}, listed under Readiness)",
                problems,
                if problems == 1 { "" } else { "s" }
            ),
            hint: Some(format!(
                "Fix {}, then run `kubectl tfjob check` again.",
                if problems == 1 { "it" } else { "them" }
            )),
        });
    }
    if let Some(refused) = queue.refusal {
        return Err(refused);
    }
    preflight::act_on_verdict(&report, &snapshot, &job, false, out)?;
    // In submit's order: readiness, references, the verdict, then the replica pods as server
    // dry runs (a note when the user may not create pods there).
    super::pod_dry_run::check(kube, &namespace, &job, out).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> TFJob {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "tf", "namespace": "default"},
            "spec": {"tfReplicaSpecs": {}}
        }))
        .unwrap()
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
