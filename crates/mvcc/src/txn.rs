//! The writes of one MVCC command, collected and then applied as one atomic write batch,
//! with the changes they make to the [`LockTable`](crate::lock_table::LockTable) and to the
//! in-memory [`PessimisticLocks`] (where each lock goes: that module's header).

use codec::mvcc::{append_ts, encode_key};
use engine::{Cf, WriteBatch};

use crate::lock_table::LockChange;
use crate::pessimistic_locks::{PessimisticChange, PessimisticLocks};
use crate::record::{Latest, Lock, LockType, Write};

enum Modify {
    Put(Cf, Vec<u8>, Vec<u8>),
    Delete(Cf, Vec<u8>),
    /// A key's lock put (`Some`) or removed (`None`), in the lock CF or in memory: decided
    /// in [`MvccTxn::fill`]. `new_pessimistic`: the key had no lock.
    Lock {
        key: Vec<u8>,
        lock: Option<Lock>,
        new_pessimistic: bool,
    },
    /// A pessimistic lock held in memory, moved to the lock CF unchanged.
    PersistLock {
        key: Vec<u8>,
        lock: Lock,
    },
}

#[derive(Default)]
pub struct MvccTxn {
    modifies: Vec<Modify>,
    lock_changes: Vec<LockChange>,
}

/// What a txn changes besides its write batch, to apply once the batch is durable.
pub struct LockChanges {
    pub lock_table: Vec<LockChange>,
    pub pessimistic: Vec<PessimisticChange>,
}

impl MvccTxn {
    pub fn new() -> MvccTxn {
        MvccTxn::default()
    }

    /// Puts or replaces the key's lock where the key's lock is now.
    pub fn put_lock(&mut self, key: &[u8], lock: &Lock) {
        self.push_lock(key, Some(lock), false);
    }

    /// Puts a pessimistic lock on a key that has no lock (the caller looked): in memory if
    /// the [`PessimisticLocks`] take it, else in the lock CF.
    pub fn put_new_pessimistic_lock(&mut self, key: &[u8], lock: &Lock) {
        debug_assert_eq!(lock.lock_type, LockType::Pessimistic);
        self.push_lock(key, Some(lock), true);
    }

    /// Moves `lock`, which the [`PessimisticLocks`] hold for `key`, to the lock CF: the
    /// lock itself does not change, so the lock table does not either. The caller holds the
    /// key's latch, so no command moves or removes the lock meanwhile.
    pub fn persist_pessimistic_lock(&mut self, key: &[u8], lock: &Lock) {
        debug_assert_eq!(lock.lock_type, LockType::Pessimistic);
        self.modifies.push(Modify::PersistLock {
            key: key.to_vec(),
            lock: lock.clone(),
        });
    }

    pub fn unlock(&mut self, key: &[u8]) {
        self.push_lock(key, None, false);
    }

    fn push_lock(&mut self, key: &[u8], lock: Option<&Lock>, new_pessimistic: bool) {
        self.lock_changes.push(match lock {
            Some(lock) => LockChange::put(key, lock),
            None => LockChange::remove(key),
        });
        self.modifies.push(Modify::Lock {
            key: key.to_vec(),
            lock: lock.cloned(),
            new_pessimistic,
        });
    }

    /// Puts a write record that changes no value (a `Rollback` record, or a commit record
    /// flagged with an overlapped rollback); commits go through [`Self::commit_write`].
    pub fn put_write(&mut self, key: &[u8], commit_ts: u64, write: &Write) {
        self.modifies.push(Modify::Put(
            Cf::Write,
            append_ts(&encode_key(key), commit_ts),
            write.encode(),
        ));
    }

    /// Records a txn's commit of `key` at `commit_ts`: the write record and, for a `Put` or
    /// `Delete`, the key's latest CF entry. A key's data records commit in commit_ts order
    /// (the prewrite's conflict checks saw every commit before them, a 2PC commit ts comes
    /// from PD after the prewrite, and a one-phase commit ts is above the ts those checks
    /// used; a covered key's one-phase commit first looks for a newer commit), so the entry
    /// written last is the newest.
    pub fn commit_write(&mut self, key: &[u8], commit_ts: u64, write: Write) {
        let encoded = encode_key(key);
        let record = write.encode();
        if write.is_data() {
            let latest = Latest { commit_ts, write };
            self.modifies
                .push(Modify::Put(Cf::Latest, encoded.clone(), latest.encode()));
        }
        self.modifies.push(Modify::Put(
            Cf::Write,
            append_ts(&encoded, commit_ts),
            record,
        ));
    }

