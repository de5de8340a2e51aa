//! kubectl's printers, for every command that prints API objects (`list`, `get`, `submit`):
//! `-o json|yaml|name|wide|jsonpath=…|jsonpath-file=…|jsonpath-as-json=…|custom-columns=…|
//! custom-columns-file=…|go-template=…|go-template-file=…`, plus `--sort-by`, `--show-labels`,
//! `-L` and `--no-headers` for tables. Pure: objects in (as JSON values, exactly as the API
//! returned them), text out to a writer.
//!
//! Modelled on k8s.io/cli-runtime pkg/printers (json.go, yaml.go, name.go, jsonpath.go,
//! template.go, tabwriter.go), kubectl's pkg/cmd/get (customcolumn.go, sorter.go,
//! get_flags.go) and client-go util/jsonpath (see [`jsonpath`]).
//!
//! Beside them, the project's own printers, each taking a writer: the manifests a command made
//! ([`manifest`]), `top`'s units ([`top`]), `check`'s report ([`check`], over the plain
//! `placement::Forecast`), `diagnose`'s ([`diagnosis`], over the plain `diagnose::Diagnosis`) and
//! `wait`'s progress lines ([`progress`], over its own plain `JobState`, which `ops::wait` counts),
//! and the day-two tables ([`tables`]: `list`'s rows, `get`'s description, over `jobview`):
//! `print` imports the data types below it, none of them imports `print`.

pub mod check;
pub mod diagnosis;
pub mod evidence;
pub mod gofmt;
pub mod gojson;
pub mod gotemplate;
pub mod jobview;
pub mod jsonpath;
pub mod manifest;
pub mod probe;
pub mod progress;
pub mod tables;
pub mod terminal;
pub mod top;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::io::Write;

use serde_json::Value;

use crate::error::{Error, Result};
pub use jsonpath::JsonPath;

/// What `-o` asked for.
#[derive(Debug, Clone)]
pub enum Format {
    /// The command's own table (or `get`'s description).
    Default,
    Wide,
    Json,
    Yaml,
    Name,
    JsonPath(JsonPath),
    /// `jsonpath-as-json`: the results as one indented JSON array.
    JsonPathAsJson(JsonPath),
    CustomColumns(Vec<(String, JsonPath)>),
    GoTemplate(String),
}

/// The formats kubectl lists in its "allowed formats" error, in its order.
pub const FORMATS: &str = "custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml";

fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// Parses `-o` (None: the default). `*-file` variants read their file (bounded, as every input).
pub fn parse_format(output: Option<&str>) -> Result<Format> {
    let Some(o) = output else {
        return Ok(Format::Default);
    };
    let (kind, arg) = match o.split_once('=') {
        Some((k, a)) => (k, Some(a)),
        None => (o, None),
    };
    let file = |a: Option<&str>| -> Result<String> {
        let path = a
            .filter(|p| !p.is_empty())
            .ok_or_else(|| usage(format!("-o {kind} needs a file: -o {kind}=PATH")))?;
        Ok(crate::input::read_text(path, crate::input::TEMPLATE)?.1)
    };
    let needs = |a: Option<&str>| -> Result<String> {
        a.map(str::to_string).ok_or_else(|| {
            usage(format!(
                "template format specified but no template given: -o {kind}=…"
            ))
        })
    };
    let jsonpath = |t: String| {
        JsonPath::parse(&t).map_err(|e| usage(format!("error parsing jsonpath {t}, {e}")))
    };
    Ok(match kind {
        "json" if arg.is_none() => Format::Json,
        "yaml" if arg.is_none() => Format::Yaml,
        "name" if arg.is_none() => Format::Name,
        "wide" if arg.is_none() => Format::Wide,
        "jsonpath" => Format::JsonPath(jsonpath(needs(arg)?)?),
        "jsonpath-file" => Format::JsonPath(jsonpath(file(arg)?)?),
        "jsonpath-as-json" => Format::JsonPathAsJson(jsonpath(needs(arg)?)?),
        "custom-columns" => Format::CustomColumns(columns_inline(&needs(arg)?)?),
        "custom-columns-file" => Format::CustomColumns(columns_file(&file(arg)?)?),
        "go-template" | "template" => Format::GoTemplate(go_template(needs(arg)?)?),
        "go-template-file" | "templatefile" => Format::GoTemplate(go_template(file(arg)?)?),
        _ => {
            return Err(usage(format!(
                "unable to match a printer suitable for the output format \"{o}\", allowed formats are: {FORMATS}"
            )));
        }
    })
}

