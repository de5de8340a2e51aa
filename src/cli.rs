//! Command-line interface: the clap definitions and nothing else.
//!
//! Flags that kubectl users already know (`--kubeconfig`, `--context`, `-n`, `--request-timeout`,
//! `-o`, `--dry-run`, `-f`) keep kubectl's names and meanings; values flags follow Helm's.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::error::EXIT_CODES_HELP;

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
    pub kube: KubeArgs,

    /// Log more: -v for info, -vv for debug, -vvv for trace. Secrets are redacted at every level.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

/// The connection flags kubectl itself takes, with the same meaning.
#[derive(Debug, Clone, Default, Args)]
pub struct KubeArgs {
    /// Path to the kubeconfig file to use (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// The namespace (default: the context's namespace, else "default").
    #[arg(short = 'n', long, global = true, value_name = "NAME")]
    pub namespace: Option<String>,

    /// How long to wait for a single API request before giving up (e.g. 30s, 1m). 0 = no limit.
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<Duration>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a TFJob, validate it, check the cluster is ready, and create it.
    #[command(after_help = SUBMIT_EXAMPLES)]
    Submit(SubmitArgs),

    /// Render a TFJob from a template and values, validate it offline, and print it as YAML.
    #[command(after_help = RENDER_EXAMPLES)]
    Render(RenderArgs),

    /// Validate TFJob manifests offline (schema, operator webhook rules, and lint checks).
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate(ValidateArgs),

    /// List the built-in templates, or print one.
    Templates(TemplatesArgs),

    /// Wait for a TFJob to reach a condition, showing per-replica progress.
    #[command(after_help = WAIT_EXAMPLES)]
    Wait(WaitArgs),

    /// Check a TFJob layer by layer (CRD, operator, pods, scheduling, runtime) and say what is wrong.
    #[command(after_help = DIAGNOSE_EXAMPLES)]
    Diagnose(DiagnoseArgs),

    /// Store or check the model-gateway API key Secret.
    Secret(SecretArgs),

    /// Print a shell completion script.
    Completion(CompletionArgs),

    /// Completion protocol for `kubectl tfjob <TAB>` (called by the kubectl_complete-tfjob script).
    #[command(name = "__complete", hide = true)]
    Complete {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        words: Vec<String>,
    },
}

/// Where a job comes from and everything that shapes it. Shared by `render` and `submit`.
#[derive(Debug, Clone, Default, Args)]
pub struct RenderArgs {
    /// Built-in template name (see `kubectl tfjob templates`) or path to a template file.
    #[arg(short = 't', long, value_name = "NAME|PATH")]
    pub template: Option<String>,

    /// A values file, or a complete TFJob manifest ("-" reads stdin). Repeatable; later values
    /// files win. A file whose document has `apiVersion` and `kind` is taken as a manifest.
    #[arg(short = 'f', long = "filename", value_name = "FILE", alias = "values")]
    pub files: Vec<String>,

    /// Set a value, e.g. --set worker.replicas=4 --set image=my/img:1 (repeatable; wins over files).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,

    /// The TFJob name.
    #[arg(long)]
    pub name: Option<String>,

    /// Container image for every replica (override per role with --set ps.image=…).
    #[arg(long)]
    pub image: Option<String>,

    // Counts accept "-1" as a number (not as a flag or the trailing command), so a negative
    // count gets a plain "must be ≥ 0" from values checking.
    /// Number of parameter servers.
    #[arg(long = "ps", value_name = "N", allow_negative_numbers = true)]
    pub ps: Option<i32>,

    /// Number of workers.
    #[arg(long = "workers", value_name = "N", allow_negative_numbers = true)]
    pub workers: Option<i32>,

    /// Number of chief replicas (0 or 1).
    #[arg(long = "chief", value_name = "N", allow_negative_numbers = true, value_parser = parse_chief)]
    pub chief: Option<i32>,

    /// Number of evaluator replicas.
    #[arg(long = "evaluator", value_name = "N", allow_negative_numbers = true)]
    pub evaluator: Option<i32>,

    /// GPUs (nvidia.com/gpu) per worker (and chief); values key `gpus`.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub gpus: Option<i64>,

