//! The tools: each one verb, its input an object whose JSON Schema is generated (schemars) from
//! the input type here, turned into that verb's command line ([`Invocation`]) with the flags a
//! person would type. Nothing here decides anything about a job: the verbs do.
//!
//! The writes follow the CLI's own guards and add one each: `submit` is a server-side dry run
//! unless `confirm` is true; `suspend`, `resume` and `delete` take the `uid` of the job the agent
//! read (`get`), which the write carries as its precondition (`--uid`), so a job created again
//! under the name is never touched.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::call::Invocation;

/// Longest manifest or values text taken (the CLI's own limit on a file is the same order).
const MAX_TEXT: usize = 1024 * 1024;
/// Most log lines per replica `logs` returns.
const MAX_TAIL: u32 = 1000;

/// How the command's stdout is read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// One JSON document (`-o json`).
    Json,
    /// A kubectl table: one object per row, keyed by the header's columns.
    Table,
    /// Text as printed (YAML, logs, a description).
    Text,
}

/// One tool: its name, what it does, whether it writes, and its command line.
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// Writes to the cluster (left out under `--read-only`; annotated destructive).
    pub writes: bool,
    pub data: Data,
    pub schema: fn() -> Map<String, Value>,
    pub build: fn(Value, Duration) -> Result<Invocation, String>,
}

/// Every tool, in the order they are listed.
pub fn all() -> Vec<Tool> {
    vec![
        Tool {
            name: "validate",
            title: "Validate a TFJob manifest",
            description: "Validate a TFJob manifest offline as `kubectl tfjob validate` does: the CRD schema, the training-operator's webhook rules, the Pod validation of the pods it will create (exit class `invalid` when the cluster would refuse it), and lint warnings.",
            writes: false,
            data: Data::Json,
            schema: schema::<ValidateInput>,
            build: |v, _| validate(parse(v)?),
        },
        Tool {
            name: "render",
            title: "Render a TFJob",
            description: "Render a TFJob from a built-in template and values, validated offline, as YAML (`kubectl tfjob render`). The gateway key is a Secret reference, never a literal.",
            writes: false,
            data: Data::Text,
            schema: schema::<JobSource>,
            build: |v, _| source(parse(v)?, vec!["render".into()]),
        },
        Tool {
            name: "check",
            title: "Will this job run here?",
            description: "Readiness and the placement and queue verdict for a job (a manifest, or a template and values) without writing anything (`kubectl tfjob check -o json`): whether the scheduler can place every pod and Kueue or a gang scheduler admits it.",
            writes: false,
            data: Data::Json,
            schema: schema::<JobSource>,
            build: |v, _| source(parse(v)?, strings(["check", "--output=json"])),
        },
        Tool {
            name: "list",
            title: "List TFJobs",
            description: "List TFJobs with their state and the reason when one does not run (`kubectl tfjob list -o wide`), one object per row.",
            writes: false,
            data: Data::Table,
            schema: schema::<ListInput>,
            build: |v, _| list(parse(v)?),
        },
        Tool {
            name: "get",
            title: "Show one TFJob",
            description: "One TFJob in full (`kubectl tfjob get`): its uid, conditions, replica pods, services, events, gateway env and TF_CONFIG, and the problem when there is one.",
            writes: false,
            data: Data::Text,
            schema: schema::<JobInput>,
            build: |v, _| job(parse(v)?, "get", &[]),
        },
        Tool {
            name: "diagnose",
            title: "Why does this job not run?",
            description: "Check a job layer by layer (CRD, queue, operator, pods, scheduling, containers, inside the pods) and say what is wrong (`kubectl tfjob diagnose -o json`); exit class `job-failed` when something is.",
            writes: false,
            data: Data::Json,
            schema: schema::<DiagnoseInput>,
            build: diagnose,
        },
        Tool {
            name: "probe",
            title: "Look inside the running pods",
            description: "TF_CONFIG, the peers and the model gateway as the training process sees them, from inside each running pod (`kubectl tfjob probe -o json`). The key is never read out.",
            writes: false,
            data: Data::Json,
            schema: schema::<JobInput>,
            build: |v, t| job(parse(v)?, "probe", &["--output=json", &timeout(t)]),
        },
        Tool {
            name: "top",
            title: "What the jobs use",
            description: "Per replica: node, GPUs, CPU and memory requested, limited and used (`kubectl tfjob top -o json`).",
            writes: false,
            data: Data::Json,
            schema: schema::<TopInput>,
            build: |v, _| top(parse(v)?),
        },
        Tool {
            name: "logs",
            title: "The last log lines of a job",
            description: "The last lines of every replica's log, or of one replica (`worker-0`), each line prefixed with its replica (`kubectl tfjob logs --tail N`).",
            writes: false,
            data: Data::Text,
            schema: schema::<LogsInput>,
            build: logs,
        },
        Tool {
            name: "submit",
            title: "Submit a TFJob",
            description: "Submit a job (a manifest, or a template and values) as `kubectl tfjob submit` does: validated, readiness and placement checked. A server-side dry run that writes nothing unless `confirm` is true.",
            writes: true,
            data: Data::Json,
            schema: schema::<SubmitInput>,
            build: |v, _| submit(parse(v)?),
        },
        Tool {
            name: "suspend",
            title: "Suspend a TFJob",
            description: "Suspend a TFJob: the operator deletes its pods until it is resumed. Takes the uid `get` showed; a job created again under the name is left alone.",
            writes: true,
            data: Data::Text,
            schema: schema::<WriteInput>,
            build: |v, _| write(parse(v)?, "suspend", &[]),
        },
        Tool {
            name: "resume",
            title: "Resume a TFJob",
            description: "Resume a suspended TFJob: the operator creates its pods again. Takes the uid `get` showed.",
            writes: true,
            data: Data::Text,
            schema: schema::<WriteInput>,
            build: |v, _| write(parse(v)?, "resume", &[]),
        },
        Tool {
            name: "delete",
            title: "Delete a TFJob",
            description: "Delete a TFJob and wait until it and its pods are gone (`kubectl tfjob delete`). Takes the uid `get` showed: the DELETE carries it as a precondition.",
            writes: true,
            data: Data::Text,
            schema: schema::<WriteInput>,
            build: |v, t| write(parse(v)?, "delete", &[&timeout(t)]),
        },
    ]
}

