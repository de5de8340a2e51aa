//! `kubectl tfjob render`: the command core over [`crate::pipeline::render::prepare`]. Offline: of the
//! connection flags it reads only the namespace.

use super::Context;
use crate::error::Result;
use crate::output::Output;
use crate::pipeline::render::{self, RenderOptions};

/// YAML on stdout only when the job is valid; findings and the resources notes on stderr.
pub fn run(ctx: &Context, opts: RenderOptions, out: &mut Output) -> Result<()> {
    let prepared = render::prepare(ctx.conn(), &opts)?;
    let notes = prepared
        .report
        .render_text_with_origin(Some(&prepared.source));
    if !notes.is_empty() {
        out.note(&notes);
    }
    crate::print::manifest::resources(&prepared.resources, out);
    out.data(&crate::print::manifest::to_yaml(&prepared.job))
}
