//! Built-in and user job templates (minijinja, strict undefined), and `kubectl tfjob templates`.
//!
//! A template starts with a comment header holding its one-line description and its default
//! values, so the whole template is one self-describing file that `templates show` can print:
//!
//! ```text
//! {#- description: What it is for.
//! defaults:
//!   worker: {replicas: 2}
//! -#}
//! ```
//!
//! Built-ins share the macros in `templates/tfjob.j2`, which user templates may import too.

use std::borrow::Cow;

use minijinja::{Environment, UndefinedBehavior};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::output::Output;
use crate::pipeline::manifest;
use crate::pipeline::values::{self, Values};

/// The template used when `--template` is not given.
pub const DEFAULT_TEMPLATE: &str = "ps-worker";

/// Name under which the shared macros are importable.
pub const MACROS_NAME: &str = "tfjob.j2";
const MACROS: &str = include_str!("../../templates/tfjob.j2");

/// (name, source) of every built-in, in the order `templates list` shows them.
const BUILTINS: [(&str, &str); 4] = [
    (
        "ps-worker",
        include_str!("../../templates/ps-worker.yaml.j2"),
    ),
    (
        "chief-worker",
        include_str!("../../templates/chief-worker.yaml.j2"),
    ),
    ("worker", include_str!("../../templates/worker.yaml.j2")),
    (
        "evaluator",
        include_str!("../../templates/evaluator.yaml.j2"),
    ),
];

/// A loaded template.
#[derive(Debug, Clone)]
pub struct Template {
    /// Built-in name, or the path as given.
    pub name: String,
    /// What errors should name: `templates/ps-worker.yaml.j2` or the user's path.
    pub file: String,
    pub source: Cow<'static, str>,
    pub description: String,
    /// Default values from the header (a mapping; may be empty).
    pub defaults: Value,
    /// Values the template declares itself (header `values:`), beside the built-in keys.
    pub declared: Vec<values::Declared>,
    pub builtin: bool,
}

impl Template {
    /// "template ps-worker" or "template ./my.yaml.j2", for messages.
    pub fn label(&self) -> String {
        format!("template {}", self.name)
    }
}

/// Whether a `--template` value is a path rather than a built-in name.
pub fn is_path(spec: &str) -> bool {
    spec.contains('/')
        || spec.contains(std::path::MAIN_SEPARATOR)
        || spec.ends_with(".j2")
        || spec.ends_with(".yaml")
        || spec.ends_with(".yml")
}

/// Names of the built-ins.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(n, _)| *n)
}

/// A built-in by exact name.
pub fn builtin(name: &str) -> Option<Template> {
    let (n, src) = BUILTINS.iter().find(|(n, _)| *n == name)?;
    let file = format!("templates/{n}.yaml.j2");
    let (description, defaults) =
        parse_header(src, &file).expect("built-in template headers are tested");
    Some(Template {
        name: n.to_string(),
        file,
        source: Cow::Borrowed(src),
        description,
        defaults,
        declared: Vec::new(),
        builtin: true,
    })
}

/// Loads `--template`: a built-in name or a file path.
pub fn load(spec: &str) -> Result<Template> {
    if is_path(spec) {
        let (_, source) = crate::input::read_text(spec, crate::input::TEMPLATE)
            .map_err(|e| Error::Invalid(format!("template file {e}")))?;
        let header = header_value(&source, spec)?;
        let (description, defaults) = header_parts(&header, spec)?;
        let declared = declared_from(&header, spec)?;
        return Ok(Template {
            name: spec.to_string(),
            file: spec.to_string(),
            source: Cow::Owned(source),
            description,
            defaults,
            declared,
            builtin: false,
        });
    }
    builtin(spec).ok_or_else(|| unknown_template(spec))
}

