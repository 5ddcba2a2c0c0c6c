//! Pessimistic locks kept in memory, not in the lock CF (TiKV's `pessimistic-txn.in-memory`).
//!
//! A pessimistic lock blocks no read and only makes other writers wait; losing one (a
//! process kill, a crash) makes its txn's prewrite fail with `PessimisticLockNotFound`, so
//! nothing acknowledged is lost. Writing it to RocksDB cost each locked key a WAL write, a
//! lock CF put, and at commit a lock CF tombstone that later reads step over; sysbench
//! oltp_write_only locks four keys per txn.
//!
//! Where a lock lives (rules that keep each key's lock in exactly one place):
//! - A new pessimistic lock (the key had none) goes here while the table is enabled and
//!   below its byte limit, else to the lock CF ([`MvccTxn::put_new_pessimistic_lock`]).
//! - An update of a key's lock stays where the lock is: here if the table holds the key,
//!   else in the lock CF; a prewrite lock replacing one held here goes to the lock CF and
//!   the entry here goes; removing a lock held here touches no CF.
//! - Commands load a key's lock from here first ([`MvccReader::load_lock`]). They run under
//!   the scheduler's latches and apply their changes here after their engine write is
//!   durable, so a command sees its keys' locks exactly where they are.
//! - A lock scan without latches (GC's Resolve Locks, a region's locks of one txn) scans
//!   here *before* it takes its snapshot, then the snapshot's lock CF ([`merge`]): a lock a
//!   prewrite moves from here to the lock CF meanwhile is in one of the two views or both,
//!   never in neither; in both, the lock CF's is the newer. A lock that went meanwhile may
//!   still be listed; whoever resolves it looks again under latches.
//!
//! Bound: the table's bytes (keys, primaries, per-entry overhead) stay at most
//! `pessimistic-txn.in-memory-instance-size-limit` plus the commands in flight: the check
//! is made when a command decides, the insert when it is durable.
//!
//! [`MvccTxn::put_new_pessimistic_lock`]: crate::MvccTxn::put_new_pessimistic_lock
//! [`MvccReader::load_lock`]: crate::MvccReader::load_lock

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::record::Lock;

/// What a map entry costs besides its key and primary (the lock's fixed fields and the
/// tree's node share), for the byte bound.
const ENTRY_OVERHEAD_BYTES: usize = 96;

/// Whether `key` lies in one of `ranges` (`[start, end)`, an empty end unbounded).
pub fn in_ranges(ranges: &[(Vec<u8>, Vec<u8>)], key: &[u8]) -> bool {
    ranges
        .iter()
        .any(|(s, e)| key >= s.as_slice() && (e.is_empty() || key < e.as_slice()))
}

/// One change a durable command makes to the table: a lock put (`Some`) or removed (`None`).
pub type PessimisticChange = (Vec<u8>, Option<Lock>);

#[derive(Default)]
struct Locks {
    by_key: BTreeMap<Vec<u8>, Lock>,
    bytes: usize,
}

fn entry_bytes(key: &[u8], lock: &Lock) -> usize {
    key.len() + lock.primary.len() + ENTRY_OVERHEAD_BYTES
}

pub struct PessimisticLocks {
    locks: Mutex<Locks>,
    enabled: AtomicBool,
    /// Set for good once the node hands its leadership off ([`Self::stop_taking_new_locks`]).
    handing_off: AtomicBool,
    /// Key ranges (`[start, end)`, an empty end unbounded) whose region's leadership is
    /// moving to another store: their new locks go to the lock CF ([`Self::pause_range`]).
    paused: Mutex<Vec<(Vec<u8>, Vec<u8>)>>,
    limit_bytes: AtomicUsize,
}

impl PessimisticLocks {
    /// A table that takes new locks while `enabled` and under `limit_bytes`.
    pub fn new(enabled: bool, limit_bytes: usize) -> PessimisticLocks {
        PessimisticLocks {
            locks: Mutex::new(Locks::default()),
            enabled: AtomicBool::new(enabled),
            handing_off: AtomicBool::new(false),
            paused: Mutex::new(Vec::new()),
            limit_bytes: AtomicUsize::new(limit_bytes),
        }
    }

