//! kubectl-tfjob as a library: one module per concern, pure logic kept apart from I/O.
//!
//! - [`commands`]: the command line (clap lives here and nowhere else): global flags, one file
//!   per subcommand turning its flags into the core's plain option types, the dispatch.
//! - [`model`]: the `kubeflow.org/v1` TFJob types and their JSON Schema.
//! - [`values`], [`templates`], [`render`]: values from flags/files/--set, built-in templates,
//!   rendering into a typed TFJob.
//! - [`gateway`]: model-gateway credentials (Secret-backed env vars), the istio opt-out, and the
//!   default Secret name / key / base URL every other module uses.
//! - [`manifest`]: reading YAML with file/line/column positions.
//! - [`validate`]: schema, webhook rules and lint checks, all reported at once.
//! - [`cluster`]: every fact about the cluster: the client (built as kubectl would, with
//!   retries), CRD, operator, gateway Secret, job-name forms, install hints.
//! - [`ops`]: the cluster-facing commands (`submit`, `check`, `wait` and its many-jobs layer,
//!   `secret`, `list`, `get`, `logs`, `top`, `delete`, `suspend`/`resume`) over shared steps
//!   (readiness, pod dry runs, missing objects, the pod table); [`diagnose`] beside its pure
//!   checks.
//! - [`output`]: the stdout/stderr pair every command writes through; [`print`]: kubectl's
//!   printers (json, yaml, name, jsonpath, custom-columns, go-template, tables, `top`'s units),
//!   each taking a writer.
//! - [`placement`]: will the job run here? kube-scheduler's filters, LimitRange and quota
//!   admission, and stuck references, as a pure model over a collected snapshot.
//! - [`error`]: typed errors and the one mapping to exit codes.
//! - [`redact`]: the key (and its base64) replaced in every stream the process prints to.

pub mod cluster;
pub mod commands;
pub mod diagnose;
pub mod duration;
pub mod error;
pub mod gateway;
pub mod input;
pub mod jobview;
pub mod logging;
pub mod manifest;
pub mod model;
pub mod names;
pub mod ops;
pub mod output;
pub mod placement;
pub mod print;
pub mod probe;
pub mod quantity;
pub mod redact;
pub mod render;
pub mod templates;
pub mod validate;
pub mod values;

use std::io::Write;

use error::{Error, ExitCode};

/// Prints an error the way kubectl does (`error: …`) plus the next step, and returns its exit
/// code. A closed stdout ends quietly.
pub fn report_error(err: &Error, stderr: &mut dyn Write) -> ExitCode {
    if !err.is_quiet() {
        // Nothing sensible is left to do if stderr is gone too.
        let _ = writeln!(stderr, "error: {err}");
        if let Some(hint) = err.hint() {
            let _ = writeln!(stderr, "\n{hint}");
        }
    }
    err.exit_code()
}
