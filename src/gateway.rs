//! Model-gateway credentials for the training containers, and the istio opt-out.
//!
//! Applied by typed code after rendering, so built-in templates, user templates and `-f`
//! manifests all get the same treatment: every container named `tensorflow` gets
//! `<PREFIX>_API_KEY` from a Secret (never a literal) and `<PREFIX>_BASE_URL`: a literal (the
//! `--api-base-url` flag, or the default), or, when `submit` finds the Secret carries a
//! `base-url` key and no URL was given, a reference to that key ([`GatewayConfig::use_stored_base_url`]),
//! so each namespace's Secret decides which gateway its key is sent to. `render` is offline and
//! keeps the literal.
//!
//! Also the one owner of the gateway Secret's names (default name and key, [`BASE_URL_KEY`]) and
//! of the Secret key-name rule ([`check_key_name`]); `cluster::secret` reads them from here.

use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, SecretKeySelector};

use crate::model::{DEFAULT_CONTAINER_NAME, TFJob};

pub const DEFAULT_SECRET_NAME: &str = "taotoken-secret";
pub const DEFAULT_SECRET_KEY: &str = "api-key";
pub const DEFAULT_ENV_PREFIX: &str = "TAOTOKEN";
pub const DEFAULT_BASE_URL: &str = "https://taotoken.net/api";

/// Where `secret create --base-url` stores the gateway URL beside the key (not a secret).
pub const BASE_URL_KEY: &str = "base-url";

/// Checks a Secret key name as the API server does (apimachinery's `IsConfigMapKey`,
/// staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go): at most 253 characters of
/// letters, digits, `-`, `_` and `.`, and not `.`, `..` or anything starting with `..`.
/// `flag` names where the key came from, for the message.
pub fn check_key_name(key: &str, flag: &str) -> crate::error::Result<()> {
    let problem = if key.is_empty() {
        Some("it is empty".to_string())
    } else if key.len() > 253 {
        Some(format!(
            "it has {} characters; at most 253 are allowed",
            key.len()
        ))
    } else if let Some(c) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        Some(format!("{c:?} is not allowed"))
    } else if key == "." || key.starts_with("..") {
        Some("it must not be '.' or start with '..'".to_string())
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(why) => Err(crate::error::Error::Usage(format!(
            "{flag} {key:?} is not a valid Secret key ({why}): use letters, digits, '-', '_' and '.', e.g. {DEFAULT_SECRET_KEY}"
        ))),
    }
}
/// Istio's sidecar sits between the replicas and breaks their gRPC rendezvous.
pub const ISTIO_INJECT_ANNOTATION: &str = "sidecar.istio.io/inject";
/// The container istio injects; it breaks the replicas' gRPC rendezvous.
pub const ISTIO_PROXY_CONTAINER: &str = "istio-proxy";

/// Whether istio's injector webhook selects a namespace by its labels, and the label that makes
/// it so. Istio's sidecar-injector namespaceSelectors (manifests/charts/istio-control/
/// istio-discovery, the `namespace.sidecar-injector.istio.io` and `rev.namespace…` webhooks):
/// `istio-injection=enabled`, or an `istio.io/rev` label where `istio-injection` is not set.
pub fn istio_injecting_label(
    labels: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    match labels.get("istio-injection").map(String::as_str) {
        Some("enabled") => Some("istio-injection=enabled".into()),
        Some(_) => None,
        None => labels
            .get("istio.io/rev")
            .map(|rev| format!("istio.io/rev={rev}")),
    }
}

/// How the model-gateway credentials reach the training containers (the flags, clap-free).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayOptions {
    /// Secret holding the gateway API key [default: taotoken-secret].
    pub api_secret: Option<String>,

    /// Key inside the Secret [default: api-key].
    pub api_secret_key: Option<String>,

    /// Prefix of the env vars: PREFIX_API_KEY and PREFIX_BASE_URL [default: TAOTOKEN].
    pub api_env_prefix: Option<String>,

    /// Gateway base URL, without a trailing /v1 [default: https://taotoken.net/api].
    pub api_base_url: Option<String>,

    /// Also set OPENAI_API_KEY and OPENAI_BASE_URL, for code that uses the openai SDK.
    pub openai_env: bool,

    /// Do not add any gateway env vars.
    pub no_api_env: bool,

    /// Add the gateway env and the istio opt-out to a `-f` manifest too (templates always get
    /// them; a manifest is sent as written unless this is set, as `kubectl create -f` sends it).
    pub inject_gateway_env: bool,

    /// Leave istio sidecar injection alone (by default pods get sidecar.istio.io/inject: "false",
    /// because the sidecar breaks the replicas' DNS/gRPC rendezvous).
    pub allow_istio_sidecar: bool,
}

