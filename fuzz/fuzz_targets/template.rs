//! Any user template source: its header and its rendering must never panic.
#![no_main]

use std::borrow::Cow;

use kubectl_tfjob::pipeline::{templates, values};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|source: &str| {
    let Ok((description, defaults)) = templates::parse_header(source, "fuzz.yaml.j2") else {
        return;
    };
    let template = templates::Template {
        name: "fuzz".into(),
        file: "fuzz.yaml.j2".into(),
        source: Cow::Owned(source.to_string()),
        description,
        defaults: defaults.clone(),
        declared: templates::parse_declared(source, "fuzz.yaml.j2").unwrap_or_default(),
        builtin: false,
    };
    let flags = serde_json::json!({"name": "fuzz", "image": "tensorflow/tensorflow:2.13.0"});
    if let Ok(values) = values::resolve_with(&defaults, &template.declared, &[], &[], flags) {
        let _ = templates::render(&template, &values);
    }
});
