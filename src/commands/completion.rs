//! Shell completion: scripts for the binary itself (`completion bash|zsh|fish|powershell`), and
//! the protocol kubectl ≥ 1.26 speaks to plugins so that `kubectl tfjob <TAB>` completes.
//!
//! kubectl runs an executable named `kubectl_complete-tfjob` with the words typed after
//! `kubectl tfjob` (the last one being the word under completion) and reads Cobra's
//! `__complete` format: one candidate per line (`value<TAB>description`), then `:<directive>`.
//! The shipped `kubectl_complete-tfjob` script forwards to the hidden `__complete` subcommand.

use clap::{Arg, Args, Command};

use super::{Cli, block_on};
use crate::cluster::ConnectionOptions;
use crate::cluster::budget::Deadline;
use crate::error::Result;
use crate::ops::Context;
use crate::output::{Buffer, Output};

#[derive(Debug, Clone, Args)]
#[command(after_help = COMPLETION_HELP)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

const COMPLETION_HELP: &str = "\
Examples:
  # For `kubectl-tfjob <TAB>` in this shell
  source <(kubectl-tfjob completion bash)
  source <(kubectl-tfjob completion zsh)      # after compinit
  kubectl-tfjob completion fish | source

bash, zsh and fish ask the plugin at each <TAB>: job names and namespaces come from the cluster
(the namespace, context and kubeconfig given on the line), context names from the kubeconfig.
elvish and powershell get a static script (subcommands, flags and fixed values).

For `kubectl tfjob <TAB>` (kubectl 1.26 or newer): put the kubectl_complete-tfjob script from the
release (or the repository; krew installs it) on your PATH next to kubectl-tfjob.";

/// The scripts that ask `__complete` at each <TAB>, as kubectl's own (Cobra's) scripts do.
const BASH: &str = include_str!("completion/bash");
const ZSH: &str = include_str!("completion/zsh");
const FISH: &str = include_str!("completion/fish");

/// `completion SHELL`: for bash, zsh and fish a script over the one completion engine
/// ([`exec_complete`]); for the others the static script clap_complete generates.
pub fn exec(args: CompletionArgs, out: &mut Output) -> Result<()> {
    use clap_complete::Shell;
    match args.shell {
        Shell::Bash => return out.data(BASH),
        Shell::Zsh => return out.data(ZSH),
        Shell::Fish => return out.data(FISH),
        _ => {}
    }
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut script = Buffer::default();
    clap_complete::generate(args.shell, &mut cmd, "kubectl-tfjob", &mut script);
    out.data(&script.text())
}

/// Cobra's ShellCompDirective values that we use.
pub const DIRECTIVE_DEFAULT: u32 = 0;
pub const DIRECTIVE_NO_FILE_COMP: u32 = 4;

/// What to offer for the word under the cursor.
#[derive(Debug, PartialEq, Eq)]
pub struct Completions {
    pub candidates: Vec<(String, String)>,
    pub directive: u32,
    /// The subcommand path reached and the positional being completed, when the answer could
    /// come from the cluster (e.g. TFJob names for `wait`).
    pub wants_job_name: bool,
    /// The value of `-n` (namespaces, from the cluster) or `--context`/`--cluster`/`--user`
    /// (names in the kubeconfig): which flag, by its long name.
    pub wants_names_of: Option<&'static str>,
    /// The TFJob named on the line (`logs JOB -c <TAB>`: its pods' containers).
    pub job: Option<String>,
}

impl Completions {
    /// Cobra's wire format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (value, help) in &self.candidates {
            if help.is_empty() {
                out.push_str(&format!("{value}\n"));
            } else {
                out.push_str(&format!("{value}\t{help}\n"));
            }
        }
        out.push_str(&format!(":{}\n", self.directive));
        out
    }
}

fn first_line(s: Option<&clap::builder::StyledStr>) -> String {
    s.map(|s| s.to_string().lines().next().unwrap_or_default().to_string())
        .unwrap_or_default()
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values())
}

fn find_flag<'a>(cmd: &'a Command, word: &str) -> Option<&'a Arg> {
    let name = word.split('=').next().unwrap_or(word);
    cmd.get_arguments().find(|a| {
        if let Some(long) = name.strip_prefix("--") {
            a.get_long() == Some(long)
                || a.get_all_aliases()
                    .into_iter()
                    .flatten()
                    .any(|alias| alias == long)
        } else if let Some(short) = name.strip_prefix('-') {
            short.len() == 1 && a.get_short() == short.chars().next()
        } else {
            false
        }
    })
}

