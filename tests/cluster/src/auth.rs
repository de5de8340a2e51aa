//! Who is calling: the apiserver's authentication chain, reduced to what tests need.
//!
//! Modelled on kube-apiserver (k8s.io/apiserver and pkg/kubeapiserver/authenticator/config.go):
//! - the x509 authenticator runs first; a verified client certificate names the user by its
//!   subject CN and the groups by its O values
//!   (k8s.io/apiserver/pkg/authentication/request/x509/x509.go, `CommonNameUserConversion`;
//!   a certificate without a CN authenticates nobody);
//! - then a static bearer-token table, like `--token-auth-file` (token, user, uid, groups);
//! - a bearer token that matches nothing is an error, never "anonymous": the anonymous
//!   authenticator sits behind `union.NewFailOnError`, so a bad token is 401 even when
//!   anonymous requests are allowed;
//! - every authenticated user also gets the group `system:authenticated`
//!   (`group.NewAuthenticatedGroupAdder`).
//!
//! `requireAuth: true` is `--anonymous-auth=false`: a request with no credentials gets
//! 401 Unauthorized. With `requireAuth: false` (the default, so existing tests are unchanged)
//! a request with no credentials acts as the test user "tester".

use serde::{Deserialize, Serialize};

/// An authenticated identity (what RBAC and SelfSubjectAccessReview see).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct User {
    /// User name (certificate CN, token-file user).
    pub name: String,
    /// UID (token-file uid; empty for certificates).
    pub uid: String,
    /// Groups (certificate O values, token-file groups), plus `system:authenticated`.
    pub groups: Vec<String>,
}

/// The user every default credential maps to.
pub const TEST_USER: &str = "tester";

impl User {
    /// The default test user: `tester` in `system:masters`.
    pub fn tester() -> User {
        User {
            name: TEST_USER.into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    fn authenticated(mut self) -> User {
        if !self.groups.iter().any(|g| g == "system:authenticated") {
            self.groups.push("system:authenticated".into());
        }
        self
    }
}

/// One row of the static token table (`--token-auth-file`: token,user,uid,"group1,group2").
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StaticToken {
    /// The bearer token.
    pub token: String,
    /// User name.
    pub user: String,
    /// UID.
    pub uid: String,
    /// Groups.
    pub groups: Vec<String>,
}

/// Which credential the kubeconfig written at start carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum KubeconfigAuth {
    /// `token:` with the scenario's token (the default).
    #[default]
    Token,
    /// `client-certificate-data`/`client-key-data` for CN=tester, O=system:masters.
    ClientCert,
    /// An `exec` plugin (client.authentication.k8s.io/v1) that prints the scenario's token.
    Exec,
    /// No credentials.
    None,
}

/// Transport security and authentication of the test cluster.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Security {
    /// Serve HTTPS with a CA generated at start (server certificate for 127.0.0.1, ::1 and
    /// localhost). Client certificates signed by that CA authenticate their CN.
    pub tls: bool,
    /// `--anonymous-auth=false`: requests without credentials get 401.
    pub require_auth: bool,
    /// Extra bearer tokens besides the scenario's `token` (which is user "tester").
    pub tokens: Vec<StaticToken>,
    /// The credential in the kubeconfig written at start.
    pub kubeconfig: KubeconfigAuth,
}

/// A credential to put in a kubeconfig (`TestCluster::write_kubeconfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A static bearer token.
    Token(String),
    /// A client certificate issued by the cluster's CA: CN = `user`, O = each of `groups`.
    ClientCert {
        /// Subject CN.
        user: String,
        /// Subject O values.
        groups: Vec<String>,
    },
    /// An exec credential plugin (a script written next to the kubeconfig) whose
    /// ExecCredential status carries `token`.
    Exec {
        /// Token the plugin prints.
        token: String,
    },
    /// No user credentials at all.
    None,
}

/// Why a request was not authenticated: always 401 Unauthorized, as the apiserver does not
/// say which authenticator failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthenticated;

/// Runs the chain for one request: `cert` is the identity of a verified client certificate
/// (TLS only), `authorization` the raw header.
pub(crate) fn authenticate(
    security: &Security,
    scenario_token: &str,
    cert: Option<&User>,
    authorization: &str,
) -> Result<User, Unauthenticated> {
    if let Some(user) = cert {
        return Ok(user.clone().authenticated());
    }
    // The bearer authenticator takes "Bearer <token>" (scheme case-insensitive, as
    // k8s.io/apiserver/pkg/authentication/request/bearertoken does); other schemes are
    // ignored, which leaves the request without credentials.
    let token = authorization
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim());
    match token {
        Some(t) if !t.is_empty() => {
            if t == scenario_token {
                return Ok(User::tester());
            }
            security
                .tokens
                .iter()
                .find(|row| row.token == t)
                .map(|row| {
                    User {
                        name: row.user.clone(),
                        uid: row.uid.clone(),
                        groups: row.groups.clone(),
                    }
                    .authenticated()
                })
                .ok_or(Unauthenticated)
        }
        // "Bearer " with an empty token is invalid in the apiserver, not anonymous.
        Some(_) => Err(Unauthenticated),
        None if security.require_auth => Err(Unauthenticated),
        None => Ok(User::tester()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(require_auth: bool) -> Security {
        Security {
            require_auth,
            tokens: vec![StaticToken {
                token: "alice-token".into(),
                user: "alice".into(),
                uid: "1001".into(),
                groups: vec!["ml-team".into()],
            }],
            ..Default::default()
        }
    }

    #[test]
    fn certificate_wins_over_a_bad_token() {
        let alice = User {
            name: "alice".into(),
            uid: String::new(),
            groups: vec!["ml".into()],
        };
        let u = authenticate(&sec(true), "t", Some(&alice), "Bearer nope").unwrap();
        assert_eq!(u.name, "alice");
        assert_eq!(u.groups, vec!["ml", "system:authenticated"]);
    }

    #[test]
    fn token_table_rows_and_the_scenario_token() {
        let u = authenticate(&sec(true), "t", None, "Bearer alice-token").unwrap();
        assert_eq!((u.name.as_str(), u.uid.as_str()), ("alice", "1001"));
        assert_eq!(u.groups, vec!["ml-team", "system:authenticated"]);
        assert_eq!(
            authenticate(&sec(true), "t", None, "bearer t")
                .unwrap()
                .name,
            "tester"
        );
    }

    #[test]
    fn a_bad_token_is_401_even_when_anonymous_is_allowed() {
        assert_eq!(
            authenticate(&sec(false), "t", None, "Bearer wrong"),
            Err(Unauthenticated)
        );
        assert_eq!(
            authenticate(&sec(false), "t", None, "Bearer "),
            Err(Unauthenticated)
        );
    }

    #[test]
    fn no_credentials_is_401_only_when_auth_is_required() {
        assert_eq!(
            authenticate(&sec(true), "t", None, ""),
            Err(Unauthenticated)
        );
        assert_eq!(
            authenticate(&sec(true), "t", None, "Basic dXNlcjpwdw=="),
            Err(Unauthenticated)
        );
        assert_eq!(
            authenticate(&sec(false), "t", None, "").unwrap().name,
            "tester"
        );
    }
}
