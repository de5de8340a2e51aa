//! krew packaging. krew-manifest.yaml must stay a valid krew v1alpha2 Plugin, and
//! scripts/package.sh must produce an archive that krew installs, plus a manifest for it.
//!
//! The rules are krew's own, modelled in tests/krew/mod.rs from kubernetes-sigs/krew:
//! pkg/constants/constants.go, pkg/index/types.go, internal/index/validation/validate.go,
//! internal/installation/{semver/version.go, platform.go, move.go, install.go},
//! internal/download/{downloader.go, verifier.go} and internal/environment/environment.go.
//!
//! The archive tests pack a few-byte stand-in for the binary (a shell wrapper around the debug
//! binary) through the real script, so no release build is needed and `--version` still comes
//! from the real program.

mod krew;

use std::collections::BTreeSet;

use serde_json::Value;

use krew::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn manifest_text() -> String {
    std::fs::read_to_string(format!("{ROOT}/krew-manifest.yaml"))
        .expect("krew-manifest.yaml is at the repository root")
}

fn manifest() -> Value {
    serde_saphyr::from_str(&manifest_text()).expect("krew-manifest.yaml is YAML")
}

#[test]
fn krew_manifest_is_a_valid_v1alpha2_plugin() {
    let typed = parse_plugin(&manifest_text());
    krew_validate(&typed).unwrap();
    assert!(typed.spec.homepage.starts_with("https://"));
    assert!(!typed.spec.description.is_empty() && !typed.spec.caveats.is_empty());
    assert!(typed.spec.platforms.iter().all(|p| p.license.is_none()));

    let m = manifest();
    let name = m["metadata"]["name"].as_str().unwrap();
    assert_eq!(name, "tfjob", "kubectl tfjob → plugin name tfjob");

    let spec = &m["spec"];
    let version = spec["version"].as_str().unwrap();
    assert_eq!(version, format!("v{VERSION}"), "version follows Cargo.toml");

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
        // `kubectl tfjob <TAB>` (kubectl 1.26+) runs kubectl_complete-tfjob: krew users get it
        // in the plugin's folder (issue 61 item 8). Windows has no sh to run it.
        if os != "windows" {
            assert!(
                froms.contains(&"kubectl_complete-tfjob"),
                "{os}/{arch}: kubectl_complete-tfjob is not extracted"
            );
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
fn krew_validation_here_rejects_what_krew_rejects() {
    let good = parse_plugin(&manifest_text());
    type Breaker = fn(&mut Plugin);
    let cases: [(&str, Breaker); 9] = [
        ("uppercase sha256", |p| {
            p.spec.platforms[0].sha256 = "A".repeat(64)
        }),
        ("short sha256", |p| {
            p.spec.platforms[0].sha256 = "0".repeat(63)
        }),
        ("windows device name", |p| p.metadata.name = "con".into()),
        ("dot in name", |p| p.metadata.name = "tf.job".into()),
        ("version without v", |p| p.spec.version = VERSION.into()),
        ("two-line short description", |p| {
            p.spec.short_description = "a\nb".into()
        }),
        ("empty files", |p| p.spec.platforms[0].files = Some(vec![])),
        ("selector key other than os/arch", |p| {
            let sel = p.spec.platforms[0].selector.as_mut().unwrap();
            sel.match_labels
                .as_mut()
                .unwrap()
                .insert("distro".into(), "debian".into());
        }),
        ("no selector", |p| p.spec.platforms[0].selector = None),
    ];
    for (what, break_it) in cases {
        let mut p = good.clone();
        break_it(&mut p);
        assert!(
            krew_validate(&p).is_err(),
            "accepted a manifest with {what}"
        );
    }
}

#[test]
fn license_and_completion_script_ship_with_the_repository() {
    let license = std::fs::read_to_string(format!("{ROOT}/LICENSE")).unwrap();
    assert!(license.contains("Apache License") && license.contains("Version 2.0"));
    let script = std::fs::read_to_string(format!("{ROOT}/kubectl_complete-tfjob")).unwrap();
    assert!(script.contains("kubectl-tfjob __complete"));
}

/// .krew.yaml is what krew-release-bot turns into the krew-index manifest for a tag, while
/// package.sh packs archives from krew-manifest.yaml: both must describe the same archives
/// (names, files, bin) or the published manifest would name files the archives lack.
/// .krew.yaml is a Go template (not YAML), so it is read line by line in its own fixed layout.
#[test]
fn krew_release_bot_template_describes_the_same_archives() {
    let template = std::fs::read_to_string(format!("{ROOT}/.krew.yaml")).unwrap();
    let version = format!("v{VERSION}");
    let mut from_template = Vec::new();
    for block in template.split("\n  - selector:").skip(1) {
        let labels = block
            .lines()
            .find_map(|l| l.trim().strip_prefix("matchLabels: {"))
            .and_then(|l| l.strip_suffix('}'))
            .unwrap_or_else(|| panic!(".krew.yaml: no matchLabels in {block}"));
        let label = |key: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.trim().strip_prefix(&format!("{key}: ")))
                .unwrap()
                .to_string()
        };
        let uri = block
            .split("addURIAndSha \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap()
            .replace("{{ .TagName }}", &version);
        let files: Vec<(String, String)> = block
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- {from: "))
            .map(|l| {
                let (from, to) = l.trim_end_matches('}').split_once(", to: ").unwrap();
                (from.to_string(), to.to_string())
            })
            .collect();
        let bin = block
            .lines()
            .find_map(|l| l.trim().strip_prefix("bin: "))
            .unwrap()
            .to_string();
        from_template.push((label("os"), label("arch"), uri, files, bin));
    }
    let manifest = parse_plugin(&manifest_text());
    let from_manifest: Vec<_> = manifest
        .spec
        .platforms
        .iter()
        .map(|p| {
            let labels = p.selector.as_ref().unwrap().match_labels.as_ref().unwrap();
            let files = p.files.as_ref().unwrap();
            (
                labels["os"].clone(),
                labels["arch"].clone(),
                p.uri.clone(),
                files
                    .iter()
                    .map(|f| (f.from.clone(), f.to.clone()))
                    .collect::<Vec<_>>(),
                p.bin.clone(),
            )
        })
        .collect();
    assert_eq!(from_template, from_manifest);
    // The caveats too, the version aside: the published manifest says what this one says.
    let caveats = template
        .split("  caveats: |\n")
        .nth(1)
        .and_then(|rest| rest.split("\n  platforms:").next())
        .expect(".krew.yaml has caveats")
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect::<String>()
        .replace("{{ .TagName }}", &manifest.spec.version);
    assert_eq!(caveats, manifest.spec.caveats);
}

#[cfg(unix)]
mod package {
    //! scripts/package.sh, and installing what it makes the way krew does.

    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};

    use super::*;

    const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/package.sh");
    const EPOCH: u64 = 1_764_547_200;

    /// A few-byte stand-in for the release binary: it runs the debug binary, so the archive stays
    /// small and the installed link answers `--version` for real.
    fn stand_in_binary(dir: &Path) -> PathBuf {
        fs::create_dir_all(dir).unwrap();
        let path = dir.join("kubectl-tfjob");
        let real = env!("CARGO_BIN_EXE_kubectl-tfjob");
        fs::write(&path, format!("#!/bin/sh\nexec '{real}' \"$@\"\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn run_script(args: &[&str], epoch: Option<u64>) -> Output {
        let mut cmd = Command::new("bash");
        cmd.arg(SCRIPT).args(args);
        match epoch {
            Some(e) => cmd.env("SOURCE_DATE_EPOCH", e.to_string()),
            None => cmd.env_remove("SOURCE_DATE_EPOCH"),
        };
        cmd.output().expect("bash runs scripts/package.sh")
    }

    struct Packaged {
        archive: PathBuf,
        out: PathBuf,
    }

    fn package(binary: &Path, out: &Path, epoch: Option<u64>) -> Packaged {
        let o = run_script(
            &[
                "--binary",
                binary.to_str().unwrap(),
                "--out-dir",
                out.to_str().unwrap(),
            ],
            epoch,
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "package.sh failed:\n{stderr}");
        let stdout = String::from_utf8(o.stdout).unwrap();
        let archive = PathBuf::from(stdout.trim());
        assert_eq!(
            stdout.lines().count(),
            1,
            "stdout is the archive path only: {stdout:?}"
        );
        Packaged {
            archive,
            out: out.to_path_buf(),
        }
    }

    #[test]
    fn packaged_archive_installs_as_krew_would() {
        let tmp = tempfile::tempdir().unwrap();
        let binary = stand_in_binary(&tmp.path().join("in"));
        let p = package(&binary, &tmp.path().join("dist"), Some(EPOCH));

        let name = p.archive.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(p.archive.parent().unwrap(), p.out.canonicalize().unwrap());
        let prefix = format!("kubectl-tfjob-v{VERSION}-");
        assert!(
            name.starts_with(&prefix) && name.ends_with(".tar.gz"),
            "{name}"
        );
        let bytes = fs::read(&p.archive).unwrap();
        let sum = sha256_hex(&bytes);
        let sha_file = fs::read_to_string(p.archive.with_file_name(format!("{name}.sha256")));
        assert_eq!(
            sha_file.unwrap(),
            format!("{sum}  {name}\n"),
            "sha256sum format"
        );

        let generated =
            parse_plugin(&fs::read_to_string(p.out.join("krew-manifest.yaml")).unwrap());
        krew_validate(&generated).unwrap();
        assert_eq!(
            generated.metadata.name, "tfjob",
            "so the plugin is `kubectl tfjob`"
        );
        let (_, platform) = matching_platform(&generated);
        assert_eq!(platform.sha256, sum, "manifest checksum = archive checksum");
        assert_eq!(platform.uri, format!("file://{}", p.archive.display()));

        let entries = read_archive(&bytes);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "entries are sorted");
        assert!(
            entries.iter().all(|e| e.mtime == EPOCH),
            "mtime is SOURCE_DATE_EPOCH"
        );
        let froms: BTreeSet<&str> = platform
            .files
            .as_ref()
            .unwrap()
            .iter()
            .map(|f| f.from.as_str())
            .collect();
        assert_eq!(
            names.iter().copied().collect::<BTreeSet<_>>(),
            froms,
            "the archive holds exactly the manifest's files"
        );
        let bin_entry = entries.iter().find(|e| e.name == platform.bin).unwrap();
        assert_eq!(
            bin_entry.mode, 0o755,
            "bin is executable inside the archive"
        );
        assert_eq!(bin_entry.data, fs::read(&binary).unwrap());
        let complete = entries
            .iter()
            .find(|e| e.name == "kubectl_complete-tfjob")
            .expect("the archive holds kubectl_complete-tfjob");
        assert_eq!(complete.mode, 0o755, "kubectl runs it");
        assert_eq!(
            complete.data,
            fs::read(format!("{ROOT}/kubectl_complete-tfjob")).unwrap()
        );
        let license = entries.iter().find(|e| e.name == "LICENSE").unwrap();
        assert_eq!(license.mode, 0o644);
        assert_eq!(license.data, fs::read(format!("{ROOT}/LICENSE")).unwrap());

        let link = krew_install(&generated, platform, &bytes, &tmp.path().join("krew"));
        assert_eq!(link.file_name().unwrap(), "kubectl-tfjob");
        let out = Command::new(&link).arg("--version").output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap().trim(),
            format!("kubectl-tfjob {VERSION}")
        );

        // krew links only `bin` (kubernetes-sigs/krew#812): the caveat's command puts the
        // completion helper on PATH, and kubectl's call to it (`kubectl_complete-tfjob WORDS`,
        // kubectl 1.26+) answers in Cobra's format.
        let root = tmp.path().join("krew");
        let command = generated
            .spec
            .caveats
            .lines()
            .map(str::trim)
            .find(|l| l.contains("kubectl_complete-tfjob"))
            .expect("a caveat says how to put kubectl_complete-tfjob on PATH");
        let ran = Command::new("sh")
            .args(["-c", command])
            .env("KREW_ROOT", &root)
            .output()
            .unwrap();
        assert!(ran.status.success(), "{command}: {ran:?}");
        let path = format!(
            "{}:{}",
            root.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let answer = Command::new(root.join("bin/kubectl_complete-tfjob"))
            .args(["dia"])
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(answer.status.success(), "{answer:?}");
        assert!(
            String::from_utf8(answer.stdout)
                .unwrap()
                .starts_with("diagnose\t"),
            "the helper answers through the installed plugin"
        );
    }

    #[test]
    fn generated_manifest_differs_from_the_checked_in_one_only_in_this_platforms_uri_and_sha256() {
        let tmp = tempfile::tempdir().unwrap();
        let binary = stand_in_binary(&tmp.path().join("in"));
        let p = package(&binary, &tmp.path().join("dist"), Some(EPOCH));
        let generated_text = fs::read_to_string(p.out.join("krew-manifest.yaml")).unwrap();
        let checked_in_text = manifest_text();

        let generated = parse_plugin(&generated_text);
        let (index, platform) = matching_platform(&generated);
        let mut expected: Value = serde_saphyr::from_str(&checked_in_text).unwrap();
        expected["spec"]["platforms"][index]["uri"] = platform.uri.clone().into();
        expected["spec"]["platforms"][index]["sha256"] = platform.sha256.clone().into();
        let actual: Value = serde_saphyr::from_str(&generated_text).unwrap();
        assert_eq!(actual, expected);

        // Text too: comments and layout are kept, two lines change.
        let (a, b): (Vec<&str>, Vec<&str>) = (
            checked_in_text.lines().collect(),
            generated_text.lines().collect(),
        );
        assert_eq!(a.len(), b.len());
        let changed: Vec<(&str, &str)> = a
            .iter()
            .zip(&b)
            .filter(|(x, y)| x != y)
            .map(|(x, y)| (*x, *y))
            .collect();
        assert_eq!(changed.len(), 2, "{changed:#?}");
        for (old, new) in changed {
            let key = |l: &str| l.split(':').next().unwrap().to_string();
            assert_eq!(key(old), key(new));
            assert!(
                ["    uri", "    sha256"].contains(&key(old).as_str()),
                "{old}"
            );
        }
    }

    #[test]
    fn packing_the_same_binary_twice_gives_the_same_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let binary = stand_in_binary(&tmp.path().join("in"));
        // One fixed epoch for both: without it the script stamps entries with the last commit's
        // time, which moves if a commit lands between the two runs.
        let epoch = Some(1_700_000_000);
        let first = package(&binary, &tmp.path().join("a"), epoch);
        // Same content, different mtime and mode on disk: neither may reach the archive.
        let f = fs::File::options().write(true).open(&binary).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400))
            .unwrap();
        fs::set_permissions(&binary, fs::Permissions::from_mode(0o700)).unwrap();
        let second = package(&binary, &tmp.path().join("b"), epoch);
        assert_eq!(
            fs::read(&first.archive).unwrap(),
            fs::read(&second.archive).unwrap()
        );
    }

    #[test]
    fn package_script_refuses_bad_input_before_writing_anything() {
        let tmp = tempfile::tempdir().unwrap();
        let binary = stand_in_binary(&tmp.path().join("in"));
        let binary = binary.to_str().unwrap();
        let missing = tmp.path().join("nope/kubectl-tfjob");
        let cases: [(&[&str], &str); 4] = [
            (
                &["--expect-version", "v0.0.0-not-this", "--binary", binary],
                "expected version v0.0.0-not-this",
            ),
            (
                &[
                    "--target",
                    "riscv64gc-unknown-linux-gnu",
                    "--binary",
                    binary,
                ],
                "target riscv64gc-unknown-linux-gnu: no krew arch",
            ),
            (
                &["--target", "x86_64-unknown-freebsd", "--binary", binary],
                "target x86_64-unknown-freebsd: no krew os",
            ),
            (&["--binary", missing.to_str().unwrap()], "does not exist"),
        ];
        for (i, (args, message)) in cases.into_iter().enumerate() {
            let out_dir = tmp.path().join(format!("out{i}"));
            let mut all = args.to_vec();
            all.extend(["--out-dir", out_dir.to_str().unwrap()]);
            let o = run_script(&all, Some(EPOCH));
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{args:?} succeeded");
            assert!(stderr.contains(message), "{args:?}: {stderr}");
            assert!(
                o.stdout.is_empty(),
                "{args:?}: stdout is for the archive path only"
            );
            assert!(!out_dir.exists(), "{args:?} wrote {}", out_dir.display());
        }
    }

    /// The fenced shell block of README's Install section that installs with krew, with
    /// continuation lines joined.
    fn readme_krew_commands() -> Vec<String> {
        let readme = fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
        let install = readme
            .split("\n## ")
            .find(|s| s.starts_with("Install"))
            .expect("README has an Install section");
        let block = install
            .split("```")
            .skip(1)
            .step_by(2)
            .find(|b| b.contains("kubectl krew install"))
            .expect("the Install section shows `kubectl krew install`");
        block
            .lines()
            .skip(1) // the fence's language tag
            .collect::<Vec<_>>()
            .join("\n")
            .replace("\\\n", " ")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn readme_install_instruction_uses_the_files_the_script_writes() {
        let commands = readme_krew_commands();
        let package_at = commands
            .iter()
            .position(|c| c.split_whitespace().next() == Some("scripts/package.sh"))
            .expect("README runs scripts/package.sh");
        let install_at = commands
            .iter()
            .position(|c| c.starts_with("kubectl krew install"))
            .unwrap();
        assert!(package_at < install_at, "{commands:#?}");

        // Lay out dist/ as the script does from the repository root, then run README's krew
        // line for real through sh, with a `kubectl` that records what it was given.
        let tmp = tempfile::tempdir().unwrap();
        let binary = stand_in_binary(&tmp.path().join("in"));
        let cwd = tmp.path().join("repo");
        let p = package(&binary, &cwd.join("dist"), Some(EPOCH));
        let fake = tmp.path().join("fakebin");
        fs::create_dir_all(&fake).unwrap();
        let record = tmp.path().join("kubectl-args");
        fs::write(
            fake.join("kubectl"),
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
                record.display()
            ),
        )
        .unwrap();
        fs::set_permissions(fake.join("kubectl"), fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
        let o = Command::new("sh")
            .arg("-c")
            .arg(&commands[install_at])
            .current_dir(&cwd)
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

        let args = fs::read_to_string(&record).unwrap();
        let args: Vec<&str> = args.lines().collect();
        assert_eq!(&args[..2], ["krew", "install"]);
        let flag = |name: &str| {
            let v = args
                .iter()
                .find_map(|a| a.strip_prefix(&format!("--{name}=")))
                .unwrap_or_else(|| panic!("README's command has no --{name}=: {args:?}"));
            cwd.join(v)
        };
        assert_eq!(
            flag("manifest").canonicalize().unwrap(),
            p.out.join("krew-manifest.yaml").canonicalize().unwrap()
        );
        assert_eq!(
            flag("archive").canonicalize().unwrap(),
            p.archive,
            "README's --archive names the archive package.sh wrote for this machine"
        );
    }
}

