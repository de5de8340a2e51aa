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
use crate::manifest;
use crate::output::Output;
use crate::values::{self, Values};

/// The template used when `--template` is not given.
pub const DEFAULT_TEMPLATE: &str = "ps-worker";

/// Name under which the shared macros are importable.
pub const MACROS_NAME: &str = "tfjob.j2";
const MACROS: &str = include_str!("../templates/tfjob.j2");

/// (name, source) of every built-in, in the order `templates list` shows them.
const BUILTINS: [(&str, &str); 4] = [
    ("ps-worker", include_str!("../templates/ps-worker.yaml.j2")),
    (
        "chief-worker",
        include_str!("../templates/chief-worker.yaml.j2"),
    ),
    ("worker", include_str!("../templates/worker.yaml.j2")),
    ("evaluator", include_str!("../templates/evaluator.yaml.j2")),
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
        builtin: true,
    })
}

/// Loads `--template`: a built-in name or a file path.
pub fn load(spec: &str) -> Result<Template> {
    if is_path(spec) {
        let source = std::fs::read_to_string(spec)
            .map_err(|e| Error::Invalid(format!("template file {spec}: cannot read it: {e}")))?;
        let (description, defaults) = parse_header(&source, spec)?;
        return Ok(Template {
            name: spec.to_string(),
            file: spec.to_string(),
            source: Cow::Owned(source),
            description,
            defaults,
            builtin: false,
        });
    }
    builtin(spec).ok_or_else(|| unknown_template(spec))
}

fn unknown_template(name: &str) -> Error {
    let mut msg = format!("unknown template {name:?}");
    if let Some(c) = values::closest(name, builtin_names()) {
        msg.push_str(&format!("; did you mean {c:?}?"));
    }
    msg.push_str(&format!(
        "\nbuilt-in templates: {}\n(a path to your own template must contain '/' or end in .j2/.yaml, e.g. ./{name}.yaml.j2)",
        builtin_names().collect::<Vec<_>>().join(", ")
    ));
    Error::Invalid(msg)
}

/// Reads the `{#- description: … defaults: … -#}` header. A template without one is fine.
pub fn parse_header(src: &str, file: &str) -> Result<(String, Value)> {
    let empty = || Value::Object(Default::default());
    let trimmed = src.trim_start();
    let Some(rest) = trimmed.strip_prefix("{#") else {
        return Ok((String::new(), empty()));
    };
    let Some(end) = rest.find("#}") else {
        return Ok((String::new(), empty()));
    };
    let body = rest[..end].trim_start_matches('-').trim_end_matches('-');
    if !body.trim_start().starts_with("description:") && !body.trim_start().starts_with("defaults:")
    {
        return Ok((String::new(), empty()));
    }
    // Line numbers in header errors should match the file: the header starts on line 1.
    let doc = manifest::parse_one(body.trim_start(), file)
        .map_err(|e| Error::Invalid(format!("{file}: template header is not valid YAML: {e}")))?;
    let v = doc.map(|d| d.value).unwrap_or_else(empty);
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

/// Renders a template with the given values to YAML text.
pub fn render(t: &Template, values: &Values) -> Result<String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Output is YAML, never HTML.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.add_template(MACROS_NAME, MACROS)
        .map_err(|e| template_error(&e))?;
    env.add_template(&t.file, &t.source)
        .map_err(|e| template_error(&e))?;
    let tmpl = env.get_template(&t.file).map_err(|e| template_error(&e))?;
    // Values at the top level (`{{ name }}`, `{{ worker.replicas }}`) and as a whole (`values`)
    // for the macros.
    let mut ctx = values.to_context();
    let whole = ctx.clone();
    ctx.as_object_mut()
        .expect("values are a mapping")
        .insert("values".into(), whole);
    tmpl.render(minijinja::value::Value::from(minijinja::value::Serde(&ctx)))
        .map_err(|e| template_error(&e))
}

/// `file:line: template error: …`, with the innermost cause (an error inside an imported macro
/// names the macro file).
fn template_error(e: &minijinja::Error) -> Error {
    let mut msg = String::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut first = true;
    while let Some(err) = cur {
        if let Some(me) = err.downcast_ref::<minijinja::Error>() {
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
        cur = err.source();
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
            builtin: false,
        };
        let e = render(&t, &Values::default()).unwrap_err().to_string();
        assert!(e.starts_with("my.j2:2: template error"), "{e}");
    }
}
