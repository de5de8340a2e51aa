//! The completion scripts under the real shells: bash completes a subcommand's flags and values
//! through the generated function; zsh loads the script and every function it refers to exists.
//! Each test says so and passes when its shell is not installed.

use std::process::Command;

use crate::Cli;

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

#[test]
fn bash_completes_subcommands_their_flags_and_values() {
    if !has("bash") {
        eprintln!("bash is not installed: skipping the bash completion check");
        return;
    }
    let f = script("bash");
    // COMP_WORDS as bash fills them; the function gets (command, current word, previous word).
    let reply = |words: &[&str]| -> String {
        let cword = words.len() - 1;
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let prog = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; _kubectl__tfjob kubectl-tfjob '{}' '{}'; echo \"${{COMPREPLY[*]}}\"",
            f.path().display(),
            quoted.join(" "),
            words[cword],
            words[cword - 1],
        );
        let out = Command::new("bash").args(["-c", &prog]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(reply(&["kubectl-tfjob", "to"]), "top");
    // In any order: bash sorts the candidates it shows (and clap lists a deferred subcommand's
    // own flags after the global ones).
    let mut both: Vec<String> = reply(&["kubectl-tfjob", "logs", "--cont"])
        .split(' ')
        .map(String::from)
        .collect();
    both.sort();
    assert_eq!(both, ["--container", "--context"]);
    assert_eq!(reply(&["kubectl-tfjob", "top", "-o", ""]), "json wide");
    assert_eq!(
        reply(&["kubectl-tfjob", "secret", "create", "--from-s"]),
        "--from-stdin"
    );
}

#[test]
fn zsh_loads_the_script_and_every_function_it_names_exists() {
    if !has("zsh") {
        eprintln!("zsh is not installed: skipping the zsh completion check");
        return;
    }
    let f = script("zsh");
    let text = std::fs::read_to_string(f.path()).unwrap();
    // `:_kubectl-tfjob__subcmd__secret_commands` and the like: helpers the script calls.
    let mut names: Vec<&str> = text
        .split(":_kubectl-tfjob")
        .skip(1)
        .map(|rest| {
            rest.split(|c: char| c == '"' || c.is_whitespace())
                .next()
                .unwrap_or("")
        })
        .collect();
    names.sort();
    names.dedup();
    assert!(!names.is_empty());
    let checks: Vec<String> = names
        .iter()
        .map(|n| format!("(( $+functions[_kubectl-tfjob{n}] )) || echo missing _kubectl-tfjob{n};"))
        .collect();
    let prog = format!(
        "autoload -U compinit && compinit -u -D; source '{}'; (( $+functions[_kubectl-tfjob] )) || echo missing main; {}",
        f.path().display(),
        checks.join(" ")
    );
    let out = Command::new("zsh")
        .args(["-f", "-c", &prog])
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("missing"), "{stdout}");
}
