//! `probe`: inside the running pods. For every running replica of a job, read-only checks run
//! in its training container (`pods/exec`) and report what the training process sees:
//! TF_CONFIG from the main process's environment against what the operator gives the replica,
//! its peers (name resolution and a TCP connection to each host:port of its cluster spec), and
//! the model gateway (`GET <base>/v1/models` with the process's own key), plus the containers
//! injected beside it. The judgement is pure (`diagnose::inpod`); this module runs the checks
//! and reads the cluster facts that name a cause (Services, pod readiness, declared ports,
//! NetworkPolicies, the gateway Secret's fingerprint).
//!
//! The key never leaves the pod: the scripts (`inpod.py`, and `inpod.sh` for images without
//! python3) read it from the process's environment and print only the first 8 hex digits of its
//! SHA-256; the Secret's value is hashed here and dropped. Nothing is written in the pod; each
//! exec has a time and output bound; `--timeout` bounds the whole command.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};
use serde_json::Value;

use crate::cluster::podexec::{self, Ended};
use crate::cluster::{self, Kube};
use crate::diagnose::inpod::{self, Check, EnvAnswer, PeerFacts, Status};
use crate::diagnose::{Finding, Layer, Verdict};
use crate::error::{Error, Result};
use crate::model::{self, TFJob};
use crate::ops::Context;
use crate::output::Output;

const PY: &str = include_str!("inpod.py");
const SH: &str = include_str!("inpod.sh");
/// The main process's environment: what the training process sees, not what the spec says.
const ENVIRON: &str = "/proc/1/environ";
/// Output kept from one check (the answers are a few lines per peer).
const OUTPUT_LIMIT: usize = 64 * 1024;
/// One TCP connect or gateway request inside the pod.
const CONNECT_TIMEOUT_SECS: u64 = 3;
/// Pods probed at once.
const CONCURRENCY: usize = 8;

/// What to probe. Plain data: the CLI layer fills it from flags.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    pub job: String,
    /// The container to probe (default `tensorflow`).
    pub container: Option<String>,
    /// Prefix of the gateway env vars: PREFIX_API_KEY and PREFIX_BASE_URL.
    pub env_prefix: String,
    /// The user named the prefix (`--api-env-prefix`): a container that sets neither variable
    /// is then their typo, not a job without a gateway.
    pub env_prefix_given: bool,
    pub timeout: Duration,
    pub format: ProbeFormat,
    /// `--gateway-chat MODEL`: one tiny chat completion, from the first replica whose gateway
    /// check passed (opt-in: it costs tokens).
    pub chat_model: Option<String>,
    /// `jobset/NAME`: a JobSet that `export --to jobset` made (its pods labelled by JobSet, the
    /// TF_CONFIG expected the one the export wrote).
    pub jobset: bool,
    /// Probe nothing unless every replica's training container runs (`diagnose --probe`):
    /// the report then says which replica is not running yet.
    pub only_when_all_running: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeFormat {
    /// The verdict and what did not pass, collapsed by cause.
    Text,
    /// Every replica's checks and the peer matrix (`-o wide`, or `-v`).
    Wide,
    Json,
    Yaml,
}

pub use crate::diagnose::inpod::{ProbeReport, ReplicaProbe};

pub async fn run(ctx: &Context, opts: ProbeOptions, out: &mut Output) -> Result<()> {
    let kube = ctx.kube().await?;
    let ns = kube.namespace.clone();
    let deadline = ctx.deadline();
    let end = deadline
        .until()
        .unwrap_or_else(|| Instant::now() + opts.timeout);
    deadline.phase(format!("probing TFJob {ns}/{}", opts.job));
    let left = end.saturating_duration_since(Instant::now());
    let report = tokio::time::timeout(left, probe(kube, &ns, &opts, end))
        .await
        .map_err(|_| deadline.ran_out())??;
    match opts.format {
        ProbeFormat::Text => out.data(&crate::print::probe::summary(&report))?,
        ProbeFormat::Wide => out.data(&crate::print::probe::text(&report))?,
        ProbeFormat::Json => out.data_line(
            &serde_json::to_string_pretty(&report)
                .map_err(|e| Error::Other(format!("encoding the probe: {e}")))?,
        )?,
        ProbeFormat::Yaml => out.data(
            &serde_saphyr::to_string(&report)
                .map_err(|e| Error::Other(format!("encoding the probe: {e}")))?,
        )?,
    }
    if report.ok {
        Ok(())
    } else if report
        .replicas
        .iter()
        .flat_map(|r| r.checks())
        .any(|c| c.status == Status::Fail)
    {
        Err(Error::JobFailed(report.verdict))
    } else {
        // Nothing failed, but not everything could be seen: unknown, not a pass.
        Err(Error::NotReady {
            message: report.verdict,
            hint: None,
        })
    }
}

