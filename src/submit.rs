//! Skeleton: filled in by its issue.

use crate::error::{Error, Result};

pub async fn run(_kube: &crate::cli::KubeArgs, _args: crate::cli::SubmitArgs) -> Result<()> {
    Err(Error::Other("submit: not implemented yet".into()))
}
