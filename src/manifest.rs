//! Reading YAML (and JSON, which is YAML) into `serde_json::Value` while remembering where each
//! node came from, so that every finding can say `file:line:column`.
//!
//! We build the tree ourselves from the parser's event stream instead of deserializing, because:
//! broken manifests must still load (validation reports every problem, not the first serde
//! error), we need positions for every path, and hostile input (deep nesting, alias bombs, huge
//! files) must end in a clean error rather than a stack overflow.
//!
//! Scalars are resolved exactly as kubectl reads them: sigs.k8s.io/yaml decodes with its fork of
//! go-yaml v2 (YAML 1.1 resolver, `resolve.go`) and converts the result to JSON with Go's
//! `encoding/json` (`yaml.go` `yamlToJSONTarget`). So `010` is 8, `yes` is true, `2.0` is sent as
//! `2`, `.inf` is refused, and a duplicate key keeps the later value (with a warning here). One
//! reading serves `validate`, `render` and `submit -f`, so what one accepts the others send.

use std::collections::{HashMap, HashSet};
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
    /// Things kubectl accepts silently but a reader should know (duplicate keys).
    pub warnings: Vec<ParseWarning>,
}

/// Something the YAML reader accepted, as kubectl would, but that deserves a warning.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseWarning {
    /// Field path of the node concerned.
    pub path: String,
    pub message: String,
    pub location: Location,
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
        /// Keys that came from a `<<` merge and may be overridden without a warning.
        merge_keys: HashSet<String>,
    },
}

/// Stands for a pending `<<` merge key; cannot collide with a real key (NUL is not printable
/// YAML).
const MERGE_KEY_MARK: &str = "\u{0}<<";

