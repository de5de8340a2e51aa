//! The TF_CONFIG training-operator v1.9.4 gives each pod (its layout is
//! [`crate::operator_pods`]'s, shared with the pod dry run), written once per replicatedJob with `$(VAR)`
//! references that the kubelet expands per pod: the task index is `$(JOB_COMPLETION_INDEX)`,
//! declared above TF_CONFIG as a fieldRef to the completion-index annotation, because the Job
//! controller appends its own JOB_COMPLETION_INDEX after the user's env, too late for an
//! earlier variable to see (kubernetes `pkg/controller/job/indexed_job_utils.go`
//! `addCompletionIndexEnvVariable`; `pkg/kubelet/kubelet_pods.go` `makeEnvironmentVariables`).
//!
//! Addresses are JobSet's pod DNS names, `<js>-<rjob>-0-<i>.<subdomain>.<ns>.svc:<port>`, where
//! the subdomain is the JobSet name (jobset `pkg/controllers/jobset_controller.go`
//! `GetSubdomain`) and the port the operator's (`GetPortFromTFJob`: `tfjob-port` of the
//! `tensorflow` container, else 2222). The operator's `CUSTOM_CLUSTER_DOMAIN` is a setting of
//! its own process, which no JobSet has: addresses end at `.svc`, as with the variable unset.

use crate::operator_pods;

/// The index variable the Job controller would add (and does not, once it is declared).
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
/// Declared only for a JobSet named by `generateName`: its name, from the label the JobSet
/// controller puts on every pod.
pub const NAME_VAR: &str = "JOBSET_NAME";
/// Declared only when the namespace is not known at export time: the pod's namespace.
pub const NAMESPACE_VAR: &str = "JOBSET_NAMESPACE";

/// A part of an address known now (a literal) or only in the pod (a variable above TF_CONFIG).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Literal(String),
    Var(&'static str),
}

impl Source {
    /// How it is written inside TF_CONFIG's value.
    pub fn text(&self) -> String {
        match self {
            Source::Literal(s) => s.clone(),
            Source::Var(v) => format!("$({v})"),
        }
    }
}

/// What every address is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addressing {
    pub jobset: Source,
    pub namespace: Source,
}

/// One replica type as TF_CONFIG lists it (lowercase type, replicas, port).
pub use crate::operator_pods::ClusterMember as Replica;

/// Pod `index` (a number, or `$(JOB_COMPLETION_INDEX)`) of `rjob`, as TF_CONFIG addresses it.
pub fn address(a: &Addressing, rjob: &str, index: &str, port: i64) -> String {
    let js = a.jobset.text();
    format!(
        "{js}-{rjob}-0-{index}.{js}.{}.svc:{port}",
        a.namespace.text()
    )
}

/// The `"cluster"` object, in the operator's layout, with JobSet addresses.
pub fn cluster_json(a: &Addressing, types: &[Replica]) -> String {
    operator_pods::cluster_json(types, |rjob, i, port| address(a, rjob, i, port))
}

/// The normal form for a pod of type `own`; the index is left to the kubelet.
pub fn tf_config(a: &Addressing, types: &[Replica], own: &str) -> String {
    operator_pods::dense_tf_config(&cluster_json(a, types), own, &format!("$({INDEX_VAR})"))
}

/// The sparse form of `enableDynamicWorker` ([`operator_pods::sparse_tf_config`]), the
/// index left to the kubelet.
pub fn sparse_tf_config(a: &Addressing, types: &[Replica], own: &str) -> String {
    operator_pods::sparse_tf_config(types, own, &format!("$({INDEX_VAR})"), |rjob, i, port| {
        address(a, rjob, i, port)
    })
}

