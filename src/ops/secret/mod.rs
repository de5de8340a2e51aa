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
use zeroize::Zeroize;

use super::{Context, DryRun};
use crate::cluster::secret::{check_secret, stored_base_url};
use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::gateway::BASE_URL_KEY;
use crate::gateway::DEFAULT_BASE_URL;
use crate::output::{ManifestFormat, Output};

mod key;
pub mod verify;

use key::read_key;
pub use key::{KeySource, MAX_KEY_BYTES, choose_source, clean_key};

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

/// Zeroes a Secret's values when dropped: the Secrets `create` builds and reads hold the key.
struct Wiped(Secret);

impl Drop for Wiped {
    fn drop(&mut self) {
        for v in self.0.data.iter_mut().flat_map(|d| d.values_mut()) {
            v.0.zeroize();
        }
        for v in self.0.string_data.iter_mut().flat_map(|d| d.values_mut()) {
            v.zeroize();
        }
    }
}

impl std::ops::Deref for Wiped {
    type Target = Secret;
    fn deref(&self) -> &Secret {
        &self.0
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
    // Borrowed, not cloned: the stored values hold the key, and a copy would not be wiped.
    let have = existing.data.as_ref();
    let differing: Vec<String> = desired
        .data
        .iter()
        .flatten()
        .filter(|(k, v)| have.and_then(|d| d.get(*k)) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
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

/// `kubectl tfjob secret create|check`: which action, with its options. A create carries the
/// key [`prepare_create`] read before the runtime started.
#[derive(Debug)]
pub enum SecretOptions {
    Create(SecretCreateOptions, SecretString),
    Check(SecretCheckOptions),
}

/// `kubectl tfjob secret`: the core of both actions.
pub async fn run(ctx: &Context, opts: SecretOptions, out: &mut Output) -> Result<()> {
    match opts {
        SecretOptions::Create(options, key) => create(ctx, options, key, out).await,
        SecretOptions::Check(options) => check(ctx, options, out).await,
    }
}

/// `secret create`, first half, synchronous: checks the flags and reads the key. Called before
/// the async runtime starts (see [`read_key`]), and before connecting, so a prompt is never
/// interrupted by a slow API server. Returns the options to pass to [`create`].
pub fn prepare_create(
    mut args: SecretCreateOptions,
    out: &mut Output,
) -> Result<(SecretCreateOptions, SecretString)> {
    if args.output.is_some() && args.dry_run.is_none() {
        return Err(Error::Usage(
            "-o/--output goes with --dry-run (a stored Secret is never printed)".into(),
        ));
    }
    cluster::check_name("Secret", &args.name)?;
    crate::gateway::check_key_name(&args.key, "--key")?;
    if args.key == BASE_URL_KEY && args.base_url.is_some() {
        return Err(Error::Usage(format!(
            "--key {BASE_URL_KEY} collides with where --base-url is stored; pick another key"
        )));
    }
    let base_url = match &args.base_url {
        Some(url) => Some(check_base_url(url, out)?),
        None => None,
    };
    args.base_url = base_url;
    let source = choose_source(&args, std::io::stdin().is_terminal())?;
    let key = read_key(&mut args, &source, out)?;
    Ok((args, key))
}

/// `kubectl tfjob secret create`, second half: stores `key` as [`prepare_create`] left it.
pub async fn create(
    ctx: &Context,
    args: SecretCreateOptions,
    key: SecretString,
    out: &mut Output,
) -> Result<()> {
    // Before the client dry run's best-effort connect, which would swallow this error.
    cluster::check_namespace(ctx.conn().namespace.as_deref())?;
    let dry_run = args.dry_run.unwrap_or(DryRun::None);
    let kube = match dry_run {
        // Client dry run needs no cluster, except to learn the namespace, which is best-effort.
        DryRun::Client => ctx.kube().await.ok(),
        _ => Some(ctx.kube().await?),
    };
    let namespace = kube
        .as_ref()
        .map(|k| k.namespace.clone())
        .or_else(|| ctx.conn().namespace.clone())
        .unwrap_or_else(|| "default".into());
    if args.verify {
        verify_key(&args, &key, out).await?;
    }
    let desired = Wiped(desired_secret(
        &args.name,
        &namespace,
        &args.key,
        &key,
        args.base_url.as_deref(),
    ));
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
    let existing = match cluster::retry(kube, || api.get_opt(&args.name)).await {
        Ok(existing) => existing.map(Wiped),
        Err(e) => return Err(cluster::explain(e, &get, kube)),
    };
    let st = Store {
        kube,
        api: &api,
        params: PostParams {
            dry_run: dry_run != DryRun::None,
            field_manager: Some(crate::cluster::FIELD_MANAGER.into()),
        },
        args: &args,
        namespace: &namespace,
        dry_run,
    };
    match existing {
        None => store_new(&st, &desired, out).await,
        Some(existing) => update(&st, &existing, &desired, out).await,
    }
}

/// `--verify`: the gateway takes the key (a public model list is a warning); else nothing
/// is stored.
async fn verify_key(
    args: &SecretCreateOptions,
    key: &SecretString,
    out: &mut Output,
) -> Result<()> {
    let base = args.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
    let verdict = verify::check_models(base, key, Duration::from_secs(15)).await;
    let explanation = verdict.explain(&verify::models_url(base));
    if !verdict.is_ok() {
        return Err(Error::NotReady {
            message: format!("{explanation}; nothing was stored"),
            hint: None,
        });
    }
    if matches!(verdict, verify::Answer::Public { .. }) {
        out.note_line(&format!("warning: {explanation}"));
    } else {
        out.note_line(&explanation);
    }
    Ok(())
}

/// Where and how the Secret is written.
struct Store<'a> {
    kube: &'a Kube,
    api: &'a Api<Secret>,
    params: PostParams,
    args: &'a SecretCreateOptions,
    namespace: &'a str,
    dry_run: DryRun,
}

impl Store<'_> {
    /// ` (dry run)` after what was done, when nothing was.
    fn suffix(&self) -> &'static str {
        if self.dry_run == DryRun::None {
            ""
        } else {
            " (dry run)"
        }
    }
}

