//! The writes of one MVCC command, collected and then applied as one atomic write batch,
//! with the changes they make to the [`LockTable`](crate::lock_table::LockTable).

use codec::mvcc::{append_ts, encode_key};
use engine::{Cf, WriteBatch};

use crate::lock_table::LockChange;
use crate::record::{Latest, Lock, Write};

enum Modify {
    Put(Cf, Vec<u8>, Vec<u8>),
    Delete(Cf, Vec<u8>),
}

#[derive(Default)]
pub struct MvccTxn {
    modifies: Vec<Modify>,
    lock_changes: Vec<LockChange>,
}

impl MvccTxn {
    pub fn new() -> MvccTxn {
        MvccTxn::default()
    }

    pub fn put_lock(&mut self, key: &[u8], lock: &Lock) {
        self.modifies
            .push(Modify::Put(Cf::Lock, encode_key(key), lock.encode()));
        self.lock_changes.push(LockChange::put(key, lock));
    }

    pub fn unlock(&mut self, key: &[u8]) {
        self.modifies
            .push(Modify::Delete(Cf::Lock, encode_key(key)));
        self.lock_changes.push(LockChange::remove(key));
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
            })
            .sum()
    }

    /// Moves the writes into `batch`, in the order they were made, and returns the lock
    /// table's changes, to apply once `batch` is durable.
    pub fn fill<W: WriteBatch>(self, batch: &mut W) -> Vec<LockChange> {
        for m in self.modifies {
            match m {
                Modify::Put(cf, k, v) => batch.put(cf, &k, &v),
                Modify::Delete(cf, k) => batch.delete(cf, &k),
            }
        }
        self.lock_changes
    }
}
