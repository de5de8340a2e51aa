//! Skeleton: filled in by its issue.

use crate::error::{Error, Result};

pub async fn run(_kube: &crate::cli::KubeArgs, _args: crate::cli::SecretArgs) -> Result<()> {
    Err(Error::Other("secret: not implemented yet".into()))
}
