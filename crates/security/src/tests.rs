//! Handshakes over loopback between a server and clients holding every kind of certificate
//! the cluster must refuse, and the one it must accept.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

struct Ca {
    dir: PathBuf,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(dir: &Path, name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), issuer.pem()).unwrap();
        Ca {
            dir: dir.to_path_buf(),
            issuer,
        }
    }

    /// A certificate for 127.0.0.1 named `cn` (expired since 2021 if `expired`): cert and key files.
    fn issue(&self, cn: &str, expired: bool) -> (PathBuf, PathBuf) {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (c, k) = (
            self.dir.join(format!("{cn}-{expired}.pem")),
            self.dir.join(format!("{cn}-{expired}-key.pem")),
        );
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (c, k)
    }
}

/// A self-signed certificate (no CA at all): cert and key files.
fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let (c, k) = (dir.join("self.pem"), dir.join("self-key.pem"));
    std::fs::write(&c, made.cert.pem()).unwrap();
    std::fs::write(&k, made.signing_key.serialize_pem()).unwrap();
    (c, k)
}

/// A server on loopback that answers each byte it reads with the same byte; its address.
async fn echo_server(tls: ClusterTls) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let tls = tls.clone();
            tokio::spawn(async move {
                if let Ok(mut s) = tls.accept(tcp).await {
                    let mut b = [0u8; 1];
                    while s.read_exact(&mut b).await.is_ok() {
                        let _ = s.write_all(&b).await;
                    }
                }
            });
        }
    });
    addr
}

/// Whether a client with `tls` gets a byte echoed by the server at `addr`.
async fn echoed(tls: &ClusterTls, addr: &str) -> bool {
    let Ok(mut s) = tls.connect(addr).await else {
        return false;
    };
    // TLS 1.3: a refused client certificate shows on the first read, not in the handshake.
    if s.write_all(b"x").await.is_err() {
        return false;
    }
    let mut b = [0u8; 1];
    s.read_exact(&mut b).await.is_ok() && b == *b"x"
}

#[tokio::test]
async fn only_a_certificate_of_the_cluster_ca_that_is_valid_and_named_gets_in() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new(d, "cluster-ca");
    let stranger = Ca::new(d, "stranger-ca");
    let ca_file = d.join("cluster-ca.pem");
    let load = |(c, k): (PathBuf, PathBuf), ca: &Path| {
        ClusterTls::load(ca, &c, &k, vec!["atoll-node".into()]).unwrap()
    };
    let server = load(ca.issue("atoll-node", false), &ca_file);
    let addr = echo_server(server).await;

    let node = load(ca.issue("atoll-node", false), &ca_file);
    assert!(echoed(&node, &addr).await, "the positive control");
    let probes = [
        ("wrong CN", load(ca.issue("someone-else", false), &ca_file)),
        ("expired", load(ca.issue("atoll-node", true), &ca_file)),
        (
            "another CA",
            load(stranger.issue("atoll-node", false), &ca_file),
        ),
        ("self-signed", load(self_signed(d), &ca_file)),
    ];
    for (case, client) in &probes {
        for _ in 0..100 {
            assert!(!echoed(client, &addr).await, "{case} got in");
        }
    }
    // A client that does not trust the cluster's CA refuses the server in turn.
    let distrusting = load(ca.issue("atoll-node", false), &d.join("stranger-ca.pem"));
    assert!(!echoed(&distrusting, &addr).await);
    // Plaintext: no answer.
    let mut plain = TcpStream::connect(&addr).await.unwrap();
    plain.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut buf)).await;
    assert!(!buf.starts_with(b"HTTP"), "{buf:?}");
}

#[test]
fn bad_files_are_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let e = ClusterTls::load(&garbage, &garbage, &garbage, vec![]).unwrap_err();
    assert!(e.contains("garbage.pem: no PEM certificate"), "{e}");
    let e =
        ClusterTls::load(Path::new("/nonexistent.pem"), &garbage, &garbage, vec![]).unwrap_err();
    assert!(e.starts_with("/nonexistent.pem: "), "{e}");
}

#[test]
fn the_common_name_is_the_subjects_not_the_issuers() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "the-ca");
    let (cert, _) = ca.issue("the-node", false);
    let der = CertificateDer::from_pem_file(&cert).unwrap();
    assert_eq!(common_name(&der).as_deref(), Some("the-node"));
    assert_eq!(common_name(b"\x30\x03\x02\x01"), None);
    assert_eq!(
        subject_and_issuer(&der),
        Some(("/CN=the-node".to_string(), "/CN=the-ca".to_string()))
    );
}

#[test]
fn names_read_as_openssls_one_line_form() {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CountryName, "SE");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "Acme Ltd");
    params
        .distinguished_name
        .push(DnType::CustomDnType(vec![1, 3, 6, 1, 4, 1, 99999, 1]), "x");
    params.distinguished_name.push(DnType::CommonName, "client");
    params.distinguished_name.push(
        DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
        "a@b.c",
    );
    let key = KeyPair::generate().unwrap();
    let der = params.self_signed(&key).unwrap().der().to_vec();
    // As `openssl x509 -noout -subject -nameopt compat` prints it.
    let expected = "/C=SE/O=Acme Ltd/1.3.6.1.4.1.99999.1=x/CN=client/emailAddress=a@b.c";
    let expected = expected.to_string();
    assert_eq!(subject_and_issuer(&der), Some((expected.clone(), expected)));
    assert_eq!(subject_and_issuer(&der[..der.len() / 2]), None);

    // Bytes outside printable ASCII as `\xHH`, as `openssl x509 -subject -nameopt compat`
    // prints a certificate made with `openssl req -utf8 -subj "/CN=Jörg/O=Acme"`.
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, "Jörg");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "Acme");
    let der = params.self_signed(&key).unwrap().der().to_vec();
    let expected = "/CN=J\\xC3\\xB6rg/O=Acme".to_string();
    assert_eq!(subject_and_issuer(&der), Some((expected.clone(), expected)));
    assert_eq!(common_name(&der).as_deref(), Some("Jörg"));
}
