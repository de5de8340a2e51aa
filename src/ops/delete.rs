//! `delete`: kubectl's semantics for TFJobs. Exactly one DELETE per job (names are not fetched
//! first, as kubectl's builder does with `RequireObject(false)`; a selector or `all` costs one
//! list), then — unless told not to wait — one watch per job for its uid to disappear
//! (kube-runtime `await_condition` + `conditions::is_deleted`) and one pod watch by label until
//! the job's pods are gone too (not with `orphan`, which leaves them).

use std::io::Write;
use std::time::Duration;

use kube::api::{Api, DeleteParams, ListParams, Preconditions, PropagationPolicy};
use kube::runtime::{conditions, wait::await_condition};
use kube::{Client, ResourceExt};

use super::Context;
use crate::cluster::pod::Pod;
use crate::cluster::{self, Kube, Target};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::output::Output;

/// `--cascade`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cascade {
    /// Delete the job now; the garbage collector removes its pods after.
    #[default]
    Background,
    /// The job stays (with a finalizer) until its pods are gone.
    Foreground,
    /// Delete the job, keep its pods.
    Orphan,
}

/// `--dry-run` (the one enum all commands share): `Client` prints what would be deleted and
/// sends nothing; `Server` sends the DELETE with `dryRun=All`.
pub use crate::ops::DryRun;

/// How long `delete --wait` waits by default (`--timeout 0`).
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(300);

/// What to delete and how.
#[derive(Debug, Clone)]
pub struct DeleteOptions {
    pub names: Vec<String>,
    /// `-l`: every job matching, in the namespace.
    pub selector: Option<String>,
    /// `--all`: every job of the namespace (never across namespaces).
    pub all: bool,
    pub cascade: Cascade,
    /// `--grace-period` (seconds) passed to the API.
    pub grace_period: Option<i64>,
    /// Wait until the jobs and their pods are gone (kubectl's default: true), within the
    /// command's deadline ([`WAIT_TIMEOUT`] unless `--timeout` says otherwise).
    pub wait: bool,
    pub dry_run: DryRun,
    pub ignore_not_found: bool,
    /// With one name: the uid of the job the caller followed. The DELETE carries it as a
    /// precondition, so a job re-created under the name meanwhile is never deleted.
    pub uid: Option<String>,
}

impl Default for DeleteOptions {
    fn default() -> Self {
        DeleteOptions {
            names: Vec::new(),
            selector: None,
            all: false,
            cascade: Cascade::Background,
            grace_period: None,
            wait: true,
            dry_run: DryRun::None,
            ignore_not_found: false,
            uid: None,
        }
    }
}

/// kubectl's confirmation line.
pub fn deleted_line(name: &str, dry_run: DryRun) -> String {
    let suffix = match dry_run {
        DryRun::None => "",
        DryRun::Client => " (dry run)",
        DryRun::Server => " (server dry run)",
    };
    format!("tfjob.kubeflow.org \"{name}\" deleted{suffix}")
}

/// `kubectl tfjob delete TARGET… | -l | --all`: deletes in the context's namespace. The TFJobs
/// are `targets`' names (`opts.names` is filled from them); a JobSet is deleted on its own.
pub async fn run(
    ctx: &Context,
    targets: &[Target],
    mut opts: DeleteOptions,
    out: &mut Output,
) -> Result<()> {
    if let [Target::JobSet(name)] = targets {
        if opts.uid.is_some() {
            return Err(Error::Usage(
                "--uid is for TFJobs; a JobSet is deleted by name".into(),
            ));
        }
        let kube = ctx.kube().await?;
        let js = super::workload::jobset::read_jobset(kube, name).await?;
        return super::workload::jobset::delete(kube, &js, opts.wait, out).await;
    }
    opts.names
        .extend(super::workload::tfjob_names(targets, "deleted", "delete")?);
    ctx.with_streams(out, async |kube, ns, data, notes| {
        delete(kube, ns, &opts, data, notes).await
    })
    .await
}

