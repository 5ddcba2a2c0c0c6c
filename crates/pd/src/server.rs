//! `atoll pd`: the oracle in the data dir, its tick thread, and the `Pd` gRPC service on the
//! client URL's port next to the HTTP status API (as PD serves both on 2379).

use std::sync::Arc;
use std::time::Duration;

use node::{Node, NodeError};
use proto::pd::pd_server::PdServer;

use crate::gc_safe_point::GcSafePoint;
use crate::metadata::Metadata;
use crate::oracle::{Oracle, wall_clock_ms};
use crate::service::PdService;

pub fn run(node: Node) -> Result<(), NodeError> {
    let config = node.controller.current();
    let save_interval = config.duration("tso-save-interval").0;
    let update_interval: Duration = config.duration("tso-update-physical-interval").0;
    let oracle = Oracle::open(node.data_dir.path(), save_interval, wall_clock_ms())
        .map_err(|e| NodeError::Storage(e.to_string()))?;
    let (stop_tick, stop) = std::sync::mpsc::channel();
    let ticker = oracle.spawn_ticker(update_interval, stop);
    let safe_point = Arc::new(
        GcSafePoint::open(node.data_dir.path()).map_err(|e| NodeError::Storage(e.to_string()))?,
    );
    let meta = Arc::new(
        Metadata::open(node.data_dir.path()).map_err(|e| NodeError::Storage(e.to_string()))?,
    );
    let service = PdService::new(oracle, safe_point, meta, update_interval);
    let (max_replicas, store_down_ms) =
        (service.max_replicas.clone(), service.store_down_ms.clone());
    let follow = move |c: &config::Config| {
        use std::sync::atomic::Ordering::Relaxed;
        max_replicas.store(c.int("replication.max-replicas") as usize, Relaxed);
        let down = c.duration("schedule.max-store-down-time").0;
        store_down_ms.store(down.as_millis() as u64, Relaxed);
    };
    follow(&config);
    for prefix in ["replication.", "schedule."] {
        let follow = follow.clone();
        node.controller.subscribe(
            prefix,
            Box::new(move |c, _| {
                follow(c);
                Ok(())
            }),
        );
    }
    let grpc = tonic::service::Routes::new(PdServer::new(service)).into_axum_router();
    let serving = "the TSO, the GC safe point and cluster metadata (gRPC Pd), the replica checker (regions grow to replication.max-replicas) and the status API; balancing and splits are not built yet";
    tracing::warn!("{serving}");
    let result = node.run_with_routes(serving, Some(grpc));
    drop(stop_tick);
    let _ = ticker.join();
    result
}
