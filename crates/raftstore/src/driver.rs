//! [`RaftDriver`]: runs a [`Store`] on a thread of its own (`raftstore-0`) and its raft-engine
//! writes on `raftstore.store-io-pool-size` more (`store-io-<n>`). Everything that reaches the
//! store (Raft messages, proposals, membership changes, leader transfers, a store-io thread's
//! "written") comes through a bounded channel ([`RaftRouter`]); the thread takes what has
//! queued up, ticks when a base tick is due, and runs one round for all of it, so the writes
//! of many connections and regions share one raft-engine write. A store-io thread takes every
//! log task queued for it, makes them one write and one fdatasync, and reports back; while
//! it waits on the disk the store thread goes on with the next round. After each round the
//! store thread publishes what readers need without asking it ([`RegionViews`]): each
//! region's range and epoch, its leader, and until when this store's leader lease holds.
//!
//! Bounds: the channel holds [`ROUTER_QUEUE_MAX`] messages (a full one answers
//! "raftstore is busy"), one round takes at most [`ROUND_MESSAGES_MAX`] of them, and a
//! store-io thread merges at most [`IO_BATCH_TASKS_MAX`] log tasks into one write. A
//! store-io thread reports back with a blocking send: the store thread never waits on it, so
//! the two cannot wait on each other.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use engine::KvEngine;
use proto::pd::{Peer as PeerMeta, Region};
use proto::raft::{ChangePeer, RaftCmd, RaftMessage};

use crate::peer::Reply;
use crate::stats::StoreStats;
use crate::store::{LogTask, Store, Transport, write_log};
use crate::{Error, Result};

/// Messages waiting for the raftstore thread, at most.
pub const ROUTER_QUEUE_MAX: usize = 40_960;
/// Messages one round takes before it writes.
pub const ROUND_MESSAGES_MAX: usize = 4096;
/// Log tasks a store-io thread merges into one raft-engine write.
pub const IO_BATCH_TASKS_MAX: usize = 256;
/// How long [`RaftRouter::call`] waits for an answer before it gives the outcome as unknown:
/// as long as a peer lets a proposal wait (`crate::peer::PROPOSAL_WAIT_MAX`).
pub const CALL_WAIT_MAX: Duration = crate::peer::PROPOSAL_WAIT_MAX;

pub enum StoreMsg {
    Raft(RaftMessage),
    Propose {
        region_id: u64,
        cmd: Box<RaftCmd>,
        reply: Reply,
        /// When it was sent, for the propose wait ([`StoreMsg::propose`] stamps it).
        sent_at: Instant,
    },
    ChangePeers {
        region_id: u64,
        changes: Vec<ChangePeer>,
        reply: Reply,
    },
    TransferLeader {
        region_id: u64,
        to_peer_id: u64,
        /// `Ok` once the transfer began; `Busy` if the peer may not take over now
        /// ([`crate::Peer::transfer_leader`]).
        reply: Reply,
    },
    /// Before a planned stop: leadership of the region goes to its best follower
    /// ([`crate::Peer::transfer_target`]), if this store leads it.
    HandOffLeadership {
        region_id: u64,
    },
    /// As the source's leader: merge region `source` into its neighbour `target`
    /// ([`Store::propose_prepare_merge`]); `reply` hears once the prepare applied.
    PrepareMerge {
        source: u64,
        target: u64,
        reply: Reply,
    },
    /// A linearizable read without the lease: `reply` hears once it may be served.
    ReadIndex {
        region_id: u64,
        reply: Reply,
    },
    /// Creates this store's peer of a new region (the cluster's first), durably.
    Bootstrap {
        region: Region,
        reply: Reply,
    },
    /// Removes this store's peer of a region that should not exist (a bootstrap PD refused
    /// because another store bootstrapped first).
    Destroy {
        region_id: u64,
        reply: Reply,
    },
    /// The transport delivered a snapshot of the region to the peer, or could not.
    SnapshotSent {
        region_id: u64,
        to_peer_id: u64,
        delivered: bool,
    },
    /// The transport found nothing listening at this store's address: its process is gone.
    StoreGone(u64),
    /// A store-io thread made these log tasks durable.
    LogWritten(Vec<u64>),
    /// Ends the thread: what was queued before it is handled, pending proposals hear `Busy`.
    Stop,
}

