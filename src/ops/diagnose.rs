//! `kubectl tfjob diagnose NAME`: the command core over [`crate::diagnose`]'s collection and
//! pure checks. It prints the findings (text or JSON), then exits 0 when nothing failed, 4 when
//! something did (3 when the CRD or the job is missing).

use super::Context;
use std::time::Duration;

use crate::cluster::budget::Budget;
use crate::diagnose;
use crate::error::{Error, Result};
use crate::output::{Output, ReportFormat};

/// What `diagnose` looks at and how it reports (the flags, clap-free).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagnoseOptions {
    /// The job, in any form kubectl accepts (`NAME`, `tfjob/NAME`).
    pub name: String,
    pub format: ReportFormat,
    /// Log lines per excerpt.
    pub tail: i64,
    /// Bounds the whole command (exit 5).
    pub timeout: Duration,
}

pub async fn run(ctx: &Context, opts: DiagnoseOptions, out: &mut Output) -> Result<()> {
    let name = diagnose::job_name(&opts.name)?.to_string();
    let timeout = opts.timeout;
    let end = std::time::Instant::now() + timeout;
    let kube = ctx.kube().await?;
    let namespace = kube.namespace.clone();
    // The verdict's reads first; log excerpts (decoration) within 2 s of them and before the
    // deadline. `--timeout` bounds the whole command.
    let budget = Budget::until(end);
    let left = end.saturating_duration_since(std::time::Instant::now());
    let snapshot = tokio::time::timeout(left, diagnose::collect_within(&kube, &namespace, &name, opts.tail, budget))
        .await
        .map_err(|_| {
            Error::Timeout(format!(
                "timed out after {}s diagnosing TFJob {namespace}/{name}: the cluster did not answer every read in time (--timeout)",
                timeout.as_secs()
            ))
        })??;
    let d = diagnose::diagnose(&snapshot);
    match opts.format {
        ReportFormat::Text => {
            let color = out.out_color();
            out.data(&crate::print::diagnosis::text(&d, color))?
        }
        ReportFormat::Json => out.data_line(
            &serde_json::to_string_pretty(&d)
                .map_err(|e| Error::Other(format!("encoding the diagnosis: {e}")))?,
        )?,
    }
    diagnose::outcome(&snapshot, &d)
}