/// How the gateway credentials reach the containers. `submit` uses it to check that the Secret
/// and key exist before writing the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// False with `--no-api-env`: no env vars are added.
    pub enabled: bool,
    pub secret_name: String,
    pub secret_key: String,
    pub env_prefix: String,
    /// Without a trailing `/`.
    pub base_url: String,
    /// The base URL was given (`--api-base-url` or values), so a Secret's stored one is ignored.
    pub base_url_given: bool,
    /// `<PREFIX>_BASE_URL` comes from the Secret's `base-url` key (see [`Self::use_stored_base_url`]).
    pub base_url_from_secret: bool,
    /// Also set OPENAI_API_KEY / OPENAI_BASE_URL (base URL + `/v1`).
    pub openai_env: bool,
    /// Annotate pod templates with `sidecar.istio.io/inject: "false"`.
    pub istio_opt_out: bool,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self::from_args(&GatewayOptions::default())
    }
}

impl GatewayConfig {
    pub fn from_args(a: &GatewayOptions) -> Self {
        GatewayConfig {
            enabled: !a.no_api_env,
            secret_name: a
                .api_secret
                .clone()
                .unwrap_or_else(|| DEFAULT_SECRET_NAME.into()),
            secret_key: a
                .api_secret_key
                .clone()
                .unwrap_or_else(|| DEFAULT_SECRET_KEY.into()),
            env_prefix: a
                .api_env_prefix
                .clone()
                .unwrap_or_else(|| DEFAULT_ENV_PREFIX.into()),
            base_url: a
                .api_base_url
                .as_deref()
                .unwrap_or(DEFAULT_BASE_URL)
                .trim_end_matches('/')
                .to_string(),
            base_url_given: a.api_base_url.is_some(),
            base_url_from_secret: false,
            openai_env: a.openai_env,
            istio_opt_out: !a.allow_istio_sidecar,
        }
    }