fn unknown_template(name: &str) -> Error {
    let mut msg = format!("unknown template {name:?}");
    if let Some(c) = crate::model::names::closest(name, builtin_names()) {
        msg.push_str(&format!("; did you mean {c:?}?"));
    }
    msg.push_str(&format!(
        "\nbuilt-in templates: {}\n(a path to your own template must contain '/' or end in .j2/.yaml, e.g. ./{name}.yaml.j2)",
        builtin_names().collect::<Vec<_>>().join(", ")
    ));
    Error::Invalid(msg)
}

/// The header `{#- description: … defaults: … values: … -#}` as a value (an empty mapping when
/// the template has none, which is fine). Read once per template, by both readers below.
fn header_value(src: &str, file: &str) -> Result<Value> {
    let empty = || Value::Object(Default::default());
    let Some(rest) = src.trim_start().strip_prefix("{#") else {
        return Ok(empty());
    };
    let Some(end) = rest.find("#}") else {
        return Ok(empty());
    };
    let body = rest[..end].trim_start_matches('-').trim_end_matches('-');
    if !["description:", "defaults:", "values:"]
        .iter()
        .any(|k| body.trim_start().starts_with(k))
    {
        return Ok(empty());
    }
    // Line numbers in header errors should match the file: the header starts on line 1.
    let doc = manifest::parse_one(body.trim_start(), file)
        .map_err(|e| Error::Invalid(format!("{file}: template header is not valid YAML: {e}")))?;
    Ok(doc.map(|d| d.value).unwrap_or_else(empty))
}

/// Reads the header's description and defaults. A template without a header is fine.
pub fn parse_header(src: &str, file: &str) -> Result<(String, Value)> {
    header_parts(&header_value(src, file)?, file)
}

fn header_parts(v: &Value, file: &str) -> Result<(String, Value)> {
    let empty = || Value::Object(Default::default());
    let description = v
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut defaults = v.get("defaults").cloned().unwrap_or_else(empty);
    if !defaults.is_object() {
        return Err(Error::Invalid(format!(
            "{file}: template header: `defaults` must be a mapping of values"
        )));
    }
    let problems = values::check_shape(&mut defaults, false);
    if let Some(p) = problems.first() {
        return Err(Error::Invalid(format!(
            "{file}: template header defaults: {}: {}{}",
            p.path,
            p.message,
            p.hint
                .as_ref()
                .map(|h| format!(" ({h})"))
                .unwrap_or_default()
        )));
    }
    Ok((description, defaults))
}

/// Work budget of one render (minijinja fuel): one unit per instruction and one per ~64 bytes of
/// text or data the template creates. It bounds both time (a loop that never ends) and memory
/// (text that keeps doubling): about 400k steps or 25 MiB of created data. Memory is the tighter
/// side: some operators cost several times the text they touch (`s[::-1]` holds 4 bytes per
/// character), and the whole run must stay under 256 MB. The built-ins use a small fraction of
/// it (see `builtins_use_a_small_fraction_of_the_budget`).
pub const FUEL: u64 = 409_600;
/// Rendered output: the result is a manifest, so it shares the manifest input limit.
pub const MAX_OUTPUT_BYTES: usize = crate::input::MANIFEST.bytes;
/// Nesting of macro calls, loops and includes. minijinja's own cap is 500; real templates nest a
/// few levels, and a lower cap stops runaway recursion long before the stack is at risk.
pub const RECURSION_LIMIT: usize = 100;

/// Marker in filter errors raised by the output guards below, so they read as the output limit.
const OUTPUT_LIMIT_MARK: &str = "rendered output would exceed";

/// The environment every render uses: strict undefined, YAML (no auto-escape), the limits above,
/// and the filters whose result can be far larger than the fuel they are charged, sized first.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Output is YAML, never HTML.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(RECURSION_LIMIT);
    // minijinja 3's fuel charges the text a filter builds before it builds it, which bounds
    // `format` widths, `indent`, `split` and `lines` (measured: each stops within 0.02 s and
    // 31 MB). It does not see the copies below.
    // Filters whose result can dwarf their input: a list repeated by reference (`[s] * 60000`)
    // costs little, but joined or printed it is every copy. Sized before they build anything.
    env.add_filter("join", guarded_join);
    env.add_filter("string", guarded_string);
    env.add_filter("tojson", guarded_tojson);
    env.add_filter("pprint", guarded_pprint);
    // Summing strings or lists copies the partial sum once per item: quadratic work.
    env.add_filter("sum", guarded_sum);
    // A value printed straight into the output (`{{ [1] * 100000000 }}`) is sized before the
    // printer walks it: a failing write does not stop the walk through a lazy list.
    env.set_formatter(|out, state, value| {
        check_size(value)?;
        minijinja::escape_formatter(out, state, value)
    });
    env
}