/// Reads the job, its pods and the facts that name causes, then probes every running replica.
pub async fn probe(
    kube: &Kube,
    ns: &str,
    opts: &ProbeOptions,
    end: Instant,
) -> Result<ProbeReport> {
    let container = opts
        .container
        .clone()
        .unwrap_or_else(|| model::DEFAULT_CONTAINER_NAME.to_string());
    let Subject {
        job,
        pods,
        services,
        expected,
        total,
    } = if opts.jobset {
        read_jobset(kube, ns, &opts.job, &container).await?
    } else {
        read_tfjob(kube, ns, &opts.job).await?
    };
    let policies: Vec<NetworkPolicy> = {
        let api: Api<NetworkPolicy> = Api::namespaced(kube.client.clone(), ns);
        let all = ListParams::default();
        cluster::retry(kube, || api.list(&all))
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    };
    if opts.only_when_all_running
        && let Some(job) = &job
        && let Some(why) = waiting_for(job, &pods, &container)
    {
        return Ok(ProbeReport {
            job: opts.job.clone(),
            namespace: ns.to_string(),
            verdict: format!("not probed: {why}"),
            ok: false,
            not_probed: Some(why),
            replicas: vec![],
        });
    }
    let key_var = format!("{}_API_KEY", opts.env_prefix);
    let base_var = format!("{}_BASE_URL", opts.env_prefix);
    if opts.env_prefix_given {
        prefix_in_spec(&pods, &container, &opts.env_prefix)?;
    }
    let secret_fp = secret_fingerprint(kube, ns, &pods, &container, &key_var).await;
    let facts = |to: &str| peer_facts(to, ns, &pods, &container, services.as_deref(), &policies);
    let env = Vars {
        container: &container,
        key_var: &key_var,
        base_var: &base_var,
        prefix_given: opts.env_prefix_given,
        tf_config_from: if opts.jobset {
            "the JobSet's pod template"
        } else {
            "the operator"
        },
    };
    let mut replicas: Vec<ReplicaProbe> = stream::iter(pods.iter())
        .map(|pod| {
            probe_pod(
                kube,
                ns,
                pod,
                &env,
                &expected,
                secret_fp.as_deref(),
                &facts,
                end,
            )
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    replicas.sort_by_key(|r| order(&r.replica));
    if let Some(model) = &opts.chat_model {
        chat(
            kube,
            ns,
            &mut replicas,
            &env,
            model,
            secret_fp.as_deref(),
            end,
        )
        .await;
    }
    let kind = if opts.jobset { "JobSet" } else { "TFJob" };
    let verdict = verdict(kind, &opts.job, total, &replicas);
    let ok = replicas.iter().all(|r| r.probed)
        && !replicas.is_empty()
        && replicas.len() == total
        && replicas
            .iter()
            .flat_map(|r| r.checks())
            .all(|c| c.status == Status::Pass);
    Ok(ProbeReport {
        job: opts.job.clone(),
        namespace: ns.to_string(),
        verdict,
        ok,
        not_probed: None,
        replicas,
    })
}

/// `--api-env-prefix P` given: refuses (exit 2, before any exec) a prefix that no pod's
/// container sets as `P_API_KEY` or `P_BASE_URL` and cannot take from `envFrom` either,
/// naming the prefixes it does set. A typo must not turn into a skipped gateway check.
fn prefix_in_spec(pods: &[Pod], container: &str, prefix: &str) -> Result<()> {
    let containers: Vec<&k8s_openapi::api::core::v1::Container> = pods
        .iter()
        .flat_map(|p| p.spec.iter().flat_map(|s| s.containers.iter()))
        .filter(|c| c.name == container)
        .collect();
    // envFrom may bring any name: only the process's environment can tell (probe_pod).
    if containers.is_empty() || containers.iter().any(|c| c.env_from.is_some()) {
        return Ok(());
    }
    let names: Vec<&str> = containers
        .iter()
        .flat_map(|c| c.env.iter().flatten())
        .map(|e| e.name.as_str())
        .collect();
    let wanted = [format!("{prefix}_API_KEY"), format!("{prefix}_BASE_URL")];
    if names.iter().any(|n| wanted.iter().any(|w| w == n)) {
        return Ok(());
    }
    let found = crate::gateway::env_prefixes_in(names);
    Err(Error::Usage(format!(
        "--api-env-prefix {prefix}: container {} sets neither {} nor {}; {}",
        crate::print::terminal::escape(container),
        wanted[0],
        wanted[1],
        match found.first() {
            Some(p) => format!(
                "it sets the gateway variables of {} (e.g. --api-env-prefix {p})",
                found
                    .iter()
                    .map(|p| crate::print::terminal::escape(p).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "it sets no *_API_KEY or *_BASE_URL variable: the job has no gateway to probe"
                .to_string(),
        }
    )))
}

/// `--gateway-chat MODEL`: one chat completion from the first replica whose gateway check
/// passed (one, not one per replica: each costs tokens). Where none passed, the first replica
/// with a gateway check says why none was sent.
async fn chat(
    kube: &Kube,
    ns: &str,
    replicas: &mut [ReplicaProbe],
    vars: &Vars<'_>,
    model: &str,
    secret_fp: Option<&str>,
    end: Instant,
) {
    let Some(r) = replicas
        .iter_mut()
        .find(|r| r.gateway.as_ref().is_some_and(|g| g.status == Status::Pass))
    else {
        if let Some(r) = replicas.iter_mut().find(|r| r.gateway.is_some()) {
            r.gateway_chat = Some(Check::not_checked(
                "no chat completion sent: no replica's gateway check passed",
            ));
        }
        return;
    };
    let (program, script) = match r.program {
        Some("sh") => ("sh", SH),
        _ => ("python3", PY),
    };
    let timeout = (2 * CONNECT_TIMEOUT_SECS).to_string();
    let argv: Vec<String> = [
        program,
        "-c",
        script,
        "chat",
        ENVIRON,
        vars.base_var,
        vars.key_var,
        &timeout,
        model,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let within = Duration::from_secs(5 + 2 * CONNECT_TIMEOUT_SECS)
        .min(end.saturating_duration_since(Instant::now()));
    let run = podexec::run(
        kube,
        ns,
        &r.pod,
        vars.container,
        &argv,
        OUTPUT_LIMIT,
        within,
    )
    .await;
    r.gateway_chat = Some(match &run.ended {
        Ended::Exited(0) => match inpod::missing_tool(&run.stdout) {
            Some(tool) => {
                Check::not_checked(format!("the image has no {tool}: no chat completion sent"))
            }
            // The gateway check passed with this pod's key: a 401 here is the gateway's
            // answer to the chat path, not a changed Secret.
            None => inpod::judge_chat(&run.stdout, secret_fp, secret_fp),
        },
        other => Check::not_checked(exec_problem(other, &run.stderr)),
    });
}

/// A model name as `--gateway-chat` takes it: the characters model names use, nothing a
/// shell or JSON would read otherwise.
pub fn valid_model(model: &str) -> bool {
    !model.is_empty()
        && model.len() <= 200
        && model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@+".contains(c))
}

/// The first replica whose training container does not run, with its state, or that has no
/// pod yet; None when every replica of the job runs.
fn waiting_for(job: &TFJob, pods: &[Pod], container: &str) -> Option<String> {
    for t in job.replica_types() {
        for i in 0..job.replicas(t).max(0) {
            let replica = format!("{}-{i}", t.lower());
            match pods.iter().find(|p| replica_of(p) == replica) {
                None => return Some(format!("{replica} has no pod yet")),
                Some(p) => {
                    if let Some(state) = not_running(p, container) {
                        return Some(format!("{replica} is {state}"));
                    }
                }
            }
        }
    }
    None
}

/// `diagnose --probe`: the in-pod layer as one finding after the runtime layer. It probes
/// only when every replica runs (the checks ask the replicas of each other); otherwise the
/// finding says which replica does not run yet. `end` is the diagnosis's deadline.
pub async fn layer(kube: &Kube, ns: &str, job: &str, end: Instant) -> Finding {
    let opts = ProbeOptions {
        job: job.to_string(),
        container: None,
        env_prefix: crate::gateway::DEFAULT_ENV_PREFIX.to_string(),
        env_prefix_given: false,
        timeout: end.saturating_duration_since(Instant::now()),
        format: ProbeFormat::Json,
        chat_model: None,
        jobset: false,
        only_when_all_running: true,
    };
    let left = end.saturating_duration_since(Instant::now());
    let hint = inpod::probe_command(&kube.hints, ns, job);
    match tokio::time::timeout(left, probe(kube, ns, &opts, end)).await {
        Ok(Ok(report)) => finding(&report, &hint),
        Ok(Err(e)) => Finding::new(Layer::InPod, Verdict::Unknown, format!("not probed: {e}")),
        Err(_) => Finding::new(
            Layer::InPod,
            Verdict::Unknown,
            "not probed: the in-pod checks did not finish before --timeout",
        ),
    }
}

/// A probe report as the in-pod layer's finding: the verdict line as its summary, each check
/// that did not pass as evidence.
pub fn finding(report: &ProbeReport, probe_command: &str) -> Finding {
    if let Some(why) = &report.not_probed {
        let mut f = Finding::new(
            Layer::InPod,
            Verdict::Info,
            format!("not probed: {why} (the in-pod checks run once every replica runs)"),
        );
        f.next_step = Some(format!("when every replica runs: {probe_command}"));
        return f;
    }
    let failed = report
        .replicas
        .iter()
        .flat_map(|r| r.checks())
        .any(|c| c.status == Status::Fail);
    let verdict = if report.ok {
        Verdict::Ok
    } else if failed {
        Verdict::Fail
    } else {
        Verdict::Unknown
    };
    let mut f = Finding::new(Layer::InPod, verdict, report.verdict.clone());
    for r in &report.replicas {
        if !r.probed {
            f.evidence
                .push(format!("{}: not probed: {}", r.replica, r.state));
        }
        let peers = r
            .peers
            .iter()
            .map(|p| (format!("{} → {}", r.replica, p.to), &p.check));
        let named = r
            .tf_config
            .iter()
            .map(|c| (format!("{} TF_CONFIG", r.replica), c))
            .chain(peers)
            .chain(
                r.peers_check
                    .iter()
                    .map(|c| (format!("{} peers", r.replica), c)),
            )
            .chain(
                r.gateway
                    .iter()
                    .map(|c| (format!("{} gateway", r.replica), c)),
            )
            .chain(
                r.gateway_chat
                    .iter()
                    .map(|c| (format!("{} chat", r.replica), c)),
            )
            .chain(
                r.containers
                    .iter()
                    .map(|c| (format!("{} containers", r.replica), c)),
            );
        for (what, c) in named {
            match c.status {
                Status::Pass => {}
                Status::Fail => f.evidence.push(format!("{what}: {}", c.detail)),
                Status::NotChecked => f
                    .evidence
                    .push(format!("{what}: not checked: {}", c.detail)),
            }
        }
        if verdict != Verdict::Ok && r.checks().any(|c| c.status != Status::Pass) {
            f.replicas.push(r.pod.clone());
        }
    }
    if verdict != Verdict::Ok {
        f.next_step = Some(format!("the whole matrix: {probe_command}"));
    }
    f
}

struct Vars<'a> {
    container: &'a str,
    key_var: &'a str,
    base_var: &'a str,
    /// `--api-env-prefix` was given (see [`ProbeOptions::env_prefix_given`]).
    prefix_given: bool,
    /// Who gives the pods their TF_CONFIG: the operator, or the exported JobSet's template.
    tf_config_from: &'static str,
}

/// `worker-10` after `worker-9`, roles in the operator's order.
fn order(replica: &str) -> (String, u64) {
    let (role, index) = replica.rsplit_once('-').unwrap_or((replica, "0"));
    (role.to_string(), index.parse().unwrap_or(0))
}

/// The verdict line: the first failing check, naming its replica; else the replicas not running
/// or not checked; else what passed.
fn verdict(kind: &str, name: &str, total: usize, replicas: &[ReplicaProbe]) -> String {
    if replicas.is_empty() {
        return format!("{kind} {name} has no pods to probe yet");
    }
    if let Some(line) = failing_column(replicas) {
        return line;
    }
    for r in replicas {
        if let Some(c) = r.checks().find(|c| c.status == Status::Fail) {
            return format!("{}: {}", r.replica, c.detail);
        }
    }
    if let Some(r) = replicas.iter().find(|r| !r.probed) {
        return format!("{}: not probed: {}", r.replica, r.state);
    }
    for r in replicas {
        if let Some(c) = r.checks().find(|c| c.status == Status::NotChecked) {
            return format!("{}: not checked: {}", r.replica, c.detail);
        }
    }
    let n = replicas.len();
    if n > total {
        return format!(
            "{n} pods run but their TF_CONFIG names {total} replicas: the cluster spec is stale \
             (a JobSet scaled after export? export it again)"
        );
    }
    if n < total {
        return format!("{} of {total} replicas have no pod to probe", total - n);
    }
    format!(
        "ok: {n}/{total} replicas see their TF_CONFIG and reach their peers{}",
        if replicas.iter().any(|r| r.gateway.is_some()) {
            " and the gateway"
        } else {
            ""
        }
    )
}

/// A peer that every replica which tried it failed to reach (two at least): the fault is the
/// target's, not the first source's (issue 46). Its replica label when a probed pod is behind
/// the name, else the address. Pure.
fn failing_column(replicas: &[ReplicaProbe]) -> Option<String> {
    let targets: Vec<&str> = replicas
        .iter()
        .flat_map(|r| r.peers.iter().map(|p| p.to.as_str()))
        .collect();
    for to in targets {
        let tried: Vec<&crate::diagnose::inpod::Peer> = replicas
            .iter()
            .filter_map(|r| r.peers.iter().find(|p| p.to == to))
            .collect();
        if tried.len() >= 2 && tried.iter().all(|p| p.check.status == Status::Fail) {
            let host = to.split('.').next().unwrap_or(to);
            let who = replicas
                .iter()
                .find(|r| r.pod == host)
                .map_or(to, |r| r.replica.as_str());
            return Some(format!(
                "{who}: not reachable from any replica ({to}: {})",
                tried[0].check.detail
            ));
        }
    }
    None
}

/// What is probed, read from the cluster.
struct Subject {
    /// The TFJob (None for a JobSet).
    job: Option<TFJob>,
    pods: Vec<Pod>,
    /// The Services peers' names go through (None: not readable).
    services: Option<Vec<Service>>,
    /// The TF_CONFIG each replica (`worker-1`) should see.
    expected: BTreeMap<String, Value>,
    /// How many replicas the job has.
    total: usize,
}

async fn read_tfjob(kube: &Kube, ns: &str, name: &str) -> Result<Subject> {
    let jobs: Api<TFJob> = Api::namespaced(kube.client.clone(), ns);
    let job = cluster::retry(kube, || jobs.get_opt(name))
        .await
        .map_err(|e| Error::kube(format!("reading tfjob {name}"), e))?;
    let Some(job) = job else {
        return Err(cluster::notfound::tfjob(kube, ns, name).await);
    };
    let by_job = ListParams::default().labels(&format!("{}={name}", model::LABEL_JOB_NAME));
    let pods_api: Api<Pod> = Api::namespaced(kube.client.clone(), ns);
    let pods = cluster::retry(kube, || pods_api.list(&by_job))
        .await
        .map_err(|e| Error::kube(format!("listing the pods of tfjob {name}"), e))?
        .items;
    // Facts that only name causes: unreadable ones leave the cause unnamed, never a verdict.
    let services: Option<Vec<Service>> = {
        let api: Api<Service> = Api::namespaced(kube.client.clone(), ns);
        cluster::retry(kube, || api.list(&by_job))
            .await
            .ok()
            .map(|l| l.items)
    };
    let expected = expected_tf_configs(&job, ns);
    let total = job
        .replica_types()
        .iter()
        .map(|t| job.replicas(*t).max(0) as usize)
        .sum();
    Ok(Subject {
        job: Some(job),
        pods,
        services,
        expected,
        total,
    })
}

/// A JobSet that `export --to jobset` made: its pods by JobSet's label, the headless Service
/// its pods' subdomain names, and the TF_CONFIG the export wrote into each pod's template,
/// expanded as the kubelet expands it for that pod (`jobset::tfconfig::expand`).
async fn read_jobset(kube: &Kube, ns: &str, name: &str, container: &str) -> Result<Subject> {
    use crate::pipeline::jobset::model::JobSet;
    let api: Api<JobSet> = Api::namespaced(kube.client.clone(), ns);
    let js = cluster::retry(kube, || api.get_opt(name))
        .await
        .map_err(|e| Error::kube(format!("reading jobset {name}"), e))?
        .ok_or_else(|| {
            Error::NotFound(format!(
                "jobsets.jobset.x-k8s.io \"{name}\" not found in namespace {ns}"
            ))
        })?;
    super::jobset_day2::ours(js, ns)?;
    let by_js = ListParams::default().labels(&crate::pipeline::jobset::pod_selector(name));
    let pods_api: Api<Pod> = Api::namespaced(kube.client.clone(), ns);
    let pods = cluster::retry(kube, || pods_api.list(&by_js))
        .await
        .map_err(|e| Error::kube(format!("listing the pods of jobset {name}"), e))?
        .items;
    let subdomain = pods
        .iter()
        .find_map(|p| p.spec.as_ref()?.subdomain.clone())
        .unwrap_or_else(|| name.to_string());
    let services: Option<Vec<Service>> = {
        let api: Api<Service> = Api::namespaced(kube.client.clone(), ns);
        cluster::retry(kube, || api.get_opt(&subdomain))
            .await
            .ok()
            .map(|s| s.into_iter().collect())
    };
    let expected: BTreeMap<String, Value> = pods
        .iter()
        .filter_map(|p| Some((replica_of(p), exported_tf_config(p, container, ns)?)))
        .collect();
    let total = expected
        .values()
        .next()
        .map(|v| inpod::cluster_hosts(v).len())
        .unwrap_or(pods.len());
    Ok(Subject {
        job: None,
        pods,
        services,
        expected,
        total,
    })
}

/// The TF_CONFIG a JobSet pod's template gives `container`, with the `$(VAR)` references the
/// export wrote expanded from the variables declared before it (literals, and the fieldRefs to
/// the pod's own name, namespace, labels and annotations), as the kubelet does.
fn exported_tf_config(pod: &Pod, container: &str, ns: &str) -> Option<Value> {
    let env = pod
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == container)?
        .env
        .clone()?;
    let at = env.iter().position(|e| e.name == "TF_CONFIG")?;
    let template = env[at].value.clone()?;
    let meta = &pod.metadata;
    let value_of = |e: &k8s_openapi::api::core::v1::EnvVar| -> Option<String> {
        if let Some(v) = &e.value {
            return Some(v.clone());
        }
        let path = e
            .value_from
            .as_ref()?
            .field_ref
            .as_ref()?
            .field_path
            .clone();
        let key = |prefix: &str| {
            path.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix("']"))
                .map(str::to_string)
        };
        match path.as_str() {
            "metadata.name" => meta.name.clone(),
            "metadata.namespace" => Some(meta.namespace.clone().unwrap_or_else(|| ns.into())),
            _ => {
                if let Some(k) = key("metadata.annotations['") {
                    meta.annotations.as_ref()?.get(&k).cloned()
                } else if let Some(k) = key("metadata.labels['") {
                    meta.labels.as_ref()?.get(&k).cloned()
                } else {
                    None
                }
            }
        }
    };
    let declared = &env[..at];
    let value = crate::pipeline::jobset::tfconfig::expand(&template, |name| {
        declared
            .iter()
            .rev()
            .find(|e| e.name == name)
            .and_then(value_of)
    });
    serde_json::from_str(&value).ok()
}

/// The TF_CONFIG the operator gives each replica (`worker-1` → JSON), as the one model of the
/// operator's pods writes it; nothing for a job that is not distributed.
fn expected_tf_configs(job: &TFJob, ns: &str) -> BTreeMap<String, Value> {
    let model = crate::operator_pods::expand(job).in_namespace(ns);
    let mut out = BTreeMap::new();
    for r in &model.replicas {
        for i in 0..r.count.max(0) {
            if let Some(v) = model
                .tf_config(r, i)
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            {
                out.insert(format!("{}-{i}", r.lower), v);
            }
        }
    }
    out
}

/// `worker-1`: the operator's replica labels, or a JobSet pod's replicatedJob and completion
/// index (the export names each replicatedJob after its replica type).
fn replica_of(pod: &Pod) -> String {
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    match (
        labels.get(model::LABEL_REPLICA_TYPE),
        labels.get(model::LABEL_REPLICA_INDEX),
    ) {
        (Some(t), Some(i)) => format!("{}-{i}", t.to_lowercase()),
        _ => match (
            labels.get(crate::pipeline::jobset::LABEL_REPLICATED_JOB),
            annotations.get(crate::pipeline::jobset::COMPLETION_INDEX_ANNOTATION),
        ) {
            (Some(rjob), Some(i)) => format!("{rjob}-{i}"),
            _ => pod.metadata.name.clone().unwrap_or_default(),
        },
    }
}

/// Why a pod is not probed, or None when its training container runs.
fn not_running(pod: &Pod, container: &str) -> Option<String> {
    let status = pod.status.as_ref();
    let phase = status
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Pending".into());
    // Being deleted (a lost node's pods stay Running for want of a kubelet to confirm): not
    // running, whatever its containers last said (issue 46).
    if pod.metadata.deletion_timestamp.is_some() {
        return Some(crate::cluster::pod::terminating(pod));
    }
    if crate::cluster::pod::PodFacts::node_stopped_reporting(pod) {
        return Some(format!("{phase} ({})", crate::cluster::pod::NODE_STOPPED));
    }
    // Not scheduled: the scheduler's own words say why.
    if let Some(c) = status.and_then(|s| s.conditions.as_ref()).and_then(|cs| {
        cs.iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    }) {
        return Some(format!(
            "{phase} ({}: {})",
            c.reason.clone().unwrap_or_default(),
            c.message.clone().unwrap_or_default()
        ));
    }
    let cs = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == container));
    match cs.and_then(|c| c.state.as_ref()) {
        Some(s) if s.running.is_some() && phase == "Running" => None,
        Some(s) => Some(match (&s.waiting, &s.terminated) {
            (Some(w), _) => format!("{phase} ({})", w.reason.clone().unwrap_or_default()),
            (_, Some(t)) => format!(
                "{phase} (terminated: {}, exit {})",
                t.reason.clone().unwrap_or_default(),
                t.exit_code
            ),
            _ => phase,
        }),
        None => Some(phase),
    }
}

