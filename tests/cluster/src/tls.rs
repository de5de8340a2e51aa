//! HTTPS for the test cluster: a CA generated per cluster, a serving certificate for
//! 127.0.0.1, ::1 and localhost, client certificates on demand, and the rustls server config
//! that asks for (but does not require) a client certificate, as kube-apiserver does with
//! `--client-ca-file`: clients without one fall through to the other authenticators.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::auth::User;

/// A PEM certificate and its PKCS#8 PEM key.
#[derive(Debug, Clone)]
pub struct CertPair {
    /// `-----BEGIN CERTIFICATE-----`.
    pub cert_pem: String,
    /// `-----BEGIN PRIVATE KEY-----`.
    pub key_pem: String,
}

/// The cluster's certificate authority and serving configuration.
pub struct Pki {
    ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
    server: Arc<rustls::ServerConfig>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A fresh self-signed CA named `cn`.
fn new_ca(cn: &str) -> (String, Issuer<'static, KeyPair>, CertificateDer<'static>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().expect("CA key");
    let cert = params.self_signed(&key).expect("self-signed CA");
    (cert.pem(), Issuer::new(params, key), cert.der().clone())
}

/// PEM of a CA that signed nothing this cluster serves (for "wrong CA" tests).
pub fn unrelated_ca_pem() -> String {
    new_ca("unrelated-ca").0
}

impl Pki {
    /// Generates the CA and the serving certificate.
    pub fn generate() -> Pki {
        let (ca_pem, issuer, ca_der) = new_ca("tfjob-testcluster-ca");
        let mut params = CertificateParams::new(vec![
            "127.0.0.1".to_string(),
            "::1".to_string(),
            "localhost".to_string(),
        ])
        .expect("server params");
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate().expect("server key");
        let cert = params.signed_by(&key, &issuer).expect("server cert");

        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca_der).expect("CA into root store");
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider(),
        )
        .allow_unauthenticated()
        .build()
        .expect("client verifier");
        let mut server = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("server TLS config");
        // The server speaks HTTP/1.1 only; offering it by ALPN keeps Go clients off h2.
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Pki {
            ca_pem,
            issuer,
            server: Arc::new(server),
        }
    }

    /// The CA certificate (what `certificate-authority-data` carries).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The acceptor for incoming connections.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.server.clone())
    }

    /// A client certificate for `user` in `groups` (CN and O, as kubeadm issues them).
    /// rcgen keeps one value per attribute type, so at most two groups: the second O is
    /// written under its OID (2.5.4.10) directly.
    pub fn issue_client(&self, user: &str, groups: &[String]) -> CertPair {
        assert!(
            groups.len() <= 2,
            "tfjob-testcluster issues client certificates with at most two groups (O values)"
        );
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
        params.distinguished_name.push(DnType::CommonName, user);
        if let Some(g) = groups.first() {
            params
                .distinguished_name
                .push(DnType::OrganizationName, g.as_str());
        }
        if let Some(g) = groups.get(1) {
            params
                .distinguished_name
                .push(DnType::CustomDnType(vec![2, 5, 4, 10]), g.as_str());
        }
        // The apiserver verifies client certificates for ExtKeyUsageClientAuth
        // (x509.DefaultVerifyOptions in k8s.io/apiserver/pkg/authentication/request/x509).
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate().expect("client key");
        let cert = params.signed_by(&key, &self.issuer).expect("client cert");
        CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// The identity of a verified client certificate: CN is the user, each O a group
/// (k8s.io/apiserver/pkg/authentication/request/x509/x509.go, `CommonNameUserConversion`).
/// No CN, no user.
pub fn cert_user(der: &[u8]) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(User {
        name,
        uid: String::new(),
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_certificate_subject_names_user_and_groups() {
        let pki = Pki::generate();
        let pair = pki.issue_client("alice", &["ml-team".into(), "system:masters".into()]);
        let der = rustls::pki_types::pem::PemObject::from_pem_slice(pair.cert_pem.as_bytes())
            .map(|c: CertificateDer<'static>| c.to_vec())
            .unwrap();
        let user = cert_user(&der).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, vec!["ml-team", "system:masters"]);
    }

    #[test]
    fn a_certificate_without_cn_authenticates_nobody() {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "ml-team");
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(cert_user(cert.der()), None);
    }
}