/// Bytes a sum of strings or lists may copy in all, the same as the fuel's data budget.
const MAX_SUM_COPY: usize = (FUEL as usize).saturating_mul(64);

fn guarded_sum(
    state: &minijinja::State,
    values: minijinja::Value,
    attribute: Option<&str>,
    start: Option<minijinja::Value>,
    kwargs: minijinja::value::Kwargs,
) -> std::result::Result<minijinja::Value, minijinja::Error> {
    let attribute = match attribute {
        Some(a) => Some(a.to_string()),
        None => kwargs.get::<Option<String>>("attribute")?,
    };
    let start = match start {
        Some(s) => s,
        None => kwargs
            .get::<Option<minijinja::Value>>("start")?
            .unwrap_or(minijinja::Value::from(0)),
    };
    kwargs.assert_all_used()?;
    if !start.is_number() {
        let mut size = printed_size(&start, MAX_OUTPUT_BYTES);
        let mut copied = 0usize;
        if let Ok(items) = values.try_iter() {
            for item in items {
                let item = match &attribute {
                    Some(a) => item.get_attr(a).unwrap_or(minijinja::Value::UNDEFINED),
                    None => item,
                };
                size = size.saturating_add(printed_size(&item, MAX_OUTPUT_BYTES));
                copied = copied.saturating_add(size);
                if size > MAX_OUTPUT_BYTES || copied > MAX_SUM_COPY {
                    return Err(output_limit_error(size.max(MAX_OUTPUT_BYTES + 1)));
                }
            }
        }
    }
    minijinja::filters::sum(
        state,
        values,
        attribute.as_deref(),
        Some(start),
        minijinja::value::Kwargs::from_iter(std::iter::empty::<(&str, minijinja::Value)>()),
    )
}

/// Pure: a lower bound of the text `v` prints as, counting up to `budget` and stopping once
/// past it (so a list of millions of references costs at most `budget` steps). Every item
/// counts at least one byte (its separator), so empty items cannot hide a huge count.
fn printed_size(v: &minijinja::Value, budget: usize) -> usize {
    if let Some(s) = v.as_str() {
        return s.len();
    }
    if let Some(b) = v.as_bytes() {
        return b.len();
    }
    match v.kind() {
        minijinja::value::ValueKind::Seq
        | minijinja::value::ValueKind::Map
        | minijinja::value::ValueKind::Iterable => {
            let is_map = v.kind() == minijinja::value::ValueKind::Map;
            let mut total = 2usize;
            if let Ok(items) = v.try_iter() {
                for item in items {
                    let left = budget.saturating_sub(total);
                    total = total.saturating_add(1 + printed_size(&item, left));
                    if is_map && let Ok(value) = v.get_item(&item) {
                        total = total.saturating_add(printed_size(&value, left));
                    }
                    if total > budget {
                        break;
                    }
                }
            }
            total
        }
        _ => 8,
    }
}

