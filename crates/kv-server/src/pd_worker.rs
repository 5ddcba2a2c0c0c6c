//! The kv node's side of PD: take one timestamp to sync the lock table's `max_ts` (one-phase
//! commit waits for it), register this store (bootstrapping the cluster with the first
//! region if nobody has), then heartbeat the store and each region it serves every
//! `raftstore.pd-store-heartbeat-tick-interval`. Bootstrap saves the first region locally before asking PD (as
//! TiKV does), so a crash in between leaves a region the next attempt offers again; if
//! another node bootstrapped first, the local copy is dropped. The store id is kept
//! in `<data-dir>/store-ident` (written by fsynced rename before PD hears of it), so a
//! restarted node is the same store. PD being unreachable is logged and retried every
//! [`RETRY_INTERVAL`]: the node waits, it never stops or crash-loops for it.
//!
//! With replication on, raftstore holds the regions: bootstrap creates the first region's
//! peer through it (and removes it again when another store bootstrapped first), the
//! leaders' regions are reported every [`REPLICATED_POLL_INTERVAL`] when their leader or
//! epoch changed (else every `raftstore.pd-heartbeat-tick-interval`), PD's answer may carry
//! a membership change for the leader to propose or a leader move, the store heartbeat goes
//! at least every [`OPERATOR_POLL`] (its answer carries PD's steps for the regions led
//! here), and a new leader term gets `max_ts` synced from a fresh timestamp. Once the node
//! is stopping ([`Stopping`]), its store heartbeats say so at once and from then on, so PD
//! moves no leader to it while it hands its own off. A store PD reports as a tombstone
//! (deleted and emptied) stops its node, as SIGTERM would.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use proto::pd::pd_client::PdClient;
use proto::pd::{
    self as wire, AllocIdRequest, BootstrapRequest, ErrorType, IsBootstrappedRequest,
    PutStoreRequest, RegionHeartbeatRequest, StoreHeartbeatRequest, TsoRequest,
};
use tonic::transport::Channel;

use crate::raft_kv::RaftKv;
use crate::regions::Regions;
use raftstore::driver::{RaftRouter, RegionView, StoreMsg};
use txn::ReplicatedKv;

pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// How often, with replication on, the worker looks for leader and epoch changes to report.
pub const REPLICATED_POLL_INTERVAL: Duration = Duration::from_millis(200);

/// With replication on, how often at most PD hears from the store, and answers with the
/// steps it wants of the regions the store leads (leader moves, replica moves).
pub const OPERATOR_POLL: Duration = Duration::from_secs(1);

/// This node's store id once known (for `/metrics`), 0 before.
pub static STORE_ID: AtomicU64 = AtomicU64::new(0);

/// The node's stop as PD hears of it: begun on SIGTERM, before the leaders move away.
#[derive(Default)]
pub struct Stopping {
    begun: AtomicBool,
    /// PD acknowledged a store heartbeat that said so.
    told: AtomicBool,
}

impl Stopping {
    pub fn begin(&self) {
        self.begun.store(true, Ordering::Release);
    }

