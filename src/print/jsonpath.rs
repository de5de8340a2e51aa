//! kubectl's JSONPath dialect (`-o jsonpath=…`, `--sort-by`, custom columns): a template of text
//! and `{…}` actions, with `range`/`end`, quoted text, `.field`, `..field`, `[*]`, `[i]`,
//! `[a:b:c]`, unions `[0,1]` and `['a','b']`, filters `[?(@.x=="y")]` and `[?(@.x)]`.
//!
//! Follows k8s.io/client-go/util/jsonpath: parser.go (`parseInsideAction`, `parseArray`,
//! `parseFilter`, `parseField`: `\` escapes the next character of a field name, `['a.b']` is
//! re-parsed as `.a.b`) and jsonpath.go (`FindResults` for range blocks, `evalArray` bounds
//! errors, `evalFilter`, `PrintResults`: maps and lists as compact JSON, a group's results
//! joined by one space, `null` for nil). kubectl's printers set `AllowMissingKeys(true)`, so a
//! missing field yields nothing; that is the only mode here. Unlike Go, map wildcards and `..`
//! visit keys in sorted order (Go's map iteration order is random, so kubectl's own order there
//! is not reproducible). No crate implements this dialect (the RFC 9535 crates have no
//! templates, `range` or kubectl's printing), hence this module.
//!
//! Bounded (issue 40, docs/limits.md): nesting of `{range}` and filters at most
//! [`MAX_DEPTH`], checked while parsing (so a template of 60,000 ranges is an error, not a
//! stack overflow); evaluation holds references into the object (`..` copies nothing) and
//! produces at most [`MAX_VALUES`] values and [`MAX_OUTPUT`] bytes in all, so chained `..`
//! (exponential in client-go too) ends with an error naming the limit; an interrupt
//! (SIGINT/SIGTERM) is seen between steps.

use std::borrow::Cow;

use serde_json::Value;

/// The deepest nesting of `{range}` blocks, and of filters inside filters.
pub const MAX_DEPTH: usize = 100;
/// The values one evaluation may produce, over all its steps (each is a reference or a scalar).
pub const MAX_VALUES: u64 = 4_000_000;
/// The text one evaluation may print.
pub const MAX_OUTPUT: usize = 256 * 1024 * 1024;

type V<'a> = Cow<'a, Value>;

/// What an evaluation may still spend.
struct Budget {
    values: u64,
}

impl Budget {
    fn new() -> Budget {
        Budget { values: MAX_VALUES }
    }

    fn spend(&mut self, n: usize) -> Result<(), String> {
        match self.values.checked_sub(n as u64) {
            Some(left) => {
                // Between steps, the interrupt flag (runtime.rs sets it on SIGINT/SIGTERM).
                if left >> 16 != self.values >> 16 && crate::error::interrupt_requested() {
                    return Err("interrupted".into());
                }
                self.values = left;
                Ok(())
            }
            None => Err(format!(
                "the expression produces more than {MAX_VALUES} values (the limit on one JSONPath evaluation)"
            )),
        }
    }
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct JsonPath {
    nodes: Vec<Node>,
    raw: String,
}

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    /// One `{…}`: its steps are applied in order to the current value.
    Expr(Vec<Step>),
    /// `{range steps}` … `{end}`.
    Range(Vec<Step>, Vec<Node>),
}

#[derive(Debug, Clone)]
enum Step {
    Field(String),
    Wildcard,
    Recursive,
    Array([Option<i64>; 3], bool),
    Union(Vec<Vec<Step>>),
    Filter(Vec<Step>, String, Vec<Step>),
    Literal(Value),
}