/// No Secret of that name: create it.
async fn store_new(st: &Store<'_>, desired: &Wiped, out: &mut Output) -> Result<()> {
    let (kube, api, args, params, dry_run) = (st.kube, st.api, st.args, &st.params, st.dry_run);
    let namespace = st.namespace;
    let suffix = st.suffix();
    if dry_run == DryRun::Client {
        print_object(
            out,
            &masked(desired),
            args.output,
            &format!("secret/{} created{suffix}", args.name),
            false,
        )?;
        return Ok(());
    }
    let action = Action::new("create", "secrets", Some(namespace)).named(&args.name);
    if !params.dry_run {
        interrupt_means(kube, namespace, &args.name, "created");
    }
    let created = create_secret(kube, api, params, desired, namespace, &action).await;
    crate::error::on_interrupt_settled();
    let (created, reply_lost) = created?;
    let created = Wiped(created);
    if reply_lost {
        out.note_line(&format!(
            "secret/{} created (the reply was lost; the Secret exists with this key)",
            args.name
        ));
    }
    print_object(
        out,
        &masked(&created),
        args.output,
        &format!("secret/{} created{suffix}", args.name),
        dry_run == DryRun::None,
    )?;
    Ok(())
}

/// A Secret of that name: unchanged, refused without --overwrite, or updated (compare-and-swap
/// on the resourceVersion read).
async fn update(st: &Store<'_>, existing: &Wiped, desired: &Wiped, out: &mut Output) -> Result<()> {
    let (kube, api, args, params, dry_run) = (st.kube, st.api, st.args, &st.params, st.dry_run);
    let namespace = st.namespace;
    let suffix = st.suffix();
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
    match compare(existing, desired) {
        Comparison::Same => print_object(
            out,
            &masked(existing),
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
            let updated = Wiped(merged(existing, desired));
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
            let action = Action::new("update", "secrets", Some(namespace)).named(&args.name);
            // The resourceVersion from our read makes this a compare-and-swap: a
            // concurrent change gives 409 instead of being silently overwritten.
            if !params.dry_run {
                interrupt_means(kube, namespace, &args.name, "updated");
            }
            let stored = cluster::retry(kube, || api.replace(&args.name, params, &updated.0)).await;
            crate::error::on_interrupt_settled();
            let stored = stored
                .map_err(|e| match cluster::status_code(&e) {
                    Some(409) => Error::Conflict {
                        message: format!(
                            "Secret {namespace}/{} changed while we were updating it; nothing was changed",
                            args.name
                        ),
                        hint: Some("Run the command again.".into()),
                    },
                    _ => cluster::explain(e, &action, kube),
                })
                .map(Wiped)?;
            print_object(
                out,
                &masked(&stored),
                args.output,
                &format!("secret/{} configured{suffix}", args.name),
                dry_run == DryRun::None,
            )?;
            if dry_run == DryRun::None {
                // Environment from a Secret is read when a container starts.
                out.note_line(
                    "Running pods keep the value they started with; restart a job so its pods \
                     read this one: kubectl tfjob restart JOB",
                );
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
) -> Result<(Secret, bool)> {
    match cluster::retry(kube, || api.create(params, desired)).await {
        Ok(created) => Ok((created, false)),
        // No reply (or an unreadable one): look before saying anything.
        Err(e) if !params.dry_run && cluster::outcome_unknown(&e) => {
            let name = desired.metadata.name.clone().unwrap_or_default();
            let look = cluster::for_look(kube);
            match cluster::retry(&look, || api.get_opt(&name)).await {
                Ok(Some(existing)) if compare(&existing, desired) == Comparison::Same => {
                    Ok((existing, true))
                }
                Ok(Some(_)) => Err(Error::Conflict {
                    message: format!(
                        "Secret {namespace}/{name} was created by someone else meanwhile; nothing was changed"
                    ),
                    hint: Some("Run the command again (with --overwrite to replace it).".into()),
                }),
                Ok(None) => Err(cluster::explain(e, action, kube)),
                Err(look_err) => Err(Error::WriteUnknown {
                    message: format!(
                        "the create of Secret {namespace}/{name} was sent but no reply came ({}), \
                         and reading it back failed too ({}): the Secret may exist",
                        crate::error::chain(&e),
                        crate::error::chain(&look_err)
                    ),
                    hint: Some(format!(
                        "Check with `kubectl get secret {name} {}`; if it is missing, run this \
                         command again.",
                        kube.hints.ns_flags(namespace)
                    )),
                }),
            }
        }
        Err(e) if cluster::status_code(&e) == Some(409) => {
            let name = desired.metadata.name.clone().unwrap_or_default();
            // Read back under the same retry policy: one failed GET must not turn our own
            // committed create into "someone else's" (as `submit` does for its job).
            let get = Action::new("get", "secrets", Some(namespace)).named(&name);
            match cluster::retry(kube, || api.get_opt(&name)).await {
                Err(e) => Err(cluster::explain(e, &get, kube)),
                Ok(Some(existing)) if compare(&existing, desired) == Comparison::Same => {
                    Ok((existing, false))
                }
                Ok(_) => Err(Error::Conflict {
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
                "Create it with `kubectl create namespace {namespace}{}`, or pass -n with an existing one.",
                kube.hints.hint_suffix()
            ),
        )),
        Err(e) => Err(cluster::explain(e, action, kube)),
    }
}

/// The `--base-url` to store: absolute http(s) (the pods use it as-is), without a trailing `/`.
/// One ending in `/v1` is stored with a warning, as `validate` warns about it in a manifest.
fn check_base_url(url: &str, out: &mut Output) -> Result<String> {
    crate::gateway::absolute_http_url(url)
        .and_then(|()| {
            if crate::gateway::has_userinfo(url) {
                Err(crate::gateway::USERINFO_REFUSED.to_string())
            } else {
                Ok(())
            }
        })
        .map_err(|why| {
            Error::Usage(format!(
                "--base-url {:?}: {why}; give an absolute http(s) URL without /v1, e.g. --base-url https://gateway.example.com/api",
                crate::gateway::masked_url(url)
            ))
        })?;
    let url = url.trim_end_matches('/').to_string();
    if url.ends_with("/v1") {
        out.note_line(&format!(
            "warning: --base-url {url} ends in /v1; SDKs append /v1 themselves, giving .../v1/v1 and 404s; \
             usually the right value is {}",
            url.trim_end_matches("/v1")
        ));
    }
    Ok(url)
}

/// `kubectl tfjob secret check`.
pub async fn check(ctx: &Context, args: SecretCheckOptions, out: &mut Output) -> Result<()> {
    cluster::check_name("Secret", &args.name)?;
    crate::gateway::check_key_name(&args.key, "--key")?;
    let kube = ctx.kube().await?;
    let namespace = kube.namespace.clone();
    let secret = match check_secret(kube, &namespace, &args.name, &args.key).await {
        Ok(secret) => secret,
        // Missing from a namespace that does not exist: the namespace is what to fix first.
        Err(e @ Error::NotReady { .. }) => {
            crate::ops::readiness::check_namespace(kube, &namespace).await?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    out.data_line(&format!(
        "secret/{} in namespace {namespace} has a non-empty {:?} key",
        args.name, args.key
    ))?;
    out.data_line(&base_url_line(
        &namespace,
        &args.name,
        stored_base_url(&secret),
    ))
}

/// Which gateway `submit` will point jobs in `namespace` at (without `--api-base-url`).
fn base_url_line(namespace: &str, name: &str, stored: Option<String>) -> String {
    match stored {
        Some(url) => format!(
            "jobs in namespace {namespace} will use base URL {} (from secret/{name} key {BASE_URL_KEY:?}, unless --api-base-url is given)",
            crate::gateway::masked_url(&url)
        ),
        None => format!(
            "jobs in namespace {namespace} will use base URL {DEFAULT_BASE_URL} (the default: secret/{name} has no {BASE_URL_KEY:?} key; store one with `secret create --base-url URL --overwrite`)"
        ),
    }
}

/// What an interrupt means while the Secret's write is in flight, and how to find out.
fn interrupt_means(kube: &Kube, namespace: &str, name: &str, doing: &str) {
    let check = format!(
        "kubectl get secret {name} {}",
        kube.hints.ns_flags(namespace)
    );
    crate::error::on_interrupt_write("Secret", namespace, name, doing, &check);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::secret::{SecretState, create_command, secret_state};
    use zeroize::Zeroizing;

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

    fn key(bytes: &[u8]) -> Result<SecretString> {
        clean_key(Zeroizing::new(bytes.to_vec()), "stdin")
    }

    #[test]
    fn keys_are_cleaned_and_bad_ones_refused_without_echo() {
        assert_eq!(key(b"sk-abc\n").unwrap().expose_secret(), "sk-abc");
        assert_eq!(key(b"sk-abc\r\n").unwrap().expose_secret(), "sk-abc");
        for (bad, why) in [
            (&b""[..], "is empty"),
            (b"   \n", "is empty"),
            (b"a\nb\n", "has 2 lines"),
            (b"sk-ab\rcd", "contains a carriage return (CR, at byte 6;"),
            (b"sk-ab\rcd\n", "contains a carriage return (CR, at byte 6;"),
            (b"a\rb\nc", "has 3 lines"),
            (b"a\r\nb\r\n", "has 2 lines"),
            (b" sk-x", "starts or ends with spaces"),
            (b"sk-ab\0cd", "contains a NUL byte (at byte 6;"),
            (b"sk-ab\x1bcd", "contains a control character (at byte 6;"),
            (b"sk-ab cd", "contains whitespace (at byte 6;"),
            (b"sk-ab\tcd", "contains whitespace"),
            (
                "sk-äbcd".as_bytes(),
                "contains non-ASCII characters (at byte 4;",
            ),
            (b"sk-\xff\xfe", "contains non-ASCII characters"),
        ] {
            let e = key(bad).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
            let text = e.to_string();
            assert!(text.contains(why), "{bad:?}: {text}");
            assert!(text.ends_with("nothing was stored"), "{text}");
            if bad.len() > 3 {
                assert!(!text.contains("sk-ab"), "key echoed: {text}");
            }
        }
    }

    #[test]
    fn keys_over_the_limit_are_refused_never_cut() {
        let at_limit = vec![b'k'; MAX_KEY_BYTES];
        assert_eq!(key(&at_limit).unwrap().expose_secret().len(), MAX_KEY_BYTES);
        // 70,000 bytes (issue 14's case) from an env var or literal: refused with its size.
        let e = key(&vec![b'k'; 70_000]).unwrap_err().to_string();
        assert!(
            e.contains("is 70000 bytes: too large: over the 16 KiB limit for an API key"),
            "{e}"
        );
        // Through the bounded reader (stdin, files, devices): one byte past the limit is
        // read, and that refuses the input.
        let key_limit = crate::input::KEY;
        let e =
            crate::input::read_key_from(&vec![b'k'; 70_000][..], "<stdin>", key_limit).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        assert!(e.to_string().contains("too large"), "{e}");
        assert!(crate::input::read_key_from(std::io::repeat(0), "/dev/zero", key_limit).is_err());
        // A key of exactly the limit, plus the newline `echo` adds: judged after stripping.
        for ending in [&b"\n"[..], b"\r\n"] {
            let mut line = vec![b'k'; MAX_KEY_BYTES];
            line.extend_from_slice(ending);
            let read = crate::input::read_key_from(&line[..], "<stdin>", key_limit).unwrap();
            assert_eq!(
                clean_key(read, "stdin").unwrap().expose_secret().len(),
                MAX_KEY_BYTES
            );
        }
        let mut line = vec![b'k'; MAX_KEY_BYTES + 1];
        line.push(b'\n');
        let read = crate::input::read_key_from(&line[..], "<stdin>", key_limit).unwrap();
        assert!(clean_key(read, "stdin").is_err());
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
            create_command("taotoken-secret", "api-key", "ml", &Default::default()),
            "kubectl tfjob secret create taotoken-secret -n ml"
        );
    }
}
