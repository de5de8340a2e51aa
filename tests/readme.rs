//! The documents are tested: every shell block in README.md, ARCHITECTURE.md, bench/README.md
//! and every Markdown file under docs/ carries a marker on the line right before its opening
//! fence, and this test runs each block marked runnable against the project's simulated cluster
//! with the built binary.
//!
//! Markers (HTML comments, invisible on GitHub):
//! - `<!-- runnable -->`: the block runs here, in document order, all blocks of one file in one
//!   shell environment each (`bash -euo pipefail`), against one simulated cluster per file (so a
//!   block may use what an earlier block of the same file created; each file starts from a
//!   fresh cluster, home and working directory, so a page stands on its own). `kubectl tfjob …`
//!   reaches the built binary through a PATH shim (a `kubectl` stand-in that forwards
//!   `tfjob …` and refuses anything else), and `kubectl-tfjob` is on PATH too. `KUBECONFIG`
//!   points at the simulated cluster, `HOME` and the working directory are temporary,
//!   `TAOTOKEN_API_KEY` holds a test key.
//!   Lines `# => TEXT` inside the block are expected output: the block's combined stdout and
//!   stderr must contain TEXT. A command expected to fail is written `cmd || echo "exit $?"`
//!   with `# => exit N` after it. The block fails on any other non-zero exit.
//! - `<!-- not-runnable: REASON -->`: skipped, printing REASON (a real cluster, a terminal,
//!   installs into the user's machine, or cargo itself).
//!
//! A shell block with no marker fails the test, so every block is either run or says why not.
//! The files run in parallel, one thread and one cluster each.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tfjob_testcluster::{Scenario, TestCluster};

const RUNNABLE: &str = "<!-- runnable -->";
/// `TAOTOKEN_API_KEY` in every block, and the key the simulated gateway accepts.
const README_KEY: &str = "sk-readme-test-key";
const NOT_RUNNABLE: &str = "<!-- not-runnable:";
/// A hung block fails instead of stalling the suite (the binary's own deadlines are shorter).
const BLOCK_DEADLINE: Duration = Duration::from_secs(180);

#[derive(Debug)]
enum Mark {
    Runnable,
    Skip(String),
}

#[derive(Debug)]
struct Block {
    line: usize,
    mark: Mark,
    text: String,
}

/// The shell blocks of a Markdown text with their markers; an unmarked one is an error, named
/// by `file` and line.
fn blocks(file: &str, markdown: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        if !fence.starts_with("```") {
            i += 1;
            continue;
        }
        let lang = fence.trim_start_matches('`').trim();
        let start = i;
        i += 1;
        let mut text = String::new();
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            text += lines[i];
            text.push('\n');
            i += 1;
        }
        i += 1;
        if !matches!(lang, "sh" | "bash" | "shell" | "console") {
            continue;
        }
        let prev = start
            .checked_sub(1)
            .map(|p| lines[p].trim())
            .unwrap_or_default();
        let mark = if prev == RUNNABLE {
            Mark::Runnable
        } else if let Some(reason) = prev.strip_prefix(NOT_RUNNABLE) {
            Mark::Skip(reason.trim_end_matches("-->").trim().to_string())
        } else {
            return Err(format!(
                "{file}:{}: shell block without a marker; put `{RUNNABLE}` or \
                 `{NOT_RUNNABLE} REASON -->` on the line before it",
                start + 1
            ));
        };
        out.push(Block {
            line: start + 1,
            mark,
            text,
        });
    }
    Ok(out)
}

fn expected_lines(block: &str) -> Vec<&str> {
    block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("# =>"))
        .map(str::trim)
        .collect()
}

