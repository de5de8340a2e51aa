//! `-o go-template=…` through the gtmpl crate, bounded (issue 40, docs/limits.md): gtmpl
//! recurses once per nested block, parenthesis and `{{template}}` call (its own call limit is
//! 100,000, far past any stack), its `printf` allocates any width or precision asked for and
//! panics on some (`%[0]d`), and it has no step budget. So, before gtmpl sees a template:
//!
//! - a scan of its actions refuses nesting past [`MAX_NESTING`] (blocks and parentheses) and
//!   any `{{template}}` cycle or call chain longer than [`MAX_CALL_CHAIN`], naming the byte;
//! - `printf` is replaced by one that checks every verb first (width and precision at most
//!   [`MAX_WIDTH`], `%[n]` with n ≥ 1) and `print`/`println`/`printf`/`urlquery` results are
//!   capped at [`MAX_STRING`] bytes;
//! - parsing and execution run on a worker thread with a [`STACK_SIZE`] stack, writing into a
//!   writer capped at [`MAX_OUTPUT`] bytes that stops at an interrupt or when the caller gave
//!   up; the caller waits at most [`TIME_LIMIT`] and polls the interrupt flag meanwhile.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use gtmpl_value::{FuncError, Value as G};

/// The deepest nesting of blocks (`if`, `with`, `range`, `define`, `block`) and of
/// parentheses inside one action.
pub const MAX_NESTING: usize = 100;
/// The longest chain of `{{template}}` calls (a cycle is refused whatever its length).
pub const MAX_CALL_CHAIN: usize = 20;
/// Width and precision in `printf` verbs (`%*d` included).
pub const MAX_WIDTH: i64 = 10_000;
/// The longest string `print`, `println`, `printf` or `urlquery` may return.
pub const MAX_STRING: usize = 16 * 1024 * 1024;
/// The text one execution may write.
pub const MAX_OUTPUT: usize = 256 * 1024 * 1024;
/// The worker thread's stack: room for [`MAX_NESTING`] × [`MAX_CALL_CHAIN`] levels of gtmpl's
/// recursion (measured: 2,000 levels use under 16 MiB).
pub const STACK_SIZE: usize = 256 * 1024 * 1024;
/// How long one execution may run.
pub const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Why a template was refused or stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The template is wrong or past a static limit (exit 2).
    Invalid(String),
    /// Executing it failed or passed a limit (exit 2 too: the template's doing).
    Exec(String),
    /// SIGINT/SIGTERM arrived.
    Interrupted,
}

/// Checks the template's shape ([`precheck`]) and parses it (on the worker thread).
pub fn compile(text: &str) -> Result<(), Failure> {
    precheck(text).map_err(Failure::Invalid)?;
    let owned = text.to_string();
    run_bounded(TIME_LIMIT, move |_| {
        template(&owned).map(|_| ()).map_err(Failure::Invalid)
    })
}

/// Executes the template on `data` within every limit; the text it wrote.
pub fn execute(text: &str, data: &serde_json::Value, limit: Duration) -> Result<String, Failure> {
    precheck(text).map_err(Failure::Invalid)?;
    let owned = text.to_string();
    let ctx = gtmpl::Context::from(super::to_gtmpl(data));
    run_bounded(limit, move |stop| {
        let t = template(&owned).map_err(Failure::Invalid)?;
        let mut w = Capped {
            buf: Vec::new(),
            stop,
        };
        match t.execute(&mut w, &ctx) {
            Ok(()) => Ok(String::from_utf8_lossy(&w.buf).into_owned()),
            Err(_) if crate::error::interrupt_requested() => Err(Failure::Interrupted),
            Err(e) => Err(Failure::Exec(e.to_string())),
        }
    })
}

fn template(text: &str) -> Result<gtmpl::Template, String> {
    let mut t = gtmpl::Template::default();
    t.add_func("base64decode", super::base64decode);
    t.add_func("printf", printf);
    t.add_func("print", print);
    t.add_func("println", println);
    t.add_func("urlquery", urlquery);
    t.parse(text).map_err(|e| e.to_string())?;
    Ok(t)
}

