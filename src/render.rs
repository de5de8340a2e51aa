//! Skeleton: filled in by its issue.

use crate::error::{Error, Result};

pub fn run_render(_kube: &crate::cli::KubeArgs, _args: &crate::cli::RenderArgs) -> Result<()> {
    Err(Error::Other("render: not implemented yet".into()))
}
