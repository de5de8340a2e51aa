//! The import rules of ARCHITECTURE.md, enforced: every `crate::<module>` a file under `src/`
//! names (outside its tests) must be one its top-level module may import. A new arrow is a
//! line in `ALLOWED` and a sentence in ARCHITECTURE.md, or a piece moved down.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The bottom floor: they import only each other, as listed here.
/// `model` holds the units (names, quantities, durations) and `output` its redactor and log
/// layer, each as submodules.
const BOTTOM: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("error", &[]),
    ("input", &["error"]),
    ("output", &["error"]),
];

const BOTTOM_NAMES: &[&str] = &["model", "error", "input", "output"];

/// Above the bottom floor: what each module may import besides the bottom modules.
const ALLOWED: &[(&str, &[&str])] = &[
    // The MCP adapter runs command lines through `commands` (parse, exec) and nothing below.
    ("mcp", &["commands", "ops"]),
    (
        "commands",
        &[
            "ops",
            "pipeline",
            "diagnose",
            "placement",
            "print",
            "cluster",
            "gateway",
            "operator_pods",
        ],
    ),
    (
        "ops",
        &[
            "pipeline",
            "diagnose",
            "placement",
            "print",
            "cluster",
            "gateway",
            "operator_pods",
        ],
    ),
    // diagnose asks the placement model about Unschedulable pods and needed objects.
    (
        "diagnose",
        &["placement", "cluster", "gateway", "operator_pods"],
    ),
    ("placement", &["cluster", "gateway", "operator_pods"]),
    // The offline build prints nothing: its callers print the job (print::manifest).
    ("pipeline", &["cluster", "gateway", "operator_pods"]),
    // printers take the plain data of diagnose and placement; print::jobview reads the
    // operator's pods.
    (
        "print",
        &[
            "diagnose",
            "placement",
            "cluster",
            "gateway",
            "operator_pods",
        ],
    ),
    ("cluster", &["gateway"]),
    ("gateway", &[]),
    ("operator_pods", &[]),
];

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // A folder of tests (diagnose/tests/) is not the module's code.
            if path.file_name().is_some_and(|n| n != "tests") {
                rs_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code without its unit tests: a `*tests.rs` file is all tests; elsewhere the
/// tests start at `#[cfg(test)]` followed by a `mod`.
fn code_of(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    if name.ends_with("tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            // `mod x;` pulls a file of tests (skipped by name above); `mod x {` runs to the end.
            if lines
                .peek()
                .is_some_and(|next| next.trim_end().ends_with('{'))
            {
                break;
            }
            lines.next();
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The top-level modules a piece of code names: `crate::x` and `use crate::{x, y::z}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Only the first segment of each item: `{x, y::{a, b}}` names x and y.
            let mut depth = 0;
            let mut start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && (c.is_ascii_alphabetic() || c == '_') => {
                        out.insert(ident(&group[j..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let m = ident(rest);
            if !m.is_empty() {
                out.insert(m);
            }
        }
    }
    out
}

#[test]
fn imports_run_one_way_as_architecture_md_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(m, a)| {
            (
                *m,
                a.iter()
                    .copied()
                    .chain(BOTTOM_NAMES.iter().copied())
                    .collect(),
            )
        })
        .chain(
            BOTTOM
                .iter()
                .map(|(m, a)| (*m, a.iter().copied().collect())),
        )
        .collect();
    let mut files = Vec::new();
    rs_files(&root, &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if ["lib", "main"].contains(&module.as_str()) {
            continue;
        }
        let Some(may) = allowed.get(module.as_str()) else {
            problems.push(format!(
                "src/{}: module {module} has no row in tests/architecture.rs",
                rel.display()
            ));
            continue;
        };
        for named in named_modules(&code_of(file)) {
            if named != module && !may.contains(named.as_str()) {
                problems.push(format!(
                    "src/{}: {module} imports {named}, which ARCHITECTURE.md does not allow",
                    rel.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_scanner_reads_paths_and_groups() {
    let got = named_modules("use crate::{a, b::{c, d}, e::f};\nlet x = crate::g::h();");
    let want: BTreeSet<String> = ["a", "b", "e", "g"].iter().map(|s| s.to_string()).collect();
    assert_eq!(got, want);
}

/// The production code of every file under `src/`, by its path from `src/`.
fn production_code() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&root, &mut files);
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&root).unwrap().display().to_string();
            (rel, code_of(f))
        })
        .collect()
}

/// The one clock (issue 59): the command's `Deadline` and its slices (`Budget`) are the only
/// timers; a bound anywhere else is a slice of them, so one `--timeout` ends the command.
const TIME_MODULE: &str = "cluster/budget.rs";

/// What starts a timer of its own: a bound on a future, or an instant computed from now.
fn own_timers(code: &str) -> Vec<&'static str> {
    ["tokio::time::timeout", "timeout_at(", "Instant::now() +"]
        .into_iter()
        .filter(|t| code.contains(t))
        .collect()
}

#[test]
fn no_timer_outside_the_module_that_owns_time() {
    let problems: Vec<String> = production_code()
        .iter()
        .filter(|(rel, _)| rel != TIME_MODULE)
        .flat_map(|(rel, code)| {
            own_timers(code).into_iter().map(move |t| {
                format!("src/{rel}: `{t}`: bound it with the command's Deadline or a Budget ({TIME_MODULE})")
            })
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_timer_scan_finds_each_form() {
    let code = "let a = tokio::time::timeout(d, f);\nlet b = Instant::now() + d;";
    assert_eq!(
        own_timers(code),
        ["tokio::time::timeout", "Instant::now() +"]
    );
    assert!(own_timers("Budget::new(d).attempt(f)").is_empty());
}

/// Issue 59: no production file over 1,000 lines (a ported upstream table is a test file).
#[test]
fn no_production_file_is_over_a_thousand_lines() {
    let problems: Vec<String> = production_code()
        .iter()
        .filter(|(_, code)| code.lines().count() > 1000)
        .map(|(rel, code)| format!("src/{rel}: {} lines", code.lines().count()))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Issue 59: a kind is an arm of the Workload (`ops/workload/`), never a module of its own
/// beside a verb's core (`ops/jobset_submit.rs`, `ops/wait/jobset.rs` were such twins).
#[test]
fn no_module_in_ops_is_named_after_a_kind_outside_the_workload() {
    let kinds = ["jobset", "tfjob", "pytorchjob", "trainjob", "mpijob"];
    let problems: Vec<String> = production_code()
        .iter()
        .map(|(rel, _)| rel.clone())
        .filter(|rel| rel.starts_with("ops/") && !rel.starts_with("ops/workload/"))
        .filter(|rel| {
            let lower = rel.to_lowercase();
            kinds.iter().any(|k| lower.contains(k))
        })
        .map(|rel| format!("src/{rel}: a kind's code is an arm of ops/workload/"))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Issue 59: a job's name is read off the command line once, in `commands/` (or by `mcp/`, which
/// sits above it); everything below takes the parsed `Target` or name. `cluster/mod.rs` defines
/// the parsers.
#[test]
fn names_are_parsed_only_in_commands() {
    let parsers = ["parse_job_name(", "Target::parse("];
    let problems: Vec<String> = production_code()
        .iter()
        .filter(|(rel, _)| {
            !rel.starts_with("commands/") && !rel.starts_with("mcp/") && rel != "cluster/mod.rs"
        })
        .flat_map(|(rel, code)| {
            parsers.iter().filter(|p| code.contains(*p)).map(move |p| {
                format!("src/{rel}: `{p}…`: parse the name in commands/ and pass it down")
            })
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