impl JsonPath {
    /// Parses a template; errors read like kubectl's (`unterminated array`, …).
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let mut flat: Vec<Flat> = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find('{') {
                None => {
                    flat.push(Flat::Text(rest.to_string()));
                    break;
                }
                Some(i) => {
                    if i > 0 {
                        flat.push(Flat::Text(rest[..i].to_string()));
                    }
                    let at = text.len() - rest.len() + i;
                    let end = action_end(&rest[i..])
                        .ok_or_else(|| format!("unclosed action at byte {at}"))?;
                    let inner = &rest[i + 1..i + end];
                    flat.push(
                        parse_action(inner)
                            .map_err(|e| format!("{e} (in the action at byte {at})"))?,
                    );
                    rest = &rest[i + end + 1..];
                }
            }
        }
        let mut it = flat.into_iter();
        let nodes = nest(&mut it, false, 0)?;
        Ok(JsonPath {
            nodes,
            raw: text.to_string(),
        })
    }

    /// The template as given.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// What kubectl prints for `data`.
    pub fn execute(&self, data: &Value) -> Result<String, String> {
        let mut out = String::new();
        exec_nodes(&self.nodes, data, &mut out, &mut Budget::new())?;
        Ok(out)
    }

    /// Result groups (one per top-level action), as custom columns and `--sort-by` use them.
    pub fn find(&self, data: &Value) -> Result<Vec<Vec<Value>>, String> {
        let mut groups = Vec::new();
        find_nodes(&self.nodes, data, &mut groups, &mut Budget::new())?;
        Ok(groups)
    }
}

enum Flat {
    Text(String),
    Expr(Vec<Step>),
    Range(Vec<Step>),
    End,
}

/// Where the `}` closing the action at the start of `s` is (quotes may hold braces).
fn action_end(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '}' => return Some(i),
            _ => {}
        }
    }
    None
}

fn nest(
    it: &mut impl Iterator<Item = Flat>,
    in_range: bool,
    depth: usize,
) -> Result<Vec<Node>, String> {
    let mut nodes = Vec::new();
    while let Some(f) = it.next() {
        match f {
            Flat::Text(t) => nodes.push(Node::Text(t)),
            Flat::Expr(s) => nodes.push(Node::Expr(s)),
            Flat::Range(s) => {
                if depth >= MAX_DEPTH {
                    return Err(format!(
                        "{{range}} blocks nested more than {MAX_DEPTH} deep (the limit)"
                    ));
                }
                let body = nest(it, true, depth + 1)?;
                nodes.push(Node::Range(s, body));
            }
            Flat::End if in_range => return Ok(nodes),
            Flat::End => return Err("not in range, nothing to end".into()),
        }
    }
    // A range without `{end}` runs to the end of the template, as in kubectl.
    Ok(nodes)
}

fn parse_action(inner: &str) -> Result<Flat, String> {
    let t = inner.trim_start();
    if let Some(r) = t.strip_prefix("range")
        && (r.is_empty() || r.starts_with(char::is_whitespace) || r.starts_with(['.', '@', '$']))
    {
        return Ok(Flat::Range(parse_steps(r, 0)?));
    }
    if t.trim_end() == "end" {
        return Ok(Flat::End);
    }
    let steps = parse_steps(inner, 0)?;
    // A lone quoted string is text (`{"\n"}`).
    if let [Step::Literal(Value::String(s))] = steps.as_slice() {
        return Ok(Flat::Text(s.clone()));
    }
    Ok(Flat::Expr(steps))
}

fn is_terminator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}' | '(' | ')')
}

