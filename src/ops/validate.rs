//! `kubectl tfjob validate -f FILE|- [-f …] [-o json] [--dry-run=server]`: the command core over
//! [`crate::pipeline::validate::check_files`]. Offline unless `--dry-run=server`: then each valid job
//! also goes to the cluster as `kubectl create --dry-run=server -f` sends it, and the pods the
//! operator would create from it as dry runs ([`super::pod_dry_run`]).

use super::Context;
use crate::cluster::{self, Action};
use crate::error::{Error, Result};
use crate::output::{Output, ReportFormat};
use crate::pipeline::validate::{self, Checked, ValidateOptions};

/// Findings as text on stderr (valid jobs named on stdout) or as JSON on stdout; any error
/// fails the command with exit 2 and the whole list.
pub fn run(opts: ValidateOptions, out: &mut Output) -> Result<()> {
    let checked = validate::check_files(&opts)?;
    report(checked, opts.output, out)
}

fn report(checked: Checked, format: ReportFormat, out: &mut Output) -> Result<()> {
    let (report, documents) = (&checked.report, checked.documents);
    match format {
        ReportFormat::Json => {
            out.data_line(&report.to_json())?;
            if report.has_errors() {
                return Err(Error::Invalid(format!(
                    "validation failed: {}",
                    report.summary()
                )));
            }
        }
        ReportFormat::Text => {
            if report.has_errors() {
                // A file that could not be read or parsed has no documents to count.
                let counted = match documents {
                    0 => String::new(),
                    1 => " in 1 document".to_string(),
                    n => format!(" in {n} documents"),
                };
                return Err(Error::Invalid(format!(
                    "validation failed ({}{counted}):\n{}",
                    report.summary(),
                    report.render_text().trim_end()
                )));
            }
            out.note(&report.render_text());
            for v in checked.valid {
                out.data_line(&v)?;
            }
        }
    }
    Ok(())
}

/// `validate --dry-run=server`: the offline checks first (nothing is sent when they refuse), then each
/// valid TFJob as written, in its namespace, as a server-side dry run with strict field
/// validation (what `kubectl create --dry-run=server -f` sends: the CRD's schema, the
/// operator's webhook and every admission plugin answer), then the pods the operator would
/// create from it. A refusal is exit 2 as an offline one is, naming the document; a cluster
/// that cannot answer (no CRD, no access) is the error it is. Stores nothing.
pub async fn run_server(ctx: &Context, opts: ValidateOptions, out: &mut Output) -> Result<()> {
    let checked = validate::check_files(&opts)?;
    if checked.report.has_errors() {
        return report(checked, opts.output, out);
    }
    let kube = ctx.kube().await?;
    let mut refused = Vec::new();
    for (label, doc) in &checked.jobs {
        let written = doc.pointer("/metadata/namespace").and_then(|v| v.as_str());
        let namespace = crate::model::names::object_namespace(
            written,
            &kube.namespace,
            kube.namespace_from_flag,
            label,
        )
        .map_err(Error::Usage)?;
        let mut body = doc.clone();
        body["metadata"]["namespace"] = namespace.clone().into();
        let collection = format!("/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs");
        let params = kube::api::PostParams {
            dry_run: true,
            field_manager: Some(cluster::FIELD_MANAGER.into()),
        };
        let bytes = serde_json::to_vec(&body).map_err(|e| Error::Other(e.to_string()))?;
        let sent = cluster::retry(kube, || {
            let req = kube::core::Request::new(&collection)
                .create(&params, bytes.clone())
                .map(|mut req| {
                    // kubectl's default `--validate=strict`; kube's PostParams has no field for it.
                    let strict = format!("{}&fieldValidation=Strict", req.uri());
                    *req.uri_mut() = strict.parse().expect("a valid URI stays valid");
                    req
                });
            async move {
                kube.client
                    .request_text(req.map_err(kube::Error::BuildRequest)?)
                    .await
            }
        })
        .await;
        match sent {
            Ok(_) => out.note_line(&format!("{label}: the API server accepts it (server dry run)")),
            Err(kube::Error::Api(s)) if s.code == 422 || s.code == 400 => {
                let mut why = format!("{label}: the API server refuses it: {}", s.message);
                for cause in s.details.iter().flat_map(|d| d.causes.iter()) {
                    why.push_str(&format!("\n  - {}: {}", cause.field, cause.message));
                }
                refused.push(why);
                continue;
            }
            // Validation and admission run before storage: a taken name passed them.
            Err(kube::Error::Api(s)) if s.code == 409 => out.note_line(&format!(
                "{label}: a TFJob of that name exists in {namespace}; the content passed the server's validation and admission"
            )),
            Err(e) => {
                return Err(cluster::explain(
                    e,
                    &Action::new("create", "tfjobs", Some(&namespace)),
                    kube,
                ));
            }
        }
        let job =
            serde_json::from_value(body).map_err(|e| Error::Invalid(format!("{label}: {e}")))?;
        match super::pod_dry_run::check(kube, &namespace, &job, out).await {
            Ok(()) => {}
            Err(Error::Invalid(why)) => refused.push(format!("{label}: {why}")),
            Err(e) => return Err(e),
        }
    }
    if !refused.is_empty() {
        return Err(Error::Invalid(format!(
            "the cluster refuses {} of {} job{}:\n{}",
            refused.len(),
            checked.jobs.len(),
            if checked.jobs.len() == 1 { "" } else { "s" },
            refused.join("\n")
        )));
    }
    report(checked, opts.output, out)
}
