//! Server-side printing (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`):
//! kubectl's columns for the built-ins, CRD printer columns for custom resources.

use serde_json::{Value, json};

use crate::http::Query;
use crate::resources::ResourceInfo;
use crate::store::Store;
use crate::util::{human_duration, parse_rfc3339, unix_now};

fn col(name: &str, ty: &str, format: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

fn age(obj: &Value) -> String {
    obj["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(parse_rfc3339)
        .map(|t| human_duration(unix_now() - t))
        .unwrap_or_else(|| "<unknown>".into())
}

/// Minimal JSONPath for printer columns: `.a.b`, `[n]`, `[-1:]`, `[*]`.
pub fn jsonpath(obj: &Value, path: &str) -> Vec<Value> {
    let mut cur = vec![obj.clone()];
    // Split on dots outside brackets, so a filter such as
    // `conditions[?(@.type=='Admitted')]` (Kueue's Workload columns) stays one segment.
    let mut segs: Vec<String> = vec![String::new()];
    let mut depth = 0;
    for ch in path.trim_start_matches('.').chars() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            '.' if depth == 0 => {
                segs.push(String::new());
                continue;
            }
            _ => {}
        }
        segs.last_mut().unwrap().push(ch);
    }
    for seg in segs.iter().map(String::as_str).filter(|s| !s.is_empty()) {
        let (key, idx) = match seg.find('[') {
            Some(i) => (&seg[..i], Some(seg[i + 1..].trim_end_matches(']'))),
            None => (seg, None),
        };
        let mut next = Vec::new();
        for v in cur {
            let v = if key.is_empty() { v } else { v[key].clone() };
            match idx {
                None => next.push(v),
                Some(ix) => {
                    let arr = v.as_array().cloned().unwrap_or_default();
                    let n = arr.len() as i64;
                    if ix == "*" {
                        next.extend(arr);
                    } else if let Some(f) =
                        ix.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')'))
                    {
                        // `?(@.field=='value')`: the elements whose field equals value.
                        if let Some((field, want)) = f.split_once("==") {
                            let want = want.trim().trim_matches(|c| c == '\'' || c == '"');
                            next.extend(
                                arr.into_iter()
                                    .filter(|e| e[field.trim()].as_str() == Some(want)),
                            );
                        }
                    } else if let Some((a, b)) = ix.split_once(':') {
                        let norm = |s: &str, d: i64| {
                            s.parse::<i64>()
                                .map(|x| if x < 0 { (n + x).max(0) } else { x.min(n) })
                                .unwrap_or(d)
                        };
                        let (a, b) = (norm(a, 0), norm(b, n));
                        if a < b {
                            next.extend(arr[a as usize..b as usize].iter().cloned());
                        }
                    } else if let Ok(i) = ix.parse::<i64>() {
                        let i = if i < 0 { n + i } else { i };
                        if i >= 0 && i < n {
                            next.push(arr[i as usize].clone());
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur.into_iter().filter(|v| !v.is_null()).collect()
}

fn pod_status(p: &Value) -> (String, String, String) {
    let cs = p["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let total = p["spec"]["containers"]
        .as_array()
        .map(|a| a.len())
        .unwrap_or(0);
    let ready = cs.iter().filter(|c| c["ready"] == json!(true)).count();
    let restarts: i64 = cs
        .iter()
        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
        .sum();
    let mut reason = p["status"]["reason"]
        .as_str()
        .or(p["status"]["phase"].as_str())
        .unwrap_or("Pending")
        .to_string();
    let mut has_running = false;
    for c in cs.iter().rev() {
        if let Some(r) = c["state"]["waiting"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_string();
        } else if let Some(t) = c["state"].get("terminated") {
            reason = match t["reason"].as_str().filter(|r| !r.is_empty()) {
                Some(r) => r.to_string(),
                None => format!("ExitCode:{}", t["exitCode"]),
            };
        } else if c["ready"] == json!(true) && c["state"].get("running").is_some() {
            has_running = true;
        }
    }
    if reason == "Completed" && has_running {
        reason = "Running".into();
    }
    if p["metadata"].get("deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    let mut restarts_s = restarts.to_string();
    if let Some(t) = cs
        .iter()
        .filter_map(|c| c["lastState"]["terminated"]["finishedAt"].as_str())
        .filter_map(parse_rfc3339)
        .max()
    {
        restarts_s = format!("{restarts} ({} ago)", human_duration(unix_now() - t));
    }
    (format!("{ready}/{total}"), reason, restarts_s)
}

fn columns_and_cells(info: &ResourceInfo, obj: &Value) -> (Vec<Value>, Vec<Value>) {
    let name = json!(obj["metadata"]["name"].as_str().unwrap_or(""));
    let name_col = col(
        "Name",
        "string",
        "name",
        0,
        "Name must be unique within a namespace.",
    );
    let age_col = col(
        "Age",
        "string",
        "",
        0,
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    );
    if let Some(v) = &info.crd_version {
        let mut cols = vec![name_col];
        let mut cells = vec![name];
        let pcs = v["additionalPrinterColumns"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if pcs.is_empty() {
            cols.push(col("Age", "date", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created."));
            cells.push(json!(age(obj)));
        }
        for pc in pcs {
            let ty = pc["type"].as_str().unwrap_or("string");
            cols.push(col(
                pc["name"].as_str().unwrap_or(""),
                ty,
                pc["format"].as_str().unwrap_or(""),
                pc["priority"].as_i64().unwrap_or(0),
                pc["description"].as_str().unwrap_or(""),
            ));
            let vals = jsonpath(obj, pc["jsonPath"].as_str().unwrap_or(""));
            let cell = match vals.first() {
                None => Value::Null,
                Some(v) if ty == "date" => json!(
                    v.as_str()
                        .and_then(parse_rfc3339)
                        .map(|t| human_duration(unix_now() - t))
                        .unwrap_or_default()
                ),
                Some(Value::String(s)) => json!(s),
                Some(v) => v.clone(),
            };
            cells.push(cell);
        }
        return (cols, cells);
    }
    match info.plural.as_str() {
        "pods" => {
            let (ready, st, restarts) = pod_status(obj);
            let cols = vec![
                name_col,
                col(
                    "Ready",
                    "string",
                    "",
                    0,
                    "The aggregate readiness state of this pod for accepting traffic.",
                ),
                col(
                    "Status",
                    "string",
                    "",
                    0,
                    "The aggregate status of the containers in this pod.",
                ),
                col(
                    "Restarts",
                    "string",
                    "",
                    0,
                    "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                ),
                age_col,
                col(
                    "IP",
                    "string",
                    "",
                    1,
                    "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
                ),
                col(
                    "Node",
                    "string",
                    "",
                    1,
                    "NodeName is a request to schedule this pod onto a specific node.",
                ),
                col(
                    "Nominated Node",
                    "string",
                    "",
                    1,
                    "nominatedNodeName is set only when this pod preempts other pods on the node.",
                ),
                col(
                    "Readiness Gates",
                    "string",
                    "",
                    1,
                    "If specified, all readiness gates will be evaluated for pod readiness.",
                ),
            ];
            let s = |v: &Value| json!(v.as_str().unwrap_or("<none>"));
            (
                cols,
                vec![
                    name,
                    json!(ready),
                    json!(st),
                    json!(restarts),
                    json!(age(obj)),
                    s(&obj["status"]["podIP"]),
                    s(&obj["spec"]["nodeName"]),
                    json!("<none>"),
                    json!("<none>"),
                ],
            )
        }
        "services" => {
            let ports: Vec<String> = obj["spec"]["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP")))
                .collect();
            let cols = vec![
                name_col,
                col(
                    "Type",
                    "string",
                    "",
                    0,
                    "type determines how the Service is exposed.",
                ),
                col(
                    "Cluster-IP",
                    "string",
                    "",
                    0,
                    "clusterIP is the IP address of the service.",
                ),
                col(
                    "External-IP",
                    "string",
                    "",
                    0,
                    "externalIPs is a list of IP addresses.",
                ),
                col(
                    "Port(s)",
                    "string",
                    "",
                    0,
                    "The list of ports that are exposed by this service.",
                ),
                age_col,
                col(
                    "Selector",
                    "string",
                    "",
                    1,
                    "Route service traffic to pods with label keys and values matching this selector.",
                ),
            ];
            let ports = if ports.is_empty() {
                "<none>".to_string()
            } else {
                ports.join(",")
            };
            (
                cols,
                vec![
                    name,
                    obj["spec"]["type"].clone(),
                    obj["spec"]["clusterIP"].clone(),
                    json!("<none>"),
                    json!(ports),
                    json!(age(obj)),
                    json!(""),
                ],
            )
        }
        "namespaces" => (
            vec![
                name_col,
                col("Status", "string", "", 0, "The status of the namespace"),
                age_col,
            ],
            vec![name, obj["status"]["phase"].clone(), json!(age(obj))],
        ),
        "secrets" => {
            let n = obj["data"].as_object().map(|m| m.len()).unwrap_or(0);
            (
                vec![
                    name_col,
                    col("Type", "string", "", 0, "The type of the secret"),
                    col(
                        "Data",
                        "string",
                        "",
                        0,
                        "The number of entries in the secret",
                    ),
                    age_col,
                ],
                vec![name, obj["type"].clone(), json!(n), json!(age(obj))],
            )
        }
        "events" => {
            let last = obj["lastTimestamp"]
                .as_str()
                .and_then(parse_rfc3339)
                .map(|t| human_duration(unix_now() - t))
                .unwrap_or_else(|| "<unknown>".into());
            let io = &obj["involvedObject"];
            (
                vec![
                    col(
                        "Last Seen",
                        "string",
                        "",
                        0,
                        "Time when last event occurred",
                    ),
                    col("Type", "string", "", 0, "Type of event"),
                    col("Reason", "string", "", 0, "Reason of event"),
                    col("Object", "string", "", 0, "Object this event is about"),
                    col("Message", "string", "", 0, "Message of event"),
                ],
                vec![
                    json!(last),
                    obj["type"].clone(),
                    obj["reason"].clone(),
                    json!(format!(
                        "{}/{}",
                        io["kind"].as_str().unwrap_or("").to_lowercase(),
                        io["name"].as_str().unwrap_or("")
                    )),
                    obj["message"].clone(),
                ],
            )
        }
        "nodes" => (
            vec![
                name_col,
                col("Status", "string", "", 0, "The status of the node"),
                col("Roles", "string", "", 0, "The roles of the node"),
                age_col,
                col(
                    "Version",
                    "string",
                    "",
                    0,
                    "Kubelet Version reported by the node.",
                ),
            ],
            vec![
                name,
                json!("Ready"),
                json!("<none>"),
                json!(age(obj)),
                obj["status"]["nodeInfo"]["kubeletVersion"].clone(),
            ],
        ),
        "deployments" => {
            let st = &obj["status"];
            let want = obj["spec"]["replicas"].as_i64().unwrap_or(1);
            (
                vec![
                    name_col,
                    col(
                        "Ready",
                        "string",
                        "",
                        0,
                        "Number of the pod with ready state",
                    ),
                    col(
                        "Up-to-date",
                        "string",
                        "",
                        0,
                        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                    ),
                    col(
                        "Available",
                        "string",
                        "",
                        0,
                        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                    ),
                    age_col,
                ],
                vec![
                    name,
                    json!(format!(
                        "{}/{want}",
                        st["readyReplicas"].as_i64().unwrap_or(0)
                    )),
                    json!(st["updatedReplicas"].as_i64().unwrap_or(0)),
                    json!(st["availableReplicas"].as_i64().unwrap_or(0)),
                    json!(age(obj)),
                ],
            )
        }
        "customresourcedefinitions" => (
            vec![name_col, col("Created At", "date", "", 0, "")],
            vec![name, obj["metadata"]["creationTimestamp"].clone()],
        ),
        _ => (vec![name_col, age_col], vec![name, json!(age(obj))]),
    }
}

fn row_object(obj: &Value, q: &Query) -> Option<Value> {
    match q.get("includeObject").map(String::as_str) {
        Some("None") => None,
        Some("Object") => Some(obj.clone()),
        _ => Some(
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}),
        ),
    }
}

/// A `meta.k8s.io/v1` Table for `items`.
pub fn table(
    _store: &Store,
    info: &ResourceInfo,
    items: &[Value],
    rv: &str,
    q: &Query,
    with_columns: bool,
) -> Value {
    let mut columns = None;
    let mut rows = Vec::new();
    for it in items {
        let (cols, cells) = columns_and_cells(info, it);
        columns.get_or_insert(cols);
        let mut row = json!({"cells": cells});
        if let Some(o) = row_object(it, q) {
            row["object"] = o;
        }
        rows.push(row);
    }
    let columns = columns.unwrap_or_else(|| columns_and_cells(info, &json!({"metadata": {}})).0);
    let mut t = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv}, "rows": rows});
    if with_columns {
        t["columnDefinitions"] = json!(columns);
    } else {
        t["columnDefinitions"] = Value::Null;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::jsonpath;
    use serde_json::json;

    #[test]
    fn filter_expressions_pick_matching_elements() {
        // Kueue's Workload printer column `.status.conditions[?(@.type=='Admitted')].status`.
        let wl = json!({"status": {"conditions": [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "False"}
        ]}});
        assert_eq!(
            jsonpath(&wl, ".status.conditions[?(@.type=='Admitted')].status"),
            vec![json!("False")]
        );
        assert!(jsonpath(&wl, ".status.conditions[?(@.type=='Finished')].status").is_empty());
        assert_eq!(
            jsonpath(&wl, ".status.conditions[-1:].type"),
            vec![json!("Admitted")]
        );
    }
}
