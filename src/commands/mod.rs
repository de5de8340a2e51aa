//! The command line, and the only place clap is used: the clap tree ([`Cli`], [`Command`], the
//! help), the global flags (`global.rs`: [`Global`], their typed order, `options`), the runtime
//! and interrupt glue (`runtime.rs`: [`block_on`]), one file per subcommand with its clap `Args`
//! and an `exec` that turns them into the core's plain option types, and the dispatch
//! ([`exec`]). Everything below `commands/` is clap-free.
//!
//! Flags that kubectl users already know (`--kubeconfig`, `--context`, `-n`, `--request-timeout`,
//! `-o`, `--dry-run`, `-f`) keep kubectl's names and meanings; values flags follow Helm's.
//!
//! The command context: [`exec`] turns the global flags into the one
//! [`Context`](crate::ops::Context) (`Global::context`: the connection flags as plain options, no
//! I/O), and hands it to the subcommand, which adds its deadline when it has a `--timeout`
//! (`Context::with_deadline`) and runs its core through [`block_on`], which guards the whole
//! command with that deadline. The core builds the client from it once, on first use; offline
//! commands (`render`, `validate`, `templates`) never connect, and `completion`'s cluster
//! lookups use a context of their own, bounded to two seconds.
//!
//! A new command: add `commands/<cmd>.rs` with `pub struct <Cmd>Args` (clap `Args`) and
//! `pub fn exec(ctx: Context, args: <Cmd>Args, out: &mut Output) -> Result<()>`, a variant in
//! [`Command`] and a line in [`exec`]; its core is `ops::<cmd>::run(&ctx, opts, out)`.

pub mod check;
pub mod completion;
pub mod delete;
pub mod diagnose;
pub mod export;
pub mod get;
mod global;
pub mod list;
pub mod logs;
pub mod mcp;
pub mod probe;
pub mod render;
pub mod restart;
mod runtime;
pub mod secret;
pub mod submit;
pub mod suspend;
pub mod templates;
pub mod top;
pub mod validate;
pub mod version;
pub mod wait;

use std::time::Duration;

use clap::builder::PossibleValue;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

// Every duration flag reads Go's syntax through the one `duration` module.
use crate::error::{EXIT_CODES_HELP, Result};
pub use crate::model::duration::{
    parse as parse_duration, parse_request_timeout, parse_signed as parse_signed_duration,
};
use crate::ops::DryRun;
use crate::ops::suspend::SuspendAction;
use crate::ops::wait::WaitFor;
use crate::output::{ManifestFormat, Output, ReportFormat};

pub use global::{Global, options_text};
use global::{connection_order, global_ids};
pub use runtime::{block_on, new_runtime};

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-tfjob",
    bin_name = "kubectl tfjob",
    version,
    about = "Render, validate, submit and follow Kubeflow TFJobs, and say why one does not run.",
    long_about = "Render, validate, submit and follow Kubeflow TFJobs (kubeflow.org/v1), and say why one does not run.\n\n\
Jobs are rendered from a built-in or user template plus values, get the model-gateway credentials \
as env vars backed by a Secret, and are validated offline before anything is sent to the cluster.",
    after_help = EXIT_CODES_HELP,
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,

    #[command(subcommand)]
    pub command: Command,
}

const OPTIONS_EXAMPLES: &str = "\
Examples:
  # Every command takes these, before or after its name
  kubectl tfjob options
  kubectl tfjob list -n team-a";

impl Cli {
    /// Parses the process's arguments (exits on error or `--help`, as `Cli::parse` does),
    /// keeping the order of the connection flags.
    pub fn parse_with_order() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        Cli::try_parse_with_order(&args).unwrap_or_else(|e| {
            if e.kind() == clap::error::ErrorKind::DisplayHelp
                && let Some(text) = help_text(&args)
            {
                print!("{text}");
                std::process::exit(0);
            }
            e.exit()
        })
    }

    /// [`Cli::parse_with_order`] for any argument list (tests).
    pub fn try_parse_with_order<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        // Matched in place: a clone of the whole command tree doubled clap's start-up work.
        let mut command = Cli::command();
        let matches = command.try_get_matches_from_mut(&args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        cli.global.order = connection_order(&command, &matches, &args);
        Ok(cli)
    }
}

/// kubectl's footer under every command's help (cobra's usage template in kubectl's
/// pkg/cmd/cmd.go / templates): the global flags live in `kubectl options`.
pub const OPTIONS_FOOTER: &str = "Use \"kubectl tfjob options\" for a list of global command-line options (applies to all commands).";

