//! `kubectl-tfjob`: parse the command line, run it, turn the outcome into an exit code.
//! Everything else lives in the library (`src/lib.rs`).

use clap::Parser;

fn main() {
    let cli = kubectl_tfjob::cli::Cli::parse();
    kubectl_tfjob::logging::init(cli.verbose);
    let code = match kubectl_tfjob::run(cli) {
        Ok(()) => kubectl_tfjob::error::ExitCode::Ok,
        Err(err) => kubectl_tfjob::report_error(&err),
    };
    std::process::exit(code as i32);
}
