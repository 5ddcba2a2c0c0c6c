//! Lock resolution, as Percolator's readers and writers do it: ask the lock's primary what
//! became of its txn (CheckTxnStatus, which also rolls back a txn whose TTL ran out), then
//! commit or roll back the lock in the way (ResolveLock). A txn still alive is left alone:
//! a reader whose read ts the txn's min_commit_ts was pushed past may read around it (its
//! start_ts goes into the request's `resolved_locks`); anyone else backs off and retries.
//! (The kv node itself drops a pessimistic lock left behind by a committed txn: only it
//! sees the lock's current type; the lock info here may be stale.)
//!
//! GC's Resolve Locks step ([`resolve_below`]) does the same for every lock at or below the
//! new safe point, region by region, and reports the oldest lock it had to leave in place.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use base::ts::physical_ms;
use proto::kv::{CheckTxnStatusRequest, LockInfo, ResolveLockRequest, ScanLockRequest};

use crate::Inner;
use crate::backoff::{Backoff, READ_BUDGET_MS};
use crate::error::{KvError, Result};
use crate::rpc::{Sent, send, send_on_key};

/// Locks one ScanLock request returns at most (TiDB's GC scans 1024 at a time).
pub const SCAN_LOCK_BATCH: u32 = 1024;

#[derive(Debug, Default)]
pub struct Resolved {
    /// Every lock is gone: retry at once.
    pub all: bool,
    /// Live txns the caller may read around.
    pub pushed: Vec<u64>,
    /// The start ts of the oldest lock left in place (its txn alive, or its resolution
    /// refused).
    pub oldest_left: Option<u64>,
}

/// What GC's Resolve Locks step did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedBelow {
    /// Locks older than the safe point that were found.
    pub found: usize,
    /// The start ts of the oldest lock left in place: GC must not pass it.
    pub oldest_left: Option<u64>,
}

enum Fate {
    Committed(u64),
    RolledBack,
    Alive { min_commit_ts: u64 },
}

/// Resolves `locks` met at `caller_start_ts` (0 for a writer).
pub(crate) async fn resolve(
    inner: &Inner,
    bo: &Backoff,
    caller_start_ts: u64,
    locks: &[LockInfo],
) -> Result<Resolved> {
    let mut out = Resolved {
        all: true,
        ..Resolved::default()
    };

    let mut fates: HashMap<u64, Fate> = HashMap::new();
    for lock in locks {
        if let Entry::Vacant(slot) = fates.entry(lock.lock_version) {
            slot.insert(txn_fate(inner, bo, caller_start_ts, lock).await?);
        }
        let commit_version = match fates[&lock.lock_version] {
            Fate::Committed(ts) => ts,
            Fate::RolledBack => 0,
            Fate::Alive { min_commit_ts } => {
                if caller_start_ts > 0 && min_commit_ts > caller_start_ts {
                    out.pushed.push(lock.lock_version);
                } else {
                    leave(&mut out, lock);
                }
                continue;
            }
        };
        let req = ResolveLockRequest {
            context: None,
            start_version: lock.lock_version,
            commit_version,
            keys: vec![lock.key.clone()],
        };
        let resp = send_on_key(&inner.cache, &inner.conns, bo, &lock.key, req).await?;
        // Any error (a lock of another txn now, or one this resolution cannot remove): the
        // caller backs off before it looks again, so it never spins.
        if let Some(e) = resp.error {
            tracing::debug!(start_ts = lock.lock_version, "resolve lock answered {e:?}");
            leave(&mut out, lock);
        }
    }
    out.pushed.sort_unstable();
    out.pushed.dedup();
    Ok(out)
}

/// `lock` stays where it is: not everything was resolved.
fn leave(out: &mut Resolved, lock: &LockInfo) {
    out.all = false;
    out.oldest_left = Some(
        out.oldest_left
            .map_or(lock.lock_version, |t| t.min(lock.lock_version)),
    );
}

async fn txn_fate(
    inner: &Inner,
    bo: &Backoff,
    caller_start_ts: u64,
    lock: &LockInfo,
) -> Result<Fate> {
    let current_ts = inner.pd.get_ts().await?;
    let expired =
        physical_ms(lock.lock_version).saturating_add(lock.lock_ttl) < physical_ms(current_ts);
    let req = CheckTxnStatusRequest {
        context: None,
        primary_key: lock.primary_lock.clone(),
        lock_ts: lock.lock_version,
        caller_start_ts,
        current_ts,
        rollback_if_not_exist: expired,
    };
    let resp = send_on_key(&inner.cache, &inner.conns, bo, &lock.primary_lock, req).await?;
    if let Some(e) = resp.error {
        // The primary's prewrite may still be on its way: alive until the TTL says not.
        if e.txn_not_found.is_some() {
            return Ok(Fate::Alive { min_commit_ts: 0 });
        }
        return Err(KvError::from_key_error(caller_start_ts, &e));
    }
    Ok(if resp.lock_ttl > 0 {
        Fate::Alive {
            min_commit_ts: resp.lock_info.map_or(0, |l| l.min_commit_ts),
        }
    } else if resp.commit_version > 0 {
        Fate::Committed(resp.commit_version)
    } else {
        Fate::RolledBack
    })
}

/// Resolves every lock whose start ts is at most `safe_point`, in every region (GC's Resolve
/// Locks): committed txns' locks are committed, dead ones rolled back, live ones left.
pub(crate) async fn resolve_below(inner: &Inner, safe_point: u64) -> Result<ResolvedBelow> {
    let mut out = ResolvedBelow::default();
    let mut from = Vec::new();
    // One budget per batch, across its retries: a large cluster's scan may take long as a
    // whole, but a node that stays down ends the run.
    let mut bo = Backoff::new("gc_resolve_locks", READ_BUDGET_MS);
    loop {
        let route = inner.cache.locate(&from).await?;
        let req = ScanLockRequest {
            context: None,
            max_version: safe_point,
            start_key: from.clone(),
            end_key: Vec::new(),
            limit: SCAN_LOCK_BATCH,
        };
        let resp = match send(&inner.cache, &inner.conns, &bo, &route, req).await? {
            Sent::Reroute => continue,
            Sent::Done(r) => r,
        };
        if let Some(e) = resp.error {
            return Err(KvError::from_key_error(0, &e));
        }
        let full = resp.locks.len() == SCAN_LOCK_BATCH as usize;
        let next = resp.locks.last().map(|l| {
            let mut k = l.key.clone();
            k.push(0);
            k
        });
        out.found += resp.locks.len();
        let resolved = resolve(inner, &bo, 0, &resp.locks).await?;
        if let Some(ts) = resolved.oldest_left {
            out.oldest_left = Some(out.oldest_left.map_or(ts, |t| t.min(ts)));
        }
        match next {
            // More may follow in this region.
            Some(next) if full => from = next,
            _ if route.region.end_key.is_empty() => return Ok(out),
            _ => from = route.region.end_key.clone(),
        }
        bo = Backoff::new("gc_resolve_locks", READ_BUDGET_MS);
    }
}
