//! [`Store`]: every region peer of one kv node, driven in rounds. A round
//! ([`Store::handle_readies`]) takes the readies of all peers that have one into one
//! raft-engine write per store-io thread ([`LogTask`]), then applies what every peer
//! committed with one kv engine write. Messages, proposals and ticks come in between rounds.
//!
//! With `store_io_threads` 0 the round makes its write itself (one fdatasync for all regions).
//! Otherwise the round hands its writes out ([`Store::take_log_tasks`]) and goes on; a
//! store-io thread makes them durable, merging what queued up into one write and one
//! fdatasync, and the store hears of it ([`Store::on_log_written`]) between rounds. A region's
//! writes always go to the same thread, so they land in the order they were made.
//!
//! The store owns no thread but one: with `snapshot_worker` (a kv node's setting) the files of
//! the snapshots leaders ask for are built on `snap-gen` ([`SnapWorker`]), since a region's
//! scan would hold up every region's round; without it, in the round. A test calls the store
//! step by step with a clock it moves itself and makes the log tasks' writes when it
//! chooses, and the node runs it on its raftstore and store-io threads.
//!
//! Membership: a message for a region this store holds no peer of creates an uninitialized
//! peer (unless the store removed that peer before: its tombstone stays), which the
//! leader's snapshot initializes. A peer whose region no longer lists it is destroyed: a
//! fsynced tombstone in the kv engine, then its log is cleared.
//!
//! Splits: applying a split saves the new regions in the same kv write as the parent's
//! narrower range, then creates their peers here; the parent's leader makes its new peers
//! campaign at once. A message for a region this store has no peer of, whose range one of its
//! peers still covers, is dropped: that peer has a split to apply first. A vote among them is
//! kept ([`PENDING_VOTES_MAX`]) and handed to the new peer once the split creates it, so the
//! new region elects its leader without waiting out an election timeout (TiKV's
//! `pending_msgs`). A split never replaces a peer that already holds data, or one this store
//! removed since.
//!
//! Merges: a merge's commit step brings this store's replica of the source up to the merge
//! and retires it in the same kv write that widens the target ([`crate::merge`]); the source
//! peer is destroyed once that write landed. Its tombstone says it merged: a message from a
//! replica of it that missed the merge is answered so, and a snapshot covering that replica
//! then retires it ([`merge::superseded_by`]).
//!
//! Durability: a follower acknowledges entries (and a voter votes) only after the log write
//! that carries them returned. The kv engine's apply batch is not fsynced, except one that truncates
//! the log: the log is the redo record of everything above the applied index saved with the
//! data, and raft-engine drops entries only once the state they produced is on disk.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use engine::{KvEngine, WriteBatch};
use proto::pd::Region;
use proto::raft::{ApplyState, ChangePeer, RaftCmd, RaftMessage};
use protobuf::Message as _;
use raft::eraftpb::{Entry, MessageType};
use raft_log::{LogEngine, LogWrite};

use crate::apply::ApplyOutcome;
use crate::config::RaftstoreConfig;
use crate::peer::{Peer, Reply, Unpersisted};
use crate::stats::StoreStats;
use crate::{Error, Result, merge, snapshot, state};

/// Where a store's outgoing Raft messages go.
pub trait Transport {
    fn send(&mut self, msg: RaftMessage);
}

/// A round's raft-engine write for one store-io thread; [`Store::on_log_written`] hears
/// `seq` once it is durable.
pub struct LogTask {
    pub seq: u64,
    /// Which store-io thread writes it (a region always has the same one).
    pub io_thread: usize,
    pub write: LogWrite,
}

/// Makes `write` durable: the one place a store's log writes happen, inline or on a
/// store-io thread. An error is the disk failing.
pub fn write_log(log: &LogEngine, stats: &StoreStats, write: &mut LogWrite) -> Result<()> {
    fail::fail_point!("raft_before_log_write");
    if !write.is_empty() {
        let (started, synced) = (Instant::now(), write.will_sync());
        log.write(write)?;
        stats.log_write(started.elapsed(), synced);
    }
    fail::fail_point!("raft_after_log_write");
    Ok(())
}

/// Votes for regions a pending split is about to create here, kept at most.
pub const PENDING_VOTES_MAX: usize = 1024;
/// How long such a vote is kept: a candidate asks again after an election timeout.
pub const PENDING_VOTE_TTL: std::time::Duration = std::time::Duration::from_secs(10);

