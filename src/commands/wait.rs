//! `kubectl tfjob wait NAME`, and the wait flags `submit --wait` shares.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{block_on, parse_duration, parse_signed_duration};
use crate::cluster::Target;
use crate::error::Result;
use crate::ops::Context;
use crate::ops::wait::{WaitFor, WaitOptions};
use crate::output::{Output, ReportFormat};

#[derive(Debug, Clone, Args)]
pub struct WaitOptionArgs {
    /// The condition to wait for. The default, all-running, waits until every replica pod of
    /// every role runs (for --settle); running is the operator's own Running condition, which
    /// it sets as soon as the chief, or any one worker, runs, while other replicas may still be
    /// Pending (e.g. 1 PS + 3 one-GPU workers on a 1-GPU cluster: Running, with two workers
    /// Unschedulable).
    /// kubectl's `--for=condition=NAME` is taken too, for the job's Created, Running and
    /// Succeeded conditions.
    #[arg(long = "for", value_parser = WaitForParser, default_value = "all-running")]
    pub wait_for: WaitFor,

    /// How long to wait (kubectl duration syntax: 30s, 10m, 1h). 0 checks once; negative waits a week.
    #[arg(long, default_value = "10m", value_parser = parse_signed_duration, allow_hyphen_values = true)]
    pub timeout: Duration,

    /// Give up when a pod has been unschedulable this long (default: wait for --timeout). Also
    /// how long to wait for a training-operator that is not ready while nothing reconciles the
    /// job (default: fail at once), and, when the operator's Deployment cannot be seen, how long
    /// after its creation a job may have no status (default: 30s).
    #[arg(long, value_parser = parse_duration)]
    pub pending_timeout: Option<Duration>,

    /// How long image pull errors may persist before they count as fatal.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub image_pull_grace: Duration,

    /// For all-running: how long every replica must have run without a container restart
    /// (a restart inside the window starts it again; a crash loop fails the wait). 0 for none.
    /// [default: 5s, shortened to half of a --timeout it would not fit in]
    #[arg(long, value_parser = parse_duration, value_name = "SETTLE")]
    pub settle: Option<Duration>,

    /// A container restart is not a failure (it starts --settle again and is shown); this many
    /// restarts of one container during the wait are a crash loop and end it with exit 4. The
    /// job's runPolicy.backoffLimit takes its place when set (the operator fails the job then).
    #[arg(long, default_value_t = crate::ops::wait::DEFAULT_MAX_RESTARTS, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_restarts: u32,

    /// When the wait fails (exit 4: the job failed, crash-loops, cannot pull its image, can
    /// never be scheduled), delete the job (its pods go with it), as Arena does. Without it the
    /// job is left as it is and the error says how to delete it. Never on a verdict judged
    /// from the logs (training stopped advancing): that deletes nothing.
    #[arg(long)]
    pub delete_on_failure: bool,

    /// Keep the evidence before the operator's cleanPodPolicy deletes it: as soon as a replica
    /// terminates and when the wait ends, write DIR/<job>-<UTC time>/ with each pod's current
    /// and previous container logs, the job and its pods as YAML, their events and
    /// summary.txt with the failure classes. DIR is made if missing and checked writable first.
    #[arg(long, value_name = "DIR")]
    pub save: Option<std::path::PathBuf>,

    /// With --save: the bytes kept of each log, its end (a quantity: 10Mi, 512Ki, 1000000).
    #[arg(long, value_name = "BYTES", default_value = "10Mi", value_parser = parse_save_limit, requires = "save")]
    pub save_limit: u64,

    /// Once every replica runs, skip the in-pod checks `probe` makes (TF_CONFIG, the peers,
    /// the gateway with the pod's own key) before saying so. Without it a failed check (a 401,
    /// a wrong TF_CONFIG, a peer that cannot be reached) ends the wait with exit 4.
    #[arg(long)]
    pub no_probe: bool,
}

/// `--save-limit`: a whole, positive number of bytes as a quantity (`10Mi`).
pub fn parse_save_limit(s: &str) -> std::result::Result<u64, String> {
    let milli = crate::model::quantity::parse_quantity(s)
        .ok_or_else(|| format!("{s:?} is not a size like 10Mi, 512Ki or 1000000"))?;
    // The bound first: a quantity too large to count (held at quantity::BEYOND_MILLI) is
    // said as too large, not as a fraction.
    if milli > MAX_SAVE_LIMIT * 1000 {
        return Err(format!(
            "{s:?} is more than 256Mi: each log's end is held in memory while it is read, so \
             --save-limit is at most 256Mi per log"
        ));
    }
    let bytes = milli / 1000;
    if milli % 1000 != 0 || bytes < 1 {
        return Err(format!("{s:?} is not a whole, positive number of bytes"));
    }
    // Between 1 and MAX_SAVE_LIMIT: a u64 without loss.
    Ok(bytes as u64)
}

/// The most of one log `--save` keeps (held in memory while read).
const MAX_SAVE_LIMIT: i128 = 256 * 1024 * 1024;

impl WaitOptionArgs {
    /// The core's options, and a note to print when the default --settle was shortened to fit
    /// --timeout (a --settle given that does not fit is refused, exit 2).
    pub fn options(self) -> Result<(WaitOptions, Option<String>)> {
        let (settle, note) =
            crate::ops::wait::fit_settle(self.wait_for, self.timeout, self.settle)?;
        let opts = WaitOptions {
            wait_for: self.wait_for,
            timeout: self.timeout,
            pending_timeout: self.pending_timeout,
            image_pull_grace: self.image_pull_grace,
            settle,
            max_restarts: self.max_restarts,
            capacity_may_come: false,
            delete_on_failure: self.delete_on_failure,
            save: self.save.map(|dir| crate::ops::evidence::SaveOptions {
                dir,
                limit: self.save_limit,
            }),
            since: None,
            probe: !self.no_probe,
            env_prefix: crate::gateway::DEFAULT_ENV_PREFIX.to_string(),
        };
        Ok((opts, note))
    }
}

