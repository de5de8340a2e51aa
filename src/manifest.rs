//! Reading YAML (and JSON, which is YAML) into `serde_json::Value` while remembering where each
//! node came from, so that every finding can say `file:line:column`.
//!
//! We build the tree ourselves from the parser's event stream instead of deserializing, because:
//! broken manifests must still load (validation reports every problem, not the first serde
//! error), we need positions for every path, and hostile input (deep nesting, alias bombs, huge
//! files) must end in a clean error rather than a stack overflow.
//!
//! Scalars are resolved the way kubectl's YAML library does (YAML 1.1 booleans such as `yes`/`no`
//! included), because what matters is how the API server will see the document.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, ScanError, Span};

use crate::error::{Error, Result};

/// Bigger than any real TFJob: etcd refuses objects over 1.5 MiB by default.
pub const MAX_INPUT_BYTES: usize = 3 * 1024 * 1024;
/// A PodTemplateSpec is about 15 levels deep; anything far beyond that is not a manifest, and
/// recursive consumers (schema validation, drop) must not be handed it.
pub const MAX_DEPTH: usize = 64;
/// Caps alias expansion ("billion laughs").
pub const MAX_NODES: usize = 1_000_000;

/// Where something is in the input. `line` and `column` are 1-based.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Line and column (1-based) of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    fn from_span(span: &Span) -> Self {
        Pos {
            line: span.start.line(),
            column: span.start.col() + 1,
        }
    }
}

/// Source positions of one document, keyed by field path (see [`join_key`]).
#[derive(Debug, Clone, Default)]
pub struct Positions {
    file: String,
    /// Where a mapping key was written (`name:`).
    keys: HashMap<String, Pos>,
    /// Where a node's value starts.
    values: HashMap<String, Pos>,
    /// The document's first line, the fallback for paths that do not exist (missing fields).
    doc_start: Option<Pos>,
}

impl Positions {
    /// An empty position table for input that has no source text (e.g. rendered objects).
    pub fn none(file: impl Into<String>) -> Self {
        Positions {
            file: file.into(),
            ..Default::default()
        }
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    /// Where the value at `path` starts.
    pub fn value(&self, path: &str) -> Option<Location> {
        self.values.get(path).map(|p| self.loc(*p))
    }

    /// Where the key of `path` was written.
    pub fn key(&self, path: &str) -> Option<Location> {
        self.keys.get(path).map(|p| self.loc(*p))
    }

    /// The best position for a finding about `path`: the line of its key (what people look at),
    /// else its value, else the nearest ancestor that exists (for missing fields).
    pub fn locate(&self, path: &str) -> Option<Location> {
        let mut p = path;
        loop {
            if let Some(l) = self.key(p).or_else(|| self.value(p)) {
                return Some(l);
            }
            match parent_path(p) {
                Some(parent) => p = parent,
                None => return self.doc_start.map(|d| self.loc(d)),
            }
        }
    }

    fn loc(&self, p: Pos) -> Location {
        Location {
            file: self.file.clone(),
            line: p.line,
            column: p.column,
        }
    }
}

/// One YAML document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The file name as given (`-` is shown as `<stdin>`).
    pub file: String,
    /// 0-based index among the non-empty documents of the file.
    pub index: usize,
    pub value: Value,
    pub positions: Positions,
}

impl Document {
    /// `apiVersion` and `kind` present at the top: a manifest, not a values file (kubectl habit).
    pub fn is_manifest(&self) -> bool {
        self.value.get("apiVersion").is_some() && self.value.get("kind").is_some()
    }
}

/// A YAML syntax (or structure) error with its position.
#[derive(Debug, Clone)]
pub struct ParseError {
    pub message: String,
    pub location: Location,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Self {
        Error::Invalid(e.to_string())
    }
}

/// Appends a map key to a field path: `a.b`, or `a[k]` when the key has characters that would
/// make a dotted path ambiguous (annotation and label keys), as Kubernetes field paths do.
pub fn join_key(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (parent.is_empty(), plain) {
        (true, true) => key.to_string(),
        (_, false) => format!("{parent}[{key}]"),
        (false, true) => format!("{parent}.{key}"),
    }
}

/// Appends a list index to a field path: `a[0]`.
pub fn join_index(parent: &str, idx: usize) -> String {
    format!("{parent}[{idx}]")
}

/// The path one level up, or None at the root.
pub fn parent_path(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    if path.ends_with(']') {
        // The '[' that opens the last segment: keys inside brackets may contain '.', not ']'.
        let open = path.rfind('[')?;
        return Some(&path[..open]);
    }
    Some(match path.rfind(['.', ']']) {
        Some(i) if path.as_bytes()[i] == b'.' => &path[..i],
        Some(i) => &path[..=i],
        None => "",
    })
}

