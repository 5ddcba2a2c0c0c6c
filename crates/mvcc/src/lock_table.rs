//! The lock table: an in-memory copy of the lock CF's locks that can block a read, so reads
//! skip the lock CF when nothing in what they read is locked. After a busy minute the lock
//! CF's memtable is mostly tombstones of finished transactions, and stepping over them was a
//! fifth of a kv node's CPU under sysbench read_write. (TiKV keeps a similar in-memory lock
//! table in its concurrency manager for async-commit locks.)
//!
//! For each key with a `Put` or `Delete` lock, the table keeps the smallest read ts the lock
//! blocks, `max(start_ts, min_commit_ts)` (see `reader::blocks`); pessimistic and `Lock`
//! locks never block reads and are left out.
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
//! - A read at `LATEST` reads one key (the client makes reads of several keys take a ts
//!   from PD). A lock written after its probe is of a txn that had not committed when the
//!   read began, so the read overlaps that commit and may return the value before it.
//! - When the probe finds something, the read checks the lock CF in its snapshot as before.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::RwLock;

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

#[derive(Default)]
pub struct LockTable {
    /// User key -> the smallest read ts its lock blocks.
    locks: RwLock<BTreeMap<Vec<u8>, u64>>,
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

    /// Applies a durable batch's lock changes, in the order they were made.
    pub fn apply(&self, changes: Vec<LockChange>) {
        if changes.is_empty() {
            return;
        }
        let mut locks = self.locks.write().expect("lock table poisoned");
        for change in changes {
            match change.blocks_from_ts {
                Some(ts) => locks.insert(change.key, ts),
                None => locks.remove(&change.key),
            };
        }
    }

    /// Whether a lock on `key` may block a read at `ts`.
    pub fn may_block_key(&self, key: &[u8], ts: u64) -> bool {
        let locks = self.locks.read().expect("lock table poisoned");
        locks.get(key).is_some_and(|&from| from <= ts)
    }

    /// Whether a lock in `[start, end)` (`end` empty = unbounded) may block a read at `ts`.
    pub fn may_block_range(&self, start: &[u8], end: &[u8], ts: u64) -> bool {
        let locks = self.locks.read().expect("lock table poisoned");
        let upper = if end.is_empty() {
            Bound::Unbounded
        } else {
            Bound::Excluded(end)
        };
        if !end.is_empty() && start >= end {
            return false;
        }
        locks
            .range::<[u8], _>((Bound::Included(start), upper))
            .any(|(_, &from)| from <= ts)
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
        assert!(table.may_block_key(b"a", 10));
        assert!(!table.may_block_key(b"a", 9));
        assert!(!table.may_block_key(b"b", 100));
        assert!(
            !table.may_block_key(b"c", 14),
            "min_commit_ts 15 lets a read at 14 pass"
        );
        assert!(table.may_block_key(b"c", 15));
        assert!(!table.may_block_key(b"d", 100));
    }

    #[test]
    fn ranges_are_half_open_and_an_empty_end_is_unbounded() {
        let table = LockTable::default();
        table.apply(vec![LockChange::put(b"m", &lock(LockType::Put, 5, 0))]);
        assert!(table.may_block_range(b"a", b"z", 5));
        assert!(table.may_block_range(b"m", b"n", 5));
        assert!(!table.may_block_range(b"a", b"m", 5), "end is exclusive");
        assert!(table.may_block_range(b"b", b"", 5));
        assert!(!table.may_block_range(b"n", b"", 5));
        assert!(
            !table.may_block_range(b"z", b"a", 5),
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
        assert!(
            table.may_block_key(b"k", 8),
            "prewrite turned the pessimistic lock into a Put"
        );
        table.apply(vec![LockChange::remove(b"k")]);
        assert!(table.is_empty(), "commit removed it");
    }
}