/// A replica that restarts over and over runs only between two back-offs: probing it then
/// would pass on a process that dies again (issue 46). Judged as `diagnose` and `wait` judge a
/// crash loop, by restarts, never by the back-off timer.
fn crash_looping(pod: &Pod) -> Option<String> {
    use crate::cluster::pod::PodFacts;
    if pod.restarts() < crate::diagnose::DEFAULT_MAX_RESTARTS as i32 {
        return None;
    }
    let ev = crate::diagnose::failure::PodEvidence {
        meta: &pod.metadata,
        status: pod.status.as_ref(),
        memory_limit: None,
        log: None,
        node_not_ready: None,
        max_restarts: crate::diagnose::DEFAULT_MAX_RESTARTS,
        now: None,
    };
    let f = crate::diagnose::failure::classify(ev, None)?;
    // `Worker-1: CrashLoop (4 restarts, …)` without the label the report puts first.
    let line = f.line.split_once(": ").map_or(f.line.as_str(), |(_, l)| l);
    Some(format!("{line}: it runs only between restarts"))
}

#[allow(clippy::too_many_arguments)]
async fn probe_pod(
    kube: &Kube,
    ns: &str,
    pod: &Pod,
    vars: &Vars<'_>,
    expected: &BTreeMap<String, Value>,
    secret_fp: Option<&str>,
    facts: &dyn Fn(&str) -> PeerFacts,
    end: Instant,
) -> ReplicaProbe {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let replica = replica_of(pod);
    let containers: Vec<Check> = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter_map(|c| inpod::judge_sidecar(&c.name, vars.container))
        .collect();
    let mut r = ReplicaProbe {
        replica: replica.clone(),
        pod: name.clone(),
        state: "Running".into(),
        probed: false,
        tf_config: None,
        peers: vec![],
        peers_check: None,
        gateway: None,
        gateway_chat: None,
        containers,
        gpus: None,
        program: None,
    };
    if let Some(state) = not_running(pod, vars.container).or_else(|| crash_looping(pod)) {
        r.state = state;
        return r;
    }
    r.probed = true;
    let left = || end.saturating_duration_since(Instant::now());
    let exec = |argv: Vec<String>, within: Duration| {
        let name = name.clone();
        async move {
            podexec::run(
                kube,
                ns,
                &name,
                vars.container,
                &argv,
                OUTPUT_LIMIT,
                within.min(left()),
            )
            .await
        }
    };
    let words = |program: &str, script: &str, mode: &str, args: &[&str]| -> Vec<String> {
        [program, "-c", script, mode]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect()
    };
    // 1. The environment, python3 first, then sh.
    let env_args = [
        ENVIRON,
        vars.key_var,
        "--",
        "TF_CONFIG",
        vars.base_var,
        "CUDA_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES",
    ];
    let mut env_run = exec(
        words("python3", PY, "env", &env_args),
        Duration::from_secs(10),
    )
    .await;
    // The program that ran the environment check runs the others: python3, else sh with
    // the tools the image has (inpod.sh says `missing=TOOL` where none fits a check).
    let (program, script) = if env_run.ended == Ended::NoProgram {
        env_run = exec(words("sh", SH, "env", &env_args), Duration::from_secs(10)).await;
        ("sh", SH)
    } else {
        ("python3", PY)
    };
    r.program = Some(program);
    let env = match &env_run.ended {
        Ended::Exited(0) => EnvAnswer::parse(&env_run.stdout),
        other => {
            let why = exec_problem(other, &env_run.stderr);
            r.tf_config = Some(Check::not_checked(why.clone()));
            r.peers_check = Some(Check::not_checked(why));
            return r;
        }
    };
    if let Some(e) = &env.error {
        r.tf_config = Some(Check::not_checked(format!(
            "the main process's environment could not be read ({e})"
        )));
    } else {
        r.tf_config = Some(match expected.get(&replica) {
            Some(want) => inpod::judge_tf_config(env.value("TF_CONFIG"), want),
            None => Check::not_checked(format!(
                "{} gives this replica no TF_CONFIG (not a distributed job?)",
                vars.tf_config_from
            )),
        });
    }
    // 2. Peers: every host of the cluster spec the process sees (else the operator's).
    let seen: Option<Value> = env
        .value("TF_CONFIG")
        .and_then(|v| serde_json::from_str(v).ok());
    let hosts = seen
        .as_ref()
        .or(expected.get(&replica))
        .map(inpod::cluster_hosts)
        .unwrap_or_default();
    if !hosts.is_empty() {
        let timeout = CONNECT_TIMEOUT_SECS.to_string();
        let mut args: Vec<&str> = vec![&timeout];
        args.extend(hosts.iter().map(String::as_str));
        let within = Duration::from_secs(5 + 2 * CONNECT_TIMEOUT_SECS * hosts.len() as u64);
        let run = exec(words(program, script, "peers", &args), within).await;
        match &run.ended {
            Ended::Exited(0) => match inpod::missing_tool(&run.stdout) {
                Some(tool) => {
                    r.peers_check = Some(Check::not_checked(format!(
                        "the image has no {tool}: peers were not checked"
                    )))
                }
                None => {
                    r.peers = inpod::judge_peers(&run.stdout, facts);
                    inpod::account_for(&hosts, &mut r.peers);
                }
            },
            other => r.peers_check = Some(Check::not_checked(exec_problem(other, &run.stderr))),
        }
    }
    // 3. The GPUs the process can open, where its container asked for some.
    let requested = requested_gpus(pod, vars.container);
    if requested > 0 {
        let run = exec(words(program, script, "gpus", &[]), Duration::from_secs(10)).await;
        r.gpus = Some(match &run.ended {
            Ended::Exited(0) => inpod::judge_gpus(
                &run.stdout,
                requested,
                env.value("CUDA_VISIBLE_DEVICES"),
                env.value("NVIDIA_VISIBLE_DEVICES"),
            ),
            other => Check::not_checked(exec_problem(other, &run.stderr)),
        });
    }
    // 4. The gateway, where the process has its base URL. A prefix the user named but the
    // process lacks (envFrom hid it from the spec check) is a check not made, never a pass.
    if vars.prefix_given && env.value(vars.base_var).is_none() && env.value(vars.key_var).is_none()
    {
        r.gateway = Some(Check::not_checked(format!(
            "the process has neither {} nor {}: is --api-env-prefix right?",
            vars.key_var, vars.base_var
        )));
    } else if env.value(vars.base_var).is_some() {
        let timeout = CONNECT_TIMEOUT_SECS.to_string();
        let args = [ENVIRON, vars.base_var, vars.key_var, timeout.as_str()];
        let run = exec(
            words(program, script, "gateway", &args),
            Duration::from_secs(5 + 2 * CONNECT_TIMEOUT_SECS),
        )
        .await;
        r.gateway = Some(match &run.ended {
            Ended::Exited(0) => match inpod::missing_tool(&run.stdout) {
                Some(tool) => Check::not_checked(format!(
                    "the image has no {tool}: the gateway was not checked"
                )),
                None => inpod::judge_gateway(&run.stdout, env.fingerprint(vars.key_var), secret_fp),
            },
            other => Check::not_checked(exec_problem(other, &run.stderr)),
        });
    }
    r
}

