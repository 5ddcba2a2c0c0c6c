//! `kv-server`: the kv node. It opens the RocksDB engine in `<data-dir>/db`, starts the
//! transaction scheduler and the GC worker on it ([`storage`]), runs the unified read pool,
//! loads the regions it serves ([`regions`]), registers with PD ([`pd_worker`]) and serves
//! the `Kv` gRPC service ([`service`] on [`grpc`], many requests per message through
//! [`batch`]) inside the node shell. Everything follows online config changes (`rocksdb.*`,
//! `storage.*`, `gc.*`, `readpool.unified.*`) and exports its metrics. Raft replication
//! joins here later; today each region has one replica.

pub mod auto_adjust;
pub mod batch;
pub mod deadlock;
pub mod gc_driver;
pub mod grpc;
pub mod lock_waits;
pub mod pd_worker;
pub mod read_pool;
pub mod regions;
pub mod request_metrics;
pub mod service;
pub mod storage;

use std::sync::Arc;

use engine_rocks::RocksEngine;
use node::{Node, NodeError};
use pool::ShutdownMode;
use txn::ReplicatedKv;

/// Runs the kv node until SIGINT or SIGTERM.
pub fn run(node: Node) -> Result<(), NodeError> {
    let db_dir = node.data_dir.path().join("db");
    let engine = RocksEngine::open(&db_dir, &node.controller.current())
        .map_err(|e| NodeError::Storage(format!("{}: {e}", db_dir.display())))?;
    if let Some(keys) = mvcc::latest::ensure_latest(&engine)
        .map_err(|e| NodeError::Storage(format!("filling the latest CF: {e}")))?
    {
        tracing::info!(keys, "filled the latest CF from the write CF");
    }
    engine.follow_config(&node.controller);
    node.registry
        .register(Box::new(engine_rocks::metrics::RocksCollector::new(
            engine.clone(),
        )))
        .expect("RocksDB metrics register once");
    let storage = storage::Storage::start(engine.clone(), &node.controller, &node.registry)?;
    let pool = Arc::new(read_pool::start(&node.controller.current()));
    read_pool::follow_config(&pool, &node.controller);
    node.registry
        .register(Box::new(pool::metrics::PoolCollector::new(pool.clone())))
        .expect("read pool metrics register once");
    let config = node.controller.current();
    let lock_waits = Arc::new(lock_waits::LockWaits::new(
        config.duration("pessimistic-txn.wait-for-lock-timeout").0,
    ));
    lock_waits::follow_config(&lock_waits, &node.controller);
    node.registry
        .register(Box::new(lock_waits.waiting.clone()))
        .expect("lock wait metrics register once");
    let regions = Arc::new(
        regions::Regions::load(engine.clone()).map_err(|e| NodeError::Storage(e.to_string()))?,
    );
    let grpc = grpc::GrpcServer::start(
        &config,
        service::KvService {
            regions: regions.clone(),
            scheduler: storage.scheduler.clone(),
            pool: pool.clone(),
            deadlocks: Arc::new(deadlock::Detector::default()),
            lock_waits: lock_waits.clone(),
            requests: Arc::new(request_metrics::RequestMetrics::new(&node.registry)),
            stopping: Arc::new(tokio::sync::watch::channel(false).0),
        },
    )?;
    let (stop_pd, pd_stop) = std::sync::mpsc::channel();
    let pd_thread = pd_worker::spawn(
        config.list("pd.endpoints").to_vec(),
        node.data_dir.path().to_path_buf(),
        pd_worker::StoreInfo {
            address: config.str("server.addr").to_string(),
            status_address: config.str("server.status-addr").to_string(),
        },
        regions,
        {
            let kv = storage.scheduler.kv().clone();
            Box::new(move |ts| kv.lock_table().sync_max_ts(ts))
        },
        pd_stop,
    );
    let (stop_gc, gc_stop) = std::sync::mpsc::channel();
    let gc_thread = gc_driver::spawn(storage.gc.clone(), &node.controller.current(), gc_stop);
    let (stop_tuner, stop) = std::sync::mpsc::channel();
    let tuner = auto_adjust::spawn(pool.clone(), node.controller.clone(), stop);
    let serving = "the Kv gRPC service (reads and coprocessor DAGs on the unified read pool, transactions through the scheduler), GC and the status API; one replica per region (no Raft replication yet)";
    let result = node.run_until_signal(serving);
    grpc.shutdown();
    drop(stop_tuner);
    let _ = tuner.join();
    drop(stop_gc);
    let _ = gc_thread.join();
    drop(stop_pd);
    let _ = pd_thread.join();
    pool.shutdown(ShutdownMode::Cancel);
    storage.scheduler.shutdown();
    drop(storage);
    drop(engine);
    result
}
