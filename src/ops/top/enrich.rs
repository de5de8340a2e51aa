//! `top`'s two best-effort readings per replica (issue 49), both within one budget: what its
//! GPUs do, and where its training is.
//!
//! GPU use comes from DCGM's exporter through Prometheus when a Prometheus answers for the pod
//! (one query for all of them), else from `nvidia-smi` run in the pod (one exec each, at most
//! [`PARALLEL`] at a time), else it is unknown and the reason says what was tried. Progress
//! comes from the replica's recent lines, as `get` and `diagnose` read them.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use regex::Regex;

use crate::cluster::Kube;
use crate::cluster::budget::Budget;
use crate::cluster::podexec::{self, Ended};
use crate::cluster::prometheus::{self, PromService};
use crate::diagnose::gpu_use::{self, GpuUse};
use crate::diagnose::progress;
use crate::model;

/// Reads in flight at once (execs or log reads).
pub const PARALLEL: usize = 8;

/// The most of nvidia-smi's output kept: one line per GPU.
const SMI_BYTES: usize = 16 * 1024;

/// Pods by (namespace, name).
type ByPod<T> = BTreeMap<(String, String), T>;

fn key(p: &Pod) -> (String, String) {
    (p.namespace().unwrap_or_default(), p.name_any())
}

fn running(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && p.metadata.deletion_timestamp.is_none()
}

/// The container the training runs in: `tensorflow`, else the pod's first.
fn container(p: &Pod) -> Option<String> {
    let cs = &p.spec.as_ref()?.containers;
    cs.iter()
        .find(|c| c.name == model::DEFAULT_CONTAINER_NAME)
        .or(cs.first())
        .map(|c| c.name.clone())
}

/// Where to ask Prometheus, or why nowhere.
async fn prometheus_for(
    kube: &Kube,
    named: Option<&PromService>,
    budget: &Budget,
) -> Result<PromService, String> {
    if let Some(p) = named {
        return Ok(p.clone());
    }
    match budget.attempt(prometheus::find(kube)).await {
        Some(Ok(Some(p))) => Ok(p),
        Some(Ok(None)) => Err(format!(
            "no Prometheus Service found (labelled {}; --prometheus NAMESPACE/SERVICE[:PORT] \
             names one)",
            prometheus::SELECTORS.join(" or ")
        )),
        Some(Err(why)) => Err(why),
        None => Err("no time was left to look for a Prometheus".into()),
    }
}

/// GPU use of the pods that ask for GPUs (`gpus` by pod); a pod absent from the result asks
/// for none.
pub async fn gpu_use(
    kube: &Kube,
    pods: &[&Pod],
    gpus: &ByPod<i64>,
    namespace: Option<&str>,
    named: Option<&PromService>,
    budget: &Budget,
) -> ByPod<GpuUse> {
    let mut out = ByPod::new();
    let mut wanted: Vec<&Pod> = Vec::new();
    for p in pods {
        if gpus.get(&key(p)).copied().unwrap_or(0) <= 0 {
            continue;
        }
        if running(p) {
            wanted.push(p);
        } else {
            out.insert(key(p), GpuUse::Unknown("its pod is not running".into()));
        }
    }
    if wanted.is_empty() {
        return out;
    }
    // One query for every pod, under both of DCGM's labellings.
    let prom_why = match prometheus_for(kube, named, budget).await {
        Err(why) => why,
        Ok(svc) => {
            let q = gpu_use::promql(namespace);
            match budget.attempt(prometheus::query(kube, &svc, &q)).await {
                None => format!("{svc} did not answer in time"),
                Some(Err(why)) => why,
                Some(Ok(answer)) => match gpu_use::from_prometheus(&answer) {
                    Err(why) => format!("{svc}: {why}"),
                    Ok(samples) => {
                        let source = format!("DCGM via Prometheus {svc}");
                        for p in &wanted {
                            if let Some(s) = samples.get(&key(p)) {
                                out.insert(
                                    key(p),
                                    GpuUse::Seen {
                                        sample: s.clone(),
                                        source: source.clone(),
                                    },
                                );
                            }
                        }
                        format!("Prometheus {svc} has no DCGM series for it")
                    }
                },
            }
        }
    };
    let rest: Vec<&Pod> = wanted
        .into_iter()
        .filter(|p| !out.contains_key(&key(p)))
        .collect();
    let argv: Vec<String> = gpu_use::NVIDIA_SMI.iter().map(|s| s.to_string()).collect();
    let execs = futures::stream::iter(rest.into_iter().map(|p| {
        let argv = &argv;
        async move {
            let (ns, name) = key(p);
            let Some(c) = container(p) else {
                return (key(p), Err("its pod has no container".to_string()));
            };
            let within = budget.remaining();
            if within.is_zero() {
                return (key(p), Err("no time was left to run nvidia-smi".into()));
            }
            let ran = podexec::run(kube, &ns, &name, &c, argv, SMI_BYTES, within).await;
            (key(p), smi_reading(&ran))
        }
    }))
    .buffer_unordered(PARALLEL)
    .collect::<Vec<_>>()
    .await;
    for (k, r) in execs {
        let g = match r {
            Ok(sample) => GpuUse::Seen {
                sample,
                source: "nvidia-smi".into(),
            },
            Err(smi_why) => GpuUse::Unknown(format!("{prom_why}, and {smi_why}")),
        };
        out.insert(k, g);
    }
    out
}

