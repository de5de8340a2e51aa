//! Offline validation: the schema, the operator's webhook rules and lint checks, every problem
//! reported at once, each with its field path and (for YAML input) `file:line:column`.
//!
//! Everything works on `serde_json::Value`, because a broken manifest may not deserialize into
//! the typed model, and that is exactly when the user needs the full list of problems.

pub mod credentials;
pub mod lint;
pub mod names;
pub mod pod;
pub mod podrules;
pub mod queue_lint;
pub mod schema;
pub mod webhook;

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::gateway::GatewayConfig;
use crate::gateway::GatewayOptions;
use crate::output::ReportFormat;
use crate::pipeline::manifest::{self, Location, Positions};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One problem.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// Stable rule id (`schema`, `webhook/name`, `literal-credential`, …).
    pub rule: &'static str,
    /// Field path, e.g. `spec.tfReplicaSpecs.Worker.template.spec.containers[0].image`.
    pub path: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
}

impl Finding {
    pub fn new(
        severity: Severity,
        rule: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            severity,
            rule,
            path: path.into(),
            message: message.into(),
            hint: None,
            location: None,
        }
    }

    pub fn with_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }
}

/// All findings of one or more documents.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.by(Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.by(Severity::Warning)
    }

    fn by(&self, s: Severity) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.severity == s)
    }

    /// `--strict`: every warning becomes an error.
    pub fn promote_warnings(&mut self) {
        for f in &mut self.findings {
            if f.severity == Severity::Warning {
                f.severity = Severity::Error;
            }
        }
    }

    /// Literal credentials found (what `submit` refuses without --allow-literal-credentials).
    pub fn literal_credentials(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.rule == credentials::RULE)
    }

    pub fn extend(&mut self, other: Report) {
        self.findings.extend(other.findings);
    }

    /// kubectl-like text: errors first, then warnings, then info, each in file/line order:
    /// `file:line:col: error: path: message` and `  fix: hint` under it.
    /// `origin` names findings without a position (e.g. "template ps-worker").
    pub fn render_text_with_origin(&self, origin: Option<&str>) -> String {
        let mut sorted: Vec<&Finding> = self.findings.iter().collect();
        sorted.sort_by(|a, b| {
            let la = a
                .location
                .as_ref()
                .map(|l| (l.file.as_str(), l.line, l.column));
            let lb = b
                .location
                .as_ref()
                .map(|l| (l.file.as_str(), l.line, l.column));
            (a.severity, la).cmp(&(b.severity, lb))
        });
        let mut s = String::new();
        // Informational findings (a single-replica job, a container without the gateway key)
        // are for `-v`; by default only what a user may want to fix is printed, and what this
        // tool changed in the input (fields the API server owns, dropped; the gateway env that
        // --inject-gateway-env added).
        let verbose = crate::output::logging::verbose();
        for f in sorted {
            let changed_input = matches!(f.rule, "server-fields" | "inject-gateway-env");
            if f.severity == Severity::Info && !verbose && !changed_input {
                continue;
            }
            let where_ = match (&f.location, origin) {
                (Some(l), _) => format!("{l}: "),
                (None, Some(o)) => format!("{o}: "),
                (None, None) => String::new(),
            };
            let path = if f.path.is_empty() {
                String::new()
            } else {
                format!("{}: ", f.path)
            };
            let _ = writeln!(s, "{where_}{}: {path}{}", f.severity.as_str(), f.message);
            if let Some(h) = &f.hint {
                let _ = writeln!(s, "  fix: {h}");
            }
        }
        s
    }

    pub fn render_text(&self) -> String {
        self.render_text_with_origin(None)
    }

    /// "2 errors, 1 warning".
    pub fn summary(&self) -> String {
        let n = |s| self.by(s).count();
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let mut parts = vec![plural(n(Severity::Error), "error")];
        if n(Severity::Warning) > 0 {
            parts.push(plural(n(Severity::Warning), "warning"));
        }
        parts.join(", ")
    }

    /// `-o json`.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Out<'a> {
            valid: bool,
            errors: usize,
            warnings: usize,
            findings: &'a [Finding],
        }
        serde_json::to_string_pretty(&Out {
            valid: !self.has_errors(),
            errors: self.errors().count(),
            warnings: self.warnings().count(),
            findings: &self.findings,
        })
        .expect("report serializes")
    }
}