/// The subcommand path `args` names (`submit`, `secret create`, or after `help`), and whether the
/// long help was asked for (`--help` or `help`, as clap decides).
fn help_path(cmd: &clap::Command, args: &[std::ffi::OsString]) -> (Vec<String>, bool) {
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|w| w.to_string_lossy().into_owned())
        .take_while(|w| w != "--")
        .collect();
    let mut long = words.iter().any(|w| w == "--help");
    let mut path = Vec::new();
    let mut at = cmd.clone();
    for w in &words {
        // clap's own `help` subcommand (no command of ours is named so).
        if w == "help" {
            long = true;
            continue;
        }
        if let Some(sub) = at.find_subcommand(w) {
            path.push(sub.get_name().to_string());
            at = sub.clone();
        }
    }
    (path, long)
}

/// The help of the command `args` asks about, with the global flags left out and kubectl's
/// pointer to `options` at the end. `None` when the path cannot be followed (clap's own help
/// is printed then).
pub fn help_text(args: &[std::ffi::OsString]) -> Option<String> {
    let mut cmd = Cli::command();
    cmd.build();
    let (path, long) = help_path(&cmd, args);
    let ids = global_ids();
    let mut at = &mut cmd;
    for name in &path {
        at = at.find_subcommand_mut(name)?;
    }
    let mut sub = at.clone();
    for id in &ids {
        if sub.get_arguments().any(|a| a.get_id() == id) {
            sub = sub.mut_arg(id, |a| a.hide(true));
        }
    }
    let help = if long {
        sub.render_long_help()
    } else {
        sub.render_help()
    };
    let color =
        std::io::IsTerminal::is_terminal(&std::io::stdout()) && crate::output::use_color(true);
    let text = if color {
        help.ansi().to_string()
    } else {
        help.to_string()
    };
    Some(format!("{}\n\n{OPTIONS_FOOTER}\n", text.trim_end()))
}

/// `defer`: a subcommand's arguments are built only when the command line reaches it (clap's
/// `Command::defer`); building all eighteen for every run was most of clap's start-up cost.
/// Walkers of the whole tree (help, completion) call `build()` first, which runs them. What acts
/// on a subcommand's arguments (groups, `mut_args`) sits on its `Args` struct, which runs after
/// them; on a variant here it would run before they exist.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Render a TFJob, validate it, check the cluster is ready, and create it.
    #[command(after_help = submit::SUBMIT_EXAMPLES)]
    Submit(submit::SubmitArgs),

    /// Will it run here? Readiness and a placement/quota pre-flight; writes nothing.
    #[command(long_about = check::CHECK_LONG_ABOUT, after_help = check::CHECK_EXAMPLES)]
    Check(check::CheckArgs),

    /// Render a TFJob from a template and values, validate it offline, and print it as YAML.
    #[command(after_help = render::RENDER_EXAMPLES)]
    Render(render::RenderArgs),

    /// Export the job render makes as another kind (a kubernetes-sigs JobSet), with what it cannot carry on stderr.
    #[command(after_help = export::EXPORT_EXAMPLES)]
    Export(export::ExportArgs),

    /// Validate TFJob manifests offline (schema, operator webhook rules, and lint checks);
    /// `--dry-run=server` asks the cluster too.
    #[command(after_help = validate::VALIDATE_EXAMPLES)]
    Validate(validate::ValidateArgs),

    /// List the built-in templates, or print one.
    Templates(templates::TemplatesArgs),

    /// Wait for a TFJob to reach a condition, showing per-replica progress.
    #[command(after_help = wait::WAIT_EXAMPLES)]
    Wait(wait::WaitArgs),

    /// Check a TFJob layer by layer (CRD, operator, pods, scheduling, runtime) and say what is wrong.
    #[command(after_help = diagnose::DIAGNOSE_EXAMPLES)]
    Diagnose(diagnose::DiagnoseArgs),

    /// Look inside the running pods: TF_CONFIG, the peers and the gateway as the training process sees them.
    #[command(after_help = probe::PROBE_EXAMPLES)]
    Probe(probe::ProbeArgs),

    /// Print the logs of every replica, each line prefixed with its replica.
    #[command(after_help = logs::LOGS_EXAMPLES)]
    Logs(logs::LogsArgs),

    /// List TFJobs: state, age, duration, replicas running/desired, GPUs.
    #[command(visible_alias = "ls", after_help = list::LIST_EXAMPLES)]
    List(list::ListArgs),

    /// Show one TFJob in full: conditions, replica pods, services, events, gateway env, TF_CONFIG.
    #[command(visible_alias = "status", after_help = get::GET_EXAMPLES)]
    Get(get::GetArgs),

    /// Show what jobs use, per replica: node, GPUs, CPU and memory requested, limited and used.
    #[command(after_help = top::TOP_EXAMPLES)]
    Top(top::TopArgs),

    /// Delete TFJobs and wait until they and their pods are gone.
    #[command(after_help = delete::DELETE_EXAMPLES)]
    Delete(delete::DeleteArgs),

    /// Suspend a TFJob: the operator deletes its pods until it is resumed.
    #[command(after_help = suspend::SUSPEND_EXAMPLES)]
    Suspend(suspend::SuspendArgs),

    /// Resume a suspended TFJob: the operator creates its pods again.
    #[command(after_help = suspend::SUSPEND_EXAMPLES)]
    Resume(suspend::SuspendArgs),

    /// Make a TFJob's pods again from scratch (suspend, wait for them to go, resume), e.g. to pick up a rotated key.
    #[command(after_help = restart::RESTART_EXAMPLES)]
    Restart(restart::RestartArgs),

    /// Store or check the model-gateway API key Secret.
    Secret(secret::SecretArgs),

    /// Print the plugin's version, the API server's and the training-operator's.
    #[command(after_help = version::VERSION_EXAMPLES)]
    Version(version::VersionArgs),

    /// Print a shell completion script.
    Completion(completion::CompletionArgs),

    /// Serve these verbs to AI agents over the Model Context Protocol (stdio), with the same answers and redaction.
    #[command(after_help = mcp::MCP_EXAMPLES)]
    Mcp(mcp::McpArgs),

    /// Print the flags every command takes (kubeconfig, context, namespace, impersonation, TLS, -v).
    #[command(after_help = OPTIONS_EXAMPLES)]
    Options,

    /// Completion protocol for `kubectl tfjob <TAB>` (called by the kubectl_complete-tfjob script).
    #[command(name = "__complete", hide = true)]
    Complete {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        words: Vec<String>,
    },

    /// Runs a kubeconfig's exec credential plugin under a timeout (kube calls this in its
    /// place; see cluster::exec_guard).
    #[command(name = "__exec-credential", hide = true)]
    ExecCredential {
        #[arg(long)]
        timeout_ms: u64,
        /// The plugin and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 1..)]
        plugin: Vec<String>,
    },
}