    /// CPU limit per worker (and chief), e.g. 4 or 500m.
    #[arg(long, value_name = "QUANTITY")]
    pub cpu: Option<String>,

    /// Memory limit per worker (and chief), e.g. 8Gi.
    #[arg(long, value_name = "QUANTITY")]
    pub memory: Option<String>,

    /// Label for the TFJob and its pods (repeatable).
    #[arg(long = "label", short = 'l', value_name = "KEY=VALUE")]
    pub labels: Vec<String>,

    /// Annotation for the TFJob (repeatable).
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    pub annotations: Vec<String>,

    /// Extra env var for the tensorflow containers (repeatable). Use a Secret for credentials.
    #[arg(long = "env", short = 'e', value_name = "NAME=VALUE")]
    pub env: Vec<String>,

    /// Replica restartPolicy: Always, OnFailure, Never or ExitCode.
    #[arg(long, value_name = "POLICY")]
    pub restart_policy: Option<String>,

    /// runPolicy.cleanPodPolicy: All, Running or None.
    #[arg(long, value_name = "POLICY")]
    pub clean_pod_policy: Option<String>,

    /// runPolicy.backoffLimit.
    #[arg(long, value_name = "N")]
    pub backoff_limit: Option<i32>,

    /// runPolicy.activeDeadlineSeconds.
    #[arg(long, value_name = "SECONDS")]
    pub active_deadline_seconds: Option<i64>,

    /// runPolicy.ttlSecondsAfterFinished.
    #[arg(long, value_name = "SECONDS")]
    pub ttl_seconds_after_finished: Option<i32>,

    /// successPolicy: "" (worker-0 decides) or AllWorkers.
    #[arg(long, value_name = "POLICY")]
    pub success_policy: Option<String>,

    /// runPolicy.schedulingPolicy.queue (gang scheduling).
    #[arg(long, value_name = "NAME")]
    pub queue: Option<String>,

    /// runPolicy.schedulingPolicy.priorityClass: the gang PodGroup's priority (Volcano,
    /// scheduler-plugins). For the pods' own priority use --pod-priority-class.
    #[arg(long, value_name = "NAME")]
    pub priority_class: Option<String>,

    #[command(flatten)]
    pub pod: PodArgs,

    #[command(flatten)]
    pub gateway: GatewayArgs,

    /// Command (and args) for the tensorflow containers, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Values that describe real jobs (issue 15), applied to every role's pods; per role with
/// `--set worker.volumes=…` or a values file. Also `--set-string`/`--set-file`.
#[derive(Debug, Clone, Default, Args)]
pub struct PodArgs {
    /// Set a value as a string, never typed (e.g. --set-string image.tag=1.10). Repeatable.
    #[arg(long = "set-string", value_name = "KEY=VALUE")]
    pub set_string: Vec<String>,

    /// Set a value from a file's content (e.g. --set-file args[0]=./flags.txt). Repeatable.
    #[arg(long = "set-file", value_name = "KEY=PATH")]
    pub set_file: Vec<String>,

    /// CPU request per worker (and chief) when lower than the limit --cpu, e.g. 2.
    #[arg(long, value_name = "QUANTITY")]
    pub cpu_request: Option<String>,

    /// Memory request per worker (and chief) when lower than the limit --memory, e.g. 4Gi.
    #[arg(long, value_name = "QUANTITY")]
    pub memory_request: Option<String>,

    /// Mount a PersistentVolumeClaim: CLAIM:/mount/path[:ro] (repeatable).
    #[arg(long, value_name = "CLAIM:PATH[:ro]")]
    pub pvc: Vec<String>,

    /// Mount a ConfigMap: NAME:/mount/path (repeatable).
    #[arg(long, value_name = "NAME:PATH")]
    pub config_map: Vec<String>,

    /// Mount a Secret as files: NAME:/mount/path (repeatable).
    #[arg(long, value_name = "NAME:PATH")]
    pub secret_volume: Vec<String>,

    /// Scratch space: /mount/path[:SIZE], e.g. /dev/shm:8Gi (repeatable).
    #[arg(long, value_name = "PATH[:SIZE]")]
    pub empty_dir: Vec<String>,

