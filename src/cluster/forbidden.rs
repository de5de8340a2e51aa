//! What an HTTP 403 from the API server means, told apart in one place: a validating webhook's
//! denial (the input is at fault, exit 2), the authorizer's refusal (RBAC: the caller may not),
//! or any other refusal (an admission plugin: quota, LimitRanger, PodSecurity). `explain`
//! and the pods' server dry run both ask here.

/// What an HTTP 403 from the API server means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forbidden {
    /// A validating admission webhook (the operator's, or a policy engine's) refused the object:
    /// the input is at fault, not the caller's permissions.
    AdmissionDenied {
        /// The webhook's configured name, e.g. `validator.tfjob.training-operator.kubeflow.org`.
        webhook: String,
        /// The webhook's message, one entry per field error when it listed several.
        errors: Vec<String>,
    },
    /// Anything else: the authorizer (RBAC) or an admission plugin refused the caller.
    Rbac,
}

/// Classifies a 403 by its Status message. kube-apiserver words every webhook refusal as
/// `admission webhook "<name>" denied the request: <message>`
/// (k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go `ToStatusErr`), and
/// controller-runtime sends the validator's error string as that message, which for the
/// training-operator is a `field.ErrorList` aggregate: one error, or `[e1, e2, ...]`.
pub fn classify_forbidden(message: &str) -> Forbidden {
    const OPEN: &str = "admission webhook \"";
    const DENIED: &str = "\" denied the request";
    let Some(start) = message.find(OPEN) else {
        return Forbidden::Rbac;
    };
    let rest = &message[start + OPEN.len()..];
    let Some(end) = rest.find(DENIED) else {
        return Forbidden::Rbac;
    };
    let webhook = rest[..end].to_string();
    let tail = &rest[end + DENIED.len()..];
    let body = tail.strip_prefix(": ").unwrap_or(tail.trim_start()).trim();
    Forbidden::AdmissionDenied {
        webhook,
        errors: split_aggregate(body),
    }
}

/// Splits a Go aggregate `[a: x, b: y]` into its errors. A ", " separates two errors only when
/// a field path and ": " follow it, so commas inside one message (lists of supported values)
/// stay put.
fn split_aggregate(body: &str) -> Vec<String> {
    if body.is_empty() {
        return vec!["(no explanation given)".to_string()];
    }
    let inner = match body.strip_prefix('[').and_then(|b| b.strip_suffix(']')) {
        Some(inner) => inner,
        None => return vec![body.to_string()],
    };
    let starts_field = |s: &str| {
        let path_len = s.find(": ").filter(|&i| i > 0).filter(|&i| {
            s[..i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-[]/".contains(c))
        });
        path_len.is_some()
    };
    let mut out = Vec::new();
    let mut current = String::new();
    let mut rest = inner;
    while let Some(i) = rest.find(", ") {
        let (head, tail) = (&rest[..i], &rest[i + 2..]);
        current.push_str(head);
        if starts_field(tail) {
            out.push(std::mem::take(&mut current));
        } else {
            current.push_str(", ");
        }
        rest = tail;
    }
    current.push_str(rest);
    out.push(current);
    out
}

/// Whether a 403's message is the authorizer's (RBAC) refusal: kube-apiserver words it
/// `User "u" cannot VERB resource "R" in API group …`
/// (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go `forbiddenMessage`);
/// admission plugins (quota, LimitRanger, PodSecurity, webhooks) word theirs otherwise.
pub fn by_authorizer(message: &str, verb: &str) -> bool {
    message.contains(&format!("cannot {verb} resource"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_is_rbac_unless_a_webhook_denied() {
        let rbac = "tfjobs.kubeflow.org is forbidden: User \"bob\" cannot create resource \"tfjobs\" in API group \"kubeflow.org\" in the namespace \"a\"";
        assert_eq!(classify_forbidden(rbac), Forbidden::Rbac);
        // A quota refusal is a 403 too, and not the input's fault in the webhook sense.
        assert_eq!(
            classify_forbidden("tfjobs \"x\" is forbidden: exceeded quota: q"),
            Forbidden::Rbac
        );
        let one = "admission webhook \"validator.tfjob.training-operator.kubeflow.org\" denied the request: spec.tfReplicaSpecs: Required value: must be required";
        assert_eq!(
            classify_forbidden(one),
            Forbidden::AdmissionDenied {
                webhook: "validator.tfjob.training-operator.kubeflow.org".into(),
                errors: vec!["spec.tfReplicaSpecs: Required value: must be required".into()],
            }
        );
        let many = "admission webhook \"validate.kyverno.svc-fail\" denied the request: [metadata.name: Invalid value: \"tf.job\": should match: a, b, spec.runPolicy.managedBy: Unsupported value: \"x\": supported values: \"kubeflow.org/training-operator\", \"kueue.x-k8s.io/multikueue\", spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must be specified]";
        let Forbidden::AdmissionDenied { webhook, errors } = classify_forbidden(many) else {
            panic!("not classified as a denial");
        };
        assert_eq!(webhook, "validate.kyverno.svc-fail");
        assert_eq!(
            errors,
            vec![
                "metadata.name: Invalid value: \"tf.job\": should match: a, b",
                "spec.runPolicy.managedBy: Unsupported value: \"x\": supported values: \"kubeflow.org/training-operator\", \"kueue.x-k8s.io/multikueue\"",
                "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must be specified",
            ]
        );
        // Some API servers put the resource first ("... is forbidden: admission webhook ...").
        let prefixed = format!("tfjobs.kubeflow.org \"x\" is forbidden: {one}");
        assert!(matches!(
            classify_forbidden(&prefixed),
            Forbidden::AdmissionDenied { .. }
        ));
        let e = crate::error::admission_denied(
            "validator.tfjob.training-operator.kubeflow.org",
            &errors,
        );
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        let msg = e.to_string();
        assert!(
            msg.contains("training-operator's validating webhook"),
            "{msg}"
        );
        assert_eq!(msg.matches("\n  - ").count(), 3, "{msg}");
        assert!(!msg.contains("Role"), "{msg}");
    }

    #[test]
    fn only_the_authorizers_words_are_rbac() {
        let rbac = "pods is forbidden: User \"bob\" cannot create resource \"pods\" in API group \"\" in the namespace \"a\"";
        assert!(by_authorizer(rbac, "create"));
        assert!(!by_authorizer(rbac, "delete"));
        for plugin in [
            "pods \"x\" is forbidden: exceeded quota: q, requested: cpu=4, used: cpu=0, limited: cpu=2",
            "pods \"x\" is forbidden: violates PodSecurity \"restricted:latest\": privileged",
            "pods \"x\" is forbidden: maximum cpu usage per Container is 2, but limit is 4",
        ] {
            assert!(!by_authorizer(plugin, "create"), "{plugin}");
        }
    }
}
