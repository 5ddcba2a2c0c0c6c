//! The lock table: an in-memory copy of the lock CF's locks that can block a read, so reads
//! skip the lock CF when nothing in what they read is locked, and the store's `max_ts`, the
//! largest ts a read has announced, from which a one-phase commit picks its commit ts. After
//! a busy minute the lock CF's memtable is mostly tombstones of finished transactions, and
//! stepping over them was a fifth of a kv node's CPU under sysbench read_write. (TiKV keeps
//! both in its concurrency manager.)
//!
//! For each key with a `Put` or `Delete` lock, the table keeps the smallest read ts the lock
//! blocks, `max(start_ts, min_commit_ts)` (see `reader::blocks`); pessimistic and `Lock`
//! locks never block reads and are left out. A key a one-phase commit is writing holds a
//! *committing* entry from its commit ts until the write is durable.
//!
//! Protocol (why a read may trust it):
//! - The writer applies a batch's lock changes to the table after the batch is durable and
//!   before it acknowledges the command (`txn::ReplicatedKv::write`); commands on one key are
//!   serialized by the scheduler's latches, so the table sees each key's changes in order.
//! - A read at `ts` probes the table before it takes its snapshot. A lock in that snapshot
//!   whose txn commits below `ts` was written before its txn got a commit ts, hence before
//!   `ts` was handed out, hence before the probe: the probe sees it unless its commit (or
//!   rollback) record was already durable, and then the snapshot, taken later, holds that
//!   record. A lock written after the probe belongs to a txn whose commit ts will be above
//!   `ts`. So when the probe finds nothing, the snapshot's locks cannot block the read.
//! - One-phase commit (1PC) writes no lock, so it announces itself here instead: under the
//!   table's write lock it puts committing entries on its keys and picks a commit ts above
//!   `max_ts` ([`LockTable::begin_one_pc`]); a probe raises `max_ts` to its ts under the
//!   read lock. Either the probe came first, and the commit ts is above the read's ts, or
//!   the entries were there for the probe, which then waits until they are gone (the write
//!   is durable, so the snapshot taken afterwards holds it) and probes again.
//!   `max_ts` must also cover every read served before this process started: one-phase
//!   commit is refused until [`LockTable::sync_max_ts`] raised it to a fresh PD timestamp.
//! - A read at `LATEST` reads one key (the client makes reads of several keys take a ts
//!   from PD) and announces no ts. A lock written after its probe is of a txn that had not
//!   committed when the read began, so the read overlaps that commit and may return the
//!   value before it.
//! - When the probe finds a lock, the read checks the lock CF in its snapshot as before.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use base::ts::LATEST;
use engine::Snapshot;

use crate::error::Result;
use crate::reader::MvccReader;
use crate::record::{Lock, LockType};

/// What one write does to one key's entry; collected by `MvccTxn` as it records lock writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockChange {
    pub key: Vec<u8>,
    /// The smallest read ts the new lock blocks; `None` when the key is unlocked or its new
    /// lock blocks no read.
    pub blocks_from_ts: Option<u64>,
}

impl LockChange {
    pub fn put(key: &[u8], lock: &Lock) -> LockChange {
        let blocks_reads = matches!(lock.lock_type, LockType::Put | LockType::Delete);
        LockChange {
            key: key.to_vec(),
            blocks_from_ts: blocks_reads.then(|| lock.start_ts.max(lock.min_commit_ts)),
        }
    }

    pub fn remove(key: &[u8]) -> LockChange {
        LockChange {
            key: key.to_vec(),
            blocks_from_ts: None,
        }
    }
}

/// What a read learns from the table before it takes its snapshot; for several keys, the
/// greatest of theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Probe {
    /// No lock can block the read: it may skip the lock CF.
    Free,
    /// A lock may block it: the read checks the lock CF in its snapshot.
    MayBlock,
    /// A one-phase commit at or below the read's ts is being made durable: probe again once
    /// it is (one durable write; no lock CF record tells of it).
    Committing,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// The smallest read ts the entry blocks.
    blocks_from_ts: u64,
    /// A one-phase commit's, not a lock CF record's.
    committing: bool,
}

impl Entry {
    fn probe(&self, ts: u64) -> Probe {
        match (self.blocks_from_ts <= ts, self.committing) {
            (false, _) => Probe::Free,
            (true, false) => Probe::MayBlock,
            (true, true) => Probe::Committing,
        }
    }
}

