//! Scenario: the data a test writes to describe the cluster it wants.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// How much of the training-operator is present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum OperatorMode {
    /// CRD installed, operator Deployment ready, webhook validating, jobs reconciled.
    #[default]
    Running,
    /// CRD installed, Deployment with 0 ready replicas, nothing reconciles.
    Installed,
    /// No CRD, no Deployment: kubeflow.org paths are 404.
    Absent,
}

fn de_quantity<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Q {
        S(String),
        I(i64),
        F(f64),
    }
    Ok(match Q::deserialize(d)? {
        Q::S(s) => s,
        Q::I(i) => i.to_string(),
        Q::F(f) => f.to_string(),
    })
}

/// A count given as a number or a string (`gpu: "4"`).
fn de_count<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let q = de_quantity(d)?;
    q.trim()
        .parse()
        .map_err(|_| serde::de::Error::custom(format!("expected a count, got {q:?}")))
}

/// A node taint.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// NoSchedule, PreferNoSchedule or NoExecute.
    pub effect: String,
}

/// A node of the simulated cluster.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSpec {
    /// Node name.
    pub name: String,
    /// Allocatable CPU (quantity).
    #[serde(deserialize_with = "de_quantity")]
    pub cpu: String,
    /// Allocatable memory (quantity).
    #[serde(deserialize_with = "de_quantity")]
    pub memory: String,
    /// Allocatable `nvidia.com/gpu`.
    #[serde(deserialize_with = "de_count")]
    pub gpu: u32,
    /// Max pods (kubelet default 110).
    #[serde(deserialize_with = "de_count")]
    pub pods: u32,
    /// Taints.
    pub taints: Vec<Taint>,
    /// Extra labels (kubernetes.io/hostname is added).
    pub labels: std::collections::BTreeMap<String, String>,
    /// Cordoned (`spec.unschedulable`, with the node.kubernetes.io/unschedulable taint).
    pub unschedulable: bool,
}

impl Default for NodeSpec {
    fn default() -> Self {
        NodeSpec {
            name: "node-1".into(),
            cpu: "16".into(),
            memory: "64Gi".into(),
            gpu: 4,
            pods: 110,
            taints: vec![],
            labels: Default::default(),
            unschedulable: false,
        }
    }
}

impl NodeSpec {
    /// A node with the given name and capacity.
    pub fn new(name: &str, cpu: &str, memory: &str, gpu: u32) -> Self {
        NodeSpec {
            name: name.into(),
            cpu: cpu.into(),
            memory: memory.into(),
            gpu,
            ..Default::default()
        }
    }
}

/// Which containers a behaviour applies to. All given fields must match.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerMatch {
    /// Replica type, case-insensitive (`worker`, `PS`).
    pub replica_type: Option<String>,
    /// Replica index.
    pub index: Option<u32>,
    /// Pod name glob (`x-worker-*`).
    pub pod_name: Option<String>,
    /// Container name (default: the `tensorflow` container, or the first).
    pub container: Option<String>,
}

/// What a matched container does once running.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerBehaviour {
    /// Which containers.
    #[serde(rename = "match")]
    pub matches: ContainerMatch,
    /// Exit with this code after `run_ms`.
    pub exit_code: Option<i32>,
    /// How long the container runs before exiting (default 50ms when an exit is configured).
    pub run_ms: Option<u64>,
    /// Exit the same way after every restart (CrashLoopBackOff); otherwise a restarted container keeps running.
    pub crash_loop: bool,
    /// Exit on this many starts, then keep running once restarted (default 1; `crashLoop`
    /// overrides it). "Crash twice while the PS comes up, then train."
    pub crash_times: Option<u32>,
    /// Terminate with reason OOMKilled, exit code 137.
    pub oom_killed: bool,
    /// Text served by the pods/log subresource for this container.
    pub log: Option<String>,
    /// Instead of exiting after `runMs`, the pod is disrupted (on its first start, once per
    /// replica: the pod recreated under its name runs on): evicted by the kubelet, preempted by
    /// the scheduler, or its node goes NotReady (issue 37).
    pub disruption: Option<Disruption>,
}

