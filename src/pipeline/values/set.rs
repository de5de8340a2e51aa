//! The `--set` / `--set-string` / `--set-file` parser, in Helm's forms (helm/helm
//! pkg/strvals/parser.go): `a.b=1`, `a[0]=x`, `l={a,b}`, `\,` and `\.` escapes.

use super::*;

/// Types a `--set` value the way Helm does: `true`, `false`, `null` and integers are typed,
/// everything else is a string. (Full YAML 1.1 resolution would turn `--set name=n` or
/// `--set queue=on` into booleans, which no one typing a flag means.)
pub(super) fn set_scalar(raw: &str) -> Value {
    match raw {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        _ => match raw.parse::<i64>() {
            // "007" and "+1" stay strings (image tags, versions).
            Ok(n) if raw == "0" || !raw.starts_with(['+', '0']) => Value::from(n),
            _ => Value::String(raw.to_string()),
        },
    }
}

/// Nesting of one `--set` key (`a.b[0].c` is 4 levels). Helm stops at 30 nested name levels
/// (helm/helm pkg/strvals/parser.go, `maxNestedNameLevel`); deeper keys are never real values,
/// and a key with 60,000 segments must not build a tree deep enough to overflow the stack.
pub const MAX_SET_DEPTH: usize = 30;
/// Largest list index `--set a[N]=x` accepts; the list is padded up to it.
pub const MAX_SET_INDEX: usize = 1000;

/// How a `--set`-style argument's values are read, in Helm's flags: `--set` types `true`,
/// `false`, `null` and integers; `--set-string` keeps text; `--set-file` reads the value from a
/// file (through the bounded reader).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetArg {
    Typed(String),
    String(String),
    File(String),
}

impl SetArg {
    pub fn text(&self) -> &str {
        match self {
            SetArg::Typed(s) | SetArg::String(s) | SetArg::File(s) => s,
        }
    }
    /// The argument as the user typed it, for messages.
    pub fn flag(&self) -> String {
        let name = match self {
            SetArg::Typed(_) => "--set",
            SetArg::String(_) => "--set-string",
            SetArg::File(_) => "--set-file",
        };
        format!("{name} {}", self.text())
    }
}

pub(super) const HELM_FORMS: &str = "write KEY=VALUE, e.g. --set worker.replicas=4, a list as --set command={python,train.py}, one element as --set command[1]=train.py, a literal comma or dot as \\, or \\.";

/// Parses one `--set` argument (`a.b=1,c[0]=x,l={a,b}`, `\,` for a literal comma) into a values
/// tree, typing values as [`set_scalar`] does.
pub fn parse_set(arg: &str) -> std::result::Result<Value, String> {
    let mut root = Value::Object(Map::new());
    parse_set_into(&mut root, &SetArg::Typed(arg.to_string()))?;
    Ok(root)
}

/// Applies one `--set`/`--set-string`/`--set-file` argument onto `root`, as Helm does when several
/// are given: `--set a[0]=x --set a[1]=y` makes `[x, y]`.
pub fn parse_set_into(root: &mut Value, arg: &SetArg) -> std::result::Result<(), String> {
    for (segs, v) in parse_pairs(arg)? {
        set_segs(root, &segs, v);
    }
    Ok(())
}

/// The (path, value) pairs of one argument, files read.
pub(super) fn parse_pairs(arg: &SetArg) -> std::result::Result<Vec<(Vec<Seg>, Value)>, String> {
    let mut out = Vec::new();
    for pair in split_pairs(arg.text()) {
        if pair.is_empty() {
            continue;
        }
        let Some((key, raw)) = split_key_value(&pair) else {
            return Err(format!("`{pair}` is not KEY=VALUE; {HELM_FORMS}"));
        };
        let value = match arg {
            SetArg::File(_) => {
                let (_, text) = crate::input::read_text(&raw, crate::input::SET_FILE)
                    .map_err(|e| e.to_string())?;
                Value::String(text)
            }
            SetArg::Typed(_) | SetArg::String(_) => {
                let typed = matches!(arg, SetArg::Typed(_));
                let one = |s: &str| {
                    if typed {
                        set_scalar(s)
                    } else {
                        Value::String(s.to_string())
                    }
                };
                match raw.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                    Some("") => Value::Array(Vec::new()),
                    Some(items) => {
                        Value::Array(split_unescaped(items, ',').iter().map(|s| one(s)).collect())
                    }
                    None => one(&unescape(&raw)),
                }
            }
        };
        out.push((parse_set_key(key.trim())?, value));
    }
    Ok(out)
}

