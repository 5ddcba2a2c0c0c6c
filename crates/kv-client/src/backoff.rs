//! Backoff with limits, after TiDB's backoffer: each kind of trouble has its own base and cap
//! (exponential with equal jitter), and one operation has one budget of total sleep; when it
//! is spent the operation fails with the last error instead of retrying forever. One
//! operation's tasks (a 2PC phase's region batches) share one `Backoff`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::KvError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackoffKind {
    /// The region moved or the cache was stale: look it up again soon.
    RegionMiss,
    /// The kv node said ServerIsBusy.
    ServerBusy,
    /// A lock of a live txn is in the way.
    TxnLock,
    /// A pessimistic lock request waits for another txn's lock: poll often, so the waiter
    /// takes the lock soon after it is released.
    LockWait,
    /// A kv node did not answer.
    KvRpc,
    /// PD did not answer.
    PdRpc,
}

impl BackoffKind {
    /// (base, cap) in milliseconds, TiDB's values.
    fn bounds_ms(self) -> (u64, u64) {
        match self {
            BackoffKind::RegionMiss => (2, 500),
            BackoffKind::ServerBusy => (2000, 10_000),
            BackoffKind::TxnLock => (100, 3000),
            BackoffKind::LockWait => (5, 100),
            BackoffKind::KvRpc => (100, 2000),
            BackoffKind::PdRpc => (500, 3000),
        }
    }
}

impl BackoffKind {
    pub const ALL: [BackoffKind; 6] = [
        BackoffKind::RegionMiss,
        BackoffKind::ServerBusy,
        BackoffKind::TxnLock,
        BackoffKind::LockWait,
        BackoffKind::KvRpc,
        BackoffKind::PdRpc,
    ];

    /// The `type` label of TiDB's `tidb_tikvclient_backoff_seconds` (lockWait is ours).
    pub fn name(self) -> &'static str {
        match self {
            BackoffKind::RegionMiss => "regionMiss",
            BackoffKind::ServerBusy => "serverBusy",
            BackoffKind::TxnLock => "txnLock",
            BackoffKind::LockWait => "lockWait",
            BackoffKind::KvRpc => "tikvRPC",
            BackoffKind::PdRpc => "pdRPC",
        }
    }
}

/// Every wait of this process by kind: how many, and the milliseconds slept here (a lock
/// request the kv node held is counted there, in `atoll_lock_wait_seconds_total`).
static TOTALS: [(AtomicU64, AtomicU64); 6] = [const { (AtomicU64::new(0), AtomicU64::new(0)) }; 6];

/// (waits, milliseconds) of `kind` since the process started, for `/metrics`.
pub fn totals(kind: BackoffKind) -> (u64, u64) {
    let (count, ms) = &TOTALS[kind as usize];
    (count.load(Ordering::Relaxed), ms.load(Ordering::Relaxed))
}

/// TiDB's budgets (ms): reads 20 s (`GetMaxBackoff` etc.), prewrite 20 s, commit 41 s.
pub const READ_BUDGET_MS: u64 = 20_000;
pub const PREWRITE_BUDGET_MS: u64 = 20_000;
pub const COMMIT_BUDGET_MS: u64 = 41_000;
/// How long a pessimistic lock waits for another txn's (`innodb_lock_wait_timeout`'s 50 s).
pub const LOCK_WAIT_BUDGET_MS: u64 = 50_000;

pub struct Backoff {
    what: &'static str,
    budget_ms: u64,
    state: std::sync::Mutex<State>,
}

struct State {
    slept_ms: u64,
    attempts: [u32; 6],
    seed: u64,
}

impl Backoff {
    pub fn new(what: &'static str, budget_ms: u64) -> Backoff {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
        Backoff {
            what,
            budget_ms,
            state: std::sync::Mutex::new(State {
                slept_ms: 0,
                attempts: [0; 6],
                seed,
            }),
        }
    }

    /// The next sleep for `kind`: base·2^attempt capped, half fixed and half random.
    pub fn next_sleep_ms(&self, kind: BackoffKind) -> u64 {
        let (base, cap) = kind.bounds_ms();
        let mut s = self.state.lock().expect("backoff lock poisoned");
        let attempt = s.attempts[kind as usize];
        let full = base.saturating_mul(1 << attempt.min(20)).min(cap);
        s.attempts[kind as usize] += 1;
        // xorshift: good enough to spread retries; no test depends on its values.
        s.seed ^= s.seed << 13;
        s.seed ^= s.seed >> 7;
        s.seed ^= s.seed << 17;
        full / 2 + s.seed % (full / 2 + 1)
    }

    fn slept_ms(&self) -> u64 {
        self.state.lock().expect("backoff lock poisoned").slept_ms
    }

    /// What is left of the budget.
    pub fn remaining_ms(&self) -> u64 {
        self.budget_ms.saturating_sub(self.slept_ms())
    }

    /// Sleeps before the next try, or fails with `last` once the budget is spent.
    pub async fn wait(
        &self,
        kind: BackoffKind,
        last: impl std::fmt::Display,
    ) -> Result<(), KvError> {
        self.wait_after(kind, 0, last).await
    }

    /// [`Backoff::wait`] after the try itself waited `waited_ms` (a kv node held a lock
    /// request while the lock stayed): that time counts against the budget and is not slept
    /// again.
    pub async fn wait_after(
        &self,
        kind: BackoffKind,
        waited_ms: u64,
        last: impl std::fmt::Display,
    ) -> Result<(), KvError> {
        let sleep = self.next_sleep_ms(kind).max(waited_ms);
        let slept_ms = self.slept_ms();
        if slept_ms + sleep > self.budget_ms {
            return Err(KvError::BackoffExhausted {
                what: self.what,
                slept_ms,
                last: last.to_string(),
            });
        }
        tracing::debug!(
            what = self.what,
            ?kind,
            sleep_ms = sleep,
            "backing off: {last}"
        );
        tokio::time::sleep(Duration::from_millis(sleep - waited_ms)).await;
        self.state.lock().expect("backoff lock poisoned").slept_ms += sleep;
        let (count, ms) = &TOTALS[kind as usize];
        count.fetch_add(1, Ordering::Relaxed);
        ms.fetch_add(sleep - waited_ms, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_grow_to_the_cap_and_the_budget_ends_the_retries() {
        let b = Backoff::new("test", 1000);
        let sleeps: Vec<u64> = (0..12)
            .map(|_| b.next_sleep_ms(BackoffKind::RegionMiss))
            .collect();
        assert!((1..=2).contains(&sleeps[0]), "{sleeps:?}");
        assert!(sleeps.iter().all(|&s| s <= 500), "{sleeps:?}");
        assert!(sleeps[11] >= 250, "{sleeps:?}");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let b = Backoff::new("get", 300);
        let err = rt.block_on(async {
            loop {
                if let Err(e) = b.wait(BackoffKind::TxnLock, "locked").await {
                    break e;
                }
            }
        });
        assert!(
            matches!(err, KvError::BackoffExhausted { what: "get", .. }),
            "{err}"
        );
    }
}