fn column(header: &str, path: &str) -> Result<(String, JsonPath)> {
    let expr = jsonpath::relaxed(path).map_err(usage)?;
    let jp =
        JsonPath::parse(&expr).map_err(|e| usage(format!("error parsing jsonpath {expr}, {e}")))?;
    Ok((header.to_string(), jp))
}

/// `NAME:.metadata.name,STATE:.status.conditions[-1].type` (customcolumn.go
/// `NewCustomColumnsPrinterFromSpec`).
fn columns_inline(spec: &str) -> Result<Vec<(String, JsonPath)>> {
    if spec.is_empty() {
        return Err(usage(
            "custom-columns format specified but no custom columns given",
        ));
    }
    spec.split(',')
        .map(|part| {
            let bits: Vec<&str> = part.split(':').collect();
            if bits.len() != 2 {
                return Err(usage(format!(
                    "unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>"
                )));
            }
            column(bits[0], bits[1])
        })
        .collect()
}

/// A header line and a line of paths, split on whitespace (customcolumn.go
/// `NewCustomColumnsPrinterFromTemplate`).
fn columns_file(text: &str) -> Result<Vec<(String, JsonPath)>> {
    let mut lines = text.lines();
    let headers: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let paths: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    if headers.len() != paths.len() {
        return Err(usage(format!(
            "number of headers ({}) and field specifications ({}) don't match",
            headers.len(),
            paths.len()
        )));
    }
    headers
        .iter()
        .zip(&paths)
        .map(|(h, p)| column(h, p))
        .collect()
}

fn go_template(text: String) -> Result<String> {
    gotemplate::compile(&text).map_err(|e| template_error(&text, e))?;
    Ok(text)
}

/// A go-template failure as the command's error: a template past a limit or wrong is exit 2
/// (kubectl's "error parsing template"), an interrupt exit 130.
fn template_error(text: &str, e: gotemplate::Failure) -> Error {
    let shown: String = text.chars().take(200).collect();
    let more = if shown.len() < text.len() { "…" } else { "" };
    match e {
        gotemplate::Failure::Invalid(e) => {
            usage(format!("error parsing template {shown}{more}, {e}"))
        }
        gotemplate::Failure::Exec(e) => {
            Error::Invalid(format!("error executing template {shown:?}{more}: {e}"))
        }
        gotemplate::Failure::Interrupted => {
            crate::error::interrupted("interrupted while printing: nothing more was printed")
        }
    }
}

/// Table decorations kubectl's `get` adds (`--show-labels`, `-L`, `--no-headers`).
#[derive(Debug, Clone, Default)]
pub struct TableFlags {
    pub no_headers: bool,
    pub show_labels: bool,
    pub label_columns: Vec<String>,
}

impl TableFlags {
    /// Headers appended after the command's own: one per `-L` key (the key's last path segment,
    /// upper-cased, as kubectl titles it), then LABELS.
    pub fn extra_headers(&self) -> Vec<String> {
        let mut h: Vec<String> = self
            .label_columns
            .iter()
            .map(|k| k.rsplit('/').next().unwrap_or(k).to_uppercase())
            .collect();
        if self.show_labels {
            h.push("LABELS".into());
        }
        h
    }

    /// The cells matching [`TableFlags::extra_headers`] for an object's labels.
    pub fn extra_cells(&self, labels: &BTreeMap<String, String>) -> Vec<String> {
        let mut c: Vec<String> = self
            .label_columns
            .iter()
            .map(|k| labels.get(k).cloned().unwrap_or_default())
            .collect();
        if self.show_labels {
            c.push(if labels.is_empty() {
                "<none>".into()
            } else {
                labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            });
        }
        c
    }
}

/// `-L a,b -L c` → `[a, b, c]`.
pub fn label_columns(flags: &[String]) -> Vec<String> {
    flags
        .iter()
        .flat_map(|f| f.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// An object's labels.
pub fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// kubectl's tabwriter (cli-runtime printers/tabwriter.go: minwidth 6, padding 3, spaces):
/// every column but the last is padded to max(6, widest cell + 3).
pub fn tabwrite(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| terminal::escape(c).into_owned()).collect())
        .collect();
    tabwrite_with(&column_widths(&rows), &rows)
}

/// The padded width of each column of `rows`, as [`tabwrite`] computes it.
pub fn column_widths(rows: &[Vec<String>]) -> Vec<usize> {
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![6usize; ncols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i + 1 < r.len() {
                widths[i] = widths[i].max(c.chars().count() + 3);
            }
        }
    }
    widths
}

