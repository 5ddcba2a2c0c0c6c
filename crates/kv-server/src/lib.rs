//! `kv-server`: the kv node. It opens the RocksDB engine in `<data-dir>/db`, starts the
//! transaction scheduler and the GC worker on it ([`storage`]), runs the unified read pool,
//! loads the regions it serves ([`regions`]), registers with PD ([`pd_worker`]) and serves
//! the `Kv` gRPC service ([`service`] on [`grpc`], many requests per message through
//! [`batch`]) inside the node shell. Everything follows online config changes (`rocksdb.*`,
//! `storage.*`, `gc.*`, `readpool.unified.*`) and exports its metrics.
//!
//! With `raftstore.replication` on, writes go through raftstore ([`raft_kv`]): the store's
//! regions are Raft groups whose logs live in raft-engine (`raft-engine.dir`, by default
//! `<data-dir>/raft-engine`), Raft messages travel over the same gRPC port
//! ([`raft_transport`]), and PD grows each region to its replica count; on SIGTERM the node
//! tells PD it is stopping, then hands its locks and leaderships to other stores
//! ([`hand_off`]). Off, each region has
//! the one local replica it always had.

pub mod auto_adjust;
pub mod batch;
pub mod deadlock;
pub mod gc_driver;
pub mod grpc;
pub mod hand_off;
pub mod lock_waits;
pub mod pd_worker;
pub mod raft_kv;
pub mod raft_metrics;
pub mod raft_transport;
pub mod read_pool;
pub mod region_flow;
pub mod regions;
pub mod request_metrics;
pub mod service;
pub mod split;
pub mod split_checker;
pub mod storage;

use std::sync::Arc;

use engine_rocks::RocksEngine;
use node::{Node, NodeError};
use pool::ShutdownMode;
use txn::ReplicatedKv;

