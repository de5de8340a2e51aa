//! Any `--set` / `--set-string` argument: parsing, then resolving into values, must never panic,
//! and any failure is an input error (exit 2). Deep keys stop at the depth limit.
#![no_main]

use kubectl_tfjob::pipeline::values::{self, SetArg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|arg: &str| {
    if let Ok(v) = values::parse_set(arg) {
        let mut base = serde_json::json!({"name": "fuzz", "image": "i"});
        values::merge(&mut base, v);
        let _ = values::check_shape(&mut base, true);
    }
    for a in [SetArg::Typed(arg.to_string()), SetArg::String(arg.to_string())] {
        if let Err(e) = values::resolve(&serde_json::json!({}), &[], &[a], serde_json::json!({})) {
            assert_eq!(e.exit_code() as i32, 2, "{e}");
        }
    }
});