    /// `pessimistic-txn.in-memory` and `...in-memory-instance-size-limit`, online: locks
    /// already here stay until their txn removes them.
    pub fn configure(&self, enabled: bool, limit_bytes: usize) {
        self.enabled.store(enabled, Ordering::Relaxed);
        self.limit_bytes.store(limit_bytes, Ordering::Relaxed);
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, Locks> {
        self.locks.lock().expect("pessimistic lock table poisoned")
    }

    pub fn get(&self, key: &[u8]) -> Option<Lock> {
        self.locked().by_key.get(key).cloned()
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        self.locked().by_key.contains_key(key)
    }

    /// Whether a new lock may go here now.
    pub fn takes_new_locks(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
            && !self.handing_off.load(Ordering::Acquire)
            && self.locked().bytes < self.limit_bytes.load(Ordering::Relaxed)
    }

    /// From now on new locks go to the lock CF, whatever the knobs say: the node is about to
    /// hand its regions' leadership to other stores, which see only what the lock CF holds.
    /// A command that decided before this call may still add a lock here; the hand-off
    /// looks again until the table is empty.
    pub fn stop_taking_new_locks(&self) {
        self.handing_off.store(true, Ordering::Release);
    }

    /// Whether new locks on all of `keys` may go here now (see [`Self::takes_new_locks`]
    /// and [`Self::pause_range`]).
    pub fn takes_new_locks_on<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> bool {
        if !self.takes_new_locks() {
            return false;
        }
        let paused = self.paused_ranges_mut();
        paused.is_empty() || keys.into_iter().all(|k| !in_ranges(&paused, k))
    }

    /// From now on new locks on keys in `[start, end)` go to the lock CF: the leadership of
    /// that range's region is about to move (the caller moves the range's locks here to the
    /// lock CF, as a hand-off does, then transfers). Undone by [`Self::resume_range`].
    pub fn pause_range(&self, start: &[u8], end: &[u8]) {
        self.paused_ranges_mut()
            .push((start.to_vec(), end.to_vec()));
    }

    /// Undoes one [`Self::pause_range`] of the same range.
    pub fn resume_range(&self, start: &[u8], end: &[u8]) {
        let mut paused = self.paused_ranges_mut();
        if let Some(i) = paused.iter().position(|(s, e)| s == start && e == end) {
            paused.swap_remove(i);
        }
    }

    /// Undoes every pause of a range inside `[start, end)` (an empty end is unbounded):
    /// this store leads that range's region again, with the range's locks reloaded.
    pub fn resume_within(&self, start: &[u8], end: &[u8]) {
        self.paused_ranges_mut().retain(|(s, e)| {
            let inside =
                s.as_slice() >= start && (end.is_empty() || (!e.is_empty() && e.as_slice() <= end));
            !inside
        });
    }

    /// The ranges paused now (see [`Self::pause_range`]).
    pub fn paused_ranges(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.paused_ranges_mut().clone()
    }

    fn paused_ranges_mut(&self) -> std::sync::MutexGuard<'_, Vec<(Vec<u8>, Vec<u8>)>> {
        self.paused.lock().expect("paused ranges poisoned")
    }

    /// The first `limit` keys locked here in `[start, end)` (an empty end is unbounded).
    pub fn keys_in(&self, start: &[u8], end: &[u8], limit: usize) -> Vec<Vec<u8>> {
        (self
            .locked()
            .by_key
            .range::<[u8], _>(crate::lock_table::key_bounds(start, end)))
        .take(limit)
        .map(|(k, _)| k.clone())
        .collect()
    }

    /// The first `limit` keys locked here, in key order.
    pub fn keys(&self, limit: usize) -> Vec<Vec<u8>> {
        self.locked().by_key.keys().take(limit).cloned().collect()
    }

    /// Forgets the locks of `[start, end)` (an empty `end` is unbounded): a replica that
    /// just became the leader of that range's region may hold locks from an earlier term of
    /// its own, which the leaders since may have seen released.
    pub fn clear_range(&self, start: &[u8], end: &[u8]) {
        let mut locks = self.locked();
        let gone: Vec<Vec<u8>> = (locks
            .by_key
            .range::<[u8], _>(crate::lock_table::key_bounds(start, end)))
        .map(|(k, _)| k.clone())
        .collect();
        for key in gone {
            if let Some(lock) = locks.by_key.remove(&key) {
                locks.bytes -= entry_bytes(&key, &lock);
            }
        }
    }

