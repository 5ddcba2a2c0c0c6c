//! Start-up and shutdown of a role process, in this order:
//!
//! 1. open and lock the data dir (a second process on it stops here);
//! 2. start logging into it;
//! 3. bind the status port (a port in use stops here, before anything else listens);
//! 4. serve until SIGINT or SIGTERM, then stop accepting and return.
//!
//! Every failure comes back as a [`NodeError`] that the binary prints as one line.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use config::{Config, ConfigController, Role};
use prometheus::Registry;

use crate::data_dir::DataDir;
use crate::error::NodeError;
use crate::status_server::{self, StatusState};
use crate::{BUILD, logging, metrics};

pub struct Node {
    pub role: Role,
    pub data_dir: DataDir,
    pub controller: Arc<ConfigController>,
    pub registry: Registry,
    status_listener: std::net::TcpListener,
    status_addr: String,
    /// The directories whose disks `/debug/host` reports, by knob name.
    dirs: Vec<(String, PathBuf)>,
}

/// With `security.cluster-ssl-*` set, makes the cluster's TLS the process's: its status port
/// and gRPC servers then accept only clients the cluster's CA certified, and its clients dial
/// every other node through TLS (crate `security`).
fn install_cluster_tls(config: &Config) -> Result<(), NodeError> {
    let ca = config.str("security.cluster-ssl-ca");
    if ca.is_empty() {
        return Ok(());
    }
    let tls = security::ClusterTls::load(
        Path::new(ca),
        Path::new(config.str("security.cluster-ssl-cert")),
        Path::new(config.str("security.cluster-ssl-key")),
        config.list("security.cluster-verify-cn").to_vec(),
    )
    .map_err(NodeError::Tls)?;
    security::install(tls);
    tracing::info!("cluster TLS on: every node port and connection uses the cluster's CA");
    Ok(())
}

impl Node {
    pub fn start(config: Config) -> Result<Node, NodeError> {
        let role = config.role();
        let data_dir = DataDir::open(Path::new(config.str(role.data_dir_knob())))?;
        logging::init(role.name(), data_dir.path())?;
        install_cluster_tls(&config)?;
        let status_addr = config.status_address();
        let status_listener = status_server::bind(&status_addr)?;
        tracing::info!(
            role = role.name(),
            version = BUILD.version,
            git_hash = BUILD.git_hash,
            cpu_cores = config.resources().cpu_cores,
            memory_bytes = config.resources().memory_bytes,
            data_dir = %data_dir.path().display(),
            status_addr = %status_addr,
            "starting"
        );
        let mut dirs = vec![(
            role.data_dir_knob().to_string(),
            data_dir.path().to_path_buf(),
        )];
        if role == Role::Kv && !config.str("raft-engine.dir").is_empty() {
            let raft_dir = PathBuf::from(config.str("raft-engine.dir"));
            dirs.push(("raft-engine.dir".to_string(), raft_dir));
        }
        Ok(Node {
            role,
            data_dir,
            controller: ConfigController::new(config),
            registry: metrics::new_registry(),
            status_listener,
            status_addr,
            dirs,
        })
    }

    pub fn status_addr(&self) -> &str {
        &self.status_addr
    }

    /// Serves the status port until SIGINT or SIGTERM. `serving` says, for `/status` and the
    /// log, what else this process offers.
    pub fn run_until_signal(self, serving: &str) -> Result<(), NodeError> {
        self.run_with_routes(serving, None)
    }

    /// As [`Node::run_until_signal`], with `extra` routes served on the status port too.
    pub fn run_with_routes(
        self,
        serving: &str,
        extra: Option<axum::Router>,
    ) -> Result<(), NodeError> {
        self.run_with_routes_and_stop(serving, extra, || async {})
    }

    /// As [`Node::run_with_routes`]; on SIGINT or SIGTERM, `before_stop` runs (inside the
    /// status runtime, while everything still serves) before the server stops.
    pub fn run_with_routes_and_stop<F>(
        self,
        serving: &str,
        extra: Option<axum::Router>,
        before_stop: impl FnOnce() -> F + Send + 'static,
    ) -> Result<(), NodeError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name_fn(|| {
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                format!(
                    "status-{}",
                    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                )
            })
            .enable_all()
            .build()
            .map_err(NodeError::Runtime)?;
        let state = Arc::new(StatusState {
            role: self.role,
            controller: self.controller.clone(),
            registry: self.registry.clone(),
            started: SystemTime::now(),
            serving: serving.to_string(),
            dirs: self.dirs,
        });
        tracing::info!(status_addr = %self.status_addr, serving, "ready");
        let result = runtime.block_on(async {
            let signal = shutdown_signal();
            let stop = async move {
                signal.await;
                before_stop().await;
            };
            status_server::serve(self.status_listener, state, extra, stop).await
        });
        tracing::info!(role = self.role.name(), "stopped");
        result.map_err(NodeError::Runtime)
    }
}

/// How long a stopping server waits for open requests and streams (a client's TSO stream
/// never ends by itself) before it closes them.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Splits `signal` into the future to hand a server's graceful shutdown and one that
/// resolves [`SHUTDOWN_GRACE`] after it: race the server against the second, so a client
/// that keeps a stream open cannot keep the process alive.
pub fn graceful_with_deadline(
    signal: impl Future<Output = ()> + Send + 'static,
) -> (
    impl Future<Output = ()> + Send + 'static,
    impl Future<Output = ()> + Send + 'static,
) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let begin = async move {
        signal.await;
        let _ = tx.send(());
    };
    let deadline = async move {
        if rx.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
            tracing::warn!(
                "requests still open {SHUTDOWN_GRACE:?} after shutdown began; closing them"
            );
        } else {
            std::future::pending::<()>().await;
        }
    };
    (begin, deadline)
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is called (inside a
/// tokio runtime), not when the future is first polled, so a signal that arrives between
/// the call and the first poll is not lost to the default action.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler installs");
    async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        tracing::info!("signal received, shutting down");
    }
}
