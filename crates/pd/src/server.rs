//! `atoll pd`: one PD member. Its replica of the members' Raft group ([`Member`] on the
//! `pd-raft` thread), the peer service on the peer URL's port, the oracle's tick thread, and
//! the `Pd` gRPC service with PD's HTTP API on the client URL's port (as PD serves both on
//! 2379). A member started alone (no `initial-cluster`) is a group of one.
//!
//! SIGTERM on the leader hands leadership to another member before the process stops, so a
//! planned restart costs clients no election timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use node::{Node, NodeError};
use proto::pd::pd_peer_server::PdPeerServer;
use proto::pd::pd_server::PdServer;

use crate::disk::{Checkpoint, Disk, MemberDisk, legacy_state};
use crate::driver::{Driver, DriverHandle};
use crate::member::{Member, MemberConfig};
use crate::members::{self, MemberInfo, Members};
use crate::oracle::Oracle;
use crate::peer::{GrpcTransport, PeerService};
use crate::service::PdService;
use crate::state::{MemberRecord, PdState};

/// How long a stopping leader waits for another member to take over.
pub const TRANSFER_ON_STOP_WAIT: Duration = Duration::from_secs(2);

fn storage(e: impl std::fmt::Display) -> NodeError {
    NodeError::Storage(e.to_string())
}

pub fn run(node: Node) -> Result<(), NodeError> {
    run_with(node, None)
}

