//! The create of `submit` (step 7 of [`run`](super::run)), safe to retry: each attempt carries
//! a per-submission id in an annotation, so a create retried after an ambiguous failure can
//! tell "my first attempt went through" from "someone else's job has that name".

use super::*;

fn submission_of(job: &TFJob) -> Option<&str> {
    job.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SUBMISSION_ANNOTATION))
        .map(String::as_str)
}

fn submission_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{:x}-{:x}", nanos, std::process::id())
}

/// Creates the job. Transient failures are retried; if a retry meets AlreadyExists, the stored
/// job's submission id says whether it is ours (success) or someone else's (conflict), so a
/// retried create can never produce two jobs or report a false failure.
/// The flag says the create's reply was lost and the job was found by looking.
pub(super) async fn create(
    kube: &Kube,
    jobs: &Api<TFJob>,
    wire: &Wire<'_>,
    mut job: TFJob,
) -> Result<(TFJob, bool)> {
    let id = submission_id();
    job.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(SUBMISSION_ANNOTATION.into(), id.clone());
    let params = PostParams {
        dry_run: false,
        field_manager: Some(cluster::FIELD_MANAGER.into()),
    };
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    if job.metadata.name.is_none() {
        return create_generated(kube, jobs, wire, &job, &params, &id, &namespace).await;
    }
    let name = job.metadata.name.clone().unwrap_or_default();
    match cluster::retry(kube, || wire.create(&params, &job)).await {
        Ok(created) => Ok((created, false)),
        // The reply never came (or could not be read): look before saying anything.
        Err(e) if cluster::outcome_unknown(&e) => {
            let look = cluster::for_look(kube);
            match cluster::retry(&look, || jobs.get_opt(&name)).await {
                Ok(Some(stored)) if submission_of(&stored) == Some(id.as_str()) => {
                    Ok((stored, true))
                }
                Ok(Some(_)) => Err(Error::Conflict {
                    message: format!(
                        "TFJob {namespace}/{name} was created by someone else meanwhile"
                    ),
                    hint: Some("Choose another --name, or pass --replace.".into()),
                }),
                // Not there: the create did not go through, and the failure is what to report.
                Ok(None) => Err(rejected(e, kube, &namespace, "create")),
                Err(look_err) => Err(unknown_create(kube, &namespace, &name, &id, &e, &look_err)),
            }
        }
        // The recovery GET runs under the same retry policy: one failed GET must not turn our
        // own committed create into "someone else's".
        Err(e) if cluster::status_code(&e) == Some(409) => {
            match cluster::retry(kube, || jobs.get_opt(&name)).await {
                Ok(Some(stored)) if submission_of(&stored) == Some(id.as_str()) => {
                    Ok((stored, false))
                }
                Ok(Some(_)) => Err(Error::Conflict {
                    message: format!(
                        "TFJob {namespace}/{name} was created by someone else meanwhile"
                    ),
                    hint: Some("Choose another --name, or pass --replace.".into()),
                }),
                Ok(None) => Err(Error::Other(format!(
                    "creating TFJob {namespace}/{name} met AlreadyExists, but the job was gone \
                     when read back (deleted meanwhile); nothing of this submission is stored"
                ))),
                Err(e) => Err(Error::Other(format!(
                    "{}; the create may have gone through: check with `kubectl get tfjob {name} \
                     {} -o yaml` (annotation {SUBMISSION_ANNOTATION}={id} marks this \
                     submission)",
                    cluster::explain(
                        e,
                        &Action::new("get", "tfjobs", Some(&namespace)).named(&name),
                        kube
                    ),
                    kube.hints.ns_flags(&namespace)
                ))),
            }
        }
        Err(e) => Err(rejected(e, kube, &namespace, "create")),
    }
}

/// The create was sent, its reply lost, and the job could not be read back: say it may exist
/// and how to tell (exit 6).
fn unknown_create(
    kube: &Kube,
    namespace: &str,
    name: &str,
    id: &str,
    create_err: &kube::Error,
    look_err: &kube::Error,
) -> Error {
    let flags = kube.hints.ns_flags(namespace);
    Error::WriteUnknown {
        message: format!(
            "the create of TFJob {namespace}/{} was sent but no reply came ({}), and reading it \
             back failed too ({}): the job may exist",
            if name.is_empty() {
                "(generated name)"
            } else {
                name
            },
            crate::error::chain(create_err),
            crate::error::chain(look_err)
        ),
        hint: Some(if name.is_empty() {
            format!(
                "Check with `kubectl get tfjobs {flags} -o yaml`: the job carrying annotation \
                 {SUBMISSION_ANNOTATION}={id} is this submission. Submit again only if none does."
            )
        } else {
            format!(
                "Check with `kubectl get tfjob {name} {flags} -o yaml`: annotation \
                 {SUBMISSION_ANNOTATION}={id} marks this submission. If it is there, follow it \
                 with `kubectl tfjob wait {name} {flags}`; if not, submit again."
            )
        }),
    }
}

/// generateName: a retried create would make a second job under another name, so a failed
/// attempt is retried only once the list shows that no job carries this submission's id; when
/// one does, the first attempt went through and that job is the result. Both run under the one
/// retry policy (its deadline bounds the whole).
async fn create_generated(
    kube: &Kube,
    jobs: &Api<TFJob>,
    wire: &Wire<'_>,
    job: &TFJob,
    params: &PostParams,
    id: &str,
    namespace: &str,
) -> Result<(TFJob, bool)> {
    let tried = std::cell::Cell::new(false);
    let tried = &tried;
    let attempt = move || async move {
        if tried.replace(true) {
            let listed = jobs.list(&ListParams::default()).await?;
            if let Some(found) = listed
                .items
                .into_iter()
                .find(|j| submission_of(j) == Some(id))
            {
                return Ok(found);
            }
        }
        wire.create(params, job).await
    };
    match cluster::retry(kube, attempt).await {
        Ok(created) => Ok((created, false)),
        Err(e) if cluster::outcome_unknown(&e) => {
            // The last attempt's reply was lost: the list says whether it went through.
            let look = cluster::for_look(kube);
            let lp = ListParams::default();
            let found = cluster::retry(&look, || jobs.list(&lp)).await;
            match found {
                Ok(list) => match list
                    .items
                    .into_iter()
                    .find(|j| submission_of(j) == Some(id))
                {
                    Some(job) => Ok((job, true)),
                    None => Err(rejected(e, kube, namespace, "create")),
                },
                Err(look_err) => Err(unknown_create(kube, namespace, "", id, &e, &look_err)),
            }
        }
        Err(e) => Err(rejected(e, kube, namespace, "create")),
    }
}