/// A job in the cluster.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct JobInput {
    /// The job's name (a TFJob), or `jobset/NAME` for a JobSet that `submit --to jobset` made.
    pub name: String,
    /// Its namespace; the server's (`-n`, else the kubeconfig context's) when left out.
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiagnoseInput {
    /// The job's name (a TFJob), or `jobset/NAME`.
    pub name: String,
    /// Its namespace; the server's when left out.
    pub namespace: Option<String>,
    /// Look inside the pods: true always, false never; left out, when every replica runs.
    pub probe: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListInput {
    /// The namespace; the server's when left out.
    pub namespace: Option<String>,
    /// Every namespace (`-A`).
    #[serde(default)]
    pub all_namespaces: bool,
    /// A label selector (`-l`), e.g. `team=vision`.
    pub selector: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TopInput {
    /// One job; every job of the namespace when left out.
    pub name: Option<String>,
    /// The namespace; the server's when left out.
    pub namespace: Option<String>,
    /// Every namespace (`-A`).
    #[serde(default)]
    pub all_namespaces: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LogsInput {
    /// The job's name.
    pub name: String,
    /// Its namespace; the server's when left out.
    pub namespace: Option<String>,
    /// One replica, as the log prefixes say it (`worker-0`, `ps-1`); every replica when left out.
    pub replica: Option<String>,
    /// Lines per replica (at most 1000; 100 when left out).
    pub tail: Option<u32>,
    /// The previous container's log (the one that crashed).
    #[serde(default)]
    pub previous: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ValidateInput {
    /// The TFJob manifest, YAML or JSON (one or more documents), as `validate -f` reads a file.
    pub manifest: String,
    /// Lint warnings count as errors (`--strict`).
    #[serde(default)]
    pub strict: bool,
}

/// A job to build: a manifest, or a template and values (the flags of `render`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct JobSource {
    /// A TFJob manifest or a values file (YAML), as `-f` reads either. Left out: the template and
    /// the fields below.
    pub manifest: Option<String>,
    /// A built-in template by name (`ps-worker`, `chief-worker`, `worker`, `evaluator`).
    pub template: Option<String>,
    /// Values as `--set KEY=VALUE` takes them, e.g. `workers=4`.
    #[serde(default)]
    pub set: Vec<String>,
    /// The job's name (`--name`).
    pub name: Option<String>,
    /// Its namespace; the server's when left out.
    pub namespace: Option<String>,
    /// The container image (`--image`).
    pub image: Option<String>,
    /// Parameter-server replicas (`--ps`).
    pub ps: Option<u32>,
    /// Worker replicas (`--workers`).
    pub workers: Option<u32>,
    /// GPUs per worker (`--gpus`).
    pub gpus: Option<u32>,
    /// The training command (after `--`).
    #[serde(default)]
    pub command: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SubmitInput {
    #[serde(flatten)]
    pub job: JobSource,
    /// Create the job. Left out or false: a server-side dry run (`--dry-run=server`), nothing written.
    #[serde(default)]
    pub confirm: bool,
}

/// A write to one job, bound to the job that was read.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteInput {
    /// The TFJob's name.
    pub name: String,
    /// Its namespace; the server's when left out.
    pub namespace: Option<String>,
    /// The uid of the job as `get` showed it: the write goes only to that job (`--uid`).
    pub uid: String,
}

/// The JSON Schema of `T`, as an MCP tool's `inputSchema` (an object schema).
fn schema<T: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(mut map)) => {
            map.remove("$schema");
            map
        }
        _ => Map::new(),
    }
}