    /// Refuses what the cluster or the gateway would refuse later: a base URL that is not an
    /// absolute http(s) URL (it reaches the pods as-is), a Secret name that is not a DNS-1123
    /// subdomain, a key outside Secret key characters, a prefix that makes invalid env names.
    /// Checked before anything is rendered or sent (exit 2).
    pub fn check(&self) -> crate::error::Result<()> {
        use crate::error::Error;
        if !self.enabled {
            return Ok(());
        }
        let mut problems = Vec::new();
        let refused = absolute_http_url(&self.base_url).and_then(|()| {
            if has_userinfo(&self.base_url) {
                Err(USERINFO_REFUSED.to_string())
            } else {
                Ok(())
            }
        });
        if let Err(e) = refused {
            problems.push(format!(
                "--api-base-url {:?}: {e}; give an absolute http(s) URL without /v1, e.g. --api-base-url https://gateway.example.com/api",
                masked_url(&self.base_url)
            ));
        }
        if let Err(e) = crate::model::names::dns1123_subdomain(&self.secret_name) {
            problems.push(format!(
                "--api-secret {:?}: a Secret name {e}",
                self.secret_name
            ));
        }
        // Secret data keys: the API server's rule, owned by cluster::secret.
        if let Err(e) = check_key_name(&self.secret_key, "--api-secret-key") {
            problems.push(e.to_string());
        }
        if let Err(e) = check_env_prefix(&self.env_prefix) {
            problems.push(e);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Usage(problems.join("\n")))
        }
    }

    /// `<PREFIX>_API_KEY`.
    pub fn api_key_env(&self) -> String {
        format!("{}_API_KEY", self.env_prefix)
    }

    /// `<PREFIX>_BASE_URL`.
    pub fn base_url_env(&self) -> String {
        format!("{}_BASE_URL", self.env_prefix)
    }

    /// The OpenAI SDK wants the `/v1` in its base_url.
    pub fn openai_base_url(&self) -> String {
        format!("{}{}", self.base_url, self.v1_suffix())
    }

    /// What the base URL needs appended for the OpenAI SDK: `/v1` unless it already ends so.
    fn v1_suffix(&self) -> &'static str {
        if self.base_url.ends_with("/v1") {
            ""
        } else {
            "/v1"
        }
    }

    /// Points `<PREFIX>_BASE_URL` at the Secret's `base-url` key (whose value is `stored`), as
    /// `submit` does when the namespace's Secret names its own gateway and no URL was given.
    pub fn use_stored_base_url(&mut self, stored: &str) {
        self.base_url = stored.trim_end_matches('/').to_string();
        self.base_url_from_secret = true;
    }

    /// The env vars this config manages, in the order they are added.
    pub fn env_vars(&self) -> Vec<EnvVar> {
        if !self.enabled {
            return Vec::new();
        }
        let secret = |key: &str| {
            Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: self.secret_name.clone(),
                    key: key.to_string(),
                    optional: None,
                }),
                ..Default::default()
            })
        };
        let mut v = vec![
            EnvVar {
                name: self.api_key_env(),
                value_from: secret(&self.secret_key),
                value: None,
            },
            if self.base_url_from_secret {
                EnvVar {
                    name: self.base_url_env(),
                    value: None,
                    value_from: secret(BASE_URL_KEY),
                }
            } else {
                EnvVar {
                    name: self.base_url_env(),
                    value: Some(self.base_url.clone()),
                    value_from: None,
                }
            },
        ];
        if self.openai_env {
            v.push(EnvVar {
                name: "OPENAI_API_KEY".into(),
                value_from: secret(&self.secret_key),
                value: None,
            });
            // From the Secret: the kubelet expands $(VAR) from the variables defined before it
            // (core/v1 EnvVar.value), so the Secret stays the one source of the URL.
            let openai = if self.base_url_from_secret {
                format!("$({}){}", self.base_url_env(), self.v1_suffix())
            } else {
                self.openai_base_url()
            };
            v.push(EnvVar {
                name: "OPENAI_BASE_URL".into(),
                value: Some(openai),
                value_from: None,
            });
        }
        v
    }

    /// Names of the env vars holding the key (checked by validation for literal values).
    pub fn key_env_names(&self) -> Vec<String> {
        let mut v = vec![self.api_key_env()];
        if self.openai_env {
            v.push("OPENAI_API_KEY".into());
        }
        v
    }

    /// Adds the env vars to every `tensorflow` container (replacing same-named ones in place)
    /// and the istio opt-out annotation to every pod template.
    /// The same settings when nothing is injected (a `-f` manifest sent as written): no env,
    /// no annotation, so no Secret is required beyond what the manifest references itself.
    pub fn not_injected(mut self) -> Self {
        self.enabled = false;
        self.istio_opt_out = false;
        self
    }

    /// What [`Self::apply`] adds, in words (names and Secret references, never a value that
    /// could be a credential), or `None` when it adds nothing.
    pub fn describe_injection(&self) -> Option<String> {
        let mut parts = Vec::new();
        let vars = self.env_vars();
        if !vars.is_empty() {
            let list: Vec<String> = vars
                .iter()
                .map(|v| {
                    match v
                        .value_from
                        .as_ref()
                        .and_then(|f| f.secret_key_ref.as_ref())
                    {
                        Some(r) => format!("{} (Secret {} key {:?})", v.name, r.name, r.key),
                        None => v.name.clone(),
                    }
                })
                .collect();
            parts.push(format!(
                "to every {DEFAULT_CONTAINER_NAME:?} container the env vars {}",
                list.join(", ")
            ));
        }
        if self.istio_opt_out {
            parts.push(format!(
                "to every pod template the annotation {ISTIO_INJECT_ANNOTATION}: \"false\""
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; and "))
    }

    pub fn apply(&self, job: &mut TFJob) {
        let vars = self.env_vars();
        for spec in job.spec.tf_replica_specs.values_mut() {
            let tmpl = &mut spec.template;
            if self.istio_opt_out {
                tmpl.metadata
                    .get_or_insert_with(Default::default)
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(ISTIO_INJECT_ANNOTATION.into(), "false".into());
            }
            if vars.is_empty() {
                continue;
            }
            let Some(pod) = tmpl.spec.as_mut() else {
                continue;
            };
            for c in pod
                .containers
                .iter_mut()
                .filter(|c| c.name == DEFAULT_CONTAINER_NAME)
            {
                set_env(c, &vars);
            }
        }
    }
}

/// The `user[:password]` part of an absolute URL's authority, if it has one.
fn userinfo(u: &str) -> Option<&str> {
    let rest = u.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.rsplit_once('@').map(|(info, _)| info)
}

/// True when the URL carries a user name or password (`https://user:pass@host/api`).
pub fn has_userinfo(u: &str) -> bool {
    userinfo(u).is_some()
}

/// `u` for messages: any `user:password@` becomes `***@`, so no message ever shows it.
pub fn masked_url(u: &str) -> String {
    match userinfo(u) {
        Some(info) => u.replacen(&format!("{info}@"), "***@", 1),
        None => u.to_string(),
    }
}

/// Why a base URL with userinfo is refused where it would be written out (a pod spec's literal
/// env value, or printed back by `secret check`).
pub const USERINFO_REFUSED: &str = "it carries a user name or password (user:…@), which would be \
     written into every pod spec and printed back; keep credentials out of the URL (the key \
     belongs in the Secret)";

/// `http://host…` or `https://host…`, no whitespace or control characters anywhere.
pub fn absolute_http_url(u: &str) -> std::result::Result<(), String> {
    if let Some(c) = u.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("it contains {c:?}"));
    }
    let lower = u.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .ok_or_else(|| "it is not an absolute http:// or https:// URL".to_string())?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    if host.is_empty() || host.starts_with(':') {
        return Err("it has no host".into());
    }
    Ok(())
}

