//! What kube-apiserver answers when a Pod is created, for the simulated cluster's two pod-create
//! paths (the API and the simulated operator): the Priority and RuntimeClass admission plugins,
//! which depend on the cluster's own objects, then Pod validation as the scenario states it
//! ([`crate::refusals`]: its rules are a real kube-apiserver's, held to it in tests/real).

use serde_json::Value;

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// plugin/pkg/admission/priority/admission.go `admitPod` (a mutating admission plugin, so it
/// runs before validation): the priority is computed from the named PriorityClass, else the
/// global default class, else 0, and a pod that states another value is forbidden.
pub fn admit_priority(classes: &[Value], pod: &Value) -> Result<(), String> {
    let spec = &pod["spec"];
    let class = text(&spec["priorityClassName"]);
    // A named class must exist whether or not the pod states a priority (the two
    // system classes are built in).
    if !class.is_empty()
        && !["system-cluster-critical", "system-node-critical"].contains(&class)
        && !classes
            .iter()
            .any(|c| text(&c["metadata"]["name"]) == class)
    {
        return Err(format!("no PriorityClass with name {class} was found"));
    }
    let Some(given) = spec["priority"].as_i64() else {
        return Ok(());
    };
    let computed = if class.is_empty() {
        classes
            .iter()
            .filter(|c| c["globalDefault"].as_bool() == Some(true))
            .filter_map(|c| c["value"].as_i64())
            .min()
            .unwrap_or(0)
    } else {
        match classes
            .iter()
            .find(|c| text(&c["metadata"]["name"]) == class)
        {
            Some(c) => c["value"].as_i64().unwrap_or(0),
            None => return Err(format!("no PriorityClass with name {class} was found")),
        }
    };
    if given != computed {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {computed} from the given PriorityClass name"
        ));
    }
    Ok(())
}

/// plugin/pkg/admission/runtimeclass/admission.go, `Admit` then `Validate`: a pod naming a
/// RuntimeClass that does not exist is forbidden; a known class's overhead becomes the pod's
/// (`setOverhead`: a different one of the pod's own is forbidden) and its scheduling node
/// selector and tolerations are merged in (`setScheduling`: another value for the same key is
/// a conflict); a pod overhead without a class that defines one is forbidden
/// (`validateOverhead`). Quantities compare by value (`apiequality.Semantic`).
pub fn admit_runtime_class(classes: &[Value], pod: &mut Value) -> Result<(), String> {
    let class = text(&pod["spec"]["runtimeClassName"]).to_string();
    let own = pod["spec"]["overhead"]
        .as_object()
        .filter(|o| !o.is_empty())
        .cloned();
    const WITHOUT: &str =
        "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead";
    if class.is_empty() {
        return match own {
            Some(_) => Err(WITHOUT.into()),
            None => Ok(()),
        };
    }
    let Some(rc) = classes
        .iter()
        .find(|c| text(&c["metadata"]["name"]) == class)
    else {
        return Err(format!("pod rejected: RuntimeClass {class:?} not found"));
    };
    match rc.get("overhead").filter(|o| o.is_object()) {
        Some(o) => {
            let fixed = o["podFixed"].as_object().cloned().unwrap_or_default();
            let same = |a: &serde_json::Map<String, Value>, b: &serde_json::Map<String, Value>| {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        let milli = |v: &Value| {
                            crate::util::parse_quantity_milli(
                                &v.as_str()
                                    .map(String::from)
                                    .unwrap_or_else(|| v.to_string()),
                            )
                        };
                        b.get(k)
                            .is_some_and(|w| milli(v).is_some() && milli(v) == milli(w))
                    })
            };
            if own.as_ref().is_some_and(|own| !same(own, &fixed)) {
                return Err(
                    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
                        .into(),
                );
            }
            pod["spec"]["overhead"] = Value::Object(fixed);
        }
        None if own.is_some() => return Err(WITHOUT.into()),
        None => {}
    }
    if let Some(selector) = rc["scheduling"]["nodeSelector"].as_object() {
        for (k, v) in selector {
            let mine = &pod["spec"]["nodeSelector"][k];
            if !mine.is_null() && mine != v {
                return Err(format!(
                    "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {}; pod.spec.nodeSelector[{k}] = {}",
                    text(v),
                    text(mine)
                ));
            }
        }
        for (k, v) in selector {
            pod["spec"]["nodeSelector"][k] = v.clone();
        }
    }
    if let Some(extra) = rc["scheduling"]["tolerations"].as_array() {
        if !pod["spec"]["tolerations"].is_array() {
            pod["spec"]["tolerations"] = Value::Array(vec![]);
        }
        if let Some(ts) = pod["spec"]["tolerations"].as_array_mut() {
            for t in extra {
                if !ts.contains(t) {
                    ts.push(t.clone());
                }
            }
        }
    }
    Ok(())
}

/// Both pod-create paths (the API and the simulated operator) run this: Priority and
/// RuntimeClass admission, then validation. `Err` is the apiserver's error for the create.
pub fn check_create(
    sh: &crate::state::Shared,
    pod: &mut Value,
) -> Result<(), crate::status::ApiError> {
    let name = text(&pod["metadata"]["name"]).to_string();
    let (classes, _) = sh.store.list("priorityclasses", None);
    admit_priority(&classes, pod).map_err(|m| crate::admission::forbidden(&name, &m))?;
    let (runtimes, _) = sh.store.list("runtimeclasses", None);
    admit_runtime_class(&runtimes, pod).map_err(|m| crate::admission::forbidden(&name, &m))?;
    match crate::refusals::refused(sh, "pods", "Pod", "", &name) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