fn parse_steps(s: &str, depth: usize) -> Result<Vec<Step>, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "filters or subscripts nested more than {MAX_DEPTH} deep (the limit)"
        ));
    }
    let chars: Vec<char> = s.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '@' | '$' => i += 1,
            '"' | '\'' => {
                let (text, next) = quoted(&chars, i)?;
                steps.push(Step::Literal(Value::String(text)));
                i = next;
            }
            '.' => {
                if chars.get(i + 1) == Some(&'.') {
                    // `..name`: descend, then the second dot starts the field.
                    steps.push(Step::Recursive);
                    i += 1;
                    continue;
                }
                i += 1;
                let mut name = String::new();
                while i < chars.len() && !is_terminator(chars[i]) {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    name.push(chars[i]);
                    i += 1;
                }
                if name == "*" {
                    steps.push(Step::Wildcard);
                } else if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
            }
            '*' => {
                steps.push(Step::Wildcard);
                i += 1;
            }
            '[' => {
                if chars.get(i + 1) == Some(&'?') {
                    let (step, next) = filter(&chars, i, depth)?;
                    steps.push(step);
                    i = next;
                } else {
                    let close = (i..chars.len())
                        .find(|&j| chars[j] == ']')
                        .ok_or("unterminated array")?;
                    let text: String = chars[i + 1..close].iter().collect();
                    steps.extend(array(&text, depth)?);
                    i = close + 1;
                }
            }
            c if c.is_ascii_digit() || c == '-' => {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let v = if let Ok(n) = text.parse::<i64>() {
                    Value::from(n)
                } else {
                    let f: f64 = text
                        .parse()
                        .map_err(|_| format!("cannot parse number {text}"))?;
                    Value::from(f)
                };
                steps.push(Step::Literal(v));
            }
            _ => {
                let start = i;
                while i < chars.len() && chars[i].is_alphanumeric() {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                match word.as_str() {
                    "true" => steps.push(Step::Literal(Value::Bool(true))),
                    "false" => steps.push(Step::Literal(Value::Bool(false))),
                    "" => return Err(format!("unrecognized character in action: {c:?}")),
                    w => return Err(format!("unrecognized identifier {w}")),
                }
            }
        }
    }
    Ok(steps)
}

/// A quoted string starting at `chars[i]`, with Go's escapes (`\n`, `\t`, `\"`, `\\`).
fn quoted(chars: &[char], i: usize) -> Result<(String, usize), String> {
    let q = chars[i];
    let mut out = String::new();
    let mut j = i + 1;
    while j < chars.len() {
        let c = chars[j];
        if c == '\\' && j + 1 < chars.len() {
            j += 1;
            out.push(match chars[j] {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                other => other,
            });
        } else if c == q {
            return Ok((out, j + 1));
        } else {
            out.push(c);
        }
        j += 1;
    }
    Err("unterminated quoted string".into())
}

fn filter(chars: &[char], i: usize, depth: usize) -> Result<(Step, usize), String> {
    // `[?(` … `)]`, a `)` inside quotes does not close it.
    let start = i + 3;
    if chars.get(i + 2) != Some(&'(') {
        return Err("unterminated filter".into());
    }
    let mut quote: Option<char> = None;
    let mut j = start;
    loop {
        let c = *chars.get(j).ok_or("unterminated filter")?;
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, ')') => break,
            _ => {}
        }
        j += 1;
    }
    if chars.get(j + 1) != Some(&']') {
        return Err("unclosed array expect ]".into());
    }
    let text: String = chars[start..j].iter().collect();
    let (left, op, right) = split_operator(&text);
    let left = parse_steps(left, depth + 1)?;
    let right = parse_steps(right, depth + 1)?;
    Ok((Step::Filter(left, op.to_string(), right), j + 2))
}

fn split_operator(text: &str) -> (&str, &str, &str) {
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        if c == '"' || c == '\'' {
            quote = Some(c);
            continue;
        }
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if text[i..].starts_with(op) {
                return (&text[..i], op, &text[i + op.len()..]);
            }
        }
    }
    (text, "exists", "")
}

fn array(text: &str, depth: usize) -> Result<Vec<Step>, String> {
    let text = if text.trim() == "*" { ":" } else { text };
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > 1 {
        let mut union = Vec::new();
        for p in parts {
            union.push(array(p.trim(), depth + 1)?);
        }
        return Ok(vec![Step::Union(union)]);
    }
    let t = text.trim();
    if t.len() >= 2 && t.starts_with('\'') && t.ends_with('\'') {
        // kubectl re-parses `['a.b']` as `.a.b`.
        return parse_steps(&format!(".{}", &t[1..t.len() - 1]), depth + 1);
    }
    let pieces: Vec<&str> = t.split(':').collect();
    if pieces.len() > 3 || pieces.iter().any(|p| !is_int(p)) {
        return Err(format!("invalid array index {t}"));
    }
    let mut params = [None, None, None];
    for (k, p) in pieces.iter().enumerate() {
        if !p.is_empty() {
            params[k] = Some(p.parse::<i64>().map_err(|e| e.to_string())?);
        }
    }
    let single = pieces.len() == 1;
    if single && params[0].is_none() {
        return Err(format!("invalid array index {t}"));
    }
    Ok(vec![Step::Array(params, single)])
}