/// Splits at the first unescaped `=`.
pub(super) fn split_key_value(pair: &str) -> Option<(String, String)> {
    let mut escaped = false;
    for (i, c) in pair.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '=' if !escaped => return Some((pair[..i].to_string(), pair[i + 1..].to_string())),
            _ => escaped = false,
        }
    }
    None
}

/// Splits an argument into `KEY=VALUE` pairs at unescaped commas outside `{…}` lists. Escapes
/// other than `\,` are kept for the key and value parsers.
pub(super) fn split_pairs(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut depth = 0usize;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let cur = out.last_mut().expect("never empty");
                cur.push('\\');
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '{' => {
                depth += 1;
                out.last_mut().expect("never empty").push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                out.last_mut().expect("never empty").push(c);
            }
            ',' if depth == 0 => out.push(String::new()),
            _ => out.last_mut().expect("never empty").push(c),
        }
    }
    out
}

/// Removes the escapes of `\,`, `\.`-free text: what a scalar `--set` value means.
pub(super) fn unescape(s: &str) -> String {
    split_unescaped(s, ',').join(",")
}

/// Splits at unescaped `sep`; `\sep` becomes `sep`, `\\` becomes `\`, other escapes are kept.
pub(super) fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && matches!(chars.peek(), Some(&n) if n == sep || n == '\\' || n == ',' || n == '=')
        {
            let n = chars.next().expect("peeked");
            out.last_mut().expect("never empty").push(n);
        } else if c == sep {
            out.push(String::new());
        } else {
            out.last_mut().expect("never empty").push(c);
        }
    }
    out
}

/// Path segments of a `--set` key: `a.b[2].c` → [Key a, Key b, Index 2, Key c].
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

pub(super) fn parse_set_key(key: &str) -> std::result::Result<Vec<Seg>, String> {
    let mut segs = Vec::new();
    let parts = split_unescaped(key, '.');
    if parts.len() > MAX_SET_DEPTH {
        return Err(format!(
            "the key has {} levels; at most {MAX_SET_DEPTH} are allowed (as in Helm)",
            parts.len()
        ));
    }
    for part in parts {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part.as_str(), ""),
        };
        if name.is_empty() {
            return Err(format!("`{key}` has an empty key segment; {HELM_FORMS}"));
        }
        segs.push(Seg::Key(name.to_string()));
        while let Some(r) = rest.strip_prefix('[') {
            let end = r
                .find(']')
                .ok_or_else(|| format!("`{key}`: missing `]`; {HELM_FORMS}"))?;
            let idx: usize = r[..end].parse().map_err(|_| {
                format!("`{key}`: a list index must be a number ≥ 0, as in --set command[0]=python")
            })?;
            if idx > MAX_SET_INDEX {
                return Err(format!(
                    "`{key}`: list index {idx} is too large (at most {MAX_SET_INDEX})"
                ));
            }
            segs.push(Seg::Index(idx));
            rest = &r[end + 1..];
        }
        if !rest.is_empty() {
            return Err(format!("`{key}`: unexpected `{rest}`; {HELM_FORMS}"));
        }
        if segs.len() > MAX_SET_DEPTH {
            return Err(format!(
                "the key nests deeper than {MAX_SET_DEPTH} levels (as in Helm)"
            ));
        }
    }
    Ok(segs)
}

pub(super) fn set_path(
    root: &mut Value,
    key: &str,
    value: Value,
) -> std::result::Result<(), String> {
    let segs = parse_set_key(key.trim())?;
    set_segs(root, &segs, value);
    Ok(())
}

pub(super) fn set_segs(root: &mut Value, segs: &[Seg], value: Value) {
    let mut cur = root;
    for seg in segs {
        cur = match seg {
            Seg::Key(k) => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                cur.as_object_mut()
                    .expect("made an object")
                    .entry(k.clone())
                    .or_insert(Value::Null)
            }
            Seg::Index(i) => {
                if !cur.is_array() {
                    *cur = Value::Array(Vec::new());
                }
                let a = cur.as_array_mut().expect("made an array");
                if a.len() <= *i {
                    a.resize(*i + 1, Value::Null);
                }
                &mut a[*i]
            }
        };
    }
    *cur = value;
}

/// Path segments of a declared (dotted, no indexes) path.
pub(super) fn dotted(path: &str) -> Vec<Seg> {
    path.split('.').map(|k| Seg::Key(k.to_string())).collect()
}

/// The first list element still unset after every `--set` (`command[1]=x` without `[0]`).
pub(super) fn first_hole(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::Object(m) => m
            .iter()
            .find_map(|(k, c)| first_hole(c, &join_key(path, k))),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, c)| {
            if c.is_null() {
                Some(join_index(path, i))
            } else {
                first_hole(c, &join_index(path, i))
            }
        }),
        _ => None,
    }
}