#[derive(Default)]
pub struct LockTable {
    /// User key -> what blocks reads of it.
    locks: RwLock<BTreeMap<Vec<u8>, Entry>>,
    /// The largest ts a read announced (raised under the read lock, read under the write lock).
    max_ts: AtomicU64,
    /// Whether `max_ts` covers the reads before this process started.
    max_ts_synced: AtomicBool,
    /// Bumped by each [`LockTable::reload_range`]: a timestamp taken before a reload does not
    /// cover what the previous leader served.
    generation: AtomicU64,
    /// One-phase commits given a commit ts, since start (for metrics).
    one_pc_commits: AtomicU64,
}

/// `[start, end)` as map bounds; an empty `end` is unbounded (the key ranges of requests and
/// regions).
pub(crate) fn key_bounds<'k>(start: &'k [u8], end: &'k [u8]) -> (Bound<&'k [u8]>, Bound<&'k [u8]>) {
    let upper = match end.is_empty() {
        true => Bound::Unbounded,
        false => Bound::Excluded(end),
    };
    (Bound::Included(start), upper)
}

fn apply_to(locks: &mut BTreeMap<Vec<u8>, Entry>, changes: Vec<LockChange>) {
    for change in changes {
        match change.blocks_from_ts {
            Some(ts) => locks.insert(
                change.key,
                Entry {
                    blocks_from_ts: ts,
                    committing: false,
                },
            ),
            None => locks.remove(&change.key),
        };
    }
}

impl LockTable {
    /// The table of the locks in `snap`'s lock CF (at start-up, before any read or write).
    pub fn load<S: Snapshot>(snap: S) -> Result<LockTable> {
        let table = LockTable::default();
        let locks = MvccReader::new(snap).scan_locks(b"", b"", u64::MAX, usize::MAX)?;
        table.apply(
            locks
                .iter()
                .map(|(key, lock)| LockChange::put(key, lock))
                .collect(),
        );
        Ok(table)
    }

    /// Replaces the table's locks of `[start, end)` (an empty `end` is unbounded) with those
    /// of the lock CF as `snapshot` shows it, and forgets that `max_ts` was synced. For a
    /// replica that just became the leader of the region of that range (the locks are the
    /// ones the log applied, and reads the previous leader served are unknown here, so a
    /// one-phase commit waits until [`LockTable::sync_max_ts`] brings a fresh PD timestamp),
    /// or a leader whose region a merge widened. The snapshot is taken under the table's
    /// write lock, so a write whose changes reached the table before is in it, and one whose
    /// changes come after is applied on top; one-phase commits' committing entries stay. The
    /// locks of other regions this store leads stay as they are.
    pub fn reload_range<S: Snapshot>(
        &self,
        snapshot: impl FnOnce() -> S,
        start: &[u8],
        end: &[u8],
    ) -> Result<()> {
        let mut locks = self.locks.write().expect("lock table poisoned");
        let fresh: Vec<LockChange> =
            (MvccReader::new(snapshot()).scan_locks(start, end, u64::MAX, usize::MAX)?)
                .iter()
                .map(|(key, lock)| LockChange::put(key, lock))
                .collect();
        let stale: Vec<Vec<u8>> = (locks.range::<[u8], _>(key_bounds(start, end)))
            .filter(|(_, e)| !e.committing)
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            locks.remove(&key);
        }
        apply_to(&mut locks, fresh);
        self.max_ts_synced.store(false, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// The number of reloads so far; take it before asking PD for a timestamp to hand to
    /// [`LockTable::sync_max_ts_since`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// As [`LockTable::sync_max_ts`], unless the table was reloaded since `generation`
    /// (then `ts` may not cover the new term's past reads): returns whether it synced.
    pub fn sync_max_ts_since(&self, ts: u64, generation: u64) -> bool {
        let _locks = self.locks.write().expect("lock table poisoned");
        if self.generation.load(Ordering::Acquire) != generation {
            return false;
        }
        self.max_ts.fetch_max(ts, Ordering::AcqRel);
        self.max_ts_synced.store(true, Ordering::Release);
        true
    }

    /// Applies a durable batch's lock changes, in the order they were made.
    pub fn apply(&self, changes: Vec<LockChange>) {
        if changes.is_empty() {
            return;
        }
        apply_to(
            &mut self.locks.write().expect("lock table poisoned"),
            changes,
        );
    }

    /// A read of `key` at `ts` announces `ts` and learns whether a lock may block it.
    pub fn probe_key(&self, key: &[u8], ts: u64) -> Probe {
        self.probe_keys([key], ts)
    }

    /// As [`LockTable::probe_key`] for several keys, under one read lock.
    pub fn probe_keys<'a>(&self, keys: impl IntoIterator<Item = &'a [u8]>, ts: u64) -> Probe {
        let locks = self.locks.read().expect("lock table poisoned");
        self.announce(ts);
        keys.into_iter()
            .filter_map(|key| locks.get(key).map(|e| e.probe(ts)))
            .max()
            .unwrap_or(Probe::Free)
    }