/// As [`run`], serving `extra` routes on the client port too (the binary's `/dashboard`).
pub fn run_with(node: Node, extra: Option<axum::Router>) -> Result<(), NodeError> {
    let config = node.controller.current();
    let name = config.str("name").to_string();
    let advertised =
        |kind| config::value::strip_scheme(config::pd::advertised_url(&config, kind)).to_string();
    let (client_url, peer_url) = (advertised("client"), advertised("peer"));
    let data_dir = node.data_dir.path().to_path_buf();
    let (mut disk, saved) = MemberDisk::open(&data_dir).map_err(storage)?;
    let (my_id, checkpoint) = identity(&config, &data_dir, &mut disk, saved, &name, &peer_url)?;
    let cfg = MemberConfig::new(
        my_id,
        config.duration("tick-interval").0,
        config.duration("election-interval").0,
        Duration::from_secs(config.int("lease") as u64),
    );
    let tick = cfg.tick;
    let mut member =
        Member::open(cfg, &disk, checkpoint, &raft_log::logger::raft_logger()).map_err(storage)?;
    let metrics = crate::metrics::PdMetrics::new();
    metrics.register(&node.registry);
    member.set_metrics(metrics.clone());
    // The first voter (by id) campaigns as it starts, so a new cluster (or a lone member)
    // does not wait out an election timeout for its first leader. Harmless in a running
    // cluster: with pre-vote and check-quorum, members that hear from a leader refuse.
    if member.voters().first() == Some(&my_id) {
        member.campaign().map_err(storage)?;
    }
    let members = Arc::new(Members::new(member.shared().clone()));
    members.learn_client_url(my_id, &client_url);

    let peer_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("pd-peer")
        .enable_all()
        .build()
        .map_err(NodeError::Runtime)?;
    let peer_listener =
        std::net::TcpListener::bind(&peer_url).map_err(|error| NodeError::Bind {
            addr: peer_url.clone(),
            what: "pd peer port",
            error,
        })?;
    peer_listener
        .set_nonblocking(true)
        .map_err(NodeError::Runtime)?;
    let driver = Driver::start(
        member,
        Box::new(disk),
        |handle| {
            Box::new(GrpcTransport::start(
                peer_runtime.handle(),
                my_id,
                members.clone(),
                handle,
            ))
        },
        tick,
        Box::new(|e| {
            // A member that cannot write its log must not go on: its process ends, and
            // whatever supervises it restarts it on a working disk.
            tracing::error!("the pd member cannot go on: {e}");
            eprintln!("atoll pd: the member's disk failed: {e}");
            std::process::exit(1);
        }),
    );
    let handle = driver.handle();
    {
        let me = MemberInfo {
            id: my_id,
            name: name.clone(),
            peer_url: peer_url.clone(),
            client_url: client_url.clone(),
        };
        let peer_service = PeerService::new(handle.clone(), me);
        let _guard = peer_runtime.enter();
        let listener =
            tokio::net::TcpListener::from_std(peer_listener).map_err(NodeError::Runtime)?;
        let router = tonic::transport::Server::builder().add_service(
            PdPeerServer::new(peer_service)
                .max_decoding_message_size(crate::peer::MESSAGE_BYTES_MAX),
        );
        match security::cluster() {
            Some(tls) => {
                peer_runtime.spawn(router.serve_with_incoming(security::incoming(listener, tls)))
            }
            None => peer_runtime.spawn(
                router
                    .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
            ),
        };
    }

    let update_interval: Duration = config.duration("tso-update-physical-interval").0;
    let oracle = Oracle::new(
        handle.shared().clone(),
        config.duration("tso-save-interval").0,
    );
    let (stop_tick, stop) = std::sync::mpsc::channel();
    let saver = handle.clone();
    let ticker = oracle.spawn_ticker(update_interval, Box::new(move |c| saver.propose(c)), stop);

    let service = PdService::new(
        oracle,
        handle.clone(),
        members.clone(),
        update_interval,
        metrics,
    );
    let (max_replicas, store_down_ms, schedule_limits) = (
        service.max_replicas.clone(),
        service.store_down_ms.clone(),
        service.schedule_limits.clone(),
    );
    let follow = move |c: &config::Config| {
        use std::sync::atomic::Ordering::Relaxed;
        max_replicas.store(c.int("replication.max-replicas") as usize, Relaxed);
        let down = c.duration("schedule.max-store-down-time").0;
        store_down_ms.store(down.as_millis() as u64, Relaxed);
        let limits = &schedule_limits;
        for (slot, name) in [
            (&limits.leader, "schedule.leader-schedule-limit"),
            (&limits.region, "schedule.region-schedule-limit"),
            (&limits.hot_region, "schedule.hot-region-schedule-limit"),
            (&limits.hot_hits, "schedule.hot-region-cache-hits-threshold"),
            (&limits.merge, "schedule.merge-schedule-limit"),
            (&limits.max_merge_size_mib, "schedule.max-merge-region-size"),
            (&limits.max_merge_keys, "schedule.max-merge-region-keys"),
        ] {
            slot.store(c.int(name) as usize, Relaxed);
        }
        let interval = c.duration("schedule.split-merge-interval").0;
        (limits.split_merge_interval_ms).store(interval.as_millis() as usize, Relaxed);
    };
    follow(&config);
    crate::config_sync::propose_local_changes(
        &node.controller,
        client_url.clone(),
        peer_runtime.handle().clone(),
    );
    let (stop_config, stop) = std::sync::mpsc::channel();
    let config_follower =
        crate::config_sync::spawn_follower(node.controller.clone(), handle.shared().clone(), stop);
    for prefix in crate::config_sync::PREFIXES {
        let follow = follow.clone();
        node.controller.subscribe(
            prefix,
            Box::new(move |c, _| {
                follow(c);
                Ok(())
            }),
        );
    }
    let cluster_api = crate::cluster_api::router(
        handle.clone(),
        members.clone(),
        service.operators(),
        service.max_replicas.clone(),
        service.store_down_ms.clone(),
        service.schedule_limits.clone(),
        node.controller.clone(),
    );
    let sql_nodes =
        crate::sql_nodes::router(handle.clone(), members.clone(), service.sql_nodes.clone());
    let routes = tonic::service::Routes::new(PdServer::new(service))
        .into_axum_router()
        .merge(crate::http_api::router(handle.clone(), members.clone()))
        .merge(cluster_api)
        .merge(sql_nodes)
        .merge(extra.unwrap_or_default());
    let serving = "the TSO, the GC safe point and cluster metadata (gRPC Pd) replicated over the pd members, the replica checker, the balance-leader, balance-region and evict-leader schedulers, store deletion, PD's members, stores, regions, operators and schedulers API and the status API";
    tracing::warn!(member = name, id = my_id, "{serving}");
    let stopping = handle.clone();
    let result = node.run_with_routes_and_stop(serving, Some(routes), move || async move {
        hand_over_leadership(&stopping).await;
    });
    drop(stop_tick);
    let _ = ticker.join();
    drop(stop_config);
    let _ = config_follower.join();
    drop(driver);
    result
}

