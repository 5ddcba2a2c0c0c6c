//! `sql-server`: the sql node. It connects to PD (kv-client), listens for MySQL clients on
//! `host:port`, and runs each connection's commands through a [`sql::session::Session`]:
//! the handshake and authentication, COM_QUERY, the prepared-statement commands
//! (COM_STMT_PREPARE / EXECUTE / CLOSE) and COM_INIT_DB, on the opensrv-mysql protocol
//! implementation. Errors go back with MySQL's code and SQLSTATE; a failed statement never
//! ends the connection.

mod connection;
mod metrics;
mod tls;

use std::sync::Arc;

use node::{Node, NodeError};
use sql::session::Shared;

/// Takes the global variables other nodes stored, and applies those that act on this node.
async fn reload_globals(shared: &Shared) {
    match sql::variables::load(&shared.client).await {
        Ok(stored) => {
            for (name, value) in shared.globals.replace(stored) {
                tracing::info!(name, %value, "global variable applied");
                shared.apply_node_variable(&name, &value);
            }
        }
        Err(e) => tracing::warn!("global variables not read, will retry: {}", e.message),
    }
}

/// Keeps the cached schema checked within its lease (sql::catalog).
async fn check_schema(shared: Arc<Shared>) {
    let mut ticks = tokio::time::interval(sql::catalog::SCHEMA_CHECK_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Err(e) = shared.catalog.refresh().await {
            tracing::debug!(
                "schema check failed, statements read m/ver themselves: {}",
                e.message
            );
        }
    }
}

/// The node's background loop, every [`sql::gc::TICK`]: reload the global variables, read
/// PD's GC safe point (reads and commits below it fail), report this node's oldest txn and,
/// on the GC leader, start a GC run unless one is under way.
async fn background(shared: Arc<Shared>, gc: sql::gc::GcWorker) {
    let gc = Arc::new(gc);
    let running = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut ticks = tokio::time::interval(sql::gc::TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        reload_globals(&shared).await;
        if let Err(e) = shared.client.refresh_gc_safe_point().await {
            tracing::warn!("GC safe point not read, will retry: {e}");
        }
        match gc.report_and_lead().await {
            Ok(true) if !running.swap(true, std::sync::atomic::Ordering::AcqRel) => {
                let (gc, running) = (Arc::clone(&gc), Arc::clone(&running));
                tokio::spawn(async move {
                    if let Err(e) = gc.run_if_due().await {
                        tracing::warn!("GC run failed, will retry: {}", e.message);
                    }
                    running.store(false, std::sync::atomic::Ordering::Release);
                });
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("GC report or lease failed, will retry: {}", e.message),
        }
    }
}

/// Tells PD where this node serves, every `SQL_NODE_REPORT_INTERVAL_MS`, so that `atoll diag` and the
/// dashboard find it; a missed report is only logged.
async fn report_to_pd(shared: Arc<Shared>, report: proto::pd::ReportSqlNodeRequest) {
    let interval = std::time::Duration::from_millis(base::limits::SQL_NODE_REPORT_INTERVAL_MS);
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if let Err(e) = shared.client.pd().report_sql_node(report.clone()).await {
            tracing::debug!("report to pd failed, will retry: {e}");
        }
    }
}

/// Runs the sql node until SIGINT or SIGTERM.
pub fn run(node: Node) -> Result<(), NodeError> {
    let config = node.controller.current();
    let addr = format!("{}:{}", config.str("host"), config.int("port"));
    let bind_error = |error| NodeError::Bind {
        addr: addr.clone(),
        what: "MySQL port",
        error,
    };
    let tls = tls::server_config(&config).map_err(NodeError::Tls)?;
    let require_secure = config.bool("security.require-secure-transport");
    let skip_grant_table = config.bool("security.skip-grant-table");
    let pessimistic_auto_commit = config.bool("pessimistic-txn.pessimistic-auto-commit");
    let listener = std::net::TcpListener::bind(&addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let endpoints: Vec<String> = config.list("path").to_vec();
    // The slow log: `log.slow-query-file`, under `data-dir` when relative.
    let slow_path = node.data_dir.path().join(config.str("log.slow-query-file"));
    let slow_log = sql::slow_log::SlowLog::open(&slow_path, config.int("log.slow-threshold"))
        .map_err(|error| NodeError::LogFile {
            path: slow_path.display().to_string(),
            error,
        })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config::sql::connection_threads(&config))
        .thread_name("sql-conn")
        .thread_stack_size(base::limits::SQL_THREAD_STACK_BYTES)
        .enable_all()
        .build()
        .map_err(NodeError::Runtime)?;
    let registry = node.registry.clone();
    let report = proto::pd::ReportSqlNodeRequest {
        address: addr.clone(),
        status_address: config.status_address(),
        version: node::BUILD.version.to_string(),
        git_hash: node::BUILD.git_hash.to_string(),
        start_timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = runtime.spawn(async move {
        let client = loop {
            match kv_client::Client::connect(kv_client::ClientConfig::new(endpoints.clone())).await
            {
                Ok(c) => break c,
                Err(e) => {
                    tracing::warn!("pd not reachable yet, retrying: {e}");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        };
        if skip_grant_table {
            tracing::warn!(
                "security.skip-grant-table is on: any account logs in from this host without a password and may do everything; connections from other hosts are refused"
            );
        }
        let settings = sql::session::NodeSettings {
            skip_grant_table,
            pessimistic_auto_commit,
        };
        let shared = Shared::new(client, slow_log, settings);
        if let Err(e) = registry.register(Box::new(metrics::SqlCollector::new(Arc::clone(&shared))))
        {
            tracing::warn!("sql metrics not registered: {e}");
        }
        // Sessions start from the stored global variables: read them before the first client.
        reload_globals(&shared).await;
        tokio::spawn(check_schema(Arc::clone(&shared)));
        tokio::spawn(report_to_pd(Arc::clone(&shared), report));
        tokio::spawn(background(
            Arc::clone(&shared),
            sql::gc::GcWorker::new(Arc::clone(&shared), addr.clone()),
        ));
        let listener = tokio::net::TcpListener::from_std(listener)
            .expect("a bound listener joins the runtime");
        tracing::info!(addr = %addr, tls = tls.is_some(), "MySQL protocol listening");
        let accept = async {
            loop {
                match listener.accept().await {
                    Ok((stream, peer)) => {
                        let (shared, tls) = (shared.clone(), tls.clone());
                        tokio::spawn(async move {
                            let _ = stream.set_nodelay(true);
                            let served =
                                connection::serve(shared, stream, tls, require_secure).await;
                            if let Err(e) = served {
                                tracing::debug!(%peer, "connection ended: {e}");
                            }
                        });
                    }
                    Err(e) => tracing::warn!("accept failed: {e}"),
                }
            }
        };
        tokio::select! {
            () = accept => {}
            _ = stopped => {}
        }
    });
    let result = node.run_until_signal("the MySQL protocol: accounts, sessions and transactions, DDL, DML, SELECT with joins, subqueries and coprocessor pushdown, EXPLAIN, the slow log");
    let _ = stop.send(());
    runtime.block_on(async {
        let _ = tokio::time::timeout(node::SHUTDOWN_GRACE, serving).await;
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}