/// The `nvidia.com/gpu` the training container asks for (its limit, else its request).
fn requested_gpus(pod: &Pod, container: &str) -> u64 {
    let Some(c) = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .find(|c| c.name == container)
    else {
        return 0;
    };
    let r = c.resources.as_ref();
    r.and_then(|r| r.limits.as_ref())
        .and_then(|l| l.get(crate::model::GPU_RESOURCE))
        .or_else(|| {
            r.and_then(|r| r.requests.as_ref())
                .and_then(|l| l.get(crate::model::GPU_RESOURCE))
        })
        .and_then(|q| crate::quantity::parse_quantity(&q.0))
        .map_or(0, |milli| u64::try_from(milli / 1000).unwrap_or(0))
}

/// Why a check could not run, in one line.
fn exec_problem(ended: &Ended, stderr: &str) -> String {
    match ended {
        Ended::NoProgram => {
            "the image has no shell and no python3: nothing to run the checks with".into()
        }
        Ended::Forbidden(m) => format!("exec refused: you may not create pods/exec ({m})"),
        Ended::TimedOut => "the check did not finish in time".into(),
        Ended::Failed(m) => format!("exec failed: {m}"),
        Ended::Exited(code) => format!(
            "the check exited {code}: {}",
            stderr.lines().last().unwrap_or("").trim()
        ),
    }
}