    /// As [`LockTable::probe_key`] for the keys in `[start, end)` (`end` empty = unbounded).
    pub fn probe_range(&self, start: &[u8], end: &[u8], ts: u64) -> Probe {
        self.probe_ranges([(start, end)], ts)
    }

    /// As [`LockTable::probe_range`] for several ranges, under one read lock.
    pub fn probe_ranges<'a>(
        &self,
        ranges: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        ts: u64,
    ) -> Probe {
        let locks = self.locks.read().expect("lock table poisoned");
        self.announce(ts);
        ranges
            .into_iter()
            .filter(|(start, end)| end.is_empty() || start < end)
            .flat_map(|(start, end)| locks.range::<[u8], _>(key_bounds(start, end)))
            .map(|(_, e)| e.probe(ts))
            .max()
            .unwrap_or(Probe::Free)
    }

    /// Raises `max_ts` to a read's ts; the caller holds the read lock.
    fn announce(&self, ts: u64) {
        if ts != LATEST {
            self.max_ts.fetch_max(ts, Ordering::AcqRel);
        }
    }

    /// Raises `max_ts` to `ts`, a PD timestamp taken after this process started, so it
    /// covers every read served before; one-phase commit is allowed from now on.
    pub fn sync_max_ts(&self, ts: u64) {
        let _locks = self.locks.write().expect("lock table poisoned");
        self.max_ts.fetch_max(ts, Ordering::AcqRel);
        self.max_ts_synced.store(true, Ordering::Release);
    }

    /// Starts a one-phase commit of `keys`: returns its commit ts, above every read ts
    /// announced so far and at least `min_commit_ts`, and puts committing entries on the
    /// keys until [`LockTable::end_one_pc`]. `None` while `max_ts` is not synced. The caller
    /// holds the keys' latches.
    pub fn begin_one_pc<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a [u8]>,
        min_commit_ts: u64,
    ) -> Option<u64> {
        let mut locks = self.locks.write().expect("lock table poisoned");
        if !self.max_ts_synced.load(Ordering::Acquire) {
            return None;
        }
        let commit_ts = (self.max_ts.load(Ordering::Acquire) + 1).max(min_commit_ts);
        for key in keys {
            let entry = Entry {
                blocks_from_ts: commit_ts,
                committing: true,
            };
            locks.insert(key.to_vec(), entry);
        }
        self.one_pc_commits.fetch_add(1, Ordering::Relaxed);
        Some(commit_ts)
    }

    /// One-phase commits given a commit ts since start.
    pub fn one_pc_commits(&self) -> u64 {
        self.one_pc_commits.load(Ordering::Relaxed)
    }

    /// Ends a one-phase commit of `keys` (its write is durable, or failed).
    pub fn end_one_pc<'a>(&self, keys: impl IntoIterator<Item = &'a [u8]>) {
        let mut locks = self.locks.write().expect("lock table poisoned");
        for key in keys {
            if locks.get(key).is_some_and(|e| e.committing) {
                locks.remove(key);
            }
        }
    }

    /// Locked keys held (for metrics and tests).
    pub fn len(&self) -> usize {
        self.locks.read().expect("lock table poisoned").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(lock_type: LockType, start_ts: u64, min_commit_ts: u64) -> Lock {
        Lock {
            lock_type,
            primary: b"p".to_vec(),
            start_ts,
            ttl_ms: 3000,
            for_update_ts: 0,
            min_commit_ts,
            txn_size: 1,
            short_value: None,
        }
    }

    #[test]
    fn only_locks_that_block_reads_are_kept_and_a_read_below_them_is_not_blocked() {
        let table = LockTable::default();
        table.apply(vec![
            LockChange::put(b"a", &lock(LockType::Put, 10, 0)),
            LockChange::put(b"b", &lock(LockType::Pessimistic, 10, 0)),
            LockChange::put(b"c", &lock(LockType::Delete, 10, 15)),
            LockChange::put(b"d", &lock(LockType::Lock, 10, 0)),
        ]);
        assert_eq!(table.len(), 2);
        assert_eq!(Probe::MayBlock, table.probe_key(b"a", 10));
        assert_eq!(Probe::Free, table.probe_key(b"a", 9));
        assert_eq!(Probe::Free, table.probe_key(b"b", 100));
        assert_eq!(
            Probe::Free,
            table.probe_key(b"c", 14),
            "min_commit_ts 15 lets a read at 14 pass"
        );
        assert_eq!(Probe::MayBlock, table.probe_key(b"c", 15));
        assert_eq!(Probe::Free, table.probe_key(b"d", 100));
    }

    #[test]
    fn ranges_are_half_open_and_an_empty_end_is_unbounded() {
        let table = LockTable::default();
        table.apply(vec![LockChange::put(b"m", &lock(LockType::Put, 5, 0))]);
        assert_eq!(Probe::MayBlock, table.probe_range(b"a", b"z", 5));
        assert_eq!(Probe::MayBlock, table.probe_range(b"m", b"n", 5));
        assert_eq!(
            Probe::Free,
            table.probe_range(b"a", b"m", 5),
            "end is exclusive"
        );
        assert_eq!(Probe::MayBlock, table.probe_range(b"b", b"", 5));
        assert_eq!(Probe::Free, table.probe_range(b"n", b"", 5));
        assert_eq!(
            Probe::Free,
            table.probe_range(b"z", b"a", 5),
            "an empty range holds nothing"
        );
    }

    #[test]
    fn later_changes_replace_earlier_ones_in_order() {
        let table = LockTable::default();
        table.apply(vec![
            LockChange::put(b"k", &lock(LockType::Pessimistic, 7, 0)),
            LockChange::put(b"k", &lock(LockType::Put, 7, 0)),
        ]);
        assert_eq!(
            Probe::MayBlock,
            table.probe_key(b"k", 8),
            "prewrite turned the pessimistic lock into a Put"
        );
        table.apply(vec![LockChange::remove(b"k")]);
        assert!(table.is_empty(), "commit removed it");
    }

    #[test]
    fn one_pc_waits_for_a_pd_timestamp_and_commits_above_every_announced_read() {
        let table = LockTable::default();
        assert_eq!(table.probe_key(b"x", 40), Probe::Free);
        assert_eq!(
            table.begin_one_pc([&b"k"[..]], 11),
            None,
            "max_ts not synced"
        );
        table.sync_max_ts(30);
        assert_eq!(table.probe_range(b"a", b"", LATEST), Probe::Free);
        let commit_ts = table.begin_one_pc([&b"k"[..]], 11);
        assert_eq!(
            commit_ts,
            Some(41),
            "above the read at 40; LATEST announces nothing"
        );
        assert_eq!(
            table.begin_one_pc([&b"j"[..]], 50),
            Some(50),
            "min_commit_ts wins"
        );
        table.end_one_pc([&b"j"[..]]);
        assert_eq!(
            table.probe_key(b"k", 40),
            Probe::Free,
            "below the commit ts"
        );
        assert_eq!(table.probe_key(b"k", 41), Probe::Committing);
        assert_eq!(table.probe_range(b"a", b"z", 99), Probe::Committing);
        table.end_one_pc([&b"k"[..]]);
        assert!(table.is_empty());
        assert_eq!(table.one_pc_commits(), 2);
        assert_eq!(table.probe_key(b"k", 41), Probe::Free);
    }

    #[test]
    fn ending_a_one_pc_leaves_a_lock_cf_entry_alone() {
        let table = LockTable::default();
        table.apply(vec![LockChange::put(b"k", &lock(LockType::Put, 5, 0))]);
        table.end_one_pc([&b"k"[..]]);
        assert_eq!(table.probe_key(b"k", 5), Probe::MayBlock);
    }
}