    /// Removes the key's latest CF entry (GC, once its newest record, a `Delete`, is gone).
    pub fn delete_latest(&mut self, key: &[u8]) {
        self.modifies
            .push(Modify::Delete(Cf::Latest, encode_key(key)));
    }

    pub fn delete_write(&mut self, key: &[u8], commit_ts: u64) {
        self.modifies.push(Modify::Delete(
            Cf::Write,
            append_ts(&encode_key(key), commit_ts),
        ));
    }

    pub fn put_value(&mut self, key: &[u8], start_ts: u64, value: &[u8]) {
        self.modifies.push(Modify::Put(
            Cf::Default,
            append_ts(&encode_key(key), start_ts),
            value.to_vec(),
        ));
    }

    pub fn delete_value(&mut self, key: &[u8], start_ts: u64) {
        self.modifies.push(Modify::Delete(
            Cf::Default,
            append_ts(&encode_key(key), start_ts),
        ));
    }

    pub fn is_empty(&self) -> bool {
        self.modifies.is_empty()
    }

    /// Bytes the batch will write (keys and values), for write-rate limits and flow control.
    pub fn write_bytes(&self) -> usize {
        self.modifies
            .iter()
            .map(|m| match m {
                Modify::Put(_, k, v) => k.len() + v.len(),
                Modify::Delete(_, k) => k.len(),
                Modify::PersistLock { key, lock } => key.len() + lock.encode().len(),
                // Counted by its key alone: it may stay in memory.
                Modify::Lock { key, .. } => key.len(),
            })
            .sum()
    }

    /// Moves the writes into `batch`, in the order they were made, deciding for each lock
    /// whether it lives in the lock CF or in `memory` (none: every lock in the lock CF);
    /// returns the changes to apply to the lock table and to `memory` once `batch` is
    /// durable. The caller holds the keys' latches from the command's reads to that apply,
    /// so `memory` cannot change under it.
    pub fn fill<W: WriteBatch>(
        self,
        batch: &mut W,
        memory: Option<&PessimisticLocks>,
    ) -> LockChanges {
        let mut pessimistic = Vec::new();
        // Decided once, so a key named twice in one command goes to one place; a key whose
        // region's leadership is moving (a paused range) goes to the lock CF.
        let takes_new = memory.is_some_and(PessimisticLocks::takes_new_locks);
        let paused = memory
            .map(PessimisticLocks::paused_ranges)
            .unwrap_or_default();
        for m in self.modifies {
            match m {
                Modify::Put(cf, k, v) => batch.put(cf, &k, &v),
                Modify::Delete(cf, k) => batch.delete(cf, &k),
                Modify::PersistLock { key, lock } => {
                    batch.put(Cf::Lock, &encode_key(&key), &lock.encode());
                    pessimistic.push((key, None));
                }
                Modify::Lock {
                    key,
                    lock,
                    new_pessimistic,
                } => {
                    let in_memory = memory.is_some_and(|m| m.contains(&key));
                    match lock {
                        Some(lock)
                            if lock.lock_type == LockType::Pessimistic
                                && (in_memory
                                    || new_pessimistic
                                        && takes_new
                                        && !crate::pessimistic_locks::in_ranges(&paused, &key)) =>
                        {
                            pessimistic.push((key, Some(lock)));
                        }
                        Some(lock) => {
                            batch.put(Cf::Lock, &encode_key(&key), &lock.encode());
                            if in_memory {
                                pessimistic.push((key, None));
                            }
                        }
                        None if in_memory => pessimistic.push((key, None)),
                        None => batch.delete(Cf::Lock, &encode_key(&key)),
                    }
                }
            }
        }
        LockChanges {
            lock_table: self.lock_changes,
            pessimistic,
        }
    }
}
