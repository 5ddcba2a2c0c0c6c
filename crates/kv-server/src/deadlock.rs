//! Deadlock detection for pessimistic locks, as TiKV's detector does it on one node: a
//! pessimistic lock request that finds another txn's lock records the edge "waiter waits for
//! holder"; if the holder (through the txns it waits for) already waits for the waiter, the
//! request fails with `Deadlock` instead and its edge is dropped. A txn waits for one lock at
//! a time (its request tries again at least every second while it waits: `lock_waits`), so
//! each txn has at most one edge; an edge not renewed within [`EDGE_TTL`] is stale and
//! ignored, and taking the lock, committing or rolling back removes it.
//!
//! One node sees every lock while each region has one replica here; detection across nodes
//! comes with replication.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an edge stays without the waiter asking again (it asks every second or sooner).
pub const EDGE_TTL: Duration = Duration::from_secs(3);

#[derive(Default)]
pub struct Detector {
    /// waiter start_ts → (holder start_ts, when recorded).
    waits_for: Mutex<HashMap<u64, (u64, Instant)>>,
}

impl Detector {
    /// Records that `waiter` waits for `holder`; `true` if that closes a cycle (a deadlock:
    /// the edge is not kept).
    pub fn wait(&self, waiter: u64, holder: u64, now: Instant) -> bool {
        let mut edges = self.waits_for.lock().expect("detector lock poisoned");
        edges.retain(|_, (_, at)| now.duration_since(*at) < EDGE_TTL);
        // Follow holder's chain: at most one edge per txn, so a walk bounded by the edge count.
        let mut at = holder;
        for _ in 0..=edges.len() {
            if at == waiter {
                edges.remove(&waiter);
                return true;
            }
            match edges.get(&at) {
                Some((next, _)) => at = *next,
                None => break,
            }
        }
        edges.insert(waiter, (holder, now));
        false
    }

    /// `txn` waits for nothing any more (it took its lock, committed or rolled back).
    pub fn clear(&self, txn: u64) {
        self.waits_for
            .lock()
            .expect("detector lock poisoned")
            .remove(&txn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_a_deadlock_and_stale_edges_do_not_count() {
        let d = Detector::default();
        let t0 = Instant::now();
        assert!(!d.wait(1, 2, t0));
        assert!(!d.wait(2, 3, t0));
        assert!(d.wait(3, 1, t0), "1 -> 2 -> 3 -> 1");
        // 3's edge was not kept: 3 can wait for someone else.
        assert!(!d.wait(3, 4, t0));
        d.clear(2);
        assert!(!d.wait(4, 1, t0), "the chain broke at 2");
        // Edges older than the TTL are forgotten.
        let later = t0 + EDGE_TTL + Duration::from_millis(1);
        assert!(!d.wait(2, 4, later));
        assert!(!d.wait(9, 9 + 1, later));
    }
}