/// Pure: the candidates for `words` (everything after `kubectl tfjob`, the last being the
/// partial word, possibly empty).
pub fn complete(root: &Command, words: &[String]) -> Completions {
    let mut root = root.clone();
    root.build();
    let (to_complete, done) = match words.split_last() {
        Some((last, rest)) => (last.as_str(), rest),
        None => ("", &[][..]),
    };
    let mut cmd = &root;
    let mut expecting_value: Option<&Arg> = None;
    let mut positionals = 0usize;
    let mut first_positional: Option<String> = None;
    for word in done {
        if expecting_value.take().is_some() {
            continue;
        }
        if word == "--" {
            // Everything after `--` is the training command: nothing to complete.
            return Completions {
                candidates: vec![],
                directive: DIRECTIVE_DEFAULT,
                wants_job_name: false,
                wants_names_of: None,
                job: None,
            };
        }
        if word.starts_with('-') {
            if let Some(arg) = find_flag(cmd, word)
                && takes_value(arg)
                && !word.contains('=')
            {
                expecting_value = Some(arg);
            }
            continue;
        }
        if let Some(sub) = cmd.find_subcommand(word) {
            cmd = sub;
            positionals = 0;
            first_positional = None;
        } else {
            if positionals == 0 {
                first_positional = Some(word.clone());
            }
            positionals += 1;
        }
    }

    // The value of a flag.
    if let Some(arg) = expecting_value {
        let mut values: Vec<(String, String)> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set() && v.get_name().starts_with(to_complete))
            .map(|v| (v.get_name().to_string(), first_line(v.get_help())))
            .collect();
        if arg.get_long() == Some("template") {
            // The built-in templates by name (a path completes as a file).
            values.extend(
                crate::pipeline::templates::builtin_names()
                    .filter(|n| n.starts_with(to_complete))
                    .map(|n| (n.to_string(), "built-in template".to_string())),
            );
        }
        let wants_names_of = match arg.get_long() {
            Some("namespace") => Some("namespace"),
            Some("context") => Some("context"),
            Some("cluster") => Some("cluster"),
            Some("user") => Some("user"),
            Some("container") if cmd.get_name() == "logs" => Some("container"),
            _ => None,
        };
        let file_like = matches!(
            arg.get_long(),
            Some("filename" | "template" | "kubeconfig" | "from-file")
        );
        return Completions {
            candidates: values,
            directive: if file_like {
                DIRECTIVE_DEFAULT
            } else {
                DIRECTIVE_NO_FILE_COMP
            },
            wants_job_name: false,
            wants_names_of,
            job: first_positional,
        };
    }

    // A flag name.
    if to_complete.starts_with('-') {
        let mut candidates: Vec<(String, String)> = cmd
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| {
                a.get_long()
                    .map(|l| (format!("--{l}"), first_line(a.get_help())))
            })
            .filter(|(flag, _)| flag.starts_with(to_complete))
            .collect();
        candidates.sort();
        return Completions {
            candidates,
            directive: DIRECTIVE_NO_FILE_COMP,
            wants_job_name: false,
            wants_names_of: None,
            job: None,
        };
    }

    // A subcommand, or a positional.
    let mut candidates: Vec<(String, String)> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .filter(|s| s.get_name().starts_with(to_complete))
        .map(|s| (s.get_name().to_string(), first_line(s.get_about())))
        .collect();
    if candidates.is_empty()
        && let Some(arg) = cmd.get_positionals().nth(positionals)
    {
        candidates = arg
            .get_possible_values()
            .iter()
            .filter(|v| v.get_name().starts_with(to_complete))
            .map(|v| (v.get_name().to_string(), first_line(v.get_help())))
            .collect();
    }
    // Every command whose positional is a TFJob name; `delete` and `list` take several.
    let wants_job_name = match cmd.get_name() {
        "wait" | "diagnose" | "logs" | "get" | "top" | "suspend" | "resume" | "restart" => {
            positionals == 0
        }
        "delete" | "list" => true,
        _ => false,
    };
    Completions {
        candidates,
        directive: DIRECTIVE_NO_FILE_COMP,
        wants_job_name,
        wants_names_of: None,
        job: None,
    }
}

