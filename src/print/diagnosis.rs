//! `diagnose`'s report as text (also printed after a failed `wait`): one block per layer,
//! kubectl-like, with ✔/✘ on a terminal and ASCII tags when piped. It prints the plain
//! [`Diagnosis`] the pure checks return, into the writer the command gives.

use std::io::{self, Write};

use crate::diagnose::{Diagnosis, Finding, Grade, Layer};

const LABEL_WIDTH: usize = 10;

fn mark(v: Grade, color: bool) -> String {
    if !color {
        return match v {
            Grade::Ok => "[ok]  ",
            Grade::Info => "[info]",
            Grade::Warning => "[warn]",
            Grade::Fail => "[FAIL]",
            Grade::Unknown => "[??]  ",
        }
        .to_string();
    }
    let (code, sym) = match v {
        Grade::Ok => ("32", "✔"),
        Grade::Info => ("2", "–"),
        Grade::Warning => ("33", "!"),
        Grade::Fail => ("31;1", "✘"),
        Grade::Unknown => ("35", "?"),
    };
    format!("\x1b[{code}m{sym}\x1b[0m")
}

/// `tf-worker-0, -1, -2` for names that differ only in their index.
pub fn compact(names: &[String]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let prefix = |n: &str| n.rsplit_once('-').map(|(p, _)| p.to_string());
    const SHOWN: usize = 20;
    let mut out = vec![first.clone()];
    for n in names.iter().take(SHOWN).skip(1) {
        match (prefix(first), n.rsplit_once('-')) {
            (Some(p), Some((q, idx))) if p == q => out.push(format!("-{idx}")),
            _ => out.push(n.clone()),
        }
    }
    let mut s = out.join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" … and {} more", names.len() - SHOWN));
    }
    s
}

/// The whole report; `color` uses ANSI colours and ✔/✘ marks, otherwise plain ASCII.
pub fn diagnosis(d: &Diagnosis, color: bool, s: &mut dyn Write) -> io::Result<()> {
    // Every string below but the colours may be the cluster's: escaped as it is written.
    let esc = |t: &str| super::terminal::escape(t).into_owned();
    let title = esc(&format!("TFJob {}/{}", d.namespace, d.job));
    let title = if color {
        format!("\x1b[1m{title}\x1b[0m")
    } else {
        title
    };
    write!(s, "{title}: {}", esc(&d.state))?;
    if !d.pods.is_empty() {
        write!(s, " (pods: {})", esc(&d.pods))?;
    }
    writeln!(s)?;
    for n in &d.notes {
        writeln!(s, "note: {}", esc(n))?;
    }
    let pad = " ".repeat(if color { 3 } else { 8 } + LABEL_WIDTH);
    // Every row names its layer: a row without one read as part of the row above it (a
    // "[FAIL] job Failed" under "[ok] Controller").
    for layer in Layer::ALL {
        for f in d.findings.iter().filter(|f| f.layer == layer) {
            block(s, f, layer.label(), &pad, color)?;
        }
    }
    // Issue 37: why each replica died, one line each, the first to fail first; then the
    // restarts the cluster still shows. The report ends on the most specific finding.
    if !d.last_log.is_empty() {
        writeln!(s, "Last log line: {}", esc(&d.last_log.join(", ")))?;
    }
    if !d.progress.is_empty() {
        writeln!(s, "Progress:")?;
        for line in &d.progress {
            writeln!(s, "  {}", esc(line))?;
        }
    }
    if !d.restart_ledger.is_empty() {
        writeln!(s, "Restarts (oldest first):")?;
        for line in &d.restart_ledger {
            writeln!(s, "  {}", esc(line))?;
        }
    }
    if !d.failures.is_empty() {
        writeln!(s, "Failed replicas (the first to fail first):")?;
        for f in &d.failures {
            writeln!(s, "  {}", esc(&f.line))?;
            if let Some(e) = &f.evidence {
                writeln!(s, "  {pad}{}", esc(e))?;
            }
        }
    }
    Ok(())
}

/// [`diagnosis`] as a string, for the command to hand to its `Output` (which redacts it).
pub fn text(d: &Diagnosis, color: bool) -> String {
    let mut buf = Vec::new();
    diagnosis(d, color, &mut buf).expect("writing to memory does not fail");
    String::from_utf8(buf).expect("the report is UTF-8")
}

fn block(s: &mut dyn Write, f: &Finding, label: &str, pad: &str, color: bool) -> io::Result<()> {
    let esc = |t: &str| super::terminal::escape(t).into_owned();
    writeln!(
        s,
        "{} {label:<LABEL_WIDTH$} {}",
        mark(f.verdict, color),
        esc(&f.summary)
    )?;
    for e in &f.evidence {
        writeln!(s, "{pad}{}", esc(e))?;
    }
    if !f.log.is_empty() {
        for line in &f.log {
            writeln!(s, "{pad}  | {}", esc(line))?;
        }
    }
    if !f.replicas.is_empty() && f.verdict != Grade::Ok {
        let verb = match f.layer {
            Layer::Scheduling => "blocks",
            Layer::Objects => "missing",
            _ => "pods",
        };
        writeln!(s, "{pad}{verb}: {}", esc(&compact(&f.replicas)))?;
    }
    if let Some(next) = &f.next_step {
        let next_label = if color {
            "\x1b[1mnext:\x1b[0m"
        } else {
            "next:"
        };
        writeln!(s, "{pad}{next_label} {}", esc(next))?;
    }
    Ok(())
}