/// What the cluster says about a peer `<pod>.<ns>.svc:<port>`: its Service, its pod's
/// readiness and declared ports, the NetworkPolicies that select it.
fn peer_facts(
    to: &str,
    ns: &str,
    pods: &[Pod],
    container: &str,
    services: Option<&[Service]>,
    policies: &[NetworkPolicy],
) -> PeerFacts {
    let host = to.rsplit_once(':').map(|(h, _)| h).unwrap_or(to);
    let labels: Vec<&str> = host.split('.').collect();
    // `<hostname>.<subdomain>.<ns>.svc` (a JobSet pod, through its subdomain's headless
    // Service) or `<service>.<ns>.svc` (the operator names each replica's Service after its pod).
    let by_hostname = labels.len() >= 4 && labels[3] == "svc";
    let service = if by_hostname { labels[1] } else { labels[0] }.to_string();
    let service_exists = services.map(|s| {
        s.iter()
            .any(|s| s.metadata.name.as_deref() == Some(service.as_str()))
    });
    let pod = pods.iter().find(|p| {
        if by_hostname {
            p.spec.as_ref().is_some_and(|s| {
                s.hostname.as_deref() == Some(labels[0])
                    && s.subdomain.as_deref() == Some(labels[1])
            })
        } else {
            p.metadata.name.as_deref() == Some(service.as_str())
        }
    });
    let pod_ready = pod.map(|p| {
        p.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True")
    });
    let declared_ports = pod.map(|p| {
        p.spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .flat_map(|c| c.ports.iter().flatten())
            .map(|p| p.container_port)
            .collect()
    });
    let labels = pod
        .and_then(|p| p.metadata.labels.clone())
        .unwrap_or_default();
    let policies = policies
        .iter()
        .filter(|np| np.metadata.namespace.as_deref().unwrap_or(ns) == ns)
        .filter(|np| {
            // An empty podSelector selects every pod of the namespace.
            np.spec.as_ref().is_some_and(|s| match &s.pod_selector {
                None => true,
                Some(sel) => {
                    sel.match_labels
                        .iter()
                        .flatten()
                        .all(|(k, v)| labels.get(k) == Some(v))
                        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
                }
            })
        })
        .filter_map(|np| np.metadata.name.clone())
        .collect();
    // The container probed in the replicas, judged in the peer as it is in them.
    let pod_not_running = pod.and_then(|p| not_running(p, container));
    PeerFacts {
        service,
        service_exists,
        pod_ready,
        pod_not_running,
        declared_ports,
        policies,
    }
}

