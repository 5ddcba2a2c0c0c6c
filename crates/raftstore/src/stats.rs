//! What a store counts as it runs, for `/metrics` (TiKV's Raft IO panels): raft-engine
//! writes (append log duration, which includes the fsync) and how many fsynced, kv writes of
//! applied entries (apply duration), snapshots built and applied. Written by the raftstore
//! thread, read by any.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct StoreStats {
    pub log_writes: AtomicU64,
    pub log_fsyncs: AtomicU64,
    pub log_write_micros: AtomicU64,
    pub apply_writes: AtomicU64,
    pub apply_micros: AtomicU64,
    pub snapshots_built: AtomicU64,
    pub snapshots_applied: AtomicU64,
}

impl StoreStats {
    pub(crate) fn log_write(&self, took: Duration, synced: bool) {
        self.log_writes.fetch_add(1, Ordering::Relaxed);
        self.log_fsyncs
            .fetch_add(u64::from(synced), Ordering::Relaxed);
        self.log_write_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    pub(crate) fn apply_write(&self, took: Duration) {
        self.apply_writes.fetch_add(1, Ordering::Relaxed);
        self.apply_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