/// Deletes the jobs; `tfjob.kubeflow.org "NAME" deleted` per job on `out`, waiting progress on
/// `err`. Returns the names deleted. A missing job is an error (after the others were handled)
/// unless `ignore_not_found`.
pub async fn delete(
    kube: &Kube,
    namespace: &str,
    opts: &DeleteOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Vec<String>> {
    let selecting = opts.all || opts.selector.is_some();
    if selecting != opts.names.is_empty() {
        return Err(Error::Usage(
            "give job names, or -l/--selector, or --all (exactly one of them)".into(),
        ));
    }
    let client = &kube.client;
    let api: Api<TFJob> = Api::namespaced(client.clone(), namespace);
    let io = |e: std::io::Error| Error::io("writing output", e);
    let targets = targets(kube, &api, opts, err).await?;
    let mut dp = DeleteParams {
        propagation_policy: Some(match opts.cascade {
            Cascade::Background => PropagationPolicy::Background,
            Cascade::Foreground => PropagationPolicy::Foreground,
            Cascade::Orphan => PropagationPolicy::Orphan,
        }),
        grace_period_seconds: opts.grace_period.map(|g| g.max(0) as u32),
        ..Default::default()
    };
    if opts.dry_run == DryRun::Server {
        dp.dry_run = true;
    }
    let mut deleted: Vec<(String, String)> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    // kubectl goes on past a failed job and reports each; so does this (exit non-zero after).
    let mut failed: Vec<Error> = Vec::new();
    for (name, uid) in &targets {
        if opts.dry_run == DryRun::Client {
            writeln!(out, "{}", deleted_line(name, opts.dry_run)).map_err(io)?;
            continue;
        }
        if !dp.dry_run {
            let check = format!(
                "kubectl get tfjob {name} {}",
                kube.hints.ns_flags(namespace)
            );
            crate::error::on_interrupt_write("TFJob", namespace, name, "deleted", &check);
        }
        let outcome = delete_one(kube, &api, name, uid.clone(), &dp).await;
        crate::error::on_interrupt_settled();
        match outcome {
            Ok(Gone::Deleted { uid, reply_lost }) => {
                writeln!(out, "{}", deleted_line(name, opts.dry_run)).map_err(io)?;
                if reply_lost {
                    writeln!(
                        err,
                        "tfjob.kubeflow.org \"{name}\" deleted (the reply was lost; the job is gone or going)"
                    )
                    .map_err(io)?;
                }
                deleted.push((name.clone(), uid));
            }
            Ok(Gone::Missing) => {
                if !opts.ignore_not_found {
                    missing.push(name.clone());
                }
            }
            Err(e) => {
                if selecting || targets.len() > 1 {
                    writeln!(err, "error: {e}").map_err(io)?;
                }
                failed.push(e);
            }
        }
    }
    out.flush().map_err(io)?;
    if opts.wait && opts.dry_run == DryRun::None && !deleted.is_empty() {
        let which: Vec<String> = deleted.iter().map(|(n, _)| format!("tfjob/{n}")).collect();
        kube.deadline
            .phase(format!("waiting for {} to be deleted", which.join(", ")));
        let wait = wait_gone(
            client,
            namespace,
            &deleted,
            opts.cascade != Cascade::Orphan,
            err,
        );
        // The command's one deadline (`--timeout`, five minutes by default with --wait).
        match kube.deadline.attempt(wait).await {
            Some(r) => r?,
            None => return Err(kube.deadline.ran_out()),
        }
    }
    if !failed.is_empty() {
        return Err(failures(
            failed,
            !selecting && targets.len() == 1,
            targets.len(),
        ));
    }
    if let [one] = missing.as_slice() {
        return Err(cluster::notfound::tfjob(kube, namespace, one).await);
    }
    if !missing.is_empty() {
        return Err(Error::NotFound(
            missing
                .iter()
                .map(|n| cluster::notfound::message(namespace, n))
                .collect::<Vec<_>>()
                .join("\n"),
        ));
    }
    Ok(deleted.into_iter().map(|(n, _)| n).collect())
}

/// The jobs to delete, by name with the uid when known. With a selector the list gives each
/// job's uid, so every DELETE is bound to the job that was listed; a named job's uid is learned
/// only if a retry needs it.
async fn targets(
    kube: &Kube,
    api: &Api<TFJob>,
    opts: &DeleteOptions,
    err: &mut dyn Write,
) -> Result<Vec<(String, Option<String>)>> {
    let selecting = opts.all || opts.selector.is_some();
    let io = |e: std::io::Error| Error::io("writing output", e);
    Ok(if selecting {
        let mut lp = ListParams::default();
        if let Some(s) = &opts.selector {
            lp = lp.labels(s);
        }
        let mut n: Vec<(String, Option<String>)> = cluster::retry(kube, || api.list_metadata(&lp))
            .await
            .map_err(|e| cluster::tfjob_error("listing tfjobs", e))?
            .items
            .iter()
            .map(|m| (m.name_any(), m.uid()))
            .collect();
        n.sort();
        if n.is_empty() {
            writeln!(err, "No resources found").map_err(io)?;
        }
        n
    } else {
        opts.names
            .iter()
            .map(|n| {
                (
                    n.clone(),
                    opts.uid.clone().filter(|_| opts.names.len() == 1),
                )
            })
            .collect()
    })
}

/// The error for failed deletions: the one failure of a single named job as it is; else a
/// summary whose kind is the worst (an unknown outcome, else a failure), each reported above.
fn failures(mut failed: Vec<Error>, single: bool, total: usize) -> Error {
    if failed.len() == 1 && single {
        return failed.remove(0);
    }
    // Reported one by one above; the exit code is the worst: unknown outcome, else failure.
    let n = failed.len();
    let summary = format!(
        "{n} of {} tfjob deletions failed (each reported above)",
        total
    );
    if failed
        .iter()
        .any(|e| matches!(e, Error::WriteUnknown { .. }))
    {
        Error::WriteUnknown {
            message: summary,
            hint: Some("Check what is left with `kubectl get tfjobs`.".into()),
        }
    } else {
        Error::Other(summary)
    }
}

/// How one job's DELETE ended.
enum Gone {
    /// Deleted (or its deletion is pending); `reply_lost` when that was learned by looking.
    Deleted { uid: String, reply_lost: bool },
    /// There was no such job.
    Missing,
}

/// One DELETE under the one retry policy. Once an attempt's reply is lost, later attempts carry
/// a UID precondition (the uid read back if the selector's list did not give it), so a retry can
/// only delete the job first meant, never one recreated under its name; and a 404 or a failed
/// precondition then means that job is gone: success, as `kubectl delete` would have had it.
async fn delete_one(
    kube: &Kube,
    api: &Api<TFJob>,
    name: &str,
    uid: Option<String>,
    dp: &DeleteParams,
) -> Result<Gone> {
    use std::cell::{Cell, RefCell};
    let lost = Cell::new(false);
    let uid = RefCell::new(uid);
    let attempt = || async {
        if lost.get() && uid.borrow().is_none() {
            // Which job is under the name now? Gone (404) ends it; a pending deletion is ours.
            let job = api.get(name).await?;
            if job.metadata.deletion_timestamp.is_some() {
                return Ok(job.uid());
            }
            *uid.borrow_mut() = job.uid();
        }
        let mut params = dp.clone();
        if let Some(u) = uid.borrow().clone() {
            params.preconditions = Some(Preconditions {
                uid: Some(u),
                resource_version: None,
            });
        }
        // The job while its deletion is pending, or a Status once it is gone: its uid.
        let result = api
            .delete(name, &params)
            .await
            .map(|res| res.either(|job| job.uid(), |status| status.details.map(|d| d.uid)));
        if let Err(e) = &result
            && cluster::outcome_unknown(e)
        {
            lost.set(true);
        }
        result
    };
    let action = || cluster::Action::new("delete", "tfjobs", api_namespace(api)).named(name);
    match cluster::retry(kube, attempt).await {
        Ok(res) => {
            let got = res.or_else(|| uid.borrow().clone()).unwrap_or_default();
            Ok(Gone::Deleted {
                uid: got,
                reply_lost: lost.get(),
            })
        }
        Err(e) if cluster::not_served(&e) => Err(cluster::crd_not_served()),
        Err(e) if cluster::is_not_found(&e) && lost.get() => Ok(Gone::Deleted {
            uid: uid.borrow().clone().unwrap_or_default(),
            reply_lost: true,
        }),
        Err(e) if cluster::is_not_found(&e) => Ok(Gone::Missing),
        // The precondition failed: the job meant is gone and another has its name.
        Err(e) if cluster::status_code(&e) == Some(409) && uid.borrow().is_some() => {
            Ok(Gone::Deleted {
                uid: uid.borrow().clone().unwrap_or_default(),
                reply_lost: lost.get(),
            })
        }
        Err(e) if lost.get() && cluster::outcome_unknown(&e) => {
            // Every reply lost until the deadline: look once more, briefly.
            let look = cluster::for_look(kube);
            match cluster::retry(&look, || api.get_opt(name)).await {
                Ok(None) => Ok(Gone::Deleted {
                    uid: uid.borrow().clone().unwrap_or_default(),
                    reply_lost: true,
                }),
                Ok(Some(job))
                    if job.metadata.deletion_timestamp.is_some()
                        || (uid.borrow().is_some() && job.uid() != *uid.borrow()) =>
                {
                    Ok(Gone::Deleted {
                        uid: job.uid().unwrap_or_default(),
                        reply_lost: true,
                    })
                }
                Ok(Some(_)) => Err(cluster::explain(e, &action(), kube)),
                Err(look_err) => Err(Error::WriteUnknown {
                    message: format!(
                        "the delete of tfjob {name} was sent but no reply came ({}), and reading \
                         it back failed too ({}): it may or may not be deleted",
                        crate::error::chain(&e),
                        crate::error::chain(&look_err)
                    ),
                    hint: Some(format!(
                        "Check with `kubectl get tfjob {name} {}`.",
                        kube.hints.ns_flags(api_namespace(api).unwrap_or_default())
                    )),
                }),
            }
        }
        Err(e) => Err(cluster::explain(e, &action(), kube)),
    }
}

/// `wait --for delete NAME…` (kubectl's `--for=delete`): returns once each named job is gone,
/// one already gone included, printing kubectl's `tfjob.kubeflow.org/NAME condition met`. The
/// command's deadline bounds it.
pub async fn wait_deleted(ctx: &Context, names: &[String], out: &mut Output) -> Result<()> {
    let deadline = ctx.deadline().clone();
    ctx.with_streams(out, async |kube, ns, data, notes| {
        let io = |e: std::io::Error| Error::io("writing output", e);
        let api: Api<TFJob> = Api::namespaced(kube.client.clone(), ns);
        for name in names {
            deadline.phase(format!("waiting for tfjob {ns}/{name} to be deleted"));
            let job = crate::cluster::retry(kube, || api.get_opt(name))
                .await
                .map_err(|e| cluster::tfjob_error(format!("reading tfjob {name}"), e))?;
            if let Some(job) = job {
                let uid = job.metadata.uid.clone().unwrap_or_default();
                wait_gone(&kube.client, ns, &[(name.clone(), uid)], false, notes).await?;
            }
            writeln!(data, "tfjob.kubeflow.org/{name} condition met").map_err(io)?;
        }
        Ok(())
    })
    .await
}

fn api_namespace(api: &Api<TFJob>) -> Option<&str> {
    api.namespace()
}

async fn wait_gone(
    client: &Client,
    namespace: &str,
    jobs: &[(String, String)],
    pods_too: bool,
    err: &mut dyn Write,
) -> Result<()> {
    let api: Api<TFJob> = Api::namespaced(client.clone(), namespace);
    let io = |e: std::io::Error| Error::io("writing progress", e);
    for (name, uid) in jobs {
        writeln!(err, "waiting for tfjob/{name} to be deleted").map_err(io)?;
        await_condition(api.clone(), name, conditions::is_deleted(uid))
            .await
            .map_err(|e| {
                Error::Other(format!(
                    "waiting for tfjob {name} to be deleted: {}",
                    crate::error::chain(&e)
                ))
            })?;
    }
    if !pods_too {
        return Ok(());
    }
    // One pod watch for every job: `job-name in (a,b,…)`.
    let names: Vec<&str> = jobs.iter().map(|(n, _)| n.as_str()).collect();
    let selector = format!("{} in ({})", model::LABEL_JOB_NAME, names.join(","));
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    crate::cluster::pod::pods_gone(
        pods,
        &selector,
        |_| true,
        |n| writeln!(err, "waiting for {n} pod(s) to be deleted").map_err(io),
    )
    .await
}
