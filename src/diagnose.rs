//! Skeleton: filled in by its issue.

use crate::error::{Error, Result};

pub async fn run(_kube: &crate::cli::KubeArgs, _args: crate::cli::DiagnoseArgs) -> Result<()> {
    Err(Error::Other("diagnose: not implemented yet".into()))
}
