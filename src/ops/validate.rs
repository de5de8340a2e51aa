//! `kubectl tfjob validate -f FILE|- [-f …] [-o json]`: the command core over
//! [`crate::pipeline::validate::check_files`]. Offline, and reads none of the connection flags: it takes
//! no context.

use crate::error::{Error, Result};
use crate::output::{Output, ReportFormat};
use crate::pipeline::validate::{self, ValidateOptions};

/// Findings as text on stderr (valid jobs named on stdout) or as JSON on stdout; any error
/// fails the command with exit 2 and the whole list.
pub fn run(opts: ValidateOptions, out: &mut Output) -> Result<()> {
    let checked = validate::check_files(&opts)?;
    let (report, documents) = (&checked.report, checked.documents);
    match opts.output {
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
