//! Skeleton: filled in by its issue.

use crate::error::{Error, Result};

pub fn run_validate(_args: &crate::cli::ValidateArgs) -> Result<()> {
    Err(Error::Other("validate: not implemented yet".into()))
}