pub struct Store<E: KvEngine, T: Transport> {
    store_id: u64,
    engine: E,
    log: LogEngine,
    transport: T,
    peers: BTreeMap<u64, Peer>,
    /// Regions whose peer this store removed, with that peer's id.
    tombstones: BTreeMap<u64, u64>,
    /// Log tasks made and not yet durable, by seq: their store-io thread, and what each
    /// peer's Ready waits for.
    unpersisted: BTreeMap<u64, (usize, Vec<(u64, Unpersisted)>)>,
    /// Log tasks made and not yet taken by a store-io thread.
    log_tasks: Vec<LogTask>,
    /// Per store-io thread, what rides with its next write (hard states in which only the
    /// commit index moved: see [`Peer::collect_ready`]).
    deferred: Vec<LogWrite>,
    next_seq: u64,
    /// Regions whose removed peer's log is being cleared, with the seq of that write: no new
    /// peer of them is created before it lands.
    clearing: BTreeMap<u64, u64>,
    /// Votes for regions this store has no peer of yet, whose range a peer here still covers
    /// (see the module header), by region, with when they came; kept [`PENDING_VOTE_TTL`].
    pending_votes: BTreeMap<u64, (Instant, RaftMessage)>,
    /// Ticks since the store opened.
    ticks: u64,
    /// With `cfg.snapshot_worker`: the thread that builds snapshot files.
    snap_worker: Option<SnapWorker>,
    cfg: Arc<RaftstoreConfig>,
    logger: slog::Logger,
    stats: Arc<StoreStats>,
}

/// The `snap-gen` thread: a region's snapshot file takes a scan of the whole region and
/// may take seconds, while every region of the store waits for a round on the raftstore
/// thread. It builds one file at a time, in the order asked; a region is asked once until
/// its file is built. It stops when the store is dropped.
struct SnapWorker {
    jobs: std::sync::mpsc::Sender<u64>,
    built: std::sync::mpsc::Receiver<(u64, Result<raft::eraftpb::Snapshot>)>,
    /// Regions whose file is being built.
    building: std::collections::BTreeSet<u64>,
}