/// Pure: [`printed_size`] of JSON indented by `width` per level, `depth` the level of `v`'s items.
fn indented_size(v: &minijinja::Value, budget: usize, width: usize, depth: usize) -> usize {
    if width == 0 {
        return printed_size(v, budget);
    }
    match v.kind() {
        minijinja::value::ValueKind::Seq
        | minijinja::value::ValueKind::Map
        | minijinja::value::ValueKind::Iterable => {
            let is_map = v.kind() == minijinja::value::ValueKind::Map;
            let pad = width.saturating_mul(depth);
            let mut total = 2usize;
            if let Ok(items) = v.try_iter() {
                for item in items {
                    let left = budget.saturating_sub(total);
                    total = total.saturating_add(2 + pad).saturating_add(indented_size(
                        &item,
                        left,
                        width,
                        depth + 1,
                    ));
                    if is_map && let Ok(value) = v.get_item(&item) {
                        total = total.saturating_add(indented_size(&value, left, width, depth + 1));
                    }
                    if total > budget {
                        break;
                    }
                }
            }
            total
        }
        _ => printed_size(v, budget),
    }
}

fn check_size(v: &minijinja::Value) -> std::result::Result<(), minijinja::Error> {
    let size = printed_size(v, MAX_OUTPUT_BYTES);
    if size > MAX_OUTPUT_BYTES {
        return Err(output_limit_error(size));
    }
    Ok(())
}

fn guarded_join(
    state: &mut minijinja::State,
    value: &minijinja::Value,
    joiner: Option<minijinja::value::StringInput<'_>>,
    attribute: Option<&str>,
    kwargs: minijinja::value::Kwargs,
) -> std::result::Result<minijinja::Value, minijinja::Error> {
    let sep = joiner.as_ref().map_or(0, |j| j.as_str().len());
    if value.as_str().is_none() && attribute.is_none() {
        let mut total = 0usize;
        if let Ok(items) = value.try_iter() {
            for item in items {
                total = total
                    .saturating_add(sep)
                    .saturating_add(printed_size(&item, MAX_OUTPUT_BYTES));
                if total > MAX_OUTPUT_BYTES {
                    return Err(output_limit_error(total));
                }
            }
        }
    }
    minijinja::filters::join(state, value, joiner, attribute, kwargs)
}

fn guarded_string(
    state: &minijinja::State,
    value: &minijinja::Value,
) -> std::result::Result<minijinja::Value, minijinja::Error> {
    check_size(value)?;
    minijinja::filters::string(state, value)
}

fn guarded_tojson(
    value: &minijinja::Value,
    indent: Option<minijinja::Value>,
    args: minijinja::value::Kwargs,
) -> std::result::Result<minijinja::Value, minijinja::Error> {
    // Indented, every item also costs its depth times the indent (`indent=2000000000` asks
    // for gigabytes from a three-item list).
    let width = indent
        .as_ref()
        .and_then(|i| i.as_usize())
        .unwrap_or_else(|| {
            args.peek::<Option<usize>>("indent")
                .ok()
                .flatten()
                .unwrap_or(0)
        });
    let size = indented_size(value, MAX_OUTPUT_BYTES, width, 1);
    if size > MAX_OUTPUT_BYTES {
        return Err(output_limit_error(size));
    }
    minijinja::filters::tojson(value, indent, args)
}

fn guarded_pprint(value: &minijinja::Value) -> std::result::Result<String, minijinja::Error> {
    check_size(value)?;
    Ok(minijinja::filters::pprint(value))
}

fn output_limit_error(requested: usize) -> minijinja::Error {
    minijinja::Error::new(
        minijinja::ErrorKind::InvalidOperation,
        format!(
            "{OUTPUT_LIMIT_MARK} the {} limit (this call alone asks for {})",
            crate::input::human(MAX_OUTPUT_BYTES),
            crate::input::human(requested)
        ),
    )
}

/// A writer that refuses to grow past [`MAX_OUTPUT_BYTES`], remembering that it did.
struct BoundedOutput {
    buf: Vec<u8>,
    overflowed: bool,
}

