//! The `render`/`submit` flags as plain option types (clap-free): where a job comes from and
//! everything that shapes it. They live here, at the pipeline's input, so `values` reads them
//! without importing `render`.

/// Where a job comes from and everything that shapes it (the `render`/`submit` flags, clap-free).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Built-in template name (see `kubectl tfjob templates`) or path to a template file.
    pub template: Option<String>,

    /// A values file, or a complete TFJob manifest ("-" reads stdin). Repeatable; later values
    /// files win. A file whose document has `apiVersion` and `kind` is taken as a manifest.
    pub files: Vec<String>,

    /// Set a value, e.g. --set worker.replicas=4 --set image=my/img:1 (repeatable; wins over files).
    pub set: Vec<String>,

    /// The TFJob name.
    pub name: Option<String>,

    /// metadata.generateName instead of a name: the API server appends 5 characters.
    pub generate_name: Option<String>,

    /// Render/submit even with a literal credential in the job (otherwise refused).
    pub allow_literal_credentials: bool,

    /// Container image for every replica (override per role with --set ps.image=…).
    pub image: Option<String>,

    /// Number of parameter servers.
    pub ps: Option<i32>,

    /// Number of workers.
    pub workers: Option<i32>,

    /// Number of chief replicas (0 or 1).
    pub chief: Option<i32>,

    /// Number of evaluator replicas.
    pub evaluator: Option<i32>,

    /// GPUs (nvidia.com/gpu) per worker (and chief); negative counts are refused by values.
    pub gpus: Option<i64>,

    /// CPU limit per worker (and chief), e.g. 4 or 500m.
    pub cpu: Option<String>,

    /// Memory limit per worker (and chief), e.g. 8Gi.
    pub memory: Option<String>,

    /// Label for the TFJob and its pods (repeatable).
    pub labels: Vec<String>,

    /// Annotation for the TFJob (repeatable).
    pub annotations: Vec<String>,

    /// Extra env var for the tensorflow containers (repeatable). Use a Secret for credentials.
    pub env: Vec<String>,

    /// Replica restartPolicy: Always, OnFailure, Never or ExitCode.
    pub restart_policy: Option<String>,

    /// runPolicy.cleanPodPolicy: All, Running or None.
    pub clean_pod_policy: Option<String>,

    /// runPolicy.backoffLimit.
    pub backoff_limit: Option<i32>,

    /// runPolicy.activeDeadlineSeconds.
    pub active_deadline_seconds: Option<i64>,

    /// runPolicy.ttlSecondsAfterFinished.
    pub ttl_seconds_after_finished: Option<i32>,

    /// successPolicy: "" (worker-0 decides) or AllWorkers.
    pub success_policy: Option<String>,

    /// runPolicy.schedulingPolicy.queue (gang scheduling).
    pub queue: Option<String>,

    /// runPolicy.schedulingPolicy.priorityClass (the gang PodGroup's priority).
    pub priority_class: Option<String>,

    /// Kueue's LocalQueue: the `kueue.x-k8s.io/queue-name` label on the TFJob (not its pods).
    pub local_queue: Option<String>,

    /// Pod settings for every role and the other `--set` forms.
    pub pod: PodOptions,

    pub gateway: crate::gateway::GatewayOptions,

    /// Command (and args) for the tensorflow containers, after `--`.
    pub command: Vec<String>,
}

/// Values that describe real jobs, for every role's pods, and Helm's other `--set` forms. Each
/// list holds the flag's arguments as typed (parsed by [`super::flags_overlay`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodOptions {
    /// `--set-string KEY=VALUE`: values kept as text.
    pub set_string: Vec<String>,
    /// `--set-file KEY=PATH`: values read from files (bounded).
    pub set_file: Vec<String>,
    pub cpu_request: Option<String>,
    pub memory_request: Option<String>,
    /// `CLAIM:/mount/path[:ro]`.
    pub pvc: Vec<String>,
    /// `NAME:/mount/path`.
    pub config_map: Vec<String>,
    /// `NAME:/mount/path`.
    pub secret_volume: Vec<String>,
    /// `/mount/path[:SIZE]`.
    pub empty_dir: Vec<String>,
    pub image_pull_secret: Vec<String>,
    pub service_account: Option<String>,
    /// `KEY=VALUE`.
    pub node_selector: Vec<String>,
    /// `KEY[=VALUE]:EFFECT`.
    pub toleration: Vec<String>,
    /// The pods' priorityClassName.
    pub pod_priority_class: Option<String>,
    /// `NAME=SECRET/KEY`.
    pub env_from_secret: Vec<String>,
    /// `--ps-cpu`, `--worker-memory`, …: a role's own cpu/memory.
    pub per_role: Vec<super::RoleResource>,
}