/// The flags a completion request carried that pick the cluster and namespace, over `base`
/// (the flags clap already took as global ones: kubectl forwards the whole line, and clap parses
/// a leading `-n team` or `--kubeconfig K` before the words start).
pub fn kube_args_from_words(base: ConnectionOptions, words: &[String]) -> ConnectionOptions {
    let mut args = base;
    let mut iter = words.iter().peekable();
    while let Some(word) = iter.next() {
        let (flag, inline) = match word.split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (word.as_str(), None),
        };
        let slot = match flag {
            "-n" | "--namespace" => &mut args.namespace,
            "--context" => &mut args.context,
            "--cluster" => &mut args.cluster,
            "--user" => &mut args.user,
            "-s" | "--server" => &mut args.server,
            "--token" => &mut args.token,
            "--kubeconfig" => {
                let value = inline.or_else(|| iter.next().cloned());
                args.kubeconfig = value.map(Into::into);
                continue;
            }
            _ => continue,
        };
        *slot = inline.or_else(|| iter.next().cloned());
    }
    args
}

/// Runs `__complete`: static candidates, plus TFJob names from the cluster for every command
/// that takes one (best effort, bounded to two seconds; a completion must never hang a shell).
/// Names already on the line (`delete a b <TAB>`) are not offered again. The cluster is asked
/// through a command context of its own: the line's connection flags over `ctx`'s, and a
/// two-second deadline.
pub fn exec_complete(ctx: &Context, words: &[String], out: &mut Output) -> Result<()> {
    let root = <Cli as clap::CommandFactory>::command();
    let mut completions = complete(&root, words);
    let prefix = words.last().cloned().unwrap_or_default();
    // The words before the one under the cursor: a `-n` being completed is not yet a flag.
    let typed = &words[..words.len().saturating_sub(1)];
    // What to ask the cluster, if anything.
    let lookup = if completions.wants_job_name {
        Some(Lookup::Jobs)
    } else {
        match completions.wants_names_of {
            Some("namespace") => Some(Lookup::Namespaces),
            Some("container") => completions.job.clone().map(Lookup::Containers),
            _ => None,
        }
    };
    if let Some(lookup) = lookup {
        let base = ctx.conn().clone();
        let conn = match lookup {
            Lookup::Jobs => kube_args_from_words(base, words),
            _ => kube_args_from_words(base, typed),
        };
        let ctx = Context::new(conn).with_deadline(Deadline::after(LOOKUP_LIMIT, "completion"));
        let mut names = Vec::new();
        // Best effort: an unreachable cluster or the two seconds running out offer nothing.
        let _ = block_on(&ctx, async {
            names = match &lookup {
                Lookup::Jobs => job_names(&ctx).await,
                Lookup::Namespaces => namespace_names(&ctx).await,
                Lookup::Containers(job) => container_names(&ctx, job).await,
            }
            .unwrap_or_default();
            Ok(())
        });
        for name in names {
            let again = matches!(lookup, Lookup::Jobs) && typed.contains(&name);
            if name.starts_with(&prefix) && !again {
                completions.candidates.push((name, String::new()));
            }
        }
    }
    if let Some(flag @ ("context" | "cluster" | "user")) = completions.wants_names_of {
        for name in kubeconfig_names(&kube_args_from_words(ctx.conn().clone(), typed), flag) {
            if name.starts_with(&prefix) {
                completions.candidates.push((name, String::new()));
            }
        }
    }
    out.data(&completions.render())
}

/// How long a completion may ask the cluster.
const LOOKUP_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What a completion asks the cluster for.
enum Lookup {
    Jobs,
    Namespaces,
    /// The containers of this job's pods.
    Containers(String),
}

/// The containers of a job's pods (init containers too: `logs -c` reads them as kubectl does),
/// each once, sorted.
async fn container_names(ctx: &Context, job: &str) -> Option<Vec<String>> {
    let job = crate::cluster::parse_job_name(job, "logs").ok()?;
    let kube = ctx.kube().await.ok()?;
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(kube.client.clone(), &kube.namespace);
    let lp = kube::api::ListParams::default().labels(&crate::model::job_selector(job));
    let list = api.list(&lp).await.ok()?;
    let mut names: Vec<String> = list
        .items
        .iter()
        .flat_map(|p| p.spec.iter())
        .flat_map(|s| {
            s.init_containers
                .iter()
                .flatten()
                .chain(s.containers.iter())
        })
        .map(|c| c.name.clone())
        .collect();
    names.sort();
    names.dedup();
    Some(names)
}

async fn namespace_names(ctx: &Context) -> Option<Vec<String>> {
    let kube = ctx.kube().await.ok()?;
    let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(kube.client.clone());
    let list = api.list_metadata(&Default::default()).await.ok()?;
    Some(
        list.items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect(),
    )
}

