//! Skeleton: filled in by its issue.

use crate::error::{Error, Result};

pub fn run_templates(_args: &crate::cli::TemplatesArgs) -> Result<()> {
    Err(Error::Other("templates: not implemented yet".into()))
}