/// [`tabwrite`] with given column widths (each at least its cells + 3).
pub fn tabwrite_with(widths: &[usize], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            out.push_str(c);
            if i + 1 < r.len() {
                let w = widths.get(i).copied().unwrap_or(0);
                let pad = w.saturating_sub(c.chars().count()).max(3);
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    }
    out
}

/// Sorts `items` by `--sort-by` (kubectl's sorter.go): a relaxed JSONPath taking one value per
/// item; numbers numerically, strings that are both quantities as quantities, other strings
/// byte by byte, missing values first; stable (kubectl's `sort.Sort` is not, but equal keys
/// keep the server's order in practice, and the server's order is the tie-break here).
pub fn sort_by<T>(items: Vec<T>, expr: &str, value_of: impl Fn(&T) -> Value) -> Result<Vec<T>> {
    let e = jsonpath::relaxed(expr).map_err(usage)?;
    let jp =
        JsonPath::parse(&e).map_err(|err| usage(format!("error parsing jsonpath {e}, {err}")))?;
    let mut keyed: Vec<(Option<Value>, T)> = Vec::with_capacity(items.len());
    for it in items {
        let groups = jp.find(&value_of(&it)).map_err(|err| {
            Error::Invalid(format!("couldn't find any field with path \"{e}\": {err}"))
        })?;
        let v = groups.into_iter().next().and_then(|g| g.into_iter().next());
        keyed.push((v, it));
    }
    keyed.sort_by(|a, b| less(&a.0, &b.0));
    Ok(keyed.into_iter().map(|(_, it)| it).collect())
}

fn less(a: &Option<Value>, b: &Option<Value>) -> Ordering {
    match (a, b) {
        (None | Some(Value::Null), None | Some(Value::Null)) => Ordering::Equal,
        (None | Some(Value::Null), _) => Ordering::Less,
        (_, None | Some(Value::Null)) => Ordering::Greater,
        (Some(Value::Number(x)), Some(Value::Number(y))) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ => x
                .as_f64()
                .partial_cmp(&y.as_f64())
                .unwrap_or(Ordering::Equal),
        },
        (Some(Value::String(x)), Some(Value::String(y))) => {
            use crate::model::quantity::parse_quantity;
            match (parse_quantity(x), parse_quantity(y)) {
                (Some(i), Some(j)) => i.cmp(&j),
                // Byte order: what kubectl 1.36.3 does on the test cluster (`tf-10` before
                // `tf-9`, `x10` before `x9`), though sorter.go names sortorder.NaturalLess.
                _ => x.as_bytes().cmp(y.as_bytes()),
            }
        }
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x.cmp(y),
        (Some(x), Some(y)) => gofmt::value(x).cmp(&gofmt::value(y)),
    }
}

/// Prints `obj` (one object, or a `List`) in a generic format (`json`, `yaml`, `name`,
/// `jsonpath…`, `custom-columns…`, `go-template…`). `Default`/`Wide` are the caller's table and
/// are refused here. `qualified_kind` is `tfjob.kubeflow.org` for `-o name`.
pub fn print(
    format: &Format,
    obj: &Value,
    qualified_kind: &str,
    no_headers: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let io = |e: std::io::Error| Error::io("writing the output", e);
    let items = || -> Vec<&Value> {
        match obj["items"].as_array() {
            Some(a) if obj["kind"] == "List" => a.iter().collect(),
            _ => vec![obj],
        }
    };
    match format {
        Format::Json => writeln!(out, "{}", gojson::indented(obj)).map_err(io),
        Format::Yaml => {
            let s = serde_saphyr::to_string(obj).unwrap_or_default();
            write!(out, "{s}").map_err(io)
        }
        Format::Name => {
            for it in items() {
                let name = it["metadata"]["name"].as_str().unwrap_or_default();
                writeln!(out, "{qualified_kind}/{name}").map_err(io)?;
            }
            Ok(())
        }
        Format::JsonPath(jp) => {
            let s = jp.execute(obj).map_err(|e| jsonpath_error(jp, e))?;
            write!(out, "{s}").map_err(io)
        }
        Format::JsonPathAsJson(jp) => {
            let groups = jp.find(obj).map_err(|e| jsonpath_error(jp, e))?;
            for g in groups {
                writeln!(out, "{}", gojson::indented(&Value::Array(g))).map_err(io)?;
            }
            Ok(())
        }
        Format::CustomColumns(cols) => {
            let mut rows = Vec::new();
            if !no_headers {
                rows.push(cols.iter().map(|(h, _)| h.clone()).collect());
            }
            for it in items() {
                let mut row = Vec::new();
                for (_, jp) in cols {
                    let groups = jp.find(it).map_err(|e| jsonpath_error(jp, e))?;
                    let vals: Vec<String> = groups.iter().flatten().map(gofmt::value).collect();
                    row.push(if vals.is_empty() {
                        "<none>".to_string()
                    } else {
                        vals.join(",")
                    });
                }
                rows.push(row);
            }
            write!(out, "{}", tabwrite(&rows)).map_err(io)
        }
        Format::GoTemplate(src) => {
            let s = gotemplate::execute(src, obj, gotemplate::TIME_LIMIT)
                .map_err(|e| template_error(src, e))?;
            write!(out, "{s}").map_err(io)
        }
        Format::Default | Format::Wide => Err(Error::Other(
            "internal: the default table is printed by the command".into(),
        )),
    }
}

