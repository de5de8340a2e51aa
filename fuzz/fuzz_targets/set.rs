//! Any `--set` argument: parsing, then merging into values, must never panic.
#![no_main]

use kubectl_tfjob::values;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|arg: &str| {
    if let Ok(v) = values::parse_set(arg) {
        let mut base = serde_json::json!({"name": "fuzz", "image": "i"});
        values::merge(&mut base, v);
        let _ = values::check_shape(&mut base, true);
    }
});