/// How a running pod is taken away from under its job (see `kubelet::disrupt`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Disruption {
    /// The kubelet evicts it for memory pressure: phase Failed, reason Evicted, its message.
    Evicted,
    /// kube-scheduler preempts it: DisruptionTarget PreemptionByScheduler, then deleted.
    Preempted,
    /// Its node stops reporting: node Ready Unknown, then the taint manager deletes the pod.
    NodeNotReady,
}

/// Small delays of the simulated components (milliseconds).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Timing {
    /// Operator debounce before a reconcile.
    pub reconcile_ms: u64,
    /// Scheduler delay.
    pub schedule_ms: u64,
    /// Image pull time.
    pub pull_ms: u64,
    /// Container create/start time.
    pub start_ms: u64,
    /// Delay from ErrImagePull to ImagePullBackOff.
    pub image_pull_back_off_ms: u64,
    /// Crash-loop back-off between restarts.
    pub crash_back_off_ms: u64,
    /// Kubelet retry interval for CreateContainerConfigError.
    pub config_retry_ms: u64,
    /// Quiet period after which a watch with allowWatchBookmarks gets a BOOKMARK.
    pub bookmark_ms: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            reconcile_ms: 10,
            schedule_ms: 10,
            pull_ms: 20,
            start_ms: 20,
            image_pull_back_off_ms: 200,
            crash_back_off_ms: 100,
            config_retry_ms: 100,
            bookmark_ms: 1000,
        }
    }
}

/// One RBAC denial rule; `*` or absent matches anything.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct RbacRule {
    /// User name the rule applies to (absent: every user).
    pub user: Option<String>,
    /// Verb (get, list, watch, create, update, patch, delete, deletecollection).
    pub verb: Option<String>,
    /// Resource plural.
    pub resource: Option<String>,
    /// Namespace.
    pub namespace: Option<String>,
}

/// RBAC for the test user: everything is allowed except `deny` rules.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Rbac {
    /// Denied combinations.
    pub deny: Vec<RbacRule>,
}

/// Which requests a fault applies to; absent fields match anything.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct FaultMatch {
    /// Verb (get, list, watch, create, update, patch, delete, deletecollection).
    pub verb: Option<String>,
    /// Resource plural.
    pub resource: Option<String>,
    /// Subresource (status, log).
    pub subresource: Option<String>,
    /// Namespace.
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
    /// HTTP method.
    pub method: Option<String>,
}

/// An injected fault.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Fault {
    /// Which requests.
    #[serde(rename = "match")]
    pub matches: FaultMatch,
    /// Answer with this status code (Status body with the apiserver's reason).
    pub status: Option<u16>,
    /// Status message override.
    pub message: Option<String>,
    /// `Retry-After` seconds (429 defaults to 1).
    pub retry_after_seconds: Option<u64>,
    /// How many matching requests are affected (0 = forever).
    pub times: u32,
    /// Let the first N matching requests through untouched.
    pub skip: u32,
    /// Watches: end the stream cleanly after K events.
    pub close_after_events: Option<usize>,
    /// Watches: a re-watch with a non-empty resourceVersion gets a 410 Expired ERROR event.
    pub gone_on_rewatch: bool,
    /// Delay before handling.
    pub latency_ms: Option<u64>,
    /// Abort the connection without a response.
    pub reset: bool,
    /// Handle the request (a create is stored), then abort the connection instead of
    /// answering: the reply is lost although the write was committed.
    pub drop_reply: bool,
    /// Answer 200 and then send bytes without a newline, for ever (until the client hangs up):
    /// for a watch an event that never ends, for a log a line that never ends, else a body that
    /// never ends. A hostile or broken server; kube-apiserver never does this.
    pub endless_body: bool,
    /// With `status`: the request body is appended to the Status message, as a policy webhook's
    /// denial that quotes the object does (`... denied the request: <object>`).
    pub echo_body: bool,
    /// Hold the request, before handling it, until the test calls `TestCluster::release`: a
    /// test changes the cluster between a client's read and its write without a sleep.
    pub hold: bool,
}