/// The arguments as `T`; an error names the field and what is wrong, as serde says it. A field
/// the schema does not have is refused (a misspelt `confirm` must not pass as left out).
fn parse<T: DeserializeOwned + JsonSchema>(args: Value) -> Result<T, String> {
    let known = schema::<T>();
    if let (Some(given), Some(fields)) = (args.as_object(), known["properties"].as_object()) {
        let mut unknown: Vec<&String> = given.keys().filter(|k| !fields.contains_key(*k)).collect();
        unknown.sort();
        if let Some(k) = unknown.first() {
            let mut expected: Vec<&String> = fields.keys().collect();
            expected.sort();
            let expected: Vec<&str> = expected.iter().map(|s| s.as_str()).collect();
            return Err(format!(
                "unknown field `{k}`; the fields are {}",
                expected.join(", ")
            ));
        }
    }
    serde_path_to_error::deserialize(args).map_err(|e| {
        let at = e.path().to_string();
        if at == "." {
            e.inner().to_string()
        } else {
            format!("{at}: {}", e.inner())
        }
    })
}

fn strings<const N: usize>(words: [&str; N]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn timeout(t: Duration) -> String {
    format!("--timeout={}s", t.as_secs().max(1))
}

/// A value that becomes a positional argument: never read as a flag.
pub(super) fn positional(field: &str, value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Err(format!("{field}: must not be empty"));
    }
    if value.starts_with('-') {
        return Err(format!(
            "{field}: {value:?} starts with '-'; give a name, not a flag"
        ));
    }
    Ok(value.to_string())
}

fn bounded<'a>(field: &str, text: &'a str) -> Result<&'a str, String> {
    if text.len() > MAX_TEXT {
        return Err(format!(
            "{field}: {} bytes, more than the {MAX_TEXT} taken",
            text.len()
        ));
    }
    Ok(text)
}

fn validate(input: ValidateInput) -> Result<Invocation, String> {
    let mut inv = Invocation::new(["validate", "--output=json"]);
    let path = inv
        .file("manifest.yaml", bounded("manifest", &input.manifest)?)
        .map_err(|e| format!("writing the manifest for validate: {e}"))?;
    inv.args.push(format!("--filename={path}"));
    if input.strict {
        inv.args.push("--strict".into());
    }
    Ok(inv)
}

