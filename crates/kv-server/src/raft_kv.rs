//! [`RaftKv`]: `ReplicatedKv` over raftstore. A write becomes a proposal to its region (the
//! write batch recorded as [`WriteOp`]s) and is answered once the region applied it, which
//! means a majority of its replicas have it in their fsynced logs: the scheduler's writes on
//! raftstore's thread (`write_then`), so its workers do not wait for Raft; the others'
//! (GC, the hand-off) on the caller's, which waits. Reads take the kv engine's
//! snapshot: the service's region check has already found this store leading under its lease.
//!
//! The leader owns the in-memory lock state. When this store's peer becomes a region's leader
//! in a new term, [`RaftKv::on_leader_term`] reloads the lock table from the applied lock CF
//! and marks `max_ts` unsynced, so one-phase commit waits for a fresh PD timestamp
//! (`sync_max_ts`). Pessimistic locks live in the leader's memory (`pessimistic-txn.in-memory`,
//! as TiKV keeps them): a leader change loses them, and their transactions fail at prewrite
//! with a retryable error; a new term starts with none, so locks a replica held in an earlier
//! term of its own cannot come back.
//!
//! [`NodeKv`] is what the node runs: this, or the single-replica `LocalKv` while
//! `raftstore.replication` is off.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use engine::{Cf, KvEngine, WriteBatch};
use engine_rocks::{RocksEngine, RocksSnapshot};
use mvcc::{LockTable, MvccTxn, PessimisticLocks};
use proto::raft::write_op::Kind;
use proto::raft::{RaftCmd, WriteOp};
use raftstore::driver::{RaftRouter, RegionView, RegionViews, StoreMsg};
use txn::{Durability, LocalKv, ReplicatedKv, WriteDone};

use crate::region_flow::RegionFlows;

/// A write batch that records its operations for a Raft command instead of writing them.
#[derive(Default)]
pub struct RecordingBatch {
    ops: Vec<WriteOp>,
    bytes: usize,
}

impl RecordingBatch {
    fn push(&mut self, kind: Kind, cf: Cf, key: &[u8], value: &[u8]) {
        self.bytes += key.len() + value.len();
        self.ops.push(WriteOp {
            kind: kind as i32,
            cf: cf.name().to_string(),
            key: key.to_vec(),
            value: value.to_vec(),
        });
    }
}

impl WriteBatch for RecordingBatch {
    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) {
        self.push(Kind::Put, cf, key, value);
    }

    fn delete(&mut self, cf: Cf, key: &[u8]) {
        self.push(Kind::Delete, cf, key, &[]);
    }

    fn delete_range(&mut self, cf: Cf, start: &[u8], end: &[u8]) {
        self.push(Kind::DeleteRange, cf, start, end);
    }

    fn count(&self) -> usize {
        self.ops.len()
    }

    fn data_size(&self) -> usize {
        self.bytes
    }

    fn clear(&mut self) {
        self.ops.clear();
        self.bytes = 0;
    }
}

pub struct RaftKv {
    engine: RocksEngine,
    router: RaftRouter,
    views: Arc<RegionViews>,
    locks: Arc<LockTable>,
    pessimistic: Arc<PessimisticLocks>,
    /// Each region whose lock state this node loaded as its leader.
    loaded_terms: Mutex<BTreeMap<u64, Loaded>>,
    /// What each region took in writes and served in reads, and its size.
    flows: Arc<RegionFlows>,
}

/// The lock state a node loaded for a region it leads: in which term, and after how many
/// merges into it (`RegionView::merges`).
#[derive(Clone, Copy, PartialEq, PartialOrd)]
struct Loaded {
    term: u64,
    merges: u64,
}

impl RaftKv {
    pub fn new(
        engine: RocksEngine,
        router: RaftRouter,
        views: Arc<RegionViews>,
        flows: Arc<RegionFlows>,
    ) -> RaftKv {
        RaftKv {
            engine,
            router,
            views,
            locks: Arc::new(LockTable::default()),
            // Configured from `pessimistic-txn.*` by the storage, as for a local replica.
            pessimistic: Arc::new(PessimisticLocks::new(
                true,
                txn::replicated::PESSIMISTIC_LOCKS_LIMIT_BYTES,
            )),
            loaded_terms: Mutex::new(BTreeMap::new()),
            flows,
        }
    }

    pub fn flows(&self) -> &Arc<RegionFlows> {
        &self.flows
    }

    pub fn views(&self) -> &Arc<RegionViews> {
        &self.views
    }

    pub fn router(&self) -> &RaftRouter {
        &self.router
    }