impl Default for Fault {
    fn default() -> Self {
        Fault {
            matches: FaultMatch::default(),
            status: None,
            message: None,
            retry_after_seconds: None,
            times: 1,
            skip: 0,
            close_after_events: None,
            gone_on_rewatch: false,
            latency_ms: None,
            reset: false,
            drop_reply: false,
            endless_body: false,
            echo_body: false,
            hold: false,
        }
    }
}

impl Fault {
    /// A fault for `verb` on `resource` answering `status`.
    pub fn status(verb: &str, resource: &str, status: u16) -> Self {
        Fault {
            matches: FaultMatch {
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                ..Default::default()
            },
            status: Some(status),
            ..Default::default()
        }
    }
    /// Only requests for this object name.
    pub fn named(mut self, name: &str) -> Self {
        self.matches.name = Some(name.into());
        self
    }
    /// Affect `n` matching requests (0 = forever).
    pub fn times(mut self, n: u32) -> Self {
        self.times = n;
        self
    }
    /// Let the first `n` matches through.
    pub fn skip(mut self, n: u32) -> Self {
        self.skip = n;
        self
    }
    /// Set Retry-After.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_seconds = Some(secs);
        self
    }
    /// Every `pods/log` read answers 500 as kube-apiserver does when it cannot reach the
    /// pod's kubelet: the node has no address of a preferred type (`pkg/util/node`
    /// GetPreferredNodeAddress's NoMatchError, which `kubectl logs` prints as
    /// `Error from server: no preferred addresses found; known addresses: []`).
    pub fn kubelet_logs_unavailable() -> Self {
        Fault {
            matches: FaultMatch {
                verb: Some("get".into()),
                resource: Some("pods".into()),
                subresource: Some("log".into()),
                ..Default::default()
            },
            status: Some(500),
            message: Some("no preferred addresses found; known addresses: []".into()),
            times: 0,
            ..Default::default()
        }
    }
    /// A matcher-only fault to be combined with the effect builders below.
    pub fn on(verb: &str, resource: &str) -> Self {
        Fault {
            matches: FaultMatch {
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }
    /// End watches after `k` events.
    pub fn close_after_events(mut self, k: usize) -> Self {
        self.close_after_events = Some(k);
        self
    }
    /// Re-watches get 410 Expired.
    pub fn gone_on_rewatch(mut self) -> Self {
        self.gone_on_rewatch = true;
        self
    }
    /// Add latency.
    pub fn latency_ms(mut self, ms: u64) -> Self {
        self.latency_ms = Some(ms);
        self
    }
    /// Reset the connection.
    pub fn reset(mut self) -> Self {
        self.reset = true;
        self
    }
    /// Commit the request, then lose the reply (see [`Fault::drop_reply`]).
    pub fn drop_reply(mut self) -> Self {
        self.drop_reply = true;
        self
    }

    /// See [`Fault::endless_body`].
    pub fn endless_body(mut self) -> Self {
        self.endless_body = true;
        self
    }
}

/// The whole test-cluster description. Every field is optional.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Scenario {
    /// Operator presence.
    pub operator: OperatorMode,
    /// Where the operator Deployment lives.
    pub operator_namespace: String,
    /// Namespaces created at start (the operator namespace is added).
    pub namespaces: Vec<String>,
    /// Nodes (default: three 16-CPU/64Gi/4-GPU nodes).
    pub nodes: Vec<NodeSpec>,
    /// Images the registry does not have: the pull fails with containerd's `NotFound`
    /// (ErrImagePull → ImagePullBackOff), permanent until the image is pushed.
    pub missing_images: Vec<String>,
    /// Images whose registry cannot be reached (a network timeout: `code = Unknown`), the
    /// transient kind of pull failure, in the same ErrImagePull → ImagePullBackOff cycle.
    pub unreachable_images: Vec<String>,
    /// Per-container exit/crash/log behaviour.
    pub container_behaviour: Vec<ContainerBehaviour>,
    /// When set, `tensorflow` containers exit 0 after this long.
    pub succeed_after_ms: Option<u64>,
    /// Component delays.
    pub timing: Timing,
    /// Objects created at start (namespaces, secrets, TFJobs, ...).
    pub objects: Vec<Value>,
    /// Denials for the test user.
    pub rbac: Rbac,
    /// Injected faults.
    pub faults: Vec<Fault>,
    /// A CRD object to serve instead of the built-in tfjobs.kubeflow.org (e.g. the upstream one).
    pub crd: Option<Value>,
    /// Restrict the TFJob CRD's served versions (e.g. `[v1beta1]` to simulate skew).
    pub served_versions: Option<Vec<String>>,
    /// The TFJob validating webhook is registered but nothing answers it (operator pod not
    /// ready): TFJob creates/updates fail with 500 InternalError `failed calling webhook ...`.
    pub webhook_unavailable: bool,
    /// Watch history window (events); older resourceVersions get 410.
    pub watch_history: usize,
    /// Kubernetes version reported by /version.
    pub kubernetes_version: String,
    /// Bearer token accepted (kubeconfig user "tester").
    pub token: String,
    /// HTTPS and authentication (client certificates, token table, exec plugin); plain
    /// HTTP with the legacy token rule by default. See auth.rs.
    pub security: crate::auth::Security,
    /// Serve `metrics.k8s.io/v1beta1` (PodMetrics of running pods, see metrics.rs), as a
    /// cluster with metrics-server does; `false` is a cluster without it.
    pub metrics_api: bool,
    /// JobSet v0.12 (CRD, webhooks, controller in jobset-system): `absent` (default),
    /// `installed` (CRD, controller not ready) or `running`.
    pub jobset: OperatorMode,
    /// Kueue (CRDs, webhooks, controller); absent: not installed. See `KueueConfig`.
    pub kueue: Option<crate::queueing::KueueConfig>,
    /// The training-operator's `--gang-scheduler-name`: `volcano` or `scheduler-plugins`
    /// (PodGroup CRD installed, the operator creates PodGroups, a stand-in schedules them).
    pub gang_scheduler: Option<crate::queueing::GangScheduler>,
    /// The gang scheduler (and scheduler-plugins' PodGroup controller) runs. False: the
    /// PodGroups keep an empty status and their pods are never scheduled.
    pub gang_scheduler_running: bool,
    /// The model gateway that every base URL the pods name reaches, as `pods/exec` sees it
    /// (exec.rs): `GET …/v1/models` answers 200 for this key, 401 for any other, and 404 for a
    /// path with `/v1/v1`. None: no gateway answers (the name does not resolve, as in a
    /// sandbox without internet).
    pub gateway_key: Option<String>,
    /// The NVIDIA device files every container finds under /dev (`probe`'s GPU check). None:
    /// as many as the container requested (`nvidia.com/gpu`), as the device plugin and the
    /// NVIDIA container runtime give them; `0`: a node whose runtime mounts none.
    pub gpu_devices: Option<u32>,
    /// Which programs each image has for `pods/exec` (exec.rs). The first entry whose `image`
    /// is a substring of the container's image wins; other images have [`DEFAULT_TOOLS`].
    pub image_tools: Vec<ImageTools>,
    /// A Prometheus scraping DCGM's exporter, reached through the service proxy (`top`'s GPU
    /// use; prometheus.rs). None: no Prometheus is installed.
    pub prometheus: Option<crate::prometheus::PrometheusSim>,
    /// What the GPUs given to each pod do, as DCGM and `nvidia-smi` (an image that has it,
    /// `imageTools`) report it; see prometheus.rs.
    pub gpu_use: Vec<crate::prometheus::GpuUseSpec>,
    /// Objects the API server refuses, on create, update and dry run (refusals.rs): Pod
    /// validation, a custom resource's schema, a validating webhook. The outcome is set here
    /// rather than computed: those rules are the real components', held to them in tests/real.
    pub refusals: Vec<Refusal>,
}

