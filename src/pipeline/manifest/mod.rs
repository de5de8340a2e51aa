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
use serde_json::{Map, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, ScanError, Span};

use crate::error::{Error, Result};

mod scalar;
pub use scalar::{Scalar, resolve_plain, resolve_yaml11};

/// Bigger than any real TFJob: the bounded reader's manifest limit ([`crate::input::MANIFEST`]),
/// enforced again here for text handed in from elsewhere.
pub const MAX_INPUT_BYTES: usize = crate::input::MANIFEST.bytes;
/// A PodTemplateSpec is about 15 levels deep; anything far beyond that is not a manifest, and
/// recursive consumers (schema validation, drop) must not be handed it.
pub const MAX_DEPTH: usize = 64;
/// Caps alias expansion ("billion laughs").
pub const MAX_NODES: usize = 1_000_000;
/// Caps what aliases add in bytes: one long string aliased many times stays under
/// [`MAX_NODES`] yet expands to gigabytes. Twice the API server's request limit: a document
/// that expands past it can never be stored, and the tree stays a few tens of MiB.
pub const MAX_EXPANDED_BYTES: usize = 2 * MAX_INPUT_BYTES;

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

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, as sigs.k8s.io/yaml writes a float map key:
/// the shortest digits of the float32, in `%e` form when the exponent is below -4 or at least 6
/// (Go's `%g` with the shortest precision), with `.inf`/`-.inf`/`.nan` for the specials.
fn go_float32_key(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    let e = format!("{:e}", f as f32);
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if digits.chars().all(|c| c == '0') {
        return format!("{sign}0");
    }
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize));
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
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
    /// Bytes the aliases have added so far (see [`MAX_EXPANDED_BYTES`]).
    alias_bytes: usize,
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
            alias_bytes: 0,
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
                    // A float key keeps its float form: sigs.k8s.io/yaml (`yamlMapKeyToString`)
                    // formats go-yaml's float64 key with FormatFloat(f, 'g', -1, 32), so `1e7:`
                    // is "1e+07" and `.inf:` is ".inf", where a float value would be sent
                    // through encoding/json (10000000, or refused).
                    let key_float = match (style, core) {
                        (ScalarStyle::Plain, None) | (_, Some("float"))
                            if matches!(self.stack.last(), Some(Frame::Map { key: None, .. })) =>
                        {
                            match resolve_yaml11(&text) {
                                Scalar::Float(f) => Some(f),
                                Scalar::Int(i) if core.is_some() => Some(i as f64),
                                Scalar::Uint(u) if core.is_some() => Some(u as f64),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    let value = match (style, core) {
                        _ if key_float.is_some() => {
                            Value::String(go_float32_key(key_float.unwrap_or_default()))
                        }
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
                    let (size, bytes) = self
                        .anchors
                        .get(&id)
                        .map(|v| (count_nodes(v), count_bytes(v)))
                        .ok_or_else(|| self.err("alias to an unknown anchor", pos))?;
                    // Count before cloning, so an over-budget alias never allocates its copy.
                    self.nodes += size;
                    if self.nodes > MAX_NODES {
                        return Err(self.err(
                            format!("aliases expand to more than {MAX_NODES} nodes"),
                            pos,
                        ));
                    }
                    self.alias_bytes = self.alias_bytes.saturating_add(bytes);
                    if self.alias_bytes > MAX_EXPANDED_BYTES {
                        return Err(self.err(
                            format!(
                                "aliases expand to more than {} MiB; the API server refuses \
                                 requests over 3 MiB, so this cannot be a TFJob it stores",
                                MAX_EXPANDED_BYTES / (1024 * 1024)
                            ),
                            pos,
                        ));
                    }
                    let value = self.anchors[&id].clone();
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
                    // Keys become JSON strings as sigs.k8s.io/yaml (yaml.go,
                    // `convertToJSONableObject`) makes them, which kubectl uses: strings as they
                    // are, ints in decimal, floats with Go's FormatFloat(f, 'g', -1, 32), bools
                    // as true/false; a null key is "unsupported map key of type <nil>" there.
                    let k = match value {
                        Value::String(s) => s,
                        Value::Bool(b) => b.to_string(),
                        Value::Number(n) => match n.as_f64() {
                            Some(f) if n.is_f64() => go_float32_key(f),
                            _ => n.to_string(),
                        },
                        Value::Null => {
                            return Err(self.err(
                                "a mapping key is null (`~`, `null` or nothing before the colon); \
                                 kubectl refuses it: quote it (\"null\") if you mean the word",
                                pos,
                            ));
                        }
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

/// Roughly the bytes a value takes as JSON: its strings and keys, a few bytes for other
/// scalars and punctuation. Exact enough for a budget; never undercounts a string.
fn count_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len() + 2,
        Value::Array(a) => 2 + a.iter().map(|x| count_bytes(x) + 1).sum::<usize>(),
        Value::Object(m) => {
            2 + m
                .iter()
                .map(|(k, x)| k.len() + 4 + count_bytes(x))
                .sum::<usize>()
        }
        Value::Number(n) => n.to_string().len(),
        Value::Bool(_) | Value::Null => 5,
    }
}

/// Deserializes a document's value into a typed object; an error names the field with its
/// `file:line:column` (the value as read, so the position is where the user wrote it).
pub fn from_value<T: serde::de::DeserializeOwned>(
    value: &Value,
    positions: Option<&Positions>,
    source: &str,
) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let (path, message) = read_error(&e);
        let at = positions
            .and_then(|p| p.value(&path).or_else(|| p.locate(&path)))
            .map(|l| l.to_string())
            .unwrap_or_else(|| source.to_string());
        let field = if path.is_empty() {
            "the document".to_string()
        } else {
            path
        };
        Error::Invalid(format!("{at}: {field}: {message}"))
    })
}

/// Whether `value` reads as a `T` (the typed reading `submit` sends): `None`, or the field path
/// and message of the first thing that does not. `validate` reports it, so both give one verdict.
pub fn typed_reading_error<T: serde::de::DeserializeOwned>(
    value: &Value,
) -> Option<(String, String)> {
    serde_path_to_error::deserialize::<_, T>(value)
        .err()
        .map(|e| read_error(&e))
}

fn read_error(e: &serde_path_to_error::Error<serde_json::Error>) -> (String, String) {
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
    (path, format!("cannot be read: {}", e.inner()))
}

#[cfg(test)]
mod tests;
