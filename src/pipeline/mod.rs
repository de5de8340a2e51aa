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
