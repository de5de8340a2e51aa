//! Printing the TFJob a command made: the manifest `render` writes and `submit -o` echoes, and
//! the notes on where each role's resources came from. Each printer takes its writer, so the
//! command decides the stream (and `Output` its redaction and terminal handling).

use std::io::Write;

use super::Format;
use crate::error::{Error, Result};
use crate::model::TFJob;

/// The job as YAML, the way `kubectl get -o yaml` users expect to read it.
pub fn to_yaml(job: &TFJob) -> String {
    serde_saphyr::to_string(job).expect("a TFJob serializes to YAML")
}

/// The job as pretty JSON.
pub fn to_json(job: &TFJob) -> String {
    serde_json::to_string_pretty(job).expect("a TFJob serializes to JSON")
}

/// The cpu and memory each role got, and from where (`render`, `submit`, `export`): notes,
/// on stderr.
pub fn resources(lines: &[String], out: &mut crate::output::Output) {
    for l in lines {
        out.note_line(&format!("resources: {l}"));
    }
}

/// A job `submit` sent or got back: `default_line` (`tfjob.kubeflow.org/x created`) without
/// `-o`, YAML as rendered, else any of kubectl's printers on the object as JSON (json with Go's
/// indentation, as `kubectl create -o json` writes it). `qualified_kind` is for `-o name`.
pub fn job(
    job: &TFJob,
    format: Option<&Format>,
    qualified_kind: &str,
    default_line: &str,
    out: &mut dyn Write,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io("writing the output", e);
    match format {
        None => writeln!(out, "{default_line}").map_err(io),
        Some(Format::Yaml) => out.write_all(to_yaml(job).as_bytes()).map_err(io),
        Some(f) => {
            let value = serde_json::to_value(job).expect("a TFJob serializes");
            super::print(f, &value, qualified_kind, false, out)
        }
    }
}