/// How long a stopping node waits for PD to hear of it before it hands its leaders off.
const STOPPING_TOLD_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

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
    let config = node.controller.current();
    let flows = Arc::new(region_flow::RegionFlows::default());
    let replication = if config.bool("raftstore.replication") {
        Some(start_raftstore(
            &node,
            &config,
            engine.clone(),
            flows.clone(),
        )?)
    } else {
        None
    };
    let kv = match &replication {
        Some(r) => raft_kv::NodeKv::Raft(r.kv.clone()),
        None => raft_kv::NodeKv::Local(
            txn::LocalKv::open(engine.clone())
                .map_err(|e| NodeError::Storage(format!("loading the lock table: {e}")))?,
        ),
    };
    let storage = storage::Storage::start(kv, &node.controller, &node.registry)?;
    let pool = Arc::new(read_pool::start(&node.controller.current()));
    read_pool::follow_config(&pool, &node.controller);
    node.registry
        .register(Box::new(pool::metrics::PoolCollector::new(pool.clone())))
        .expect("read pool metrics register once");
    let lock_waits = Arc::new(lock_waits::LockWaits::new(
        config.duration("pessimistic-txn.wait-for-lock-timeout").0,
    ));
    lock_waits::follow_config(&lock_waits, &node.controller);
    for metric in lock_waits.metrics() {
        node.registry
            .register(metric)
            .expect("lock wait metrics register once");
    }
    let mut regions =
        regions::Regions::load(engine.clone()).map_err(|e| NodeError::Storage(e.to_string()))?;
    if let Some(r) = &replication {
        if !regions.all().is_empty() {
            return Err(NodeError::Storage(
                "this data dir holds single-replica regions; it cannot start with raftstore.replication = true".into(),
            ));
        }
        regions = regions.replicated(r.kv.clone());
    }
    let regions = Arc::new(regions);
    let splitter = replication
        .as_ref()
        .map(|r| split::Splitter::new(config.list("pd.endpoints").to_vec(), r.kv.router().clone()));
    let stopping_grpc = Arc::new(tokio::sync::watch::channel(false).0);
    let grpc = grpc::GrpcServer::start(
        &config,
        service::KvService {
            regions: regions.clone(),
            scheduler: storage.scheduler.clone(),
            pool: pool.clone(),
            deadlocks: Arc::new(deadlock::Detector::default()),
            lock_waits: lock_waits.clone(),
            requests: Arc::new(request_metrics::RequestMetrics::new(&node.registry)),
            stopping: stopping_grpc.clone(),
            splitter: splitter.clone(),
            flows,
        },
        replication.as_ref().map(|r| {
            raft_transport::RaftService::new(
                r.kv.router().clone(),
                r.snap_dir.clone(),
                r.snap_limits.clone(),
                stopping_grpc.clone(),
            )
        }),
    )?;
    let (stop_pd, pd_stop) = std::sync::mpsc::channel();
    let (wake_split_check, split_check_wakes) = std::sync::mpsc::channel();
    let stopping = Arc::new(pd_worker::Stopping::default());
    let pd_thread = pd_worker::spawn(
        config.list("pd.endpoints").to_vec(),
        node.data_dir.path().to_path_buf(),
        pd_worker::StoreInfo {
            address: config.str("server.addr").to_string(),
            status_address: config.str("server.status-addr").to_string(),
            region_heartbeat_interval: config.duration("raftstore.pd-heartbeat-tick-interval").0,
            store_heartbeat_interval: config
                .duration("raftstore.pd-store-heartbeat-tick-interval")
                .0,
            stopping: stopping.clone(),
        },
        regions,
        {
            let kv = storage.scheduler.kv().clone();
            Box::new(move |ts| kv.lock_table().sync_max_ts(ts))
        },
        {
            let moves = replication
                .as_ref()
                .map(|r| hand_off::RegionMoves::new(r.kv.clone(), storage.scheduler.latches()));
            let wake = wake_split_check.clone();
            let merges = moves.clone();
            pd_worker::Orders {
                move_leader: Box::new(move |region_id, to_peer_id| {
                    if let Some(moves) = &moves {
                        moves.start(region_id, to_peer_id);
                    }
                }),
                merge_region: Box::new(move |source, target| {
                    if let Some(merges) = &merges {
                        merges.merge(source, target);
                    }
                }),
                split_region: Box::new(move |region_id, split| {
                    let _ = wake.send(split_checker::Wake::Split {
                        region_id,
                        version: split.version,
                        keys: split.keys,
                    });
                }),
            }
        },
        pd_stop,
    );
    let split_check_thread = match (&replication, &splitter) {
        (Some(r), Some(splitter)) => Some(split_checker::spawn(
            r.kv.clone(),
            engine.clone(),
            splitter.clone(),
            node.controller.clone(),
            split_check_wakes,
        )),
        _ => None,
    };
    let (stop_gc, gc_stop) = std::sync::mpsc::channel();
    let leads: Box<dyn Fn() -> bool + Send> = match &replication {
        Some(r) => {
            let views = r.driver.views.clone();
            Box::new(move || {
                let now = std::time::Instant::now();
                views.all().iter().any(|v| v.lease_holds(now))
            })
        }
        None => Box::new(|| true),
    };
    let gc_thread = gc_driver::spawn(
        storage.gc.clone(),
        &node.controller.current(),
        leads,
        gc_stop,
    );
    let (stop_tuner, stop) = std::sync::mpsc::channel();
    let tuner = auto_adjust::spawn(pool.clone(), node.controller.clone(), stop);
    let serving = match replication {
        Some(_) => {
            "the Kv gRPC service (reads and coprocessor DAGs on the unified read pool, transactions through the scheduler and raftstore), Raft between kv nodes, GC and the status API; regions replicated by Raft"
        }
        None => {
            "the Kv gRPC service (reads and coprocessor DAGs on the unified read pool, transactions through the scheduler), GC and the status API; one replica per region (raftstore.replication is off)"
        }
    };
    let result = node.run_until_signal(serving);
    // No new splits while the node hands its leadership off and stops.
    let _ = wake_split_check.send(split_checker::Wake::Stop);
    if let Some(t) = split_check_thread {
        let _ = t.join();
    }
    if let Some(r) = &replication {
        // PD first, so it moves no leader here while they leave.
        stopping.begin();
        if !stopping.wait_told(STOPPING_TOLD_WAIT) {
            tracing::warn!("pd did not hear of the stop in time; handing regions off anyway");
        }
        let store_id = pd_worker::STORE_ID.load(std::sync::atomic::Ordering::Relaxed);
        let done = hand_off::hand_off(&r.kv, &storage.scheduler.latches(), store_id);
        tracing::info!(
            locks_moved = done.locks_moved,
            regions_still_led = done.regions_still_led,
            "handed regions off before stopping"
        );
    }
    // Raftstore stops before the port closes: other stores take a refused connection as proof
    // that this node serves nothing any more, so its leases must be over by then.
    let client_runtime = replication.map(|r| {
        r.driver.stop();
        r.client_runtime
    });
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
    if let Some(runtime) = client_runtime {
        runtime.shutdown_background();
    }
    drop(engine);
    result
}

/// Raftstore and what serves it, while replication is on.
struct Replication {
    kv: Arc<raft_kv::RaftKv>,
    driver: raftstore::driver::RaftDriver,
    client_runtime: tokio::runtime::Runtime,
    /// Where snapshot files are built and received (`<data-dir>/snap`).
    snap_dir: std::path::PathBuf,
    snap_limits: Arc<raft_transport::SnapLimits>,
}