/// Runs one parsed command line, writing through `out`. The flags become the one command
/// context here, before any I/O; each command adds its deadline and hands it to its core.
pub fn exec(cli: Cli, out: &mut Output) -> Result<()> {
    let ctx = cli.global.context();
    let verbose = cli.global.verbose > 0;
    match cli.command {
        Command::Submit(args) => submit::exec(ctx, args, out),
        Command::Check(args) => check::exec(ctx, args, out),
        Command::Render(args) => render::exec(ctx, args, out),
        Command::Export(args) => export::exec(ctx, args, out),
        Command::Validate(args) => validate::exec(ctx, args, out),
        Command::Templates(args) => templates::exec(args, out),
        Command::Wait(args) => wait::exec(ctx, args, out),
        Command::Diagnose(args) => diagnose::exec(ctx, args, out),
        Command::Probe(args) => probe::exec(ctx, args, verbose, out),
        Command::Logs(args) => logs::exec(ctx, args, out),
        Command::List(args) => list::exec(ctx, args, out),
        Command::Get(args) => get::exec(ctx, args, out),
        Command::Top(args) => top::exec(ctx, args, out),
        Command::Delete(args) => delete::exec(ctx, args, out),
        Command::Suspend(args) => suspend::exec(ctx, args, SuspendAction::Suspend, out),
        Command::Resume(args) => suspend::exec(ctx, args, SuspendAction::Resume, out),
        Command::Restart(args) => restart::exec(ctx, args, out),
        Command::Secret(args) => secret::exec(ctx, args, out),
        Command::Version(args) => version::exec(ctx, args, out),
        Command::Completion(args) => completion::exec(args, out),
        Command::Options => out.data(&options_text()),
        // Served by the library's `run` (the adapter sits above the commands); a command run inside
        // the server never starts another one.
        Command::Mcp(_) => Err(crate::error::Error::Usage(
            "`mcp` cannot be run from inside a command or an MCP call".into(),
        )),
        Command::Complete { words } => completion::exec_complete(&ctx, &words, out),
        Command::ExecCredential { timeout_ms, plugin } => crate::cluster::exec_guard::run(
            Duration::from_millis(timeout_ms),
            &plugin[0],
            &plugin[1..],
        ),
    }
}

