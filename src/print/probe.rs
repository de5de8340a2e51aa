//! `probe`'s report as text. By default ([`summary`]) the verdict line and the checks that did
//! not pass, collapsed by cause with the replicas they hit, then a `next:` line: 10 healthy
//! replicas are one line, not 150. `-o wide` or `-v` ([`text`]) adds one block per replica (its
//! state, TF_CONFIG, the gateway, GPUs, extra containers) and the peer matrix, from → to.

use std::fmt::Write;

use crate::diagnose::inpod::{Check, ProbeReport, ReplicaProbe, Status};

fn mark(s: Status) -> &'static str {
    match s {
        Status::Pass => "ok",
        Status::Fail => "FAIL",
        Status::NotChecked => "??",
    }
}

/// What came from the pods or the cluster, with control characters shown as escapes, so that
/// nothing they print can drive the terminal.
fn clean(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn line(out: &mut String, label: &str, c: &Check) {
    let _ = writeln!(
        out,
        "  {label:<10} {:<4} {}",
        mark(c.status),
        clean(&c.detail)
    );
}

/// A probed replica's checks with the label each is printed under, in the report's order; a
/// peer's check names the peer.
fn labelled(rep: &ReplicaProbe) -> Vec<(&'static str, Check)> {
    let mut checks = Vec::new();
    checks.extend(rep.tf_config.iter().map(|c| ("TF_CONFIG", c.clone())));
    checks.extend(rep.peers_check.iter().map(|c| ("peers", c.clone())));
    checks.extend(rep.peers.iter().map(|p| {
        let detail = format!("{}: {}", p.to, p.check.detail);
        let status = p.check.status;
        ("→ peer", Check { status, detail })
    }));
    checks.extend(rep.gateway.iter().map(|c| ("gateway", c.clone())));
    checks.extend(rep.gateway_chat.iter().map(|c| ("chat", c.clone())));
    checks.extend(rep.gpus.iter().map(|c| ("GPUs", c.clone())));
    checks.extend(rep.containers.iter().map(|c| ("container", c.clone())));
    checks
}

/// The default report: the verdict, the checks that did not pass grouped by what they say
/// (each with the replicas it hit), and what to run next.
pub fn summary(r: &ProbeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", clean(&r.verdict));
    // (status, label, detail) → replicas, in the order first met.
    let mut causes: Vec<((Status, String, String), Vec<String>)> = Vec::new();
    let mut add = |status: Status, label: &str, detail: String, replica: &str| {
        let key = (status, label.to_string(), detail);
        match causes.iter_mut().find(|(k, _)| *k == key) {
            Some((_, reps)) => reps.push(replica.to_string()),
            None => causes.push((key, vec![replica.to_string()])),
        }
    };
    let mut not_running = Vec::new();
    for rep in &r.replicas {
        if !rep.probed {
            not_running.push(format!("{} ({})", rep.replica, rep.state));
            continue;
        }
        for (label, c) in labelled(rep) {
            if c.status != Status::Pass {
                add(c.status, label, c.detail, &rep.replica);
            }
        }
    }
    if !not_running.is_empty() {
        let _ = writeln!(
            out,
            "not probed (not running): {}",
            clean(&not_running.join(", "))
        );
    }
    if !causes.is_empty() {
        let _ = writeln!(out);
    }
    for ((status, label, detail), reps) in &causes {
        let _ = writeln!(
            out,
            "  {label:<10} {:<4} {} ({})",
            mark(*status),
            clean(detail),
            clean(&reps.join(", "))
        );
    }
    let _ = writeln!(
        out,
        "next: `{} -o wide` (every replica's checks and the peer matrix)",
        clean(&r.again)
    );
    out
}

/// The full report: [`summary`]'s verdict, then every replica's block and the peer matrix.
pub fn text(r: &ProbeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", clean(&r.verdict));
    for rep in &r.replicas {
        let _ = writeln!(
            out,
            "\n{} (pod {}): {}",
            clean(&rep.replica),
            clean(&rep.pod),
            clean(&rep.state)
        );
        if !rep.probed {
            let _ = writeln!(out, "  not probed: only running replicas are");
            continue;
        }
        for (label, c) in labelled(rep) {
            line(&mut out, label, &c);
        }
    }
    let probed: Vec<_> = r.replicas.iter().filter(|r| !r.peers.is_empty()).collect();
    if let Some(first) = probed.first() {
        let _ = writeln!(out, "\nPeers (from ↓, to →):");
        let cols: Vec<String> = first
            .peers
            .iter()
            .map(|p| p.to.split('.').next().unwrap_or(&p.to).to_string())
            .collect();
        let width = r
            .replicas
            .iter()
            .map(|r| r.replica.len())
            .max()
            .unwrap_or(4);
        let _ = write!(out, "  {:<width$}", "");
        for c in &cols {
            let _ = write!(out, "  {}", clean(c));
        }
        let _ = writeln!(out);
        for rep in &probed {
            let mut row = format!("  {:<width$}", clean(&rep.replica));
            for (i, c) in cols.iter().enumerate() {
                let cell = rep.peers.get(i).map_or("-", |p| mark(p.check.status));
                row += &format!("  {cell:<w$}", w = c.len());
            }
            let _ = writeln!(out, "{}", row.trim_end());
        }
    }
    out
}
