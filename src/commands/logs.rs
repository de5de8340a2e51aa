//! `kubectl tfjob logs NAME`: every replica's container log, prefixed with its replica, with
//! kubectl's flag names (k8s.io/kubectl/pkg/cmd/logs/logs.go).

use std::time::Duration;

use clap::Args;
use k8s_openapi::jiff::Timestamp;

use super::{block_on, parse_duration};
use crate::cluster::Target;
use crate::cluster::budget::Deadline;
use crate::error::{Error, Result};
use crate::ops::Context;
use crate::ops::logs::LogsOptions;
use crate::output::Output;

#[derive(Debug, Clone, Args)]
pub struct LogsArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    /// One replica, as `logs` prefixes it and Arena and stern users type it: `worker-3`
    /// (the same as `-r worker --index 3`), or a replica type alone (`ps`).
    #[arg(value_name = "REPLICA", conflicts_with_all = ["replica_type", "index"])]
    pub replica: Option<String>,

    /// Keep following: pods that start, restart or are recreated are picked up; ends when the
    /// job finishes, with the job's outcome as exit code (0 succeeded, 4 failed).
    #[arg(short = 'f', long)]
    pub follow: bool,

    /// Only this replica type (chief, master, ps, worker, evaluator; any case).
    #[arg(short = 'r', long, value_name = "TYPE")]
    pub replica_type: Option<String>,

    /// Only this replica index.
    #[arg(long, value_name = "N")]
    pub index: Option<u32>,

    /// The container (default: tensorflow).
    #[arg(short = 'c', long, value_name = "NAME")]
    pub container: Option<String>,

    /// Only lines newer than this duration (5s, 2m, 3h).
    #[arg(long, value_parser = parse_duration, conflicts_with = "since_time", value_name = "DURATION")]
    pub since: Option<Duration>,

    /// Only lines at or after this RFC3339 time (2026-01-02T15:04:05Z).
    #[arg(long, value_name = "TIME")]
    pub since_time: Option<String>,

    /// Lines of recent log to show per container; -1 shows all.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
    pub tail: i64,

    /// Keep the kubelet's RFC3339 timestamp on each line.
    #[arg(long)]
    pub timestamps: bool,

    /// The previous (crashed) container instance of each replica.
    #[arg(short = 'p', long)]
    pub previous: bool,

    /// Most log streams followed at once; following more replicas than this is an error.
    /// Default: every replica of the job (at most 256).
    #[arg(long, value_name = "N")]
    pub max_log_requests: Option<usize>,

    /// Keep the job's evidence before the operator's cleanPodPolicy deletes it: write
    /// DIR/<job>-<UTC time>/ with each pod's current and previous container logs, the job
    /// and its pods as YAML, their events and summary.txt with the failure classes (again
    /// when a followed job ends). DIR is made if missing and checked writable first.
    #[arg(long, value_name = "DIR")]
    pub save: Option<std::path::PathBuf>,

    /// With --save: the bytes kept of each log, its end (10Mi, 512Ki, 1000000).
    #[arg(long, value_name = "BYTES", default_value = "10Mi", value_parser = super::wait::parse_save_limit, requires = "save")]
    pub save_limit: u64,

    /// How long to wait for pods to exist and start before giving up; without -f, the whole
    /// command's deadline.
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
}

impl LogsArgs {
    fn options(&self, target: Target, colour: bool) -> Result<LogsOptions> {
        let mut o = LogsOptions::new(target.name());
        o.target = target;
        o.container = self.container.clone();
        (o.replica_type, o.index) = match &self.replica {
            Some(r) => replica_words(r)?,
            None => (self.replica_type.clone(), self.index),
        };
        o.follow = self.follow;
        o.previous = self.previous;
        o.since_seconds = self.since.map(|d| d.as_secs().max(1) as i64);
        o.since_time = match &self.since_time {
            Some(t) => Some(t.parse::<Timestamp>().map_err(|e| {
                Error::Usage(format!(
                    "--since-time {t:?} is not an RFC3339 time like 2026-01-02T15:04:05Z: {e}"
                ))
            })?),
            None => None,
        };
        o.tail = (self.tail >= 0).then_some(self.tail);
        o.timestamps = self.timestamps;
        o.max_log_requests = self.max_log_requests;
        o.timeout = self.timeout;
        o.colour = colour;
        o.save = self
            .save
            .clone()
            .map(|dir| crate::ops::evidence::SaveOptions {
                dir,
                limit: self.save_limit,
            });
        Ok(o)
    }
}

/// `worker-3` → (`worker`, 3); `ps` → (`ps`, none). The type is the one `-r` takes.
fn replica_words(r: &str) -> Result<(Option<String>, Option<u32>)> {
    let (kind, index) = match r.rsplit_once('-') {
        Some((kind, n)) if !kind.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
            let index = n.parse::<u32>().map_err(|_| {
                Error::Usage(format!("REPLICA {r:?}: the index {n:?} is too large"))
            })?;
            (kind, Some(index))
        }
        _ => (r, None),
    };
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::Usage(format!(
            "REPLICA {r:?} is not a replica: write it as logs prefixes it, e.g. worker-3 or ps"
        )));
    }
    Ok((Some(kind.to_string()), index))
}

/// Replica prefixes are coloured by the one colour decision every command uses
/// ([`Output::out_color`]: a terminal, and not NO_COLOR or `TERM=dumb`).
pub fn exec(ctx: Context, args: LogsArgs, out: &mut Output) -> Result<()> {
    let target = Target::parse(&args.name, "logs")?;
    crate::ops::workload::tfjob_only(&target, "--save", args.save.is_some(), "")?;
    let opts = args.options(target, out.out_color())?;
    // Without -f, `--timeout` ends the whole command, as every verb's does (a log the server
    // never ends included); with -f it bounds only the wait for pods, as `kubectl logs -f`
    // follows without end.
    let ctx = if args.follow {
        ctx
    } else {
        ctx.with_deadline(Deadline::after(args.timeout, "--timeout"))
    };
    // `--save DIR` is checked before any request (exit 2 naming it).
    if let Some(save) = &opts.save {
        crate::ops::evidence::check_dir(save)?;
    }
    block_on(&ctx, crate::ops::logs::run(&ctx, opts, out))
}

pub(super) const LOGS_EXAMPLES: &str = "\
Examples:
  # Every replica's tensorflow container, each line prefixed [worker-0], [ps-0], ...
  kubectl tfjob logs tf-dist-train

  # Follow until the job finishes (exit 0 when it succeeds, 4 when it fails)
  kubectl tfjob logs tf-dist-train -f

  # Only worker 1, the last 100 lines, and what its crashed container printed
  kubectl tfjob logs tf-dist-train worker-1 --tail 100 -p";