/// `--for`: a value of [`WaitFor`], or kubectl's `condition=NAME` for the job's Created, Running
/// and Succeeded conditions (kubectl's `conditionFuncFor`, k8s.io/kubectl/pkg/cmd/wait/wait.go:
/// `condition=NAME[=VALUE]`, VALUE `True` by default, compared without case).
#[derive(Debug, Clone, Copy)]
pub struct WaitForParser;

impl clap::builder::TypedValueParser for WaitForParser {
    type Value = WaitFor;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<WaitFor, clap::Error> {
        let text = value.to_string_lossy();
        match text.strip_prefix("condition=") {
            Some(condition) => crate::ops::wait::for_condition(condition).map_err(|why| {
                clap::Error::raw(
                    clap::error::ErrorKind::InvalidValue,
                    format!("invalid value '{text}' for '--for': {why}\n"),
                )
                .with_cmd(cmd)
            }),
            None => clap::builder::EnumValueParser::<WaitFor>::new().parse_ref(cmd, arg, value),
        }
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            WaitFor::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value()),
        ))
    }
}

#[derive(Debug, Clone, Args)]
pub struct WaitArgs {
    /// TFJob names (or tfjob/NAME); several are followed at once, each reported.
    #[arg(required_unless_present_any = ["selector", "all"])]
    pub names: Vec<String>,

    /// Wait for every TFJob this label selector matches (e.g. team=nlp).
    #[arg(short = 'l', long, value_name = "SELECTOR", conflicts_with_all = ["names", "all"])]
    pub selector: Option<String>,

    /// Wait for every TFJob of the namespace.
    #[arg(long, conflicts_with = "names")]
    pub all: bool,

    #[command(flatten)]
    pub opts: WaitOptionArgs,

    /// Output: text (live progress on a terminal, a line per change otherwise) or json (NDJSON).
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,
}

pub fn exec(ctx: Context, args: WaitArgs, out: &mut Output) -> Result<()> {
    let (wait, note) = args.opts.options()?;
    if let Some(note) = note {
        out.note_line(&note);
    }
    // `--save DIR` is checked before any request (exit 2 naming it).
    if let Some(save) = &wait.save {
        crate::ops::evidence::check_dir(save)?;
    }
    // `--timeout` is the whole command's deadline (0: check once, bounded by the requests).
    let ctx = ctx.with_deadline(wait.deadline());
    if wait.wait_for == WaitFor::Deleted {
        if args.names.is_empty() {
            return Err(crate::error::Error::Usage(
                "--for delete waits for TFJobs named on the line (not -l or --all)".into(),
            ));
        }
        let names = args
            .names
            .iter()
            .map(|n| crate::cluster::parse_job_name(n, "wait").map(String::from))
            .collect::<Result<Vec<_>>>()?;
        return block_on(&ctx, crate::ops::delete::wait_deleted(&ctx, &names, out));
    }
    // The names, parsed once here: one may be a JobSet (`jobset/NAME`); several are TFJobs.
    let targets = match args.names.as_slice() {
        [one] => vec![Target::parse(one, "wait")?],
        many => many
            .iter()
            .map(|n| crate::cluster::parse_job_name(n, "wait").map(|n| Target::TfJob(n.into())))
            .collect::<Result<Vec<_>>>()?,
    };
    if let [target] = targets.as_slice() {
        crate::ops::workload::tfjob_only(target, "--save", wait.save.is_some(), "")?;
        crate::ops::workload::tfjob_only(
            target,
            "--for training",
            wait.wait_for == WaitFor::Training,
            &format!(
                "use --for all-running and `kubectl tfjob logs jobset/{}`",
                target.name()
            ),
        )?;
    }
    let opts = crate::ops::wait_many::WaitManyOptions {
        targets: crate::ops::wait_many::Targets {
            names: targets,
            selector: args.selector,
            all: args.all,
        },
        wait,
        format: args.output,
    };
    block_on(&ctx, crate::ops::wait_many::run(&ctx, opts, out))
}

pub(super) const WAIT_EXAMPLES: &str = "\
Running vs all-running:
  The training-operator sets Running as soon as the chief, or (without a chief) any one worker,
  runs. Submit 1 PS + 3 workers with one GPU each to a cluster with one GPU: the operator says
  Running while two workers are Unschedulable and the job never trains. `--for running` stops
  there (and names the replicas that do not run); the default, `--for all-running`, waits until
  all four replicas run and have run for --settle without a restart.

Examples:
  # Wait until every replica runs (default timeout 10m)
  kubectl tfjob wait tf-dist-train

  # The operator's Running condition only
  kubectl tfjob wait tf-dist-train --for running

  # Give up if a pod is unschedulable (or nothing reconciles the job) for 2 minutes
  kubectl tfjob wait tf-dist-train --pending-timeout 2m

  # Check once: exit 0 if every replica runs now, 5 if not
  kubectl tfjob wait tf-dist-train --timeout 0

  # In CI: one JSON object per change
  kubectl tfjob wait tf-dist-train --for finished --timeout 2h -o json

  # Several jobs at once, as kubectl wait: each is reported, and any failure fails the command
  kubectl tfjob wait tf-a tf-b --for finished
  kubectl tfjob wait -l team=nlp --for finished --timeout 1h
  kubectl tfjob wait --all";
