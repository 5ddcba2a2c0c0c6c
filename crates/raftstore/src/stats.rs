//! What a store counts as it runs, for `/metrics` (TiKV's Raft IO and Raft propose panels):
//! proposals with their wait in the store's queue (propose wait) and, for those that applied,
//! the time from proposal to commit (commit log); raft-engine writes (append log duration,
//! which includes the fsync) and how many fsynced; kv writes of applied entries (apply
//! duration) and the time from their round's commit to that write (apply wait: a round
//! commits, then applies what every region committed in one batch); snapshots built and
//! applied. Written by the raftstore thread, read by any.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct StoreStats {
    pub proposals: AtomicU64,
    pub propose_wait_micros: AtomicU64,
    pub commits: AtomicU64,
    pub commit_log_micros: AtomicU64,
    pub log_writes: AtomicU64,
    pub log_fsyncs: AtomicU64,
    pub log_write_micros: AtomicU64,
    pub apply_writes: AtomicU64,
    pub apply_micros: AtomicU64,
    pub apply_wait_micros: AtomicU64,
    pub snapshots_built: AtomicU64,
    pub snapshots_applied: AtomicU64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl StoreStats {
    pub(crate) fn propose_wait(&self, waited: Duration) {
        add(&self.proposals, 1);
        add(&self.propose_wait_micros, waited.as_micros() as u64);
    }

    /// `n` proposals applied, having waited `total` between proposal and commit.
    pub(crate) fn commit_log(&self, n: u64, total: Duration) {
        add(&self.commits, n);
        add(&self.commit_log_micros, total.as_micros() as u64);
    }

    pub(crate) fn log_write(&self, took: Duration, synced: bool) {
        add(&self.log_writes, 1);
        add(&self.log_fsyncs, u64::from(synced));
        add(&self.log_write_micros, took.as_micros() as u64);
    }

    pub(crate) fn apply_write(&self, waited: Duration, took: Duration) {
        add(&self.apply_writes, 1);
        add(&self.apply_wait_micros, waited.as_micros() as u64);
        add(&self.apply_micros, took.as_micros() as u64);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
