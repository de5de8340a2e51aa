//! Skeleton: filled in by its issue.

use crate::error::{Error, Result};

pub async fn run(_kube: &crate::cli::KubeArgs, _args: crate::cli::WaitArgs) -> Result<()> {
    Err(Error::Other("wait: not implemented yet".into()))
}
