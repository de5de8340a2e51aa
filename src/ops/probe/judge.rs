//! What `probe` decides before and after the checks, pure over what was read: which replica
//! does not run (and so is not probed), the verdict line, a failing column of the peer matrix,
//! the options it refuses. The checks' own judgement is `diagnose::inpod`'s.

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::podexec::Ended;
use crate::diagnose::inpod::{ReplicaProbe, Status};
use crate::error::{Error, Result};
use crate::model::TFJob;

/// `--api-env-prefix P` given: refuses (exit 2, before any exec) a prefix that no pod's
/// container sets as `P_API_KEY` or `P_BASE_URL` and cannot take from `envFrom` either,
/// naming the prefixes it does set. A typo must not turn into a skipped gateway check.
pub(super) fn prefix_in_spec(pods: &[Pod], container: &str, prefix: &str) -> Result<()> {
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
pub(super) fn waiting_for(job: &TFJob, pods: &[Pod], container: &str) -> Option<String> {
    for t in job.replica_types() {
        for i in 0..job.replicas(t).max(0) {
            let replica = format!("{}-{i}", t.as_str());
            match pods
                .iter()
                .find(|p| crate::ops::workload::replica_of(p) == replica)
            {
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

/// `worker-10` after `worker-9`, roles in the operator's order.
pub(super) fn order(replica: &str) -> (String, u64) {
    let (role, index) = replica.rsplit_once('-').unwrap_or((replica, "0"));
    (role.to_string(), index.parse().unwrap_or(0))
}

/// The verdict line: the first failing check, naming its replica; else the replicas not running
/// or not checked; else what passed.
pub(super) fn verdict(kind: &str, name: &str, total: usize, replicas: &[ReplicaProbe]) -> String {
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
pub(super) fn failing_column(replicas: &[ReplicaProbe]) -> Option<String> {
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

/// Why a replica's pod is not probed, as a replica and as a peer alike: its training container
/// does not run ([`not_running`]), or it crash-loops and runs only between two back-offs
/// ([`crash_looping`]). None when it runs.
pub(super) fn not_probed(
    pod: &Pod,
    container: &str,
    now: k8s_openapi::jiff::Timestamp,
) -> Option<String> {
    not_running(pod, container).or_else(|| crash_looping(pod, now))
}

/// Why a pod is not probed, or None when its training container runs.
pub(super) fn not_running(pod: &Pod, container: &str) -> Option<String> {
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
pub(super) fn crash_looping(pod: &Pod, now: k8s_openapi::jiff::Timestamp) -> Option<String> {
    use crate::cluster::pod::PodFacts;
    if pod.restarts() < crate::diagnose::DEFAULT_MAX_RESTARTS as i32 {
        return None;
    }
    let mut ev = crate::diagnose::failure::PodEvidence::bare(
        &pod.metadata,
        pod.status.as_ref(),
        crate::diagnose::DEFAULT_MAX_RESTARTS,
    );
    // Restarts the kubelet has since recovered from are history here too.
    ev.now = Some(now);
    let f = crate::diagnose::failure::classify(ev, None)?;
    // `Worker-1: CrashLoop (4 restarts, …)` without the label the report puts first.
    let line = f.line.split_once(": ").map_or(f.line.as_str(), |(_, l)| l);
    Some(format!("{line}: it runs only between restarts"))
}

/// The `nvidia.com/gpu` the training container asks for (its limit, else its request).
pub(super) fn requested_gpus(pod: &Pod, container: &str) -> u64 {
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
        .and_then(|q| crate::model::quantity::parse_quantity(&q.0))
        .map_or(0, |milli| u64::try_from(milli / 1000).unwrap_or(0))
}

/// Why a check could not run, in one line.
pub(super) fn exec_problem(ended: &Ended, stderr: &str) -> String {
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