/// Objects of `resource` whose name starts with `name` are refused with these causes.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Refusal {
    /// The resource's plural: `pods` (the default), `tfjobs`, …
    pub resource: String,
    /// A prefix of the object's name (`tf-dist-train-worker-`).
    pub name: String,
    /// The validating webhook that denies it (403, `admission webhook "W" denied the request:
    /// …`), e.g. `validator.tfjob.training-operator.kubeflow.org`; none: the API server's own
    /// validation (422 Invalid).
    pub webhook: Option<String>,
    /// apimachinery's causes, e.g. `spec.containers[0].imagePullPolicy` and
    /// `Unsupported value: "IfNotPresnt": supported values: "Always", "IfNotPresent", "Never"`.
    pub causes: Vec<RefusalCause>,
}

impl Default for Refusal {
    fn default() -> Self {
        Refusal {
            resource: "pods".into(),
            name: String::new(),
            webhook: None,
            causes: vec![],
        }
    }
}

/// One field error of a refusal.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct RefusalCause {
    /// apimachinery's field path, e.g. `spec.dnsPolicy`.
    pub field: String,
    /// The message after the field: its first words give the cause's reason, as apimachinery
    /// prints them (`Unsupported value`, `Required value`, `Invalid value`, …).
    pub message: String,
    /// The cause's reason where the words do not tell it: a schema's type error reads
    /// `Invalid value: …` and is `FieldValueTypeInvalid` (field/errors.go `TypeInvalid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The programs `pods/exec` finds in a training image unless [`Scenario::image_tools`] says
