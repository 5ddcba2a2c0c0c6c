//! The gRPC server on `server.addr`: its own tokio runtime with `server.grpc-concurrency`
//! threads (`grpc-server-<n>`), gzip accepted always and used for replies when
//! `server.grpc-compression-type` says so (deflate too). Binding happens in [`GrpcServer::start`],
//! so a port in use stops the node at start-up with the address in the error. The same
//! service also listens on the address's abstract unix socket ([`proto::local_socket`]) for
//! clients on this machine, unless `server.local-socket` is off.

use std::thread::JoinHandle;

use base::limits::KV_STREAM_WINDOW_BYTES;

use node::NodeError;
use proto::kv::kv_server::KvServer;
use proto::raft::raft_transport_server::RaftTransportServer;
use tonic::codec::CompressionEncoding;

use crate::raft_transport::RaftService;
use crate::service::KvService;

/// The largest gRPC message of Raft traffic accepted: a batch of Raft messages, which the
/// sender cuts at about 16 MiB (`raft_transport::RAFT_MSG_BATCH_BYTES_MAX`) plus one message.
/// Snapshot files travel beside them in 1 MiB chunks.
const RAFT_MESSAGE_BYTES_MAX: usize = 64 << 20;

pub struct GrpcServer {
    stop: tokio::sync::oneshot::Sender<()>,
    stopping: std::sync::Arc<tokio::sync::watch::Sender<bool>>,
    thread: JoinHandle<()>,
}

fn reply_encoding(name: &str) -> Option<CompressionEncoding> {
    match name {
        "gzip" => Some(CompressionEncoding::Gzip),
        "deflate" => Some(CompressionEncoding::Deflate),
        _ => None,
    }
}

impl GrpcServer {
    /// Serves `service`, and `raft` (Raft messages from other kv nodes) on TCP when given.
    pub fn start(
        config: &config::Config,
        service: KvService,
        raft: Option<RaftService>,
    ) -> Result<GrpcServer, NodeError> {
        let addr = config.str("server.addr").to_string();
        let bind_error = |error| NodeError::Bind {
            addr: addr.clone(),
            what: "gRPC port",
            error,
        };
        let listener = std::net::TcpListener::bind(&addr).map_err(bind_error)?;
        listener.set_nonblocking(true).map_err(bind_error)?;
        let local = match config.bool("server.local-socket") {
            false => None,
            true => proto::local_socket::bind(&addr)
                .inspect_err(|e| {
                    tracing::warn!(addr = %addr, "no unix socket for local clients, TCP only: {e}")
                })
                .ok(),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.int("server.grpc-concurrency") as usize)
            .thread_name_fn(|| {
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                format!("grpc-server-{n}")
            })
            .enable_all()
            .build()
            .map_err(NodeError::Runtime)?;
        let stopping = service.stopping.clone();
        let mut server = KvServer::new(service)
            .accept_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Deflate)
            .max_decoding_message_size(64 << 20);
        if let Some(encoding) = reply_encoding(config.str("server.grpc-compression-type")) {
            server = server.send_compressed(encoding);
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("grpc-main".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("a bound listener joins the runtime");
                    let (begin, deadline) = node::graceful_with_deadline(async {
                        let _ = stopped.await;
                    });
                    // Both listeners begin their graceful shutdown together.
                    let (shut, shut_rx) = tokio::sync::watch::channel(false);
                    let shutdown = move || {
                        let mut rx = shut_rx.clone();
                        async move {
                            let _ = rx.wait_for(|s| *s).await;
                        }
                    };
                    let builder = || {
                        tonic::transport::Server::builder()
                            .tcp_nodelay(true)
                            .initial_stream_window_size(KV_STREAM_WINDOW_BYTES)
                            .initial_connection_window_size(KV_STREAM_WINDOW_BYTES)
                    };
                    let raft = raft.map(|r| {
                        RaftTransportServer::new(r)
                            .max_decoding_message_size(RAFT_MESSAGE_BYTES_MAX)
                    });
                    let router = builder()
                        .add_service(server.clone())
                        .add_optional_service(raft);
                    let tcp = async {
                        match security::cluster() {
                            Some(tls) => {
                                let incoming = security::incoming(listener, tls);
                                router
                                    .serve_with_incoming_shutdown(incoming, shutdown())
                                    .await
                            }
                            None => {
                                // Replies go out at once: with Nagle on, a reply split into
                                // frames waits for the client's delayed ACK (40 ms). The
                                // builder's tcp_nodelay only reaches listeners it opens itself,
                                // so set it on each accepted stream.
                                let incoming = tokio_stream::StreamExt::map(
                                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                                    |stream| {
                                        stream.inspect(|s| {
                                            let _ = s.set_nodelay(true);
                                        })
                                    },
                                );
                                router
                                    .serve_with_incoming_shutdown(incoming, shutdown())
                                    .await
                            }
                        }
                    };
                    let unix = async {
                        let Some(local) = local else { return Ok(()) };
                        let listener = tokio::net::UnixListener::from_std(local)
                            .expect("a bound unix listener joins the runtime");
                        builder()
                            .add_service(server)
                            .serve_with_incoming_shutdown(
                                tokio_stream::wrappers::UnixListenerStream::new(listener),
                                shutdown(),
                            )
                            .await
                    };
                    // Ends at the first listener's failure, or once both have shut down.
                    let serving = async {
                        tokio::try_join!(tcp, unix, async {
                            begin.await;
                            shut.send_replace(true);
                            Ok(())
                        })
                    };
                    tokio::select! {
                        result = serving => if let Err(e) = result {
                            tracing::error!("gRPC server stopped: {e}");
                        },
                        () = deadline => {}
                    }
                });
            })
            .expect("the OS starts the gRPC thread");
        tracing::info!(addr = %addr, "gRPC service listening");
        Ok(GrpcServer {
            stop,
            stopping,
            thread,
        })
    }

    /// Stops accepting, lets requests in flight finish (for at most
    /// [`node::SHUTDOWN_GRACE`]), and joins the runtime.
    pub fn shutdown(self) {
        // Batch streams outlive the server's GOAWAY: tell them to stop taking requests.
        self.stopping.send_replace(true);
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
