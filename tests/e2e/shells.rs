//! The completion scripts under the real shells (issue 61 item 8): bash, zsh and fish ask the
//! plugin at each <TAB>, so a job's name comes from the cluster and `--context` from the
//! kubeconfig, as for `kubectl tfjob <TAB>`. Each test says so and passes when its shell is not
//! installed (`.ci/run` installs them with the real node's packages).

use std::path::PathBuf;
use std::process::Command;

use tfjob_testcluster::TestCluster;

use crate::submit::{SECRET, submit_args};
use crate::{Cli, cluster, tfjob};

fn has(shell: &str) -> bool {
    Command::new(shell)
        .args(["-c", "exit 0"])
        .status()
        .is_ok_and(|s| s.success())
}

fn script(shell: &str) -> tempfile::NamedTempFile {
    let run = Cli::new(None, &["completion", shell]).run();
    run.expect_code(0);
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), run.stdout).unwrap();
    f
}

/// A cluster holding the article's job, `tf-dist-train`.
fn with_a_job() -> TestCluster {
    let c = cluster(&format!("objects:{SECRET}"));
    tfjob(&c, &submit_args(&[])).exit(0);
    c
}

/// The shell's environment: the plugin on PATH, the cluster's kubeconfig.
fn shell(name: &str, c: &TestCluster) -> Command {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_kubectl-tfjob"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(name);
    cmd.env("PATH", path)
        .env("KUBECONFIG", c.kubeconfig())
        .env("HOME", std::env::temp_dir());
    cmd
}

fn stdout_of(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn bash_completes_subcommands_flags_values_and_job_names() {
    if !has("bash") {
        eprintln!("bash is not installed: skipping the bash completion check");
        return;
    }
    let c = with_a_job();
    let f = script("bash");
    // COMP_WORDS as bash fills them; the function is the one `complete -F` names.
    let reply = |words: &[&str]| -> String {
        let cword = words.len() - 1;
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let prog = format!(
            "source '{}'; complete -p kubectl-tfjob >/dev/null || exit 9; COMP_WORDS=({}); COMP_CWORD={cword}; _kubectl_tfjob; echo \"${{COMPREPLY[*]}}\"",
            f.path().display(),
            quoted.join(" "),
        );
        let mut cmd = shell("bash", &c);
        cmd.args(["-c", &prog]);
        stdout_of(cmd)
    };
    assert_eq!(reply(&["kubectl-tfjob", "to"]), "top");
    assert_eq!(
        reply(&["kubectl-tfjob", "logs", "--cont"]),
        "--container --context"
    );
    assert_eq!(reply(&["kubectl-tfjob", "top", "-o", ""]), "json wide");
    assert_eq!(
        reply(&["kubectl-tfjob", "secret", "create", "--from-s"]),
        "--from-stdin"
    );
    // From the cluster and the kubeconfig: a job's name, a namespace, a context.
    assert_eq!(reply(&["kubectl-tfjob", "wait", ""]), "tf-dist-train");
    assert_eq!(
        reply(&["kubectl-tfjob", "diagnose", "tf-"]),
        "tf-dist-train"
    );
    assert!(
        reply(&["kubectl-tfjob", "get", "-n", "kube-"]).contains("kube-system"),
        "namespaces"
    );
    assert_eq!(reply(&["kubectl-tfjob", "get", "--context", ""]), "test");
}

/// zsh's completion system is interactive: the script is loaded under compinit (it registers
/// itself), then its function runs in real zsh with `_describe` and `_files` standing in for
/// the system's, printing what they were given.
#[test]
fn zsh_registers_and_offers_job_names_and_files() {
    if !has("zsh") {
        eprintln!("zsh is not installed: skipping the zsh completion check");
        return;
    }
    let c = with_a_job();
    let f = script("zsh");
    let mut cmd = shell("zsh", &c);
    cmd.args([
        "-f",
        "-c",
        &format!(
            "autoload -U compinit && compinit -u -D; source '{}'; echo ${{_comps[kubectl-tfjob]}}",
            f.path().display()
        ),
    ]);
    assert_eq!(stdout_of(cmd), "_kubectl-tfjob");
    let offer = |words: &[&str]| -> String {
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let prog = format!(
            "compdef() {{}}; _describe() {{ print -l -- \"${{(@P)4}}\"; }}; _files() {{ echo FILES; }}; source '{}'; words=({}); CURRENT={}; _kubectl-tfjob",
            f.path().display(),
            quoted.join(" "),
            words.len()
        );
        let mut cmd = shell("zsh", &c);
        cmd.args(["-f", "-c", &prog]);
        stdout_of(cmd)
    };
    assert_eq!(offer(&["kubectl-tfjob", "wait", ""]), "tf-dist-train");
    assert_eq!(
        offer(&["kubectl-tfjob", "lo"]),
        "logs:Print the logs of every replica, each line prefixed with its replica"
    );
    assert_eq!(offer(&["kubectl-tfjob", "get", "--context", ""]), "test");
    assert_eq!(offer(&["kubectl-tfjob", "submit", "-f", ""]), "FILES");
}

#[test]
fn fish_offers_job_names_contexts_and_files_where_they_belong() {
    if !has("fish") {
        eprintln!("fish is not installed: skipping the fish completion check");
        return;
    }
    let c = with_a_job();
    let f = script("fish");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.yaml"), "").unwrap();
    let complete = |line: &str| -> String {
        let mut cmd = shell("fish", &c);
        cmd.args([
            "--no-config",
            "-c",
            &format!("source '{}'; complete -C '{line}'", f.path().display()),
        ]);
        stdout_of(cmd)
    };
    assert_eq!(complete("kubectl-tfjob wait "), "tf-dist-train");
    assert_eq!(complete("kubectl-tfjob get --context "), "test");
    let file = format!("{}/", dir.path().display());
    assert_eq!(
        complete(&format!("kubectl-tfjob submit -f {file}")),
        format!("{file}job.yaml")
    );
}