    /// Called before this store serves `view`'s region as its leader: the first time in a
    /// term, reloads the lock table and forgets the in-memory pessimistic locks of the
    /// region's range, from what the region applied; after a merge into it within a term,
    /// reloads the lock table. Returns whether it did, so the caller syncs `max_ts` from PD.
    ///
    /// A region a split here cut from one this store led, in the term it had loaded that
    /// one's locks in, needs no reload while in its first leadership (raftstore's
    /// `split_from`): every lock of its range went through this store's table, which stays
    /// as it is (in-memory pessimistic locks included, so the split fails no transaction).
    pub fn on_leader_term(&self, view: &RegionView) -> engine::Result<bool> {
        let (region, term) = (&view.region, view.term);
        let now = Loaded {
            term,
            merges: view.merges,
        };
        let mut loaded = self.loaded_terms.lock().expect("loaded terms poisoned");
        let known = loaded.get(&region.id).copied();
        // Loaded in this term after as many merges, or a stale view: nothing to do.
        if known.is_some_and(|l| l >= now) {
            return Ok(false);
        }
        let merged = known.is_some_and(|l| l.term == term);
        // The parent's locks were loaded here, after every merge into it, in the very term
        // this store led it in when the split applied: the table is current for the child.
        let inherits = !merged
            && view.split_from.is_some_and(|(parent, parent_term)| {
                let parent_now = self.views.get(parent).map(|v| v.merges);
                loaded
                    .get(&parent)
                    .is_some_and(|l| l.term == parent_term && Some(l.merges) == parent_now)
            });
        if !inherits {
            self.locks
                .reload_range(
                    || self.engine.snapshot(),
                    &region.start_key,
                    &region.end_key,
                )
                .map_err(|e| engine::Error::Engine(format!("reloading the lock table: {e}")))?;
            if merged {
                // A merge gave the region its neighbour's range while this store leads it:
                // the source's leader moved its in-memory pessimistic locks to the lock CF
                // before the merge, and it served reads this leader never saw (`max_ts`
                // syncs again). This range's own in-memory locks, and any pause of a
                // leadership move under way, stay. Its size grew by the source's: the split
                // checker measures it again.
                self.flows.unmeasured(region.id);
            } else {
                self.pessimistic
                    .clear_range(&region.start_key, &region.end_key);
                // A pause left by a leadership this store gave away ends: it leads again.
                self.pessimistic
                    .resume_within(&region.start_key, &region.end_key);
            }
        }
        loaded.insert(region.id, now);
        tracing::info!(
            region_id = region.id,
            term,
            merges = view.merges,
            inherited = inherits,
            "leading the region: lock table loaded"
        );
        Ok(!inherits)
    }

    /// Proposes `txn`'s writes and answers `done` once they applied, on raftstore's thread
    /// (the peer answers a proposal within `raftstore::peer::PROPOSAL_WAIT_MAX`, if only as
    /// unknown). Lock changes apply before `done` hears.
    fn propose_then(&self, txn: MvccTxn, done: WriteDone) {
        if txn.is_empty() {
            return done(Ok(()));
        }
        let mut batch = RecordingBatch::default();
        let changes = txn.fill(&mut batch, Some(&self.pessimistic));
        let (locks, pessimistic) = (self.locks.clone(), self.pessimistic.clone());
        let apply_changes = move || {
            locks.apply(changes.lock_table);
            pessimistic.apply(changes.pessimistic);
        };
        let Some(first) = batch.ops.first() else {
            // Only in-memory locks changed: nothing to replicate.
            apply_changes();
            return done(Ok(()));
        };
        let (region_id, mut cmd) = match self.region_of(&first.key) {
            Ok(found) => found,
            Err(e) => return done(Err(e)),
        };
        let (flows, written) = (self.flows.clone(), written(&batch.ops));
        cmd.writes = batch.ops;
        let reply = Box::new(move |r: raftstore::Result<()>| match r {
            Ok(()) => {
                apply_changes();
                flows.wrote(region_id, written.0, written.1);
                done(Ok(()));
            }
            Err(e) => done(Err(write_error(e))),
        });
        // A refused proposal is answered through `reply` too.
        let _ = self.router.send(StoreMsg::propose(region_id, cmd, reply));
    }

    /// Proposes `txn`'s writes and waits at most `wait` for them to apply (past it, the
    /// outcome is unknown; the lock changes still follow if it applies later).
    pub fn write_within(&self, txn: MvccTxn, wait: std::time::Duration) -> engine::Result<()> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.propose_then(
            txn,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv_timeout(wait).unwrap_or_else(|_| {
            Err(write_error(raftstore::Error::OutcomeUnknown(
                "no answer in time",
            )))
        })
    }