/// Reads a file, or stdin for `-`, refusing absurd sizes before parsing.
/// Returns the display name and the text.
pub fn read_source(path: &str) -> Result<(String, String)> {
    use std::io::Read;
    let (name, bytes) = if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .take(MAX_INPUT_BYTES as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io("reading stdin", e))?;
        ("<stdin>".to_string(), buf)
    } else {
        let meta = std::fs::metadata(path)
            .map_err(|e| Error::Invalid(format!("{path}: cannot read: {e}")))?;
        if meta.is_dir() {
            return Err(Error::Invalid(format!(
                "{path}: is a directory; pass a YAML file"
            )));
        }
        if meta.len() > MAX_INPUT_BYTES as u64 {
            return Err(too_big(path, meta.len() as usize));
        }
        let bytes =
            std::fs::read(path).map_err(|e| Error::Invalid(format!("{path}: cannot read: {e}")))?;
        (path.to_string(), bytes)
    };
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(too_big(&name, bytes.len()));
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| Error::Invalid(format!("{name}: not UTF-8 text: {e}")))?;
    Ok((name, text))
}

fn too_big(name: &str, len: usize) -> Error {
    Error::Invalid(format!(
        "{name}: {:.1} MiB is too large for a TFJob manifest (limit {} MiB; the API server stores at most 1.5 MiB)",
        len as f64 / (1024.0 * 1024.0),
        MAX_INPUT_BYTES / (1024 * 1024)
    ))
}

/// Parses every document of a YAML stream. Empty documents (only comments, a trailing `---`,
/// an explicit null) are skipped, as kubectl does.
pub fn parse_documents(src: &str, file: &str) -> Result<Vec<Document>, ParseError> {
    if src.len() > MAX_INPUT_BYTES {
        return Err(ParseError {
            message: format!("input too large ({} bytes)", src.len()),
            location: Location {
                file: file.into(),
                line: 1,
                column: 1,
            },
        });
    }
    Builder::new(file).run(src)
}

/// Parses a single-document YAML string (values text, --set fragments).
pub fn parse_one(src: &str, file: &str) -> Result<Option<Document>, ParseError> {
    Ok(parse_documents(src, file)?.into_iter().next())
}

enum Frame {
    Seq {
        items: Vec<Value>,
        path: String,
        anchor: usize,
    },
    Map {
        map: Map<String, Value>,
        path: String,
        anchor: usize,
        /// The key just read, waiting for its value.
        key: Option<String>,
    },
}

struct Builder {
    file: String,
    docs: Vec<Document>,
    stack: Vec<Frame>,
    positions: Positions,
    anchors: HashMap<usize, Value>,
    root: Option<Value>,
    nodes: usize,
}

impl Builder {
    fn new(file: &str) -> Self {
        Builder {
            file: file.to_string(),
            docs: Vec::new(),
            stack: Vec::new(),
            positions: Positions::none(file),
            anchors: HashMap::new(),
            root: None,
            nodes: 0,
        }
    }

    fn err(&self, message: impl Into<String>, pos: Pos) -> ParseError {
        ParseError {
            message: message.into(),
            location: Location {
                file: self.file.clone(),
                line: pos.line,
                column: pos.column,
            },
        }
    }

    fn scan_err(&self, e: &ScanError) -> ParseError {
        let m = e.marker();
        self.err(
            format!("YAML syntax error: {}", e.info()),
            Pos {
                line: m.line(),
                column: m.col() + 1,
            },
        )
    }

