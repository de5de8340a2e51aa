//! krew-manifest.yaml must stay a valid krew v1alpha2 Plugin (the rules krew's own validation
//! applies: name, version, unique selectors, files and bin per platform, the LICENSE shipped).

use std::collections::BTreeSet;

use serde_json::Value;

fn manifest() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/krew-manifest.yaml"))
        .expect("krew-manifest.yaml is at the repository root");
    serde_saphyr::from_str(&text).expect("krew-manifest.yaml is YAML")
}

#[test]
fn krew_manifest_is_a_valid_v1alpha2_plugin() {
    let m = manifest();
    assert_eq!(
        m["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(m["kind"], "Plugin");
    let name = m["metadata"]["name"].as_str().unwrap();
    assert_eq!(name, "tfjob", "kubectl tfjob → plugin name tfjob");
    assert!(
        name.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    );

    let spec = &m["spec"];
    let version = spec["version"].as_str().unwrap();
    assert_eq!(
        version,
        format!("v{}", env!("CARGO_PKG_VERSION")),
        "version follows Cargo.toml"
    );
    assert!(!spec["shortDescription"].as_str().unwrap().is_empty());
    assert!(spec["homepage"].as_str().unwrap().starts_with("https://"));

    let platforms = spec["platforms"].as_array().unwrap();
    let mut selectors = BTreeSet::new();
    for p in platforms {
        let labels = &p["selector"]["matchLabels"];
        let (os, arch) = (
            labels["os"].as_str().unwrap(),
            labels["arch"].as_str().unwrap(),
        );
        assert!(
            selectors.insert((os.to_string(), arch.to_string())),
            "duplicate selector {os}/{arch}"
        );

        let uri = p["uri"].as_str().unwrap();
        assert!(uri.starts_with("https://"), "{uri}");
        assert!(uri.contains(version), "{uri} is not the {version} archive");
        let sha = p["sha256"].as_str().unwrap();
        assert!(
            sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
            "sha256 {sha}"
        );

        let bin = p["bin"].as_str().unwrap();
        let expected_bin = if os == "windows" {
            "kubectl-tfjob.exe"
        } else {
            "kubectl-tfjob"
        };
        assert_eq!(bin, expected_bin);
        if os == "windows" {
            assert!(uri.ends_with(".zip"), "{uri}");
        } else {
            assert!(uri.ends_with(".tar.gz"), "{uri}");
        }
        let files = p["files"].as_array().unwrap();
        let froms: Vec<&str> = files.iter().map(|f| f["from"].as_str().unwrap()).collect();
        assert!(
            froms.contains(&bin),
            "{os}/{arch}: the binary is not extracted"
        );
        assert!(
            froms.contains(&"LICENSE"),
            "{os}/{arch}: LICENSE is not extracted"
        );
        for f in files {
            assert!(f["to"].as_str().is_some_and(|t| !t.is_empty()));
        }
    }
    let wanted: BTreeSet<(String, String)> = [
        ("linux", "amd64"),
        ("linux", "arm64"),
        ("darwin", "amd64"),
        ("darwin", "arm64"),
        ("windows", "amd64"),
    ]
    .iter()
    .map(|(o, a)| (o.to_string(), a.to_string()))
    .collect();
    assert_eq!(selectors, wanted);
}

#[test]
fn license_and_completion_script_ship_with_the_repository() {
    let root = env!("CARGO_MANIFEST_DIR");
    let license = std::fs::read_to_string(format!("{root}/LICENSE")).unwrap();
    assert!(license.contains("Apache License") && license.contains("Version 2.0"));
    let script = std::fs::read_to_string(format!("{root}/kubectl_complete-tfjob")).unwrap();
    assert!(script.contains("kubectl-tfjob __complete"));
}
