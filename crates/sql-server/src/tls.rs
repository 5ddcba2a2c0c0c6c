//! TLS for MySQL clients (rustls): the server's certificate chain and key from
//! `security.ssl-cert` and `security.ssl-key` (PEM), or, with `security.auto-tls` and no
//! certificate given, a self-signed one made at start (as TiDB's `auto-tls`). With
//! `security.ssl-ca`, a client may present a certificate; it must chain to that CA, and an
//! account that says `REQUIRE X509` (or SUBJECT or ISSUER) needs one; [`transport`] names
//! what a handshake settled as MySQL does (OpenSSL's names). A client that does not ask for TLS is served in
//! the clear unless `security.require-secure-transport` is on (3159 at login).

use std::path::Path;
use std::sync::Arc;

use config::Config;
use opensrv_mysql::TlsSession;
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sql::users::Transport;

/// The TLS setup of the MySQL port, or `None` when no certificate is configured or made.
pub fn server_config(config: &Config) -> Result<Option<Arc<ServerConfig>>, String> {
    let (cert, key_file) = (
        config.str("security.ssl-cert"),
        config.str("security.ssl-key"),
    );
    let (chain, key) = if !cert.is_empty() {
        (
            security::read_certificates(Path::new(cert))?,
            security::read_key(Path::new(key_file))?,
        )
    } else if config.bool("security.auto-tls") {
        self_signed()?
    } else {
        return Ok(None);
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS versions: {e}"))?;
    let ca = config.str("security.ssl-ca");
    let builder = if ca.is_empty() {
        builder.with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        for c in security::read_certificates(Path::new(ca))? {
            roots
                .add(c)
                .map_err(|e| format!("security.ssl-ca {ca}: {e}"))?;
        }
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| format!("security.ssl-ca {ca}: {e}"))?;
        builder.with_client_cert_verifier(verifier)
    };
    let server = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("security.ssl-cert {cert} and security.ssl-key {key_file}: {e}"))?;
    Ok(Some(Arc::new(server)))
}

/// A certificate for `localhost` and this host's name, signed by its own key.
fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let mut names = vec!["localhost".to_string()];
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        names.push(host.trim().to_string());
    }
    let made =
        rcgen::generate_simple_self_signed(names).map_err(|e| format!("security.auto-tls: {e}"))?;
    let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    Ok((vec![made.cert.der().clone()], key.into()))
}

/// What a TLS handshake settled, in the words MySQL uses: OpenSSL's names of the protocol
/// and the cipher (`Ssl_version`, `Ssl_cipher`, `REQUIRE CIPHER`), the client certificate's
/// subject and issuer in OpenSSL's one-line form (`REQUIRE SUBJECT`, `ISSUER`). A
/// certificate is only there when `security.ssl-ca` verified it.
pub fn transport(session: &TlsSession) -> Transport {
    let certificate = session
        .peer_certificates
        .as_ref()
        .and_then(|chain| chain.first());
    Transport {
        secure: true,
        certified: certificate.is_some(),
        names: certificate.and_then(|der| security::subject_and_issuer(der)),
        version: session.version.replace("TLSv1_", "TLSv1."),
        cipher: openssl_cipher(session.cipher_suite).to_string(),
    }
}

/// The OpenSSL name of the rustls cipher suite `suite` (those rustls offers; another is left
/// as it is).
fn openssl_cipher(suite: &str) -> &str {
    match suite {
        "TLS13_AES_128_GCM_SHA256" => "TLS_AES_128_GCM_SHA256",
        "TLS13_AES_256_GCM_SHA384" => "TLS_AES_256_GCM_SHA384",
        "TLS13_CHACHA20_POLY1305_SHA256" => "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" => "ECDHE-RSA-CHACHA20-POLY1305",
        other => other,
    }
}