    /// The region this store leads that holds the data CF key `key` (region bounds are user
    /// keys: `raftstore::state::data_bound`). A command that a split moved out of its region
    /// meanwhile is refused when it applies.
    fn region_of(&self, key: &[u8]) -> engine::Result<(u64, RaftCmd)> {
        let view = self
            .views
            .find(|v| raftstore::state::holds_data_key(&v.region, key))
            .ok_or_else(|| {
                engine::Error::NotLeader("no region on this store holds the key".into())
            })?;
        Ok((
            view.region.id,
            RaftCmd {
                region_epoch: view.region.region_epoch,
                ..RaftCmd::default()
            },
        ))
    }
}

impl ReplicatedKv for RaftKv {
    type Snap = RocksSnapshot;

    fn snapshot(&self) -> engine::Result<RocksSnapshot> {
        Ok(self.engine.snapshot())
    }

    fn write(&self, txn: MvccTxn, _durability: Durability) -> engine::Result<()> {
        self.write_within(txn, raftstore::driver::CALL_WAIT_MAX)
    }

    fn write_then(&self, txn: MvccTxn, _durability: Durability, done: WriteDone) {
        self.propose_then(txn, done);
    }

    fn lock_table(&self) -> &LockTable {
        &self.locks
    }

    fn pessimistic_locks(&self) -> &Arc<PessimisticLocks> {
        &self.pessimistic
    }
}

/// What a write batch adds to its region, as its flow and size count it: the bytes it puts,
/// and the keys it commits (its write CF puts: one per committed version, as the split check
/// counts a region's keys).
fn written(ops: &[WriteOp]) -> (u64, u64) {
    let puts = || ops.iter().filter(|op| op.kind == Kind::Put as i32);
    let bytes = puts()
        .map(|op| (op.key.len() + op.value.len()) as u64)
        .sum();
    let keys = puts().filter(|op| op.cf == Cf::Write.name()).count() as u64;
    (bytes, keys)
}

/// The engine error for a proposal raftstore refused or could not finish.
fn write_error(e: raftstore::Error) -> engine::Error {
    match e {
        raftstore::Error::Busy(why) => engine::Error::Busy(why.to_string()),
        raftstore::Error::OutcomeUnknown(_) => engine::Error::Engine(format!(
            "the write's outcome is unknown, it may or may not have happened: {e}"
        )),
        raftstore::Error::NotLeader { .. }
        | raftstore::Error::StaleCommand
        | raftstore::Error::RegionNotFound(_)
        | raftstore::Error::RefusedAtApply(_)
        | raftstore::Error::ProposalInMergingMode(_)
        | raftstore::Error::EpochNotMatch { .. } => engine::Error::NotLeader(e.to_string()),
        other => engine::Error::Engine(other.to_string()),
    }
}

/// The node's `ReplicatedKv`: Raft-replicated, or the single local replica.
#[derive(Clone)]
pub enum NodeKv {
    Local(LocalKv<RocksEngine>),
    Raft(Arc<RaftKv>),
}

impl NodeKv {
    pub fn engine(&self) -> &RocksEngine {
        match self {
            NodeKv::Local(kv) => kv.engine(),
            NodeKv::Raft(kv) => &kv.engine,
        }
    }

    pub fn raft(&self) -> Option<&Arc<RaftKv>> {
        match self {
            NodeKv::Raft(kv) => Some(kv),
            NodeKv::Local(_) => None,
        }
    }
}

impl ReplicatedKv for NodeKv {
    type Snap = RocksSnapshot;

    fn snapshot(&self) -> engine::Result<RocksSnapshot> {
        match self {
            NodeKv::Local(kv) => kv.snapshot(),
            NodeKv::Raft(kv) => kv.snapshot(),
        }
    }

    fn write(&self, txn: MvccTxn, durability: Durability) -> engine::Result<()> {
        match self {
            NodeKv::Local(kv) => kv.write(txn, durability),
            NodeKv::Raft(kv) => kv.write(txn, durability),
        }
    }

    fn write_then(&self, txn: MvccTxn, durability: Durability, done: WriteDone) {
        match self {
            NodeKv::Local(kv) => kv.write_then(txn, durability, done),
            NodeKv::Raft(kv) => kv.write_then(txn, durability, done),
        }
    }

    fn lock_table(&self) -> &LockTable {
        match self {
            NodeKv::Local(kv) => kv.lock_table(),
            NodeKv::Raft(kv) => kv.lock_table(),
        }
    }

    fn pessimistic_locks(&self) -> &Arc<PessimisticLocks> {
        match self {
            NodeKv::Local(kv) => kv.pessimistic_locks(),
            NodeKv::Raft(kv) => kv.pessimistic_locks(),
        }
    }
}
