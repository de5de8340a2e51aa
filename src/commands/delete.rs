//! `kubectl tfjob delete NAME…` with kubectl delete's flags and semantics
//! (k8s.io/kubectl/pkg/cmd/delete/delete.go and delete_flags.go).

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{block_on, parse_duration};
use crate::cluster::Target;
use crate::cluster::budget::Deadline;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::DryRun;
use crate::ops::delete::{Cascade, DeleteOptions};
use crate::output::Output;

/// `--cascade`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CascadeArg {
    /// Delete the job now; the garbage collector removes its pods after.
    Background,
    /// The job stays until its pods are gone.
    Foreground,
    /// Delete the job and leave its pods running.
    Orphan,
}

#[derive(Debug, Clone, Args)]
pub struct DeleteArgs {
    /// TFJob names (or tfjob/NAME).
    pub names: Vec<String>,

    /// Every job matching this label selector, in the namespace.
    #[arg(short = 'l', long, value_name = "SELECTOR", conflicts_with = "all")]
    pub selector: Option<String>,

    /// Every job of the namespace (never across namespaces).
    #[arg(long)]
    pub all: bool,

    /// Return only when the jobs and their pods are gone (--wait=false returns at once).
    // `require_equals` as pflag does for optional values, so `--wait NAME` keeps NAME a name.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    pub wait: bool,

    /// Who removes the pods: background (after the job), foreground (before), orphan (nobody).
    #[arg(long, value_enum, default_value = "background")]
    pub cascade: CascadeArg,

    /// Seconds the pods get to stop; -1 uses each pod's own. 0 means 1 (kubectl without --force).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "SECONDS")]
    pub grace_period: i64,

    /// "client": print what would be deleted; "server": the API server checks it, nothing is deleted.
    #[arg(long, value_enum, default_value = "none", num_args = 0..=1, require_equals = true,
          default_missing_value = "client")]
    pub dry_run: DryRun,

    /// A job that does not exist is not an error.
    #[arg(long)]
    pub ignore_not_found: bool,

    /// Delete the job only if its uid is still UID (the job you read; one name only): a job
    /// created again under the name since is left alone (the DELETE's UID precondition).
    #[arg(long, value_name = "UID", conflicts_with_all = ["selector", "all"])]
    pub uid: Option<String>,

    /// How long --wait waits for the jobs and pods to go; 0 means 5 minutes.
    #[arg(long, default_value = "0s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

pub fn exec(ctx: Context, args: DeleteArgs, out: &mut Output) -> Result<()> {
    // With --wait, `--timeout` bounds the whole command (0: the default five minutes).
    let ctx = if args.wait {
        let timeout = if args.timeout.is_zero() {
            crate::ops::delete::WAIT_TIMEOUT
        } else {
            args.timeout
        };
        ctx.with_deadline(Deadline::after(timeout, "--timeout"))
    } else {
        ctx
    };
    if args.uid.is_some() && args.names.len() != 1 {
        return Err(crate::error::Error::Usage(
            "--uid names the uid of one job: give exactly one NAME with it".into(),
        ));
    }
    let targets = args
        .names
        .iter()
        .map(|n| Target::parse(n, "delete"))
        .collect::<Result<Vec<_>>>()?;
    let opts = DeleteOptions {
        names: Vec::new(),
        selector: args.selector,
        all: args.all,
        cascade: match args.cascade {
            CascadeArg::Background => Cascade::Background,
            CascadeArg::Foreground => Cascade::Foreground,
            CascadeArg::Orphan => Cascade::Orphan,
        },
        // kubectl: a negative grace period is "the object's default"; 0 without --force
        // becomes 1 (delete.go, `GracePeriod == 0 && !ForceDeletion`).
        grace_period: match args.grace_period {
            g if g < 0 => None,
            0 => Some(1),
            g => Some(g),
        },
        wait: args.wait,
        dry_run: args.dry_run,
        ignore_not_found: args.ignore_not_found,
        uid: args.uid,
    };
    block_on(&ctx, crate::ops::delete::run(&ctx, &targets, opts, out))
}

pub(super) const DELETE_EXAMPLES: &str = "\
Examples:
  # Delete a job; returns once the job and its pods are gone
  kubectl tfjob delete tf-dist-train

  # Every job labelled team=nlp, without waiting
  kubectl tfjob delete -l team=nlp --wait=false

  # What would be deleted, checked by the API server
  kubectl tfjob delete --all --dry-run=server";