fn is_int(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    s.chars().all(|c| c.is_ascii_digit())
}

fn exec_nodes(
    nodes: &[Node],
    cur: &Value,
    out: &mut String,
    budget: &mut Budget,
) -> Result<(), String> {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Expr(steps) => {
                let results = eval(steps, vec![Cow::Borrowed(cur)], budget)?;
                print_results(&results, out);
            }
            Node::Range(steps, body) => {
                for v in eval(steps, vec![Cow::Borrowed(cur)], budget)? {
                    exec_nodes(body, &v, out, budget)?;
                }
            }
        }
        if out.len() > MAX_OUTPUT {
            return Err(format!(
                "the output passes {} MiB (the limit on one JSONPath evaluation)",
                MAX_OUTPUT >> 20
            ));
        }
    }
    Ok(())
}

fn find_nodes(
    nodes: &[Node],
    cur: &Value,
    groups: &mut Vec<Vec<Value>>,
    budget: &mut Budget,
) -> Result<(), String> {
    for n in nodes {
        match n {
            Node::Text(t) => groups.push(vec![Value::String(t.clone())]),
            Node::Expr(steps) => groups.push(
                eval(steps, vec![Cow::Borrowed(cur)], budget)?
                    .into_iter()
                    .map(Cow::into_owned)
                    .collect(),
            ),
            Node::Range(steps, body) => {
                for v in eval(steps, vec![Cow::Borrowed(cur)], budget)? {
                    find_nodes(body, &v, groups, budget)?;
                }
            }
        }
    }
    Ok(())
}

/// client-go's `PrintResults`: maps and lists as compact JSON, the rest as text, one space
/// between the results of one action.
fn print_results(results: &[V<'_>], out: &mut String) {
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&text(r));
    }
}

/// One result as `PrintResults` writes it.
pub fn text(v: &Value) -> String {
    match v {
        Value::Object(_) | Value::Array(_) => super::gojson::compact(v),
        Value::Null => "null".into(),
        other => super::gofmt::scalar(other),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map[string]interface {}",
        Value::Array(_) => "[]interface {}",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::Null => "<nil>",
    }
}

/// A value's children: references into the object, or (for a string's characters, and the
/// children of a value the expression made) new values.
fn children<'a>(v: &V<'a>) -> Vec<V<'a>> {
    match v {
        Cow::Borrowed(b) => match b {
            Value::Object(m) => m.values().map(Cow::Borrowed).collect(),
            Value::Array(a) => a.iter().map(Cow::Borrowed).collect(),
            other => owned_children(other),
        },
        Cow::Owned(o) => owned_children(o),
    }
}

fn owned_children<'a>(v: &Value) -> Vec<V<'a>> {
    match v {
        Value::Object(m) => m.values().cloned().map(Cow::Owned).collect(),
        Value::Array(a) => a.iter().cloned().map(Cow::Owned).collect(),
        Value::String(s) => s
            .chars()
            .map(|c| Cow::Owned(Value::from(c as u32)))
            .collect(),
        _ => Vec::new(),
    }
}

/// A child of `v` (by key or index), borrowed when `v` is.
fn child<'a>(v: &V<'a>, get: impl Fn(&Value) -> Option<&Value>) -> Option<V<'a>> {
    match v {
        Cow::Borrowed(b) => get(b).map(Cow::Borrowed),
        Cow::Owned(o) => get(o).cloned().map(Cow::Owned),
    }
}

fn eval<'a>(
    steps: &[Step],
    mut cur: Vec<V<'a>>,
    budget: &mut Budget,
) -> Result<Vec<V<'a>>, String> {
    for s in steps {
        cur = eval_step(s, cur, budget)?;
        budget.spend(cur.len())?;
    }
    Ok(cur)
}

