//! `secret create` / `secret check`: the gateway API key in a Secret, without leaking it.
//!
//! The key is read into a [`SecretString`] (zeroed on drop, redacted in Debug) from a hidden
//! prompt, stdin, an env var or a file, and leaves the process only inside the Secret's `data`
//! (and, with `--verify`, the Authorization header to the gateway). It is never put in argv
//! (except `--from-literal`, which warns), messages, logs, temp files or annotations. Create is
//! idempotent: same content → "unchanged"; different content needs `--overwrite`.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use secrecy::{ExposeSecret, SecretString};

use super::DryRun;
use crate::cluster::secret::{BASE_URL_KEY, check_secret};
use crate::cluster::{self, Action, ConnectionOptions, Kube};
use crate::error::{Error, Result};
use crate::gateway::DEFAULT_BASE_URL;
use crate::output::{ManifestFormat, Output};
use crate::probe;

/// Label that marks Secrets this tool wrote.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kubectl-tfjob");

/// What `secret create` stores and how (the flags, clap-free).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretCreateOptions {
    /// Secret name.
    pub name: String,

    /// Key inside the Secret.
    pub key: String,

    /// Gateway base URL, stored beside the key under `base-url`.
    pub base_url: Option<String>,

    /// Read the key from stdin (one line; the trailing newline is stripped).
    pub from_stdin: bool,

    /// Read the key from this environment variable.
    pub from_env: Option<String>,

    /// Read the key from a file.
    pub from_file: Option<PathBuf>,

    /// The key itself. Discouraged: it lands in shell history and `ps`.
    pub from_literal: Option<String>,

    /// Replace an existing Secret whose content differs.
    pub overwrite: bool,

    /// Call GET {base-url}/v1/models with the key before storing it.
    pub verify: bool,

    /// Print what would be stored (data masked) instead of storing it.
    pub dry_run: Option<DryRun>,

    /// Output format with --dry-run.
    pub output: Option<ManifestFormat>,
}

/// What `secret check` looks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretCheckOptions {
    /// Secret name.
    pub name: String,

    /// Key inside the Secret.
    pub key: String,
}

// ---------------------------------------------------------------------------------------------
// Reading the key

/// Where the key came from, as chosen by the flags and the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Prompt,
    Stdin,
    Env(String),
    File(std::path::PathBuf),
    Literal,
}

/// Pure: picks the source. With no flag, a terminal on stdin means a hidden prompt; anything
/// else is refused rather than silently reading a pipe the user may not have meant.
pub fn choose_source(args: &SecretCreateOptions, stdin_is_tty: bool) -> Result<KeySource> {
    Ok(if args.from_stdin {
        KeySource::Stdin
    } else if let Some(var) = &args.from_env {
        KeySource::Env(var.clone())
    } else if let Some(path) = &args.from_file {
        KeySource::File(path.clone())
    } else if args.from_literal.is_some() {
        KeySource::Literal
    } else if stdin_is_tty {
        KeySource::Prompt
    } else {
        return Err(Error::Usage(
            "no API key given and stdin is not a terminal to prompt on; pass --from-stdin to read \
             it from the pipe, or --from-env VAR / --from-file PATH"
                .into(),
        ));
    })
}

/// Pure: trims one trailing newline (what `echo` and editors add) and refuses keys that cannot
/// be right. Messages describe the key by length only.
pub fn clean_key(raw: String, origin: &str) -> Result<SecretString> {
    let trimmed = raw
        .strip_suffix("\r\n")
        .or_else(|| raw.strip_suffix('\n'))
        .unwrap_or(&raw);
    if trimmed.trim().is_empty() {
        return Err(Error::Invalid(format!(
            "the API key from {origin} is empty; nothing was stored"
        )));
    }
    if trimmed.contains(['\n', '\r']) {
        let lines = trimmed.lines().count();
        return Err(Error::Invalid(format!(
            "the API key from {origin} has {lines} lines; expected a single line; nothing was stored"
        )));
    }
    if trimmed.trim() != trimmed {
        return Err(Error::Invalid(format!(
            "the API key from {origin} starts or ends with spaces; remove them; nothing was stored"
        )));
    }
    let key = SecretString::from(trimmed.to_string());
    // Overwrite the buffer we were handed before it is freed.
    let mut raw = raw.into_bytes();
    raw.iter_mut().for_each(|b| *b = 0);
    Ok(key)
}

