//! The pre-flight service: the steps `check`, `submit` and `wait` share before and while a job
//! runs, over the pure model of [`crate::placement`]. `check` prints the whole report; `submit`
//! runs [`gate`] (references, then the verdict) before its server dry run; `wait` asks
//! [`on_unschedulable`] once a pod is Unschedulable, and `diagnose` asks the same
//! [`live::unschedulable`] question itself (it sits below `ops`). The offline input's warnings
//! and the namespace a job goes to are decided here too, once for `check` and `submit`.

use std::collections::BTreeSet;

use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::model::TFJob;
use crate::output::Output;
use crate::pipeline::validate;
use crate::placement::live::{self, Unschedulable};
use crate::placement::{self, ClusterState, Forecast, Severity, Verdict};

/// The offline validation's findings (warnings: errors stopped the command earlier), on stderr.
pub fn print_warnings(report: &validate::Report, out: &mut Output) {
    if !report.findings.is_empty() {
        out.note(&report.render_text());
    }
    // A manifest sent as written without the gateway key: one line, not one per container
    // (those are `-v`'s), so the job does not fail later with no word said here.
    let missing: Vec<&validate::Finding> = report
        .findings
        .iter()
        .filter(|f| f.rule == "gateway-env")
        .collect();
    if !missing.is_empty() && !crate::output::logging::verbose() {
        let what = missing[0]
            .message
            .split(':')
            .next()
            .unwrap_or("no gateway key");
        out.note_line(&format!(
            "note: {what} in {} container{}: the manifest is sent as written; pass --inject-gateway-env to add it from the Secret (-v lists them)",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        ));
    }
}

/// The job's namespace, settled once and written into it: what every command that sends a job
/// sees, by the one rule ([`crate::model::names::object_namespace`]).
pub fn settle_namespace(kube: &Kube, job: &mut TFJob) -> Result<String> {
    let namespace = crate::model::names::object_namespace(
        job.metadata.namespace.as_deref(),
        &kube.namespace,
        kube.namespace_from_flag,
        "the job",
    )
    .map_err(Error::Usage)?;
    job.metadata.namespace = Some(namespace.clone());
    Ok(namespace)
}