/// What the kubelet does to an env value (kubernetes `third_party/forked/golang/expansion`
/// `Expand` with `MappingFuncFor`): `$(NAME)` becomes the value of a variable declared earlier
/// (`lookup`), or stays as written when there is none; `$$` is a literal `$`; any other `$` and
/// an unclosed `$(` are kept. Used to check what a pod will see.
pub fn expand(input: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let b = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < b.len() {
        if b[cursor] == b'$' && cursor + 1 < b.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance = match rest.as_bytes()[0] {
                b'$' => {
                    out.push('$');
                    1
                }
                b'(' => match rest.find(')') {
                    Some(close) => {
                        let name = &rest[1..close];
                        match lookup(name) {
                            Some(v) => out.push_str(&v),
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                        close + 1
                    }
                    None => {
                        out.push_str("$(");
                        1
                    }
                },
                _ => {
                    // The operator and the next character are kept as they are.
                    let ch = rest.chars().next().expect("not empty");
                    out.push('$');
                    out.push(ch);
                    ch.len_utf8()
                }
            };
            cursor += advance + 1;
            checkpoint = cursor;
        } else {
            cursor += 1;
        }
    }
    out.push_str(&input[checkpoint.min(input.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal() -> Addressing {
        Addressing {
            jobset: Source::Literal("tf-dist-train".into()),
            namespace: Source::Literal("default".into()),
        }
    }

    fn article() -> Vec<Replica> {
        vec![
            Replica {
                lower: "ps".into(),
                replicas: 1,
                port: 2222,
            },
            Replica {
                lower: "worker".into(),
                replicas: 3,
                port: 2222,
            },
        ]
    }

    #[test]
    fn the_article_worker_sees_the_operators_string_with_jobset_hosts() {
        let v = tf_config(&literal(), &article(), "worker");
        let seen = expand(&v, |n| (n == INDEX_VAR).then(|| "1".into()));
        assert_eq!(
            seen,
            "{\"cluster\":{\"ps\":[\"tf-dist-train-ps-0-0.tf-dist-train.default.svc:2222\"],\"worker\":[\"tf-dist-train-worker-0-0.tf-dist-train.default.svc:2222\",\"tf-dist-train-worker-0-1.tf-dist-train.default.svc:2222\",\"tf-dist-train-worker-0-2.tf-dist-train.default.svc:2222\"]},\"task\":{\"type\":\"worker\",\"index\":1},\"environment\":\"cloud\"}"
        );
    }

    #[test]
    fn variables_stand_in_for_a_name_or_namespace_not_known_yet() {
        let a = Addressing {
            jobset: Source::Var(NAME_VAR),
            namespace: Source::Var(NAMESPACE_VAR),
        };
        assert_eq!(
            address(&a, "ps", "0", 2222),
            "$(JOBSET_NAME)-ps-0-0.$(JOBSET_NAME).$(JOBSET_NAMESPACE).svc:2222"
        );
    }

    #[test]
    fn sparse_form_lists_the_worker_itself_and_every_ps() {
        let v = sparse_tf_config(&literal(), &article(), "worker");
        let seen = expand(&v, |n| (n == INDEX_VAR).then(|| "2".into()));
        let j: serde_json::Value = serde_json::from_str(&seen).unwrap();
        assert_eq!(
            j["cluster"]["worker"]["2"],
            "tf-dist-train-worker-0-2.tf-dist-train.default.svc:2222"
        );
        assert_eq!(j["cluster"]["ps"].as_array().unwrap().len(), 1);
        assert_eq!(j["task"]["index"], 2);
        assert!(j.get("environment").is_none());
        let ps = expand(&sparse_tf_config(&literal(), &article(), "ps"), |_| {
            Some("0".into())
        });
        assert_eq!(
            ps,
            "{\"cluster\":{\"worker\":{},\"ps\":[\"tf-dist-train-ps-0-0.tf-dist-train.default.svc:2222\"]},\"task\":{\"type\":\"ps\",\"index\":0}}"
        );
    }

    #[test]
    fn expansion_follows_the_kubelets_rules() {
        let env = |n: &str| match n {
            "A" => Some("x".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        assert_eq!(expand("$(A)-$(A)", env), "x-x");
        assert_eq!(expand("$(UNDEFINED)", env), "$(UNDEFINED)");
        assert_eq!(expand("$$(A)", env), "$(A)");
        assert_eq!(expand("$$$(A)", env), "$x");
        assert_eq!(expand("a$b$", env), "a$b$");
        assert_eq!(expand("$(A", env), "$(A");
        assert_eq!(expand("[$(EMPTY)]", env), "[]");
    }
}
