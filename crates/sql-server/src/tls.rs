//! TLS for MySQL clients (rustls): the server's certificate chain and key from
//! `security.ssl-cert` and `security.ssl-key` (PEM), or, with `security.auto-tls` and no
//! certificate given, a self-signed one made at start (as TiDB's `auto-tls`). With
//! `security.ssl-ca`, a client may present a certificate; it must chain to that CA, and an
//! account that says `REQUIRE X509` needs one. A client that does not ask for TLS is served in
//! the clear unless `security.require-secure-transport` is on (3159 at login).

use std::path::Path;
use std::sync::Arc;

use config::Config;
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

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
