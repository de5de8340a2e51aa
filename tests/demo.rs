//! The one-command demo (`cargo run --release --bin tfjob-testcluster -- demo`) on the debug build:
//! every step of the article's story must hold (each asserts its exit code and key lines), and
//! the cluster must leave nothing behind.

use std::path::Path;

use tfjob_testcluster::demo;

#[test]
fn demo_tells_the_whole_story_and_leaves_nothing_behind() {
    let plugin = Path::new(env!("CARGO_BIN_EXE_kubectl-tfjob"));
    let mut out = Vec::new();
    let result = demo::run(plugin, &mut out);
    let transcript = String::from_utf8_lossy(&out).into_owned();
    println!("{transcript}");
    let cluster = result.unwrap_or_else(|e| panic!("{e}\ntranscript:\n{transcript}"));
    let dir = cluster.kubeconfig().parent().unwrap().to_path_buf();
    assert!(dir.exists());
    drop(cluster);
    assert!(!dir.exists(), "{} left behind", dir.display());

    // Every command step was printed as typed and its exit code checked.
    let commands = demo::steps().iter().filter(|s| s.has_command()).count();
    assert_eq!(
        transcript.matches("\n$ kubectl tfjob ").count() + transcript.matches("\n$ echo ").count(),
        commands
    );
    assert_eq!(transcript.matches("\n[exit ").count(), commands);
    // The demo key went through stdin only; it appears in the typed pipeline and nowhere else.
    assert_eq!(
        transcript.matches(demo::DEMO_KEY).count(),
        1,
        "{transcript}"
    );
}

/// Issue 48 item 10: `demo --keep` stopped by SIGTERM (a supervisor, `timeout`) removes its
/// temporary folder as Ctrl-C does. Runs the workspace's `tfjob-testcluster` binary.
#[test]
fn demo_keep_stopped_by_sigterm_leaves_nothing_behind() {
    use std::io::{BufRead, BufReader};
    let plugin = Path::new(env!("CARGO_BIN_EXE_kubectl-tfjob"));
    let bin = plugin.with_file_name("tfjob-testcluster");
    if !bin.exists() {
        println!(
            "skipped: {} is not built (cargo test --workspace builds it)",
            bin.display()
        );
        return;
    }
    let mut child = std::process::Command::new(&bin)
        .args(["demo", "--keep"])
        .env("KUBECTL_TFJOB", plugin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut kubeconfig = None;
    for line in out.by_ref().map_while(Result::ok) {
        if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(std::path::PathBuf::from(path.trim()));
            break;
        }
    }
    // The rest is read to its end, so the demo's last line meets an open pipe.
    let rest = std::thread::spawn(move || out.map_while(Result::ok).collect::<Vec<_>>());
    let kubeconfig = kubeconfig.expect("demo --keep printed its KUBECONFIG");
    let dir = kubeconfig.parent().unwrap().to_path_buf();
    assert!(dir.exists());
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!dir.exists(), "{} left behind", dir.display());
    let rest = rest.join().unwrap();
    assert!(
        rest.iter()
            .any(|l| l.contains("its temporary directory is gone")),
        "{rest:?}"
    );
}