fn set_env(c: &mut Container, vars: &[EnvVar]) {
    let env = c.env.get_or_insert_with(Vec::new);
    for var in vars {
        match env.iter_mut().find(|e| e.name == var.name) {
            Some(slot) => *slot = var.clone(),
            None => env.push(var.clone()),
        }
    }
    // A duplicate of a managed name later in the list would win in the kubelet; drop it.
    for var in vars {
        let mut seen = false;
        env.retain(|e| {
            if e.name != var.name {
                return true;
            }
            let keep = !seen;
            seen = true;
            keep
        });
    }
}

/// `--api-env-prefix`: a prefix that makes valid env var names (`PREFIX_API_KEY`), else the
/// flag's error with a fixed spelling to use.
pub fn check_env_prefix(p: &str) -> std::result::Result<(), String> {
    let ok = !p.is_empty()
        && !p.starts_with(|c: char| c.is_ascii_digit())
        && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        return Ok(());
    }
    let fix: String = p
        .to_ascii_uppercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    Err(format!(
        "--api-env-prefix {p:?} does not make valid env var names; use letters, digits and '_', e.g. --api-env-prefix {}",
        if fix.is_empty() || fix.starts_with(|c: char| c.is_ascii_digit()) {
            "MY_GATEWAY".to_string()
        } else {
            fix
        }
    ))
}

