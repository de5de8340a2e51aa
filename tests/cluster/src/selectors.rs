//! Label and field selectors as the apiserver parses them.

use serde_json::Value;

#[derive(Debug, Clone)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector (`a=b,c!=d,e in (f,g),!h`).
#[derive(Debug, Clone, Default)]
pub struct LabelSelector(Vec<Req>);

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c)
            }
            ')' => {
                depth -= 1;
                cur.push(c)
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn set_values(s: &str) -> Result<Vec<String>, String> {
    let s = s.trim();
    let inner = s
        .strip_prefix('(')
        .and_then(|x| x.strip_suffix(')'))
        .ok_or_else(|| format!("found '{s}', expected: '('"))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

impl LabelSelector {
    /// Parses the `labelSelector` query value; errors carry a message for a 400.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            if let Some(k) = part.strip_prefix('!') {
                reqs.push(Req::NotExists(k.trim().to_string()));
            } else if let Some((k, v)) = part.split_once("!=") {
                reqs.push(Req::Ne(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = part.split_once("==") {
                reqs.push(Req::Eq(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = part.split_once('=') {
                reqs.push(Req::Eq(k.trim().into(), v.trim().into()));
            } else if let Some(idx) = part.find(" notin ") {
                reqs.push(Req::NotIn(
                    part[..idx].trim().into(),
                    set_values(&part[idx + 7..])?,
                ));
            } else if let Some(idx) = part.find(" in ") {
                reqs.push(Req::In(
                    part[..idx].trim().into(),
                    set_values(&part[idx + 4..])?,
                ));
            } else if part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            {
                reqs.push(Req::Exists(part));
            } else {
                return Err(format!("unable to parse requirement: {part}"));
            }
        }
        Ok(LabelSelector(reqs))
    }

    /// True when the labels of `obj` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        // Most lists carry no selector: every object matches, with no lookup.
        if self.0.is_empty() {
            return true;
        }
        let labels = &obj["metadata"]["labels"];
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v.as_str()),
            Req::Ne(k, v) => get(k) != Some(v.as_str()),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector: `field=value` / `field!=value` terms.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

/// Fields each resource supports in field selectors (others → 400 like the apiserver).
fn supported_field(resource: &str, field: &str) -> bool {
    if field == "metadata.name" || field == "metadata.namespace" {
        return true;
    }
    match resource {
        "pods" => matches!(
            field,
            "spec.nodeName"
                | "status.phase"
                | "spec.restartPolicy"
                | "spec.schedulerName"
                | "spec.serviceAccountName"
                | "status.podIP"
                | "status.nominatedNodeName"
                | "spec.hostNetwork"
        ),
        "events" => {
            field.starts_with("involvedObject.")
                || matches!(field, "reason" | "source" | "type" | "reportingComponent")
        }
        "secrets" => field == "type",
        "namespaces" => field == "status.phase",
        "nodes" => field == "spec.unschedulable",
        _ => false,
    }
}

impl FieldSelector {
    /// Parses `fieldSelector` for a resource.
    pub fn parse(resource: &str, kind_for_error: &str, s: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        for part in split_top(s) {
            let (k, neg, v) = if let Some((k, v)) = part.split_once("!=") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, false, v)
            } else {
                return Err(format!(
                    "invalid selector: '{part}'; can't understand '{part}'"
                ));
            };
            let k = k.trim();
            // events.k8s.io/v1 names the involved object `regarding`; same storage.
            let translated;
            let k = if resource == "events" && k.starts_with("regarding.") {
                translated = k.replacen("regarding.", "involvedObject.", 1);
                translated.as_str()
            } else {
                k
            };
            if !supported_field(resource, k) {
                return Err(format!("field label not supported: {k}"));
            }
            let _ = kind_for_error;
            terms.push((k.to_string(), neg, v.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    /// True when every term holds for `obj`.
    pub fn matches(&self, obj: &Value) -> bool {
        self.matches_by(|field, want| field_value(obj, field) == want)
    }

    /// [`FieldSelector::matches`] with each field's comparison made by `equals(field, value)`,
    /// so a caller that keeps the objects' field values (encoded.rs) need not walk the object.
    pub fn matches_by(&self, mut equals: impl FnMut(&str, &str) -> bool) -> bool {
        self.0.iter().all(|(k, neg, v)| equals(k, v) != *neg)
    }
}

/// The string a field selector compares for `field` (a dotted path) of `obj`: strings as they
/// are, booleans as `true`/`false`, an absent field as empty (the apiserver's fields.Set).
pub fn field_value(obj: &Value, field: &str) -> String {
    let mut cur = obj;
    for seg in field.split('.') {
        cur = &cur[seg];
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    #[test]
    fn label_ops() {
        let o = json!({"metadata": {"labels": {"a": "1", "b": "x"}}});
        for (s, want) in [
            ("a=1", true),
            ("a==1,b=x", true),
            ("a!=1", false),
            ("a in (1,2)", true),
            ("b notin (x)", false),
            ("c", false),
            ("!c", true),
            ("a", true),
        ] {
            assert_eq!(LabelSelector::parse(s).unwrap().matches(&o), want, "{s}");
        }
    }

    #[test]
    fn field_terms_compare_strings_bools_and_absent_fields() {
        let pod = json!({"metadata": {"name": "p", "labels": {}},
            "spec": {"nodeName": "n1", "hostNetwork": true}, "status": {"phase": "Running"}});
        let unbound =
            json!({"metadata": {"name": "q"}, "spec": {}, "status": {"phase": "Pending"}});
        for (sel, bound_matches, unbound_matches) in [
            ("spec.nodeName!=", true, false),
            ("spec.nodeName=", false, true),
            ("spec.nodeName=n1", true, false),
            ("status.phase!=Succeeded,status.phase!=Failed", true, true),
            ("spec.nodeName!=,status.phase!=Running", false, false),
            ("spec.hostNetwork=true", true, false),
            ("spec.hostNetwork!=true", false, true),
            ("metadata.name=q", false, true),
        ] {
            let f = FieldSelector::parse("pods", "Pod", sel).unwrap();
            assert_eq!(f.matches(&pod), bound_matches, "{sel}");
            assert_eq!(f.matches(&unbound), unbound_matches, "{sel}");
        }
        assert!(LabelSelector::parse("").unwrap().matches(&unbound));
    }
}
