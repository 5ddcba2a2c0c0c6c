//! `security`: mutual TLS between the nodes of a cluster (TiDB's `security.cluster-ssl-ca`,
//! `cluster-ssl-cert`, `cluster-ssl-key` and `cluster-verify-cn`), on rustls with ring.
//!
//! Every node holds a certificate the cluster's CA signed, and presents it both as a server
//! and as a client. A server accepts a connection only from a client whose certificate chains
//! to the CA, is valid now, and (when `cluster-verify-cn` lists names) carries one of those
//! names as its subject's common name; a client accepts a server whose certificate chains to
//! the CA and names the host it dialled (a DNS name or an IP address in its SANs).
//! [`ClusterTls::accept`] and [`ClusterTls::connect`] do the handshakes, each bounded by
//! [`HANDSHAKE_TIMEOUT`]; the `wire` module puts them under the nodes' servers and gRPC
//! channels.

mod cert_names;
mod wire;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig};
use tokio::net::TcpStream;

pub use cert_names::{common_name, subject_and_issuer};
pub use wire::{ServerStream, channel, cluster, connect, connect_lazy, incoming, install};

/// The longest a TLS handshake may take before the connection is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The ALPN protocol the nodes speak over TLS: HTTP/2 (gRPC), also HTTP/1.1 on status ports.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The cluster's TLS: what a node serves with and dials with.
#[derive(Clone)]
pub struct ClusterTls {
    pub server: Arc<ServerConfig>,
    pub client: Arc<ClientConfig>,
    /// The same for HTTP clients (ureq: `http_agent`).
    http: ureq::tls::TlsConfig,
}

impl std::fmt::Debug for ClusterTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterTls")
    }
}

impl ClusterTls {
    /// The configs from PEM files: the CA's certificate(s), this node's chain and its key;
    /// `allowed_cn` empty allows any client the CA signed. Errors name the file at fault.
    pub fn load(
        ca: &Path,
        cert: &Path,
        key: &Path,
        allowed_cn: Vec<String>,
    ) -> Result<ClusterTls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let ca_certs = read_certificates(ca)?;
        let mut roots = RootCertStore::empty();
        for c in &ca_certs {
            roots
                .add(c.clone())
                .map_err(|e| format!("{}: {e}", ca.display()))?;
        }
        let roots = Arc::new(roots);
        let chain = read_certificates(cert)?;
        let key_der = read_key(key)?;
        let http = http_tls(&ca_certs, &chain, key)?;

        let webpki = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| format!("{}: {e}", ca.display()))?;
        let verifier = Arc::new(NamedClients {
            inner: webpki,
            allowed_cn,
        });
        let versions = |e: rustls::Error| format!("TLS versions: {e}");
        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(versions)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key_der.clone_key())
            .map_err(|e| format!("{} and {}: {e}", cert.display(), key.display()))?;
        server.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();

        let mut client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(versions)?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key_der)
            .map_err(|e| format!("{} and {}: {e}", cert.display(), key.display()))?;
        client.alpn_protocols = vec![b"h2".to_vec()];
        Ok(ClusterTls {
            server: Arc::new(server),
            client: Arc::new(client),
            http,
        })
    }

    /// The server side of a handshake on `tcp`, within [`HANDSHAKE_TIMEOUT`].
    pub async fn accept(
        &self,
        tcp: TcpStream,
    ) -> io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
        let acceptor = tokio_rustls::TlsAcceptor::from(self.server.clone());
        timed(acceptor.accept(tcp)).await
    }

    /// Dials `addr` (`host:port`) and does the client side of a handshake, within
    /// [`HANDSHAKE_TIMEOUT`]; the server's certificate must name `host`.
    pub async fn connect(
        &self,
        addr: &str,
    ) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let host = host_of(addr);
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{addr}: {e}")))?;
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let connector = tokio_rustls::TlsConnector::from(self.client.clone());
        timed(connector.connect(name, tcp)).await
    }
}

/// ureq's TLS from the same certificates: the CA as the only root, this node's chain, and
/// its key read again from `key` (ureq takes a key only from PEM, or with a kind it does not
/// export).
fn http_tls(
    ca: &[CertificateDer<'static>],
    chain: &[CertificateDer<'static>],
    key: &Path,
) -> Result<ureq::tls::TlsConfig, String> {
    use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};
    let certificates = |certs: &[CertificateDer<'static>]| -> Vec<Certificate<'static>> {
        certs
            .iter()
            .map(|c| Certificate::from_der(c).to_owned())
            .collect()
    };
    let pem = std::fs::read(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let key = PrivateKey::from_pem(&pem).map_err(|e| format!("{}: {e}", key.display()))?;
    Ok(TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .root_certs(RootCerts::new_with_certs(&certificates(ca)))
        .client_cert(Some(ClientCert::new_with_certs(&certificates(chain), key)))
        .build())
}

/// An HTTP client for the nodes' status ports (and PD's API) that gives up after `timeout`
/// and hands back error statuses as answers: over the cluster's TLS when it is installed,
/// `http://` URLs then going out as `https://` with this process's certificate.
pub fn http_agent(timeout: Duration) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout));
    let config = match cluster() {
        Some(tls) => config.tls_config(tls.http.clone()).middleware(
            |mut request: ureq::http::Request<ureq::SendBody>,
             next: ureq::middleware::MiddlewareNext| {
                let uri = request.uri().to_string();
                if let Some(rest) = uri.strip_prefix("http://")
                    && let Ok(secure) = format!("https://{rest}").parse()
                {
                    *request.uri_mut() = secure;
                }
                next.handle(request)
            },
        ),
        None => config,
    };
    config.build().into()
}

/// The host part of `host:port` (`[v6]:port` too).
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

async fn timed<T>(handshake: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))?
}

/// The certificates of PEM file `path` (at least one); errors name the file.
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(certs)
}

/// The private key of PEM file `path`; errors name the file.
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The CA's verification of a client's chain, then `cluster-verify-cn`'s check of its name.
#[derive(Debug)]
struct NamedClients {
    inner: Arc<dyn ClientCertVerifier>,
    allowed_cn: Vec<String>,
}

impl ClientCertVerifier for NamedClients {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        if self.allowed_cn.is_empty() {
            return Ok(verified);
        }
        match common_name(end_entity) {
            Some(cn) if self.allowed_cn.contains(&cn) => Ok(verified),
            cn => Err(rustls::Error::General(format!(
                "client certificate's common name {cn:?} is not in cluster-verify-cn"
            ))),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests;