/// The first 8 hex digits of the SHA-256 of the key the pods' key variable comes from (the
/// Secret's value now), or None when it cannot be read. The value itself is dropped here.
async fn secret_fingerprint(
    kube: &Kube,
    ns: &str,
    pods: &[Pod],
    container: &str,
    key_var: &str,
) -> Option<String> {
    let (secret, key) = pods
        .iter()
        .flat_map(|p| p.spec.iter().flat_map(|s| s.containers.iter()))
        .filter(|c| c.name == container)
        .flat_map(|c| c.env.iter().flatten())
        .filter(|e| e.name == key_var)
        .find_map(|e| {
            let r = e.value_from.as_ref()?.secret_key_ref.as_ref()?;
            Some((r.name.clone(), r.key.clone()))
        })?;
    let api: Api<Secret> = Api::namespaced(kube.client.clone(), ns);
    let s = cluster::retry(kube, || api.get_opt(&secret)).await.ok()??;
    let value = s.data.as_ref()?.get(&key)?;
    Some(fingerprint(&value.0))
}

/// SHA-256's first 8 hex digits, as the in-pod scripts print it.
pub fn fingerprint(value: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, value);
    d.as_ref()[..4].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Command;

    fn passed(replica: &str) -> ReplicaProbe {
        ReplicaProbe {
            replica: replica.into(),
            pod: format!("j-{replica}"),
            state: "Running".into(),
            probed: true,
            tf_config: Some(Check::pass("as the operator gives it")),
            peers: vec![],
            peers_check: None,
            gateway: None,
            gateway_chat: None,
            containers: vec![],
            gpus: None,
            program: None,
        }
    }

    /// Issue 46: an ok counts what it saw against what TF_CONFIG names. A JobSet scaled from 2
    /// to 3 workers after export runs 4 pods whose TF_CONFIG names 3: not `ok: 4/3`.
    #[test]
    fn the_verdict_is_ok_only_for_every_replica_tf_config_names() {
        let four: Vec<ReplicaProbe> = ["ps-0", "worker-0", "worker-1", "worker-2"]
            .into_iter()
            .map(passed)
            .collect();
        assert!(verdict("TFJob", "j", 4, &four).starts_with("ok: 4/4 replicas"));
        let scaled = verdict("JobSet", "j", 3, &four);
        assert!(
            scaled.starts_with("4 pods run but their TF_CONFIG names 3 replicas"),
            "{scaled}"
        );
        let short = verdict("TFJob", "j", 5, &four);
        assert_eq!(short, "1 of 5 replicas have no pod to probe");
    }

    /// The scripts as a real pod runs them: a real python3 and sh on this machine, an environ
    /// file written here, a listening socket and a refused port on 127.0.0.1, a local gateway.
    fn run(program: &str, script: &str, args: &[&str]) -> String {
        let out = Command::new(program)
            .arg("-c")
            .arg(script)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("these tests run the scripts with {program}: {e}"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn environ(vars: &[(&str, &str)]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for (k, v) in vars {
            write!(f, "{k}={v}\0").unwrap();
        }
        f
    }

    #[test]
    fn both_scripts_read_the_environment_alike_and_never_print_the_key() {
        let key = "sk-test-not-a-real-key-0123456789";
        let f = environ(&[
            ("TF_CONFIG", "{\"task\":{}}"),
            ("K", key),
            ("B", "https://g/api"),
        ]);
        let path = f.path().to_str().unwrap();
        let args = ["env", path, "K", "--", "TF_CONFIG", "B", "NOPE"];
        let py = run("python3", PY, &args);
        let sh = run("sh", SH, &args);
        assert_eq!(py, sh);
        assert!(!py.contains(key));
        let a = EnvAnswer::parse(&py);
        assert_eq!(
            a.fingerprint("K"),
            Some(fingerprint(key.as_bytes()).as_str())
        );
        assert_eq!(a.value("TF_CONFIG"), Some("{\"task\":{}}"));
        assert_eq!(a.value("B"), Some("https://g/api"));
        assert_eq!(a.absent, ["NOPE"]);
    }

    #[test]
    fn peers_script_tells_reachable_refused_and_unknown_names_apart() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap().port();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let a = format!("127.0.0.1:{open}");
        let b = format!("127.0.0.1:{closed}");
        // python3, and sh with getent, bash's /dev/tcp and timeout: the same answers.
        for (program, script) in [("python3", PY), ("sh", SH)] {
            let out = run(
                program,
                script,
                &["peers", "2", &a, &b, "no-such-host.invalid:2222"],
            );
            let peers = inpod::judge_peers(&out, &|_| PeerFacts::default());
            assert_eq!(peers.len(), 3, "{program}: {out}");
            assert_eq!(
                (peers[0].resolve.as_str(), peers[0].connect.as_str()),
                ("ok", "ok"),
                "{program}: {out}"
            );
            assert_eq!(peers[1].connect, "refused", "{program}: {out}");
            assert_eq!(peers[2].resolve, "nxdomain", "{program}: {out}");
        }
    }

    #[test]
    fn gateway_script_sends_the_processs_key_and_prints_only_the_status() {
        use std::io::{BufRead, BufReader};
        let key = "sk-test-gateway-key-9876543210";
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let serve = std::thread::spawn(move || {
            let mut seen = Vec::new();
            // Each script: the key (listed), again without one (401), the doubled /v1.
            for _ in 0..6 {
                let (mut s, _) = server.accept().unwrap();
                let mut lines = Vec::new();
                let mut r = BufReader::new(s.try_clone().unwrap());
                loop {
                    let mut l = String::new();
                    r.read_line(&mut l).unwrap();
                    if l == "\r\n" || l.is_empty() {
                        break;
                    }
                    lines.push(l);
                }
                let auth_ok = lines
                    .iter()
                    .any(|l| l.trim_end() == format!("Authorization: Bearer {key}"));
                let body = "{\"object\":\"list\",\"data\":[]}";
                let (code, body) = if lines[0].contains("/v1/v1/") {
                    ("404 Not Found", "{}")
                } else if auth_ok {
                    ("200 OK", body)
                } else {
                    ("401 Unauthorized", "{}")
                };
                write!(
                    s,
                    "HTTP/1.1 {code}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
                seen.push(lines[0].clone());
            }
            seen
        });
        let good = environ(&[("K", key), ("B", &format!("http://127.0.0.1:{port}/api"))]);
        let doubled = environ(&[
            ("K", key),
            ("B", &format!("http://127.0.0.1:{port}/api/v1")),
        ]);
        let args = |f: &tempfile::NamedTempFile| {
            vec![
                "gateway".to_string(),
                f.path().to_str().unwrap().into(),
                "B".into(),
                "K".into(),
                "3".into(),
            ]
        };
        // python3's urllib, then sh with curl (the header from a config on its stdin).
        for (program, script) in [("python3", PY), ("sh", SH)] {
            let a1 = args(&good);
            let ok = run(
                program,
                script,
                &a1.iter().map(String::as_str).collect::<Vec<_>>(),
            );
            let a2 = args(&doubled);
            let v1 = run(
                program,
                script,
                &a2.iter().map(String::as_str).collect::<Vec<_>>(),
            );
            assert!(!ok.contains(key) && !v1.contains(key));
            assert_eq!(
                inpod::judge_gateway(&ok, None, None).status,
                Status::Pass,
                "{program}: {ok}"
            );
            assert!(
                inpod::judge_gateway(&v1, None, None)
                    .detail
                    .contains("ends in /v1"),
                "{program}: {v1}"
            );
        }
        let seen = serve.join().unwrap();
        assert!(seen[0].starts_with("GET /api/v1/models "), "{seen:?}");
        assert!(seen[3].starts_with("GET /api/v1/models "), "{seen:?}");
    }

    /// A gateway on loopback answering each request by `answer(path, authorization)`; what it
    /// was asked is kept for the test to read.
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;
    fn fake_gateway(
        answer: impl Fn(&str, Option<&str>) -> (u16, String, Option<String>) + Send + 'static,
    ) -> (u16, Seen) {
        use std::io::{BufRead, BufReader};
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let seen: Seen = Default::default();
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in server.incoming() {
                let Ok(mut s) = conn else { return };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut lines = Vec::new();
                loop {
                    let mut l = String::new();
                    if r.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
                        break;
                    }
                    lines.push(l.trim_end().to_string());
                }
                let path = lines
                    .first()
                    .and_then(|l| l.split(' ').nth(1))
                    .unwrap_or("")
                    .to_string();
                let auth = lines
                    .iter()
                    .find_map(|l| l.strip_prefix("Authorization: "))
                    .map(String::from);
                let (code, body, location) = answer(&path, auth.as_deref());
                log.lock().unwrap().push((path, auth));
                let location = location
                    .map(|l| format!("Location: {l}\r\n"))
                    .unwrap_or_default();
                let _ = write!(
                    s,
                    "HTTP/1.1 {code} X\r\n{location}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (port, seen)
    }

    fn gateway_check(program: &str, script: &str, base: &str, key: &str) -> (String, Check) {
        let f = environ(&[("K", key), ("B", base)]);
        let path = f.path().to_str().unwrap();
        let out = run(program, script, &["gateway", path, "B", "K", "3"]);
        assert!(!out.contains(key), "{program} printed the key: {out}");
        let check = inpod::judge_gateway(&out, None, None);
        (out, check)
    }

    const LIST: &str = "{\"object\":\"list\",\"data\":[{\"id\":\"m\"}]}";

    /// Issue 47 items 3, 8 and 9, in both scripts: a redirect to another origin is not followed
    /// (the key stays home); a model list anyone may read is "not checked", unless a wrong key
    /// is refused; a key holding `"` and `\` reaches the gateway whole through curl's config.
    #[test]
    fn gateway_scripts_keep_the_key_home_and_do_not_pass_a_public_list() {
        let key = r#"sk-"quoted\back"-key"#;
        for (program, script) in [("python3", PY), ("sh", SH)] {
            // Another origin, which must never be asked.
            let (elsewhere, stolen) = fake_gateway(|_, _| (200, LIST.into(), None));
            let (port, _) = fake_gateway(move |_, _| {
                (
                    302,
                    String::new(),
                    Some(format!("http://127.0.0.1:{elsewhere}/v1/models")),
                )
            });
            let (out, check) = gateway_check(
                program,
                script,
                &format!("http://127.0.0.1:{port}/api"),
                key,
            );
            assert_eq!(check.status, Status::Fail, "{program}: {out}");
            assert!(
                check.detail.contains(&format!(
                    "redirects to http://127.0.0.1:{elsewhere}/v1/models"
                )),
                "{program}: {}",
                check.detail
            );
            assert!(
                stolen.lock().unwrap().is_empty(),
                "{program} followed the redirect"
            );

            // Public: any key, or none, gets the list.
            let (port, seen) = fake_gateway(|_, _| (200, LIST.into(), None));
            let (out, check) = gateway_check(
                program,
                script,
                &format!("http://127.0.0.1:{port}/api"),
                key,
            );
            assert_eq!(check.status, Status::NotChecked, "{program}: {out}");
            assert!(check.detail.contains("public"), "{}", check.detail);
            let asked: Vec<Option<String>> = seen
                .lock()
                .unwrap()
                .iter()
                .map(|(_, a)| a.clone())
                .collect();
            assert_eq!(asked.len(), 3, "{program}: {asked:?}");
            assert_eq!(asked[1], None, "{program}: the second ask carries no key");

            // Listed publicly, but a key is checked when given; the right one, whole.
            let want = format!("Bearer {key}");
            let (port, seen) = fake_gateway(move |_, auth| match auth {
                None => (200, LIST.into(), None),
                Some(a) if a == want => (200, LIST.into(), None),
                Some(_) => (401, "{}".into(), None),
            });
            let (out, check) = gateway_check(
                program,
                script,
                &format!("http://127.0.0.1:{port}/api"),
                key,
            );
            assert_eq!(check.status, Status::Pass, "{program}: {out}");
            assert!(
                check.detail.contains("wrong key gets 401"),
                "{}",
                check.detail
            );
            assert_eq!(
                seen.lock().unwrap()[0].1.as_deref(),
                Some(format!("Bearer {key}").as_str()),
                "{program} cut the key"
            );
        }
    }

    /// Both scripts count GPUs alike; this machine has none, and says so the same way.
    #[test]
    fn both_scripts_count_the_gpus_alike() {
        let py = run("python3", PY, &["gpus"]);
        let sh = run("sh", SH, &["gpus"]);
        assert_eq!(py, sh);
        let c = inpod::judge_gpus(&py, 1, None, None);
        assert_ne!(c.status, Status::NotChecked, "{py}");
    }

    #[test]
    fn the_shell_script_names_the_tool_an_image_lacks() {
        // A PATH with only a POSIX shell's builtins: no getent, no curl.
        let out = Command::new("/bin/sh")
            .env("PATH", "/nonexistent")
            .arg("-c")
            .arg(SH)
            .args(["peers", "2", "a:1"])
            .output()
            .unwrap();
        assert_eq!(
            inpod::missing_tool(&String::from_utf8_lossy(&out.stdout)),
            Some("getent")
        );
        let f = environ(&[("B", "http://127.0.0.1:1/api"), ("K", "k")]);
        let out = Command::new("/bin/sh")
            .env("PATH", "/nonexistent")
            .arg("-c")
            .arg(SH)
            .args(["gateway", f.path().to_str().unwrap(), "B", "K", "2"])
            .output()
            .unwrap();
        assert_eq!(
            inpod::missing_tool(&String::from_utf8_lossy(&out.stdout)),
            Some("curl")
        );
    }
}