fn source(input: JobSource, verb: Vec<String>) -> Result<Invocation, String> {
    let JobSource {
        manifest,
        template,
        set,
        name,
        namespace,
        image,
        ps,
        workers,
        gpus,
        command,
    } = input;
    let mut inv = Invocation::new(verb);
    inv.namespace = namespace;
    if let Some(text) = manifest {
        let path = inv
            .file("manifest.yaml", bounded("manifest", &text)?)
            .map_err(|e| format!("writing the manifest: {e}"))?;
        inv.args.push(format!("--filename={path}"));
    }
    if let Some(t) = template {
        // A built-in by name: a path would let the call read any file the server can.
        if t.contains('/') || t.contains('\\') {
            return Err(format!(
                "template: {t:?} is a path; give a built-in template's name (kubectl tfjob templates)"
            ));
        }
        inv.args.push(format!("--template={t}"));
    }
    for kv in set {
        inv.args.push(format!("--set={kv}"));
    }
    let flags = [
        ("name", name),
        ("image", image),
        ("ps", ps.map(|n| n.to_string())),
        ("workers", workers.map(|n| n.to_string())),
        ("gpus", gpus.map(|n| n.to_string())),
    ];
    for (flag, value) in flags {
        if let Some(v) = value {
            inv.args.push(format!("--{flag}={v}"));
        }
    }
    if !command.is_empty() {
        inv.args.push("--".into());
        inv.args.extend(command);
    }
    Ok(inv)
}

fn list(input: ListInput) -> Result<Invocation, String> {
    let mut inv = Invocation::new(["list", "--output=wide"]);
    inv.namespace = input.namespace;
    if input.all_namespaces {
        inv.args.push("--all-namespaces".into());
    }
    if let Some(s) = input.selector {
        inv.args.push(format!("--selector={s}"));
    }
    Ok(inv)
}

fn job(input: JobInput, verb: &str, flags: &[&str]) -> Result<Invocation, String> {
    let mut inv = Invocation::new([verb.to_string(), positional("name", &input.name)?]);
    inv.args.extend(flags.iter().map(|f| f.to_string()));
    inv.namespace = input.namespace;
    Ok(inv)
}

fn diagnose(args: Value, t: Duration) -> Result<Invocation, String> {
    let input: DiagnoseInput = parse(args)?;
    let mut inv = Invocation::new([
        "diagnose".to_string(),
        positional("name", &input.name)?,
        "--output=json".into(),
        timeout(t),
    ]);
    match input.probe {
        Some(true) => inv.args.push("--probe".into()),
        Some(false) => inv.args.push("--no-probe".into()),
        None => {}
    }
    inv.namespace = input.namespace;
    Ok(inv)
}

fn top(input: TopInput) -> Result<Invocation, String> {
    let mut inv = Invocation::new(["top", "--output=json"]);
    if let Some(name) = input.name {
        inv.args.push(positional("name", &name)?);
    }
    if input.all_namespaces {
        inv.args.push("--all-namespaces".into());
    }
    inv.namespace = input.namespace;
    Ok(inv)
}

fn logs(args: Value, t: Duration) -> Result<Invocation, String> {
    let input: LogsInput = parse(args)?;
    let tail = input.tail.unwrap_or(100);
    if tail > MAX_TAIL {
        return Err(format!(
            "tail: {tail} lines, more than the {MAX_TAIL} taken"
        ));
    }
    let mut inv = Invocation::new(["logs".to_string(), positional("name", &input.name)?]);
    if let Some(r) = input.replica {
        inv.args.push(positional("replica", &r)?);
    }
    inv.args.push(format!("--tail={tail}"));
    inv.args.push(timeout(t));
    if input.previous {
        inv.args.push("--previous".into());
    }
    inv.namespace = input.namespace;
    Ok(inv)
}

fn submit(input: SubmitInput) -> Result<Invocation, String> {
    let mut verb = strings(["submit", "--output=json"]);
    if !input.confirm {
        verb.push("--dry-run=server".into());
    }
    source(input.job, verb)
}

