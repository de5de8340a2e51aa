//! The offline pipeline (the layer above `cluster`, beside `diagnose`, `placement` and `print`):
//! from flags, values and a template (or a manifest) to a validated TFJob,
//! and the same job as a JobSet. No I/O but reading input; nothing here knows the cluster
//! beyond `cluster`'s plain facts.
//!
//! `render` drives it (`prepare`, shared by `render`, `submit`, `check` and `export`) over
//! `templates` (built-in and user minijinja templates), `values` (flags, files and `--set` as
//! one values tree), `manifest` (YAML read as kubectl reads it, with positions), `validate`
//! (schema, webhook, core Pod validation, lints) and `jobset` (TFJob → JobSet export).

pub mod jobset;
pub mod manifest;
pub mod render;
pub mod templates;
pub mod validate;
pub mod values;

/// Checks an embedded generated schema (`include_str!`'d from `file`, a path under the crate)
/// against what its derivation gives now; `UPDATE_GOLDEN=1` rewrites the file instead. The
/// TFJob and JobSet schemas share it, so the path and the message cannot drift apart.
#[cfg(test)]
fn embedded_schema_is_current(file: &str, embedded: &str, derived: &serde_json::Value) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, serde_json::to_string(derived).unwrap() + "\n").unwrap();
        return;
    }
    let embedded: serde_json::Value = serde_json::from_str(embedded).unwrap();
    assert!(
        &embedded == derived,
        "{file} is stale: run UPDATE_GOLDEN=1 cargo test embedded_schema"
    );
}