/// What validation needs besides the object.
#[derive(Debug, Clone, Default)]
pub struct Inputs<'a> {
    /// Gateway settings: which env names hold the key, whether istio should be opted out.
    pub gateway: GatewayConfig,
    /// True when render/submit will inject the gateway env and annotations afterwards, so
    /// lints about their absence are moot (a literal key is still reported).
    pub will_inject: bool,
    /// Source positions, for YAML input.
    pub positions: Option<&'a Positions>,
}

/// Validates one TFJob object: schema, webhook rules, lints. Pure.
pub fn validate_value(obj: &Value, inputs: &Inputs) -> Report {
    // The API server drops a TFJob's non-nullable nulls before it validates; every check
    // below judges what it would store.
    let is_tfjob = obj.get("kind").and_then(Value::as_str) == Some(crate::model::KIND);
    let pruned;
    let obj = if is_tfjob {
        pruned = schema::prune_model_nulls(obj);
        &pruned
    } else {
        obj
    };
    let mut findings = lint::check(obj, inputs);
    findings.extend(pod::check(obj));
    // The schema check assumes the object's identity; a Secret in the stream is not a TFJob.
    if is_tfjob {
        let schema_findings = schema::check_model_schema(obj);
        // A rule that reported the same path says it better (with a precise fix). A set of the
        // error paths: scanning the list per finding was quadratic (20,000 unknown keys: minutes).
        let mut error_paths: std::collections::HashSet<String> = findings
            .iter()
            .filter(|r| r.severity == Severity::Error)
            .map(|r| r.path.clone())
            .collect();
        for f in schema_findings {
            if !error_paths.contains(&f.path) {
                if f.severity == Severity::Error {
                    error_paths.insert(f.path.clone());
                }
                findings.push(f);
            }
        }
        // The typed reading submit sends (a label value that is a mapping, a numeric name): if
        // nothing above refused the object, its first unreadable field is an error here too.
        if error_paths.is_empty()
            && let Some((path, message)) =
                crate::pipeline::manifest::typed_reading_error::<crate::model::TFJob>(obj)
        {
            findings.push(Finding::new(Severity::Error, "schema", path, message));
        }
    }
    if let Some(pos) = inputs.positions {
        for f in &mut findings {
            f.location = pos.locate(&f.path);
        }
    }
    Report { findings }
}

/// Validates against an OpenAPI v3 schema as found in a CRD (`spec.versions[].schema.
/// openAPIV3Schema`), e.g. the live CRD fetched by `submit` or the upstream file in tests.
/// Compiles the schema on each call; callers validating many objects should hold on to
/// [`schema::compile`]'s result and use [`schema::check_with`].
pub fn validate_against_openapi(openapi_v3_schema: &Value, obj: &Value) -> Vec<Finding> {
    schema::check_openapi(openapi_v3_schema, obj)
        .unwrap_or_else(|e| vec![Finding::new(Severity::Error, "crd-schema", "", e)])
}

/// Findings from reading the YAML itself (duplicate keys), which kubectl accepts silently.
pub fn read_findings(doc: &manifest::Document) -> Vec<Finding> {
    doc.warnings
        .iter()
        .map(|w| {
            let mut f = Finding::new(
                Severity::Warning,
                "duplicate-key",
                w.path.clone(),
                w.message.clone(),
            )
            .with_hint(Some(
                "remove one of them; the earlier value is ignored".into(),
            ));
            f.location = Some(w.location.clone());
            f
        })
        .collect()
}

/// Validates one parsed document.
pub fn validate_document(doc: &manifest::Document, gateway: &GatewayConfig) -> Report {
    let inputs = Inputs {
        gateway: gateway.clone(),
        will_inject: false,
        positions: Some(&doc.positions),
    };
    let mut report = validate_value(&doc.value, &inputs);
    report.findings.extend(read_findings(doc));
    report
}