fn read_key(
    args: &SecretCreateOptions,
    source: &KeySource,
    out: &mut Output,
) -> Result<SecretString> {
    match source {
        KeySource::Prompt => {
            let key = dialoguer::Password::new()
                .with_prompt(format!("API key for Secret {:?}", args.name))
                .with_confirmation("Repeat the API key", "the two entries differ")
                .interact()
                .map_err(|e| Error::Other(format!("reading the key at the prompt: {e}")))?;
            clean_key(key, "the prompt")
        }
        KeySource::Stdin => {
            // All of stdin, bounded: a second line means the wrong thing was piped in, and
            // silently keeping only the first line would store a wrong key.
            let bytes = crate::input::read_bytes_from(
                std::io::stdin().lock(),
                "<stdin>",
                crate::input::KEY,
            )?;
            let text = String::from_utf8(bytes).map_err(|_| {
                Error::Invalid("the key on stdin is not UTF-8 text; nothing was stored".into())
            })?;
            clean_key(text, "stdin")
        }
        KeySource::Env(var) => match std::env::var(var) {
            Ok(value) => clean_key(value, &format!("${var}")),
            Err(std::env::VarError::NotPresent) => Err(Error::Invalid(format!(
                "environment variable {var} is not set (--from-env {var}); nothing was stored"
            ))),
            Err(std::env::VarError::NotUnicode(_)) => Err(Error::Invalid(format!(
                "environment variable {var} is not valid UTF-8; nothing was stored"
            ))),
        },
        KeySource::File(path) => {
            let (_, text) =
                crate::input::read_text(&path.display().to_string(), crate::input::KEY)?;
            clean_key(text, &path.display().to_string())
        }
        KeySource::Literal => {
            out.note_line(
                "warning: --from-literal puts the key in your shell history and in `ps` output; \
                 prefer the prompt or --from-stdin",
            );
            clean_key(
                args.from_literal.clone().unwrap_or_default(),
                "--from-literal",
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Building and comparing Secrets (pure)

/// The Secret to store.
pub fn desired_secret(
    name: &str,
    namespace: &str,
    key_name: &str,
    key: &SecretString,
    base_url: Option<&str>,
) -> Secret {
    let mut data = BTreeMap::new();
    data.insert(
        key_name.to_string(),
        ByteString(key.expose_secret().as_bytes().to_vec()),
    );
    if let Some(url) = base_url {
        data.insert(
            BASE_URL_KEY.to_string(),
            ByteString(url.as_bytes().to_vec()),
        );
    }
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(
                MANAGED_BY.0.to_string(),
                MANAGED_BY.1.to_string(),
            )])),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(data),
        ..Default::default()
    }
}

/// How an existing Secret compares with what we would store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// Every key we store is there with the same bytes.
    Same,
    /// Some of our keys are missing or differ; these are their names (never values).
    Differs(Vec<String>),
}

pub fn compare(existing: &Secret, desired: &Secret) -> Comparison {
    let have = existing.data.clone().unwrap_or_default();
    let mut differing: Vec<String> = desired
        .data
        .iter()
        .flatten()
        .filter(|(k, v)| have.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    // stringData is write-only on a real server, but a Secret read back from elsewhere may have it.
    differing.dedup();
    if differing.is_empty() {
        Comparison::Same
    } else {
        Comparison::Differs(differing)
    }
}

/// The existing Secret with our keys replaced and everything else kept.
pub fn merged(existing: &Secret, desired: &Secret) -> Secret {
    let mut out = existing.clone();
    let data = out.data.get_or_insert_with(BTreeMap::new);
    for (k, v) in desired.data.iter().flatten() {
        data.insert(k.clone(), v.clone());
    }
    out.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY.0.into(), MANAGED_BY.1.into());
    out.metadata.managed_fields = None;
    out
}

/// The Secret as it may be shown: every data value replaced by its length.
pub fn masked(secret: &Secret) -> serde_json::Value {
    let mut value = serde_json::to_value(secret).unwrap_or(serde_json::Value::Null);
    if let Some(data) = value.get_mut("data").and_then(|d| d.as_object_mut()) {
        let lengths: Vec<(String, usize)> = secret
            .data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.0.len()))
            .collect();
        for (k, len) in lengths {
            data.insert(
                k,
                serde_json::Value::String(format!("<redacted: {len} bytes>")),
            );
        }
    }
    if let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("managedFields");
    }
    value
}