/// A directory with `kubectl` (forwards `tfjob …` to the plugin) and `kubectl-tfjob`.
fn shim_dir(root: &Path, plugin: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let kubectl = bin.join("kubectl");
    std::fs::write(
        &kubectl,
        format!(
            "#!/bin/sh\n\
             if [ \"$1\" = tfjob ]; then shift; exec '{plugin}' \"$@\"; fi\n\
             echo \"kubectl stand-in (tests/readme.rs): only 'kubectl tfjob ...' runs here\" >&2\n\
             exit 127\n",
            plugin = plugin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(plugin, bin.join("kubectl-tfjob")).unwrap();
    bin
}

struct Env {
    cluster: TestCluster,
    bin: PathBuf,
    home: PathBuf,
    work: PathBuf,
    logs: PathBuf,
}

fn run_block(env: &Env, block: &Block, n: usize) -> Result<String, String> {
    let log = env.logs.join(format!("block-{n}.log"));
    let file = std::fs::File::create(&log).unwrap();
    let path = format!(
        "{}:{}",
        env.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &block.text])
        .current_dir(&env.work)
        .env("PATH", path)
        .env("HOME", &env.home)
        .env("KUBECONFIG", env.cluster.kubeconfig())
        .env("TAOTOKEN_API_KEY", README_KEY)
        .env_remove("TAOTOKEN_BASE_URL")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .map_err(|e| format!("cannot run bash: {e}"))?;
    let end = Instant::now() + BLOCK_DEADLINE;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "still running after {BLOCK_DEADLINE:?}; output:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    if !status.success() {
        return Err(format!("exited with {status}; output:\n{output}"));
    }
    let missing: Vec<&str> = expected_lines(&block.text)
        .into_iter()
        .filter(|e| !output.contains(e))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "output lacks the documented line(s) {missing:?}; output:\n{output}"
        ));
    }
    Ok(output)
}

/// Every tested document, relative to the repository root: README.md, ARCHITECTURE.md,
/// bench/README.md (those that exist) and every `*.md` under docs/, in a stable order.
fn documents(root: &Path) -> Vec<String> {
    let mut docs: Vec<String> = ["README.md", "ARCHITECTURE.md", "bench/README.md"]
        .into_iter()
        .filter(|f| root.join(f).is_file())
        .map(str::to_string)
        .collect();
    let mut pages = vec![];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let rel = path.strip_prefix(root).unwrap();
                pages.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    pages.sort();
    docs.extend(pages);
    docs
}

/// Runs one document's runnable blocks in a fresh cluster and directory; returns how many ran,
/// or the first failure.
fn run_document(file: &str, blocks: &[Block]) -> Result<usize, String> {
    if !blocks.iter().any(|b| matches!(b.mark, Mark::Runnable)) {
        for block in blocks {
            if let Mark::Skip(reason) = &block.mark {
                println!("{file}:{}: skipped: {reason}", block.line);
            }
        }
        return Ok(0);
    }
    let tmp = tempfile::tempdir().unwrap();
    let env = Env {
        // The default scenario: training-operator running, three 4-GPU nodes; the model
        // gateway the pods reach (`probe`, docs/probe.md) takes the documents' test key.
        cluster: TestCluster::start(Scenario::default().with_gateway_key(README_KEY)),
        bin: shim_dir(tmp.path(), Path::new(env!("CARGO_BIN_EXE_kubectl-tfjob"))),
        home: tmp.path().join("home"),
        work: tmp.path().join("work"),
        logs: tmp.path().join("logs"),
    };
    for d in [&env.home, &env.work, &env.logs] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut ran = 0;
    for (n, block) in blocks.iter().enumerate() {
        match &block.mark {
            Mark::Skip(reason) => println!("{file}:{}: skipped: {reason}", block.line),
            Mark::Runnable => {
                run_block(&env, block, n).map_err(|e| {
                    format!(
                        "{file}:{}: the documented block no longer holds: {e}\nblock:\n{}",
                        block.line, block.text
                    )
                })?;
                println!("{file}:{}: ran", block.line);
                ran += 1;
            }
        }
    }
    Ok(ran)
}

