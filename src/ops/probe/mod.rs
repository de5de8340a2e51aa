//! `probe`: inside the running pods. For every running replica of a job, read-only checks run
//! in its training container (`pods/exec`) and report what the training process sees:
//! TF_CONFIG from the main process's environment against what the operator gives the replica,
//! its peers (name resolution and a TCP connection to each host:port of its cluster spec), and
//! the model gateway (`GET <base>/v1/models` with the process's own key), plus the containers
//! injected beside it. The checks' judgement is pure (`diagnose::inpod`); `read` reads the job
//! and the cluster facts that name a cause (Services, pod readiness, declared ports,
//! NetworkPolicies, the gateway Secret's fingerprint); `judge` decides which replica is probed
//! and the verdict line; this file runs the checks (`pods/exec`).
//!
//! The key never leaves the pod: the scripts (`inpod.py`, and `inpod.sh` for images without
//! python3) read it from the process's environment and print only the first 8 hex digits of its
//! SHA-256; the Secret's value is hashed here and dropped. Nothing is written in the pod; each
//! exec has a time and output bound; `--timeout` bounds the whole command.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};
use serde_json::Value;

use crate::cluster::budget::Budget;
use crate::cluster::podexec::{self, Ended};
use crate::cluster::{self, Kube, Target};
use crate::diagnose::inpod::{self, Check, EnvAnswer, PeerFacts, Status};
use crate::diagnose::{Finding, Grade, Layer};
use crate::error::{Error, Result};
use crate::model;
use crate::ops::Context;
use crate::output::Output;

mod judge;
mod read;
#[cfg(test)]
mod tests;

pub use judge::valid_model;
use judge::*;
use read::*;

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
    /// The job, resolved once from the argument: a TFJob, or a JobSet that `export --to jobset`
    /// made (its pods labelled by JobSet, the TF_CONFIG expected the one the export wrote).
    pub target: Target,
    /// The container to probe (default `tensorflow`).
    pub container: Option<String>,
    /// Prefix of the gateway env vars: PREFIX_API_KEY and PREFIX_BASE_URL.
    pub env_prefix: String,
    /// The user named the prefix (`--api-env-prefix`): a container that sets neither variable
    /// is then their typo, not a job without a gateway.
    pub env_prefix_given: bool,
    pub format: ProbeFormat,
    /// `--gateway-chat MODEL`: one tiny chat completion, from the first replica whose gateway
    /// check passed (opt-in: it costs tokens).
    pub chat_model: Option<String>,
    /// Probe nothing unless every replica's training container runs (`diagnose --probe`):
    /// the report then says which replica is not running yet.
    pub only_when_all_running: bool,
    /// Probe the first replica of each role only (`wait` before "condition met"): its checks
    /// still reach every peer and the gateway with the key every replica shares, in a few
    /// execs whatever the job's size. The verdict counts the replicas probed.
    pub one_per_role: bool,
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
    let end = deadline.end();
    deadline.phase(format!(
        "probing {} {ns}/{}",
        opts.target.kind(),
        opts.target.name()
    ));
    let report = Budget::until(end)
        .attempt(probe(kube, &ns, &opts, end))
        .await
        .ok_or_else(|| deadline.ran_out())??;
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
    } = read::read(kube, ns, &opts.target, &container).await?;
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
            job: opts.target.name().to_string(),
            namespace: ns.to_string(),
            verdict: format!("not probed: {why}"),
            ok: false,
            not_probed: Some(why),
            replicas: vec![],
            again: inpod::job_command(&kube.hints, ns, "probe", &job_ref(&opts.target)),
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
        tf_config_from: match opts.target {
            Target::JobSet(_) => "the JobSet's pod template",
            Target::TfJob(_) => "the operator",
        },
    };
    let (probed, total) = if opts.one_per_role {
        let firsts = first_of_each_role(&pods);
        let n = firsts.len();
        (firsts, n)
    } else {
        (pods.iter().collect(), total)
    };
    let mut replicas: Vec<ReplicaProbe> = stream::iter(probed)
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
    // The fixes the judgments name, filled with the job, the Secret and the user's flags.
    let job_ref = job_ref(&opts.target);
    let restart = inpod::job_command(&kube.hints, ns, "restart", &job_ref);
    let (secret, key) = read::key_ref(&pods, &container, &key_var).unwrap_or_else(|| {
        (
            crate::gateway::DEFAULT_SECRET_NAME.to_string(),
            crate::gateway::DEFAULT_SECRET_KEY.to_string(),
        )
    });
    let rotate = format!(
        "{} --from-stdin --overwrite",
        crate::cluster::secret::create_command(&secret, &key, ns, &kube.hints)
    );
    for r in &mut replicas {
        for c in [&mut r.gateway, &mut r.gateway_chat].into_iter().flatten() {
            c.detail = inpod::fill_commands(&c.detail, &restart, &rotate);
        }
    }
    let verdict = verdict(opts.target.kind(), opts.target.name(), total, &replicas);
    let ok = replicas.iter().all(|r| r.probed)
        && !replicas.is_empty()
        && replicas.len() == total
        && replicas
            .iter()
            .flat_map(|r| r.checks())
            .all(|c| c.status == Status::Pass);
    Ok(ProbeReport {
        job: opts.target.name().to_string(),
        namespace: ns.to_string(),
        verdict,
        ok,
        not_probed: None,
        replicas,
        again: inpod::job_command(&kube.hints, ns, "probe", &job_ref),
    })
}

