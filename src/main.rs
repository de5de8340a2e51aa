//! `kubectl-tfjob`: parse the command line, run it, turn the outcome into an exit code.
//! Everything else lives in the library (`src/lib.rs`).

use kubectl_tfjob::commands::Cli;
use kubectl_tfjob::error::ExitCode;
use kubectl_tfjob::output::Output;

fn main() {
    let cli = Cli::parse_with_order();
    kubectl_tfjob::output::logging::init(cli.global.verbose);
    let mut out = Output::stdio();
    let code = match kubectl_tfjob::run(cli, &mut out) {
        Ok(()) => ExitCode::Ok,
        Err(err) => kubectl_tfjob::report_error(
            &err,
            &mut kubectl_tfjob::output::redact::Redacting::new(std::io::stderr()),
        ),
    };
    // `exit` runs no destructors: flush what the redacting streams still hold first.
    drop(out);
    std::process::exit(code as i32);
}
