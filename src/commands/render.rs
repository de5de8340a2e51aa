//! `kubectl tfjob render`: the job-shaping flags (shared with `submit`) and the gateway flags
//! (shared with `validate`).

use clap::Args;

use crate::error::Result;
use crate::gateway::GatewayOptions;
use crate::ops::Context;
use crate::output::Output;
use crate::pipeline::render::{PodOptions, RenderOptions};

// (A plain comment, not a doc comment: a flattened struct's doc would become the `about` of
// every subcommand that flattens it, once clap runs the deferred arguments; see commands::Command.)
// Where a job comes from and everything that shapes it. Shared by `render` and `submit`.
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

    /// Let the API server name the job: PREFIX plus 5 random characters (metadata.generateName,
    /// as `kubectl create` uses it). `submit` prints the generated name and follows it.
    #[arg(long, value_name = "PREFIX", conflicts_with = "name")]
    pub generate_name: Option<String>,

    /// Render or submit even though a container holds a literal credential (an API key in
    /// `env` or `args`). Anyone who may read the TFJob can read the key; prefer a Secret.
    #[arg(long)]
    pub allow_literal_credentials: bool,

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

    /// CPU limit of every role that does not set its own (--ps-cpu, ps.cpu in a values file,
    /// --set ps.cpu=…), e.g. 4 or 500m. render and submit print what each role got.
    #[arg(long, value_name = "QUANTITY")]
    pub cpu: Option<String>,

    /// Memory limit of every role that does not set its own (--ps-memory, …), e.g. 8Gi.
    #[arg(long, value_name = "QUANTITY")]
    pub memory: Option<String>,

    /// CPU limit of the parameter servers (over --cpu and values files).
    #[arg(long, value_name = "QUANTITY")]
    pub ps_cpu: Option<String>,

    /// Memory limit of the parameter servers (over --memory and values files).
    #[arg(long, value_name = "QUANTITY")]
    pub ps_memory: Option<String>,

    /// CPU limit of the workers (over --cpu and values files).
    #[arg(long, value_name = "QUANTITY")]
    pub worker_cpu: Option<String>,

    /// Memory limit of the workers (over --memory and values files).
    #[arg(long, value_name = "QUANTITY")]
    pub worker_memory: Option<String>,

    /// CPU limit of the chief (over --cpu and values files).
    #[arg(long, value_name = "QUANTITY")]
    pub chief_cpu: Option<String>,

    /// Memory limit of the chief (over --memory and values files).
    #[arg(long, value_name = "QUANTITY")]
    pub chief_memory: Option<String>,

    /// CPU limit of the evaluator (over --cpu and values files).
    #[arg(long, value_name = "QUANTITY")]
    pub evaluator_cpu: Option<String>,

    /// Memory limit of the evaluator (over --memory and values files).
    #[arg(long, value_name = "QUANTITY")]
    pub evaluator_memory: Option<String>,

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
    #[arg(long, value_name = "NAME", value_parser = parse_queue_name)]
    pub queue: Option<String>,

    /// runPolicy.schedulingPolicy.priorityClass: the gang PodGroup's priority (Volcano,
    /// scheduler-plugins). For the pods' own priority use --pod-priority-class.
    #[arg(long, value_name = "NAME")]
    pub priority_class: Option<String>,

    /// Kueue's LocalQueue for the job: sets the kueue.x-k8s.io/queue-name label on the TFJob
    /// (Kueue then holds it suspended until admitted). --queue is the gang scheduler's queue.
    #[arg(long, value_name = "NAME", value_parser = parse_queue_name)]
    pub local_queue: Option<String>,

    #[command(flatten)]
    pub pod: PodArgs,

    #[command(flatten)]
    pub gateway: GatewayArgs,

    /// Command (and args) for the tensorflow containers, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

// Values that describe real jobs (issue 15), applied to every role's pods; per role with
// `--set worker.volumes=…` or a values file. Also `--set-string`/`--set-file`.
#[derive(Debug, Clone, Default, Args)]
pub struct PodArgs {
    /// Set a value as a string, never typed (e.g. --set-string labels.version=2). Repeatable.
    #[arg(long = "set-string", value_name = "KEY=VALUE")]
    pub set_string: Vec<String>,

