//! kubectl-tfjob as a library: one module per concern, pure logic kept apart from I/O.
//!
//! - [`cli`]: clap definitions.
//! - [`model`]: the `kubeflow.org/v1` TFJob types and their JSON Schema.
//! - [`values`], [`templates`], [`render`]: values from flags/files/--set, built-in templates,
//!   rendering into a typed TFJob.
//! - [`gateway`]: model-gateway credentials (Secret-backed env vars) and the istio opt-out.
//! - [`manifest`]: reading YAML with file/line/column positions.
//! - [`validate`]: schema, webhook rules and lint checks, all reported at once.
//! - [`kubeapi`]: the kube client built exactly as kubectl would, with retries.
//! - [`secret`], [`submit`], [`wait`], [`diagnose`]: the cluster-facing commands.
//! - [`error`]: typed errors and the one mapping to exit codes.

pub mod cli;
pub mod completion;
pub mod diagnose;
pub mod error;
pub mod gateway;
pub mod input;
pub mod kubeapi;
pub mod logging;
pub mod manifest;
pub mod model;
pub mod probe;
pub mod render;
pub mod secret;
pub mod submit;
pub mod templates;
pub mod validate;
pub mod values;
pub mod wait;

use cli::{Cli, Command};
use error::{Error, ExitCode, Result};

/// Runs one command line to completion.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Render(args) => render::run_render(&cli.kube, &args),
        Command::Validate(args) => validate::run_validate(&args),
        Command::Templates(args) => templates::run_templates(&args),
        Command::Completion(args) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(
                args.shell,
                &mut cmd,
                "kubectl-tfjob",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Complete { words } => completion::run_complete(&words),
        Command::Submit(args) => runtime()?.block_on(submit::run(&cli.kube, args)),
        Command::Wait(args) => runtime()?.block_on(wait::run(&cli.kube, args)),
        Command::Diagnose(args) => runtime()?.block_on(diagnose::run(&cli.kube, args)),
        Command::Secret(args) => runtime()?.block_on(secret::run(&cli.kube, args)),
    }
}

/// Offline commands never start a runtime, which keeps `render`/`validate` fast.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("starting the async runtime", e))
}

/// Prints an error the way kubectl does (`error: …`) plus the next step, and returns its exit code.
pub fn report_error(err: &Error) -> ExitCode {
    eprintln!("error: {err}");
    if let Some(hint) = err.hint() {
        eprintln!("\n{hint}");
    }
    err.exit_code()
}