/// otherwise: what the TensorFlow images ship (python3, a POSIX shell, coreutils).
pub const DEFAULT_TOOLS: &[&str] = &["sh", "python3", "env", "printenv", "cat"];

/// The programs an image has (`tools: []` is a distroless image: no shell, nothing to run).
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ImageTools {
    /// A substring of the container's image.
    pub image: String,
    /// Program names found on the image's PATH.
    pub tools: Vec<String>,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            operator: OperatorMode::Running,
            operator_namespace: "kubeflow".into(),
            namespaces: vec!["default".into(), "kubeflow".into()],
            nodes: (1..=3)
                .map(|i| NodeSpec {
                    name: format!("node-{i}"),
                    ..Default::default()
                })
                .collect(),
            missing_images: vec![],
            unreachable_images: vec![],
            container_behaviour: vec![],
            succeed_after_ms: None,
            timing: Timing::default(),
            objects: vec![],
            rbac: Rbac::default(),
            faults: vec![],
            crd: None,
            served_versions: None,
            webhook_unavailable: false,
            watch_history: 10_000,
            kubernetes_version: "v1.36.1".into(),
            token: "test-token".into(),
            security: crate::auth::Security::default(),
            metrics_api: true,
            jobset: OperatorMode::Absent,
            kueue: None,
            gang_scheduler: None,
            gang_scheduler_running: true,
            gateway_key: None,
            gpu_devices: None,
            image_tools: vec![],
            prometheus: None,
            gpu_use: vec![],
            refusals: vec![],
        }
    }
}