/// Pure: the gateway prefixes a container's env names show (`X` of `X_API_KEY` or
/// `X_BASE_URL`), sorted, for a did-you-mean.
pub fn env_prefixes_in<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = names
        .into_iter()
        .filter_map(|n| {
            n.strip_suffix("_API_KEY")
                .or_else(|| n.strip_suffix("_BASE_URL"))
        })
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_key_names_follow_the_api_server() {
        for ok in ["api-key", "API_KEY", "key.txt", ".hidden", "a..b"] {
            check_key_name(ok, "--key").unwrap();
        }
        for bad in ["", ".", "..", "../x", "..x", "a/b", "with space", "ключ"] {
            let e = check_key_name(bad, "--api-secret-key").unwrap_err();
            assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid, "{bad:?}");
            assert!(e.to_string().contains("--api-secret-key"), "{e}");
        }
        check_key_name(&"k".repeat(253), "--key").unwrap();
        check_key_name(&"k".repeat(254), "--key").unwrap_err();
    }

    #[test]
    fn userinfo_is_found_and_masked() {
        assert!(has_userinfo("https://user:pass@host/api"));
        assert!(!has_userinfo("https://host/api?u=a@b"));
        assert_eq!(
            masked_url("https://user:pass@host/api"),
            "https://***@host/api"
        );
        assert_eq!(masked_url("https://host/api"), "https://host/api");
    }
    use crate::model::{ReplicaSpec, TFJobSpec};
    use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};

    fn job() -> TFJob {
        let mut job = TFJob::new("j", TFJobSpec::default());
        let containers = vec![
            Container {
                name: "tensorflow".into(),
                image: Some("img".into()),
                env: Some(vec![EnvVar {
                    name: "TAOTOKEN_API_KEY".into(),
                    value: Some("literal".into()),
                    value_from: None,
                }]),
                ..Default::default()
            },
            Container {
                name: "sidecar".into(),
                ..Default::default()
            },
        ];
        job.spec.tf_replica_specs.insert(
            "Worker".into(),
            ReplicaSpec {
                template: PodTemplateSpec {
                    spec: Some(PodSpec {
                        containers,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        job
    }

    #[test]
    fn injects_secret_ref_and_base_url_into_tensorflow_only() {
        let mut j = job();
        GatewayConfig::default().apply(&mut j);
        let v = serde_json::to_value(&j).unwrap();
        let w = &v["spec"]["tfReplicaSpecs"]["Worker"]["template"];
        let env = &w["spec"]["containers"][0]["env"];
        assert_eq!(env.as_array().unwrap().len(), 2);
        assert_eq!(
            env[0],
            serde_json::json!({"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "api-key"}}})
        );
        assert_eq!(
            env[1],
            serde_json::json!({"name": "TAOTOKEN_BASE_URL", "value": "https://taotoken.net/api"})
        );
        assert!(w["spec"]["containers"][1].get("env").is_none());
        assert_eq!(
            w["metadata"]["annotations"]["sidecar.istio.io/inject"],
            "false"
        );
    }

    #[test]
    fn a_stored_base_url_is_read_from_the_secret_in_the_pods() {
        let mut g = GatewayConfig::from_args(&GatewayOptions {
            openai_env: true,
            ..Default::default()
        });
        assert!(!g.base_url_given);
        g.use_stored_base_url("https://gw.team.example/api/");
        let env = serde_json::to_value(g.env_vars()).unwrap();
        assert_eq!(
            env[1],
            serde_json::json!({"name": "TAOTOKEN_BASE_URL", "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "base-url"}}})
        );
        assert_eq!(
            env[3],
            serde_json::json!({"name": "OPENAI_BASE_URL", "value": "$(TAOTOKEN_BASE_URL)/v1"})
        );
        assert!(
            GatewayConfig::from_args(&GatewayOptions {
                api_base_url: Some("https://x".into()),
                ..Default::default()
            })
            .base_url_given
        );
    }

    #[test]
    fn gateway_flags_the_cluster_would_refuse_are_usage_errors() {
        let g = |a: GatewayOptions| GatewayConfig::from_args(&a).check();
        assert!(g(GatewayOptions::default()).is_ok());
        for url in [
            "not a url",
            "javascript:alert(1)",
            "https://gw.example\n/api",
            "ftp://x",
            "https://",
        ] {
            let e = g(GatewayOptions {
                api_base_url: Some(url.into()),
                ..Default::default()
            })
            .unwrap_err();
            assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
            assert!(
                e.to_string().contains("e.g. --api-base-url https://"),
                "{url}: {e}"
            );
        }
        let e = g(GatewayOptions {
            api_secret: Some("t-bad_name!".into()),
            api_secret_key: Some("../x".into()),
            api_env_prefix: Some("my-gw".into()),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--api-secret \"t-bad_name!\""), "{e}");
        assert!(e.contains("--api-secret-key \"../x\""), "{e}");
        assert!(e.contains("e.g. --api-env-prefix MY_GW"), "{e}");
    }

    #[test]
    fn openai_and_opt_outs() {
        let args = GatewayOptions {
            openai_env: true,
            api_base_url: Some("https://gw.example/api/".into()),
            allow_istio_sidecar: true,
            ..Default::default()
        };
        let g = GatewayConfig::from_args(&args);
        assert_eq!(g.openai_base_url(), "https://gw.example/api/v1");
        let mut j = job();
        g.apply(&mut j);
        let v = serde_json::to_value(&j).unwrap();
        let t = &v["spec"]["tfReplicaSpecs"]["Worker"]["template"];
        assert_eq!(
            t["spec"]["containers"][0]["env"][3]["value"],
            "https://gw.example/api/v1"
        );
        assert!(t.get("metadata").is_none());

        let off = GatewayConfig::from_args(&GatewayOptions {
            no_api_env: true,
            ..Default::default()
        });
        let mut j = job();
        off.apply(&mut j);
        let v = serde_json::to_value(&j).unwrap();
        let env =
            &v["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"];
        assert_eq!(env[0]["value"], "literal");
    }
}
