//! A planned stop of a replicated kv node (SIGTERM): before raftstore stops, the node hands
//! its regions to other stores, so a rolling restart fails no transaction.
//!
//! 1. The pessimistic locks it keeps in memory go to the lock CF through Raft, where the next
//!    leader finds them (a leader keeps them only in memory, which a new leader never sees).
//!    TiKV proposes its in-memory locks before a leader transfer in the same way. New locks
//!    go to the lock CF from the start of the hand-off; a command that decided before that
//!    (it holds its keys' latches from its decision until its locks are in place) is waited
//!    for ([`Latches::wait_for_holders`]). Each batch of keys is then moved under the keys'
//!    latches, so no command moves or removes one of those locks meanwhile; a batch that
//!    fails is tried again until the time is up.
//! 2. Each region this store leads goes to its best follower
//!    ([`raftstore::Peer::transfer_target`]); the request is repeated every
//!    [`HAND_OFF_RETRY`] until no region is led here, nor has a peer here running for
//!    leader (it is handed off once it won).
//!
//! [`transfer_region`] does the same for one region whose leadership PD moves, and
//! [`merge_region`] moves a region's locks before it merges into its neighbour.
//!
//! Both steps together take at most [`LEADER_HAND_OFF_WAIT_MS`] (each lock write waits only
//! for the time left): with no follower up (the whole cluster stopping) the node stops
//! anyway, and the regions elect a leader after it.
//! Requests that reach this node meanwhile are answered NotLeader, and clients follow the
//! new leader.

use std::time::{Duration, Instant};

use base::limits::{LEADER_HAND_OFF_WAIT_MS, LOCK_HAND_OFF_BATCH_KEYS};
use mvcc::MvccTxn;
use raftstore::driver::StoreMsg;
use txn::ReplicatedKv;
use txn::latches::Latches;

use crate::raft_kv::RaftKv;

/// How often the leadership of a region still led here is asked to move again.
const HAND_OFF_RETRY: Duration = Duration::from_millis(500);

/// What a hand-off did, for the log.
#[derive(Debug, Default)]
pub struct HandOff {
    pub locks_moved: usize,
    /// Regions this store still led (or ran for) when the wait ended.
    pub regions_still_led: usize,
}

