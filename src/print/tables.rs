//! The day-two commands' tables: `list`'s rows and header, and `get`'s description with its
//! conditions, replicas, services, gateway env, TF_CONFIG and events, over the plain rows and
//! views of `jobview`.

use std::io::{self, Write};

use crate::cluster::podtable::PodRow;
use crate::model;
use crate::print::jobview::{
    GetView, JobRow, age, event_time, gateway_env, replica_order, tf_config_shape,
};

/// Left-aligned columns separated by three spaces, as kubectl's tabwriter prints them.
pub fn table(headers: Option<&[&str]>, rows: &[Vec<String>]) -> String {
    let ncols = headers
        .map(|h| h.len())
        .or_else(|| rows.first().map(Vec::len))
        .unwrap_or(0);
    let mut widths = vec![0usize; ncols];
    let all = headers
        .map(|h| h.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .into_iter()
        .chain(rows.iter().cloned());
    // Every cell may come from the cluster: escaped before it is measured or printed.
    let all: Vec<Vec<String>> = all
        .map(|r| {
            r.iter()
                .map(|c| super::terminal::escape(c).into_owned())
                .collect()
        })
        .collect();
    for r in &all {
        for (i, c) in r.iter().enumerate().take(ncols) {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &all {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate().take(ncols) {
            if i + 1 == ncols {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}   ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The cells of a row, with NAMESPACE first for `-A` and NODES/REASON for wide.
pub fn row_cells(r: &JobRow, all_namespaces: bool, wide: bool) -> Vec<String> {
    let mut v = Vec::new();
    if all_namespaces {
        v.push(r.namespace.clone());
    }
    v.extend([
        r.name.clone(),
        r.state.clone(),
        r.age.clone(),
        r.duration.clone(),
        r.replicas.clone(),
        r.restarts.clone(),
        r.gpus.to_string(),
    ]);
    // REASON by default (issue 46): the State column says Running while a replica crash-loops.
    if wide {
        v.push(r.nodes.clone());
        v.push(r.progress.clone());
    }
    v.push(r.reason.clone());
    v
}

/// The header matching [`row_cells`].
pub fn list_headers(all_namespaces: bool, wide: bool) -> Vec<&'static str> {
    let mut h = Vec::new();
    if all_namespaces {
        h.push("NAMESPACE");
    }
    h.extend([
        "NAME", "STATE", "AGE", "DURATION", "REPLICAS", "RESTARTS", "GPUS",
    ]);
    if wide {
        h.extend(["NODES", "PROGRESS"]);
    }
    h.push("REASON");
    h
}

/// `get`'s description into `w`.
pub fn get(v: &GetView, w: &mut dyn Write) -> io::Result<()> {
    w.write_all(get_text(v).as_bytes())
}

/// The text of `get`, its strings from the cluster escaped for a terminal.
pub fn get_text(v: &GetView) -> String {
    super::terminal::escape(&describe(v)).into_owned()
}

fn describe(v: &GetView) -> String {
    let job = v.job;
    let mut s = String::new();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let row = &v.row;
    s.push_str(&format!("Name:       {name}\n"));
    s.push_str(&format!(
        "Namespace:  {}\n",
        job.metadata.namespace.as_deref().unwrap_or_default()
    ));
    s.push_str(&format!(
        "State:      {}\n",
        if row.state.is_empty() {
            "<none>"
        } else {
            &row.state
        }
    ));
    // The State column is the operator's last condition: a job stays "Running" while a
    // replica crash-loops. What `list -o wide` names as REASON is said here too.
    if let Some(problem) = crate::print::jobview::problem(row) {
        s.push_str(&format!("Problem:    {problem}\n"));
    }
    s.push_str(&format!("Age:        {}\n", row.age));
    s.push_str(&format!("Duration:   {}\n", row.duration));
    s.push_str(&format!("Replicas:   {}\n", row.replicas));
    s.push_str(&format!("Restarts:   {}\n", row.restarts));
    s.push_str(&format!("GPUs:       {}\n", row.gpus));
    for (i, (replica, at)) in v.progress.iter().enumerate() {
        let head = if i == 0 { "Progress:" } else { "" };
        s.push_str(&format!("{head:<12}{replica} {at}\n"));
    }

    conditions(v.job, &mut s);
    replicas(v.pods, &mut s);
    s.push_str("\nServices:\n");
    if v.services.is_empty() {
        s.push_str("  <none>\n");
    } else {
        let rows: Vec<Vec<String>> = v
            .services
            .iter()
            .map(|(n, ip, p)| vec![n.clone(), ip.clone(), p.clone()])
            .collect();
        for l in table(Some(&["NAME", "CLUSTER-IP", "PORTS"]), &rows).lines() {
            s.push_str(&format!("  {l}\n"));
        }
    }

    s.push_str("\nGateway env (Secret references only):\n");
    for (role, lines) in gateway_env(job) {
        if lines.is_empty() {
            s.push_str(&format!("  {role}: <none>\n"));
        }
        for l in lines {
            s.push_str(&format!("  {role}/{l}\n"));
        }
    }
    s.push_str(&format!("\nTF_CONFIG: {}\n", tf_config_shape(job)));

    events(v, &mut s);
    s
}

/// The job's conditions, as kubectl describe lists them.
fn conditions(job: &crate::model::TFJob, s: &mut String) {
    s.push_str("\nConditions:\n");
    let conds = job
        .status
        .as_ref()
        .map(|st| st.conditions.as_slice())
        .unwrap_or(&[]);
    if conds.is_empty() {
        s.push_str("  <none> (the training-operator has not reconciled this job)\n");
    } else {
        let rows: Vec<Vec<String>> = conds
            .iter()
            .map(|c| {
                vec![
                    c.last_transition_time
                        .as_ref()
                        .map(|t| t.0.to_string())
                        .unwrap_or_default(),
                    c.type_.clone(),
                    c.status.clone(),
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                ]
            })
            .collect();
        for l in table(
            Some(&["TIME", "TYPE", "STATUS", "REASON", "MESSAGE"]),
            &rows,
        )
        .lines()
        {
            s.push_str(&format!("  {l}\n"));
        }
    }
}

/// The replicas' pods in the operator's order, as `kubectl get pods` shows them.
fn replicas(pods: &[PodRow], s: &mut String) {
    s.push_str("\nReplicas:\n");
    if pods.is_empty() {
        s.push_str("  <no pods>\n");
    } else {
        let mut pods: Vec<&PodRow> = pods.iter().collect();
        pods.sort_by_key(|p| {
            let l = format!(
                "{}-{}",
                p.labels
                    .get(model::LABEL_REPLICA_TYPE)
                    .cloned()
                    .unwrap_or_default(),
                p.labels
                    .get(model::LABEL_REPLICA_INDEX)
                    .cloned()
                    .unwrap_or_default()
            );
            replica_order(&l)
        });
        let rows: Vec<Vec<String>> = pods
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    p.ready.clone(),
                    p.status.clone(),
                    p.restarts.clone(),
                    p.age.clone(),
                    p.node.clone(),
                ]
            })
            .collect();
        for l in table(
            Some(&["POD", "READY", "STATUS", "RESTARTS", "AGE", "NODE"]),
            &rows,
        )
        .lines()
        {
            s.push_str(&format!("  {l}\n"));
        }
    }
}

/// The job's and its pods' latest events, oldest first.
fn events(v: &GetView, s: &mut String) {
    s.push_str("\nEvents:\n");
    let mut evs: Vec<&k8s_openapi::api::core::v1::Event> = v.events.iter().collect();
    evs.sort_by_key(|e| event_time(e));
    let skip = evs.len().saturating_sub(v.max_events);
    if evs.is_empty() {
        s.push_str("  <none>\n");
    } else {
        let rows: Vec<Vec<String>> = evs[skip..]
            .iter()
            .map(|e| {
                vec![
                    age(event_time(e), v.now),
                    e.type_.clone().unwrap_or_default(),
                    e.reason.clone().unwrap_or_default(),
                    format!(
                        "{}/{}",
                        e.involved_object
                            .kind
                            .as_deref()
                            .unwrap_or("")
                            .to_lowercase(),
                        e.involved_object.name.as_deref().unwrap_or("")
                    ),
                    e.message.clone().unwrap_or_default().trim().to_string(),
                ]
            })
            .collect();
        for l in table(Some(&["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"]), &rows).lines() {
            s.push_str(&format!("  {l}\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let t = table(
            Some(&["NAME", "STATE"]),
            &[vec!["a-long-name".into(), "Running".into()]],
        );
        assert_eq!(t, "NAME          STATE\na-long-name   Running\n");
    }
}
