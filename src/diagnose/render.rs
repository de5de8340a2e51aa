//! Text output: one block per layer, kubectl-like, with ✔/✘ on a terminal and ASCII tags when
//! piped.

use super::{Diagnosis, Finding, Layer, Verdict};

const LABEL_WIDTH: usize = 10;

fn mark(v: Verdict, color: bool) -> String {
    if !color {
        return match v {
            Verdict::Ok => "[ok]  ",
            Verdict::Info => "[info]",
            Verdict::Warning => "[warn]",
            Verdict::Fail => "[FAIL]",
            Verdict::Unknown => "[??]  ",
        }
        .to_string();
    }
    let (code, sym) = match v {
        Verdict::Ok => ("32", "✔"),
        Verdict::Info => ("2", "–"),
        Verdict::Warning => ("33", "!"),
        Verdict::Fail => ("31;1", "✘"),
        Verdict::Unknown => ("35", "?"),
    };
    format!("\x1b[{code}m{sym}\x1b[0m")
}

/// `tf-worker-0, -1, -2` for names that differ only in their index.
pub(super) fn compact(names: &[String]) -> String {
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

pub(super) fn text(d: &Diagnosis, color: bool) -> String {
    let mut s = String::new();
    let title = format!("TFJob {}/{}", d.namespace, d.job);
    let title = if color {
        format!("\x1b[1m{title}\x1b[0m")
    } else {
        title
    };
    s.push_str(&format!("{title}: {}", d.state));
    if !d.pods.is_empty() {
        s.push_str(&format!(" (pods: {})", d.pods));
    }
    s.push('\n');
    for n in &d.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    let pad = " ".repeat(if color { 3 } else { 8 } + LABEL_WIDTH);
    for layer in Layer::ALL {
        let mut first = true;
        for f in d.findings.iter().filter(|f| f.layer == layer) {
            let label = if first { layer.label() } else { "" };
            first = false;
            block(&mut s, f, label, &pad, color);
        }
    }
    s
}

fn block(s: &mut String, f: &Finding, label: &str, pad: &str, color: bool) {
    s.push_str(&format!(
        "{} {label:<LABEL_WIDTH$} {}\n",
        mark(f.verdict, color),
        f.summary
    ));
    for e in &f.evidence {
        s.push_str(&format!("{pad}{e}\n"));
    }
    if !f.log.is_empty() {
        for line in &f.log {
            s.push_str(&format!("{pad}  | {line}\n"));
        }
    }
    if !f.replicas.is_empty() && f.verdict != Verdict::Ok {
        let verb = match f.layer {
            Layer::Scheduling => "blocks",
            Layer::Objects => "missing",
            _ => "pods",
        };
        s.push_str(&format!("{pad}{verb}: {}\n", compact(&f.replicas)));
    }
    if let Some(next) = &f.next_step {
        let next_label = if color {
            "\x1b[1mnext:\x1b[0m"
        } else {
            "next:"
        };
        s.push_str(&format!("{pad}{next_label} {next}\n"));
    }
}
