//! The README is tested: every shell block in README.md carries a marker on the line right
//! before its opening fence, and this test runs each block marked runnable against the
//! project's simulated cluster with the built binary.
//!
//! Markers (HTML comments, invisible on GitHub):
//! - `<!-- runnable -->`: the block runs here, in document order, all blocks in one shell
//!   environment each (`bash -euo pipefail`), against one simulated cluster (so a block may use
//!   what an earlier one created). `kubectl tfjob …` reaches the built binary through a PATH
//!   shim (a `kubectl` stand-in that forwards `tfjob …` and refuses anything else), and
//!   `kubectl-tfjob` is on PATH too. `KUBECONFIG` points at the simulated cluster, `HOME` and
//!   the working directory are temporary, `TAOTOKEN_API_KEY` holds a test key.
//!   Lines `# => TEXT` inside the block are expected output: the block's combined stdout and
//!   stderr must contain TEXT. A command expected to fail is written `cmd || echo "exit $?"`
//!   with `# => exit N` after it. The block fails on any other non-zero exit.
//! - `<!-- not-runnable: REASON -->`: skipped, printing REASON (a real cluster, a terminal,
//!   installs into the user's machine, or cargo itself).
//!
//! A shell block with no marker fails the test, so every block is either run or says why not.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tfjob_testcluster::{Scenario, TestCluster};

const RUNNABLE: &str = "<!-- runnable -->";
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

/// The shell blocks of a Markdown text with their markers; an unmarked one is an error.
fn blocks(markdown: &str) -> Result<Vec<Block>, String> {
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
                "README.md:{}: shell block without a marker; put `{RUNNABLE}` or \
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
        .env("TAOTOKEN_API_KEY", "sk-readme-test-key")
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

#[test]
fn every_runnable_readme_block_runs_against_the_simulated_cluster() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let blocks = blocks(&text).unwrap_or_else(|e| panic!("{e}"));
    let tmp = tempfile::tempdir().unwrap();
    let env = Env {
        // The default scenario: training-operator running, three 4-GPU nodes.
        cluster: TestCluster::start(Scenario::default()),
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
            Mark::Skip(reason) => {
                println!("README.md:{}: skipped: {reason}", block.line);
            }
            Mark::Runnable => {
                if let Err(e) = run_block(&env, block, n) {
                    panic!(
                        "README.md:{}: the documented block no longer holds: {e}\nblock:\n{}",
                        block.line, block.text
                    );
                }
                println!("README.md:{}: ran", block.line);
                ran += 1;
            }
        }
    }
    let runnable = blocks
        .iter()
        .filter(|b| matches!(b.mark, Mark::Runnable))
        .count();
    assert!(runnable > 0, "README.md has no runnable block");
    assert_eq!(ran, runnable, "every runnable block was exercised");
}

#[test]
fn markers_are_required_and_parsed() {
    let md = "x\n<!-- runnable -->\n```sh\necho hi\n# => hi\n```\n\n\
              <!-- not-runnable: needs a real cluster -->\n```sh\nkubectl apply\n```\n\
              ```yaml\na: 1\n```\n";
    let b = blocks(md).unwrap();
    assert_eq!(b.len(), 2);
    assert!(matches!(b[0].mark, Mark::Runnable));
    assert_eq!(expected_lines(&b[0].text), vec!["hi"]);
    assert!(matches!(&b[1].mark, Mark::Skip(r) if r == "needs a real cluster"));
    let err = blocks("text\n```sh\necho unmarked\n```\n").unwrap_err();
    assert!(err.contains("README.md:2"), "{err}");
}
