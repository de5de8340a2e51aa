//! `kubectl tfjob submit`.

use clap::{Arg, Args};

use super::block_on;
use super::render::RenderArgs;
use super::wait::WaitOptionArgs;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::DryRun;
use crate::ops::submit::SubmitOptions;
use crate::output::Output;

#[derive(Debug, Clone, Args)]
#[command(
    group = clap::ArgGroup::new("wait_or_replace").args(["wait", "replace"]).multiple(true),
    mut_args = wait_flags_need_wait
)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub render: RenderArgs,

    /// "client": render and validate only; "server": also all cluster checks and a server dry run.
    #[arg(long, value_enum, default_value = "none", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: DryRun,

    /// Output format for the created (or dry-run) object, as kubectl create takes it:
    /// json|yaml|name|jsonpath=…|custom-columns=…|go-template=… (and their -file forms).
    #[arg(short = 'o', long, value_name = "FORMAT", value_parser = super::list::FormatParser::object(), hide_possible_values = true)]
    pub output: Option<String>,

    /// If a TFJob of that name exists, delete it and create the new one (asks unless --yes).
    #[arg(long)]
    pub replace: bool,

    /// Answer yes to confirmations.
    #[arg(short = 'y', long)]
    pub yes: bool,

    /// After creating, wait for the condition given by --for.
    #[arg(long)]
    pub wait: bool,

    #[command(flatten)]
    pub wait_opts: WaitOptionArgs,

    /// Create the job even if the placement pre-flight says it can never run on the current
    /// nodes (for clusters whose autoscaler adds nodes on demand).
    #[arg(long)]
    pub skip_capacity_check: bool,

    /// Go on although objects the pods need (ServiceAccount, PVC, ConfigMap, Secret volume)
    /// do not exist yet, for objects created after the job on purpose.
    #[arg(long)]
    pub allow_missing_refs: bool,

    /// Create the job although an image reference is not one the kubelet can parse (upper
    /// case, an empty tag, white space): by default such a job is refused, since every pod of
    /// it would fail with InvalidImageName.
    #[arg(long)]
    pub skip_image_check: bool,

    /// Create the job as another kind: `jobset` (a kubernetes-sigs JobSet, see `export`), for
    /// clusters without the training-operator. (`--as` is kubectl's impersonation flag.)
    #[arg(long, value_enum, value_name = "KIND")]
    pub to: Option<super::export::TargetArg>,
}

/// The flags `submit` shares with `wait` do nothing without `--wait` (and `--timeout` also bounds
/// the deletion of `--replace`): given alone they are a usage error (exit 2), not silently ignored.
fn wait_flags_need_wait(arg: Arg) -> Arg {
    match arg.get_long() {
        Some("timeout") => arg.requires("wait_or_replace"),
        Some("for" | "pending-timeout" | "settle" | "image-pull-grace" | "save" | "save-limit") => {
            arg.requires("wait")
        }
        _ => arg,
    }
}

pub fn exec(ctx: Context, args: SubmitArgs, out: &mut Output) -> Result<()> {
    let options = SubmitOptions {
        render: args.render.into(),
        dry_run: args.dry_run,
        output: match args.output.as_deref() {
            None => None,
            Some("wide") => {
                return Err(crate::error::Error::Usage(
                    "-o wide prints a table of listed jobs; submit prints the object: use -o json|yaml|name|jsonpath=…".into(),
                ));
            }
            Some(o) => Some(crate::print::parse_format(Some(o))?),
        },
        replace: args.replace,
        yes: args.yes,
        wait: args.wait,
        wait_opts: {
            let (opts, note) = args.wait_opts.options()?;
            if opts.wait_for == crate::ops::wait::WaitFor::Deleted {
                return Err(crate::error::Error::Usage(
                    "--for delete is `wait`'s: a job just submitted is not waited for to go".into(),
                ));
            }
            // Said only when it matters: the settle window is the wait's.
            if let Some(note) = note.filter(|_| args.wait) {
                out.note_line(&note);
            }
            opts
        },
        skip_capacity_check: args.skip_capacity_check,
        allow_missing_refs: args.allow_missing_refs,
        skip_image_check: args.skip_image_check,
        to: crate::ops::submit::Kind::TfJob,
    };
    // `--timeout` (with --wait or --replace) is the whole command's one deadline: the
    // pre-flight, --replace's deletion, the create, the wait and its closing diagnosis.
    let ctx = if options.wait || options.replace {
        ctx.with_deadline(options.wait_opts.deadline())
    } else {
        ctx
    };
    if args.to.is_some() {
        if options.wait_opts.save.is_some() {
            return Err(crate::error::Error::Usage(
                "--save keeps a TFJob's evidence; submit --to jobset does not take it".into(),
            ));
        }
        if options.output.is_some() {
            return Err(crate::error::Error::Usage(
                "submit --to jobset prints the created JobSet's name; for the object use `export --to jobset -o yaml|json`".into(),
            ));
        }
        if options.wait_opts.wait_for == crate::ops::wait::WaitFor::Training {
            return Err(crate::error::Error::Usage(
                "--for training reads a TFJob's replicas' progress lines; with --to jobset use --for all-running".into(),
            ));
        }
        if options.replace {
            return Err(crate::error::Error::Usage(
                "--replace is for TFJobs; delete the JobSet first (kubectl delete jobset NAME)"
                    .into(),
            ));
        }
        let options = crate::ops::submit::SubmitOptions {
            to: crate::ops::submit::Kind::JobSet,
            ..options
        };
        return block_on(&ctx, crate::ops::submit::run(&ctx, options, out));
    }
    block_on(&ctx, crate::ops::submit::run(&ctx, options, out))
}

pub(super) const SUBMIT_EXAMPLES: &str = "\
Examples:
  # Render, check and create the article's job, then follow it to Running
  kubectl tfjob submit --name tf-dist-train --image tensorflow/tensorflow:2.13.0-gpu \\
      --ps 1 --workers 3 --gpus 1 --wait -- python -m trainer.task

  # Submit an existing manifest as written, as kubectl create -f does (add the gateway env
  # with --inject-gateway-env)
  kubectl tfjob submit -f tfjob.yaml

  # Everything but the final write: readiness, the placement pre-flight and a server dry run
  kubectl tfjob submit -f tfjob.yaml --dry-run=server

  # Offline only: render and validate, print YAML
  kubectl tfjob submit -f values.yaml --dry-run=client -o yaml";