/// The first pod of each role (`PS-0`, `Worker-0`, …), in the operator's order.
fn first_of_each_role(pods: &[Pod]) -> Vec<&Pod> {
    let mut by_role: BTreeMap<String, (u64, &Pod)> = BTreeMap::new();
    for pod in pods {
        let (role, index) = order(&crate::ops::workload::replica_of(pod));
        match by_role.get(&role) {
            Some((seen, _)) if *seen <= index => {}
            _ => {
                by_role.insert(role, (index, pod));
            }
        }
    }
    by_role.into_values().map(|(_, pod)| pod).collect()
}

/// The job as a command names it: `NAME`, or `jobset/NAME`.
fn job_ref(target: &Target) -> String {
    match target {
        Target::TfJob(_) => target.name().to_string(),
        Target::JobSet(_) => format!("jobset/{}", target.name()),
    }
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

/// `diagnose --probe`: the in-pod layer as one finding after the runtime layer. It probes
/// only when every replica runs (the checks ask the replicas of each other); otherwise the
/// finding says which replica does not run yet. `end` is the diagnosis's deadline.
pub async fn layer(kube: &Kube, ns: &str, job: &str, end: Instant) -> Finding {
    let opts = ProbeOptions {
        target: Target::TfJob(job.to_string()),
        container: None,
        env_prefix: crate::gateway::DEFAULT_ENV_PREFIX.to_string(),
        env_prefix_given: false,
        format: ProbeFormat::Json,
        chat_model: None,
        only_when_all_running: true,
        one_per_role: false,
    };
    let hint = inpod::probe_command(&kube.hints, ns, job);
    match Budget::until(end)
        .attempt(probe(kube, ns, &opts, end))
        .await
    {
        Some(Ok(report)) => finding(&report, &hint),
        Some(Err(e)) => Finding::new(Layer::InPod, Grade::Unknown, format!("not probed: {e}")),
        None => Finding::new(
            Layer::InPod,
            Grade::Unknown,
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
            Grade::Info,
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
        Grade::Ok
    } else if failed {
        Grade::Fail
    } else {
        Grade::Unknown
    };
    let mut f = Finding::new(Layer::InPod, verdict, report.verdict.clone());
    // One line per cause, naming every replica it holds for: four replicas whose gateway says
    // the same 401 are one line, and the summary's own cause is not said again (issue 61).
    let mut causes: Vec<((String, Status, String), Vec<String>)> = Vec::new();
    for r in &report.replicas {
        if !r.probed {
            f.evidence
                .push(format!("{}: not probed: {}", r.replica, r.state));
        }
        // The GPU check is left out of this finding's evidence, as it always was.
        for (what, c) in r.labelled().filter(|(what, _)| what != "GPUs") {
            if c.status == Status::Pass {
                continue;
            }
            let key = (what, c.status, c.detail.clone());
            match causes.iter_mut().find(|(k, _)| *k == key) {
                Some((_, replicas)) => replicas.push(r.replica.clone()),
                None => causes.push((key, vec![r.replica.clone()])),
            }
        }
        if verdict != Grade::Ok && r.checks().any(|c| c.status != Status::Pass) {
            f.replicas.push(r.pod.clone());
        }
    }
    for ((what, status, detail), replicas) in causes {
        let said = report.verdict == format!("{}: {detail}", replicas[0]);
        let line = match (said, status) {
            (true, _) if replicas.len() == 1 => continue,
            (true, _) => format!("{what}: the same for {}", replicas[1..].join(", ")),
            (false, Status::NotChecked) => {
                format!("{} {what}: not checked: {detail}", replicas.join(", "))
            }
            (false, _) => format!("{} {what}: {detail}", replicas.join(", ")),
        };
        f.evidence.push(line);
    }
    if verdict != Grade::Ok {
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
    let replica = crate::ops::workload::replica_of(pod);
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
    if let Some(state) = not_probed(pod, vars.container, k8s_openapi::jiff::Timestamp::now()) {
        r.state = state;
        return r;
    }
    r.probed = true;
    let shell = Shell {
        kube,
        ns,
        pod: &name,
        container: vars.container,
        end,
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
    let mut env_run = shell
        .run("python3", PY, "env", &env_args, Duration::from_secs(10))
        .await;
    // The program that ran the environment check runs the others: python3, else sh with
    // the tools the image has (inpod.sh says `missing=TOOL` where none fits a check).
    let (program, script) = if env_run.ended == Ended::NoProgram {
        env_run = shell
            .run("sh", SH, "env", &env_args, Duration::from_secs(10))
            .await;
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
    peers(
        &shell,
        (program, script),
        &env,
        expected.get(&replica),
        facts,
        &mut r,
    )
    .await;
    gpus(&shell, (program, script), &env, pod, vars.container, &mut r).await;
    gateway(&shell, (program, script), &env, vars, secret_fp, &mut r).await;
    r
}

/// Runs probe's script in one replica's container, within the command's end.
struct Shell<'a> {
    kube: &'a Kube,
    ns: &'a str,
    pod: &'a str,
    container: &'a str,
    end: Instant,
}

impl Shell<'_> {
    /// `PROGRAM -c SCRIPT MODE ARGS…` through pods/exec (the key never in argv: the script
    /// reads it from the main process's environment).
    async fn run(
        &self,
        program: &str,
        script: &str,
        mode: &str,
        args: &[&str],
        within: Duration,
    ) -> podexec::Exec {
        let argv: Vec<String> = [program, "-c", script, mode]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect();
        let left = self.end.saturating_duration_since(Instant::now());
        podexec::run(
            self.kube,
            self.ns,
            self.pod,
            self.container,
            &argv,
            OUTPUT_LIMIT,
            within.min(left),
        )
        .await
    }
}

/// Peers: every host of the cluster spec the process sees (else the operator's).
async fn peers(
    shell: &Shell<'_>,
    (program, script): (&str, &str),
    env: &EnvAnswer,
    expected: Option<&Value>,
    facts: &dyn Fn(&str) -> PeerFacts,
    r: &mut ReplicaProbe,
) {
    let seen: Option<Value> = env
        .value("TF_CONFIG")
        .and_then(|v| serde_json::from_str(v).ok());
    let hosts = seen
        .as_ref()
        .or(expected)
        .map(inpod::cluster_hosts)
        .unwrap_or_default();
    if hosts.is_empty() {
        return;
    }
    let timeout = CONNECT_TIMEOUT_SECS.to_string();
    let mut answers = String::new();
    for part in host_chunks(&hosts) {
        let mut args: Vec<&str> = vec![&timeout];
        args.extend(part.iter().map(String::as_str));
        let within = Duration::from_secs(5 + 2 * CONNECT_TIMEOUT_SECS * part.len() as u64);
        let run = shell.run(program, script, "peers", &args, within).await;
        match &run.ended {
            Ended::Exited(0) => match inpod::missing_tool(&run.stdout) {
                Some(tool) => {
                    r.peers_check = Some(Check::not_checked(format!(
                        "the image has no {tool}: peers were not checked"
                    )));
                    return;
                }
                None => answers.push_str(&run.stdout),
            },
            other => {
                r.peers_check = Some(Check::not_checked(exec_problem(other, &run.stderr)));
                return;
            }
        }
    }
    r.peers = inpod::judge_peers(&answers, facts);
    inpod::account_for(&hosts, &mut r.peers);
}

/// The bytes of peers one exec carries. An exec's arguments travel in its request's query
/// string (`command=…` each), which servers bound (a 661-replica job's peer list was refused
/// as `uri too long`): a long list is checked in several execs.
const PEER_ARGS_BYTES: usize = 4096;

/// `hosts` in order, cut into runs of at most [`PEER_ARGS_BYTES`] (one host at least each).
fn host_chunks(hosts: &[String]) -> Vec<&[String]> {
    let mut out = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, h) in hosts.iter().enumerate() {
        if i > start && size + h.len() + 1 > PEER_ARGS_BYTES {
            out.push(&hosts[start..i]);
            (start, size) = (i, 0);
        }
        size += h.len() + 1;
    }
    if start < hosts.len() {
        out.push(&hosts[start..]);
    }
    out
}

/// The GPUs the process can open, where its container asked for some.
async fn gpus(
    shell: &Shell<'_>,
    (program, script): (&str, &str),
    env: &EnvAnswer,
    pod: &Pod,
    container: &str,
    r: &mut ReplicaProbe,
) {
    let requested = requested_gpus(pod, container);
    if requested > 0 {
        let run = shell
            .run(program, script, "gpus", &[], Duration::from_secs(10))
            .await;
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
}

/// The gateway, where the process has its base URL. A prefix the user named but the process
/// lacks (envFrom hid it from the spec check) is a check not made, never a pass.
async fn gateway(
    shell: &Shell<'_>,
    (program, script): (&str, &str),
    env: &EnvAnswer,
    vars: &Vars<'_>,
    secret_fp: Option<&str>,
    r: &mut ReplicaProbe,
) {
    if vars.prefix_given && env.value(vars.base_var).is_none() && env.value(vars.key_var).is_none()
    {
        r.gateway = Some(Check::not_checked(format!(
            "the process has neither {} nor {}: is --api-env-prefix right?",
            vars.key_var, vars.base_var
        )));
    } else if env.value(vars.base_var).is_some() {
        let timeout = CONNECT_TIMEOUT_SECS.to_string();
        let args = [ENVIRON, vars.base_var, vars.key_var, timeout.as_str()];
        let run = shell
            .run(
                program,
                script,
                "gateway",
                &args,
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
}