/// Reads the snapshot (retrying transient failures as a whole) and runs the pure model.
pub async fn read(kube: &Kube, namespace: &str, job: &TFJob) -> Result<(ClusterState, Forecast)> {
    let snapshot = cluster::retry(kube, || placement::collect(&kube.client, namespace, job))
        .await
        .map_err(|e| cluster::explain(e, &Action::new("list", "nodes", None), kube))?;
    let report = placement::check(&snapshot, job);
    Ok((snapshot, report))
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
    let (snapshot, report) = match read(kube, namespace, job).await {
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
/// The Secrets the job's containers read by `secretKeyRef`/`envFrom`: readiness checks those
/// (with the key), so the reference checks leave them out: one problem, one line.
pub(crate) fn env_secrets(job: &TFJob) -> BTreeSet<String> {
    job.spec
        .tf_replica_specs
        .values()
        .filter_map(|s| s.template.spec.as_ref())
        .flat_map(placement::refs::secret_references)
        .map(|r| r.secret)
        .collect()
}

pub(crate) fn missing_references(
    report: &Forecast,
    job: &TFJob,
    ns: &str,
    kube: &Kube,
) -> Vec<(String, String)> {
    let env_secrets = env_secrets(job);
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
pub(crate) fn act_on_verdict(
    report: &Forecast,
    snapshot: &ClusterState,
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
        Verdict::Never if Forecast::autoscaled(snapshot) => {
            out.note_line(&format!(
                "warning: TFJob {ns}/{name} does not fit on the current nodes ({reason}), but {}, so nodes may be added",
                Forecast::autoscaler(snapshot).unwrap_or_default()
            ));
            Ok(())
        }
        Verdict::Never => Err(Error::WontRun {
            message: {
                let mut tail: Vec<String> = Vec::new();
                // A status ConfigMap left behind is no autoscaler: say why it was not counted.
                if let Some(why) = &snapshot.autoscaler_ruled_out {
                    tail.push(format!(
                        "kube-system/cluster-autoscaler-status exists, but {why}."
                    ));
                }
                if submitting {
                    tail.push("Nothing was created.".into());
                }
                let head = format!("TFJob {ns}/{name} can never run on this cluster as it is");
                if tail.is_empty() {
                    format!("{head}: {reason}")
                } else {
                    // The scheduler's reasons end with a period of their own.
                    format!(
                        "{head}: {}. {}",
                        reason.trim_end_matches('.'),
                        tail.join(" ")
                    )
                }
            },
            hint: Some(match (live::cause_hint(job, snapshot, reason), submitting) {
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

/// For a job already created whose pods are Unschedulable: the model's verdict for it
/// ([`live::unschedulable`]). `None` when the model has nothing to add or the snapshot could
/// not be read (this only decorates a wait, so a failed read is not an error).
pub async fn unschedulable_verdict(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
) -> Option<Unschedulable> {
    let snapshot = cluster::retry(kube, || placement::collect(&kube.client, namespace, job))
        .await
        .map_err(|e| tracing::debug!(error = %e, "pre-flight for an unschedulable pod failed"))
        .ok()?;
    live::unschedulable(snapshot, namespace, job)
}

/// `wait`'s hook when a pod is Unschedulable: `never` ends the wait (exit 4) with the model's
/// reason, unless capacity may come (the user said so with `--skip-capacity-check`, or an
/// autoscaler is present): then, as for `waits`, it says what it waits for and keeps waiting
/// (bounded by `--pending-timeout`). Returns what the wait now waits for, for its progress line.
pub async fn on_unschedulable(
    kube: &Kube,
    namespace: &str,
    job: &TFJob,
    capacity_may_come: bool,
    out: &mut Output,
) -> Result<Option<String>> {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let Ok(snapshot) = cluster::retry(kube, || placement::collect(&kube.client, namespace, job))
        .await
        .map_err(|e| tracing::debug!(error = %e, "pre-flight for an unschedulable pod failed"))
    else {
        return Ok(None);
    };
    let autoscaler = Forecast::autoscaler(&snapshot);
    let verdict = live::placement(snapshot, namespace, job);
    let source = match (capacity_may_come, autoscaler) {
        (_, Some(a)) => Some(a.to_string()),
        (true, None) => Some("--skip-capacity-check says nodes may be added".to_string()),
        (false, None) => None,
    };
    match (verdict, source) {
        (Some(Unschedulable { verdict: Verdict::Never, reason: why, .. }), Some(source)) => {
            out.note_line(&format!(
                "waiting for capacity: TFJob {namespace}/{name} does not fit on the current nodes ({}), but {source}; waiting for nodes to be added (up to --pending-timeout, or --timeout without it).",
                why.trim_end_matches('.')
            ));
            Ok(Some(format!("waiting for capacity ({source})")))
        }
        (Some(Unschedulable { verdict: Verdict::Never, reason: why, hint }), None) => Err(Error::WontRun {
            message: format!(
                "TFJob {namespace}/{name} can never be scheduled on this cluster: {why}"
            ),
            hint: Some(hint.unwrap_or_else(|| format!(
                "Lower the replicas or their requests, or add capacity; see `kubectl tfjob diagnose {name} -n {namespace}`."
            ))),
        }),
        (Some(Unschedulable { reason: why, .. }), _) => {
            out.note_line(&format!("waiting for capacity: {why}"));
            Ok(Some("waiting for capacity".into()))
        }
        (None, _) => Ok(None),
    }
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

    fn job() -> TFJob {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "tf", "namespace": "default"},
            "spec": {"tfReplicaSpecs": {}}
        }))
        .unwrap()
    }

    #[test]
    fn never_is_exit_4_unless_an_autoscaler_may_add_nodes() {
        let (mut out, _, err) = Output::buffers();
        let plain = ClusterState::default();
        let e =
            act_on_verdict(&report(Verdict::Never), &plain, &job(), true, &mut out).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::JobFailed);
        assert!(e.to_string().contains("Nothing was created"), "{e}");
        assert!(e.hint().unwrap().contains("--skip-capacity-check"));

        let scaled = ClusterState {
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
            act_on_verdict(
                &report(v),
                &ClusterState::default(),
                &job(),
                false,
                &mut out,
            )
            .unwrap();
            assert!(err.text().starts_with("warning: "), "{}", err.text());
            assert!(err.text().contains("3 nvidia.com/gpu"), "{}", err.text());
            assert_eq!(stdout.text(), "");
        }
    }
}