/// Context, cluster or user names of the kubeconfig given on the line (else $KUBECONFIG, else
/// ~/.kube/config), as kubectl completes them.
fn kubeconfig_names(kube_args: &ConnectionOptions, flag: &str) -> Vec<String> {
    let config = match &kube_args.kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path).ok(),
        None => kube::config::Kubeconfig::read().ok(),
    };
    let Some(c) = config else {
        return Vec::new();
    };
    match flag {
        "context" => c.contexts.into_iter().map(|x| x.name).collect(),
        "cluster" => c.clusters.into_iter().map(|x| x.name).collect(),
        _ => c.auth_infos.into_iter().map(|x| x.name).collect(),
    }
}

async fn job_names(ctx: &Context) -> Option<Vec<String>> {
    let kube = ctx.kube().await.ok()?;
    let jobs: kube::Api<crate::model::TFJob> =
        kube::Api::namespaced(kube.client.clone(), &kube.namespace);
    let list = jobs.list_metadata(&Default::default()).await.ok()?;
    Some(
        list.items
            .into_iter()
            .filter_map(|j| j.metadata.name)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        let mut v: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        if s.ends_with(' ') || s.is_empty() {
            v.push(String::new());
        }
        v
    }

    fn values(c: &Completions) -> Vec<&str> {
        c.candidates.iter().map(|(v, _)| v.as_str()).collect()
    }

    fn root() -> Command {
        <Cli as clap::CommandFactory>::command()
    }

    #[test]
    fn subcommands_flags_and_values() {
        let c = complete(&root(), &words(""));
        for sub in [
            "submit",
            "render",
            "validate",
            "wait",
            "diagnose",
            "secret",
            "templates",
        ] {
            assert!(values(&c).contains(&sub), "{sub} missing: {:?}", values(&c));
        }
        assert!(!values(&c).contains(&"__complete"));
        let c = complete(&root(), &words("se"));
        assert_eq!(values(&c), vec!["secret"]);
        let c = complete(&root(), &words("secret "));
        assert_eq!(values(&c), vec!["create", "check"]);
        let c = complete(&root(), &words("wait x --f"));
        assert_eq!(values(&c), vec!["--for"]);
        let c = complete(&root(), &words("wait x --for "));
        assert_eq!(
            values(&c),
            vec![
                "created",
                "running",
                "all-running",
                "training",
                "succeeded",
                "finished",
                "delete"
            ]
        );
        let c = complete(&root(), &words("wait "));
        assert!(c.wants_job_name);
        for line in [
            "logs ",
            "logs -f -r worker ",
            "get ",
            "status ",
            "suspend ",
            "resume ",
            "delete ",
            "delete a b ",
            "-n team delete --cascade orphan ",
            "list ",
            "ls a ",
        ] {
            assert!(complete(&root(), &words(line)).wants_job_name, "{line:?}");
        }
        for line in ["logs x ", "get x ", "logs x -c "] {
            assert!(!complete(&root(), &words(line)).wants_job_name, "{line:?}");
        }
        let c = complete(&root(), &words("render --template "));
        assert!(values(&c).contains(&"ps-worker"), "{:?}", values(&c));
        assert_eq!(c.directive, DIRECTIVE_DEFAULT, "a path completes too");
        for (line, flag) in [
            ("-n ", "namespace"),
            ("list --namespace ", "namespace"),
            ("get x --context ", "context"),
            ("--cluster ", "cluster"),
            ("wait --user ", "user"),
        ] {
            assert_eq!(
                complete(&root(), &words(line)).wants_names_of,
                Some(flag),
                "{line:?}"
            );
        }
        let c = complete(&root(), &words("list -o "));
        assert_eq!(values(&c)[..4], ["wide", "json", "yaml", "name"]);
        assert!(values(&c).contains(&"jsonpath="), "{:?}", values(&c));
        let c = complete(&root(), &words("delete x --cascade "));
        assert_eq!(values(&c), vec!["background", "foreground", "orphan"]);
        let c = complete(&root(), &words("submit -f "));
        assert_eq!(c.directive, DIRECTIVE_DEFAULT, "files for -f");
        let c = complete(&root(), &words("completion "));
        assert!(values(&c).contains(&"bash"));
        let c = complete(&root(), &words("submit -- python "));
        assert!(c.candidates.is_empty());
        assert!(c.render().ends_with(":0\n"));
    }

    #[test]
    fn cluster_flags_are_found_in_the_words() {
        let a = kube_args_from_words(
            ConnectionOptions::default(),
            &words("wait -n team --context=prod --kubeconfig /k x"),
        );
        assert_eq!(a.namespace.as_deref(), Some("team"));
        assert_eq!(a.context.as_deref(), Some("prod"));
        assert_eq!(a.kubeconfig.as_deref(), Some(std::path::Path::new("/k")));
    }
}