    /// Secret with registry credentials for pulling the image (repeatable).
    #[arg(long, value_name = "NAME")]
    pub image_pull_secret: Vec<String>,

    /// The pods' ServiceAccount.
    #[arg(long, value_name = "NAME")]
    pub service_account: Option<String>,

    /// Schedule only on nodes with this label: KEY=VALUE (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,

    /// Tolerate a taint: KEY[=VALUE]:EFFECT, EFFECT one of NoSchedule, PreferNoSchedule,
    /// NoExecute (repeatable).
    #[arg(long, value_name = "KEY[=VALUE]:EFFECT")]
    pub toleration: Vec<String>,

    /// The pods' priorityClassName (kube-scheduler priority and preemption).
    #[arg(long, value_name = "NAME")]
    pub pod_priority_class: Option<String>,

    /// Env var from a Secret key: NAME=SECRET/KEY, e.g. HF_TOKEN=hf/token (repeatable).
    #[arg(long, value_name = "NAME=SECRET/KEY")]
    pub env_from_secret: Vec<String>,
}

/// `--chief`: TensorFlow's cluster spec allows at most one chief task.
fn parse_chief(s: &str) -> Result<i32, String> {
    match s.trim().parse::<i32>() {
        Ok(n @ 0..=1) => Ok(n),
        Ok(n) => Err(format!(
            "a job has 0 or 1 chief, not {n} (TensorFlow refuses a cluster spec with two chief tasks); use --workers for more replicas"
        )),
        Err(_) => Err(format!("{s:?} is not a number; use 0 or 1")),
    }
}

/// How the model-gateway credentials reach the training containers.
#[derive(Debug, Clone, Default, Args)]
pub struct GatewayArgs {
    /// Secret holding the gateway API key [default: taotoken-secret].
    #[arg(long, value_name = "NAME")]
    pub api_secret: Option<String>,

    /// Key inside the Secret [default: api-key].
    #[arg(long, value_name = "KEY")]
    pub api_secret_key: Option<String>,

    /// Prefix of the env vars: PREFIX_API_KEY and PREFIX_BASE_URL [default: TAOTOKEN].
    #[arg(long, value_name = "PREFIX")]
    pub api_env_prefix: Option<String>,

    /// Gateway base URL, without a trailing /v1 [default: https://taotoken.net/api].
    #[arg(long, value_name = "URL")]
    pub api_base_url: Option<String>,

    /// Also set OPENAI_API_KEY and OPENAI_BASE_URL, for code that uses the openai SDK.
    #[arg(long)]
    pub openai_env: bool,

    /// Do not add any gateway env vars.
    #[arg(long, conflicts_with_all = ["api_secret", "api_secret_key", "api_env_prefix", "api_base_url", "openai_env"])]
    pub no_api_env: bool,

    /// Leave istio sidecar injection alone (by default pods get sidecar.istio.io/inject: "false",
    /// because the sidecar breaks the replicas' DNS/gRPC rendezvous).
    #[arg(long)]
    pub allow_istio_sidecar: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum DryRun {
    /// Really create the job.
    #[default]
    None,
    /// Render and validate offline; nothing is sent.
    Client,
    /// Run every check and a server-side dry run; nothing is stored.
    Server,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ManifestFormat {
    Yaml,
    Json,
    Name,
}

#[derive(Debug, Clone, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub render: RenderArgs,

    /// "client": render and validate only; "server": also all cluster checks and a server dry run.
    #[arg(long, value_enum, default_value = "none", num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: DryRun,

    /// Output format for the created (or dry-run) object.
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<ManifestFormat>,

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
    pub wait_opts: WaitOptions,
}

#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Manifest file(s) to validate; "-" reads stdin. Multi-document YAML is fine.
    #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
    pub files: Vec<String>,

    /// Output format for the findings.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,