#[cfg(unix)]
mod release {
    //! The release workflow's side: every platform built (static musl binaries for Linux) and
    //! one krew manifest with each archive's real sha256 (scripts/release-manifest.sh).

    use std::fs;
    use std::process::Command;

    use super::*;

    const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/release-manifest.sh");

    #[test]
    fn the_workflow_builds_linux_musl_and_darwin_for_amd64_and_arm64_and_writes_the_manifest() {
        let wf = std::fs::read_to_string(format!("{ROOT}/.github/workflows/release.yml")).unwrap();
        for target in [
            "x86_64-unknown-linux-musl",
            "aarch64-unknown-linux-musl",
            "x86_64-apple-darwin",
            "aarch64-apple-darwin",
        ] {
            assert!(
                wf.contains(&format!("target: {target}")),
                "release.yml builds no {target}"
            );
        }
        assert!(wf.contains("scripts/package.sh --target"), "{wf}");
        assert!(wf.contains("scripts/release-manifest.sh dist"), "{wf}");
    }

    #[test]
    fn release_manifest_carries_each_archives_sha256_and_refuses_a_missing_one() {
        let dist = tempfile::tempdir().unwrap();
        let manifest = parse_plugin(&manifest_text());
        let mut expected = Vec::new();
        for (i, p) in manifest.spec.platforms.iter().enumerate() {
            let name = p.uri.rsplit('/').next().unwrap();
            let bytes = format!("archive {i} for {name}").into_bytes();
            let sum = sha256_hex(&bytes);
            fs::write(dist.path().join(name), &bytes).unwrap();
            fs::write(
                dist.path().join(format!("{name}.sha256")),
                format!("{sum}  {name}\n"),
            )
            .unwrap();
            expected.push((p.uri.clone(), sum));
        }
        let run = Command::new("bash")
            .arg(SCRIPT)
            .arg(dist.path())
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let written = fs::read_to_string(dist.path().join("krew-manifest.yaml")).unwrap();
        let plugin = parse_plugin(&written);
        krew_validate(&plugin).unwrap();
        let got: Vec<(String, String)> = plugin
            .spec
            .platforms
            .iter()
            .map(|p| (p.uri.clone(), p.sha256.clone()))
            .collect();
        assert_eq!(got, expected);

        // A stale checksum file, then a missing archive: refused, nothing written over.
        let first = expected[0].0.rsplit('/').next().unwrap().to_string();
        fs::write(dist.path().join(&first), b"rebuilt").unwrap();
        let run = Command::new("bash")
            .arg(SCRIPT)
            .arg(dist.path())
            .output()
            .unwrap();
        assert!(!run.status.success());
        assert!(
            String::from_utf8_lossy(&run.stderr).contains("but the archive's sha256 is"),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        fs::remove_file(dist.path().join(&first)).unwrap();
        let run = Command::new("bash")
            .arg(SCRIPT)
            .arg(dist.path())
            .output()
            .unwrap();
        assert!(!run.status.success());
        assert!(
            String::from_utf8_lossy(&run.stderr).contains(&format!("{first} is not in")),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
}
