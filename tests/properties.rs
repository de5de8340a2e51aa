//! Property tests on the entry points that take user input (the same ones the fuzz targets in
//! fuzz/ exercise for longer): none may panic, and well-formed input must come out right.

use kubectl_tfjob::cluster::ConnectionOptions;
use kubectl_tfjob::commands::parse_duration;
use kubectl_tfjob::gateway::GatewayConfig;
use kubectl_tfjob::pipeline::render::RenderOptions;
use kubectl_tfjob::pipeline::{manifest, render, validate, values};
use proptest::prelude::*;

/// YAML-looking text: keys, indentation, scalars, flow collections, anchors and junk.
fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("apiVersion: kubeflow.org/v1\n".to_string()),
        Just("kind: TFJob\n".to_string()),
        Just("metadata:\n  name: x\n".to_string()),
        Just("spec:\n  tfReplicaSpecs:\n".to_string()),
        Just("    Worker:\n      replicas: 2\n".to_string()),
        Just("      template: {spec: {containers: [{name: tensorflow, image: i}]}}\n".to_string()),
        Just("---\n".to_string()),
        Just("- a\n".to_string()),
        Just("&a [*a]\n".to_string()),
        Just("{".to_string()),
        Just("\"\\u00".to_string()),
        "[ -~]{0,12}\n",
        "[0-9eE.+-]{1,8}",
    ];
    prop::collection::vec(token, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn manifests_never_panic(src in prop_oneof![yamlish(), ".{0,200}"]) {
        if let Ok(docs) = manifest::parse_documents(&src, "p.yaml") {
            for doc in &docs {
                let report = validate::validate_document(doc, &GatewayConfig::default());
                let _ = report.render_text();
                let _ = report.to_json();
            }
        }
    }

    #[test]
    fn set_never_panics(arg in ".{0,80}") {
        if let Ok(v) = values::parse_set(&arg) {
            let mut base = serde_json::json!({});
            values::merge(&mut base, v);
            let _ = values::check_shape(&mut base, true);
        }
    }

    #[test]
    fn set_puts_the_value_at_its_path(
        path in prop::collection::vec("[a-z][a-zA-Z]{0,6}", 1..4),
        value in "[a-z][a-z0-9-]{0,10}",
    ) {
        let parsed = values::parse_set(&format!("{}={value}", path.join("."))).unwrap();
        let mut at = &parsed;
        for key in &path {
            at = &at[key];
        }
        prop_assert_eq!(at.as_str(), Some(value.as_str()));
    }

    #[test]
    fn durations_never_panic(s in ".{0,20}") {
        let _ = parse_duration(&s);
    }

    #[test]
    fn built_in_templates_render_valid_jobs(
        name in "[a-z][a-z0-9]{0,20}",
        template in prop_oneof![Just("ps-worker"), Just("chief-worker"), Just("worker"), Just("evaluator")],
        workers in 0i32..40,
        gpus in 0i64..4,
    ) {
        let args = RenderOptions {
            template: Some(template.to_string()),
            name: Some(name),
            image: Some("tensorflow/tensorflow:2.13.0".into()),
            workers: Some(workers),
            gpus: Some(gpus),
            ..Default::default()
        };
        match render::prepare(&ConnectionOptions::default(), &args) {
            Ok(prepared) => {
                prop_assert!(!prepared.report.has_errors());
                let yaml = kubectl_tfjob::print::manifest::to_yaml(&prepared.job);
                let doc = manifest::parse_one(&yaml, "rendered.yaml").unwrap().unwrap();
                let again = validate::validate_document(&doc, &prepared.gateway);
                prop_assert!(!again.has_errors(), "{}", again.render_text());
            }
            // A job with no workers at all may be refused, but only as invalid input.
            Err(e) => prop_assert_eq!(e.exit_code() as i32, 2, "{}", e),
        }
    }

    /// Issue 14.4: a key of any depth is either within Helm's 30 levels or a clear error, never a
    /// stack overflow.
    #[test]
    fn set_key_depth_is_bounded(depth in 1usize..2000) {
        let key = vec!["a"; depth].join(".");
        match values::parse_set(&format!("{key}=1")) {
            Ok(_) => prop_assert!(depth <= values::MAX_SET_DEPTH),
            Err(e) => {
                prop_assert!(depth > values::MAX_SET_DEPTH);
                prop_assert!(e.contains("at most 30"), "{}", e);
            }
        }
    }

    /// Issue 15.7: `{a,b,c}` is a list, and indexes given in any order over several --set merge.
    #[test]
    fn set_lists_and_indexes_merge(items in prop::collection::vec("[a-z][a-z0-9]{0,6}", 1..6), seed in any::<u64>()) {
        let list = values::parse_set(&format!("command={{{}}}", items.join(","))).unwrap();
        prop_assert_eq!(&list["command"], &serde_json::json!(items));
        let mut order: Vec<usize> = (0..items.len()).collect();
        // A deterministic shuffle from the seed.
        let n = order.len();
        for i in 0..n {
            order.swap(i, (seed as usize).wrapping_add(i * 7) % n);
        }
        let set: Vec<values::SetArg> = order
            .iter()
            .map(|&i| values::SetArg::Typed(format!("command[{i}]={}", items[i])))
            .collect();
        let v = values::resolve(&serde_json::json!({}), &[], &set, serde_json::json!({})).unwrap();
        prop_assert_eq!(v.command, Some(items.clone()));
    }

    #[test]
    fn resolve_never_panics_on_any_set(arg in ".{0,80}", string in any::<bool>()) {
        let a = if string { values::SetArg::String(arg) } else { values::SetArg::Typed(arg) };
        if let Err(e) = values::resolve(&serde_json::json!({}), &[], &[a], serde_json::json!({})) {
            prop_assert_eq!(e.exit_code() as i32, 2, "{}", e);
        }
    }

    #[test]
    fn image_references_never_panic(s in ".{0,80}") {
        let _ = validate::pod::image_reference(&s);
    }

    #[test]
    fn well_formed_image_references_are_accepted(
        registry in prop::option::of("[a-z]([a-z0-9-]{0,6}[a-z0-9])?\\.[a-z]{2,4}(:[0-9]{2,5})?"),
        path in prop::collection::vec("[a-z0-9]{1,4}([._-][a-z0-9]{1,4}){0,2}", 1..4),
        tag in prop::option::of("[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}"),
    ) {
        let mut image = registry.map(|r| format!("{r}/")).unwrap_or_default();
        image.push_str(&path.join("/"));
        if let Some(t) = tag {
            image.push(':');
            image.push_str(&t);
        }
        prop_assert_eq!(validate::pod::image_reference(&image), Ok(()), "{}", image);
    }
}
