//! One wording for a TFJob that is not there, in every command: kubectl's
//! `tfjobs.kubeflow.org "NAME" not found` (the resource's plural, as the API server's Status
//! says it) with the namespace, and what helps: the namespaces where a job of that name does
//! exist, else the closest name in this one ("did you mean").

use std::time::Duration;

use kube::api::{Api, ListParams};

use super::Kube;
use crate::error::Error;
use crate::model::{self, TFJob};

/// How long the look for where the job is may take: it only decorates the error.
const LOOK: Duration = Duration::from_secs(3);

/// kubectl's words for the missing job (the first line of every command's error).
pub fn message(namespace: &str, name: &str) -> String {
    format!(
        "{}.{} \"{name}\" not found in namespace {namespace}",
        model::PLURAL,
        model::GROUP
    )
}

/// What to say next, from the TFJobs that do exist: `(namespace, name)` pairs.
pub fn hint(namespace: &str, name: &str, existing: &[(String, String)], flags: &str) -> String {
    let elsewhere: Vec<&str> = existing
        .iter()
        .filter(|(ns, n)| n == name && ns != namespace)
        .map(|(ns, _)| ns.as_str())
        .collect();
    if let [ns, ..] = elsewhere.as_slice() {
        let also = if elsewhere.len() > 1 {
            format!(" (and in {})", elsewhere[1..].join(", "))
        } else {
            String::new()
        };
        return format!("It exists in namespace {ns}{also}: add `-n {ns}`.");
    }
    let here = existing
        .iter()
        .filter(|(ns, _)| ns == namespace)
        .map(|(_, n)| n.as_str());
    match crate::model::names::closest(name, here) {
        Some(near) => {
            format!("Did you mean {near:?}? List the jobs with `kubectl get tfjobs {flags}`.")
        }
        None => format!("List the jobs with `kubectl get tfjobs {flags}`."),
    }
}

/// The error for TFJob `namespace/name` not found: [`message`], with [`hint`] from one short
/// metadata list of the TFJobs the user may read (every namespace, else this one).
pub async fn tfjob(kube: &Kube, namespace: &str, name: &str) -> Error {
    let existing = kube
        .deadline
        .within(LOOK, existing(kube, namespace))
        .await
        .unwrap_or_default();
    Error::NotReady {
        message: message(namespace, name),
        hint: Some(hint(
            namespace,
            name,
            &existing,
            &kube.hints.ns_flags(namespace),
        )),
    }
}

async fn existing(kube: &Kube, namespace: &str) -> Vec<(String, String)> {
    let lp = ListParams::default();
    let all: Api<TFJob> = Api::all(kube.client.clone());
    let listed = match all.list_metadata(&lp).await {
        Ok(l) => l,
        // No right to list every namespace: this one still gives "did you mean".
        Err(_) => {
            let here: Api<TFJob> = Api::namespaced(kube.client.clone(), namespace);
            match here.list_metadata(&lp).await {
                Ok(l) => l,
                Err(_) => return Vec::new(),
            }
        }
    };
    listed
        .items
        .into_iter()
        .map(|m| {
            (
                m.metadata.namespace.unwrap_or_default(),
                m.metadata.name.unwrap_or_default(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn says_where_it_is_else_the_closest_name() {
        assert_eq!(
            message("default", "x"),
            "tfjobs.kubeflow.org \"x\" not found in namespace default"
        );
        let e = jobs(&[("team-a", "mnist"), ("default", "resnet")]);
        assert_eq!(
            hint("default", "mnist", &e, "-n default"),
            "It exists in namespace team-a: add `-n team-a`."
        );
        assert!(hint("default", "resnt", &e, "-n default").starts_with("Did you mean \"resnet\"?"));
        assert_eq!(
            hint("default", "zzz", &e, "-n default"),
            "List the jobs with `kubectl get tfjobs -n default`."
        );
    }
}