/// The `raftstore.*` settings as raftstore takes them, with snapshot files in `snap_dir`.
pub fn raftstore_config(
    c: &config::Config,
    snap_dir: std::path::PathBuf,
) -> raftstore::RaftstoreConfig {
    let base_tick = c.duration("raftstore.raft-base-tick-interval").0;
    let in_ticks = |interval: std::time::Duration| {
        (interval.as_millis() / base_tick.as_millis().max(1)).max(1) as usize
    };
    raftstore::RaftstoreConfig {
        base_tick,
        heartbeat_ticks: c.int("raftstore.raft-heartbeat-ticks") as usize,
        election_ticks: c.int("raftstore.raft-election-timeout-ticks") as usize,
        max_leader_lease: c.duration("raftstore.raft-store-max-leader-lease").0,
        prevote: c.bool("raftstore.prevote"),
        max_size_per_msg_bytes: c.size("raftstore.raft-max-size-per-msg").bytes(),
        max_inflight_msgs: c.int("raftstore.raft-max-inflight-msgs") as usize,
        entry_max_size_bytes: c.size("raftstore.raft-entry-max-size").bytes(),
        log_gc_ticks: in_ticks(c.duration("raftstore.raft-log-gc-tick-interval").0),
        log_gc_threshold: c.int("raftstore.raft-log-gc-threshold") as u64,
        log_gc_count_limit: c.int("raftstore.raft-log-gc-count-limit") as u64,
        log_gc_size_limit_bytes: c.size("raftstore.raft-log-gc-size-limit").bytes(),
        purge_interval: c.duration("raftstore.raft-engine-purge-interval").0,
        store_io_threads: c.int("raftstore.store-io-pool-size") as usize,
        merge_check_ticks: in_ticks(c.duration("raftstore.merge-check-tick-interval").0),
        merge_max_log_gap: c.int("raftstore.merge-max-log-gap") as u64,
        snap_dir,
        snapshot_worker: true,
    }
}

/// The `raft-engine.*` settings, with the log under `<data-dir>/raft-engine` unless
/// `raft-engine.dir` names another place.
pub fn raft_log_config(c: &config::Config, data_dir: &std::path::Path) -> raft_log::LogConfig {
    let dir = match c.str("raft-engine.dir") {
        "" => data_dir.join("raft-engine"),
        dir => std::path::PathBuf::from(dir),
    };
    raft_log::LogConfig {
        format_version: c.int("raft-engine.format-version") as u64,
        recovery_mode: match c.str("raft-engine.recovery-mode") {
            "absolute-consistency" => raft_log::RecoveryMode::AbsoluteConsistency,
            "tolerate-any-corruption" => raft_log::RecoveryMode::TolerateAnyCorruption,
            _ => raft_log::RecoveryMode::TolerateTailCorruption,
        },
        enable_log_recycle: c.bool("raft-engine.enable-log-recycle"),
        prefill_for_recycle: c.bool("raft-engine.prefill-for-recycle"),
        purge_threshold_bytes: c.size("raft-engine.purge-threshold").bytes(),
        target_file_size_bytes: c.size("raft-engine.target-file-size").bytes(),
        batch_compression_threshold_bytes: c
            .size("raft-engine.batch-compression-threshold")
            .bytes(),
        memory_limit_bytes: Some(c.size("raft-engine.memory-limit").bytes()),
        ..raft_log::LogConfig::new(dir)
    }
}

/// Opens raft-engine and starts raftstore's thread under this store's id (asked of PD
/// first on a new data dir).
fn start_raftstore(
    node: &Node,
    config: &config::Config,
    engine: RocksEngine,
    flows: Arc<region_flow::RegionFlows>,
) -> Result<Replication, NodeError> {
    let endpoints: Vec<String> = config.list("pd.endpoints").to_vec();
    let store_id = pd_worker::store_id(&endpoints, node.data_dir.path(), &|| false)
        .map_err(NodeError::Storage)?
        .ok_or_else(|| NodeError::Storage("no store id".into()))?;
    pd_worker::STORE_ID.store(store_id, std::sync::atomic::Ordering::Relaxed);
    let log_config = raft_log_config(config, node.data_dir.path());
    std::fs::create_dir_all(&log_config.dir)
        .map_err(|e| NodeError::Storage(format!("{}: {e}", log_config.dir.display())))?;
    let log = raft_log::LogEngine::open(&log_config)
        .map_err(|e| NodeError::Storage(format!("{}: {e}", log_config.dir.display())))?;
    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("raft-client")
        .enable_all()
        .build()
        .map_err(NodeError::Runtime)?;
    let snap_dir = node.data_dir.path().join("snap");
    let snap_limits = raft_transport::SnapLimits::new(config);
    snap_limits.follow_config(&node.controller);
    let transport = raft_transport::RaftClient::new(
        client_runtime.handle().clone(),
        endpoints,
        snap_dir.clone(),
        snap_limits.clone(),
    );
    let cfg = raftstore_config(config, snap_dir.clone());
    let store_engine = engine.clone();
    let reports_to = transport.clone();
    let driver = raftstore::driver::RaftDriver::start(move || {
        raftstore::Store::open(store_id, store_engine, log, transport, cfg)
    })
    .map_err(|e| NodeError::Storage(format!("starting raftstore: {e}")))?;
    reports_to.set_router(driver.router());
    tracing::info!(store_id, raft_engine_dir = %log_config.dir.display(), "raftstore started");
    node.registry
        .register(Box::new(raft_metrics::RaftCollector::new(
            driver.views.clone(),
            driver.stats.clone(),
            snap_limits.clone(),
        )))
        .expect("raftstore metrics register once");
    let kv = Arc::new(raft_kv::RaftKv::new(
        engine,
        driver.router(),
        driver.views.clone(),
        flows,
    ));
    Ok(Replication {
        kv,
        driver,
        client_runtime,
        snap_dir,
        snap_limits,
    })
}