/// Runs `work` on a thread with a [`STACK_SIZE`] stack; waits at most `limit`, giving up
/// early on an interrupt. A thread given up on is told to stop (its writer fails) and left:
/// the command ends with the error.
fn run_bounded<T: Send + 'static>(
    limit: Duration,
    work: impl FnOnce(Arc<AtomicBool>) -> Result<T, Failure> + Send + 'static,
) -> Result<T, Failure> {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let flag = stop.clone();
    std::thread::Builder::new()
        .name("go-template".into())
        .stack_size(STACK_SIZE)
        .spawn(move || {
            let _ = tx.send(work(flag));
        })
        .map_err(|e| Failure::Exec(format!("starting the template thread: {e}")))?;
    let end = crate::cluster::budget::after(limit);
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(result) => return result,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Failure::Exec(
                    "the template thread ended without a result".into(),
                ));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if crate::error::interrupt_requested() {
            stop.store(true, Ordering::SeqCst);
            return Err(Failure::Interrupted);
        }
        if Instant::now() >= end {
            stop.store(true, Ordering::SeqCst);
            return Err(Failure::Exec(format!(
                "the template ran longer than {}s (the limit on one go-template execution)",
                limit.as_secs()
            )));
        }
    }
}

/// The worker's output: fails a write past [`MAX_OUTPUT`], on an interrupt or when told to stop.
struct Capped {
    buf: Vec<u8>,
    stop: Arc<AtomicBool>,
}

