//! Two-phase commit (Percolator, as TiDB drives it), or one phase when it can:
//!
//! 0. a txn whose keys all lie in one region batch and that asks for it (`tidb_enable_1pc`)
//!    sends that batch as a one-phase commit: the kv node commits it at once at a commit ts
//!    it picks (above every read it served), and that answer is the commit point. A node
//!    that cannot (its `max_ts` not synced yet) prewrites instead, and the txn goes on below;
//!    so does an attempt that went unanswered, whose failure below is then `Undetermined`;
//! 1. prewrite every region batch, in parallel up to `tidb_committer_concurrency`; a lock
//!    in the way is resolved (or waited for), a write conflict ends the txn and its
//!    prewrites are rolled back in the background;
//! 2. take a commit ts from PD and commit the primary key; that is the commit point. A
//!    primary commit whose answer is lost is retried (commit is idempotent) and, when the
//!    budget runs out, reported as `Undetermined`;
//! 3. commit the secondaries, in parallel per region. A failure there is only logged: the
//!    txn is committed, and any reader resolves the leftover locks from the primary.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use proto::kv::{BatchRollbackRequest, CommitRequest, Mutation, PrewriteRequest};
use tokio::task::JoinSet;

use crate::Inner;
use crate::backoff::{Backoff, BackoffKind, COMMIT_BUDGET_MS, PREWRITE_BUDGET_MS};
use crate::error::{KvError, Result};
use crate::lock_resolver;
use crate::region_cache::Route;
use crate::rpc::{Sent, send, send_on_key};

/// Most keys one prewrite, commit or rollback request carries (the kv node refuses more
/// than 100,000; smaller batches also spread a big txn over the committer's concurrency).
pub const MAX_KEYS_PER_BATCH: usize = 4096;

/// TiDB's optimistic lock TTL: 3 s, plus 6 s per MiB written, at most 20 s. A lock's TTL
/// counts from its txn's start ts, so the txn's age is added when the lock is written.
pub fn lock_ttl_ms(bytes: usize) -> u64 {
    (3000 + 6000 * bytes as u64 / (1 << 20)).min(20_000)
}

pub struct TwoPhase {
    pub start_ts: u64,
    pub primary: Vec<u8>,
    pub pessimistic_keys: BTreeSet<Vec<u8>>,
    /// Keys a pessimistic txn did not lock because its other locks cover them: prewrite
    /// does not conflict-check them. Any other unlocked key is checked.
    pub covered_keys: BTreeSet<Vec<u8>>,
    /// 0 for an optimistic txn.
    pub for_update_ts: u64,
    /// In key order.
    pub mutations: Vec<Mutation>,
    /// Keys and values of all mutations, for the lock TTL.
    pub bytes: usize,
    /// Commit in one phase when every key lies in one region batch (`tidb_enable_1pc`).
    pub one_pc: bool,
    /// Whether a prewrite that meets a live txn's lock waits for it; else the commit fails
    /// with [`KvError::KeyLocked`].
    pub waits_for_locks: bool,
}

impl TwoPhase {
    fn keys(&self) -> Vec<Vec<u8>> {
        self.mutations.iter().map(|m| m.key.clone()).collect()
    }

    fn prewrite_request(&self, keys: &[Vec<u8>], one_pc: bool) -> PrewriteRequest {
        // `mutations` is in key order (the txn's buffer is sorted): look each key up.
        let mut mutations: Vec<Mutation> = keys
            .iter()
            .filter_map(|k| {
                self.mutations
                    .binary_search_by(|m| m.key.as_slice().cmp(k))
                    .ok()
                    .map(|i| self.mutations[i].clone())
            })
            .collect();
        mutations.sort_by(|a, b| a.key.cmp(&b.key));
        PrewriteRequest {
            context: None,
            is_pessimistic_lock: mutations
                .iter()
                .map(|m| self.pessimistic_keys.contains(&m.key))
                .collect(),
            is_covered: mutations
                .iter()
                .map(|m| self.covered_keys.contains(&m.key))
                .collect(),
            mutations,
            primary_lock: self.primary.clone(),
            start_version: self.start_ts,
            lock_ttl: lock_ttl_ms(self.bytes) + base::ts::age_ms(self.start_ts),
            for_update_ts: self.for_update_ts,
            txn_size: self.mutations.len() as u64,
            min_commit_ts: 0,
            try_one_pc: one_pc,
        }
    }
}