    #[command(flatten)]
    pub gateway: GatewayArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct TemplatesArgs {
    #[command(subcommand)]
    pub action: Option<TemplatesAction>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TemplatesAction {
    /// List the built-in templates (the default).
    List,
    /// Print a built-in template's source.
    Show {
        /// Template name.
        name: String,
    },
}

/// What `wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum WaitFor {
    /// The operator has seen the job (Created condition).
    Created,
    /// The operator's Running condition (chief, or any worker, is running).
    #[default]
    Running,
    /// Every replica pod is Running.
    AllRunning,
    /// The Succeeded condition.
    Succeeded,
    /// Succeeded (exit 0) or Failed (exit 4).
    Finished,
}

#[derive(Debug, Clone, Args)]
pub struct WaitOptions {
    /// The condition to wait for.
    #[arg(long = "for", value_enum, default_value = "running")]
    pub wait_for: WaitFor,

    /// How long to wait (kubectl duration syntax: 30s, 10m, 1h). 0 checks once; negative waits a week.
    #[arg(long, default_value = "10m", value_parser = parse_signed_duration, allow_hyphen_values = true)]
    pub timeout: Duration,

    /// Give up when a pod has been unschedulable this long (default: wait for --timeout).
    #[arg(long, value_parser = parse_duration)]
    pub pending_timeout: Option<Duration>,

    /// How long image pull errors may persist before they count as fatal.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub image_pull_grace: Duration,
}

#[derive(Debug, Clone, Args)]
pub struct WaitArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    #[command(flatten)]
    pub opts: WaitOptions,

    /// Output: text (live progress on a terminal, a line per change otherwise) or json (NDJSON).
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,
}

#[derive(Debug, Clone, Args)]
pub struct DiagnoseArgs {
    /// TFJob name (or tfjob/NAME).
    pub name: String,

    /// Output format for the findings.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,

    /// Lines of the tensorflow container's log to show for crashing pods.
    #[arg(long, default_value_t = 20)]
    pub tail: i64,
}

#[derive(Debug, Clone, Args)]
pub struct SecretArgs {
    #[command(subcommand)]
    pub action: SecretAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum SecretAction {
    /// Store the gateway API key in a Secret, reading it from a hidden prompt, stdin, env or file.
    #[command(after_help = SECRET_CREATE_EXAMPLES)]
    Create(SecretCreateArgs),
    /// Check that the Secret and key exist (the value is never printed).
    Check(SecretCheckArgs),
}

#[derive(Debug, Clone, Args)]
pub struct SecretCreateArgs {
    /// Secret name.
    #[arg(default_value = "taotoken-secret")]
    pub name: String,

    /// Key inside the Secret.
    #[arg(long, default_value = "api-key")]
    pub key: String,

    /// Gateway base URL, stored beside the key under `base-url`.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Read the key from stdin (one line; the trailing newline is stripped).
    #[arg(long, group = "source")]
    pub from_stdin: bool,

    /// Read the key from this environment variable.
    #[arg(long, value_name = "VAR", group = "source")]
    pub from_env: Option<String>,

    /// Read the key from a file.
    #[arg(long, value_name = "PATH", group = "source")]
    pub from_file: Option<PathBuf>,

    /// The key itself. Discouraged: it lands in shell history and `ps`.
    #[arg(long, value_name = "KEY", group = "source")]
    pub from_literal: Option<String>,

    /// Replace an existing Secret whose content differs.
    #[arg(long)]
    pub overwrite: bool,

    /// Call GET {base-url}/v1/models with the key before storing it.
    #[arg(long)]
    pub verify: bool,

    /// Print what would be stored (data masked) instead of storing it.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<DryRun>,

    /// Output format with --dry-run.
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<ManifestFormat>,
}

#[derive(Debug, Clone, Args)]
pub struct SecretCheckArgs {
    /// Secret name.
    #[arg(default_value = "taotoken-secret")]
    pub name: String,

