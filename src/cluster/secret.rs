//! Secrets as the cluster needs them: the model-gateway Secret (present, carrying a non-empty
//! value under its key, and the command that fixes it when not). Which Secrets a pod spec
//! cannot start without is `placement::refs::secret_references`, beside the pod's other
//! references. The gateway Secret's names and key rules live in [`crate::gateway`] (their one
//! owner) and are used from there.

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

use super::{Action, ConnectionOptions, Kube};
use crate::error::{Error, Result};
use crate::gateway::{BASE_URL_KEY, DEFAULT_SECRET_KEY};

/// The readiness of a Secret for a job, as `secret check` and `submit` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretState {
    Ready,
    MissingSecret,
    MissingKey { present: Vec<String> },
    EmptyValue,
}

/// Pure: does this Secret (if any) carry a non-empty value under `key`?
pub fn secret_state(secret: Option<&Secret>, key: &str) -> SecretState {
    let Some(secret) = secret else {
        return SecretState::MissingSecret;
    };
    let mut present: Vec<String> = secret
        .data
        .iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .collect();
    present.extend(secret.string_data.iter().flatten().map(|(k, _)| k.clone()));
    present.sort();
    present.dedup();
    let value = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|v| v.0.len())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(String::len)
        });
    match value {
        None => SecretState::MissingKey { present },
        Some(0) => SecretState::EmptyValue,
        Some(_) => SecretState::Ready,
    }
}

/// The command that fixes a missing Secret or key, with the user's connection flags.
pub fn create_command(name: &str, key: &str, namespace: &str, conn: &ConnectionOptions) -> String {
    let mut cmd = format!(
        "kubectl tfjob secret create {name} {}",
        conn.ns_flags(namespace)
    );
    if key != DEFAULT_SECRET_KEY {
        cmd.push_str(&format!(" --key {key}"));
    }
    cmd
}

/// Pure: the gateway base URL stored beside the key by `secret create --base-url`, if any.
/// Not a secret: `secret check` and `submit` print it.
pub fn stored_base_url(secret: &Secret) -> Option<String> {
    let from_data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(BASE_URL_KEY))
        .map(|v| String::from_utf8_lossy(&v.0).into_owned());
    from_data
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(BASE_URL_KEY).cloned())
        })
        .map(|url| url.trim().to_string())
        .filter(|url| !url.is_empty())
}

/// Checks the Secret and key exist, and returns the Secret; shared with `submit`'s readiness
/// checks and `secret check`.
pub async fn check_secret(kube: &Kube, namespace: &str, name: &str, key: &str) -> Result<Secret> {
    let secret = get_secret(kube, namespace, name).await?;
    if let Some(value) = secret
        .as_ref()
        .and_then(|s| s.data.as_ref())
        .and_then(|d| d.get(key))
    {
        // Read, so never printed from here on.
        crate::output::redact::register(&value.0);
    }
    let fix = create_command(name, key, namespace, &kube.hints);
    match secret_state(secret.as_ref(), key) {
        SecretState::Ready => Ok(secret.unwrap_or_default()),
        SecretState::MissingSecret => Err(Error::not_ready(
            format!(
                "Secret {namespace}/{name} does not exist; the job's pods would fail with CreateContainerConfigError"
            ),
            format!("Create it with: {fix}"),
        )),
        SecretState::MissingKey { present } => Err(Error::not_ready(
            format!(
                "Secret {namespace}/{name} has no key {key:?} (it has: {}); the job's pods would fail with CreateContainerConfigError",
                if present.is_empty() {
                    "no keys".to_string()
                } else {
                    present.join(", ")
                }
            ),
            format!("Add it with: {fix} --overwrite"),
        )),
        SecretState::EmptyValue => Err(Error::not_ready(
            format!("Secret {namespace}/{name} has an empty value under {key:?}"),
            format!("Store the key with: {fix} --overwrite"),
        )),
    }
}

async fn get_secret(kube: &Kube, namespace: &str, name: &str) -> Result<Option<Secret>> {
    let api: Api<Secret> = Api::namespaced(kube.client.clone(), namespace);
    let action = Action::new("get", "secrets", Some(namespace)).named(name);
    super::retry(kube, || api.get_opt(name))
        .await
        .map_err(|e| super::explain(e, &action, kube))
}