    /// Set a value from a file's content (e.g. --set-file env.FLAGS=./flags.txt). Repeatable.
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

impl From<PodArgs> for PodOptions {
    fn from(a: PodArgs) -> Self {
        PodOptions {
            per_role: Vec::new(),
            set_string: a.set_string,
            set_file: a.set_file,
            cpu_request: a.cpu_request,
            memory_request: a.memory_request,
            pvc: a.pvc,
            config_map: a.config_map,
            secret_volume: a.secret_volume,
            empty_dir: a.empty_dir,
            image_pull_secret: a.image_pull_secret,
            service_account: a.service_account,
            node_selector: a.node_selector,
            toleration: a.toleration,
            pod_priority_class: a.pod_priority_class,
            env_from_secret: a.env_from_secret,
        }
    }
}

/// `--chief`: TensorFlow's cluster spec allows at most one chief task.
/// A queue's name: an empty one would be dropped without a word (no label, the default queue),
/// so it is refused; leave the flag out for no queue.
fn parse_queue_name(s: &str) -> std::result::Result<String, String> {
    if s.trim().is_empty() {
        return Err("a queue name cannot be empty; leave the flag out for no queue".into());
    }
    Ok(s.to_string())
}

fn parse_chief(s: &str) -> std::result::Result<i32, String> {
    match s.trim().parse::<i32>() {
        Ok(n @ 0..=1) => Ok(n),
        Ok(n) => Err(format!(
            "a job has 0 or 1 chief, not {n} (TensorFlow refuses a cluster spec with two chief tasks); use --workers for more replicas"
        )),
        Err(_) => Err(format!("{s:?} is not a number; use 0 or 1")),
    }
}

// How the model-gateway credentials reach the training containers.
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

    /// Gateway base URL, without a trailing /v1 [default: submit uses the gateway Secret's
    /// base-url key when it has one (see `secret create --base-url`), else https://taotoken.net/api;
    /// render, offline, always the latter].
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

    /// With -f MANIFEST: add the gateway env vars and the istio opt-out as for a template (a
    /// manifest is otherwise sent exactly as written, as `kubectl create -f` sends it).
    #[arg(long, conflicts_with = "no_api_env")]
    pub inject_gateway_env: bool,
}

impl From<RenderArgs> for RenderOptions {
    fn from(a: RenderArgs) -> Self {
        RenderOptions {
            template: a.template,
            files: a.files,
            set: a.set,
            name: a.name,
            generate_name: a.generate_name,
            allow_literal_credentials: a.allow_literal_credentials,
            image: a.image,
            ps: a.ps,
            workers: a.workers,
            chief: a.chief,
            evaluator: a.evaluator,
            gpus: a.gpus,
            cpu: a.cpu,
            memory: a.memory,
            labels: a.labels,
            annotations: a.annotations,
            env: a.env,
            restart_policy: a.restart_policy,
            clean_pod_policy: a.clean_pod_policy,
            backoff_limit: a.backoff_limit,
            active_deadline_seconds: a.active_deadline_seconds,
            ttl_seconds_after_finished: a.ttl_seconds_after_finished,
            success_policy: a.success_policy,
            queue: a.queue,
            priority_class: a.priority_class,
            local_queue: a.local_queue,
            pod: {
                let mut pod: PodOptions = a.pod.into();
                for (role, key, v) in [
                    ("ps", "cpu", a.ps_cpu),
                    ("ps", "memory", a.ps_memory),
                    ("worker", "cpu", a.worker_cpu),
                    ("worker", "memory", a.worker_memory),
                    ("chief", "cpu", a.chief_cpu),
                    ("chief", "memory", a.chief_memory),
                    ("evaluator", "cpu", a.evaluator_cpu),
                    ("evaluator", "memory", a.evaluator_memory),
                ] {
                    if let Some(value) = v {
                        pod.per_role.push(crate::pipeline::values::RoleResource {
                            role,
                            key,
                            value,
                        });
                    }
                }
                pod
            },
            gateway: a.gateway.into(),
            command: a.command,
        }
    }
}

impl From<GatewayArgs> for GatewayOptions {
    fn from(a: GatewayArgs) -> Self {
        GatewayOptions {
            api_secret: a.api_secret,
            api_secret_key: a.api_secret_key,
            api_env_prefix: a.api_env_prefix,
            api_base_url: a.api_base_url,
            openai_env: a.openai_env,
            no_api_env: a.no_api_env,
            allow_istio_sidecar: a.allow_istio_sidecar,
            inject_gateway_env: a.inject_gateway_env,
        }
    }
}

pub fn exec(ctx: Context, args: RenderArgs, out: &mut Output) -> Result<()> {
    crate::ops::render::run(&ctx, args.into(), out)
}

pub(super) const RENDER_EXAMPLES: &str = "\
Examples:
  # The article's job: 1 parameter server and 3 workers with one GPU each
  kubectl tfjob render --name tf-dist-train --image tensorflow/tensorflow:2.13.0-gpu \\
      --ps 1 --workers 3 --gpus 1 -- python -m trainer.task --batch_size=32

  # MultiWorkerMirroredStrategy with a chief, values from a file, one override
  kubectl tfjob render -t chief-worker -f values.yaml --set worker.replicas=8

  # Your own template
  kubectl tfjob render --template ./my-job.yaml.j2 -f values.yaml";