#[test]
fn every_runnable_block_of_every_document_runs_against_the_simulated_cluster() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = documents(root);
    assert!(
        files.iter().any(|f| f.starts_with("docs/")),
        "no page under docs/: {files:?}"
    );
    // Every file is parsed before anything runs, so an unmarked block fails at once.
    let parsed: Vec<(String, Vec<Block>)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(root.join(f)).unwrap();
            (
                f.clone(),
                blocks(f, &text).unwrap_or_else(|e| panic!("{e}")),
            )
        })
        .collect();
    let readme_runnable = parsed
        .iter()
        .filter(|(f, _)| f == "README.md")
        .flat_map(|(_, b)| b)
        .filter(|b| matches!(b.mark, Mark::Runnable))
        .count();
    assert!(readme_runnable > 0, "README.md has no runnable block");
    let results: Vec<(&str, Result<usize, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = parsed
            .iter()
            .map(|(f, b)| (f.as_str(), s.spawn(move || run_document(f, b))))
            .collect();
        handles
            .into_iter()
            .map(|(f, h)| {
                let r = h
                    .join()
                    .unwrap_or_else(|_| Err(format!("{f}: the runner panicked")));
                (f, r)
            })
            .collect()
    });
    let failures: Vec<&String> = results
        .iter()
        .filter_map(|(_, r)| r.as_ref().err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} document(s) failed:\n\n{}",
        failures.len(),
        failures
            .iter()
            .map(|e| e.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    for (file, blocks) in &parsed {
        let runnable = blocks
            .iter()
            .filter(|b| matches!(b.mark, Mark::Runnable))
            .count();
        let ran = results
            .iter()
            .find(|(f, _)| f == file)
            .and_then(|(_, r)| r.as_ref().ok())
            .copied();
        assert_eq!(
            ran,
            Some(runnable),
            "{file}: every runnable block was exercised"
        );
    }
}

/// The anchor GitHub gives a heading: lowercased, spaces to hyphens, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings and its relative links `](target)` with their
/// lines, both outside fenced blocks.
fn anchors_and_links(markdown: &str) -> (Vec<String>, Vec<(usize, String)>) {
    let (mut anchors, mut links) = (vec![], vec![]);
    let mut fenced = false;
    for (n, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            anchors.push(anchor(h.trim_start_matches('#')));
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                links.push((n + 1, target.to_string()));
            }
            rest = &after[end..];
        }
    }
    (anchors, links)
}

#[test]
fn every_relative_link_of_every_document_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = vec![];
    for file in documents(root) {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        let dir = root.join(&file).parent().unwrap().to_path_buf();
        for (line, target) in anchors_and_links(&text).1 {
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if path.is_empty() {
                root.join(&file)
            } else {
                dir.join(path)
            };
            if !linked.exists() {
                broken.push(format!("{file}:{line}: {target}: no such file"));
                continue;
            }
            if !fragment.is_empty() && linked.extension().is_some_and(|e| e == "md") {
                let linked_text = std::fs::read_to_string(&linked).unwrap();
                if !anchors_and_links(&linked_text)
                    .0
                    .iter()
                    .any(|a| a == fragment)
                {
                    broken.push(format!("{file}:{line}: {target}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(
        anchor(" `diagnose`: which layer is at fault"),
        "diagnose-which-layer-is-at-fault"
    );
    assert_eq!(anchor(" get (alias status)"), "get-alias-status");
    let (anchors, links) = anchors_and_links(
        "# A b\n```sh\n# not a heading [x](nowhere.md)\n```\nsee [c](docs/c.md#a-b) and [d](https://x.y)\n",
    );
    assert_eq!(anchors, vec!["a-b"]);
    assert_eq!(links, vec![(5, "docs/c.md#a-b".to_string())]);
}

#[test]
fn markers_are_required_and_parsed() {
    let md = "x\n<!-- runnable -->\n```sh\necho hi\n# => hi\n```\n\n\
              <!-- not-runnable: needs a real cluster -->\n```sh\nkubectl apply\n```\n\
              ```yaml\na: 1\n```\n";
    let b = blocks("x.md", md).unwrap();
    assert_eq!(b.len(), 2);
    assert!(matches!(b[0].mark, Mark::Runnable));
    assert_eq!(expected_lines(&b[0].text), vec!["hi"]);
    assert!(matches!(&b[1].mark, Mark::Skip(r) if r == "needs a real cluster"));
    let err = blocks("docs/x.md", "text\n```sh\necho unmarked\n```\n").unwrap_err();
    assert!(err.contains("docs/x.md:2"), "{err}");
}