    fn run(mut self, src: &str) -> Result<Vec<Document>, ParseError> {
        for item in Parser::new_from_str(src) {
            let (event, span) = item.map_err(|e| self.scan_err(&e))?;
            let pos = Pos::from_span(&span);
            match event {
                Event::DocumentStart(..) => {
                    self.positions = Positions::none(&self.file);
                    self.positions.doc_start = Some(pos);
                    self.anchors.clear();
                    self.root = None;
                }
                Event::DocumentEnd => {
                    if let Some(value) = self.root.take()
                        && !value.is_null()
                    {
                        let positions = std::mem::take(&mut self.positions);
                        self.docs.push(Document {
                            file: self.file.clone(),
                            index: self.docs.len(),
                            value,
                            positions,
                        });
                    }
                }
                Event::Scalar(text, style, anchor, tag) => {
                    self.begin_node(pos)?;
                    let value = match (style, tag.as_ref().and_then(|t| t.core_suffix())) {
                        (_, Some("str")) => Value::String(text.into_owned()),
                        (ScalarStyle::Plain, _) => resolve_plain(&text),
                        _ => Value::String(text.into_owned()),
                    };
                    self.finish_node(value, anchor, pos)?;
                }
                Event::SequenceStart(_, anchor, _) => {
                    let path = self.begin_node(pos)?;
                    self.push(
                        Frame::Seq {
                            items: Vec::new(),
                            path,
                            anchor,
                        },
                        pos,
                    )?;
                }
                Event::MappingStart(_, anchor, _) => {
                    let path = self.begin_node(pos)?;
                    self.push(
                        Frame::Map {
                            map: Map::new(),
                            path,
                            anchor,
                            key: None,
                        },
                        pos,
                    )?;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let frame = self.stack.pop().expect("parser balances collections");
                    let (value, anchor) = match frame {
                        Frame::Seq { items, anchor, .. } => (Value::Array(items), anchor),
                        Frame::Map { map, anchor, .. } => (Value::Object(map), anchor),
                    };
                    self.finish_node(value, anchor, pos)?;
                }
                Event::Alias(id) => {
                    self.begin_node(pos)?;
                    let value = self
                        .anchors
                        .get(&id)
                        .cloned()
                        .ok_or_else(|| self.err("alias to an unknown anchor", pos))?;
                    self.nodes += count_nodes(&value);
                    if self.nodes > MAX_NODES {
                        return Err(self.err(
                            format!("aliases expand to more than {MAX_NODES} nodes"),
                            pos,
                        ));
                    }
                    self.finish_node(value, 0, pos)?;
                }
                _ => {}
            }
        }
        Ok(self.docs)
    }

    fn push(&mut self, frame: Frame, pos: Pos) -> Result<(), ParseError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.err(
                format!("nesting deeper than {MAX_DEPTH} levels; this is not a TFJob manifest"),
                pos,
            ));
        }
        self.stack.push(frame);
        Ok(())
    }

    /// Called when a node starts: works out its path and records its position.
    fn begin_node(&mut self, pos: Pos) -> Result<String, ParseError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(self.err(format!("more than {MAX_NODES} YAML nodes"), pos));
        }
        let path = match self.stack.last() {
            None => String::new(),
            Some(Frame::Seq { items, path, .. }) => join_index(path, items.len()),
            Some(Frame::Map {
                path, key: Some(k), ..
            }) => join_key(path, k),
            // A key node: its position is recorded when it completes (in finish_node).
            Some(Frame::Map { key: None, .. }) => return Ok(String::new()),
        };
        self.positions.values.insert(path.clone(), pos);
        Ok(path)
    }

    /// Called when a node is complete: attaches it to its parent.
    fn finish_node(&mut self, value: Value, anchor: usize, pos: Pos) -> Result<(), ParseError> {
        if anchor != 0 {
            self.anchors.insert(anchor, value.clone());
        }
        let key_err = |b: &Self| {
            b.err(
                "a mapping key must be a plain value, not a list or map",
                pos,
            )
        };
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map { map, key, path, .. }) => match key.take() {
                Some(k) => {
                    map.insert(k, value);
                }
                None => {
                    let k = match value {
                        Value::String(s) => s,
                        Value::Null => "null".to_string(),
                        Value::Bool(b) => b.to_string(),
                        Value::Number(n) => n.to_string(),
                        _ => return Err(key_err(self)),
                    };
                    if map.contains_key(&k) {
                        let msg = format!("duplicate key {k:?} (the later one would silently win)");
                        return Err(self.err(msg, pos));
                    }
                    let child = join_key(path, &k);
                    *key = Some(k);
                    self.positions.keys.insert(child, pos);
                }
            },
        }
        Ok(())
    }
}

fn count_nodes(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(count_nodes).sum::<usize>(),
        Value::Object(m) => 1 + m.values().map(count_nodes).sum::<usize>(),
        _ => 1,
    }
}

/// Resolves an unquoted scalar to null, bool, int, float or string, as Kubernetes' YAML library
/// (YAML 1.1 rules) does: `yes`, `on`, `off` are booleans there, which is exactly the trap in
/// annotations like `sidecar.istio.io/inject: false`.
pub fn resolve_plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "y" | "Y" => {
            return Value::Bool(true);
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "n" | "N" => {
            return Value::Bool(false);
        }
        _ => {}
    }
    if let Some(v) = parse_int(s) {
        return v;
    }
    if let Some(f) = parse_float(s) {
        return Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(s.to_string()));
    }
    Value::String(s.to_string())
}