/// nvidia-smi's answer, or why it gave none.
fn smi_reading(ran: &podexec::Exec) -> Result<gpu_use::GpuSample, String> {
    let first_line = |s: &str| -> String {
        s.lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .chars()
            .take(160)
            .collect()
    };
    match &ran.ended {
        Ended::Exited(0) => gpu_use::from_nvidia_smi(&ran.stdout),
        Ended::Exited(code) => {
            let said = first_line(if ran.stdout.trim().is_empty() {
                &ran.stderr
            } else {
                &ran.stdout
            });
            Err(format!("nvidia-smi in the pod exited {code}: {said}"))
        }
        Ended::NoProgram => Err("nvidia-smi is not in the pod's image".into()),
        Ended::Forbidden(_) => {
            Err("running nvidia-smi in the pod is forbidden (create pods/exec)".into())
        }
        Ended::Failed(why) => Err(format!("nvidia-smi could not run: {}", first_line(why))),
        Ended::TimedOut => Err("nvidia-smi did not answer in time".into()),
    }
}

/// Where each running replica that logs steps is, by pod: `step 620/5,000 (12.3/s)`, or `-`
/// cells for those whose lines show no step; a replica whose lines cannot be read in the
/// budget is left out.
pub async fn progress(
    kube: &Kube,
    pods: &[&Pod],
    pattern: Option<&Regex>,
    budget: &Budget,
) -> ByPod<String> {
    let trainers = pods
        .iter()
        .filter(|p| {
            running(p)
                && p.labels()
                    .get(model::LABEL_REPLICA_TYPE)
                    .is_some_and(|t| crate::ops::progress::logs_steps(t))
        })
        .filter_map(|p| {
            let key = key(p);
            Some(crate::ops::progress::Trainer {
                namespace: key.0.clone(),
                pod: key.1.clone(),
                container: container(p)?,
                key,
            })
        })
        .collect();
    crate::ops::progress::read(kube, trainers, pattern, budget)
        .await
        .into_iter()
        .map(|(k, p)| {
            let cell = match p {
                Some(p) => cell(&p),
                None => progress::NO_STEP_YET.into(),
            };
            (k, cell)
        })
        .collect()
}

/// A table cell: the step, of how many, and the rate.
fn cell(p: &progress::Progress) -> String {
    let mut s = p.position();
    if let Some(r) = p.rate {
        s.push_str(&format!(" ({}/s)", progress::rate_text(r)));
    }
    s
}

/// The readings' budget: [`ENRICH`] within the command's deadline.
pub fn budget(kube: &Kube) -> Budget {
    Budget::within(ENRICH, &kube.deadline)
}

/// How long `top` spends on GPU use and progress together, beyond its reads of the jobs, pods
/// and metrics: an exec per GPU replica and a log read per trainer, [`PARALLEL`] at a time.
pub const ENRICH: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(stdout: &str, stderr: &str, ended: Ended) -> podexec::Exec {
        podexec::Exec {
            stdout: stdout.into(),
            stderr: stderr.into(),
            ended,
        }
    }

    #[test]
    fn nvidia_smi_failures_are_said_in_its_words() {
        let no_driver = exec(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
            "",
            Ended::Exited(9),
        );
        let e = smi_reading(&no_driver).unwrap_err();
        assert!(
            e.starts_with("nvidia-smi in the pod exited 9: NVIDIA-SMI has failed"),
            "{e}"
        );
        assert_eq!(
            smi_reading(&exec("", "", Ended::NoProgram)).unwrap_err(),
            "nvidia-smi is not in the pod's image"
        );
        let ok = smi_reading(&exec("GPU-1, 40, 100, 1000\n", "", Ended::Exited(0))).unwrap();
        assert_eq!(ok.util_percent, Some(40.0));
    }

    #[test]
    fn a_cell_is_the_step_its_total_and_its_rate() {
        let p = progress::Progress {
            step: 4100,
            total: Some(10_000),
            rate: Some(12.34),
            ..Default::default()
        };
        assert_eq!(cell(&p), "step 4,100/10,000 (12.3/s)");
        let bare = progress::Progress {
            step: 7,
            ..Default::default()
        };
        assert_eq!(cell(&bare), "step 7");
    }
}
