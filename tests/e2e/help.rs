//! Help as kubectl's reads: each command's own flags and examples, the global flags left to
//! `kubectl tfjob options` (one pointer line, kubectl's wording), which prints them as
//! `kubectl options` does.

use crate::Cli;

const COMMANDS: &[&str] = &[
    "submit",
    "check",
    "render",
    "validate",
    "templates",
    "templates list",
    "templates show",
    "wait",
    "diagnose",
    "logs",
    "list",
    "get",
    "top",
    "delete",
    "suspend",
    "resume",
    "restart",
    "secret",
    "secret create",
    "secret check",
    "completion",
    "version",
    "options",
];

const FOOTER: &str = "Use \"kubectl tfjob options\" for a list of global command-line options (applies to all commands).";

#[test]
fn every_commands_help_has_examples_and_points_to_options_instead_of_the_global_flags() {
    for c in COMMANDS {
        let words: Vec<&str> = c.split(' ').collect();
        for flag in ["--help", "-h"] {
            let mut args = words.clone();
            args.push(flag);
            let run = Cli::new(None, &args).run();
            run.expect_code(0);
            let out = &run.stdout;
            assert!(
                out.contains("\nExamples:\n"),
                "{c} {flag}: no examples\n{out}"
            );
            assert!(
                out.ends_with(&format!("\n\n{FOOTER}\n")),
                "{c} {flag}:\n{out}"
            );
            for global in [
                "--kubeconfig",
                "--context",
                "--namespace",
                "--as-group",
                "--verbose",
                "--request-timeout",
            ] {
                assert!(!out.contains(global), "{c} {flag} lists {global}:\n{out}");
            }
        }
    }
    // `help X Y` is the same text as `X Y --help`.
    let a = Cli::new(None, &["help", "secret", "create"]).run();
    let b = Cli::new(None, &["secret", "create", "--help"]).run();
    assert_eq!(a.stdout, b.stdout);
    // The command's own flags stay, globals given on the line do not bring theirs back.
    let run = Cli::new(None, &["-n", "x", "logs", "--help"]).run();
    assert!(run.stdout.contains("--container"), "{}", run.stdout);
    assert!(!run.stdout.contains("--namespace"), "{}", run.stdout);
}

#[test]
fn options_prints_the_global_flags_as_kubectl_options_does() {
    let run = Cli::new(None, &["options"]).run();
    run.expect_code(0);
    let out = &run.stdout;
    assert!(
        out.starts_with("The following options can be passed to any command:\n\n"),
        "{out}"
    );
    // pflag's FlagUsages: name, default, then the help on a tab.
    for entry in [
        "    --as-group=[]:\n\tGroup to impersonate (repeatable)\n\n",
        "    --insecure-skip-tls-verify=false:\n\t",
        "    --kubeconfig='':\n\tPath to the kubeconfig file to use",
        "    -n, --namespace='':\n\t",
        "    -s, --server='':\n\t",
        "    -v, --verbose=0:\n\t",
    ] {
        assert!(out.contains(entry), "missing {entry:?} in\n{out}");
    }
    // Sorted by long name, as kubectl sorts them; the hidden test-only flag is not listed.
    let names: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("    "))
        .map(|l| {
            l.split("--")
                .nth(1)
                .unwrap_or("")
                .split('=')
                .next()
                .unwrap_or("")
        })
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(!out.contains("retry-deadline"));
    assert_eq!(names.len(), 17, "{names:?}");
}

/// The hint check every run goes through (issue 61 item 2) finds the quoted commands and
/// refuses one that does not parse: a verb without the job it needs, an unknown flag.
#[test]
fn the_hint_check_catches_a_hint_that_cannot_be_pasted() {
    let said = "error: x\nhint: `kubectl tfjob logs big -n 'team a' -f` waits; or `kubectl tfjob diagnose big`.";
    assert_eq!(
        crate::hints(said),
        [
            "kubectl tfjob logs big -n 'team a' -f",
            "kubectl tfjob diagnose big"
        ]
    );
    for good in crate::hints(said) {
        crate::parse_hint(&good).unwrap();
    }
    for bad in [
        "kubectl tfjob restart",
        "kubectl tfjob logs big --no-such-flag",
        "kubectl tfjob logs 'big",
    ] {
        assert!(crate::parse_hint(bad).is_err(), "{bad}");
    }
    // A command run in a namespace suggests commands in it.
    assert!(!crate::carries_namespace(
        "kubectl tfjob probe big -o wide",
        "team"
    ));
    assert!(crate::carries_namespace(
        "kubectl tfjob probe big -n team -o wide",
        "team"
    ));
    assert!(crate::carries_namespace(
        "kubectl tfjob list --namespace=team",
        "team"
    ));
    assert!(crate::carries_namespace("kubectl tfjob list -A", "team"));
    assert!(crate::carries_namespace("kubectl tfjob version", "team"));
}
