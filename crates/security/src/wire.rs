//! The cluster's TLS on the wire: the process's one [`ClusterTls`] ([`install`], [`cluster`]),
//! accepted streams for servers ([`incoming`]), and gRPC channels that dial through it
//! ([`connect`], [`connect_lazy`]), plain TCP when the cluster has no TLS.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::{Channel, Endpoint};

use crate::ClusterTls;

/// Accepted connections waiting for a server to take them, at most.
const ACCEPTED_BACKLOG: usize = 128;

static CLUSTER: OnceLock<ClusterTls> = OnceLock::new();

/// Makes `tls` the process's cluster TLS: every server and client of the process uses it
/// from now on (a node has one identity). A second call is ignored.
pub fn install(tls: ClusterTls) {
    let _ = CLUSTER.set(tls);
}

/// The process's cluster TLS, if [`install`]ed.
pub fn cluster() -> Option<&'static ClusterTls> {
    CLUSTER.get()
}

/// A connection a server accepted over the cluster's TLS.
pub struct ServerStream(tokio_rustls::server::TlsStream<TcpStream>);

impl ServerStream {
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.0.get_ref().0.peer_addr().ok()
    }
}

impl AsyncRead for ServerStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for ServerStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

impl tonic::transport::server::Connected for ServerStream {
    type ConnectInfo = Option<SocketAddr>;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.peer_addr()
    }
}

/// The connections `listener` accepts, each once its TLS handshake with `tls` succeeded;
/// handshakes run side by side (a slow or silent client holds up no other), and a failed one
/// is logged and dropped.
pub fn incoming(
    listener: TcpListener,
    tls: &'static ClusterTls,
) -> tokio_stream::wrappers::ReceiverStream<io::Result<ServerStream>> {
    let (tx, rx) = tokio::sync::mpsc::channel(ACCEPTED_BACKLOG);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            if tx.is_closed() {
                return;
            }
            let tx = tx.clone();
            tokio::spawn(async move {
                match tls.accept(tcp).await {
                    Ok(stream) => {
                        let _ = tx.send(Ok(ServerStream(stream))).await;
                    }
                    Err(e) => tracing::info!(%peer, "TLS handshake refused: {e}"),
                }
            });
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// A channel to `endpoint` (an `http://host:port` URI), connected now: over the cluster's TLS
/// when it is installed.
pub async fn connect(endpoint: Endpoint) -> Result<Channel, tonic::transport::Error> {
    match cluster() {
        Some(tls) => endpoint.connect_with_connector(connector(tls)).await,
        None => endpoint.connect().await,
    }
}

/// As [`connect`], connecting on first use.
pub fn connect_lazy(endpoint: Endpoint) -> Channel {
    match cluster() {
        Some(tls) => endpoint.connect_with_connector_lazy(connector(tls)),
        None => endpoint.connect_lazy(),
    }
}

/// A channel to `url` (`http://host:port`), as [`connect`].
pub async fn channel(url: impl Into<String>) -> Result<Channel, tonic::transport::Error> {
    connect(Endpoint::from_shared(url.into())?).await
}

type Connector = tower::util::ServiceFn<
    Box<
        dyn Fn(
                tonic::codegen::http::Uri,
            ) -> Pin<
                Box<
                    dyn Future<
                            Output = io::Result<
                                hyper_util::rt::TokioIo<tokio_rustls::client::TlsStream<TcpStream>>,
                            >,
                        > + Send,
                >,
            > + Send
            + Sync,
    >,
>;

fn connector(tls: &'static ClusterTls) -> Connector {
    tower::service_fn(Box::new(move |uri: tonic::codegen::http::Uri| {
        Box::pin(async move {
            let authority = uri
                .authority()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no host in the URI"))?
                .to_string();
            tls.connect(&authority)
                .await
                .map(hyper_util::rt::TokioIo::new)
        })
    }))
}