/// What `validate` checks and how it reports (the flags, clap-free).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidateOptions {
    /// Manifest files; "-" reads stdin.
    pub files: Vec<String>,
    pub output: ReportFormat,
    /// Warnings count as errors (exit 2).
    pub strict: bool,
    /// The credentials the manifests are expected to reference.
    pub gateway: GatewayOptions,
    /// Also ask the cluster (`--dry-run=server`): each valid job as a server-side dry run, then the
    /// pods the operator would create from it.
    pub server: bool,
}

/// What `validate` found in its files: every finding, a line per valid job, and how many
/// documents were read. Pure apart from reading the files; `ops::validate` prints it.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    pub report: Report,
    /// `FILE: tfjob/NAME is valid`, one per valid document.
    pub valid: Vec<String>,
    pub documents: usize,
    /// The valid TFJob documents as written, with what names them (`FILE: tfjob/NAME`): what
    /// `validate --dry-run=server` sends (stdin cannot be read twice).
    pub jobs: Vec<(String, Value)>,
}

/// What is wrong with the gateway flags themselves, as warnings: `--api-base-url` ending in `/v1`
/// (the pods' clients, `probe` and `diagnose` append `/v1`, so every call goes to `…/v1/v1/…`
/// and gets 404). Said by `render`, `submit` and `validate` alike.
pub fn gateway_flag_findings(gateway: &GatewayConfig) -> Vec<Finding> {
    let url = gateway.base_url.trim_end_matches('/');
    if !(gateway.enabled && gateway.base_url_given && url.ends_with("/v1")) {
        return Vec::new();
    }
    let fixed = url.trim_end_matches("/v1");
    vec![
        Finding::new(
            Severity::Warning,
            "base-url",
            "--api-base-url",
            format!(
                "{} ends in /v1: the pods' clients, `probe` and `diagnose` append /v1 themselves, so every request goes to …/v1/v1/… and gets 404",
                crate::gateway::masked_url(url)
            ),
        )
        .with_hint(Some(format!(
            "--api-base-url {}",
            crate::gateway::masked_url(fixed)
        ))),
    ]
}

/// Reads and checks every file of `validate -f FILE|- [-f …]`. A file that cannot be read or
/// parsed is a finding, not an error, so every problem is reported at once.
pub fn check_files(args: &ValidateOptions) -> Result<Checked> {
    let gateway = GatewayConfig::from_args(&args.gateway);
    gateway.check()?;
    let mut report = Report::default();
    report.findings.extend(gateway_flag_findings(&gateway));
    let mut valid_names = Vec::new();
    let mut jobs = Vec::new();
    let mut documents = 0;
    for file in &args.files {
        let (name, text) = match crate::input::read_manifest(file) {
            Ok(x) => x,
            Err(Error::Invalid(msg)) | Err(Error::Usage(msg)) => {
                report
                    .findings
                    .push(Finding::new(Severity::Error, "input", "", msg));
                continue;
            }
            Err(e) => return Err(e),
        };
        let docs = match manifest::parse_documents(&text, &name) {
            Ok(d) => d,
            Err(e) => {
                let mut f = Finding::new(Severity::Error, "yaml", "", e.message.clone());
                f.location = Some(e.location.clone());
                report.findings.push(f);
                continue;
            }
        };
        if docs.is_empty() {
            let mut f = Finding::new(Severity::Error, "input", "", "no YAML documents found");
            f.location = Some(Location {
                file: name.clone(),
                line: 1,
                column: 1,
            });
            report.findings.push(f);
        }
        for doc in &docs {
            documents += 1;
            let r = validate_document(doc, &gateway);
            if !r.has_errors() {
                let n = doc
                    .value
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                valid_names.push(format!("{name}: tfjob/{n} is valid"));
                if doc.value.get("kind").and_then(Value::as_str) == Some(crate::model::KIND) {
                    jobs.push((format!("{name}: tfjob/{n}"), doc.value.clone()));
                }
            }
            report.extend(r);
        }
    }
    if args.strict {
        report.promote_warnings();
    }
    Ok(Checked {
        report,
        valid: valid_names,
        documents,
        jobs,
    })
}

#[cfg(test)]
mod tests;