struct Builder {
    file: String,
    docs: Vec<Document>,
    stack: Vec<Frame>,
    positions: Positions,
    anchors: HashMap<usize, Value>,
    root: Option<Value>,
    nodes: usize,
    warnings: Vec<ParseWarning>,
    /// The last scalar was an untagged plain `<<` (a merge key, go-yaml's `isMerge`).
    plain_merge_key: bool,
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
            warnings: Vec::new(),
            plain_merge_key: false,
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
                    self.warnings.clear();
                }
                Event::DocumentEnd => {
                    if let Some(value) = self.root.take()
                        && !value.is_null()
                    {
                        let positions = std::mem::take(&mut self.positions);
                        let warnings = std::mem::take(&mut self.warnings);
                        self.docs.push(Document {
                            file: self.file.clone(),
                            index: self.docs.len(),
                            value,
                            positions,
                            warnings,
                        });
                    }
                }
                Event::Scalar(text, style, anchor, tag) => {
                    self.begin_node(pos)?;
                    let core = tag.as_ref().and_then(|t| t.core_suffix());
                    self.plain_merge_key = (style == ScalarStyle::Plain && core.is_none()
                        || core == Some("merge"))
                        && text == "<<";
                    let value = match (style, core) {
                        (_, Some("str" | "binary")) => Value::String(text.into_owned()),
                        (ScalarStyle::Plain, None) => {
                            resolve_plain(&text).map_err(|m| self.err(m, pos))?
                        }
                        // `!!int "010"` and friends: the tag asks for the resolver even on a
                        // quoted scalar, and go-yaml fails when the text is not of that type.
                        (_, Some(t @ ("int" | "float" | "bool" | "null"))) => {
                            let v = resolve_plain(&text).map_err(|m| self.err(m, pos))?;
                            let fits = match (t, &v) {
                                ("int", Value::Number(n)) => !n.is_f64(),
                                ("float", Value::Number(_)) => true,
                                ("bool", Value::Bool(_)) | ("null", Value::Null) => true,
                                _ => false,
                            };
                            if !fits {
                                return Err(
                                    self.err(format!("cannot decode `{text}` as a !!{t}"), pos)
                                );
                            }
                            v
                        }
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
                            merge_keys: HashSet::new(),
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
            Some(Frame::Map {
                map,
                key,
                path,
                merge_keys,
                ..
            }) => match key.take() {
                Some(k) if k == MERGE_KEY_MARK => {
                    // `<<: *defaults`: go-yaml v2 (decode.go `merge`) sets every key of the
                    // merged map in turn, so the later of two writes wins, as for any key.
                    // A list merges its maps last to first, so the first one listed wins.
                    let maps: Vec<Value> = match value {
                        Value::Object(_) => vec![value],
                        Value::Array(items) => items.into_iter().rev().collect(),
                        _ => {
                            return Err(self.err(
                                "map merge requires a map or a sequence of maps as the value",
                                pos,
                            ));
                        }
                    };
                    for m in maps {
                        let Value::Object(m) = m else {
                            return Err(self.err(
                                "map merge requires a map or a sequence of maps as the value",
                                pos,
                            ));
                        };
                        for (k, v) in m {
                            merge_keys.insert(k.clone());
                            map.insert(k, v);
                        }
                    }
                }
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
                    if k == "<<" && self.plain_merge_key {
                        *key = Some(MERGE_KEY_MARK.to_string());
                        return Ok(());
                    }
                    let child = join_key(path, &k);
                    // kubectl reads YAML without go-yaml's strict mode (sigs.k8s.io/yaml
                    // `YAMLToJSON`, not `YAMLToJSONStrict`): the later value wins. A key that
                    // only overrides a merged one is the point of merging, not a mistake.
                    if map.contains_key(&k) && !merge_keys.contains(&k) {
                        let first = self
                            .positions
                            .keys
                            .get(&child)
                            .map(|p| format!(" (first at line {})", p.line))
                            .unwrap_or_default();
                        self.warnings.push(ParseWarning {
                            path: child.clone(),
                            message: format!(
                                "duplicate key {k:?}{first}: kubectl keeps the later value, this one"
                            ),
                            location: Location {
                                file: self.file.clone(),
                                line: pos.line,
                                column: pos.column,
                            },
                        });
                    }
                    merge_keys.remove(&k);
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

/// Resolves an unquoted scalar as kubectl does, then turns it into the JSON kubectl would send.
///
/// The resolver is go-yaml v2.4's `resolve` (the copy vendored as sigs.k8s.io/yaml/goyaml.v2):
/// the first character picks what to try (sign or digit: int, then float; `.`: float; one of
/// `yYnNtTfFoO~`: the fixed table of YAML 1.1 booleans and nulls; anything else: a string).
/// The JSON step is Go's `encoding/json`, which writes an integral float as an integer
/// (`2.0` → `2`, `1e1` → `10`) and refuses infinities and NaN, so `.inf` is an error here too.
/// Returns the error message kubectl's conversion would give.
pub fn resolve_plain(s: &str) -> Result<Value, String> {
    Ok(match resolve_yaml11(s) {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::from(i),
        Scalar::Uint(u) => Value::from(u),
        Scalar::Float(f) => json_float(f).map_err(|what| {
            format!(
                "{s} is {what}, which JSON cannot carry; kubectl refuses it too (json: unsupported value); quote it if you meant the text"
            )
        })?,
        Scalar::Str => Value::String(s.to_string()),
    })
}

/// What go-yaml v2 makes of a plain scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str,
}

/// go-yaml v2.4 `resolve.go` for an untagged plain scalar.
pub fn resolve_yaml11(s: &str) -> Scalar {
    // The fixed table (`resolveMapList`).
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Scalar::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Scalar::Bool(false);
        }
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match s.as_bytes()[0] {
        // `strconv.ParseFloat(in)` as is: no `_` removal on this path.
        b'.' => match go_parse_float(s) {
            Some(f) if is_dot_float(s) => Scalar::Float(f),
            _ => Scalar::Str,
        },
        b'+' | b'-' | b'0'..=b'9' => {
            let plain = s.replace('_', "");
            if let Some(i) = go_parse_int_base0(&plain) {
                return i;
            }
            if is_yaml_style_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return Scalar::Float(f);
            }
            if let Some(rest) = plain.strip_prefix("0b") {
                return go_parse_int(rest, 2).unwrap_or(Scalar::Str);
            }
            if let Some(rest) = plain.strip_prefix("-0b") {
                return match go_parse_int(&format!("-{rest}"), 2) {
                    Some(Scalar::Int(i)) => Scalar::Int(i),
                    _ => Scalar::Str,
                };
            }
            Scalar::Str
        }
        _ => Scalar::Str,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)`: optional sign (ParseInt only),
/// then `0x`/`0X` hex, `0o`/`0O` octal, `0b`/`0B` binary, a leading `0` for octal, or decimal.
fn go_parse_int_base0(s: &str) -> Option<Scalar> {
    let (sign, body) = match s.as_bytes().first()? {
        b'+' => ("", &s[1..]),
        b'-' => ("-", &s[1..]),
        _ => ("", s),
    };
    let lower = body.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, &body[2..]),
        Some("0o") => (8, &body[2..]),
        Some("0b") => (2, &body[2..]),
        _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..]),
        _ => (10, body),
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let r = go_parse_int(&format!("{sign}{digits}"), radix)?;
    // ParseUint takes no sign at all.
    if matches!(r, Scalar::Uint(_)) && !s.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(r)
}

/// `strconv.ParseInt(s, radix, 64)`, falling back to `ParseUint` for values above i64::MAX.
fn go_parse_int(s: &str, radix: u32) -> Option<Scalar> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    if let Ok(i) = i64::from_str_radix(s, radix) {
        return Some(Scalar::Int(i));
    }
    if s.starts_with(['+', '-']) {
        return None;
    }
    u64::from_str_radix(s, radix).ok().map(Scalar::Uint)
}

/// go-yaml v2.4's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exp_ok
}

/// What `strconv.ParseFloat` accepts after a leading `.`: digits, then an optional exponent.
fn is_dot_float(s: &str) -> bool {
    s.starts_with('.') && is_yaml_style_float(s)
}

/// `strconv.ParseFloat(s, 64)` on text already known to be decimal: out of range is an error
/// (Go returns ErrRange), so the scalar stays a string.
fn go_parse_float(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's `encoding/json` for a float64: integral values below 1e21 are written without a
/// fraction (so the API server reads an integer); infinities and NaN are refused.
fn json_float(f: f64) -> Result<Value, &'static str> {
    if f.is_nan() {
        return Err("NaN");
    }
    if f.is_infinite() {
        return Err(if f > 0.0 { "+Inf" } else { "-Inf" });
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if f >= i64::MIN as f64 && f < i64::MAX as f64 {
            return Ok(Value::from(f as i64));
        }
        if f >= 0.0 && f < u64::MAX as f64 {
            return Ok(Value::from(f as u64));
        }
    }
    Ok(Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null))
}

/// Deserializes a document's value into a typed object; an error names the field with its
/// `file:line:column` (the value as read, so the position is where the user wrote it).
pub fn from_value<T: serde::de::DeserializeOwned>(
    value: &Value,
    positions: Option<&Positions>,
    source: &str,
) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut path = String::new();
        for seg in e.path().iter() {
            use serde_path_to_error::Segment;
            match seg {
                Segment::Seq { index } => path = join_index(&path, *index),
                Segment::Map { key } => path = join_key(&path, key),
                Segment::Enum { variant } => path = join_key(&path, variant),
                Segment::Unknown => {}
            }
        }
        let at = positions
            .and_then(|p| p.value(&path).or_else(|| p.locate(&path)))
            .map(|l| l.to_string())
            .unwrap_or_else(|| source.to_string());
        let field = if path.is_empty() {
            "the document".to_string()
        } else {
            path
        };
        Error::Invalid(format!("{at}: {field}: cannot be read: {}", e.inner()))
    })
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

    /// The YAML table kubectl reads by: each row is a plain scalar and the JSON kubectl sends
    /// for it (`None`: kubectl refuses the document). Rows follow go-yaml v2.4's `resolve.go`
    /// (sigs.k8s.io/yaml/goyaml.v2) and the YAML 1.1 type drafts it implements
    /// (yaml.org/type/bool.html, int.html, float.html, null.html), then Go's `encoding/json`.
    #[test]
    fn scalar_table_matches_kubectl() {
        let rows: &[(&str, Option<Value>)] = &[
            // bool.html: y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
            ("y", Some(json!(true))),
            ("Y", Some(json!(true))),
            ("yes", Some(json!(true))),
            ("Yes", Some(json!(true))),
            ("YES", Some(json!(true))),
            ("true", Some(json!(true))),
            ("True", Some(json!(true))),
            ("TRUE", Some(json!(true))),
            ("on", Some(json!(true))),
            ("On", Some(json!(true))),
            ("ON", Some(json!(true))),
            ("n", Some(json!(false))),
            ("N", Some(json!(false))),
            ("no", Some(json!(false))),
            ("No", Some(json!(false))),
            ("NO", Some(json!(false))),
            ("false", Some(json!(false))),
            ("False", Some(json!(false))),
            ("FALSE", Some(json!(false))),
            ("off", Some(json!(false))),
            ("Off", Some(json!(false))),
            ("OFF", Some(json!(false))),
            // Mixed case is not in the table: a string.
            ("yEs", Some(json!("yEs"))),
            ("oN", Some(json!("oN"))),
            ("tRUE", Some(json!("tRUE"))),
            // null.html
            ("~", Some(json!(null))),
            ("null", Some(json!(null))),
            ("Null", Some(json!(null))),
            ("NULL", Some(json!(null))),
            ("nULL", Some(json!("nULL"))),
            // int.html: decimal, signs, `_` separators, 0-prefixed octal, 0x, 0b; plus 0o, which
            // Go's ParseInt(s, 0, 64) reads.
            ("0", Some(json!(0))),
            ("3", Some(json!(3))),
            ("+3", Some(json!(3))),
            ("-3", Some(json!(-3))),
            ("1_000", Some(json!(1000))),
            ("010", Some(json!(8))),
            ("0400", Some(json!(256))),
            ("-010", Some(json!(-8))),
            ("0o17", Some(json!(15))),
            ("0O17", Some(json!(15))),
            ("0x1F", Some(json!(31))),
            ("0X1f", Some(json!(31))),
            ("-0x10", Some(json!(-16))),
            ("0b11", Some(json!(3))),
            ("-0b11", Some(json!(-3))),
            ("0b1_0", Some(json!(2))),
            ("9223372036854775807", Some(json!(i64::MAX))),
            ("18446744073709551615", Some(json!(u64::MAX))),
            // Not an octal number, but it matches the float pattern: 8.0, sent as 8.
            ("08", Some(json!(8))),
            ("09.5", Some(json!(9.5))),
            // Beyond u64: the float pattern catches it.
            ("18446744073709551616", Some(json!(18446744073709551616.0))),
            // float.html as go-yaml implements it; integral results go out as integers.
            ("2.0", Some(json!(2))),
            ("1e1", Some(json!(10))),
            ("1E+2", Some(json!(100))),
            ("1.", Some(json!(1))),
            ("-2.0", Some(json!(-2))),
            ("1.5", Some(json!(1.5))),
            (".5", Some(json!(0.5))),
            ("+.5", Some(json!(0.5))),
            ("1_0.5", Some(json!(10.5))),
            ("1e21", Some(json!(1e21))),
            // Non-finite: resolved by the table, refused by encoding/json.
            (".inf", None),
            (".Inf", None),
            (".INF", None),
            ("+.inf", None),
            ("-.inf", None),
            ("-.INF", None),
            (".nan", None),
            (".NaN", None),
            (".NAN", None),
            // Overflowing floats are a ParseFloat range error: the text stays a string.
            ("1e400", Some(json!("1e400"))),
            // Shapes YAML 1.1 does not know stay strings.
            ("inf", Some(json!("inf"))),
            ("nan", Some(json!("nan"))),
            (".5_0", Some(json!(".5_0"))),
            ("0x", Some(json!("0x"))),
            ("0xG", Some(json!("0xG"))),
            ("1:30", Some(json!("1:30"))),
            ("8Gi", Some(json!("8Gi"))),
            ("500m", Some(json!("500m"))),
            ("_1", Some(json!("_1"))),
            ("2001-12-14", Some(json!("2001-12-14"))),
            ("1.2.3", Some(json!("1.2.3"))),
            ("+", Some(json!("+"))),
            ("-", Some(json!("-"))),
            ("+0x10", Some(json!(16))),
        ];
        let mut wrong = Vec::new();
        for (text, want) in rows {
            let got = resolve_plain(text).ok();
            if &got != want {
                wrong.push(format!("{text:?}: got {got:?}, want {want:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn documents_read_like_kubectl() {
        let src = "a: 010\nb: !!str 010\nc: '010'\nd: !!int \"0x10\"\ne: yes\nf: \"yes\"\n";
        let d = parse_one(src, "t.yaml").unwrap().unwrap();
        assert_eq!(
            d.value,
            json!({"a": 8, "b": "010", "c": "010", "d": 16, "e": true, "f": "yes"})
        );
        let e = parse_documents("a:\n  b: .inf\n", "t.yaml").unwrap_err();
        assert_eq!((e.location.line, e.location.column), (2, 6), "{e}");
        assert!(e.message.contains("+Inf"), "{e}");
        let e = parse_documents("a: !!int abc\n", "t.yaml").unwrap_err();
        assert!(e.message.contains("!!int"), "{e}");
        // Keys resolve too, then become JSON strings: `010: x` is key "8".
        let d = parse_one("010: x\non: y\n", "t").unwrap().unwrap();
        // `y` is a boolean too (bool.html).
        assert_eq!(d.value, json!({"8": "x", "true": true}));
    }

    #[test]
    fn duplicate_keys_keep_the_later_value_with_a_warning() {
        let d = parse_one("a: 1\nb:\n  c: 1\n  c: 2\na: 3\n", "dup.yaml")
            .unwrap()
            .unwrap();
        assert_eq!(d.value, json!({"a": 3, "b": {"c": 2}}));
        let w: Vec<(String, usize)> = d
            .warnings
            .iter()
            .map(|w| (w.path.clone(), w.location.line))
            .collect();
        assert_eq!(w, vec![("b.c".to_string(), 4), ("a".to_string(), 5)]);
        assert!(
            d.warnings[1].message.contains("first at line 1"),
            "{:?}",
            d.warnings
        );
        // The position table points at the value that is kept.
        assert_eq!(d.positions.key("a").unwrap().line, 5);
    }

    #[test]
    fn merge_keys_merge_like_go_yaml_v2() {
        let src = "base: &b {x: 1, w: 2}\nm:\n  <<: *b\n  w: 3\nl:\n  <<: [{x: 1}, {x: 2, z: 2}]\n";
        let d = parse_one(src, "m.yaml").unwrap().unwrap();
        assert_eq!(d.value["m"], json!({"x": 1, "w": 3}));
        assert_eq!(d.value["l"], json!({"x": 1, "z": 2}));
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        // A quoted "<<" is an ordinary key.
        let d = parse_one("'<<': 1\n", "m").unwrap().unwrap();
        assert_eq!(d.value, json!({"<<": 1}));
    }

    #[test]
    fn typed_reading_names_file_line_and_field() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            spec: S,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct S {
            replicas: Vec<i32>,
        }
        let d = parse_one("spec:\n  replicas:\n  - 1\n  - 2.5\n", "r.yaml")
            .unwrap()
            .unwrap();
        let e = from_value::<T>(&d.value, Some(&d.positions), "r.yaml").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("r.yaml:4:5: spec.replicas[1]: cannot be read"),
            "{msg}"
        );
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
