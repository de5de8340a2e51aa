//! CPU and memory per role, and where each came from. `--cpu`/`--memory` are for every role
//! that does not set its own: a role's own flag (`--ps-cpu`), a `--set ps.cpu=…` or a values
//! file's `ps.cpu` wins over them, and they win over the template's defaults (the article's
//! `--cpu 4` used to leave the PS at ps-worker's 2 CPU without a word). [`report`] is the line
//! per role `render` and `submit` print on stderr.

use super::*;

/// `--ps-cpu 2` and the like: (role, `cpu`|`memory`, quantity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleResource {
    pub role: &'static str,
    pub key: &'static str,
    pub value: String,
}

/// The flag a role's own setting has (`--ps-cpu`).
pub fn flag_name(role: &str, key: &str) -> String {
    format!("--{role}-{key}")
}

/// Where `role.key` is set by the user for that role alone, strongest first: its own flag, a
/// `--set`, the last values file that has it.
fn own_source(
    role: &str,
    key: &str,
    docs: &[Document],
    set: &[SetArg],
    args: &RenderOptions,
) -> Option<String> {
    if args
        .pod
        .per_role
        .iter()
        .any(|r| r.role == role && r.key == key)
    {
        return Some(flag_name(role, key));
    }
    let is_it = |segs: &[Seg]| matches!(segs, [Seg::Key(r), Seg::Key(k)] if r == role && k == key);
    let by_set = set
        .iter()
        .rev()
        .find(|a| parse_pairs(a).is_ok_and(|pairs| pairs.iter().any(|(segs, _)| is_it(segs))));
    if let Some(a) = by_set {
        return Some(a.flag());
    }
    docs.iter()
        .rev()
        .find(|d| d.value.get(role).and_then(|r| r.get(key)).is_some())
        .map(|d| format!("values file {}", d.file))
}

/// Drops the generic `--cpu`/`--memory` from the flags overlay wherever the role sets its own
/// in a values file or `--set` (its own flag already replaced it in the overlay).
pub fn yield_to_own(flags: &mut Value, docs: &[Document], set: &[SetArg], args: &RenderOptions) {
    for (key, generic) in [("cpu", &args.cpu), ("memory", &args.memory)] {
        if generic.is_none() {
            continue;
        }
        for role in ROLES {
            let own_flag = args
                .pod
                .per_role
                .iter()
                .any(|r| r.role == role && r.key == key);
            if !own_flag
                && own_source(role, key, docs, set, args).is_some()
                && let Some(r) = flags.get_mut(role).and_then(Value::as_object_mut)
            {
                r.remove(key);
            }
        }
    }
}

/// One line per role that runs: `PS: cpu 2 (template default), memory 8Gi (--memory)`.
pub fn report(
    vals: &Values,
    defaults: &Value,
    docs: &[Document],
    set: &[SetArg],
    args: &RenderOptions,
) -> Vec<String> {
    let mut lines = Vec::new();
    for role in ROLES {
        if vals.replicas(role) <= 0 {
            continue;
        }
        let Some(r) = vals.role(role) else { continue };
        let mut parts = Vec::new();
        for (key, got, generic) in [
            ("cpu", &r.cpu, &args.cpu),
            ("memory", &r.memory, &args.memory),
        ] {
            let source = own_source(role, key, docs, set, args)
                .or_else(|| generic.as_ref().map(|_| format!("--{key}")))
                // A values file's flag-named `cpu:`/`memory:` (values::flagkeys).
                .or_else(|| {
                    docs.iter()
                        .rev()
                        .find(|d| d.value.get(key).is_some())
                        .map(|d| format!("values file {}", d.file))
                })
                .or_else(|| {
                    defaults
                        .get(role)
                        .and_then(|d| d.get(key))
                        .map(|_| "template default".to_string())
                });
            parts.push(match (got, source) {
                (Some(q), Some(s)) => format!("{key} {q} ({s})"),
                (Some(q), None) => format!("{key} {q}"),
                (None, _) => format!("{key} not set"),
            });
        }
        // Nothing set anywhere is the usual case, not news: no line for it.
        if r.cpu.is_none() && r.memory.is_none() {
            continue;
        }
        let name = crate::model::ReplicaType::from_any_case(role).map_or(role, |t| t.as_str());
        lines.push(format!("{name}: {}", parts.join(", ")));
    }
    lines
}