/// This member's id and the checkpoint it starts from: the saved one; on a first start,
/// the group of `initial-cluster` (with the state of an old single pd imported when it is
/// alone), or, with `join`, an empty one once the running group added this member (its
/// state then comes as a snapshot from the leader).
fn identity(
    config: &config::Config,
    data_dir: &std::path::Path,
    disk: &mut MemberDisk,
    saved: Option<Checkpoint>,
    name: &str,
    peer_url: &str,
) -> Result<(u64, Checkpoint), NodeError> {
    let id_file = data_dir.join("pd-member-id");
    let joined: Option<u64> = match std::fs::read_to_string(&id_file) {
        Ok(text) => Some(text.trim().parse().map_err(|_| {
            storage(format!(
                "{} holds no member id: {text:?}",
                id_file.display()
            ))
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(storage(format!("cannot read {}: {e}", id_file.display()))),
    };
    let join = config.str("join");
    if let (Some(id), Some(cp)) = (joined, &saved) {
        return Ok((id, cp.clone()));
    }
    let fresh = saved.is_none() && disk.log_is_empty();
    if joined.is_some() || !join.is_empty() {
        if join.is_empty() {
            return Err(storage(format!(
                "this member joined a pd group (see {}) but has no state yet: start it with --join again",
                id_file.display()
            )));
        }
        if !fresh {
            return Err(storage(
                "--join adds a new member, but this data dir already belongs to a pd group: start it as before, without --join",
            ));
        }
        // Asking again after a crash is safe: the group answers the id it gave.
        let (id, members) = join_group(join, name, peer_url)?;
        if joined.is_some_and(|j| j != id) {
            return Err(storage(format!(
                "the pd group knows this member as {id}, but {} says {}",
                id_file.display(),
                joined.unwrap_or_default()
            )));
        }
        crate::disk::save_atomically(&id_file, format!("{id}\n").as_bytes()).map_err(storage)?;
        // The members as the group named them, so this one can answer them before the
        // leader's snapshot (which replaces all of it) arrives.
        let mut cp = Checkpoint::default();
        for m in members {
            let record = MemberRecord {
                name: m.name,
                peer_url: m.peer_urls.into_iter().next().unwrap_or_default(),
            };
            cp.state.set_member(m.member_id, Some(record));
        }
        disk.save_checkpoint(&cp).map_err(storage)?;
        tracing::info!(id, "joined the pd group");
        return Ok((id, cp));
    }
    let pairs = config::pd::initial_cluster(config).map_err(storage)?;
    let records = members::from_initial_cluster(pairs);
    let (&id, _) = records
        .iter()
        .find(|(_, m)| m.name == name)
        .expect("the config checks that the name is in initial-cluster");
    members::check_saved(data_dir, &records).map_err(storage)?;
    if let Some(mut cp) = saved {
        // A checkpoint from before the group kept its members: they are initial-cluster's.
        if cp.state.members.is_empty() {
            cp.state.next_member_id = cp.state.next_member_id.max(records.len() as u64 + 1);
            cp.state.members = records;
        }
        return Ok((id, cp));
    }
    // The first start: the state of a single pd from before the members replicated it, if
    // the data dir holds one, saved now as the first checkpoint.
    let mut state = if fresh {
        legacy_state(data_dir).map_err(storage)?
    } else {
        PdState::default()
    };
    if state != PdState::default() && records.len() > 1 {
        return Err(storage(
            "this data dir holds the state of a single pd from before its members replicated it; start it alone (without initial-cluster) once",
        ));
    }
    state.next_member_id = records.len() as u64 + 1;
    state.members = records;
    let cp = Checkpoint {
        voters: state.members.keys().copied().collect(),
        state,
        ..Checkpoint::default()
    };
    disk.save_checkpoint(&cp).map_err(storage)?;
    Ok((id, cp))
}

/// Asks the group at `join` (client URLs, comma separated) to add this member; its id and
/// the members.
fn join_group(
    join: &str,
    name: &str,
    peer_url: &str,
) -> Result<(u64, Vec<proto::pd::Member>), NodeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(NodeError::Runtime)?;
    let request = proto::pd::AddMemberRequest {
        name: name.to_string(),
        peer_url: format!("http://{}", config::value::strip_scheme(peer_url)),
    };
    let deadline = Instant::now() + JOIN_WAIT;
    let mut last = String::new();
    while Instant::now() < deadline {
        for url in join.split(',').map(str::trim) {
            let url = format!("http://{}", config::value::strip_scheme(url));
            let answer = runtime.block_on(async {
                let mut c =
                    proto::pd::pd_client::PdClient::new(security::channel(url.clone()).await?);
                Ok::<_, Box<dyn std::error::Error>>(c.add_member(request.clone()).await?)
            });
            match answer.map(|r| r.into_inner()) {
                Ok(r) => match r.error {
                    None => return Ok((r.member_id, r.members)),
                    Some(e) if e.r#type == proto::pd::ErrorType::InvalidArgument as i32 => {
                        return Err(storage(format!(
                            "the pd group refused to add {name}: {}",
                            e.message
                        )));
                    }
                    Some(e) => last = e.message,
                },
                Err(e) => last = format!("{url}: {e}"),
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(storage(format!(
        "could not join the pd group at {join} within {JOIN_WAIT:?}: {last}"
    )))
}

/// How long a member started with `--join` keeps asking to be added.
pub const JOIN_WAIT: Duration = Duration::from_secs(30);

/// As leader, hands leadership to the voter that answers first, and waits for it (at most
/// [`TRANSFER_ON_STOP_WAIT`]).
async fn hand_over_leadership(driver: &DriverHandle) {
    let status = driver.shared().status();
    if status.leader != status.id {
        return;
    }
    let Some(to) = crate::http_api::transfer_target(driver) else {
        return;
    };
    tracing::info!(to, "stopping: handing pd leadership over");
    driver.transfer_leader(to);
    let deadline = Instant::now() + TRANSFER_ON_STOP_WAIT;
    while Instant::now() < deadline && driver.shared().status().leader == status.id {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