fn eval_step<'a>(
    step: &Step,
    input: Vec<V<'a>>,
    budget: &mut Budget,
) -> Result<Vec<V<'a>>, String> {
    let mut out: Vec<V<'a>> = Vec::new();
    match step {
        Step::Literal(v) => return Ok(input.iter().map(|_| Cow::Owned(v.clone())).collect()),
        Step::Field(name) => {
            for v in &input {
                if let Some(x) = child(v, |v| v.as_object().and_then(|m| m.get(name))) {
                    out.push(x);
                }
            }
        }
        Step::Wildcard => {
            for v in &input {
                out.extend(children(v));
            }
        }
        Step::Recursive => {
            // An explicit stack, not recursion: the object's depth is the cluster's to choose.
            for v in &input {
                let mut stack = vec![v.clone()];
                while let Some(v) = stack.pop() {
                    let c = children(&v);
                    if c.is_empty() {
                        continue;
                    }
                    budget.spend(c.len())?;
                    out.push(v);
                    stack.extend(c.into_iter().rev());
                }
            }
        }
        Step::Union(parts) => {
            for p in parts {
                out.extend(eval(p, input.clone(), budget)?);
            }
        }
        Step::Array(params, single) => {
            for v in &input {
                if v.is_null() {
                    continue;
                }
                let Value::Array(a) = v.as_ref() else {
                    return Err(format!("{} is not array or slice", type_name(v)));
                };
                let len = a.len() as i64;
                let mut start = params[0].unwrap_or(0);
                if start < 0 {
                    start += len;
                }
                let mut end = if *single {
                    params[0].unwrap_or(0) + 1
                } else {
                    params[1].unwrap_or(len)
                };
                if end < 0 || (*single && end == 0) {
                    end += len;
                }
                if start == end {
                    continue;
                }
                if start >= len || start < 0 {
                    return Err(format!(
                        "array index out of bounds: index {start}, length {len}"
                    ));
                }
                if end > len || end < 0 {
                    return Err(format!(
                        "array index out of bounds: index {}, length {len}",
                        end - 1
                    ));
                }
                if start > end {
                    return Err(format!(
                        "starting index {start} is greater than ending index {end}"
                    ));
                }
                let step = match params[2] {
                    Some(s) if s <= 0 => return Err("step must be > 0".into()),
                    Some(s) => s as usize,
                    None => 1,
                };
                let picked = (start as usize..end as usize).step_by(step);
                out.extend(picked.filter_map(|i| child(v, |v| v.as_array()?.get(i))));
            }
        }
        Step::Filter(left, op, right) => {
            for v in &input {
                let Value::Array(a) = v.as_ref() else {
                    return Err(format!(
                        "{} is not array or slice and cannot be filtered",
                        super::gofmt::value(v)
                    ));
                };
                for i in 0..a.len() {
                    let Some(item) = child(v, |v| v.as_array()?.get(i)) else {
                        continue;
                    };
                    let lefts = eval(left, vec![item.clone()], budget)?;
                    if op == "exists" {
                        if !lefts.is_empty() {
                            out.push(item.clone());
                        }
                        continue;
                    }
                    let rights = eval(right, vec![item.clone()], budget)?;
                    if lefts.is_empty() || rights.is_empty() {
                        continue;
                    }
                    if lefts.len() > 1 || rights.len() > 1 {
                        return Err("can only compare one element at a time".into());
                    }
                    if compare(&lefts[0], op, &rights[0])? {
                        out.push(item.clone());
                    }
                }
            }
        }
    }
    Ok(out)
}

/// text/template's `eq`/`lt`… on basic kinds: numbers with numbers, strings with strings,
/// bools only for (in)equality; anything else is "incompatible types for comparison".
fn compare(l: &Value, op: &str, r: &Value) -> Result<bool, String> {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (l, r) {
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => a
                .as_f64()
                .zip(b.as_f64())
                .and_then(|(x, y)| x.partial_cmp(&y)),
        },
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) if op == "==" || op == "!=" => Some(a.cmp(b)),
        _ => None,
    };
    let Some(ord) = ord else {
        return Err("incompatible types for comparison".into());
    };
    Ok(match op {
        "==" => ord == Ordering::Equal,
        "!=" => ord != Ordering::Equal,
        "<" => ord == Ordering::Less,
        "<=" => ord != Ordering::Greater,
        ">" => ord == Ordering::Greater,
        ">=" => ord != Ordering::Less,
        _ => return Err(format!("unrecognized filter operator {op}")),
    })
}

