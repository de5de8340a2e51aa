//! Any bytes as a manifest: parsing with positions and full validation must never panic.
#![no_main]

use kubectl_tfjob::gateway::GatewayConfig;
use kubectl_tfjob::pipeline::{manifest, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(docs) = manifest::parse_documents(text, "fuzz.yaml") {
        let gateway = GatewayConfig::default();
        for doc in &docs {
            let report = validate::validate_document(doc, &gateway);
            let _ = report.render_text();
        }
    }
});
