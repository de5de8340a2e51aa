//! `check`'s report as text: one section per layer (readiness, placement, quota and admission,
//! references) and the verdict. It prints the plain pre-flight [`Forecast`] of `placement` and
//! the readiness findings the command turned its checks into, into the writer it is given.

use std::io::{self, Write};

use crate::placement::{Forecast, ReadinessFinding, Severity, Verdict};

/// The human report, one section per layer; `queue` is the queue layer's line (Kueue or a gang
/// scheduler), already worded by the queue step, printed just before the verdict.
/// `verdict` is the job's, placement and queue together (the caller combines them).
pub fn report(
    report: &Forecast,
    readiness: &[ReadinessFinding],
    queue: Option<&str>,
    verdict: Verdict,
    problems: usize,
    w: &mut dyn Write,
) -> io::Result<()> {
    writeln!(w, "Readiness")?;
    if readiness.is_empty() {
        writeln!(
            w,
            "  [OK]   CRD served, operator running, namespace, access and Secrets in place"
        )?;
    }
    for f in readiness {
        let tag = if f.severity == "error" {
            "[FAIL]"
        } else {
            "[WARN]"
        };
        writeln!(w, "  {tag} {}", f.message)?;
        if let Some(h) = &f.hint {
            writeln!(w, "         → {h}")?;
        }
    }
    let p = &report.placement;
    writeln!(w, "Placement: {} — {}", p.verdict.as_str(), p.reason)?;
    let width = p.pods.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for pod in &p.pods {
        let node = pod.node.as_deref().unwrap_or("-");
        write!(
            w,
            "  {:<6} {:<width$}  {:<6} {node}",
            pod.verdict.as_str(),
            pod.name,
            pod.replica_type,
        )?;
        // A reason that only repeats the job's (shown above) is left out.
        if pod.verdict != Verdict::Fits
            && !pod.reason.is_empty()
            && !pod.reason.ends_with(&p.reason)
        {
            write!(w, "  ({})", pod.reason)?;
        }
        writeln!(w)?;
    }
    writeln!(w, "Quota and admission")?;
    if report.quota.is_empty() {
        writeln!(
            w,
            "  [OK]   no ResourceQuota or LimitRange would refuse the pods"
        )?;
    }
    for q in &report.quota {
        let tag = if q.verdict == Verdict::Never {
            "[FAIL]"
        } else {
            "[WARN]"
        };
        writeln!(w, "  {tag} {} ({}): {}", q.name, q.resource, q.message)?;
    }
    writeln!(w, "References")?;
    // A missing object is a readiness problem, listed there once for every replica type it
    // stops: here it would be said again, once per type.
    let missing = report
        .references
        .iter()
        .filter(|r| r.severity == Severity::Error)
        .count();
    if report.references.is_empty() {
        writeln!(w, "  [OK]   every referenced object exists")?;
    } else if missing > 0 {
        writeln!(w, "  (missing objects are listed under Readiness)")?;
    }
    for r in report
        .references
        .iter()
        .filter(|r| r.severity == Severity::Warning)
    {
        writeln!(w, "  [WARN] {} {}: {}", r.kind, r.name, r.message)?;
    }
    if let Some(line) = queue {
        w.write_all(line.as_bytes())?;
    }
    if problems > 0 {
        // The exit code (3) and the JSON say "not ready": so does the line.
        return writeln!(
            w,
            "Verdict: not ready ({problems} problem{} listed above; placement alone: {})",
            if problems == 1 { "" } else { "s" },
            verdict.as_str()
        );
    }
    writeln!(w, "Verdict: {}", verdict.as_str())
}

/// [`report`] as a string, for the command to hand to its `Output` (which redacts it).
pub fn text(
    report: &Forecast,
    readiness: &[ReadinessFinding],
    queue: Option<&str>,
    verdict: Verdict,
    problems: usize,
) -> String {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = self::report(report, readiness, queue, verdict, problems, &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{Placement, PodPlacement, QuotaFinding, ReferenceFinding};

    fn report(verdict: Verdict) -> Forecast {
        Forecast {
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

    #[test]
    fn text_report_has_a_section_per_layer_and_each_pod_reason() {
        let text = text(&report(Verdict::Never), &[], None, Verdict::Never, 0);
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
}