/// kubectl's `RelaxedJSONPathExpression` (get/customcolumn.go): `a.b`, `.a.b`, `{a.b}` and
/// `{.a.b}` all mean `{.a.b}`. Its pattern, `^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`, takes braces in
/// pairs only: `{.a` and `.a}` are errors, as is `{}`.
pub fn relaxed(expr: &str) -> Result<String, String> {
    let e = expr.trim();
    if e.is_empty() {
        return Ok(String::new());
    }
    let unexpected = || {
        "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'".to_string()
    };
    let inner = match (e.strip_prefix('{'), e.ends_with('}')) {
        (Some(rest), true) => &rest[..rest.len() - 1],
        (None, false) => e,
        _ => return Err(unexpected()),
    };
    if inner.is_empty() || inner.contains(['{', '}']) {
        return Err(unexpected());
    }
    if inner.starts_with('.') {
        Ok(format!("{{{inner}}}"))
    } else {
        Ok(format!("{{.{inner}}}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(t: &str, v: &Value) -> String {
        JsonPath::parse(t).unwrap().execute(v).unwrap()
    }

    #[test]
    fn kubectl_cases() {
        let v = json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"team": "nlp", "app.kubernetes.io/name": "x"}},
             "status": {"conditions": [{"type": "Created"}, {"type": "Running"}]}, "n": 3, "f": 0.5, "b": true},
            {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Created"}]}, "n": 1}]});
        assert_eq!(run("{.items[*].metadata.name}", &v), "a b");
        assert_eq!(
            run("{.items[0].metadata.labels}", &v),
            r#"{"app.kubernetes.io/name":"x","team":"nlp"}"#
        );
        assert_eq!(
            run(r"{.items[0].metadata.labels.app\.kubernetes\.io/name}", &v),
            "x"
        );
        assert_eq!(
            run(
                r#"{range .items[*]}{.metadata.name}{"\t"}{.status.conditions[-1:].type}{"\n"}{end}"#,
                &v
            ),
            "a\tRunning\nb\tCreated\n"
        );
        assert_eq!(run(r#"{.items[?(@.metadata.name=="b")].n}"#, &v), "1");
        assert_eq!(run("{.items[?(@.n>2)].metadata.name}", &v), "a");
        assert_eq!(run("{.items[?(@.b)].metadata.name}", &v), "a");
        assert_eq!(run("{.items[0].f} {.items[0].b} {.nope}", &v), "0.5 true ");
        assert_eq!(run("kind is {.kind}", &v), "kind is List");
        assert_eq!(run("{..team}", &v), "nlp");
        assert_eq!(run("{.items[0,1].n}", &v), "3 1");
        assert_eq!(run("{.items[0]['n','f']}", &v), "3 0.5");
        assert_eq!(
            JsonPath::parse("{.items[5]}")
                .unwrap()
                .execute(&v)
                .unwrap_err(),
            "array index out of bounds: index 5, length 2"
        );
        assert!(JsonPath::parse("{.items[0}").is_err());
        assert!(JsonPath::parse("{end}").is_err());
        assert_eq!(relaxed("metadata.name").unwrap(), "{.metadata.name}");
        assert_eq!(relaxed("{.metadata.name}").unwrap(), "{.metadata.name}");
    }
}

#[cfg(test)]
mod relaxed_tests {
    use super::relaxed;

    /// Issue 40 item 9: an unclosed brace is kubectl's error, not a column.
    #[test]
    fn braces_come_in_pairs_as_kubectls_pattern_has_them() {
        for ok in [".a.b", "a.b", "{a.b}", "{.a.b}"] {
            assert_eq!(relaxed(ok).unwrap(), "{.a.b}", "{ok}");
        }
        for bad in ["{.x", ".x}", "{x", "{}", "{.a}}", "{{.a}"] {
            let e = relaxed(bad).unwrap_err();
            assert!(e.starts_with("unexpected path string"), "{bad}: {e}");
        }
    }
}