/// The Secret a container takes whole (`envFrom.secretRef`) must exist; any keys will do.
pub async fn require_secret(kube: &Kube, namespace: &str, name: &str) -> Result<Secret> {
    match get_secret(kube, namespace, name).await? {
        Some(secret) => Ok(secret),
        None => Err(Error::not_ready(
            format!(
                "Secret {namespace}/{name} does not exist; the job's containers take all its keys as environment variables (envFrom), so its pods would fail with CreateContainerConfigError"
            ),
            format!(
                "Create it (kubectl create secret generic {name} {} --from-env-file=FILE), or mark the envFrom entry optional: true.",
                kube.hints.ns_flags(namespace)
            ),
        )),
    }
}

/// Pure: the Secrets whose values reach a container's environment (`env[].valueFrom.secretKeyRef`
/// with its key, `envFrom[].secretRef` with all keys: `None`), optional ones included: an
/// optional Secret that exists is injected all the same.
pub fn env_secrets<'a>(
    specs: impl IntoIterator<Item = &'a k8s_openapi::api::core::v1::PodSpec>,
) -> std::collections::BTreeSet<(String, Option<String>)> {
    let mut out = std::collections::BTreeSet::new();
    for spec in specs {
        let containers = spec
            .init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter());
        for c in containers {
            for e in c.env.iter().flatten() {
                if let Some(r) = e
                    .value_from
                    .as_ref()
                    .and_then(|f| f.secret_key_ref.as_ref())
                {
                    out.insert((r.name.clone(), Some(r.key.clone())));
                }
            }
            for ef in c.env_from.iter().flatten() {
                if let Some(r) = &ef.secret_ref {
                    out.insert((r.name.clone(), None));
                }
            }
        }
    }
    out
}

/// Arms the one redactor with every Secret value the pods of a job can see, when the job is
/// read: from then on no byte this process prints (a pod's log, an exec's error, an event, a
/// server's echo) can show one, whichever verb prints it. A Secret that cannot be read is said
/// at `-v` (its values then cannot be recognised).
pub async fn arm_redactor<'a>(
    kube: &Kube,
    namespace: &str,
    specs: impl IntoIterator<Item = &'a k8s_openapi::api::core::v1::PodSpec>,
) {
    for why in register_env_secrets(kube, namespace, specs).await {
        tracing::info!("{why}");
    }
}

/// Reads the Secrets [`env_secrets`] names and registers their values with the redactor, so
/// a key a container printed reaches neither the terminal nor a saved file. Each Secret is read
/// once per process (a job read, then each save, ask again). Returns, for each Secret that
/// could not be read, why: its values then cannot be recognised in what is printed.
pub async fn register_env_secrets<'a>(
    kube: &Kube,
    namespace: &str,
    specs: impl IntoIterator<Item = &'a k8s_openapi::api::core::v1::PodSpec>,
) -> Vec<String> {
    // By server too: a test process talks to many clusters.
    type Key = (String, String, String, Option<String>);
    static READ: std::sync::Mutex<std::collections::BTreeSet<Key>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let read = || READ.lock().unwrap_or_else(|e| e.into_inner());
    let key_of = |name: &str, key: &Option<String>| -> Key {
        (
            kube.server.clone(),
            namespace.to_string(),
            name.to_string(),
            key.clone(),
        )
    };
    let mut problems = Vec::new();
    let api: Api<Secret> = Api::namespaced(kube.client.clone(), namespace);
    for (name, key) in env_secrets(specs) {
        if !read().insert(key_of(&name, &key)) {
            continue;
        }
        match super::retry(kube, || api.get_opt(&name)).await {
            // Absent: no value to hide (the pod cannot have started with it).
            Ok(None) => {}
            Ok(Some(secret)) => {
                for (k, v) in secret.data.iter().flatten() {
                    let wanted = match &key {
                        Some(key) => k == key,
                        None => k != BASE_URL_KEY,
                    };
                    if wanted {
                        crate::output::redact::register(&v.0);
                    }
                }
            }
            Err(e) => {
                read().remove(&key_of(&name, &key));
                problems.push(format!(
                    "Secret {namespace}/{name}: not read ({}), so its values are not scrubbed",
                    crate::error::chain(&e)
                ));
            }
        }
    }
    problems
}