fn jsonpath_error(jp: &JsonPath, e: String) -> Error {
    if crate::error::interrupt_requested() {
        return crate::error::interrupted("interrupted while printing: nothing more was printed");
    }
    let raw = jp.raw();
    let shown: String = raw.chars().take(200).collect();
    let more = if shown.len() < raw.len() { "…" } else { "" };
    Error::Invalid(format!("error executing jsonpath {shown:?}{more}: {e}"))
}

/// kubectl's go-template function `base64decode` (cli-runtime printers/template.go).
fn base64decode(
    args: &[gtmpl_value::Value],
) -> std::result::Result<gtmpl_value::Value, gtmpl_value::FuncError> {
    use base64::Engine;
    let [gtmpl_value::Value::String(s)] = args else {
        return Err(gtmpl_value::FuncError::ExactlyXArgs(
            "base64decode".into(),
            1,
        ));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| gtmpl_value::FuncError::Generic(format!("base64 decode failed: {e}")))?;
    Ok(gtmpl_value::Value::String(
        String::from_utf8_lossy(&bytes).into_owned(),
    ))
}

fn to_gtmpl(v: &Value) -> gtmpl_value::Value {
    use gtmpl_value::Value as G;
    match v {
        Value::Null => G::Nil,
        Value::Bool(b) => G::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                G::from(i)
            } else if let Some(u) = n.as_u64() {
                G::from(u)
            } else {
                G::from(n.as_f64().unwrap_or_default())
            }
        }
        Value::String(s) => G::String(s.clone()),
        Value::Array(a) => G::Array(a.iter().map(to_gtmpl).collect()),
        Value::Object(m) => G::Map(m.iter().map(|(k, v)| (k.clone(), to_gtmpl(v))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn custom_columns_and_tabwriter_read_like_kubectl() {
        let list = json!({"kind": "List", "apiVersion": "v1", "items": [
            {"metadata": {"name": "tf-a", "labels": {"team": "nlp"}}, "spec": {"n": [1, 2]}},
            {"metadata": {"name": "tf-b"}, "spec": {}}]});
        let f = parse_format(Some(
            "custom-columns=N:.metadata.name,L:.metadata.labels,R:.spec.n[*],X:.nope",
        ))
        .unwrap();
        let mut out = Vec::new();
        print(&f, &list, "tfjob.kubeflow.org", false, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "N      L               R        X\ntf-a   map[team:nlp]   1,2      <none>\ntf-b   <none>          <none>   <none>\n"
        );
        assert!(matches!(parse_format(Some("bogus")), Err(Error::Usage(_))));
        assert!(parse_format(Some("custom-columns=N")).is_err());
    }

    #[test]
    fn sort_by_is_bytewise_numeric_quantity_aware_and_stable() {
        let v = vec![
            json!({"n": "job-9"}),
            json!({"n": "job-10"}),
            json!({}),
            json!({"n": "job-9", "k": 1}),
        ];
        let v = sort_by(v, ".n", |x| x.clone()).unwrap();
        assert_eq!(
            v,
            vec![
                json!({}),
                json!({"n": "job-10"}),
                json!({"n": "job-9"}),
                json!({"n": "job-9", "k": 1})
            ]
        );
        let q = sort_by(vec!["2Gi", "500Mi", "1"], "{.}", |s| json!(s)).unwrap();
        assert_eq!(q, ["1", "500Mi", "2Gi"]);
        let idx = sort_by(vec![3, 1, 2, 0], ".", |i| json!(i)).unwrap();
        assert_eq!(idx, [0, 1, 2, 3]);
    }
}