    /// Applies a durable command's changes, in order.
    pub fn apply(&self, changes: Vec<PessimisticChange>) {
        if changes.is_empty() {
            return;
        }
        let mut locks = self.locked();
        for (key, lock) in changes {
            let added = lock.as_ref().map_or(0, |l| entry_bytes(&key, l));
            let removed = match lock {
                Some(lock) => locks.by_key.insert(key.clone(), lock),
                None => locks.by_key.remove(&key),
            };
            let removed = removed.map_or(0, |l| entry_bytes(&key, &l));
            locks.bytes = locks.bytes + added - removed;
        }
    }

    /// Locks on keys in `[start, end)` (`end` empty = unbounded) whose txn started at or
    /// before `max_ts`, in key order, at most `limit`.
    pub fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        max_ts: u64,
        limit: usize,
    ) -> Vec<(Vec<u8>, Lock)> {
        self.locked()
            .by_key
            .range::<[u8], _>(crate::lock_table::key_bounds(start, end))
            .filter(|(_, lock)| lock.start_ts <= max_ts)
            .take(limit)
            .map(|(key, lock)| (key.clone(), lock.clone()))
            .collect()
    }

    /// Locks held here, and their bytes as the bound counts them (for `/metrics`).
    pub fn stats(&self) -> (usize, usize) {
        let locks = self.locked();
        (locks.by_key.len(), locks.bytes)
    }
}

/// The locks of a scan of this table (taken first) and of the lock CF in a snapshot taken
/// after it, in key order, at most `limit`; a key in both gets the lock CF's lock.
pub fn merge(
    in_memory: Vec<(Vec<u8>, Lock)>,
    stored: Vec<(Vec<u8>, Lock)>,
    limit: usize,
) -> Vec<(Vec<u8>, Lock)> {
    let mut merged: BTreeMap<Vec<u8>, Lock> = in_memory.into_iter().collect();
    merged.extend(stored);
    merged.into_iter().take(limit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::LockType;

    fn lock(start_ts: u64) -> Lock {
        Lock {
            lock_type: LockType::Pessimistic,
            primary: b"p".to_vec(),
            start_ts,
            ttl_ms: 3000,
            for_update_ts: start_ts,
            min_commit_ts: 0,
            txn_size: 0,
            short_value: None,
        }
    }

    #[test]
    fn counts_bytes_and_stops_taking_new_locks_at_the_limit() {
        let table = PessimisticLocks::new(true, 2 * entry_bytes(b"k1", &lock(1)));
        table.apply(vec![(b"k1".to_vec(), Some(lock(1)))]);
        assert!(table.takes_new_locks());
        table.apply(vec![(b"k2".to_vec(), Some(lock(2)))]);
        assert!(!table.takes_new_locks(), "at the limit");
        // An update replaces the entry without counting it twice.
        table.apply(vec![(b"k2".to_vec(), Some(lock(3)))]);
        assert_eq!(table.stats(), (2, 2 * entry_bytes(b"k1", &lock(1))));
        table.apply(vec![(b"k1".to_vec(), None), (b"absent".to_vec(), None)]);
        assert!(table.takes_new_locks());
        assert_eq!(table.get(b"k2").map(|l| l.start_ts), Some(3));
        table.configure(false, usize::MAX);
        assert!(!table.takes_new_locks(), "disabled");
    }

    #[test]
    fn scans_a_range_below_a_ts() {
        let table = PessimisticLocks::new(true, usize::MAX);
        table.apply(
            [(b"a", 5), (b"b", 20), (b"c", 7), (b"d", 1)]
                .iter()
                .map(|(k, ts)| (k.to_vec(), Some(lock(*ts))))
                .collect(),
        );
        let keys = |v: Vec<(Vec<u8>, Lock)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            keys(table.scan(b"a", b"d", 10, 10)),
            [b"a".to_vec(), b"c".to_vec()]
        );
        assert_eq!(keys(table.scan(b"b", b"", 10, 1)), [b"c".to_vec()]);
    }
}