impl std::io::Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) || crate::error::interrupt_requested() {
            return Err(std::io::Error::other("stopped"));
        }
        if self.buf.len() + b.len() > MAX_OUTPUT {
            return Err(std::io::Error::other(format!(
                "the output passes {} MiB (the limit on one go-template execution)",
                MAX_OUTPUT >> 20
            )));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capped(name: &str, r: Result<G, FuncError>) -> Result<G, FuncError> {
    match r {
        Ok(G::String(s)) if s.len() > MAX_STRING => Err(FuncError::Generic(format!(
            "{name} returned more than {} MiB (the limit on one call)",
            MAX_STRING >> 20
        ))),
        other => other,
    }
}

fn print(args: &[G]) -> Result<G, FuncError> {
    capped("print", gtmpl::funcs::print(args))
}

fn println(args: &[G]) -> Result<G, FuncError> {
    capped("println", gtmpl::funcs::println(args))
}

fn urlquery(args: &[G]) -> Result<G, FuncError> {
    capped("urlquery", gtmpl::funcs::urlquery(args))
}

/// gtmpl's `printf`, after [`check_format`].
fn printf(args: &[G]) -> Result<G, FuncError> {
    if let Some(G::String(f)) = args.first() {
        check_format(f, &args[1..]).map_err(FuncError::Generic)?;
    }
    capped("printf", gtmpl::funcs::printf(args))
}

/// The verbs gtmpl's printf knows (printf.rs `TYPS`): a verb runs from `%` to the first of them.
const VERBS: &str = "vVtTbcdoqxXUeEfFgGsp";

/// Walks the verbs of `format` as gtmpl's `process_verb` does (flags, `[n]`, width or `*`,
/// `.` precision or `*`, `[n]`), refusing a width or precision past [`MAX_WIDTH`] and an
/// argument index of 0 (gtmpl subtracts one from it).
pub fn check_format(format: &str, args: &[G]) -> Result<(), String> {
    let mut index = 0usize;
    let mut it = format.char_indices().peekable();
    while let Some((start, c)) = it.next() {
        if c != '%' {
            continue;
        }
        if let Some(&(_, '%')) = it.peek() {
            it.next();
            continue;
        }
        let end = loop {
            match it.next() {
                Some((i, t)) if VERBS.contains(t) => break i,
                Some(_) => {}
                None => return Ok(()), // gtmpl's own error: the verb is not terminated
            }
        };
        let spec = &format[start + 1..end];
        verb(spec, args, &mut index).map_err(|e| format!("printf verb %{spec}…: {e}"))?;
    }
    Ok(())
}

fn verb(spec: &str, args: &[G], index: &mut usize) -> Result<(), String> {
    let s = spec.trim_start_matches(['#', '0', '+', '-', ' ']);
    let mut rest = s;
    let number = |r: &str| -> (usize, usize) {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        (digits, r[..digits].parse::<usize>().unwrap_or(usize::MAX))
    };
    let bracket = |r: &str| -> Result<Option<(usize, usize)>, String> {
        if !r.starts_with('[') {
            return Ok(None);
        }
        let Some(close) = r.find(']') else {
            return Ok(None);
        };
        match r[1..close].parse::<usize>() {
            Ok(0) => Err("argument index [0]: indexes start at 1".into()),
            Ok(n) => Ok(Some((n - 1, close + 1))),
            Err(_) => Ok(None),
        }
    };
    let star = |arg: usize, what: &str| -> Result<(), String> {
        if let Some(G::Number(n)) = args.get(arg)
            && let Some(v) = n.as_i64()
            && v.checked_abs().is_none_or(|a| a > MAX_WIDTH)
        {
            return Err(format!("{what} {v} from * is past {MAX_WIDTH} (the limit)"));
        }
        Ok(())
    };
    if !rest.is_empty() {
        // Go's fmt: the width, then after `.` the precision, each `[n]` then `*` (from an
        // argument) or digits.
        for what in ["width", "precision"] {
            if what == "precision" {
                match rest.strip_prefix('.') {
                    Some(r) if rest.len() > 1 => rest = r,
                    _ => break,
                }
            }
            let mut explicit = None;
            if let Some((i, len)) = bracket(rest)? {
                *index = i;
                explicit = Some(i);
                rest = &rest[len..];
            }
            if let Some(r) = rest.strip_prefix('*') {
                let arg = explicit.unwrap_or_else(|| {
                    *index += 1;
                    *index - 1
                });
                star(arg, what)?;
                rest = r;
            } else {
                let (digits, n) = number(rest);
                if digits > 0 && n > MAX_WIDTH as usize {
                    return Err(format!(
                        "{what} {} is past {MAX_WIDTH} (the limit)",
                        &rest[..digits]
                    ));
                }
                rest = &rest[digits..];
            }
        }
    }
    match bracket(rest)? {
        Some((i, _)) => *index = i,
        None => *index += 1,
    }
    Ok(())
}

/// The shape checks gtmpl cannot make without recursing: block and parenthesis nesting, and
/// the `{{template}}` call graph. Errors name the byte offset of the action.
pub fn precheck(text: &str) -> Result<(), String> {
    let mut depth = 0usize;
    // The template being defined (a stack: `define` inside `define` is an error in Go, but
    // blocks nest) and, per template, the templates it calls.
    let mut defining: Vec<Option<String>> = Vec::new();
    let mut calls: std::collections::BTreeMap<String, Vec<(String, usize)>> = Default::default();
    let mut pos = 0usize;
    while let Some(open) = text[pos..].find("{{") {
        let at = pos + open;
        let (body, end) =
            action(text, at + 2).ok_or_else(|| format!("unclosed action at byte {at}"))?;
        pos = end;
        let body = body.trim_start_matches('-').trim();
        if body.starts_with("/*") {
            continue;
        }
        let word = body
            .split(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap_or("");
        let current = defining
            .iter()
            .rev()
            .find_map(|d| d.clone())
            .unwrap_or_default();
        match word {
            "if" | "with" | "range" | "define" | "block" => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(format!(
                        "blocks nested more than {MAX_NESTING} deep at byte {at} (the limit)"
                    ));
                }
                let name = matches!(word, "define" | "block")
                    .then(|| first_string(body))
                    .flatten();
                if word == "block"
                    && let Some(n) = &name
                {
                    calls
                        .entry(current.clone())
                        .or_default()
                        .push((n.clone(), at));
                }
                defining.push(name);
            }
            "end" => {
                depth = depth.saturating_sub(1);
                defining.pop();
            }
            "template" => {
                if let Some(n) = first_string(body) {
                    calls.entry(current).or_default().push((n, at));
                }
            }
            _ => {}
        }
        let mut parens = 0usize;
        for c in strip_strings(body).chars() {
            match c {
                '(' => {
                    parens += 1;
                    if parens > MAX_NESTING {
                        return Err(format!(
                            "parentheses nested more than {MAX_NESTING} deep in the action at byte {at} (the limit)"
                        ));
                    }
                }
                ')' => parens = parens.saturating_sub(1),
                _ => {}
            }
        }
    }
    // The longest call chain from the top-level template (""), refusing cycles.
    fn chain(
        name: &str,
        calls: &std::collections::BTreeMap<String, Vec<(String, usize)>>,
        path: &mut Vec<String>,
    ) -> Result<usize, String> {
        let mut longest = 0;
        for (callee, at) in calls.get(name).into_iter().flatten() {
            if path.iter().any(|p| p == callee) {
                return Err(format!(
                    "template {callee:?} calls itself (through {}) at byte {at}: recursive templates are not run",
                    path.iter()
                        .filter(|p| !p.is_empty())
                        .map(|p| format!("{p:?}"))
                        .collect::<Vec<_>>()
                        .join(" → ")
                ));
            }
            if path.len() > MAX_CALL_CHAIN {
                return Err(format!(
                    "template calls chained more than {MAX_CALL_CHAIN} deep at byte {at} (the limit)"
                ));
            }
            path.push(callee.clone());
            longest = longest.max(1 + chain(callee, calls, path)?);
            path.pop();
        }
        Ok(longest)
    }
    for start in calls.keys() {
        chain(start, &calls, &mut vec![start.clone()])?;
    }
    Ok(())
}

