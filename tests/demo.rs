//! The one-command demo (`cargo run --release -p tfjob-testcluster -- demo`) on the debug build:
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