/// Hands this store's pessimistic locks and region leadership to other stores (see the
/// module header), within [`LEADER_HAND_OFF_WAIT_MS`].
pub fn hand_off(kv: &RaftKv, latches: &Latches, store_id: u64) -> HandOff {
    let deadline = Instant::now() + Duration::from_millis(LEADER_HAND_OFF_WAIT_MS);
    let mut done = HandOff::default();
    match move_pessimistic_locks(kv, latches, deadline) {
        Ok(moved) => done.locks_moved = moved,
        Err(e) => tracing::warn!("moving pessimistic locks to the lock CF failed: {e}"),
    }
    // A peer running for leader counts too: the new region of a split this store led
    // campaigns here first, and if it won after the stop its peers elsewhere would wait out
    // an election timeout, unknown to PD meanwhile (its keys unreachable).
    let led = || {
        kv.views()
            .all()
            .into_iter()
            .filter(|v| v.campaigning || v.leader.as_ref().is_some_and(|l| l.store_id == store_id))
            .map(|v| v.region.id)
            .collect::<Vec<_>>()
    };
    let mut asked: Option<Instant> = None;
    loop {
        let regions = led();
        done.regions_still_led = regions.len();
        if regions.is_empty() || Instant::now() >= deadline {
            return done;
        }
        if asked.is_none_or(|at| at.elapsed() >= HAND_OFF_RETRY) {
            for region_id in regions {
                let _ = kv.router().send(StoreMsg::HandOffLeadership { region_id });
            }
            asked = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// PD moves one region's leadership to peer `to_peer_id` (balance-leader): as in a
/// hand-off, the region's in-memory pessimistic locks go to the lock CF first, while new ones
/// of its range go there directly, then the transfer is asked for. If raftstore refused it
/// (the peer is not caught up) or the leadership did not leave within [`TRANSFER_WAIT`], the
/// range takes in-memory locks again.
pub fn transfer_region(kv: &RaftKv, latches: &Latches, region_id: u64, to_peer_id: u64) {
    let Some(view) = kv.views().get(region_id) else {
        return;
    };
    let here = view.leader.map(|l| l.store_id);
    let (start, end) = (&view.region.start_key, &view.region.end_key);
    let table = kv.pessimistic_locks();
    let deadline = Instant::now() + TRANSFER_WAIT;
    match pause_and_move_locks(kv, latches, start, end, deadline) {
        Ok(moved) => {
            tracing::info!(
                region_id,
                to_peer_id,
                locks_moved = moved,
                "moving the leadership"
            )
        }
        Err(e) => tracing::warn!(region_id, "moving the region's locks failed: {e}"),
    }
    let began = kv
        .router()
        .call_within(TRANSFER_WAIT, |reply| StoreMsg::TransferLeader {
            region_id,
            to_peer_id,
            reply,
        });
    if let Err(e) = began {
        // Not caught up, say: the range takes in-memory locks again, PD asks again later.
        tracing::info!(region_id, to_peer_id, "leadership not moved: {e}");
        table.resume_range(start, end);
        return;
    }
    let leads_here = || {
        kv.views()
            .get(region_id)
            .is_some_and(|v| v.leader.map(|l| l.store_id) == here)
    };
    while Instant::now() < deadline && leads_here() {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Once the leadership left, the range stays paused: a command checked here before the
    // move may still run, and its lock must go through Raft (and fail) rather than into
    // this store's memory. The pause ends when this store leads the region again
    // (`RaftKv::on_leader_term`).
    if leads_here() {
        table.resume_range(start, end);
    }
}

/// PD merges region `source`, led here, into its neighbour `target` (the merge checker, or
/// `operator add merge-region`): the source's in-memory pessimistic locks go to the lock CF
/// first, as in a leadership move (the target's leader finds them there), while new ones of
/// its range go there directly; then the merge is prepared. If raftstore refused it, the
/// range takes in-memory locks again. Once prepared, the range stays paused: the source
/// takes no writes until the merge commits (the target's leader here, if it is here, then
/// loads the range: `RaftKv::on_leader_term`) or rolls back (the pause then ends with the
/// next leadership of the source).
pub fn merge_region(kv: &RaftKv, latches: &Latches, source: u64, target: u64) {
    let Some(view) = kv.views().get(source) else {
        return;
    };
    let (start, end) = (&view.region.start_key, &view.region.end_key);
    let deadline = Instant::now() + TRANSFER_WAIT;
    match pause_and_move_locks(kv, latches, start, end, deadline) {
        Ok(moved) => tracing::info!(source, target, locks_moved = moved, "merging the region"),
        Err(e) => {
            // Their transactions would fail at prewrite: PD asks again later.
            tracing::warn!(source, "moving the region's locks failed, no merge: {e}");
            kv.pessimistic_locks().resume_range(start, end);
            return;
        }
    }
    let prepared = kv
        .router()
        .call_within(TRANSFER_WAIT, |reply| StoreMsg::PrepareMerge {
            source,
            target,
            reply,
        });
    match prepared {
        Ok(()) => {}
        // Merging already (PD repeats its order), or the prepare may still apply.
        Err(
            e @ (raftstore::Error::ProposalInMergingMode(_) | raftstore::Error::OutcomeUnknown(_)),
        ) => tracing::info!(source, target, "merge under way: {e}"),
        Err(e) => {
            tracing::info!(source, target, "merge not prepared: {e}");
            kv.pessimistic_locks().resume_range(start, end);
        }
    }
}

/// The leadership moves and merges PD asked for that are under way, at most one per region:
/// PD repeats its request with every heartbeat until the move shows.
#[derive(Clone)]
pub struct RegionMoves {
    kv: std::sync::Arc<RaftKv>,
    latches: std::sync::Arc<Latches>,
    moving: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<u64>>>,
}

impl RegionMoves {
    pub fn new(kv: std::sync::Arc<RaftKv>, latches: std::sync::Arc<Latches>) -> RegionMoves {
        RegionMoves {
            kv,
            latches,
            moving: Default::default(),
        }
    }

    /// Starts [`transfer_region`] on a thread of its own (it waits for latches and a Raft
    /// write), unless a move of that region is under way.
    pub fn start(&self, region_id: u64, to_peer_id: u64) {
        self.spawn(region_id, "move-leader", move |kv, latches| {
            transfer_region(kv, latches, region_id, to_peer_id)
        });
    }

    /// Starts [`merge_region`] on a thread of its own, unless a move of that region is
    /// under way.
    pub fn merge(&self, source: u64, target: u64) {
        self.spawn(source, "merge-region", move |kv, latches| {
            merge_region(kv, latches, source, target)
        });
    }

    fn spawn(
        &self,
        region_id: u64,
        name: &str,
        work: impl FnOnce(&RaftKv, &Latches) + Send + 'static,
    ) {
        if !self
            .moving
            .lock()
            .expect("moves poisoned")
            .insert(region_id)
        {
            return;
        }
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                work(&this.kv, &this.latches);
                this.moving
                    .lock()
                    .expect("moves poisoned")
                    .remove(&region_id);
            });
        if spawned.is_err() {
            self.moving
                .lock()
                .expect("moves poisoned")
                .remove(&region_id);
        }
    }
}

/// A region's range `[start, end)` takes no more in-memory pessimistic locks (new ones go
/// to the lock CF), and the ones it holds move there, before `deadline`; how many moved.
fn pause_and_move_locks(
    kv: &RaftKv,
    latches: &Latches,
    start: &[u8],
    end: &[u8],
    deadline: Instant,
) -> engine::Result<usize> {
    let table = kv.pessimistic_locks();
    table.pause_range(start, end);
    latches.wait_for_holders();
    move_locks(kv, latches, deadline, |n| table.keys_in(start, end, n))
}

/// How long a region's range keeps its new locks out of memory while its leadership moves.
pub const TRANSFER_WAIT: Duration = Duration::from_secs(5);

/// Step 1: moves every lock in the in-memory table to the lock CF; how many it moved.
fn move_pessimistic_locks(
    kv: &RaftKv,
    latches: &Latches,
    deadline: Instant,
) -> engine::Result<usize> {
    let table = kv.pessimistic_locks();
    table.stop_taking_new_locks();
    latches.wait_for_holders();
    move_locks(kv, latches, deadline, |n| table.keys(n))
}

/// Moves the in-memory locks `keys` lists (at most the count it is given, in key order) to
/// the lock CF through Raft, batch by batch under the keys' latches, until none are listed
/// or `deadline`; how many it moved.
fn move_locks(
    kv: &RaftKv,
    latches: &Latches,
    deadline: Instant,
    keys: impl Fn(usize) -> Vec<Vec<u8>>,
) -> engine::Result<usize> {
    let table = kv.pessimistic_locks();
    let mut moved = 0;
    let mut failure = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let keys = keys(LOCK_HAND_OFF_BATCH_KEYS);
        if keys.is_empty() || left.is_zero() {
            break;
        }
        let _latched = latches.acquire(keys.iter().map(Vec::as_slice));
        let mut txn = MvccTxn::new();
        let mut batch = 0;
        for key in &keys {
            // Under the latch the lock is where it was unless a command finished with it.
            if let Some(lock) = table.get(key) {
                txn.persist_pessimistic_lock(key, &lock);
                batch += 1;
            }
        }
        match kv.write_within(txn, left) {
            Ok(()) => moved += batch,
            Err(e) => {
                failure = Some(e);
                std::thread::sleep(HAND_OFF_RETRY.min(left));
            }
        }
    }
    match failure {
        Some(e) if !keys(1).is_empty() => Err(e),
        _ => Ok(moved),
    }
}