/// The text of the action starting at `from` (after `{{`) and the offset after its `}}`;
/// strings, raw strings and characters may hold `}}`.
fn action(text: &str, from: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    let mut i = from;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
            }
            b'}' if b.get(i + 1) == Some(&b'}') => return Some((&text[from..i], i + 2)),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The action with its string literals emptied (their parentheses are text).
fn strip_strings(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in body.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q != '`' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if matches!(c, '"' | '`' | '\'') => quote = Some(c),
            None => out.push(c),
        }
    }
    out
}

/// The first string literal of an action (`template "name" .` → `name`).
fn first_string(body: &str) -> Option<String> {
    let start = body.find(['"', '`'])?;
    let q = body[start..].chars().next()?;
    let rest = &body[start + 1..];
    let end = rest.find(q)?;
    Some(rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(t: &str) -> Result<String, Failure> {
        execute(t, &json!({"a": 1, "items": [1, 2, 3]}), TIME_LIMIT)
    }

    #[test]
    fn printf_widths_and_precisions_past_the_cap_are_errors_not_crashes() {
        for t in [
            r#"{{printf "%0999999999d" 1}}"#,
            r#"{{printf "%.999999999f" 1.5}}"#,
            r#"{{printf "%-999999999v" 1}}"#,
            r#"{{printf "%*d" 999999999 1}}"#,
            r#"{{printf "%.*f" -999999999 1.5}}"#,
            r#"{{printf "%[0]d" 1}}"#,
            r#"{{printf "%*d" -9223372036854775808 1}}"#,
        ] {
            match run(t) {
                Err(Failure::Exec(e)) => assert!(e.contains("printf"), "{t}: {e}"),
                other => panic!("{t}: {other:?}"),
            }
        }
        assert_eq!(
            run(r#"{{printf "%5d|%-3s|%.2f" 7 "x" 1.5}}"#).unwrap(),
            "    7|x  |1.50"
        );
        assert_eq!(run(r#"{{printf "%*d" 4 7}}"#).unwrap(), "   7");
    }

    #[test]
    fn deep_nesting_and_recursion_are_refused_with_the_byte() {
        let deep = "{{with .}}".repeat(60_000) + &"{{end}}".repeat(60_000);
        let e = precheck(&deep).unwrap_err();
        assert!(e.contains("nested more than 100 deep at byte 1000"), "{e}");
        let parens = format!("{{{{{}1{}}}}}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(
            precheck(&parens)
                .unwrap_err()
                .contains("parentheses nested")
        );
        let me = r#"{{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}"#;
        assert!(precheck(me).unwrap_err().contains("calls itself"), "{me}");
        let pair = r#"{{define "a"}}{{template "b" .}}{{end}}{{define "b"}}{{template "a" .}}{{end}}{{template "a" .}}"#;
        assert!(precheck(pair).unwrap_err().contains("calls itself"));
        // Strings may hold braces and parentheses.
        assert_eq!(run(r#"{{"}}((("}}{{.a}}"#).unwrap(), "}}(((1");
        assert_eq!(
            run(r#"{{define "x"}}<{{.}}>{{end}}{{range .items}}{{template "x" .}}{{end}}"#)
                .unwrap(),
            "<1><2><3>"
        );
        // At the limit, gtmpl's recursion fits the worker's stack.
        let ok = "{{with .}}".repeat(100) + "{{.a}}" + &"{{end}}".repeat(100);
        assert_eq!(run(&ok).unwrap(), "1");
    }

    #[test]
    fn a_long_execution_stops_at_the_time_limit() {
        let items: Vec<i32> = (0..300).collect();
        let t = "{{range .a}}{{range $.a}}{{range $.a}}{{end}}{{end}}{{end}}";
        let e = execute(t, &json!({"a": items}), Duration::from_millis(300)).unwrap_err();
        assert!(
            matches!(&e, Failure::Exec(m) if m.contains("ran longer")),
            "{e:?}"
        );
    }
}