/// Prints the (masked) object; `fallback` is the line without `-o`. When the object was written
/// to the cluster (`wrote`), a closed stdout still gets the fact onto stderr.
fn print_object(
    out: &mut Output,
    value: &serde_json::Value,
    output: Option<ManifestFormat>,
    fallback: &str,
    wrote: bool,
) -> Result<()> {
    let printed = match output {
        Some(ManifestFormat::Json) => {
            out.data_line(&serde_json::to_string_pretty(value).unwrap_or_default())
        }
        Some(ManifestFormat::Yaml) => out.data(&serde_saphyr::to_string(value).unwrap_or_default()),
        Some(ManifestFormat::Name) => out.data_line(&format!(
            "secret/{}",
            value["metadata"]["name"].as_str().unwrap_or_default()
        )),
        None => out.data_line(fallback),
    };
    if wrote {
        out.after_write(printed, fallback)
    } else {
        printed
    }
}

// ---------------------------------------------------------------------------------------------
// The commands

/// `kubectl tfjob secret create`.
pub async fn create(
    kube_args: &ConnectionOptions,
    args: SecretCreateOptions,
    out: &mut Output,
) -> Result<()> {
    if args.output.is_some() && args.dry_run.is_none() {
        return Err(Error::Usage(
            "-o/--output goes with --dry-run (a stored Secret is never printed)".into(),
        ));
    }
    if args.key.is_empty() || !is_config_key(&args.key) {
        return Err(Error::Usage(format!(
            "--key {:?} is not a valid Secret key: use letters, digits, '-', '_' and '.'",
            args.key
        )));
    }
    if args.key == BASE_URL_KEY && args.base_url.is_some() {
        return Err(Error::Usage(format!(
            "--key {BASE_URL_KEY} collides with where --base-url is stored; pick another key"
        )));
    }
    if let Some(url) = &args.base_url
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        return Err(Error::Usage(format!(
            "--base-url {url:?} must start with https:// (or http://)"
        )));
    }
    let source = choose_source(&args, std::io::stdin().is_terminal())?;
    // Read the key before connecting, so a prompt is never interrupted by a slow API server.
    let key = read_key(&args, &source, out)?;
    let dry_run = args.dry_run.unwrap_or(DryRun::None);
    let kube = match dry_run {
        // Client dry run needs no cluster, except to learn the namespace, which is best-effort.
        DryRun::Client => cluster::connect(kube_args).await.ok(),
        _ => Some(cluster::connect(kube_args).await?),
    };
    let namespace = kube
        .as_ref()
        .map(|k| k.namespace.clone())
        .or_else(|| kube_args.namespace.clone())
        .unwrap_or_else(|| "default".into());

    if args.verify {
        let base = args.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        let verdict = probe::check_models(base, &key, Duration::from_secs(15)).await;
        let explanation = verdict.explain(&probe::models_url(base));
        if !verdict.is_ok() {
            return Err(Error::NotReady {
                message: format!("{explanation}; nothing was stored"),
                hint: None,
            });
        }
        out.note_line(&explanation);
    }

    let desired = desired_secret(
        &args.name,
        &namespace,
        &args.key,
        &key,
        args.base_url.as_deref(),
    );
    drop(key);
    let Some(kube) = kube else {
        print_object(
            out,
            &masked(&desired),
            args.output,
            &format!("secret/{} created (dry run)", args.name),
            false,
        )?;
        return Ok(());
    };
    let api: Api<Secret> = Api::namespaced(kube.client.clone(), &namespace);
    let get = Action::new("get", "secrets", Some(&namespace)).named(&args.name);
    let existing = match cluster::retry(&kube, || api.get_opt(&args.name)).await {
        Ok(existing) => existing,
        Err(e) => return Err(cluster::explain(e, &get, &kube.server)),
    };
    let server_dry_run = dry_run == DryRun::Server;
    let params = PostParams {
        dry_run: server_dry_run || dry_run == DryRun::Client,
        field_manager: Some("kubectl-tfjob".into()),
    };
    let suffix = if dry_run == DryRun::None {
        ""
    } else {
        " (dry run)"
    };
    match existing {
        None => {
            if dry_run == DryRun::Client {
                print_object(
                    out,
                    &masked(&desired),
                    args.output,
                    &format!("secret/{} created{suffix}", args.name),
                    false,
                )?;
                return Ok(());
            }
            let action = Action::new("create", "secrets", Some(&namespace)).named(&args.name);
            let created =
                create_secret(&kube, &api, &params, &desired, &namespace, &action).await?;
            print_object(
                out,
                &masked(&created),
                args.output,
                &format!("secret/{} created{suffix}", args.name),
                dry_run == DryRun::None,
            )?;
        }
        Some(existing) => {
            if existing.type_.as_deref().unwrap_or("Opaque") != "Opaque" {
                return Err(Error::Conflict {
                    message: format!(
                        "Secret {namespace}/{} exists with type {:?}, not Opaque; nothing was changed",
                        args.name,
                        existing.type_.as_deref().unwrap_or_default()
                    ),
                    hint: Some("Choose another name, or delete that Secret if it is yours.".into()),
                });
            }
            match compare(&existing, &desired) {
                Comparison::Same => print_object(
                    out,
                    &masked(&existing),
                    args.output,
                    &format!("secret/{} unchanged", args.name),
                    false,
                )?,
                Comparison::Differs(keys) if !args.overwrite => {
                    return Err(Error::Conflict {
                        message: format!(
                            "Secret {namespace}/{} already exists with different content under {}; nothing was changed",
                            args.name,
                            keys.iter()
                                .map(|k| format!("{k:?}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        hint: Some("Pass --overwrite to replace it.".into()),
                    });
                }
                Comparison::Differs(_) => {
                    let updated = merged(&existing, &desired);
                    if dry_run == DryRun::Client {
                        print_object(
                            out,
                            &masked(&updated),
                            args.output,
                            &format!("secret/{} configured{suffix}", args.name),
                            false,
                        )?;
                        return Ok(());
                    }
                    let action =
                        Action::new("update", "secrets", Some(&namespace)).named(&args.name);
                    // The resourceVersion from our read makes this a compare-and-swap: a
                    // concurrent change gives 409 instead of being silently overwritten.
                    let stored = cluster::retry(&kube, || api.replace(&args.name, &params, &updated))
                        .await
                        .map_err(|e| match cluster::status_code(&e) {
                            Some(409) => Error::Conflict {
                                message: format!(
                                    "Secret {namespace}/{} changed while we were updating it; nothing was changed",
                                    args.name
                                ),
                                hint: Some("Run the command again.".into()),
                            },
                            _ => cluster::explain(e, &action, &kube.server),
                        })?;
                    print_object(
                        out,
                        &masked(&stored),
                        args.output,
                        &format!("secret/{} configured{suffix}", args.name),
                        dry_run == DryRun::None,
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// Creates the Secret. A retried create that finds the Secret already there compares it: if it
/// holds exactly our data, the first attempt went through and this is success, not a conflict.
async fn create_secret(
    kube: &Kube,
    api: &Api<Secret>,
    params: &PostParams,
    desired: &Secret,
    namespace: &str,
    action: &Action,
) -> Result<Secret> {
    match cluster::retry(kube, || api.create(params, desired)).await {
        Ok(created) => Ok(created),
        Err(e) if cluster::status_code(&e) == Some(409) => {
            let name = desired.metadata.name.clone().unwrap_or_default();
            match api.get_opt(&name).await {
                Ok(Some(existing)) if compare(&existing, desired) == Comparison::Same => {
                    Ok(existing)
                }
                _ => Err(Error::Conflict {
                    message: format!(
                        "Secret {namespace}/{name} was created by someone else meanwhile; nothing was changed"
                    ),
                    hint: Some("Run the command again (with --overwrite to replace it).".into()),
                }),
            }
        }
        Err(e) if cluster::is_not_found(&e) => Err(Error::not_ready(
            format!("namespace {namespace:?} does not exist; nothing was stored"),
            format!(
                "Create it with `kubectl create namespace {namespace}`, or pass -n with an existing one."
            ),
        )),
        Err(e) => Err(cluster::explain(e, action, &kube.server)),
    }
}

/// `[-._a-zA-Z0-9]+`, as Kubernetes requires of Secret keys.
fn is_config_key(key: &str) -> bool {
    key.len() <= 253
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `kubectl tfjob secret check`.
pub async fn check(
    kube_args: &ConnectionOptions,
    args: SecretCheckOptions,
    out: &mut Output,
) -> Result<()> {
    let kube = cluster::connect(kube_args).await?;
    let namespace = kube.namespace.clone();
    check_secret(&kube, &namespace, &args.name, &args.key).await?;
    out.data_line(&format!(
        "secret/{} in namespace {namespace} has a non-empty {:?} key",
        args.name, args.key
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::secret::{SecretState, create_command, secret_state};

    fn args() -> SecretCreateOptions {
        SecretCreateOptions {
            name: "taotoken-secret".into(),
            key: "api-key".into(),
            base_url: None,
            from_stdin: false,
            from_env: None,
            from_file: None,
            from_literal: None,
            overwrite: false,
            verify: false,
            dry_run: None,
            output: None,
        }
    }

    #[test]
    fn source_prefers_flags_then_prompt() {
        assert_eq!(choose_source(&args(), true).unwrap(), KeySource::Prompt);
        assert!(matches!(
            choose_source(&args(), false),
            Err(Error::Usage(_))
        ));
        let a = SecretCreateOptions {
            from_stdin: true,
            ..args()
        };
        assert_eq!(choose_source(&a, true).unwrap(), KeySource::Stdin);
        let a = SecretCreateOptions {
            from_env: Some("K".into()),
            ..args()
        };
        assert_eq!(
            choose_source(&a, false).unwrap(),
            KeySource::Env("K".into())
        );
    }

    #[test]
    fn keys_are_cleaned_and_bad_ones_refused_without_echo() {
        let k = clean_key("sk-abc\n".into(), "stdin").unwrap();
        assert_eq!(k.expose_secret(), "sk-abc");
        let k = clean_key("sk-abc\r\n".into(), "stdin").unwrap();
        assert_eq!(k.expose_secret(), "sk-abc");
        for bad in ["", "   \n", "a\nb\n", " sk-x"] {
            let err = clean_key(bad.into(), "stdin").unwrap_err().to_string();
            assert!(err.contains("nothing was stored"), "{err}");
            if bad.trim().len() > 1 {
                assert!(!err.contains(bad.trim()), "key echoed: {err}");
            }
        }
    }

    #[test]
    fn compare_and_merge_touch_only_our_keys() {
        let key = SecretString::from("sk-one".to_string());
        let desired = desired_secret("s", "ns", "api-key", &key, Some("https://g/api"));
        assert_eq!(desired.type_.as_deref(), Some("Opaque"));
        assert_eq!(compare(&desired, &desired), Comparison::Same);
        let mut existing = desired.clone();
        let data = existing.data.as_mut().unwrap();
        data.insert("api-key".into(), ByteString(b"sk-two".to_vec()));
        data.insert("other".into(), ByteString(b"keep".to_vec()));
        assert_eq!(
            compare(&existing, &desired),
            Comparison::Differs(vec!["api-key".into()])
        );
        let m = merged(&existing, &desired);
        let data = m.data.unwrap();
        assert_eq!(data["api-key"].0, b"sk-one");
        assert_eq!(data["other"].0, b"keep");
    }

    #[test]
    fn masked_output_hides_values() {
        let key = SecretString::from("sk-verysecretvalue".to_string());
        let s = desired_secret("s", "ns", "api-key", &key, None);
        let text = masked(&s).to_string();
        assert!(!text.contains("sk-verysecretvalue"));
        // base64 of the value must not appear either.
        assert!(!text.contains("c2stdmVyeXNlY3JldHZhbHVl"));
        assert!(text.contains("<redacted: 18 bytes>"), "{text}");
        assert!(text.contains("kubectl-tfjob"));
    }

    #[test]
    fn secret_states() {
        assert_eq!(secret_state(None, "api-key"), SecretState::MissingSecret);
        let key = SecretString::from("x".to_string());
        let s = desired_secret("s", "ns", "other", &key, None);
        assert_eq!(
            secret_state(Some(&s), "api-key"),
            SecretState::MissingKey {
                present: vec!["other".into()]
            }
        );
        assert_eq!(secret_state(Some(&s), "other"), SecretState::Ready);
        assert_eq!(
            create_command("taotoken-secret", "api-key", "ml"),
            "kubectl tfjob secret create taotoken-secret -n ml"
        );
    }
}