impl StoreMsg {
    /// A proposal of `cmd` to `region_id`, sent now.
    pub fn propose(region_id: u64, cmd: RaftCmd, reply: Reply) -> StoreMsg {
        StoreMsg::Propose {
            region_id,
            cmd: Box::new(cmd),
            reply,
            sent_at: Instant::now(),
        }
    }
}

/// What readers on other threads may know of one region without asking the store.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionView {
    pub region: Region,
    pub leader: Option<PeerMeta>,
    /// This store's peer leads, and may serve reads locally until this moment.
    pub lease_until: Option<Instant>,
    pub term: u64,
    /// As leader: peers that need a snapshot to catch up ([`crate::Peer::pending_peers`]).
    pub pending_peers: Vec<u64>,
    /// The region this one was split from and the term in which this store led it then, if
    /// this peer leads in the region's first leadership ([`crate::Peer::split_from`]).
    pub split_from: Option<(u64, u64)>,
    /// This store's peer is running for leader.
    pub campaigning: bool,
    /// Merges this store's peer applied as their target since the store opened
    /// ([`crate::Peer::merges_applied`]): its leader's lock state must take in each
    /// source's range.
    pub merges: u64,
}

impl RegionView {
    /// Whether this store's peer may serve a read of the region at `now`.
    pub fn lease_holds(&self, now: Instant) -> bool {
        self.lease_until.is_some_and(|until| now < until)
    }
}

/// The regions of this store as of the last round.
#[derive(Default)]
pub struct RegionViews {
    views: RwLock<BTreeMap<u64, RegionView>>,
}

impl RegionViews {
    pub fn get(&self, region_id: u64) -> Option<RegionView> {
        self.views
            .read()
            .expect("region views poisoned")
            .get(&region_id)
            .cloned()
    }

    /// The first region view `pred` accepts (only that one is copied).
    pub fn find(&self, pred: impl Fn(&RegionView) -> bool) -> Option<RegionView> {
        self.views
            .read()
            .expect("region views poisoned")
            .values()
            .find(|v| pred(v))
            .cloned()
    }

    pub fn all(&self) -> Vec<RegionView> {
        self.views
            .read()
            .expect("region views poisoned")
            .values()
            .cloned()
            .collect()
    }

    fn clear(&self) {
        self.views.write().expect("region views poisoned").clear();
    }

    fn publish<E: KvEngine, T: Transport>(&self, store: &Store<E, T>) {
        let mut fresh = BTreeMap::new();
        for peer in store.peers().filter(|p| p.is_initialized()) {
            let view = RegionView {
                region: peer.region().clone(),
                leader: peer.leader(),
                lease_until: peer.lease_until(),
                term: peer.term(),
                pending_peers: peer.pending_peers(),
                split_from: peer.split_from(),
                campaigning: peer.is_campaigning(),
                merges: peer.merges_applied(),
            };
            fresh.insert(view.region.id, view);
        }
        let mut views = self.views.write().expect("region views poisoned");
        if *views != fresh {
            *views = fresh;
        }
    }
}

/// Sends to the raftstore thread.
#[derive(Clone)]
pub struct RaftRouter {
    tx: SyncSender<StoreMsg>,
}

impl RaftRouter {
    /// Queues `msg`; a full queue or a stopped store is `Busy`, and a proposal's reply
    /// hears it.
    pub fn send(&self, msg: StoreMsg) -> Result<()> {
        match self.tx.try_send(msg) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(msg)) => Err(refuse(msg, "raftstore is busy")),
            Err(TrySendError::Disconnected(msg)) => Err(refuse(msg, "raftstore is stopped")),
        }
    }

    /// Proposes `cmd` and waits for the outcome.
    pub fn propose_and_wait(&self, region_id: u64, cmd: RaftCmd) -> Result<()> {
        self.call(|reply| StoreMsg::propose(region_id, cmd, reply))
    }

    /// Sends the message `make` builds around a reply, and waits for that reply (at most
    /// [`CALL_WAIT_MAX`]).
    pub fn call(&self, make: impl FnOnce(Reply) -> StoreMsg) -> Result<()> {
        self.call_within(CALL_WAIT_MAX, make)
    }

    /// As [`RaftRouter::call`], waiting at most `wait`.
    pub fn call_within(&self, wait: Duration, make: impl FnOnce(Reply) -> StoreMsg) -> Result<()> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.send(make(Box::new(move |r| {
            let _ = tx.send(r);
        })))?;
        match rx.recv_timeout(wait) {
            Ok(r) => r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(Error::OutcomeUnknown(
                "no answer within the wait: the region may have no leader",
            )),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Err(Error::OutcomeUnknown("raftstore stopped before answering"))
            }
        }
    }
}