fn write(input: WriteInput, verb: &str, flags: &[&str]) -> Result<Invocation, String> {
    let uid = positional("uid", &input.uid)?;
    let mut inv = Invocation::new([verb.to_string(), positional("name", &input.name)?]);
    inv.args.push(format!("--uid={uid}"));
    inv.args.extend(flags.iter().map(|f| f.to_string()));
    inv.namespace = input.namespace;
    Ok(inv)
}

/// A kubectl table as rows keyed by its header: each column starts where its heading does
/// (kubectl's tabwriter pads with spaces; a cell never holds two spaces in a row).
pub fn table_rows(text: &str) -> Vec<Map<String, Value>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let mut starts: Vec<(usize, String)> = Vec::new();
    let mut at = 0;
    for word in header.split(' ') {
        if !word.is_empty() {
            starts.push((at, word.to_string()));
        }
        at += word.len() + 1;
    }
    lines
        .map(|line| {
            let mut row = Map::new();
            for (i, (start, name)) in starts.iter().enumerate() {
                let end = starts.get(i + 1).map_or(line.len(), |(s, _)| *s);
                let cell = line.get(*start..end.min(line.len())).unwrap_or("").trim();
                row.insert(name.clone(), Value::String(cell.to_string()));
            }
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn build(tool: &str, args: Value) -> Result<Invocation, String> {
        let t = all().into_iter().find(|t| t.name == tool).unwrap();
        (t.build)(args, Duration::from_secs(30))
    }

    #[test]
    fn a_submit_without_confirm_is_a_server_dry_run() {
        let inv = build("submit", json!({"template": "worker", "workers": 2})).unwrap();
        assert!(inv.args.contains(&"--dry-run=server".to_string()));
        assert_eq!(inv.args[0], "submit");
        let inv = build("submit", json!({"template": "worker", "confirm": true})).unwrap();
        assert!(!inv.args.iter().any(|a| a.starts_with("--dry-run")));
    }

    #[test]
    fn every_write_carries_the_uid_it_was_given() {
        for tool in ["suspend", "resume", "delete"] {
            let inv = build(tool, json!({"name": "a", "uid": "u-1"})).unwrap();
            assert_eq!(inv.args[..3], [tool, "a", "--uid=u-1"]);
            let missing = build(tool, json!({"name": "a"})).unwrap_err();
            assert!(missing.contains("uid"), "{missing}");
        }
    }

    #[test]
    fn a_name_is_never_read_as_a_flag_and_unknown_fields_are_refused() {
        let e = build("diagnose", json!({"name": "--all"})).unwrap_err();
        assert!(e.starts_with("name: \"--all\" starts with '-'"), "{e}");
        let e = build("get", json!({"name": "a", "nmespace": "x"})).unwrap_err();
        assert!(e.contains("unknown field `nmespace`"), "{e}");
        let e = build("render", json!({"template": "../etc/passwd"})).unwrap_err();
        assert!(
            e.starts_with("template: \"../etc/passwd\" is a path"),
            "{e}"
        );
        let e = build("logs", json!({"name": "a", "tail": 5000})).unwrap_err();
        assert_eq!(e, "tail: 5000 lines, more than the 1000 taken");
    }

    #[test]
    fn each_schema_is_an_object_with_its_fields() {
        for t in all() {
            let s = (t.schema)();
            assert_eq!(s["type"], "object", "{}", t.name);
            assert!(s["properties"].is_object(), "{}", t.name);
        }
        let s = schema::<WriteInput>();
        assert_eq!(s["required"], json!(["name", "uid"]));
    }

    #[test]
    fn a_table_becomes_rows_by_its_header() {
        let rows = table_rows(
            "NAME    STATE     REASON\nalpha   Running   \nbeta    Pending   Insufficient nvidia.com/gpu\n",
        );
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["NAME"], "alpha");
        assert_eq!(rows[0]["REASON"], "");
        assert_eq!(rows[1]["REASON"], "Insufficient nvidia.com/gpu");
    }
}
