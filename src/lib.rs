//! kubectl-tfjob as a library: one module per concern, pure logic kept apart from I/O.
//!
//! Every import runs one way, down this line (issue 21):
//!
//! ```text
//! main → commands → ops → {diagnose, placement, pipeline, print} → {cluster, gateway}
//!      → operator_pods → {model, names, quantity, duration, output, error}
//! ```
//!
//! where [`pipeline`] is the offline build of a job (`render → templates → values`, with
//! `validate`, `manifest` and `jobset` beside it). `diagnose`, `placement`, `cluster`, `gateway`
//! and `model` never import `ops`; `cluster`, `gateway` and `model` never import the pipeline.
//! `tests/architecture.rs` enforces the rules.
//!
//! - [`commands`]: the command line (clap lives here and nowhere else): the clap tree, the global
//!   flags (`global.rs`, turned once into the command context), the runtime, interrupt and
//!   deadline guard (`runtime.rs`), one file per subcommand turning its flags into the core's
//!   plain option types and its `--timeout` into the context's deadline, the dispatch.
//! - [`ops`]: every command's core with one signature, `run(ctx, opts, out)` (`submit`,
//!   `check`, `render`, `diagnose`, `wait`, `secret`, and the day-two `list`, `get`, `logs`,
//!   `top`, `delete`, `suspend`/`resume`; offline `validate` takes no context) over shared steps
//!   (readiness, the pre-flight service `ops::preflight` that `check`, `submit` and `wait` ask,
//!   pod dry runs). `ctx` is the one command context, [`ops::Context`] (`ops/context.rs`): the
//!   connection flags, the client built once on first use (offline commands never connect),
//!   the namespace resolved once, and the command's one deadline
//!   ([`cluster::budget::Deadline`]: `--timeout`, spent by every phase, respected by the retry
//!   policy, and guarding the whole command so it ends with exit 5 naming the phase).
//! - [`diagnose`]: collecting a job's snapshot, the missing-object lookup `wait` also uses, and
//!   the pure layer-by-layer checks over it.
//! - [`placement`]: will the job run here? kube-scheduler's filters, LimitRange and quota
//!   admission, and stuck references, as a pure model over a collected snapshot; expanding a job
//!   into pods (`placement::pods`), and the question about a created job whose pods are
//!   Unschedulable (`placement::live`).
//! - [`pipeline`]: `render`, `templates`, `values` (with the render/submit option types): values
//!   from flags/files/--set, built-in templates, rendering into a typed TFJob; `manifest`:
//!   reading YAML with file/line/column positions; `validate`: schema, webhook rules, core Pod
//!   validation and lint checks, all reported at once; `jobset`: the same job as a
//!   kubernetes-sigs JobSet (`export --to jobset`, `submit --to jobset`).
//! - [`print`]: kubectl's printers (json, yaml, name, jsonpath, custom-columns, go-template,
//!   tables, `top`'s units), the manifest printers, `check`'s and `diagnose`'s reports, `wait`'s
//!   progress lines and the day-two tables (`list`, `get`), each taking a writer;
//!   `print::jobview`: the day-two commands' pure rows and views they print.
//! - [`cluster`]: every fact about the cluster: the client (built as kubectl would, with
//!   retries), CRD, operator (and its one wording, `Display for OperatorState`), gateway Secret,
//!   pod facts (`cluster::pod`: the slim `Pod`, phase, replica, started, restarts,
//!   PodScheduled/Unschedulable, waiting until pods are gone), the pod table, 403
//!   classification (`cluster::forbidden`: refused or not, by whom), job-name forms, install
//!   hints.
//! - [`gateway`]: model-gateway credentials (Secret-backed env vars), the istio opt-out, and the
//!   gateway Secret's names and key-name rule every other module uses.
//! - [`operator_pods`]: the one model of the pods the training-operator makes of a job
//!   (`operator_pods::expand`: replicas, pod names, labels, ports, restart policy, TF_CONFIG,
//!   headless Services), pure, over [`model`] alone; the pod dry run, placement, the JobSet
//!   export, `wait`, `get` and `diagnose` all take the operator's pods from it.
//! - Bottom modules, importing nothing above them: [`model`] (the `kubeflow.org/v1` TFJob types
//!   and their JSON Schema), [`names`] (DNS-1123/1035 and other name rules, "did you mean"),
//!   [`quantity`] (one exact resource-quantity parser), [`duration`] (the Go duration parser and
//!   every duration formatter), [`output`] (the stdout/stderr pair every command writes
//!   through), [`error`] (typed errors and the one mapping to exit codes), [`redact`] (the key,
//!   and its base64, replaced in every stream the process prints to).

pub mod cluster;
pub mod commands;
pub mod diagnose;
pub mod duration;
pub mod error;
pub mod gateway;
pub mod input;
pub mod logging;
pub mod model;
pub mod names;
pub mod operator_pods;
pub mod ops;
pub mod output;
pub mod pipeline;
pub mod placement;
pub mod print;
pub mod quantity;
pub mod redact;

use std::io::Write;

use error::{Error, ExitCode};

/// Prints an error the way kubectl does (`error: …`) plus the next step, and returns its exit
/// code. A closed stdout ends quietly.
pub fn report_error(err: &Error, stderr: &mut dyn Write) -> ExitCode {
    if !err.is_quiet() {
        // Nothing sensible is left to do if stderr is gone too.
        // The message may carry the cluster's words (a log line, an event): escaped for the
        // terminal here, the one place every error is printed.
        let _ = writeln!(
            stderr,
            "error: {}",
            crate::print::terminal::escape(&err.to_string())
        );
        if let Some(hint) = err.hint() {
            let _ = writeln!(stderr, "\n{}", crate::print::terminal::escape(hint));
        }
    }
    err.exit_code()
}