fn parse_int(s: &str) -> Option<Value> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let body = body.replace('_', "");
    let (radix, digits) = if let Some(h) = body.strip_prefix("0x") {
        (16, h.to_string())
    } else if let Some(o) = body.strip_prefix("0o") {
        (8, o.to_string())
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let mag = u128::from_str_radix(&digits, radix).ok();
    match mag {
        Some(m) if neg && m <= i64::MAX as u128 + 1 => Some(Value::from(-(m as i128) as i64)),
        Some(m) if !neg && m <= u64::MAX as u128 => Some(Value::from(m as u64)),
        // Out of range integers become floats, as in Go's YAML.
        _ => format!("{}{}", if neg { "-" } else { "" }, digits)
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number),
    }
}

fn parse_float(s: &str) -> Option<f64> {
    match s {
        ".inf" | ".Inf" | ".INF" | "+.inf" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    // Only the YAML float shapes: Rust also accepts "inf", "nan", "infinity" which YAML does not.
    let ok = s
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | '_'))
        && s.chars().any(|c| c.is_ascii_digit());
    if !ok {
        return None;
    }
    s.replace('_', "").parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        assert_eq!(join_key("", "spec"), "spec");
        assert_eq!(join_key("spec", "tfReplicaSpecs"), "spec.tfReplicaSpecs");
        assert_eq!(
            join_key("metadata.annotations", "sidecar.istio.io/inject"),
            "metadata.annotations[sidecar.istio.io/inject]"
        );
        assert_eq!(join_index("a.containers", 0), "a.containers[0]");
        assert_eq!(parent_path("a.b[0].c"), Some("a.b[0]"));
        assert_eq!(parent_path("a.b[0]"), Some("a.b"));
        assert_eq!(parent_path("m.annotations[x.io/y]"), Some("m.annotations"));
        assert_eq!(parent_path("a"), Some(""));
        assert_eq!(parent_path(""), None);
    }

    #[test]
    fn scalars_resolve_like_kubectl() {
        assert_eq!(resolve_plain("false"), json!(false));
        assert_eq!(resolve_plain("yes"), json!(true));
        assert_eq!(resolve_plain("3"), json!(3));
        assert_eq!(resolve_plain("-3"), json!(-3));
        assert_eq!(resolve_plain("0x10"), json!(16));
        assert_eq!(resolve_plain("1.5"), json!(1.5));
        assert_eq!(resolve_plain("1e12"), json!(1e12));
        assert_eq!(resolve_plain("8Gi"), json!("8Gi"));
        assert_eq!(resolve_plain("inf"), json!("inf"));
        assert_eq!(resolve_plain("~"), json!(null));
    }

    #[test]
    fn positions_are_recorded() {
        let src = "apiVersion: v1\nmetadata:\n  annotations:\n    a.b/c: false\n    q: \"false\"\nlist:\n- x: 1\n";
        let docs = parse_documents(src, "f.yaml").unwrap();
        assert_eq!(docs.len(), 1);
        let d = &docs[0];
        assert_eq!(d.value["metadata"]["annotations"]["a.b/c"], json!(false));
        assert_eq!(d.value["metadata"]["annotations"]["q"], json!("false"));
        let l = d.positions.locate("metadata.annotations[a.b/c]").unwrap();
        assert_eq!((l.line, l.column), (4, 5));
        let v = d.positions.value("metadata.annotations[a.b/c]").unwrap();
        assert_eq!((v.line, v.column), (4, 12));
        let l = d.positions.locate("list[0].x").unwrap();
        assert_eq!(l.line, 7);
        // Missing paths fall back to the nearest ancestor.
        assert_eq!(d.positions.locate("list[0].y.z").unwrap().line, 7);
    }

    #[test]
    fn multi_document_and_empty_documents() {
        let docs = parse_documents("---\na: 1\n---\n# only a comment\n---\nb: 2\n", "f").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].value, json!({"b": 2}));
        assert_eq!(docs[1].index, 1);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse_documents("a: [1, 2\nb: 3\n", "bad.yaml").unwrap_err();
        assert_eq!(e.location.file, "bad.yaml");
        assert!(e.to_string().starts_with("bad.yaml:"));
        let e = parse_documents("a: 1\na: 2\n", "dup.yaml").unwrap_err();
        assert!(e.message.contains("duplicate key"), "{e}");
        assert_eq!(e.location.line, 2);
    }

    #[test]
    fn hostile_inputs_fail_cleanly() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        let e = parse_documents(&deep, "deep").unwrap_err();
        assert!(e.message.contains("recursion limit"), "{e}");
        let block: String = (0..200)
            .map(|i| format!("{}k:\n", "  ".repeat(i)))
            .collect();
        let e = parse_documents(&block, "deep").unwrap_err();
        assert!(e.message.contains("nesting"), "{e}");
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
        let e = parse_documents(bomb, "bomb").unwrap_err();
        assert!(e.message.contains("nodes"), "{e}");
    }
}