    /// Waits at most `wait` for PD to have heard; whether it did.
    pub fn wait_told(&self, wait: Duration) -> bool {
        let deadline = std::time::Instant::now() + wait;
        while !self.told.load(Ordering::Acquire) {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

pub struct StoreInfo {
    pub address: String,
    pub status_address: String,
    /// `raftstore.pd-heartbeat-tick-interval`: a region unchanged this long is reported anyway.
    pub region_heartbeat_interval: Duration,
    /// `raftstore.pd-store-heartbeat-tick-interval`: how often the store tells PD it is up.
    pub store_heartbeat_interval: Duration,
    /// Whether the node is stopping, as its store heartbeats tell PD.
    pub stopping: Arc<Stopping>,
}

fn ident_path(data_dir: &Path) -> PathBuf {
    data_dir.join("store-ident")
}

fn load_ident(data_dir: &Path) -> Result<Option<u64>, String> {
    match std::fs::read_to_string(ident_path(data_dir)) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{} is not a store id", ident_path(data_dir).display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

fn save_ident(data_dir: &Path, id: u64) -> Result<(), String> {
    let path = ident_path(data_dir);
    save_number(&path, id).map_err(|e| format!("cannot save {}: {e}", path.display()))
}

/// Replaces `path` with `n` by fsynced rename.
fn save_number(path: &Path, n: u64) -> std::io::Result<()> {
    node::data_dir::save_atomically(path, format!("{n}\n").as_bytes())
}

fn check(error: Option<wire::Error>) -> Result<(), wire::Error> {
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

pub(crate) async fn connect(endpoints: &[String]) -> Result<PdClient<Channel>, String> {
    let mut last = String::from("no pd endpoints configured");
    for e in endpoints {
        match security::channel(format!("http://{}", config::value::strip_scheme(e))).await {
            Ok(c) => return Ok(PdClient::new(c)),
            Err(err) => last = format!("cannot reach pd at {e}: {err}"),
        }
    }
    Err(last)
}

/// One timestamp from PD's oracle.
async fn pd_ts(client: &mut PdClient<Channel>) -> Result<u64, String> {
    let mut answers = client
        .tso(tokio_stream::once(TsoRequest { count: 1 }))
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    let r = answers
        .message()
        .await
        .map_err(|e| e.to_string())?
        .ok_or("pd ended the tso stream without a timestamp")?;
    check(r.error).map_err(|e| e.message)?;
    let t = r.timestamp.ok_or("pd answered tso without a timestamp")?;
    Ok(base::ts::compose(t.physical as u64, t.logical as u64))
}

/// A new id from PD's allocator.
pub(crate) async fn alloc_id(client: &mut PdClient<Channel>) -> Result<u64, String> {
    let r = client
        .alloc_id(AllocIdRequest {})
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    check(r.error).map_err(|e| e.message)?;
    Ok(r.id)
}

/// This store's id: the saved one, or a new one from PD saved before it is returned. Waits
/// for PD (retrying every [`RETRY_INTERVAL`]) until `stop` says to give up.
pub fn store_id(
    endpoints: &[String],
    data_dir: &Path,
    stop: &dyn Fn() -> bool,
) -> Result<Option<u64>, String> {
    if let Some(id) = load_ident(data_dir)? {
        return Ok(Some(id));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    while !stop() {
        let got = runtime.block_on(async { alloc_id(&mut connect(endpoints).await?).await });
        match got {
            Ok(id) => {
                save_ident(data_dir, id)?;
                return Ok(Some(id));
            }
            Err(e) => {
                tracing::warn!("no store id from pd yet, retrying: {e}");
                std::thread::sleep(RETRY_INTERVAL);
            }
        }
    }
    Ok(None)
}

/// Registers the store (bootstrapping if needed); returns its id.
/// The cluster the pd at `client` serves must be the one this node's data belongs to: the
/// first registration keeps its id in the data dir (`cluster-id`), and a pd of another
/// cluster is refused with both ids named.
async fn check_cluster(client: &mut PdClient<Channel>, data_dir: &Path) -> Result<(), String> {
    let serves = client
        .get_members(wire::GetMembersRequest {})
        .await
        .map_err(|e| e.to_string())?
        .into_inner()
        .cluster_id;
    if serves == 0 {
        // The group's first leader sets it within a tick of taking the lead.
        return Err("the pd has no cluster id yet".into());
    }
    let path = data_dir.join("cluster-id");
    match std::fs::read_to_string(&path) {
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(mine) if mine == serves => Ok(()),
            Ok(mine) => Err(format!(
                "the pd serves cluster {serves}, but this kv node's data belongs to cluster {mine} ({}); point --pd at that cluster's pd",
                path.display()
            )),
            Err(_) => Err(format!("{} is not a cluster id", path.display())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A store from before cluster ids adopts the cluster only if that pd knows it.
            if let Some(store) = load_ident(data_dir)? {
                let known = client
                    .get_store(wire::GetStoreRequest { store_id: store })
                    .await
                    .map_err(|e| e.to_string())?
                    .into_inner()
                    .store
                    .is_some();
                if !known {
                    return Ok(());
                }
            }
            save_number(&path, serves).map_err(|e| format!("cannot save {}: {e}", path.display()))
        }
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

async fn register(
    client: &mut PdClient<Channel>,
    data_dir: &Path,
    info: &StoreInfo,
    regions: &Regions,
) -> Result<u64, String> {
    check_cluster(client, data_dir).await?;
    let id = match load_ident(data_dir)? {
        Some(id) => id,
        None => {
            let id = alloc_id(client).await?;
            save_ident(data_dir, id)?;
            id
        }
    };
    let store = wire::Store {
        id,
        address: info.address.clone(),
        status_address: info.status_address.clone(),
    };
    let bootstrapped = client
        .is_bootstrapped(IsBootstrappedRequest {})
        .await
        .map_err(|e| e.to_string())?
        .into_inner()
        .bootstrapped;
    if !bootstrapped {
        let prepared = match regions.raft() {
            Some(raft) => raft.views().all().into_iter().next().map(|v| v.region),
            None => regions.all().into_iter().next(),
        };
        let region = match prepared {
            Some(prepared) => prepared,
            None => {
                let (region_id, peer_id) = (alloc_id(client).await?, alloc_id(client).await?);
                let region = wire::Region {
                    id: region_id,
                    start_key: vec![],
                    end_key: vec![],
                    region_epoch: Some(wire::RegionEpoch {
                        conf_ver: 1,
                        version: 1,
                    }),
                    peers: vec![wire::Peer {
                        id: peer_id,
                        store_id: id,
                        ..wire::Peer::default()
                    }],
                };
                match regions.raft() {
                    Some(raft) => {
                        let region = region.clone();
                        raft.router()
                            .call(|reply| StoreMsg::Bootstrap { region, reply })
                            .map_err(|e| format!("bootstrapping the first region: {e}"))?;
                    }
                    None => regions.put(region.clone())?,
                }
                region
            }
        };
        let region_id = region.id;
        let r = client
            .bootstrap(BootstrapRequest {
                store: Some(store.clone()),
                region: Some(region),
            })
            .await
            .map_err(|e| e.to_string())?
            .into_inner();
        match check(r.error) {
            Ok(()) => {
                tracing::info!(
                    store_id = id,
                    "bootstrapped the cluster with the first region"
                );
                return Ok(id);
            }
            // Another node bootstrapped first: register as any other store.
            Err(e) if e.r#type == ErrorType::AlreadyBootstrapped as i32 => match regions.raft() {
                Some(raft) => raft
                    .router()
                    .call(|reply| StoreMsg::Destroy { region_id, reply })
                    .map_err(|e| format!("removing the unused first region: {e}"))?,
                None => regions.remove(region_id)?,
            },
            Err(e) => return Err(e.message),
        }
    }
    let r = client
        .put_store(PutStoreRequest { store: Some(store) })
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    check(r.error).map_err(|e| e.message)?;
    Ok(id)
}

/// Reports the regions this store's peers lead whose view changed since the last report
/// (all of them when `force`) with their flow and size, and hands PD's membership changes
/// to raftstore.
async fn leader_heartbeats(
    client: &mut PdClient<Channel>,
    store_id: u64,
    raft: &RaftKv,
    orders: &Orders,
    views: Vec<RegionView>,
    reported: &mut std::collections::HashMap<u64, (Option<wire::RegionEpoch>, u64, Vec<u64>)>,
    force: bool,
) {
    for view in views {
        if view.leader.map(|p| p.store_id) != Some(store_id) {
            continue;
        }
        let key = (
            view.region.region_epoch,
            view.term,
            view.pending_peers.clone(),
        );
        if !force && reported.get(&view.region.id) == Some(&key) {
            continue;
        }
        let report = raft.flows().take_report(view.region.id);
        let beat = client
            .region_heartbeat(RegionHeartbeatRequest {
                region: Some(view.region.clone()),
                leader: view.leader,
                pending_peers: view
                    .region
                    .peers
                    .iter()
                    .filter(|p| view.pending_peers.contains(&p.id))
                    .copied()
                    .collect(),
                bytes_written: report.flow.bytes_written,
                keys_written: report.flow.keys_written,
                bytes_read: report.flow.bytes_read,
                keys_read: report.flow.keys_read,
                interval_ms: report.interval_ms,
                approximate_size: report.approximate_size,
                approximate_keys: report.approximate_keys,
            })
            .await
            .map(|r| r.into_inner());
        let region_id = view.region.id;
        match beat {
            Ok(r) if r.error.is_some() => tracing::warn!(
                region_id,
                "region heartbeat refused: {}",
                r.error.map(|e| e.message).unwrap_or_default()
            ),
            Ok(r) => {
                reported.insert(region_id, key);
                let step = wire::RegionOperator {
                    region_id,
                    change_peer: r.change_peer,
                    transfer_leader: r.transfer_leader,
                    split_region: r.split_region,
                    merge_region: r.merge_region,
                };
                follow_order(raft.router(), orders, step);
            }
            Err(e) => tracing::warn!(region_id, "region heartbeat failed: {e}"),
        }
    }
}

/// Does what PD asked of a region this store leads: a membership change, a leader transfer,
/// a split or a merge; the outcome shows in a later heartbeat.
fn follow_order(router: &RaftRouter, orders: &Orders, step: wire::RegionOperator) {
    let region_id = step.region_id;
    if let Some(change) = step.change_peer {
        propose_change(router, region_id, change);
    }
    if let Some(to) = step.transfer_leader.and_then(|t| t.peer) {
        (orders.move_leader)(region_id, to.id);
    }
    if let Some(split) = step.split_region {
        (orders.split_region)(region_id, split);
    }
    if let Some(merge) = step.merge_region {
        (orders.merge_region)(region_id, merge.target);
    }
}

/// What PD may ask of a region led here that happens off this thread.
pub struct Orders {
    /// Move the leadership to a peer (`hand_off::transfer_region`): `(region id, peer id)`.
    pub move_leader: Box<dyn Fn(u64, u64) + Send>,
    /// Split the region, at the epoch version given, at the keys, or in halves when there
    /// are none (the split checker's [`crate::split_checker::Wake::Split`]).
    pub split_region: Box<dyn Fn(u64, wire::SplitRegion) + Send>,
    /// Merge the region into its neighbour (`hand_off::merge_region`): `(source, target)`.
    pub merge_region: Box<dyn Fn(u64, u64) + Send>,
}

/// Proposes PD's membership change; the outcome shows in a later heartbeat.
fn propose_change(router: &RaftRouter, region_id: u64, step: wire::ChangePeer) {
    use proto::raft::change_peer::Kind;
    let kind = match wire::ConfChangeType::try_from(step.change_type) {
        Ok(wire::ConfChangeType::AddNode) => Kind::AddNode,
        Ok(wire::ConfChangeType::RemoveNode) => Kind::RemoveNode,
        Ok(wire::ConfChangeType::AddLearnerNode) => Kind::AddLearnerNode,
        Err(_) => return,
    };
    tracing::info!(region_id, ?kind, peer = ?step.peer, "pd asks for a membership change");
    let _ = router.send(StoreMsg::ChangePeers {
        region_id,
        changes: vec![proto::raft::ChangePeer {
            kind: kind as i32,
            peer: step.peer,
        }],
        reply: Box::new(move |r| {
            if let Err(e) = r {
                tracing::info!(region_id, "membership change not applied: {e}");
            }
        }),
    });
}

/// Tells PD the regions this store serves, with itself as leader.
async fn region_heartbeats(client: &mut PdClient<Channel>, store_id: u64, regions: &Regions) {
    for region in regions.all() {
        let leader = region
            .peers
            .iter()
            .find(|p| p.store_id == store_id)
            .cloned();
        let beat = client
            .region_heartbeat(RegionHeartbeatRequest {
                region: Some(region.clone()),
                leader,
                ..RegionHeartbeatRequest::default()
            })
            .await;
        match beat.map(|r| r.into_inner().error) {
            Ok(None) => {}
            Ok(Some(e)) => tracing::warn!(
                region_id = region.id,
                "region heartbeat refused: {}",
                e.message
            ),
            Err(e) => tracing::warn!(region_id = region.id, "region heartbeat failed: {e}"),
        }
    }
}

pub fn spawn(
    endpoints: Vec<String>,
    data_dir: PathBuf,
    info: StoreInfo,
    regions: Arc<Regions>,
    sync_max_ts: Box<dyn Fn(u64) + Send>,
    orders: Orders,
    stop: Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("pd-worker".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime starts");
            // A restarted node serves its regions before PD answers.
            match load_ident(&data_dir) {
                Ok(Some(id)) => regions.set_store_id(id),
                Ok(None) => {}
                Err(e) => tracing::warn!("{e}"),
            }
            let mut registered: Option<(PdClient<Channel>, u64)> = None;
            let mut reported = std::collections::HashMap::new();
            let mut last_store_beat = std::time::Instant::now();
            let mut last_full_report = std::time::Instant::now();
            loop {
                // A heartbeat that failed as a broken connection does: the pd member may be
                // gone, so the next round connects (to whichever member answers) again.
                let mut lost = false;
                let wait = match registered.as_mut() {
                    None => match runtime.block_on(async {
                        let mut client = connect(&endpoints).await?;
                        // Before bootstrap, so a new cluster's clients never meet it unsynced.
                        sync_max_ts(pd_ts(&mut client).await?);
                        let id = register(&mut client, &data_dir, &info, &regions).await?;
                        regions.set_store_id(id);
                        if regions.raft().is_none() {
                            region_heartbeats(&mut client, id, &regions).await;
                        }
                        Ok::<_, String>((client, id))
                    }) {
                        Ok((client, id)) => {
                            STORE_ID.store(id, Ordering::Relaxed);
                            tracing::info!(store_id = id, "registered with pd");
                            registered = Some((client, id));
                            Duration::ZERO
                        }
                        Err(e) => {
                            tracing::warn!("not registered with pd yet, retrying: {e}");
                            RETRY_INTERVAL
                        }
                    },
                    Some((client, id)) => {
                        // With replication on, the store heartbeat is how PD's operators
                        // for this store's regions arrive: at least every OPERATOR_POLL.
                        let store_beat_every = match regions.raft() {
                            Some(_) => info.store_heartbeat_interval.min(OPERATOR_POLL),
                            None => info.store_heartbeat_interval,
                        };
                        let stopping = &info.stopping;
                        let leaving = stopping.begun.load(Ordering::Acquire);
                        let store_beat_due = last_store_beat.elapsed() >= store_beat_every
                            || (leaving && !stopping.told.load(Ordering::Acquire));
                        let beat = runtime.block_on(async {
                            if let Some(raft) = regions.raft() {
                                if regions.take_max_ts_wanted() {
                                    let table = raft.lock_table();
                                    let generation = table.generation();
                                    match pd_ts(client).await {
                                        Ok(ts) if table.sync_max_ts_since(ts, generation) => {}
                                        // Reloaded meanwhile: the next poll takes a newer ts.
                                        Ok(_) => regions.want_max_ts(),
                                        Err(e) => {
                                            tracing::warn!("max_ts not synced, retrying: {e}");
                                            regions.want_max_ts();
                                        }
                                    }
                                }
                                let force =
                                    last_full_report.elapsed() >= info.region_heartbeat_interval;
                                if force {
                                    last_full_report = std::time::Instant::now();
                                }
                                let views = raft.views().all();
                                leader_heartbeats(
                                    client,
                                    *id,
                                    raft,
                                    &orders,
                                    views,
                                    &mut reported,
                                    force,
                                )
                                .await;
                            } else if store_beat_due {
                                region_heartbeats(client, *id, &regions).await;
                            }
                            if !store_beat_due {
                                return None;
                            }
                            Some(
                                client
                                    .store_heartbeat(StoreHeartbeatRequest {
                                        store_id: *id,
                                        stopping: leaving,
                                    })
                                    .await,
                            )
                        });
                        if let Some(beat) = beat {
                            last_store_beat = std::time::Instant::now();
                            match beat.map(|r| r.into_inner()) {
                                Ok(r)
                                    if r.error.as_ref().is_some_and(|e| {
                                        e.r#type == ErrorType::StoreTombstone as i32
                                    }) =>
                                {
                                    // Deleted and emptied: this node has nothing left to
                                    // serve and may not come back. It stops as on SIGTERM.
                                    tracing::error!(
                                        store_id = *id,
                                        "pd says this store is a tombstone: stopping"
                                    );
                                    // SAFETY: signalling this process.
                                    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
                                }
                                Ok(r) if r.error.is_some() => tracing::warn!(
                                    "store heartbeat refused: {}",
                                    r.error.map(|e| e.message).unwrap_or_default()
                                ),
                                Ok(r) => {
                                    if leaving {
                                        stopping.told.store(true, Ordering::Release);
                                    }
                                    for op in r.operators {
                                        if let Some(raft) = regions.raft() {
                                            follow_order(raft.router(), &orders, op);
                                        }
                                    }
                                }
                                Err(e) => {
                                    tracing::warn!("store heartbeat failed: {e}");
                                    lost = true;
                                }
                            }
                        }
                        if regions.raft().is_some() {
                            REPLICATED_POLL_INTERVAL
                        } else {
                            info.store_heartbeat_interval
                        }
                    }
                };
                if lost {
                    registered = None;
                }
                match stop.recv_timeout(wait) {
                    Err(RecvTimeoutError::Timeout) => continue,
                    _ => return,
                }
            }
        })
        .expect("the OS starts the pd worker")
}
