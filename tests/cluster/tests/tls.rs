//! HTTPS and authentication with an unmodified kube-rs client: client certificate (CN/O),
//! static token table, exec credential plugin, anonymous 401, wrong CA.

mod common;

use std::path::Path;

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::json;
use tfjob_testcluster::{
    Credential, KubeconfigAuth, Rbac, RbacRule, Scenario, TestCluster, unrelated_ca_pem,
};

async fn client_from(path: &Path) -> Result<Client, String> {
    let kc = Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    Client::try_from(cfg).map_err(|e| e.to_string())
}

async fn list_secrets(path: &Path) -> Result<usize, kube::Error> {
    let client = client_from(path).await.expect("client");
    let api: Api<Secret> = Api::default_namespaced(client);
    api.list(&ListParams::default())
        .await
        .map(|l| l.items.len())
}

fn users_seen(c: &TestCluster) -> Vec<String> {
    c.requests().into_iter().map(|r| r.user).collect()
}

fn tls_scenario() -> Scenario {
    Scenario::default()
        .with_tls()
        .with_required_auth()
        .with_token("bob-token", "bob", &["ml-team"])
}

#[tokio::test(flavor = "multi_thread")]
async fn https_with_the_default_kubeconfig_uses_the_ca_and_token() {
    let c = TestCluster::start(tls_scenario());
    assert!(c.url().starts_with("https://127.0.0.1:"), "{}", c.url());
    let text = std::fs::read_to_string(c.kubeconfig()).unwrap();
    assert!(text.contains("certificate-authority-data:"), "{text}");
    assert_eq!(list_secrets(c.kubeconfig()).await.unwrap(), 0);
    assert_eq!(users_seen(&c), vec!["tester"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_certificate_cn_is_the_user_and_feeds_rbac() {
    let c = TestCluster::start(tls_scenario());
    c.set_rbac(Rbac {
        deny: vec![RbacRule {
            user: Some("alice".into()),
            verb: Some("create".into()),
            resource: Some("secrets".into()),
            namespace: None,
        }],
    });
    let alice = c.write_kubeconfig(
        "alice",
        &Credential::ClientCert {
            user: "alice".into(),
            groups: vec!["ml-team".into()],
        },
    );
    let text = std::fs::read_to_string(&alice).unwrap();
    assert!(text.contains("client-certificate-data:") && text.contains("client-key-data:"));
    let client = client_from(&alice).await.unwrap();
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    assert_eq!(
        secrets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        0
    );
    let s: Secret = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "k"}}),
    )
    .unwrap();
    match secrets.create(&PostParams::default(), &s).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
            assert!(
                e.message.contains("User \"alice\" cannot create"),
                "{}",
                e.message
            );
        }
        other => panic!("expected 403 for alice, got {other:?}"),
    }
    let ssar: SelfSubjectAccessReview = serde_json::from_value(json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "secrets", "namespace": "default"}}
    }))
    .unwrap();
    let review = Api::<SelfSubjectAccessReview>::all(client)
        .create(&PostParams::default(), &ssar)
        .await
        .unwrap();
    let status = review.status.unwrap();
    assert!(status.allowed);
    assert!(status.reason.unwrap_or_default().contains("User \"alice\""));
    assert!(
        users_seen(&c).iter().all(|u| u == "alice"),
        "{:?}",
        users_seen(&c)
    );
    // The default user is not affected by alice's denial.
    c.clear_requests();
    let tester: Api<Secret> = Api::default_namespaced(client_from(c.kubeconfig()).await.unwrap());
    tester.create(&PostParams::default(), &s).await.unwrap();
    assert_eq!(users_seen(&c), vec!["tester"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn token_table_and_exec_plugin_authenticate() {
    let c = TestCluster::start(tls_scenario());
    let bob = c.write_kubeconfig("bob", &Credential::Token("bob-token".into()));
    assert_eq!(list_secrets(&bob).await.unwrap(), 0);
    let exec = c.write_kubeconfig(
        "exec",
        &Credential::Exec {
            token: "bob-token".into(),
        },
    );
    let text = std::fs::read_to_string(&exec).unwrap();
    assert!(
        text.contains("apiVersion: client.authentication.k8s.io/v1"),
        "{text}"
    );
    assert!(
        !text.contains("bob-token"),
        "the token lives in the plugin, not the kubeconfig"
    );
    assert_eq!(list_secrets(&exec).await.unwrap(), 0);
    assert_eq!(users_seen(&c), vec!["bob", "bob"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn kubeconfig_auth_exec_and_client_cert_at_start() {
    for auth in [KubeconfigAuth::Exec, KubeconfigAuth::ClientCert] {
        let c = TestCluster::start(tls_scenario().with_kubeconfig_auth(auth));
        assert_eq!(list_secrets(c.kubeconfig()).await.unwrap(), 0, "{auth:?}");
        assert_eq!(users_seen(&c), vec!["tester"], "{auth:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn anonymous_and_bad_tokens_get_401_unauthorized() {
    let c = TestCluster::start(tls_scenario());
    for cred in [Credential::None, Credential::Token("wrong".into())] {
        let path = c.write_kubeconfig("k", &cred);
        match list_secrets(&path).await {
            Err(kube::Error::Api(e)) => assert_eq!(
                (e.code, e.reason.as_str(), e.message.as_str()),
                (401, "Unauthorized", "Unauthorized"),
                "{cred:?}"
            ),
            other => panic!("{cred:?}: expected 401, got {other:?}"),
        }
    }
    // Without --anonymous-auth=false, no credentials is the test user; a bad token still 401.
    let open = TestCluster::start(Scenario::default().with_tls());
    let none = open.write_kubeconfig("none", &Credential::None);
    assert_eq!(list_secrets(&none).await.unwrap(), 0);
    let bad = open.write_kubeconfig("bad", &Credential::Token("wrong".into()));
    assert!(matches!(list_secrets(&bad).await, Err(kube::Error::Api(e)) if e.code == 401));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unrelated_ca_fails_the_handshake() {
    let c = TestCluster::start(tls_scenario());
    let path = c.write_kubeconfig_trusting(
        "wrong-ca",
        &Credential::Token("test-token".into()),
        Some(&unrelated_ca_pem()),
    );
    let err = list_secrets(&path).await.unwrap_err();
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "no HTTP answer expected: {err:?}"
    );
    let chain = format!("{err:?}");
    assert!(chain.contains("UnknownIssuer"), "{chain}");
    assert!(c.requests().is_empty(), "nothing reached the API handlers");
}