impl SnapWorker {
    fn start<E: KvEngine>(
        engine: E,
        dir: std::path::PathBuf,
        stats: Arc<StoreStats>,
    ) -> Result<SnapWorker> {
        let (jobs, asked) = std::sync::mpsc::channel::<u64>();
        let (done, built) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("snap-gen".into())
            .spawn(move || {
                for region_id in asked {
                    let result = build_snapshot(&engine, &dir, &stats, region_id);
                    if done.send((region_id, result)).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Corrupt(format!("cannot start the snap-gen thread: {e}")))?;
        Ok(SnapWorker {
            jobs,
            built,
            building: Default::default(),
        })
    }
}

/// Builds region `region_id`'s snapshot file in `dir` and counts it.
fn build_snapshot<E: KvEngine>(
    engine: &E,
    dir: &std::path::Path,
    stats: &StoreStats,
    region_id: u64,
) -> Result<raft::eraftpb::Snapshot> {
    stats.snapshots_built.fetch_add(1, Ordering::Relaxed);
    snapshot::generate(engine, dir, region_id)
}

impl<E: KvEngine, T: Transport> Store<E, T> {
    /// Opens store `store_id` with the peers it held: each region saved in `engine`'s meta CF,
    /// its log in `log`.
    pub fn open(
        store_id: u64,
        engine: E,
        log: LogEngine,
        transport: T,
        cfg: RaftstoreConfig,
    ) -> Result<Store<E, T>> {
        cfg.validate().map_err(Error::Corrupt)?;
        snapshot::clear_dir(&cfg.snap_dir)?;
        let cfg = Arc::new(cfg);
        let logger = raft_log::logger::raft_logger().new(slog::o!("store_id" => store_id));
        let mut peers = BTreeMap::new();
        let (regions, tombstones) = state::load_regions(&engine, store_id)?;
        // A crash between a peer's tombstone and the clearing of its log leaves the log.
        let logged = log.groups();
        let mut write = LogWrite::default();
        for id in tombstones.keys().filter(|id| logged.contains(id)) {
            write.clear(*id);
        }
        log.write(&mut write)?;
        for (region, apply) in regions {
            let peer = Peer::open(store_id, region, apply, &log, cfg.clone(), &logger)?;
            peers.insert(peer.region().id, peer);
        }
        for peer in peers.values_mut() {
            peer.campaign_if_alone()?;
        }
        let stats: Arc<StoreStats> = Arc::default();
        let snap_worker = match cfg.snapshot_worker {
            true => Some(SnapWorker::start(
                engine.clone(),
                cfg.snap_dir.clone(),
                stats.clone(),
            )?),
            false => None,
        };
        Ok(Store {
            store_id,
            engine,
            log,
            transport,
            peers,
            tombstones,
            unpersisted: BTreeMap::new(),
            log_tasks: Vec::new(),
            deferred: std::iter::repeat_with(LogWrite::default)
                .take(cfg.store_io_threads.max(1))
                .collect(),
            next_seq: 0,
            clearing: BTreeMap::new(),
            pending_votes: BTreeMap::new(),
            ticks: 0,
            snap_worker,
            cfg,
            logger,
            stats,
        })
    }

    /// What the store counts, for `/metrics`.
    pub fn stats(&self) -> &Arc<StoreStats> {
        &self.stats
    }

    /// The length of one tick.
    pub fn base_tick(&self) -> std::time::Duration {
        self.cfg.base_tick
    }

    pub fn store_id(&self) -> u64 {
        self.store_id
    }

    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// How many store-io threads write this store's log (0: its rounds do).
    pub fn io_threads(&self) -> usize {
        self.cfg.store_io_threads
    }

    /// The raft-engine the store writes, for its store-io threads.
    pub fn log(&self) -> &LogEngine {
        &self.log
    }

    pub fn peer(&self, region_id: u64) -> Option<&Peer> {
        self.peers.get(&region_id)
    }

    pub fn peers(&self) -> impl Iterator<Item = &Peer> {
        self.peers.values()
    }

    /// Creates this store's peer of a new region whose every initial peer starts from the
    /// same state: an empty log truncated at [`state::INIT_LOG_INDEX`]. Durable on return.
    pub fn bootstrap_region(&mut self, region: Region) -> Result<()> {
        if self.peers.contains_key(&region.id) {
            return Err(Error::Corrupt(format!(
                "region {} exists on store {} already",
                region.id, self.store_id
            )));
        }
        let apply = state::initial_apply_state();
        let mut wb = self.engine.write_batch();
        state::put_region(&mut wb, &region);
        state::put_apply_state(&mut wb, region.id, &apply);
        self.engine.write(wb, true)?;
        let peer = Peer::open(
            self.store_id,
            region,
            apply,
            &self.log,
            self.cfg.clone(),
            &self.logger,
        )?;
        let mut peer = peer;
        peer.campaign_if_alone()?;
        self.peers.insert(peer.region().id, peer);
        Ok(())
    }

    fn peer_mut(&mut self, region_id: u64) -> Result<&mut Peer> {
        self.peers
            .get_mut(&region_id)
            .ok_or(Error::RegionNotFound(region_id))
    }

    /// A Raft message from another store. One for a region this store has no peer of
    /// creates an uninitialized peer, unless this store removed that very peer before.
    ///
    /// A message for a newer peer of a region than the one this store holds means this
    /// store's peer was removed while it did not hear of it (stopped, cut off) and the region
    /// added this store back: the stale peer is destroyed and the new one created. A message
    /// for an older peer is stale and dropped.
    pub fn on_raft_message(&mut self, msg: &RaftMessage) -> Result<()> {
        if msg.merged_away {
            // Another store's replica of the region merged away: the region is gone, and
            // this peer missed the merge. It stays (this store's target replica may still
            // take it in from its log), but a snapshot of a region covering it retires it.
            let to = msg.to_peer.map(|p| p.id);
            if let Some(peer) = self.peers.get_mut(&msg.region_id)
                && Some(peer.peer_id()) == to
                && !peer.merged_away()
            {
                tracing::info!(
                    store_id = self.store_id,
                    region_id = msg.region_id,
                    "the region merged away while this replica lagged"
                );
                peer.set_merged_away();
            }
            return Ok(());
        }
        let mut superseded = Vec::new();
        if snapshot::SnapKey::of_message(msg).is_some() {
            // A snapshot's file is checked before raft-rs sees it: raft-rs takes a snapshot
            // it accepts as the peer's state, so a bad one must not get that far. Nor one
            // whose range another region here holds now (TiKV's `check_snapshot`): made
            // before a split that created that region's peer here, it would overwrite it.
            let raw = raft::eraftpb::Message::parse_from_bytes(&msg.message)
                .map_err(|e| Error::Corrupt(format!("raft message: {e}")))?;
            let region = snapshot::verify(&self.cfg.snap_dir, msg.region_id, &raw)?;
            let overlapping: Vec<&Peer> = (self.peers.values())
                .filter(|p| p.is_initialized() && p.region().id != msg.region_id)
                .filter(|p| overlaps(p.region(), &region.start_key, &region.end_key))
                .collect();
            if let Some(other) = overlapping
                .iter()
                .find(|p| !merge::superseded_by(p, &region))
            {
                snapshot::discard(&self.cfg.snap_dir, msg.region_id, &raw);
                return Err(Error::SnapshotOverlaps {
                    region_id: msg.region_id,
                    other: other.region().id,
                });
            }
            // Merge sources the snapshot's region took in while this store's replica of it
            // lagged: retired below once raft-rs took the snapshot.
            superseded = overlapping.iter().map(|p| p.region().id).collect();
        }
        let to = msg.to_peer.map_or(0, |p| p.id);
        if let Some(local) = self.peers.get(&msg.region_id).map(Peer::peer_id) {
            if to < local {
                return Ok(());
            }
            if to > local {
                tracing::info!(
                    store_id = self.store_id,
                    region_id = msg.region_id,
                    stale = local,
                    new = to,
                    "a newer peer of the region is addressed here: the old one was removed"
                );
                self.destroy_peer(msg.region_id)?;
            }
        }
        if !self.peers.contains_key(&msg.region_id) {
            self.maybe_create_peer(msg)?;
        }
        let peer = self.peer_mut(msg.region_id)?;
        if msg.to_peer.map(|p| p.id) != Some(peer.peer_id()) {
            return Err(Error::Corrupt(format!(
                "message for peer {:?} of region {} reached peer {}",
                msg.to_peer.map(|p| p.id),
                msg.region_id,
                peer.peer_id()
            )));
        }
        peer.step(msg)?;
        // raft-rs may still drop a snapshot (stale, or its entries known): the sources it
        // covers go only once the peer will install it.
        if peer.installs_snapshot() {
            for source in superseded {
                tracing::info!(
                    store_id = self.store_id,
                    region_id = source,
                    target = msg.region_id,
                    "a snapshot of the region that took this one in covers it: retired"
                );
                self.remove_peer(source, true)?;
            }
        }
        Ok(())
    }

    fn maybe_create_peer(&mut self, msg: &RaftMessage) -> Result<()> {
        let Some(to) = msg.to_peer.filter(|p| p.store_id == self.store_id) else {
            return Err(Error::RegionNotFound(msg.region_id));
        };
        if self
            .tombstones
            .get(&msg.region_id)
            .is_some_and(|&removed| to.id <= removed)
            || self.clearing.contains_key(&msg.region_id)
        {
            // The message is dropped; once the old peer's log is cleared a retry creates the
            // new peer.
            self.answer_stale(msg)?;
            return Err(Error::RegionNotFound(msg.region_id));
        }
        // A merge source the sender's region took in is no cover: the sender's new peer gets
        // a snapshot here, which retires it.
        let sender = Region {
            id: msg.region_id,
            region_epoch: msg.region_epoch,
            start_key: msg.start_key.clone(),
            end_key: msg.end_key.clone(),
            ..Region::default()
        };
        let covered = (self.peers.values())
            .filter(|p| p.is_initialized() && !merge::superseded_by(p, &sender))
            .any(|p| overlaps(p.region(), &msg.start_key, &msg.end_key));
        if covered {
            let vote = raft::eraftpb::Message::parse_from_bytes(&msg.message).is_ok_and(|m| {
                matches!(
                    m.get_msg_type(),
                    MessageType::MsgRequestVote | MessageType::MsgRequestPreVote
                )
            });
            if vote {
                self.pending_votes
                    .retain(|_, (at, _)| at.elapsed() < PENDING_VOTE_TTL);
                if self.pending_votes.len() < PENDING_VOTES_MAX
                    || self.pending_votes.contains_key(&msg.region_id)
                {
                    (self.pending_votes).insert(msg.region_id, (Instant::now(), msg.clone()));
                }
            }
            return Err(Error::RegionNotFound(msg.region_id));
        }
        let region = Region {
            id: msg.region_id,
            region_epoch: msg.region_epoch,
            peers: vec![to],
            ..Region::default()
        };
        if self.tombstones.remove(&msg.region_id).is_some() {
            // The region's log will hold this peer's hard state (its votes) from now on: the
            // tombstone that would clear that log at the next start goes first, replaced by
            // this uninitialized peer (applied index 0), which a restart opens again.
            let mut wb = self.engine.write_batch();
            state::put_region(&mut wb, &region);
            state::put_apply_state(&mut wb, region.id, &ApplyState::default());
            self.engine.write(wb, true)?;
        }
        let peer = Peer::open(
            self.store_id,
            region,
            ApplyState::default(),
            &self.log,
            self.cfg.clone(),
            &self.logger,
        )?;
        tracing::info!(
            store_id = self.store_id,
            region_id = msg.region_id,
            peer_id = to.id,
            "created an uninitialized peer for a message from {:?}",
            msg.from_peer.map(|p| p.id)
        );
        self.peers.insert(msg.region_id, peer);
        Ok(())
    }

    /// Proposes a membership change to `region_id`.
    pub fn propose_conf_change(
        &mut self,
        region_id: u64,
        changes: Vec<ChangePeer>,
        reply: Reply,
        now: Instant,
    ) {
        match self.peers.get_mut(&region_id) {
            Some(peer) => peer.propose_conf_change(changes, reply, now),
            None => reply(Err(Error::RegionNotFound(region_id))),
        }
    }

    /// Proposes `cmd` to `region_id`; `reply` hears once, when it applied or why it did not.
    pub fn propose(&mut self, region_id: u64, cmd: RaftCmd, reply: Reply, now: Instant) {
        match self.peers.get_mut(&region_id) {
            Some(peer) => peer.propose(cmd, reply, now),
            None => reply(Err(Error::RegionNotFound(region_id))),
        }
    }

    /// A linearizable read of `region_id` through ReadIndex (see [`Peer::read_index`]).
    pub fn read_index(&mut self, region_id: u64, reply: Reply, now: Instant) {
        match self.peers.get_mut(&region_id) {
            Some(peer) => peer.read_index(reply, now),
            None => reply(Err(Error::RegionNotFound(region_id))),
        }
    }

    /// One base tick for every peer; every `merge_check_ticks`, the merges prepared here
    /// move on ([`merge::check_merges`]).
    pub fn tick(&mut self, now: Instant) {
        for peer in self.peers.values_mut() {
            peer.tick(now);
        }
        self.ticks += 1;
        if self
            .ticks
            .is_multiple_of(self.cfg.merge_check_ticks.max(1) as u64)
        {
            merge::check_merges(&mut self.peers, &self.tombstones, &self.engine, now);
        }
    }

    /// This store saw `store_id` refuse connections: its leaders are gone (see
    /// [`Peer::on_store_gone`]).
    pub fn on_store_gone(&mut self, store_id: u64) {
        for peer in self.peers.values_mut() {
            if let Err(e) = peer.on_store_gone(store_id) {
                tracing::warn!(region_id = peer.region().id, "early campaign failed: {e}");
            }
        }
    }

    pub fn campaign(&mut self, region_id: u64) -> Result<()> {
        self.peer_mut(region_id)?.campaign()
    }

    /// See [`Peer::transfer_leader`]: whether the transfer began.
    pub fn transfer_leader(
        &mut self,
        region_id: u64,
        to_peer_id: u64,
        now: Instant,
    ) -> Result<bool> {
        Ok(self.peer_mut(region_id)?.transfer_leader(to_peer_id, now))
    }

    /// See [`Peer::report_snapshot`].
    pub fn report_snapshot(
        &mut self,
        region_id: u64,
        to_peer_id: u64,
        delivered: bool,
    ) -> Result<()> {
        self.peer_mut(region_id)?
            .report_snapshot(to_peer_id, delivered);
        Ok(())
    }

    /// Hands the region's leadership to [`Peer::transfer_target`]; the peer it went to, if
    /// this peer leads and has a follower to give it to.
    pub fn hand_off_leadership(&mut self, region_id: u64, now: Instant) -> Result<Option<u64>> {
        let peer = self.peer_mut(region_id)?;
        let target = peer.transfer_target();
        if let Some(to) = target {
            peer.transfer_leader(to, now);
        }
        Ok(target)
    }

    pub fn has_ready(&self) -> bool {
        self.peers
            .iter()
            .any(|(&id, p)| p.has_ready() && !self.snapshot_waits(id, p))
    }

    /// Whether `peer`'s snapshot Ready must wait: it is written in the round itself (see
    /// [`Peer::installs_snapshot`]), so nothing of its region may be on its way to disk, and
    /// the writes of its store-io thread may carry the region's deferred hard state.
    fn snapshot_waits(&self, region_id: u64, peer: &Peer) -> bool {
        let io_thread = io_thread_of(region_id, self.cfg.store_io_threads);
        peer.installs_snapshot() && self.unpersisted.values().any(|(t, _)| *t == io_thread)
    }

    /// One round for every peer with something to do (see the module header). An error here
    /// is the store's disk failing: the caller stops the store.
    pub fn handle_readies(&mut self, now: Instant) -> Result<()> {
        let io_threads = self.cfg.store_io_threads.max(1);
        let mut writes: Vec<(LogWrite, Vec<(u64, Unpersisted)>)> = Vec::new();
        writes.resize_with(io_threads, Default::default);
        let mut send = Vec::new();
        let mut committed: BTreeMap<u64, Vec<Entry>> = BTreeMap::new();
        let waiting_snapshots: Vec<u64> = (self.peers.iter())
            .filter(|&(&id, p)| self.snapshot_waits(id, p))
            .map(|(&id, _)| id)
            .collect();
        for (&id, peer) in self.peers.iter_mut() {
            if waiting_snapshots.contains(&id) {
                continue;
            }
            let io_thread = io_thread_of(id, self.cfg.store_io_threads);
            let (write, waiting) = &mut writes[io_thread];
            let later = &mut self.deferred[io_thread];
            let entries = committed.entry(id).or_default();
            let (engine, stats, dir) = (&self.engine, &self.stats, &self.cfg.snap_dir);
            let install = |snap: &raft::eraftpb::Snapshot| {
                fail::fail_point!("snapshot_before_apply");
                let installed = snapshot::apply(engine, dir, snap)?;
                stats.snapshots_applied.fetch_add(1, Ordering::Relaxed);
                fail::fail_point!("snapshot_after_apply");
                tracing::info!(
                    store_id = self.store_id,
                    region_id = id,
                    index = installed.1.applied_index,
                    "applied a snapshot"
                );
                Ok(installed)
            };
            if peer.installs_snapshot() {
                // Written here and now (see `Peer::installs_snapshot`), behind what was
                // deferred for its thread; nothing of that thread's is in flight.
                let mut own = std::mem::take(later);
                match peer.collect_ready(&mut own, later, &mut send, entries, now, install)? {
                    Some(u) => {
                        write_log(&self.log, &self.stats, &mut own)?;
                        peer.on_persisted(u, &mut send);
                    }
                    None => *later = own,
                }
            } else if let Some(u) =
                peer.collect_ready(write, later, &mut send, entries, now, install)?
            {
                waiting.push((id, u));
            }
        }
        self.send_all(&mut send);
        for (io_thread, (write, waiting)) in writes.into_iter().enumerate() {
            if !write.is_empty() || !waiting.is_empty() {
                self.submit(io_thread, write, waiting)?;
            }
        }
        self.apply(committed, Instant::now())?;
        self.provide_snapshots();
        Ok(())
    }

    /// Makes `write` (behind what was deferred for its thread) durable now (no store-io
    /// threads) or queues it for its thread.
    fn submit(
        &mut self,
        io_thread: usize,
        mut write: LogWrite,
        waiting: Vec<(u64, Unpersisted)>,
    ) -> Result<()> {
        let mut all = std::mem::take(&mut self.deferred[io_thread]);
        all.merge(&mut write)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.unpersisted.insert(seq, (io_thread, waiting));
        if self.cfg.store_io_threads == 0 {
            write_log(&self.log, &self.stats, &mut all)?;
            self.on_log_written(seq);
        } else {
            self.log_tasks.push(LogTask {
                seq,
                io_thread,
                write: all,
            });
        }
        Ok(())
    }

    /// The log writes made since the last call, for the store-io threads.
    pub fn take_log_tasks(&mut self) -> Vec<LogTask> {
        std::mem::take(&mut self.log_tasks)
    }

    /// The log task `seq` is durable: its peers' Readies finish (step 2 of
    /// [`crate::peer`]), and a follower's acks and votes leave.
    pub fn on_log_written(&mut self, seq: u64) {
        let Some((_, waiting)) = self.unpersisted.remove(&seq) else {
            return;
        };
        self.clearing.retain(|_, s| *s != seq);
        let mut send = Vec::new();
        for (id, u) in waiting {
            if let Some(peer) = self.peers.get_mut(&id) {
                peer.on_persisted(u, &mut send);
            }
        }
        self.send_all(&mut send);
    }

    /// Builds the snapshots leaders asked for in this round (on the `snap-gen` thread if
    /// there is one), and hands raft-rs those built since the last round.
    fn provide_snapshots(&mut self) {
        let mut built = Vec::new();
        if let Some(worker) = &mut self.snap_worker {
            while let Ok((region_id, result)) = worker.built.try_recv() {
                worker.building.remove(&region_id);
                built.push((region_id, result));
            }
        }
        for peer in self.peers.values_mut() {
            if !peer.take_snapshot_request() {
                continue;
            }
            let region_id = peer.region().id;
            if peer.merging().is_some() {
                // A merging source truncates no log, so no peer should need one; a snapshot
                // without the merge state would make a replica that never merges.
                tracing::warn!(region_id, "no snapshot of a merging region");
                continue;
            }
            match &mut self.snap_worker {
                Some(worker) => {
                    if worker.building.insert(region_id) {
                        let _ = worker.jobs.send(region_id);
                    }
                }
                None => {
                    let (engine, dir) = (&self.engine, &self.cfg.snap_dir);
                    let result = build_snapshot(engine, dir, &self.stats, region_id);
                    built.push((region_id, result));
                }
            }
        }
        for (region_id, result) in built {
            match (result, self.peers.get_mut(&region_id)) {
                (Ok(snap), Some(peer)) => peer.set_snapshot(snap),
                (Ok(_), None) => {}
                (Err(e), _) => tracing::warn!(region_id, "cannot build a snapshot: {e}"),
            }
        }
    }

    /// Applies what the peers committed (by `committed_at`) with one kv write. A merge's
    /// commit step brings this store's replica of its source up to the merge in the same
    /// write (the source's own entries of the round, if it comes later, are dropped with it).
    fn apply(&mut self, committed: BTreeMap<u64, Vec<Entry>>, committed_at: Instant) -> Result<()> {
        let mut wb = self.engine.write_batch();
        let mut sync = false;
        let mut outcomes: Vec<(u64, Vec<Entry>, ApplyOutcome)> = Vec::new();
        let mut merged = Vec::new();
        for (id, entries) in committed {
            if entries.is_empty() || merged.contains(&id) {
                continue;
            }
            // Out of the map while it applies, so its merge may reach its source peer.
            let mut peer = self.peers.remove(&id).expect("peer of committed entries");
            let peers = &mut self.peers;
            let applied = peer.apply(&entries, &mut wb, &mut |commit, wb| {
                merge::catch_up_source(peers, id, commit, wb)
            });
            self.peers.insert(id, peer);
            let mut outcome = applied?;
            merged.extend(&outcome.merged_sources);
            outcome
                .new_regions
                .retain(|r| self.may_create_split_peer(r));
            for region in &outcome.new_regions {
                state::put_region(&mut wb, region);
                state::put_apply_state(&mut wb, region.id, &state::initial_apply_state());
            }
            sync |= outcome.sync;
            outcomes.push((id, entries, outcome));
        }
        if outcomes.is_empty() {
            return Ok(());
        }
        if !wb.is_empty() {
            fail::fail_point!("apply_before_kv_write");
            let started = Instant::now();
            self.engine.write(wb, sync)?;
            self.stats.apply_write(
                started.saturating_duration_since(committed_at),
                started.elapsed(),
            );
            fail::fail_point!("apply_after_kv_write");
        }
        let prepared = outcomes.iter().any(|(_, _, o)| o.merge_prepared);
        for (id, entries, outcome) in outcomes {
            let Some(peer) = self.peers.get_mut(&id) else {
                // A source a later region's merge took in this round: destroyed below.
                continue;
            };
            let (n, commit_log) = peer.on_applied(&entries, &outcome, committed_at)?;
            self.stats.commit_log(n, commit_log);
            if let Some((index, _)) = outcome.compacted_to {
                // The batch that moved the truncated index is fsynced: the log below it goes.
                self.log.compact_to(id, index + 1);
            }
            let led_in = peer.is_leader().then(|| peer.term());
            if !peer.is_member() {
                self.destroy_peer(id)?;
            }
            for region in outcome.new_regions {
                self.create_split_peer(region, id, led_in)?;
            }
            for source in outcome.merged_sources {
                tracing::info!(
                    store_id = self.store_id,
                    region_id = id,
                    source,
                    "the region took its merge source in"
                );
                self.remove_peer(source, true)?;
            }
        }
        // The source is frozen from here on: its commit step goes out now, not at the next
        // merge check.
        if prepared {
            merge::check_merges(
                &mut self.peers,
                &self.tombstones,
                &self.engine,
                committed_at,
            );
        }
        Ok(())
    }

    /// As the leader of `source_id`: proposes to merge it into `target_id`, as this store's
    /// replica of the target holds it (see [`Peer::propose_prepare_merge`]), unless that
    /// replica is merging into another region itself.
    pub fn propose_prepare_merge(
        &mut self,
        source_id: u64,
        target_id: u64,
        reply: Reply,
        now: Instant,
    ) {
        let target = (self.peers.get(&target_id)).filter(|p| p.is_initialized());
        if target.is_some_and(|t| t.merging().is_some()) {
            // Its prepared epoch would be what its tombstone shows once it merged away, and
            // the source could not tell that from a replica replaced unapplied.
            reply(Err(Error::ProposalInMergingMode(target_id)));
            return;
        }
        let target = target.map(|p| p.region().clone());
        match (self.peers.get_mut(&source_id), target) {
            (Some(source), Some(target)) => source.propose_prepare_merge(&target, reply, now),
            (None, _) => reply(Err(Error::RegionNotFound(source_id))),
            (_, None) => reply(Err(Error::RegionNotFound(target_id))),
        }
    }

    /// Whether a split may create this store's peer of `region`: not if a peer of it already
    /// holds data here, or this store removed its peer since (see the module header).
    fn may_create_split_peer(&self, region: &Region) -> bool {
        // A peer of it here already (created by a message: uninitialized, perhaps with its
        // own writes on their way) stays, and gets the region from its leader's snapshot.
        let fresh = !self.tombstones.contains_key(&region.id)
            && !self.clearing.contains_key(&region.id)
            && !self.peers.contains_key(&region.id);
        if !fresh {
            tracing::info!(
                store_id = self.store_id,
                region_id = region.id,
                "a split does not create the region's peer here: it exists or was removed"
            );
        }
        fresh
    }

    /// Creates this store's peer of `region`, which a split of `parent` cut and saved here.
    /// When this store led the parent (in term `parent_term`: `Some`), the new peer
    /// campaigns at once and remembers it came from that leadership; it hears a vote that
    /// waited for it.
    fn create_split_peer(
        &mut self,
        region: Region,
        parent: u64,
        parent_term: Option<u64>,
    ) -> Result<()> {
        let id = region.id;
        let mut peer = Peer::open(
            self.store_id,
            region,
            state::initial_apply_state(),
            &self.log,
            self.cfg.clone(),
            &self.logger,
        )?;
        if let Some(term) = parent_term {
            peer.set_split_from(parent, term);
            peer.campaign()?;
        }
        if let Some((_, vote)) = self.pending_votes.remove(&id)
            && vote.to_peer.map(|p| p.id) == Some(peer.peer_id())
            && let Err(e) = peer.step(&vote)
        {
            tracing::debug!(region_id = id, "a vote kept for the new peer failed: {e}");
        }
        tracing::info!(
            store_id = self.store_id,
            region_id = id,
            parent,
            peer_id = peer.peer_id(),
            "a split created the region's peer"
        );
        self.peers.insert(id, peer);
        Ok(())
    }

    /// A message for a region whose replica here merged away comes from a replica that missed
    /// the merge (its leader's store retired it too, so nobody else will tell it): it hears
    /// that the region is gone (TiKV's gc message for a stale peer). Only a merge's tombstone
    /// answers so: a store whose peer was removed from a live region says nothing.
    fn answer_stale(&mut self, msg: &RaftMessage) -> Result<()> {
        let merged = state::load_region_state(&self.engine, msg.region_id)?
            .is_some_and(|s| s.tombstone && s.merged);
        if let (true, Some(from), Some(to)) = (merged, msg.from_peer, msg.to_peer) {
            self.transport.send(RaftMessage {
                region_id: msg.region_id,
                from_peer: Some(to),
                to_peer: Some(from),
                region_epoch: msg.region_epoch,
                merged_away: true,
                ..RaftMessage::default()
            });
        }
        Ok(())
    }

    /// Removes this store's peer of `region_id` (the region no longer lists it).
    pub fn destroy_peer(&mut self, region_id: u64) -> Result<()> {
        self.remove_peer(region_id, false)
    }

    /// Removes this store's peer of `region_id`; `merged`: the region merged away, which
    /// its tombstone records (see [`Store::answer_stale`]).
    fn remove_peer(&mut self, region_id: u64, merged: bool) -> Result<()> {
        let Some(mut peer) = self.peers.remove(&region_id) else {
            return Ok(());
        };
        // Its proposals may still commit under another leader (an entry replicated before
        // this peer learnt of its removal), so their outcome is not known.
        peer.fail_proposals(|| {
            Error::OutcomeUnknown("this store's peer of the region was removed")
        });
        peer.fail_reads(|| Error::RegionNotFound(region_id));
        let mut wb = self.engine.write_batch();
        state::put_tombstone(&mut wb, peer.region(), peer.peer_id(), merged);
        self.engine.write(wb, true)?;
        // The clearing follows the peer's own writes on its store-io thread.
        for (_, waiting) in self.unpersisted.values_mut() {
            waiting.retain(|(id, _)| *id != region_id);
        }
        let mut write = LogWrite::default();
        write.clear(region_id);
        self.clearing.insert(region_id, self.next_seq);
        let io_thread = io_thread_of(region_id, self.cfg.store_io_threads);
        self.submit(io_thread, write, Vec::new())?;
        self.tombstones.insert(region_id, peer.peer_id());
        tracing::info!(
            store_id = self.store_id,
            region_id,
            peer_id = peer.peer_id(),
            "removed this store's peer of the region"
        );
        Ok(())
    }

    fn send_all(&mut self, msgs: &mut Vec<RaftMessage>) {
        for m in msgs.drain(..) {
            self.transport.send(m);
        }
    }

    /// How often raft-engine's files are purged.
    pub fn purge_interval(&self) -> std::time::Duration {
        self.cfg.purge_interval
    }

    /// Removes log files that hold only compacted entries. Regions whose old entries hold
    /// files back are logged; their leaders' next log GC truncates them.
    pub fn purge_log(&self) -> Result<()> {
        let behind = self.log.purge()?;
        if !behind.is_empty() {
            tracing::info!(regions = ?behind, "raft-engine: old entries of these regions hold log files back");
        }
        Ok(())
    }

    /// Stops the store: pending proposals hear that it is going away.
    pub fn shutdown(&mut self) {
        for peer in self.peers.values_mut() {
            peer.fail_proposals(|| Error::Busy("store is stopping"));
            peer.fail_reads(|| Error::Busy("store is stopping"));
        }
    }
}

/// Whether `region` shares a key with `[start, end)` (an empty end is unbounded).
fn overlaps(region: &Region, start: &[u8], end: &[u8]) -> bool {
    let starts_before_end = end.is_empty() || region.start_key.as_slice() < end;
    let ends_after_start = region.end_key.is_empty() || region.end_key.as_slice() > start;
    starts_before_end && ends_after_start
}

/// The store-io thread that writes `region_id`'s log, of `store_io_threads` (0 counts as
/// one: the round's own write).
fn io_thread_of(region_id: u64, store_io_threads: usize) -> usize {
    (region_id % store_io_threads.max(1) as u64) as usize
}