fn refuse(msg: StoreMsg, why: &'static str) -> Error {
    match msg {
        StoreMsg::Propose { reply, .. }
        | StoreMsg::ChangePeers { reply, .. }
        | StoreMsg::PrepareMerge { reply, .. }
        | StoreMsg::ReadIndex { reply, .. }
        | StoreMsg::Bootstrap { reply, .. }
        | StoreMsg::Destroy { reply, .. } => reply(Err(Error::Busy(why))),
        _ => {}
    }
    Error::Busy(why)
}

pub struct RaftDriver {
    thread: Option<JoinHandle<()>>,
    router: RaftRouter,
    pub views: Arc<RegionViews>,
    pub stats: Arc<StoreStats>,
}

impl RaftDriver {
    /// Starts the raftstore thread on the store `open` makes (on that thread, so the store
    /// need not be `Send` once built).
    pub fn start<E, T>(
        open: impl FnOnce() -> Result<Store<E, T>> + Send + 'static,
    ) -> Result<RaftDriver>
    where
        E: KvEngine,
        T: Transport + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(ROUTER_QUEUE_MAX);
        let views = Arc::new(RegionViews::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let published = views.clone();
        let written_tx = tx.clone();
        let thread = std::thread::Builder::new()
            .name("raftstore-0".into())
            .spawn(move || {
                let store = open().and_then(|store| {
                    let io = IoThreads::start(&store, written_tx)?;
                    Ok((store, io))
                });
                let (store, io) = match store {
                    Ok((store, io)) => {
                        let _ = ready_tx.send(Ok(store.stats().clone()));
                        (store, io)
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                run(store, rx, &io, &published);
                io.stop();
            })
            .map_err(|e| Error::Corrupt(format!("cannot start the raftstore thread: {e}")))?;
        let stats = ready_rx
            .recv()
            .unwrap_or(Err(Error::Busy("raftstore thread died while opening")))?;
        Ok(RaftDriver {
            thread: Some(thread),
            router: RaftRouter { tx },
            views,
            stats,
        })
    }

    pub fn router(&self) -> RaftRouter {
        self.router.clone()
    }

    /// Stops the thread after what is queued; pending proposals hear `Busy`. Routers still
    /// held elsewhere answer `Busy` from then on.
    pub fn stop(mut self) {
        let _ = self.router.tx.send(StoreMsg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The store-io threads of one store; none when `store_io_threads` is 0.
struct IoThreads {
    queues: Vec<Sender<LogTask>>,
    threads: Vec<JoinHandle<()>>,
}

impl IoThreads {
    fn start<E: KvEngine, T: Transport>(
        store: &Store<E, T>,
        written: SyncSender<StoreMsg>,
    ) -> Result<IoThreads> {
        let mut io = IoThreads {
            queues: Vec::new(),
            threads: Vec::new(),
        };
        for i in 0..store.io_threads() {
            let (tx, rx) = std::sync::mpsc::channel();
            let (log, stats, written) =
                (store.log().clone(), store.stats().clone(), written.clone());
            let thread = std::thread::Builder::new()
                .name(format!("store-io-{i}"))
                .spawn(move || run_io(rx, &log, &stats, &written))
                .map_err(|e| Error::Corrupt(format!("cannot start a store-io thread: {e}")))?;
            io.queues.push(tx);
            io.threads.push(thread);
        }
        Ok(io)
    }

    fn submit(&self, tasks: Vec<LogTask>) {
        for task in tasks {
            // A thread that is gone aborted the process already.
            let _ = self.queues[task.io_thread].send(task);
        }
    }

    /// Lets each thread finish what is queued, and waits for it.
    fn stop(self) {
        drop(self.queues);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// A store-io thread: each write merges every task queued by then, and one message tells the
/// store thread which tasks are durable.
fn run_io(
    rx: Receiver<LogTask>,
    log: &raft_log::LogEngine,
    stats: &StoreStats,
    written: &SyncSender<StoreMsg>,
) {
    while let Ok(first) = rx.recv() {
        let mut write = first.write;
        let mut seqs = vec![first.seq];
        let mut result = Ok(());
        for mut task in rx.try_iter().take(IO_BATCH_TASKS_MAX - 1) {
            seqs.push(task.seq);
            if result.is_ok() {
                result = write.merge(&mut task.write).map_err(Error::from);
            }
        }
        if let Err(e) = result.and_then(|()| write_log(log, stats, &mut write)) {
            // As in the store thread: a log that cannot be written cannot be trusted.
            tracing::error!("raft-engine write failed, stopping the store: {e}");
            std::process::abort();
        }
        // The store thread is gone when this fails: nothing waits for the answer.
        if written.send(StoreMsg::LogWritten(seqs)).is_err() {
            break;
        }
    }
}

fn run<E: KvEngine, T: Transport>(
    mut store: Store<E, T>,
    rx: Receiver<StoreMsg>,
    io: &IoThreads,
    views: &RegionViews,
) {
    let tick = store.base_tick();
    let purge = store.purge_interval();
    let mut next_tick = Instant::now() + tick;
    let mut next_purge = Instant::now() + purge;
    views.publish(&store);
    loop {
        let wait = next_tick.saturating_duration_since(Instant::now());
        let mut stop = false;
        match rx.recv_timeout(wait) {
            Ok(msg) => {
                stop |= handle(&mut store, msg);
                for msg in rx.try_iter().take(ROUND_MESSAGES_MAX - 1) {
                    stop |= handle(&mut store, msg);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => stop = true,
        }
        let now = Instant::now();
        if now >= next_tick {
            store.tick(now);
            next_tick = now + tick;
        }
        if now >= next_purge {
            next_purge = now + purge;
            if let Err(e) = store.purge_log() {
                tracing::warn!("raft-engine purge failed: {e}");
            }
        }
        // A round can leave work for another (a commit learnt while persisting).
        for _ in 0..4 {
            if !store.has_ready() {
                break;
            }
            if let Err(e) = store.handle_readies(now) {
                // The disk under the log or the kv engine failed: nothing can be trusted
                // to be durable any more, so the node must stop, as TiKV panics.
                tracing::error!("raftstore round failed, stopping the store: {e}");
                store.shutdown();
                std::process::abort();
            }
        }
        io.submit(store.take_log_tasks());
        views.publish(&store);
        if stop {
            break;
        }
    }
    store.shutdown();
    // Readers stop finding leases here before the node closes its port (other stores take a
    // refused connection as proof that nothing here serves reads any more).
    views.clear();
}

/// Hands `msg` to the store; true for [`StoreMsg::Stop`].
fn handle<E: KvEngine, T: Transport>(store: &mut Store<E, T>, msg: StoreMsg) -> bool {
    let now = Instant::now();
    match msg {
        StoreMsg::Raft(m) => {
            if let Err(e) = store.on_raft_message(&m) {
                tracing::debug!(region_id = m.region_id, "dropped a raft message: {e}");
            }
        }
        StoreMsg::Propose {
            region_id,
            cmd,
            reply,
            sent_at,
        } => {
            store
                .stats()
                .propose_wait(Instant::now().saturating_duration_since(sent_at));
            store.propose(region_id, *cmd, reply, now)
        }
        StoreMsg::PrepareMerge {
            source,
            target,
            reply,
        } => store.propose_prepare_merge(source, target, reply, now),
        StoreMsg::ChangePeers {
            region_id,
            changes,
            reply,
        } => store.propose_conf_change(region_id, changes, reply, now),
        StoreMsg::TransferLeader {
            region_id,
            to_peer_id,
            reply,
        } => reply(match store.transfer_leader(region_id, to_peer_id, now) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::Busy("the transferee may not take over now")),
            Err(e) => Err(e),
        }),
        StoreMsg::HandOffLeadership { region_id } => {
            if let Ok(Some(to)) = store.hand_off_leadership(region_id, now) {
                tracing::info!(region_id, to_peer = to, "handing leadership off");
            }
        }
        StoreMsg::ReadIndex { region_id, reply } => store.read_index(region_id, reply, now),
        StoreMsg::Bootstrap { region, reply } => reply(store.bootstrap_region(region)),
        StoreMsg::Destroy { region_id, reply } => reply(store.destroy_peer(region_id)),
        StoreMsg::StoreGone(store_id) => store.on_store_gone(store_id),
        StoreMsg::SnapshotSent {
            region_id,
            to_peer_id,
            delivered,
        } => {
            let _ = store.report_snapshot(region_id, to_peer_id, delivered);
        }
        StoreMsg::LogWritten(seqs) => {
            for seq in seqs {
                store.on_log_written(seq);
            }
        }
        StoreMsg::Stop => return true,
    }
    false
}