impl Scenario {
    /// Parses YAML (or JSON, which is YAML).
    pub fn from_yaml(s: &str) -> Result<Self, String> {
        serde_saphyr::from_str(s).map_err(|e| e.to_string())
    }
    /// Parses JSON.
    pub fn from_json(s: &str) -> Result<Self, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }
    /// Install JobSet (see [`Scenario::jobset`]).
    pub fn with_jobset(mut self, mode: OperatorMode) -> Self {
        self.jobset = mode;
        self
    }
    /// Set the operator mode.
    pub fn with_operator(mut self, mode: OperatorMode) -> Self {
        self.operator = mode;
        self
    }
    /// Replace the nodes.
    pub fn with_nodes(mut self, nodes: Vec<NodeSpec>) -> Self {
        self.nodes = nodes;
        self
    }
    /// Add an initial object.
    pub fn with_object(mut self, obj: Value) -> Self {
        self.objects.push(obj);
        self
    }
    /// Add a fault.
    pub fn with_fault(mut self, f: Fault) -> Self {
        self.faults.push(f);
        self
    }
    /// Add a container behaviour.
    pub fn with_behaviour(mut self, b: ContainerBehaviour) -> Self {
        self.container_behaviour.push(b);
        self
    }
    /// Make tensorflow containers succeed after `ms`.
    pub fn with_succeed_after_ms(mut self, ms: u64) -> Self {
        self.succeed_after_ms = Some(ms);
        self
    }
    /// Mark an image's registry as unreachable (a transient pull failure).
    pub fn with_unreachable_image(mut self, image: &str) -> Self {
        self.unreachable_images.push(image.into());
        self
    }
    /// Mark an image as missing from the registry.
    pub fn with_missing_image(mut self, image: &str) -> Self {
        self.missing_images.push(image.into());
        self
    }
    /// Objects of `resource` named `name…` are refused at `field` with `message` (see
    /// [`Refusal`]), by the API server's validation (422).
    pub fn with_refusal(mut self, resource: &str, name: &str, field: &str, message: &str) -> Self {
        self.refusals.push(Refusal {
            resource: resource.into(),
            name: name.into(),
            webhook: None,
            causes: vec![RefusalCause {
                field: field.into(),
                message: message.into(),
                reason: None,
            }],
        });
        self
    }
    /// Deny a verb on a resource in a namespace (`*` for all).
    pub fn with_deny(mut self, verb: &str, resource: &str, namespace: &str) -> Self {
        self.rbac.deny.push(RbacRule {
            user: None,
            verb: Some(verb.into()),
            resource: Some(resource.into()),
            namespace: Some(namespace.into()),
        });
        self
    }
    /// Serve HTTPS with a generated CA (see `TestCluster::ca_pem`, `write_kubeconfig`).
    pub fn with_tls(mut self) -> Self {
        self.security.tls = true;
        self
    }
    /// `--anonymous-auth=false`: requests without credentials get 401.
    pub fn with_required_auth(mut self) -> Self {
        self.security.require_auth = true;
        self
    }
    /// Add a row to the static token table.
    pub fn with_token(mut self, token: &str, user: &str, groups: &[&str]) -> Self {
        self.security.tokens.push(crate::auth::StaticToken {
            token: token.into(),
            user: user.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        });
        self
    }
    /// Which credential the kubeconfig written at start carries.
    pub fn with_kubeconfig_auth(mut self, auth: crate::auth::KubeconfigAuth) -> Self {
        self.security.kubeconfig = auth;
        self
    }
    /// Add a namespace.
    pub fn with_namespace(mut self, ns: &str) -> Self {
        self.namespaces.push(ns.into());
        self
    }
    /// Serve this CRD object instead of the built-in one.
    pub fn with_crd(mut self, crd: Value) -> Self {
        self.crd = Some(crd);
        self
    }
    /// Make the TFJob webhook unreachable (see `webhook_unavailable`).
    pub fn with_webhook_unavailable(mut self) -> Self {
        self.webhook_unavailable = true;
        self
    }
    /// Serve only these versions of the TFJob CRD (version skew).
    pub fn with_served_versions(mut self, versions: &[&str]) -> Self {
        self.served_versions = Some(versions.iter().map(|v| v.to_string()).collect());
        self
    }
    /// Set the timing.
    pub fn with_timing(mut self, t: Timing) -> Self {
        self.timing = t;
        self
    }
    /// Install Kueue as `cfg` says (`KueueConfig::with_tfjob()` manages TFJobs).
    pub fn with_kueue(mut self, cfg: crate::queueing::KueueConfig) -> Self {
        self.kueue = Some(cfg);
        self
    }
    /// Run the operator with `--gang-scheduler-name` for `g`.
    pub fn with_gang_scheduler(mut self, g: crate::queueing::GangScheduler) -> Self {
        self.gang_scheduler = Some(g);
        self
    }
    /// See [`Scenario::gateway_key`].
    pub fn with_gateway_key(mut self, key: &str) -> Self {
        self.gateway_key = Some(key.into());
        self
    }
    /// See [`Scenario::gpu_devices`].
    pub fn with_gpu_devices(mut self, n: u32) -> Self {
        self.gpu_devices = Some(n);
        self
    }

    /// See [`Scenario::image_tools`].
    pub fn with_image_tools(mut self, image: &str, tools: &[&str]) -> Self {
        self.image_tools.push(ImageTools {
            image: image.into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
        });
        self
    }
    /// Set the watch history window.
    pub fn with_watch_history(mut self, n: usize) -> Self {
        self.watch_history = n;
        self
    }
}