/// Runs `step` on every region batch of `keys`, up to `concurrency` at once; a batch whose
/// route turned out wrong is split by the fresh routes and run again. The first error wins.
async fn for_each_region<F, Fut>(
    inner: &Arc<Inner>,
    keys: &[Vec<u8>],
    concurrency: usize,
    step: F,
) -> Result<()>
where
    F: Fn(Route, Vec<Vec<u8>>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Sent<()>>> + Send + 'static,
{
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    let batches = inner
        .cache
        .group_keys(keys)
        .await?
        .into_iter()
        .flat_map(|(route, keys)| {
            keys.chunks(MAX_KEYS_PER_BATCH)
                .map(|c| (route.clone(), c.to_vec()))
                .collect::<Vec<_>>()
        });
    for (route, keys) in batches {
        let (inner, step, semaphore) = (inner.clone(), step.clone(), semaphore.clone());
        tasks.spawn(async move {
            let _permit = semaphore.acquire_owned().await;
            let mut work = vec![(route, keys)];
            while let Some((route, keys)) = work.pop() {
                if let Sent::Reroute = step(route, keys.clone()).await? {
                    work.extend(inner.cache.group_keys(&keys).await?);
                }
            }
            Ok::<(), KvError>(())
        });
    }
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        let result = joined.unwrap_or_else(|e| Err(KvError::Server(format!("2PC task: {e}"))));
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Prewrites `keys` of one region batch; with `one_pc` (the batch holds every key of the
/// txn) asks the node to commit them at once. Returns the one-phase commit ts, 0 when the
/// keys were prewritten. A one-phase attempt whose answer is lost is `Undetermined`.
async fn prewrite_region(
    inner: Arc<Inner>,
    tp: Arc<TwoPhase>,
    bo: Arc<Backoff>,
    route: Route,
    keys: Vec<Vec<u8>>,
    one_pc: bool,
) -> Result<Sent<u64>> {
    loop {
        let req = tp.prewrite_request(&keys, one_pc);
        let sent = send(&inner.cache, &inner.conns, &bo, &route, req).await;
        let resp = match sent {
            Ok(Sent::Reroute) => return Ok(Sent::Reroute),
            Ok(Sent::Done(r)) => r,
            Err(e) if one_pc => {
                return Err(KvError::Undetermined {
                    start_ts: tp.start_ts,
                    reason: e.to_string(),
                });
            }
            Err(e) => return Err(e),
        };
        if let Some(e) = resp.errors.iter().find(|e| e.locked.is_none()) {
            return Err(KvError::from_key_error(tp.start_ts, e));
        }
        let locks: Vec<_> = resp.errors.into_iter().filter_map(|e| e.locked).collect();
        if locks.is_empty() {
            return Ok(Sent::Done(resp.one_pc_commit_ts));
        }
        if !lock_resolver::resolve(&inner, &bo, 0, &locks).await?.all {
            if !tp.waits_for_locks {
                return Err(KvError::KeyLocked {
                    start_ts: tp.start_ts,
                    key: locks[0].key.clone(),
                });
            }
            bo.wait(BackoffKind::TxnLock, "prewrite met a live txn's lock")
                .await?;
        }
    }
}

/// How a one-phase commit attempt ended.
enum OnePc {
    Committed(u64),
    /// Not sent (the keys span regions), or the node prewrote the keys instead.
    NotCommitted,
    /// The request went unanswered or was rerouted on the way: it may have committed.
    Unknown,
}

/// Tries to commit a txn whose keys lie in one region batch in one phase.
async fn try_one_pc(
    inner: &Arc<Inner>,
    tp: &Arc<TwoPhase>,
    bo: &Arc<Backoff>,
    keys: &[Vec<u8>],
) -> Result<OnePc> {
    let mut batches = inner.cache.group_keys(keys).await?;
    if batches.len() != 1 || keys.len() > MAX_KEYS_PER_BATCH {
        return Ok(OnePc::NotCommitted);
    }
    let (route, keys) = batches.remove(0);
    let sent = prewrite_region(inner.clone(), tp.clone(), bo.clone(), route, keys, true).await?;
    Ok(match sent {
        Sent::Done(0) => OnePc::NotCommitted,
        Sent::Done(commit_ts) => OnePc::Committed(commit_ts),
        Sent::Reroute => OnePc::Unknown,
    })
}

async fn commit_region(
    inner: Arc<Inner>,
    bo: Arc<Backoff>,
    start_ts: u64,
    commit_ts: u64,
    route: Route,
    keys: Vec<Vec<u8>>,
) -> Result<Sent<()>> {
    let req = CommitRequest {
        context: None,
        start_version: start_ts,
        keys,
        commit_version: commit_ts,
    };
    match send(&inner.cache, &inner.conns, &bo, &route, req).await? {
        Sent::Reroute => Ok(Sent::Reroute),
        Sent::Done(r) => match r.error {
            Some(e) => Err(KvError::from_key_error(start_ts, &e)),
            None => Ok(Sent::Done(())),
        },
    }
}

pub(crate) async fn commit(inner: &Arc<Inner>, tp: TwoPhase) -> Result<u64> {
    let tp = Arc::new(tp);
    let start_ts = tp.start_ts;
    let keys = tp.keys();
    let concurrency = inner.committer_concurrency.load(Ordering::Relaxed);
    let bo = Arc::new(Backoff::new("prewrite", PREWRITE_BUDGET_MS));
    let one_pc = if tp.one_pc {
        try_one_pc(inner, &tp, &bo, &keys).await
    } else {
        Ok(OnePc::NotCommitted)
    };
    // After a one-phase attempt that may have landed, the two phases still finish the txn
    // (prewriting or committing it again finds its own commit), but a failure cannot say
    // whether it committed.
    let maybe_committed = matches!(one_pc, Ok(OnePc::Unknown));
    let prewritten = match one_pc {
        Ok(OnePc::Committed(commit_ts)) => return Ok(commit_ts),
        Ok(_) => {
            let (inner, tp) = (inner.clone(), tp.clone());
            for_each_region(&inner.clone(), &keys, concurrency, move |route, keys| {
                let step =
                    prewrite_region(inner.clone(), tp.clone(), bo.clone(), route, keys, false);
                async move {
                    Ok(match step.await? {
                        Sent::Reroute => Sent::Reroute,
                        Sent::Done(_) => Sent::Done(()),
                    })
                }
            })
            .await
        }
        Err(e) => Err(e),
    };
    match prewritten {
        Err(e) if maybe_committed => {
            return Err(KvError::Undetermined {
                start_ts,
                reason: format!("a one-phase commit went unanswered; then {e}"),
            });
        }
        Err(e @ KvError::Undetermined { .. }) => return Err(e),
        Err(e) => {
            let inner = inner.clone();
            let rolled_back = async move {
                if let Err(e) = rollback(&inner, start_ts, keys).await {
                    tracing::warn!(start_ts, "rollback after a failed prewrite: {e}");
                }
            };
            // A txn rerun at once would otherwise meet its own locks.
            match tp.waits_for_locks {
                true => drop(tokio::spawn(rolled_back)),
                false => rolled_back.await,
            }
            return Err(e);
        }
        Ok(()) => {}
    }

    let bo = Backoff::new("commit", COMMIT_BUDGET_MS);
    let commit_ts = commit_primary(inner, &bo, &tp).await?;

    let secondaries: Vec<Vec<u8>> = keys.into_iter().filter(|k| *k != tp.primary).collect();
    if !secondaries.is_empty() {
        let bo = Arc::new(bo);
        let inner2 = inner.clone();
        let done = for_each_region(inner, &secondaries, concurrency, move |route, keys| {
            commit_region(inner2.clone(), bo.clone(), start_ts, commit_ts, route, keys)
        })
        .await;
        if let Err(e) = done {
            tracing::warn!(
                start_ts,
                commit_ts,
                "secondary commit left to lock resolution: {e}"
            );
        }
    }
    Ok(commit_ts)
}

/// Commits the primary key at a fresh commit ts (again with a later one if a reader pushed
/// the lock's min_commit_ts past it); returns the commit ts.
async fn commit_primary(inner: &Arc<Inner>, bo: &Backoff, tp: &TwoPhase) -> Result<u64> {
    let start_ts = tp.start_ts;
    loop {
        let commit_ts = inner.pd.get_ts().await?;
        let req = CommitRequest {
            context: None,
            start_version: start_ts,
            keys: vec![tp.primary.clone()],
            commit_version: commit_ts,
        };
        // Whatever fails from here on, the request may have landed: nobody here can say
        // whether the txn committed.
        let resp = send_on_key(&inner.cache, &inner.conns, bo, &tp.primary, req)
            .await
            .map_err(|e| KvError::Undetermined {
                start_ts,
                reason: e.to_string(),
            })?;
        match resp.error {
            None => return Ok(commit_ts),
            Some(e) if e.commit_ts_expired.is_some() => continue,
            Some(e) => return Err(KvError::from_key_error(start_ts, &e)),
        }
    }
}

/// Rolls back txn `start_ts` on `keys` (its prewrites or pessimistic locks).
pub(crate) async fn rollback(inner: &Arc<Inner>, start_ts: u64, keys: Vec<Vec<u8>>) -> Result<()> {
    let bo = Arc::new(Backoff::new("rollback", PREWRITE_BUDGET_MS));
    let inner2 = inner.clone();
    let concurrency = inner.committer_concurrency.load(Ordering::Relaxed);
    for_each_region(inner, &keys, concurrency, move |route, keys| {
        let (inner, bo) = (inner2.clone(), bo.clone());
        async move {
            let req = BatchRollbackRequest {
                context: None,
                start_version: start_ts,
                keys,
            };
            Ok(
                match send(&inner.cache, &inner.conns, &bo, &route, req).await? {
                    Sent::Reroute => Sent::Reroute,
                    Sent::Done(_) => Sent::Done(()),
                },
            )
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::kv::Op;

    #[test]
    fn lock_ttl_grows_with_size_up_to_twenty_seconds() {
        assert_eq!(lock_ttl_ms(100), 3000);
        assert_eq!(lock_ttl_ms(1 << 20), 9000);
        assert_eq!(lock_ttl_ms(100 << 20), 20_000);
    }

    #[test]
    fn a_region_batch_prewrites_only_its_keys_and_flags_locked_and_covered_ones() {
        let m = |k: &[u8]| Mutation {
            op: Op::Put as i32,
            key: k.to_vec(),
            value: b"v".to_vec(),
        };
        let tp = TwoPhase {
            start_ts: 10,
            primary: b"a".to_vec(),
            pessimistic_keys: [b"c".to_vec()].into(),
            covered_keys: [b"a".to_vec()].into(),
            for_update_ts: 12,
            mutations: vec![m(b"a"), m(b"b"), m(b"c")],
            bytes: 6,
            one_pc: false,
            waits_for_locks: true,
        };
        let req = tp.prewrite_request(&[b"c".to_vec(), b"a".to_vec()], false);
        let keys: Vec<&[u8]> = req.mutations.iter().map(|m| m.key.as_slice()).collect();
        assert_eq!(keys, [&b"a"[..], &b"c"[..]]);
        assert_eq!(req.is_pessimistic_lock, [false, true]);
        assert_eq!(req.is_covered, [true, false]);
        assert_eq!((req.primary_lock.as_slice(), req.txn_size), (&b"a"[..], 3));
    }
}