// The core's plain enums, offered to clap here so the core never sees clap. Each variant's help
// is what `--help` shows next to the value.
macro_rules! value_enum {
    ($ty:ty { $($variant:path => $name:literal $(: $help:literal)?),* $(,)? }) => {
        impl ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &[$($variant),*]
            }
            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(match self {
                    $($variant => PossibleValue::new($name)$(.help($help))?,)*
                })
            }
        }
    };
}

// Shared by `submit` (a TFJob) and `secret create` (a Secret): the words fit both.
value_enum!(DryRun {
    DryRun::None => "none": "Really write it to the cluster.",
    DryRun::Client => "client": "Check offline and print what would be written; nothing is sent.",
    DryRun::Server => "server": "Run every check and a server-side dry run; nothing is stored.",
});

value_enum!(ManifestFormat {
    ManifestFormat::Yaml => "yaml",
    ManifestFormat::Json => "json",
    ManifestFormat::Name => "name",
});

value_enum!(crate::ops::diagnose::DiagnoseFormat {
    crate::ops::diagnose::DiagnoseFormat::Text => "text",
    crate::ops::diagnose::DiagnoseFormat::Json => "json",
    crate::ops::diagnose::DiagnoseFormat::Yaml => "yaml",
});

value_enum!(ReportFormat {
    ReportFormat::Text => "text",
    ReportFormat::Json => "json",
});

value_enum!(WaitFor {
    WaitFor::Created => "created": "The operator has seen the job (Created condition).",
    WaitFor::Running => "running": "The operator's Running condition: the chief, or any one worker, runs; other replicas may be Pending.",
    WaitFor::AllRunning => "all-running": "Every replica pod of every role runs, for --settle without a restart (default).",
    WaitFor::Training => "training": "As all-running, and every worker (or chief) has logged a progress line: it trains.",
    WaitFor::Succeeded => "succeeded": "The Succeeded condition.",
    WaitFor::Finished => "finished": "Succeeded (exit 0) or Failed (exit 4).",
    WaitFor::Deleted => "delete": "The TFJob is gone (kubectl's --for=delete).",
});

