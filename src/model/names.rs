//! Name rules shared by every layer: Kubernetes object and key names (DNS-1123/1035 labels and
//! subdomains, qualified names, label values, env var names) as apimachinery validation.go
//! defines them, and [`closest`], the "did you mean" suggestion. A bottom module: it imports
//! nothing of the crate, so `cluster`, `gateway`, `values` and `validate` can all use it.

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let w = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (c, strsim::jaro_winkler(&w, &c.to_ascii_lowercase())))
        .filter(|(_, score)| *score >= 0.8)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// apimachinery validation.go `IsRelaxedEnvVarName`: any printable ASCII character but `=`.
/// ValidateEnv uses it when RelaxedEnvironmentVariableValidation is on, which it is, locked,
/// since 1.34 (GA; beta and on by default from 1.32), so 1.36 accepts `1VAR` and `my var`.
pub fn env_var_name(n: &str) -> Result<(), String> {
    if n.is_empty() {
        return Err("must not be empty".into());
    }
    if let Some(c) = n.chars().find(|c| !(' '..='~').contains(c) || *c == '=') {
        return Err(format!(
            "must consist only of printable ASCII characters other than '=', found {c:?}"
        ));
    }
    Ok(())
}

/// DNS-1035 label: what the webhook requires of a TFJob name.
pub fn dns1035(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > 63 {
        return Err(format!("must be at most 63 characters, is {}", s.len()));
    }
    // The character at fault first: "ÜBER" is wrong for its letters, not for how it starts.
    label_chars(s)?;
    match s.chars().next() {
        Some(c) if c.is_ascii_digit() => Err(format!(
            "must start with a lowercase letter, not a digit ({c:?})"
        )),
        Some('-') => Err("must start with a lowercase letter, not '-'".into()),
        _ => Ok(()),
    }
}

/// What is wrong with a character a DNS label may not hold, in words.
fn bad_char(c: char) -> String {
    let what = if c.is_uppercase() && c.is_ascii() {
        "an uppercase letter (names are lowercase)"
    } else if c.is_uppercase() {
        "an uppercase, non-ASCII letter (names are lowercase a-z)"
    } else if !c.is_ascii() {
        "a non-ASCII character (names use a-z, 0-9 and '-')"
    } else if c.is_whitespace() {
        "whitespace"
    } else {
        "not a letter, digit or '-'"
    };
    format!("{c:?} is {what}")
}

/// DNS-1123 label (namespaces).
pub fn dns1123_label(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 63 {
        return Err("must be 1 to 63 characters".into());
    }
    label_chars(s)?;
    if s.starts_with('-') {
        return Err("must start with a lowercase letter or digit, not '-'".into());
    }
    Ok(())
}

fn label_chars(s: &str) -> Result<(), String> {
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "may contain only lowercase letters a-z, digits and '-': {}",
            bad_char(c)
        ));
    }
    if s.ends_with('-') {
        return Err("must end with a letter or digit".into());
    }
    Ok(())
}

pub fn suggest_name(s: &str) -> String {
    let mut n: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while n.contains("--") {
        n = n.replace("--", "-");
    }
    let n = n.trim_matches('-');
    let n = if n.starts_with(|c: char| c.is_ascii_lowercase()) {
        n.to_string()
    } else {
        format!("tf-{n}")
    };
    n.chars()
        .take(40)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string()
}

/// DNS-1123 subdomain: dot-separated labels, at most 253 characters.
pub fn dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 253 {
        return Err("must be 1 to 253 characters".into());
    }
    for label in s.split('.') {
        let ok = !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err("must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit".into());
        }
    }
    Ok(())
}

/// Label/annotation key: optional DNS-1123 subdomain prefix and '/', then a name of at most
/// 63 characters made of alphanumerics, '-', '_', '.', starting and ending alphanumeric.
pub fn qualified_name(k: &str) -> Result<(), String> {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    if let Some(p) = prefix {
        if p.is_empty() || p.len() > 253 {
            return Err("the prefix before '/' must be 1 to 253 characters".into());
        }
        if dns1123_subdomain(p).is_err() {
            return Err(format!(
                "the prefix {p:?} must be a lowercase DNS subdomain"
            ));
        }
    }
    if name.is_empty() || name.len() > 63 {
        return Err("the name part must be 1 to 63 characters".into());
    }
    let alnum = |c: char| c.is_ascii_alphanumeric();
    if !name.starts_with(alnum) || !name.ends_with(alnum) {
        return Err("must start and end with a letter or digit".into());
    }
    if !name.chars().all(|c| alnum(c) || "-_.".contains(c)) {
        return Err("may contain only letters, digits, '-', '_' and '.'".into());
    }
    Ok(())
}

pub fn label_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    if v.len() > 63 {
        return Err(format!("at most 63 characters, is {}", v.len()));
    }
    let alnum = |c: char| c.is_ascii_alphanumeric();
    if !v.starts_with(alnum)
        || !v.ends_with(alnum)
        || !v.chars().all(|c| alnum(c) || "-_.".contains(c))
    {
        return Err(
            "must be letters, digits, '-', '_', '.', starting and ending with a letter or digit"
                .into(),
        );
    }
    Ok(())
}

/// The namespace an object goes to, for every verb that sends or checks one (one rule, one
/// wording): the one it names, else `current` (`-n`'s, or the kubeconfig's). Only a namespace
/// given with `-n` (`enforced`) binds: an object naming another is refused in kubectl's words
/// (cli-runtime `pkg/resource/visitor.go`, `RequireNamespace`), after where it came from.
pub fn object_namespace(
    written: Option<&str>,
    current: &str,
    enforced: bool,
    source: &str,
) -> Result<String, String> {
    match written.filter(|w| !w.is_empty()) {
        Some(w) if enforced && w != current => Err(format!(
            "{source}: the namespace from the provided object {w:?} does not match the \
             namespace {current:?}. You must pass '--namespace={w}' to perform this operation."
        )),
        Some(w) => Ok(w.to_string()),
        None => Ok(current.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::object_namespace as ns;

    #[test]
    fn an_objects_namespace_binds_only_against_the_flag() {
        assert_eq!(ns(None, "team", true, "f"), Ok("team".into()));
        assert_eq!(ns(Some(""), "team", true, "f"), Ok("team".into()));
        assert_eq!(ns(Some("team"), "team", true, "f"), Ok("team".into()));
        // The kubeconfig's namespace yields to the object's, as kubectl's does.
        assert_eq!(ns(Some("other"), "default", false, "f"), Ok("other".into()));
        assert_eq!(
            ns(Some("other"), "team", true, "job.yaml"),
            Err(
                "job.yaml: the namespace from the provided object \"other\" does not match \
                 the namespace \"team\". You must pass '--namespace=other' to perform this \
                 operation."
                    .into()
            )
        );
    }
}
