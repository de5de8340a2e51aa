//! `kubectl tfjob diagnose NAME`: the command core over [`crate::diagnose`]'s collection and
//! pure checks. It prints the findings (text or JSON), then exits 0 when nothing failed, 4 when
//! something did (3 when the CRD or the job is missing).

use super::Context;

use crate::cluster::budget::Budget;
use crate::diagnose;
use crate::error::{Error, Result};
use crate::output::Output;

/// `-o`: the report as text, or the same report as JSON or YAML (kubectl's `-o yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiagnoseFormat {
    #[default]
    Text,
    Json,
    Yaml,
}

/// When `diagnose` looks inside the pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InPod {
    /// The default: probe when every replica of an unfinished job runs; otherwise the layers
    /// below already say why, and no row is added.
    #[default]
    Auto,
    /// `--probe`: the row always, saying why nothing was probed when a replica does not run.
    Always,
    /// `--no-probe`: no exec; the row says what was not checked.
    Never,
}

/// What `diagnose` looks at and how it reports (the flags, clap-free).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagnoseOptions {
    pub format: DiagnoseFormat,
    /// Log lines per excerpt.
    pub tail: i64,
    /// Restarts of one container that make a crash loop (`--max-restarts`).
    pub max_restarts: u32,
    /// The in-pod layer: `ops::probe` when every replica runs.
    pub in_pod: InPod,
    /// `--progress-pattern`: the user's shape of a progress line (a regex with `step`), as
    /// written (compiled once more where it is read, and checked by the CLI).
    pub progress_pattern: Option<String>,
    /// `--save DIR`: the evidence `wait --save` keeps, written after the report.
    pub save: Option<super::evidence::SaveOptions>,
}

/// `kubectl tfjob diagnose TARGET`: a TFJob layer by layer; a JobSet by what JobSet writes
/// ([`jobset::run`]).
pub async fn run(
    ctx: &Context,
    target: &crate::cluster::Target,
    opts: DiagnoseOptions,
    out: &mut Output,
) -> Result<()> {
    if let crate::cluster::Target::JobSet(name) = target {
        return crate::ops::workload::jobset::diagnose(ctx, name, out).await;
    }
    let name = target.name().to_string();
    let kube = ctx.kube().await?;
    let namespace = kube.namespace.clone();
    // `--timeout` is the command's deadline, the context's alone. The verdict's reads first; log
    // excerpts (decoration) within 2 s of them and before the deadline.
    let deadline = ctx.deadline();
    let end = deadline.end();
    let budget = Budget::until(end);
    let timed_out = || {
        // The step it was in, as `collect_within` names them.
        let phase = Some(deadline.current_phase())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| format!("diagnosing TFJob {namespace}/{name}"));
        Error::Timeout(format!(
            "timed out after {} {phase}: the cluster did not answer every read in time (--timeout)",
            crate::model::duration::go(deadline.timeout().unwrap_or_default()),
        ))
    };
    let collected = budget
        .attempt(diagnose::collect_within(
            kube, &namespace, &name, opts.tail, budget,
        ))
        .await;
    let mut snapshot = match collected {
        Some(Ok(snapshot)) => snapshot,
        // Cut off by the deadline, here or in a request's retries: one message either way.
        None | Some(Err(Error::Timeout(_))) => return Err(timed_out()),
        Some(Err(e)) => return Err(e),
    };
    // A job that is not there is said as every verb says it (the name meant, the list to look
    // at), not as a report of layers that all read "not reached". A missing CRD is the report's
    // first row, so it keeps the report.
    if snapshot.job.is_none() && snapshot.crd != diagnose::CrdState::Missing {
        return Err(crate::cluster::notfound::tfjob(kube, &namespace, &name).await);
    }
    snapshot.max_restarts = opts.max_restarts;
    snapshot.progress_pattern = match &opts.progress_pattern {
        Some(p) => Some(
            diagnose::progress::pattern(p)
                .map_err(|e| Error::Usage(format!("--progress-pattern: {e}")))?,
        ),
        None => None,
    };
    // How long each running replica has been silent: cheap decoration, within what is left.
    let _ = budget
        .attempt(diagnose::read_last_logs(kube, &mut snapshot, budget))
        .await;
    let mut d = diagnose::diagnose(&snapshot);
    let probe = match opts.in_pod {
        InPod::Always => true,
        InPod::Auto => diagnose::every_replica_runs(&snapshot),
        InPod::Never => false,
    };
    if probe && snapshot.job.is_some() {
        deadline.phase(format!("probing TFJob {namespace}/{name} inside its pods"));
        d.findings
            .push(super::probe::layer(kube, &namespace, &name, end).await);
    } else if opts.in_pod == InPod::Never && snapshot.job.is_some() {
        // Said, so an all-[ok] report is not read as "it trains" (issue 46).
        let command = diagnose::inpod::probe_command(&kube.hints, &namespace, &name);
        d.findings.push(
            diagnose::Finding::new(
                diagnose::Layer::InPod,
                diagnose::Grade::Info,
                "not checked (--no-probe): TF_CONFIG, the peers and the gateway as the training process sees them",
            )
            .next(command),
        );
    }
    let encoding = |e: String| Error::Other(format!("encoding the diagnosis: {e}"));
    match opts.format {
        DiagnoseFormat::Text => {
            let color = out.out_color();
            out.data(&crate::print::diagnosis::text(&d, color))?
        }
        DiagnoseFormat::Json => {
            out.data_line(&serde_json::to_string_pretty(&d).map_err(|e| encoding(e.to_string()))?)?
        }
        DiagnoseFormat::Yaml => {
            out.data(&serde_saphyr::to_string(&d).map_err(|e| encoding(e.to_string()))?)?
        }
    }
    // The evidence, after the verdict: what the report read, kept before a cleanup deletes it.
    if let Some(save) = opts.save.clone() {
        deadline.phase(format!("saving the evidence of TFJob {namespace}/{name}"));
        let mut saver = super::evidence::Saver::new(save, &namespace, &name, opts.max_restarts);
        let (_, err) = out.streams();
        saver.save(kube, "diagnose --save", end, err).await?;
    }
    match diagnose::outcome(&snapshot, &d) {
        // Said as every command says it, with where the job is or the name meant.
        Err(Error::NotFound(_)) if snapshot.job.is_none() => {
            Err(crate::cluster::notfound::tfjob(kube, &namespace, &name).await)
        }
        other => other,
    }
}