    /// Key inside the Secret.
    #[arg(long, default_value = "api-key")]
    pub key: String,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = COMPLETION_HELP)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Parses a kubectl (Go `time.ParseDuration`) duration: "90s", "10m", "1h30m", "250ms", or a bare
/// number of seconds as kubectl's `--request-timeout` accepts.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration; use e.g. 30s, 10m or 1h".into());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("invalid duration {s:?}: missing unit (ns, us, ms, s, m, h)"))?;
        if num_len == 0 {
            return Err(format!(
                "invalid duration {s:?}: expected a number, e.g. 30s, 10m or 1h"
            ));
        }
        let value: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("invalid duration {s:?}"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            unit => {
                return Err(format!(
                    "invalid duration {s:?}: unknown unit {unit:?} (use ns, us, ms, s, m or h)"
                ));
            }
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    if !total.is_finite() || total > 1e12 {
        return Err(format!("invalid duration {s:?}: too large"));
    }
    Ok(Duration::from_secs_f64(total))
}

/// Like [`parse_duration`], but a negative value means "a week", as in `kubectl wait --timeout=-1s`.
pub fn parse_signed_duration(s: &str) -> Result<Duration, String> {
    match s.trim().strip_prefix('-') {
        Some(rest) => parse_duration(rest).map(|_| Duration::from_secs(7 * 24 * 3600)),
        None => parse_duration(s),
    }
}

const RENDER_EXAMPLES: &str = "\
Examples:
  # The article's job: 1 parameter server and 3 workers with one GPU each
  kubectl tfjob render --name tf-dist-train --image tensorflow/tensorflow:2.13.0-gpu \\
      --ps 1 --workers 3 --gpus 1 -- python -m trainer.task --batch_size=32

  # MultiWorkerMirroredStrategy with a chief, values from a file, one override
  kubectl tfjob render -t chief-worker -f values.yaml --set worker.replicas=8

  # Your own template
  kubectl tfjob render --template ./my-job.yaml.j2 -f values.yaml";

const SUBMIT_EXAMPLES: &str = "\
Examples:
  # Render, check and create the article's job, then follow it to Running
  kubectl tfjob submit --name tf-dist-train --image tensorflow/tensorflow:2.13.0-gpu \\
      --ps 1 --workers 3 --gpus 1 --wait -- python -m trainer.task

  # Submit an existing manifest (credentials are injected and checked the same way)
  kubectl tfjob submit -f tfjob.yaml

  # Everything but the final write: readiness checks and a server-side dry run
  kubectl tfjob submit -f tfjob.yaml --dry-run=server

  # Offline only: render and validate, print YAML
  kubectl tfjob submit -f values.yaml --dry-run=client -o yaml";

const VALIDATE_EXAMPLES: &str = "\
Examples:
  # Validate a manifest
  kubectl tfjob validate -f tfjob.yaml

  # Several documents from stdin, findings as JSON
  cat jobs.yaml | kubectl tfjob validate -f - -o json";

const WAIT_EXAMPLES: &str = "\
Examples:
  # Wait until the operator reports Running (default timeout 10m)
  kubectl tfjob wait tf-dist-train

  # Wait until every replica pod runs, give up if a pod is unschedulable for 2 minutes
  kubectl tfjob wait tf-dist-train --for all-running --pending-timeout 2m

  # In CI: one JSON object per change
  kubectl tfjob wait tf-dist-train --for finished --timeout 2h -o json";

const COMPLETION_HELP: &str = "\
For `kubectl-tfjob <TAB>`:
  source <(kubectl-tfjob completion bash)

For `kubectl tfjob <TAB>` (kubectl 1.26 or newer): put the kubectl_complete-tfjob script from the
release (or the repository) on your PATH next to kubectl-tfjob.";

const DIAGNOSE_EXAMPLES: &str = "\
Examples:
  kubectl tfjob diagnose tf-dist-train
  kubectl tfjob diagnose tf-dist-train -n team-a -o json";

const SECRET_CREATE_EXAMPLES: &str = "\
Examples:
  # Type the key at a hidden prompt
  kubectl tfjob secret create -n team-a

  # From a password manager, never touching argv or disk
  pass show taotoken | kubectl tfjob secret create --from-stdin

  # Check the key against the gateway first
  kubectl tfjob secret create --from-env TAOTOKEN_API_KEY --verify";

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_follow_go_syntax() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert!(parse_duration("10x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(
            parse_signed_duration("-1s").unwrap(),
            Duration::from_secs(7 * 24 * 3600)
        );
    }
}
