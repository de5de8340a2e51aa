//! Any image reference and any pod template: the distribution grammar check and the core Pod
//! checks must never panic.
#![no_main]

use kubectl_tfjob::pipeline::validate::{names, pod};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let _ = pod::image_reference(s);
    let _ = names::env_var_name(s);
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(s) {
        let _ = pod::check(&v);
    }
});