impl std::io::Write for BoundedOutput {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > MAX_OUTPUT_BYTES {
            self.overflowed = true;
            return Err(std::io::Error::other("output limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads the header's `values:` declarations: `KEY: {type: T, default: D, description: …}`, KEY
/// dotted (`data.pvc`) and not a built-in key, T one of [`values::DeclaredType::NAMES`].
pub fn parse_declared(src: &str, file: &str) -> Result<Vec<values::Declared>> {
    declared_from(&header_value(src, file)?, file)
}

fn declared_from(header: &Value, file: &str) -> Result<Vec<values::Declared>> {
    let Some(decl) = header.get("values").cloned() else {
        return Ok(Vec::new());
    };
    let bad = |m: String| Error::Invalid(format!("{file}: template header `values`: {m}"));
    let Value::Object(map) = decl else {
        return Err(bad("must be a mapping of KEY: {type: …, default: …}".into()));
    };
    let builtin = values::builtin_keys();
    let mut out = Vec::new();
    for (path, spec) in map {
        let segs: Vec<&str> = path.split('.').collect();
        if segs.iter().any(|s| s.is_empty()) || segs.len() > values::MAX_SET_DEPTH {
            return Err(bad(format!("{path:?} is not a dotted key like data.pvc")));
        }
        if builtin.iter().any(|b| b == segs[0]) {
            return Err(bad(format!(
                "{path:?} is a built-in key; declare only keys of your own (built-in: {})",
                builtin.join(", ")
            )));
        }
        let ty = spec.get("type").and_then(Value::as_str).unwrap_or("any");
        let kind = values::DeclaredType::parse(ty).ok_or_else(|| {
            bad(format!(
                "{path}: unknown type {ty:?}; use one of {}",
                values::DeclaredType::NAMES.join(", ")
            ))
        })?;
        let default = spec.get("default").cloned().unwrap_or(Value::Null);
        if !default.is_null() && !kind.accepts(&default) {
            return Err(bad(format!("{path}: the default is not a {ty}")));
        }
        let description = spec
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        out.push(values::Declared {
            path,
            kind,
            default,
            description,
        });
    }
    // A declared path inside another (`data` and `data.pvc`) would overwrite it.
    for a in &out {
        if let Some(b) = out
            .iter()
            .find(|b| b.path.starts_with(&format!("{}.", a.path)))
        {
            return Err(bad(format!(
                "{} and {} overlap; declare one of them",
                a.path, b.path
            )));
        }
    }
    Ok(out)
}

/// Renders a template with the given values to YAML text.
pub fn render(t: &Template, values: &Values) -> Result<String> {
    render_measured(t, values).map(|(text, _)| text)
}

/// Renders and also returns the fuel the render consumed (for the budget test and `-v`).
pub fn render_measured(t: &Template, values: &Values) -> Result<(String, u64)> {
    let mut env = environment();
    env.add_template(MACROS_NAME, MACROS)
        .map_err(|e| template_error(t, &e))?;
    env.add_template(&t.file, &t.source)
        .map_err(|e| template_error(t, &e))?;
    let tmpl = env
        .get_template(&t.file)
        .map_err(|e| template_error(t, &e))?;
    // Values at the top level (`{{ name }}`, `{{ worker.replicas }}`) and as a whole (`values`)
    // for the macros.
    let mut ctx = values.to_context();
    let whole = ctx.clone();
    ctx.as_object_mut()
        .expect("values are a mapping")
        .insert("values".into(), whole);
    let mut out = BoundedOutput {
        buf: Vec::new(),
        overflowed: false,
    };
    let result = tmpl.render_captured_to(
        minijinja::value::Value::from(minijinja::value::Serde(&ctx)),
        &mut out,
    );
    if out.overflowed {
        return Err(Error::Invalid(format!(
            "{}: the rendered output is larger than the {} limit for a manifest; a template must produce one TFJob",
            t.file,
            crate::input::human(MAX_OUTPUT_BYTES)
        )));
    }
    let captured = result.map_err(|e| template_error(t, &e))?;
    let used = captured
        .state()
        .fuel_levels()
        .map(|(used, _)| used)
        .unwrap_or(0);
    let text = String::from_utf8(out.buf)
        .map_err(|e| Error::Invalid(format!("{}: output is not UTF-8: {e}", t.file)))?;
    Ok((text, used))
}

/// `file:line: template error: …`, with the innermost cause (an error inside an imported macro
/// names the macro file).
fn template_error(t: &Template, e: &minijinja::Error) -> Error {
    // The limits first, as one clear line naming the template and the limit.
    let minijinja_errors =
        || crate::error::causes(e).filter_map(|c| c.downcast_ref::<minijinja::Error>());
    for me in minijinja_errors() {
        let at = me
            .line()
            .map(|l| format!("{}:{l}", me.name().unwrap_or(&t.file)))
            .unwrap_or_else(|| t.file.clone());
        let detail = me.detail().unwrap_or_default();
        if me.kind() == minijinja::ErrorKind::OutOfFuel {
            return Error::Invalid(format!(
                "{at}: {} stopped: it used up its work budget of {FUEL} fuel (one per step, one per ~64 bytes of text it builds: about {}k steps or {} of text); look for a loop that does not end or text that keeps growing",
                t.label(),
                FUEL / 1000,
                crate::input::human((FUEL as usize).saturating_mul(64))
            ));
        }
        if detail.contains(OUTPUT_LIMIT_MARK) {
            return Error::Invalid(format!("{at}: {}: {detail}", t.label()));
        }
        if detail.contains("recursion limit exceeded") {
            return Error::Invalid(format!(
                "{at}: {} stopped: macros, loops and includes nest deeper than the limit of {RECURSION_LIMIT} levels; look for a macro that calls itself without end",
                t.label()
            ));
        }
    }
    let mut msg = String::new();
    let mut first = true;
    for me in minijinja_errors() {
        if !first {
            msg.push_str("\n  caused by: ");
        }
        let loc = match (me.name(), me.line()) {
            (Some(n), Some(l)) => format!("{n}:{l}: "),
            (Some(n), None) => format!("{n}: "),
            _ => String::new(),
        };
        msg.push_str(&format!(
            "{loc}template error: {}{}",
            me.kind(),
            me.detail().map(|d| format!(": {d}")).unwrap_or_default()
        ));
        first = false;
    }
    Error::Invalid(msg)
}

/// What `templates` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatesAction {
    /// List the built-in templates (the default).
    List,
    /// Print a template's source (a built-in by name, or a file by path).
    Show { name: String },
}

/// `kubectl tfjob templates [list|show NAME]`.
pub fn run_templates(action: Option<&TemplatesAction>, out: &mut Output) -> Result<()> {
    let text = match action {
        None | Some(TemplatesAction::List) => list_text(),
        // The shared macros, for people writing their own templates.
        Some(TemplatesAction::Show { name }) if name == MACROS_NAME => MACROS.to_string(),
        Some(TemplatesAction::Show { name }) => {
            let t = if is_path(name) {
                load(name)?
            } else {
                builtin(name).ok_or_else(|| unknown_template(name))?
            };
            t.source.into_owned()
        }
    };
    out.data(&text)
}

fn list_text() -> String {
    let mut s = String::from("NAME          DESCRIPTION\n");
    for name in builtin_names() {
        let t = builtin(name).expect("listed");
        let marker = if name == DEFAULT_TEMPLATE {
            " (default)"
        } else {
            ""
        };
        s.push_str(&format!("{:<13} {}{}\n", name, t.description, marker));
    }
    s.push_str(&format!(
        "\nShow one with `kubectl tfjob templates show NAME`; your own templates can import the shared macros (`templates show {MACROS_NAME}`).\n"
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values_for(t: &Template) -> Values {
        let flags = serde_json::json!({"name": "job", "image": "img:1"});
        values::resolve(&t.defaults, &[], &[], flags).unwrap()
    }

    #[test]
    fn every_builtin_has_a_header_and_renders_yaml() {
        for name in builtin_names() {
            let t = builtin(name).unwrap();
            assert!(!t.description.is_empty(), "{name}");
            let text = render(&t, &values_for(&t)).unwrap();
            let doc = manifest::parse_one(&text, name).unwrap().unwrap();
            assert_eq!(doc.value["kind"], "TFJob", "{name}:\n{text}");
            let job: crate::model::TFJob = serde_json::from_value(doc.value).unwrap();
            assert!(!job.spec.tf_replica_specs.is_empty(), "{name}");
        }
    }

    #[test]
    fn names_and_paths() {
        assert!(is_path("./x.yaml.j2"));
        assert!(is_path("x.j2"));
        assert!(!is_path("ps-worker"));
        let e = load("chief-wroker").unwrap_err().to_string();
        assert!(e.contains("did you mean \"chief-worker\"?"), "{e}");
        assert!(
            e.contains("ps-worker, chief-worker, worker, evaluator"),
            "{e}"
        );
        let e = load("./missing.yaml.j2").unwrap_err().to_string();
        assert!(e.contains("./missing.yaml.j2"), "{e}");
    }

    #[test]
    fn template_errors_name_file_and_line() {
        let t = Template {
            name: "my.j2".into(),
            file: "my.j2".into(),
            source: Cow::Borrowed("a: 1\nb: {{ nosuch.thing }}\n"),
            description: String::new(),
            defaults: serde_json::json!({}),
            declared: Vec::new(),
            builtin: false,
        };
        let e = render(&t, &Values::default()).unwrap_err().to_string();
        assert!(e.starts_with("my.j2:2: template error"), "{e}");
    }

    fn user(src: &str) -> Template {
        Template {
            name: "./hostile.yaml.j2".into(),
            file: "./hostile.yaml.j2".into(),
            source: Cow::Owned(src.to_string()),
            description: String::new(),
            defaults: serde_json::json!({}),
            declared: Vec::new(),
            builtin: false,
        }
    }

    fn hostile(src: &str) -> String {
        let e = render(&user(src), &Values::default()).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        let msg = e.to_string();
        assert!(msg.contains("./hostile.yaml.j2"), "{msg}");
        msg
    }

    #[test]
    fn endless_loops_run_out_of_fuel() {
        let msg = hostile(
            "{% for a in range(100000) %}{% for b in range(100000) %}{{ a }}{% endfor %}{% endfor %}",
        );
        assert!(msg.contains("work budget of 409600 fuel"), "{msg}");
    }

    #[test]
    fn doubling_text_stops_at_the_budget_not_at_gigabytes() {
        // A macro that doubles its argument, applied 40 times.
        let src = format!(
            "{{% macro d(s) %}}{{{{ s }}}}{{{{ s }}}}{{% endmacro %}}{{{{ {}'xxxxxxxxxxxxxxxx'{} }}}}",
            "d(".repeat(40),
            ")".repeat(40)
        );
        let msg = hostile(&src);
        // The printer sizes each value before it writes: the output limit may speak first.
        assert!(
            msg.contains("25 MiB of text") || msg.contains(OUTPUT_LIMIT_MARK),
            "{msg}"
        );
    }

    /// minijinja's fuel charges the text these filters would build before they build it: no
    /// guard of ours stands in front of them (the e2e hostile run bounds their memory).
    #[test]
    fn huge_widths_and_splits_run_out_of_fuel_before_allocating() {
        for src in [
            "{{ '%2000000000s'|format('x') }}",
            "{{ ('a\\n' * 1000) | indent(1000000) }}",
            "{{ ('a\\n' * 1000) | indent(width=1000000) }}",
            "{{ ('x ' * 15000000)|split|length }}",
            "{{ ('x\\n' * 15000000)|lines|length }}",
        ] {
            let msg = hostile(src);
            assert!(msg.contains("work budget of 409600 fuel"), "{src}: {msg}");
        }
        // Ordinary uses still work.
        let ok = render(
            &user("{{ '%5s|%-3d'|format('ab', 7) }}\n{{ 'a\\nb'|indent(2) }}"),
            &Values::default(),
        )
        .unwrap();
        assert_eq!(ok, "   ab|7  \na\n  b");
    }

    #[test]
    fn output_over_the_limit_is_refused() {
        let msg = hostile("{% for i in range(5000) %}{{ 'x' * 1000 }}\n{% endfor %}");
        assert!(msg.contains("larger than the 3 MiB limit"), "{msg}");
    }

    #[test]
    fn runaway_recursion_is_stopped() {
        let msg = hostile("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}");
        assert!(
            msg.contains(&format!("limit of {RECURSION_LIMIT} levels")),
            "{msg}"
        );
    }

    #[test]
    fn oversized_template_files_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.yaml.j2");
        std::fs::write(&path, vec![b'#'; crate::input::TEMPLATE.bytes + 1]).unwrap();
        let e = load(path.to_str().unwrap()).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        assert!(
            e.to_string()
                .contains("too large: over the 1 MiB limit for a template"),
            "{e}"
        );
    }

    /// The budget must be generous for real templates: the built-ins, with every role on and
    /// many env vars and labels, use a small fraction of it.
    #[test]
    fn builtins_use_a_small_fraction_of_the_budget() {
        let mut env = serde_json::Map::new();
        let mut labels = serde_json::Map::new();
        for i in 0..50 {
            env.insert(format!("VAR_{i}"), format!("value-{i}").into());
            labels.insert(format!("label-{i}"), format!("v{i}").into());
        }
        let role = serde_json::json!({"replicas": 100, "cpu": "4", "memory": "8Gi", "gpus": 1});
        let flags = serde_json::json!({
            "name": "job", "image": "img:1", "env": env, "labels": labels,
            "ps": role, "worker": role, "chief": {"replicas": 1}, "evaluator": role,
        });
        let mut worst = 0;
        for name in builtin_names() {
            let t = builtin(name).unwrap();
            let v = values::resolve(&t.defaults, &[], &[], flags.clone()).unwrap();
            let (_, used) = render_measured(&t, &v).unwrap();
            eprintln!("{name}: {used} fuel of {FUEL}");
            assert!(used > 0, "fuel is measured");
            worst = worst.max(used);
        }
        assert!(
            worst * 50 < FUEL,
            "built-ins use {worst} of {FUEL}: less than 50x headroom"
        );
    }

    /// Issue 15.6: a user template declares its own keys; --set and values files accept them.
    #[test]
    fn user_templates_declare_their_own_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.yaml.j2");
        std::fs::write(
            &path,
            "{#- description: With data.\nvalues:\n  data.pvc: {type: string, default: datasets, description: the claim}\n  epochs: {type: integer, default: 3}\n-#}\npvc: {{ data.pvc }}\nepochs: {{ epochs }}\n",
        )
        .unwrap();
        let t = load(path.to_str().unwrap()).unwrap();
        assert_eq!(t.declared.len(), 2);
        assert_eq!(t.declared[0].description, "the claim");
        let r = |set: &[&str]| {
            let set: Vec<values::SetArg> = set
                .iter()
                .map(|s| values::SetArg::Typed(s.to_string()))
                .collect();
            values::resolve_with(&t.defaults, &t.declared, &[], &set, serde_json::json!({}))
        };
        assert_eq!(
            render(&t, &r(&[]).unwrap()).unwrap(),
            "pvc: datasets\nepochs: 3"
        );
        let v = r(&["data.pvc=foo", "epochs=10"]).unwrap();
        assert_eq!(render(&t, &v).unwrap(), "pvc: foo\nepochs: 10");
        // `--set data.pvc=123` is the string "123"; a wrong type for an integer is reported.
        assert!(r(&["data.pvc=123"]).is_ok());
        let e = r(&["epochs=many"]).unwrap_err().to_string();
        assert!(
            e.contains("epochs: expected integer (declared by the template)"),
            "{e}"
        );
        // Undeclared keys are still unknown.
        let e = r(&["data.other=1"]).unwrap_err().to_string();
        assert!(e.contains("unknown key `data`"), "{e}");
        // The built-in keys cannot be redeclared.
        let e = parse_declared("{#- values:\n  worker: {type: map}\n-#}", "t.j2").unwrap_err();
        assert!(e.to_string().contains("is a built-in key"), "{e}");
    }
}
