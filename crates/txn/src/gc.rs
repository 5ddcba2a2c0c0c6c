//! The GC worker: given a safe point, removes what no reader at or after it can see
//! (KNOBS.md §6.4, the path with the compaction filter off).
//!
//! For each key, the newest `Put` or `Delete` at or below the safe point is what a reader at
//! the safe point sees: a `Put` stays, a `Delete` goes (nothing older can be seen through it);
//! every older version goes, with its value in the default CF; `Rollback` and `Lock` records
//! at or below the safe point go too (the GC leader resolves locks below the safe point
//! before it moves it, so no late prewrite needs them). Versions above the safe point stay.
//!
//! A key whose newest record is a `Delete` at or below the safe point has no value for any
//! reader left: its latest CF entry goes too. That delete races commits of the key (a new
//! `Put` replaces the entry), so it is made under the scheduler's latches, after a fresh
//! look at the entry.
//!
//! Deletes are written in batches of `gc.batch-keys` keys through [`ReplicatedKv`], and each
//! batch first waits on the `gc.max-write-bytes-per-sec` limiter.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use mvcc::{MvccReader, MvccTxn, WriteType};

use crate::latches::Latches;
use crate::limiter::Limiter;
use crate::replicated::{Durability, ReplicatedKv};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcStats {
    pub keys_scanned: u64,
    pub versions_deleted: u64,
    pub bytes_written: u64,
}

pub struct GcWorker<K> {
    kv: K,
    /// The scheduler's latches: commands hold them from their read to their write.
    latches: Arc<Latches>,
    pub limiter: Arc<Limiter>,
    batch_keys: AtomicUsize,
    keys_scanned: AtomicU64,
    versions_deleted: AtomicU64,
    bytes_written: AtomicU64,
}

impl<K: ReplicatedKv> GcWorker<K> {
    pub fn new(
        kv: K,
        latches: Arc<Latches>,
        batch_keys: usize,
        max_write_bytes_per_sec: u64,
    ) -> GcWorker<K> {
        GcWorker {
            kv,
            latches,
            limiter: Arc::new(Limiter::new(max_write_bytes_per_sec)),
            batch_keys: AtomicUsize::new(batch_keys.max(1)),
            keys_scanned: AtomicU64::new(0),
            versions_deleted: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
        }
    }

    pub fn set_batch_keys(&self, n: usize) {
        self.batch_keys.store(n.max(1), Ordering::Relaxed);
    }

    /// Totals since the worker started (for `/metrics`: GC speed and progress).
    pub fn stats(&self) -> GcStats {
        GcStats {
            keys_scanned: self.keys_scanned.load(Ordering::Relaxed),
            versions_deleted: self.versions_deleted.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
        }
    }

    /// Collects garbage below `safe_point` for keys in `[start, end)` (`end` empty = all).
    pub fn gc_range(&self, safe_point: u64, start: &[u8], end: &[u8]) -> mvcc::Result<()> {
        let mut next = start.to_vec();
        loop {
            let batch = self.batch_keys.load(Ordering::Relaxed);
            let reader = MvccReader::new(self.kv.snapshot()?);
            let keys = reader.write_keys(&next, end, batch)?;
            let Some(last) = keys.last() else {
                return Ok(());
            };
            next = last.clone();
            next.push(0);
            let mut txn = MvccTxn::new();
            let mut deleted = 0;
            let mut deleted_keys = Vec::new();
            for key in &keys {
                let collected = collect_key(&reader, &mut txn, key, safe_point)?;
                deleted += collected.versions;
                if let Some(commit_ts) = collected.newest_delete {
                    deleted_keys.push((key.as_slice(), commit_ts));
                }
            }
            self.keys_scanned
                .fetch_add(keys.len() as u64, Ordering::Relaxed);
            // Entries first: a crash between the two writes leaves none behind (a key whose
            // entry is gone reads as deleted, as its newest record says).
            self.forget_deleted_keys(&deleted_keys)?;
            self.pace(txn.write_bytes());
            self.write(txn, deleted)?;
            if keys.len() < batch {
                return Ok(());
            }
        }
    }

    /// Waits on the limiter for `bytes`, unless there are none to write.
    fn pace(&self, bytes: usize) {
        if bytes > 0 {
            self.limiter.blocking_consume(bytes);
        }
    }

    /// Writes `txn` (paced already) and counts it.
    fn write(&self, txn: MvccTxn, versions: u64) -> mvcc::Result<()> {
        if txn.is_empty() {
            return Ok(());
        }
        let bytes = txn.write_bytes();
        self.kv.write(txn, Durability::Synced)?;
        self.versions_deleted.fetch_add(versions, Ordering::Relaxed);
        self.bytes_written
            .fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Deletes the latest CF entries of `keys`, each a `Delete` at the given commit_ts that
    /// GC removed, unless a commit has replaced the entry since: under the latches, so no
    /// commit of these keys runs between the look and the delete. Paced before the latches
    /// are taken, so commands never wait on them through the limiter's wait.
    fn forget_deleted_keys(&self, keys: &[(&[u8], u64)]) -> mvcc::Result<()> {
        self.pace(keys.iter().map(|(key, _)| key.len()).sum());
        if keys.is_empty() {
            return Ok(());
        }
        let _latches = self.latches.acquire(keys.iter().map(|(k, _)| *k));
        let reader = MvccReader::new(self.kv.snapshot()?);
        let mut txn = MvccTxn::new();
        for &(key, commit_ts) in keys {
            if reader.load_latest(key)?.is_some_and(|l| {
                l.commit_ts == commit_ts && l.write.write_type == WriteType::Delete
            }) {
                txn.delete_latest(key);
            }
        }
        self.write(txn, 0)
    }
}

/// What GC removes of one key.
struct Collected {
    /// Versions deleted.
    versions: u64,
    /// The commit_ts of the key's newest record, a `Delete` at or below the safe point, now
    /// deleted: the key's latest CF entry should go too.
    newest_delete: Option<u64>,
}

/// Records the deletes for one key.
fn collect_key<S: engine::Snapshot>(
    reader: &MvccReader<S>,
    txn: &mut MvccTxn,
    key: &[u8],
    safe_point: u64,
) -> mvcc::Result<Collected> {
    let versions = reader.writes_since(key, 0)?;
    let newest_delete = versions
        .iter()
        .find(|(_, write)| write.is_data())
        .filter(|(commit_ts, write)| {
            *commit_ts <= safe_point && write.write_type == WriteType::Delete
        })
        .map(|&(commit_ts, _)| commit_ts);
    let mut deleted = 0;
    let mut seen_visible = false;
    for (commit_ts, write) in versions {
        if commit_ts > safe_point {
            continue;
        }
        let drop_it = match write.write_type {
            WriteType::Rollback | WriteType::Lock => true,
            WriteType::Delete => {
                seen_visible = true;
                true
            }
            WriteType::Put if !seen_visible => {
                seen_visible = true;
                false
            }
            WriteType::Put => true,
        };
        if drop_it {
            txn.delete_write(key, commit_ts);
            if write.write_type == WriteType::Put && write.short_value.is_none() {
                txn.delete_value(key, write.start_ts);
            }
            deleted += 1;
        }
    }
    Ok(Collected {
        versions: deleted,
        newest_delete,
    })
}
