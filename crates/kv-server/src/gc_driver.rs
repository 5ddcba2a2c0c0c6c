//! Drives the GC worker from PD: every [`POLL_INTERVAL`] (and once at start) read the
//! cluster's GC safe point from PD; when it has moved forward, collect garbage below it on
//! this node, on this thread (`gc-worker`, the "GC worker CPU" panel). PD being unreachable is
//! logged and retried at the next poll; the node never stops for it. With replication, only
//! a node that leads its regions collects (`leads`): GC's deletions are proposals, which
//! only a leader can make, and every replica applies them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use config::Config;
use proto::pd::GetGcSafePointRequest;
use proto::pd::pd_client::PdClient;
use txn::gc::GcWorker;

use crate::storage::Kv;

/// TiKV's poll interval for the safe point.
pub const POLL_INTERVAL: Duration = Duration::from_secs(10);

/// The last safe point this node collected up to (for `/metrics`).
pub static SAFE_POINT: AtomicU64 = AtomicU64::new(0);

async fn fetch(endpoint: &str) -> Result<u64, String> {
    let url = format!("http://{}", config::value::strip_scheme(endpoint));
    let mut client = PdClient::new(
        security::channel(url)
            .await
            .map_err(|e| format!("cannot reach pd at {endpoint}: {e}"))?,
    );
    let r = client
        .get_gc_safe_point(GetGcSafePointRequest {})
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    match r.error {
        Some(e) => Err(e.message),
        None => Ok(r.safe_point),
    }
}

pub fn spawn(
    gc: Arc<GcWorker<Kv>>,
    config: &Config,
    leads: Box<dyn Fn() -> bool + Send>,
    stop: Receiver<()>,
) -> std::thread::JoinHandle<()> {
    let endpoints: Vec<String> = config.list("pd.endpoints").to_vec();
    std::thread::Builder::new()
        .name("gc-worker".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts");
            let mut last = 0;
            loop {
                let mut fetched = Err(String::from("no pd endpoints"));
                for endpoint in &endpoints {
                    fetched = runtime.block_on(fetch(endpoint));
                    if fetched.is_ok() {
                        break;
                    }
                }
                match fetched {
                    Ok(safe_point) if safe_point > last && leads() => match gc.gc_range(safe_point, b"", b"") {
                        Ok(()) => {
                            last = safe_point;
                            SAFE_POINT.store(safe_point, Ordering::Relaxed);
                            tracing::info!(safe_point, stats = ?gc.stats(), "GC done up to the safe point");
                        }
                        Err(e) => tracing::error!(safe_point, "GC failed, will retry: {e}"),
                    },
                    Ok(_) => {}
                    Err(e) => tracing::warn!("GC safe point not read: {e}"),
                }
                match stop.recv_timeout(POLL_INTERVAL) {
                    Err(RecvTimeoutError::Timeout) => continue,
                    _ => return,
                }
            }
        })
        .expect("the OS starts the GC thread")
}