/// Prints an error the way kubectl does (`error: …`) plus the next step, and returns its exit
/// code. A closed stdout ends quietly.
pub fn report_error(
    err: &crate::error::Error,
    stderr: &mut dyn std::io::Write,
) -> crate::error::ExitCode {
    if !err.is_quiet() {
        // Nothing sensible is left to do if stderr is gone too.
        // The message may carry the cluster's words (a log line, an event): escaped for the
        // terminal here, the one place every error is printed.
        let _ = writeln!(
            stderr,
            "error: {}",
            crate::print::terminal::escape(&err.to_string())
        );
        if let Some(hint) = err.hint() {
            let _ = writeln!(stderr, "\n{}", crate::print::terminal::escape(hint));
        }
    }
    err.exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ConnFlag;
    use clap::CommandFactory;

    /// With `defer`, a subcommand's arguments are added after its variant's `about`: an `about`
    /// from a flattened struct's doc comment would then replace it. Each help must keep its own.
    #[test]
    fn deferred_arguments_keep_every_subcommands_about() {
        let declared = Cli::command();
        let mut built = Cli::command();
        built.build();
        for sub in declared.get_subcommands() {
            let after = built.find_subcommand(sub.get_name()).unwrap();
            assert!(
                after.get_arguments().count() > 0,
                "{}: arguments not built",
                sub.get_name()
            );
            let text = |s: Option<&clap::builder::StyledStr>| s.map(|s| s.to_string());
            assert_eq!(
                text(sub.get_about()),
                text(after.get_about()),
                "{}",
                sub.get_name()
            );
            assert_eq!(
                text(sub.get_long_about()),
                text(after.get_long_about()),
                "{}",
                sub.get_name()
            );
            if sub.get_after_help().is_some() {
                assert_eq!(
                    text(sub.get_after_help()),
                    text(after.get_after_help()),
                    "{}",
                    sub.get_name()
                );
            }
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_become_connection_options() {
        let cli = Cli::try_parse_from([
            "kubectl-tfjob",
            "diagnose",
            "x",
            "-n",
            "team",
            "--context",
            "prod",
            "--request-timeout",
            "5s",
        ])
        .unwrap();
        let c = cli.global.connection();
        assert_eq!(c.namespace.as_deref(), Some("team"));
        assert_eq!(c.context.as_deref(), Some("prod"));
        assert_eq!(c.request_timeout, Some(Duration::from_secs(5)));
    }

    #[test]
    fn connection_flags_keep_the_order_they_were_typed_in() {
        // Before and after the subcommand, `=` and separate-value forms, a bool flag.
        let cli = Cli::try_parse_with_order([
            "kubectl-tfjob",
            "--context=gpu",
            "wait",
            "x",
            "--kubeconfig",
            "/k",
            "--insecure-skip-tls-verify",
            "-n",
            "team",
            "--token",
            "t",
        ])
        .unwrap();
        let c = cli.global.connection();
        assert_eq!(
            c.order,
            [
                ConnFlag::Context,
                ConnFlag::Kubeconfig,
                ConnFlag::InsecureSkipTlsVerify,
                ConnFlag::Namespace,
                ConnFlag::Token
            ]
        );
        assert_eq!(
            c.as_args().join(" "),
            "--context gpu --kubeconfig /k --insecure-skip-tls-verify -n team"
        );
        let cli = Cli::try_parse_with_order([
            "kubectl-tfjob",
            "-n",
            "a",
            "diagnose",
            "x",
            "--kubeconfig",
            "/k",
            "--context",
            "c",
        ])
        .unwrap();
        assert_eq!(
            cli.global.connection().as_args().join(" "),
            "-n a --kubeconfig /k --context c"
        );
        // Two subcommand levels, short clusters, and a `--` after which nothing counts.
        let cli = Cli::try_parse_with_order([
            "kubectl-tfjob",
            "-vnml",
            "secret",
            "--context",
            "c",
            "check",
            "--kubeconfig=/k",
        ])
        .unwrap();
        assert_eq!(
            cli.global.connection().as_args().join(" "),
            "-n ml --context c --kubeconfig /k"
        );
        let cli = Cli::try_parse_with_order([
            "kubectl-tfjob",
            "submit",
            "--image",
            "i",
            "--kubeconfig",
            "/k",
            "--context",
            "c",
            "--",
            "python",
            "--context",
            "x",
            "--kubeconfig",
        ])
        .unwrap();
        assert_eq!(cli.global.order, [ConnFlag::Kubeconfig, ConnFlag::Context]);
    }

    #[test]
    fn shared_help_texts_fit_every_command_that_shows_them() {
        let mut cmd = Cli::command();
        // As help_text does: the deferred subcommands are built first.
        cmd.build();
        for path in [&["secret", "create"][..], &["submit"][..]] {
            let mut sub = &mut cmd;
            for name in path {
                sub = sub.find_subcommand_mut(name).unwrap();
            }
            let help = sub.render_long_help().to_string();
            assert!(
                help.contains("Really write it to the cluster"),
                "{path:?}: {help}"
            );
            if path[0] == "secret" {
                assert!(!help.to_lowercase().contains(" job"), "{path:?}: {help}");
            }
        }
    }

    #[test]
    fn submit_wait_flags_need_wait() {
        let submit = |extra: &[&str]| {
            let mut args = vec!["kubectl-tfjob", "submit", "--name", "x", "--image", "i"];
            args.extend_from_slice(extra);
            Cli::try_parse_from(args)
        };
        for flags in [
            &["--for", "succeeded"][..],
            &["--pending-timeout", "1m"],
            &["--image-pull-grace", "1m"],
            &["--timeout", "1m"],
        ] {
            let err = submit(flags).expect_err(&format!("{flags:?} without --wait"));
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::MissingRequiredArgument,
                "{flags:?}"
            );
            assert!(err.to_string().contains("--wait"), "{err}");
            assert_eq!(err.exit_code(), 2);
            let mut with_wait = flags.to_vec();
            with_wait.push("--wait");
            submit(&with_wait).unwrap_or_else(|e| panic!("{with_wait:?}: {e}"));
        }
        // --timeout also bounds the deletion of --replace.
        submit(&["--timeout", "1m", "--replace"]).unwrap();
        // The defaults alone are not "given".
        submit(&[]).unwrap();
    }

    #[test]
    fn durations_follow_go_syntax() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        // kubectl's duration flags refuse a bare number (pflag DurationVar, Go ParseDuration),
        // except 0; --request-timeout takes bare seconds (client-go's ParseTimeout).
        let e = parse_duration("2").unwrap_err();
        assert!(e.contains("missing unit") && e.contains("2s"), "{e}");
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(
            parse_request_timeout("30").unwrap(),
            Duration::from_secs(30)
        );
        assert!(parse_signed_duration("-2").is_err());
        assert!(parse_duration("10x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(
            parse_signed_duration("-1s").unwrap(),
            Duration::from_secs(7 * 24 * 3600)
        );
    }
}
