//! Lock resolution, as Percolator's readers and writers do it: ask the lock's primary what
//! became of its txn (CheckTxnStatus, which also rolls back a txn whose TTL ran out), then
//! commit or roll back the lock in the way (ResolveLock). A txn still alive is left alone:
//! a reader whose read ts the txn's min_commit_ts was pushed past may read around it (its
//! start_ts goes into the request's `resolved_locks`); anyone else backs off and retries.
//! (The kv node itself drops a pessimistic lock left behind by a committed txn: only it
//! sees the lock's current type; the lock info here may be stale.)

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use base::ts::physical_ms;
use proto::kv::{CheckTxnStatusRequest, LockInfo, ResolveLockRequest};

use crate::Inner;
use crate::backoff::Backoff;
use crate::error::{KvError, Result};
use crate::rpc::send_on_key;

#[derive(Debug, Default)]
pub struct Resolved {
    /// Every lock is gone: retry at once.
    pub all: bool,
    /// Live txns the caller may read around.
    pub pushed: Vec<u64>,
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
        pushed: Vec::new(),
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
                    out.all = false;
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
            out.all = false;
        }
    }
    out.pushed.sort_unstable();
    out.pushed.dedup();
    Ok(out)
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
