//! A transaction: reads at `start_ts` through its own writes (or, READ COMMITTED, at a
//! fresh ts per statement: [`Transaction::read_latest_committed`]), writes buffered until
//! commit.
//! Optimistic by default (conflicts surface at prewrite as `WriteConflict`); pessimistic
//! transactions lock keys as they go (`lock_keys`), each lock at the txn's `for_update_ts`,
//! renewed from PD only when a newer commit makes the lock fail (TiDB's point-get-for-update
//! rule: the lock itself sees any newer commit, so no statement needs a ts of its own).
//! The first key locked is the primary, locked alone before any other, and stays the
//! primary through commit; from then on a heartbeat task keeps the primary's TTL ahead of
//! the txn's age until the txn ends. Dropping an uncommitted transaction leaves nothing
//! behind but its pessimistic locks, which expire with their TTL.
//!
//! A read-only autocommit statement may start at [`LATEST`] ([`crate::Client::begin_latest`])
//! and ask PD for no timestamp: a point get reads the newest committed version of its key
//! (reads of several keys take a ts from PD, see [`crate::snapshot`]). Anything else it does
//! must first call [`Transaction::take_ts_from_pd`]; writes at `LATEST` fail.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base::ts::LATEST;
use proto::kv::{Mutation, Op, PessimisticLockRequest};

use crate::Inner;
use crate::backoff::{Backoff, BackoffKind, LOCK_WAIT_BUDGET_MS};
use crate::committer::{self, TwoPhase};
use crate::error::{KvError, Result};
use crate::lock_resolver;
use crate::rpc::{Sent, send};
use crate::snapshot::Snapshot;

/// TTL of a pessimistic lock (TiDB's ManagedLockTTL).
pub const PESSIMISTIC_LOCK_TTL_MS: u64 = 20_000;
/// How often a pessimistic lock is retried at a newer `for_update_ts` after a conflict.
pub const MAX_FOR_UPDATE_RETRIES: u32 = 256;
/// How often a pessimistic txn's primary lock is kept alive (TiDB's 10 s).
pub const HEARTBEAT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Buffered {
    Put(Vec<u8>),
    Delete,
    /// Locked for update, unchanged.
    Lock,
}

/// A transaction's buffered writes at one moment ([`Transaction::savepoint`]).
pub struct Savepoint {
    buffer: BTreeMap<Vec<u8>, Buffered>,
    covered: BTreeSet<Vec<u8>>,
}

pub struct Transaction {
    inner: Arc<Inner>,
    /// The txn's identity: its locks, its primary and its commit carry it.
    start_ts: u64,
    /// What plain reads see: the snapshot at `start_ts`, or at a later ts once
    /// [`Transaction::read_latest_committed`] moved it (READ COMMITTED).
    snapshot: Snapshot,
    buffer: BTreeMap<Vec<u8>, Buffered>,
    /// Buffered keys that take no pessimistic lock of their own because another lock of the
    /// txn covers them ([`Transaction::put_covered`]).
    covered: BTreeSet<Vec<u8>>,
    pessimistic: bool,
    for_update_ts: u64,
    /// Keys whose pessimistic locks this txn holds.
    locked: Vec<Vec<u8>>,
    locked_set: BTreeSet<Vec<u8>>,
    /// The latest committed values (`None`: none) of locked keys, read with their locks or
    /// under them: nobody else can commit such a key while the lock is held, so a later
    /// current read of it needs no request (TiDB keeps the values its locks return the same
    /// way).
    locked_values: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Values read ahead from the snapshot (`None`: none) by [`Transaction::prefetch`], which
    /// `get` answers from (TiDB's snapshot cache).
    prefetched: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// The pessimistic txn's primary, once its first lock is taken.
    primary: Option<Vec<u8>>,
    /// Commit in one phase when the keys allow (`tidb_enable_1pc`).
    one_pc: bool,
    /// The caller runs the txn again as a pessimistic one when another txn's write gets in
    /// its way ([`Transaction::set_rerun_on_clash`]).
    rerun_on_clash: bool,
    /// Keys presumed to have no value ([`Transaction::prefetch_inserted`]): their puts
    /// prewrite as inserts, which check.
    presumed_absent: BTreeSet<Vec<u8>>,
    /// How long a pessimistic lock waits for another txn's (`innodb_lock_wait_timeout`).
    lock_wait_ms: u64,
    /// Dropping it stops the heartbeat task.
    _heartbeat: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Transaction {
    pub(crate) fn new(inner: Arc<Inner>, start_ts: u64, pessimistic: bool) -> Transaction {
        // The read pool groups a query's reads by this id; LATEST statements each get their
        // own, from a counter far below any ts PD hands out.
        static NEXT_LATEST_GROUP: AtomicU64 = AtomicU64::new(1);
        let group_id = match start_ts {
            LATEST => NEXT_LATEST_GROUP.fetch_add(1, Ordering::Relaxed),
            ts => ts,
        };
        Transaction {
            snapshot: Snapshot::new(inner.clone(), start_ts, group_id),
            inner,
            start_ts,
            buffer: BTreeMap::new(),
            covered: BTreeSet::new(),
            pessimistic,
            for_update_ts: start_ts,
            locked: Vec::new(),
            locked_set: BTreeSet::new(),
            locked_values: BTreeMap::new(),
            prefetched: BTreeMap::new(),
            primary: None,
            one_pc: true,
            rerun_on_clash: false,
            presumed_absent: BTreeSet::new(),
            lock_wait_ms: LOCK_WAIT_BUDGET_MS,
            _heartbeat: None,
        }
    }

    /// How long each pessimistic lock may wait for another txn's (`innodb_lock_wait_timeout`;
    /// then 1205).
    pub fn set_lock_wait_timeout(&mut self, wait: std::time::Duration) {
        self.lock_wait_ms = wait.as_millis() as u64;
    }

    /// Whether commit may take one phase when all keys lie in one region (TiDB's
    /// `tidb_enable_1pc`, on by default).
    pub fn set_one_pc(&mut self, enabled: bool) {
        self.one_pc = enabled;
    }

    /// Says that the caller runs this optimistic txn again, as a pessimistic one, when its
    /// commit fails with a write clash ([`KvError::is_write_clash`]): its commit then waits
    /// for no other txn's live lock (the pessimistic run's lock wait has a deadline and
    /// deadlock detection), and the keys it inserts are presumed absent
    /// ([`Transaction::prefetch_inserted`]).
    pub fn set_rerun_on_clash(&mut self) {
        self.rerun_on_clash = true;
    }

    pub fn start_ts(&self) -> u64 {
        self.start_ts
    }

    /// The ts plain reads see (the start ts unless [`Transaction::read_latest_committed`]).
    pub fn read_ts(&self) -> u64 {
        self.snapshot.ts
    }

    /// From now on plain reads see what committed before a fresh ts from PD, under this
    /// txn's own writes: READ COMMITTED as TiDB runs it, where each statement of a
    /// pessimistic txn reads the latest committed data. The txn keeps its start ts, its
    /// locks and its buffered writes; values read ahead are dropped. The ts is also the
    /// for-update ts (as TiDB's statement ts): locks see what it read, and a one-phase
    /// commit, which commits above the for-update ts, lands after everything it read.
    pub async fn read_latest_committed(&mut self) -> Result<()> {
        let ts = self.inner.pd.get_ts().await?;
        self.snapshot.ts = ts;
        self.for_update_ts = self.for_update_ts.max(ts);
        self.prefetched.clear();
        Ok(())
    }

    /// Turns a txn at [`LATEST`] into one at a fresh ts from PD, which it returns (nothing
    /// read so far may be kept); any other txn stays as it is.
    pub async fn take_ts_from_pd(&mut self) -> Result<Option<u64>> {
        if self.start_ts != LATEST {
            return Ok(None);
        }
        let ts = self.inner.pd.get_ts().await?;
        self.start_ts = ts;
        self.snapshot.ts = ts;
        self.for_update_ts = ts;
        self.prefetched.clear();
        Ok(Some(ts))
    }

    pub fn is_pessimistic(&self) -> bool {
        self.pessimistic
    }

    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.buffer.get(key) {
            Some(Buffered::Put(v)) => Ok(Some(v.clone())),
            Some(Buffered::Delete) => Ok(None),
            Some(Buffered::Lock) | None => match self.prefetched.get(key) {
                Some(v) => Ok(v.clone()),
                None => self.snapshot.get(key).await,
            },
        }
    }

    /// Reads `keys` from the snapshot in one batch request per region and keeps their values,
    /// so that `get` answers them without a request: for a statement about to check many
    /// keys one by one (a multi-row INSERT's duplicate checks).
    pub async fn prefetch(&mut self, keys: &[Vec<u8>]) -> Result<()> {
        let remote: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| !self.buffer.contains_key(*k) && !self.prefetched.contains_key(*k))
            .cloned()
            .collect();
        if remote.is_empty() {
            return Ok(());
        }
        let found: BTreeMap<Vec<u8>, Vec<u8>> = self
            .snapshot
            .batch_get(&remote)
            .await?
            .into_iter()
            .collect();
        for k in remote {
            let v = found.get(&k).cloned();
            self.prefetched.insert(k, v);
        }
        Ok(())
    }

    /// [`Transaction::prefetch`] for the keys of rows a statement inserts, which fails if one
    /// of them exists. A txn rerun on a clash presumes them absent instead and reads nothing
    /// (TiDB's lazy uniqueness check): their prewrite checks, and a key found there fails
    /// the commit with [`KvError::AlreadyExist`], a clash.
    pub async fn prefetch_inserted(&mut self, keys: &[Vec<u8>]) -> Result<()> {
        if !self.rerun_on_clash {
            return self.prefetch(keys).await;
        }
        for k in keys {
            if !self.buffer.contains_key(k) && !self.prefetched.contains_key(k) {
                self.prefetched.insert(k.clone(), None);
                self.presumed_absent.insert(k.clone());
            }
        }
        Ok(())
    }

    /// The values of `keys` that exist, through this txn's own writes.
    pub async fn batch_get(&self, keys: &[Vec<u8>]) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
        self.batch_get_from(&self.snapshot, keys).await
    }

    /// The values of `keys` that exist in `snapshot`, through this txn's own writes.
    async fn batch_get_from(
        &self,
        snapshot: &Snapshot,
        keys: &[Vec<u8>],
    ) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
        let mut out = BTreeMap::new();
        let mut remote = Vec::new();
        for k in keys {
            match self.buffer.get(k) {
                Some(Buffered::Put(v)) => {
                    out.insert(k.clone(), v.clone());
                }
                Some(Buffered::Delete) => {}
                Some(Buffered::Lock) | None => remote.push(k.clone()),
            }
        }
        if !remote.is_empty() {
            out.extend(snapshot.batch_get(&remote).await?);
        }
        Ok(out)
    }

    /// Up to `limit` pairs in `[start, end)` in key order, through this txn's own writes.
    pub async fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.scan_at(&self.snapshot, start, end, limit).await
    }

    /// As [`Transaction::scan`], but of the latest committed data (a fresh timestamp) under
    /// this txn's writes: a pessimistic statement's "current read" of the rows it will lock.
    pub async fn scan_latest(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let ts = self.inner.pd.get_ts().await?;
        let latest = Snapshot::new(self.inner.clone(), ts, self.start_ts());
        self.scan_at(&latest, start, end, limit).await
    }

    async fn scan_at(
        &self,
        snapshot: &Snapshot,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let deleted = self
            .buffer
            .range(start.to_vec()..)
            .take_while(|(k, _)| end.is_empty() || k.as_slice() < end)
            .filter(|(_, b)| matches!(b, Buffered::Delete))
            .count();
        let stored = snapshot
            .scan(start, end, limit.saturating_add(deleted))
            .await?;
        let mut merged: BTreeMap<Vec<u8>, Vec<u8>> = stored.into_iter().collect();
        for (k, b) in self
            .buffer
            .range(start.to_vec()..)
            .take_while(|(k, _)| end.is_empty() || k.as_slice() < end)
        {
            match b {
                Buffered::Put(v) => {
                    merged.insert(k.clone(), v.clone());
                }
                Buffered::Delete => {
                    merged.remove(k);
                }
                Buffered::Lock => {}
            }
        }
        Ok(merged.into_iter().take(limit).collect())
    }

    /// The buffered writes as they are now, to go back to if a statement fails (its locks
    /// stay: MySQL keeps a failed statement's locks until the txn ends too).
    pub fn savepoint(&self) -> Savepoint {
        Savepoint {
            buffer: self.buffer.clone(),
            covered: self.covered.clone(),
        }
    }

    /// Forgets every write made since `savepoint`.
    pub fn rollback_to(&mut self, savepoint: Savepoint) {
        self.buffer = savepoint.buffer;
        self.covered = savepoint.covered;
    }

    /// Whether this txn has buffered writes in `[start, end)`: reads there must merge them
    /// (a pushed-down read on the kv nodes would not see them).
    pub fn has_writes_in(&self, start: &[u8], end: &[u8]) -> bool {
        self.buffer
            .range(start.to_vec()..)
            .take_while(|(k, _)| end.is_empty() || k.as_slice() < end)
            .any(|(_, b)| !matches!(b, Buffered::Lock))
    }

    /// The snapshot this txn's plain reads see (at [`Transaction::read_ts`]).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.covered.remove(&key);
        self.write(key, Buffered::Put(value));
    }

    pub fn delete(&mut self, key: Vec<u8>) {
        self.covered.remove(&key);
        self.write(key, Buffered::Delete);
    }

    /// Buffers a write of `key`. Its locked value is forgotten: reads see the write now, and
    /// one after a [`Transaction::rollback_to`] reads the key again under its lock, so a txn
    /// that rewrites many rows holds each one once, not twice.
    fn write(&mut self, key: Vec<u8>, b: Buffered) {
        self.locked_values.remove(&key);
        self.buffer.insert(key, b);
    }

    /// Writes `key` that no other txn can write without first locking a key this txn has
    /// locked (TiDB's non-unique index entries: the row's handle is part of the key, and
    /// every writer of the row locks the row). A pessimistic txn takes no lock on it, and
    /// its prewrite skips the conflict check.
    pub fn put_covered(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.covered.insert(key.clone());
        self.write(key, Buffered::Put(value));
    }

    /// Deletes `key` under the terms of [`Transaction::put_covered`].
    pub fn delete_covered(&mut self, key: Vec<u8>) {
        self.covered.insert(key.clone());
        self.write(key, Buffered::Delete);
    }

    /// Locks `keys` for update (SELECT ... FOR UPDATE). Pessimistic txns take the locks now,
    /// at the current `for_update_ts`, waiting (with backoff) while another txn holds one; a
    /// commit newer than `for_update_ts` makes the lock retry at a fresh one from PD (where
    /// TiDB retries the statement), up to [`MAX_FOR_UPDATE_RETRIES`] times. Whoever reads a locked
    /// key at `for_update_ts` reads its latest value: nothing newer was committed (the lock
    /// checked) and nobody can commit it now. Optimistic txns check at commit.
    pub async fn lock_keys(&mut self, keys: &[Vec<u8>]) -> Result<()> {
        refuse_writes_at(self.start_ts())?;
        if !self.pessimistic {
            for k in keys {
                self.buffer.entry(k.clone()).or_insert(Buffered::Lock);
            }
            return Ok(());
        }
        self.lock_pessimistic(keys, false).await
    }

    /// Takes the pessimistic locks of `keys` this txn does not hold yet (see
    /// [`Transaction::lock_keys`]). With `return_values`, the lock requests also read the
    /// keys' latest committed values into `locked_values`.
    async fn lock_pessimistic(&mut self, keys: &[Vec<u8>], return_values: bool) -> Result<()> {
        let bo = Backoff::new("pessimistic_lock", self.lock_wait_ms);
        let mut retries = 0;
        loop {
            if retries > 0 {
                self.for_update_ts = self.inner.pd.get_ts().await?;
            }
            let new: Vec<Vec<u8>> = keys
                .iter()
                .filter(|k| !self.locked_set.contains(*k))
                .cloned()
                .collect();
            if new.is_empty() {
                return Ok(());
            }
            let locked = match self.primary.clone() {
                Some(primary) => {
                    self.lock_at_for_update_ts(&bo, new, &primary, return_values)
                        .await
                }
                None => {
                    // The primary first, alone: every later lock names it.
                    let primary = new[0].clone();
                    let first = vec![primary.clone()];
                    match self
                        .lock_at_for_update_ts(&bo, first, &primary, return_values)
                        .await
                    {
                        Ok(()) => {
                            self.primary = Some(primary.clone());
                            self._heartbeat = Some(self.start_heartbeat(primary.clone()));
                            let rest = new[1..].to_vec();
                            if rest.is_empty() {
                                Ok(())
                            } else {
                                self.lock_at_for_update_ts(&bo, rest, &primary, return_values)
                                    .await
                            }
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            match locked {
                Err(KvError::WriteConflict { .. }) if retries < MAX_FOR_UPDATE_RETRIES => {
                    retries += 1
                }
                other => return other,
            }
        }
    }

    /// Takes pessimistic locks on `keys` at the current `for_update_ts`; keys locked before
    /// a failure stay recorded, so rollback releases them. With `return_values`, their values
    /// go into `locked_values`.
    async fn lock_at_for_update_ts(
        &mut self,
        bo: &Backoff,
        keys: Vec<Vec<u8>>,
        primary: &[u8],
        return_values: bool,
    ) -> Result<()> {
        let mut work = self.inner.cache.group_keys(&keys).await?;
        while let Some((route, keys)) = work.pop() {
            let req = PessimisticLockRequest {
                context: None,
                mutations: keys
                    .iter()
                    .map(|k| Mutation {
                        op: Op::Lock as i32,
                        key: k.clone(),
                        value: Vec::new(),
                    })
                    .collect(),
                primary_lock: primary.to_vec(),
                start_version: self.start_ts(),
                lock_ttl: PESSIMISTIC_LOCK_TTL_MS + base::ts::age_ms(self.start_ts()),
                for_update_ts: self.for_update_ts,
                return_values,
                wait_timeout_ms: bo.remaining_ms(),
            };
            let (sent_at, remaining_at_send) = (std::time::Instant::now(), bo.remaining_ms());
            let resp = match send(&self.inner.cache, &self.inner.conns, bo, &route, req).await? {
                Sent::Reroute => {
                    work.extend(self.inner.cache.group_keys(&keys).await?);
                    continue;
                }
                Sent::Done(r) => r,
            };
            if let Some(e) = resp.errors.iter().find(|e| e.locked.is_none()) {
                return Err(KvError::from_key_error(self.start_ts(), e));
            }
            let locks: Vec<_> = resp.errors.into_iter().filter_map(|e| e.locked).collect();
            if locks.is_empty() {
                // Recorded first: whatever fails next, rollback releases these locks.
                for k in &keys {
                    if self.locked_set.insert(k.clone()) {
                        self.locked.push(k.clone());
                    }
                }
                if return_values {
                    check_values_answer(&resp.values, &resp.not_founds, keys.len())?;
                    for ((k, v), absent) in keys.into_iter().zip(resp.values).zip(resp.not_founds) {
                        self.locked_values.insert(k, (!absent).then_some(v));
                    }
                }
                continue;
            }
            if !lock_resolver::resolve(&self.inner, bo, 0, &locks)
                .await?
                .all
            {
                // The kv node's wait, not the backoff the sending already counted.
                let slept_ms = remaining_at_send - bo.remaining_ms();
                let waited_ms = (sent_at.elapsed().as_millis() as u64).saturating_sub(slept_ms);
                bo.wait_after(BackoffKind::LockWait, waited_ms, "key locked by a live txn")
                    .await?;
            }
            work.push((route, keys));
        }
        Ok(())
    }

    /// Pessimistic txns: takes the locks of every key written and not locked yet (unique
    /// index entries, rows written without a read for update; not the keys written with
    /// [`Transaction::put_covered`]), so commit meets no conflict that the statement did not
    /// already see. A no-op for optimistic txns.
    pub async fn lock_written(&mut self) -> Result<()> {
        if !self.pessimistic {
            return Ok(());
        }
        let keys: Vec<Vec<u8>> = self
            .buffer
            .iter()
            .filter(|(k, b)| {
                !matches!(b, Buffered::Lock)
                    && !self.locked_set.contains(*k)
                    && !self.covered.contains(*k)
            })
            .map(|(k, _)| k.clone())
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        self.lock_keys(&keys).await
    }

    /// Locks `key` and reads its latest committed value (a "current read", as SELECT ... FOR
    /// UPDATE does), through this txn's own writes. Optimistic txns read their snapshot.
    pub async fn get_for_update(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let key = key.to_vec();
        Ok(self
            .batch_get_for_update(std::slice::from_ref(&key))
            .await?
            .remove(&key))
    }

    /// [`Transaction::get_for_update`] of many keys: one lock request per region that also
    /// reads the values (TiKV's `return_values`); keys this txn locked before answer from
    /// the values their locks returned, else are read at the current `for_update_ts`.
    pub async fn batch_get_for_update(
        &mut self,
        keys: &[Vec<u8>],
    ) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
        if !self.pessimistic {
            self.lock_keys(keys).await?;
            return self.batch_get(keys).await;
        }
        refuse_writes_at(self.start_ts())?;
        self.lock_pessimistic(keys, true).await?;
        // Every key is locked now: it answers from the txn's own write, else from the value
        // its lock returned, else (locked without one) from a read under the lock.
        let mut out = BTreeMap::new();
        let mut unknown = Vec::new();
        for k in keys {
            let value = match self.buffer.get(k) {
                Some(Buffered::Put(v)) => Some(v),
                Some(Buffered::Delete) => None,
                Some(Buffered::Lock) | None => match self.locked_values.get(k) {
                    Some(v) => v.as_ref(),
                    None => {
                        unknown.push(k.clone());
                        None
                    }
                },
            };
            if let Some(v) = value {
                out.insert(k.clone(), v.clone());
            }
        }
        if !unknown.is_empty() {
            let latest = Snapshot::new(self.inner.clone(), self.for_update_ts, self.start_ts());
            let found: BTreeMap<Vec<u8>, Vec<u8>> =
                latest.batch_get(&unknown).await?.into_iter().collect();
            for k in unknown {
                let v = found.get(&k).cloned();
                if let Some(v) = &v {
                    out.insert(k.clone(), v.clone());
                }
                self.locked_values.insert(k, v);
            }
        }
        Ok(out)
    }

    /// Commits with two-phase commit; returns the commit timestamp (the start ts for a txn
    /// that wrote nothing).
    pub async fn commit(mut self) -> Result<u64> {
        let start_ts = self.start_ts();
        self.inner.check_visible(start_ts)?;
        // Pessimistic locks not written to become Lock mutations, so prewrite replaces them.
        for k in &self.locked {
            self.buffer.entry(k.clone()).or_insert(Buffered::Lock);
        }
        let mutations: Vec<Mutation> = self
            .buffer
            .into_iter()
            .map(|(key, b)| {
                let (op, value) = match b {
                    Buffered::Put(v) if self.presumed_absent.contains(&key) => (Op::Insert, v),
                    Buffered::Put(v) => (Op::Put, v),
                    Buffered::Delete => (Op::Del, Vec::new()),
                    Buffered::Lock => (Op::Lock, Vec::new()),
                };
                Mutation {
                    op: op as i32,
                    key,
                    value,
                }
            })
            .collect();
        if mutations.is_empty() {
            return Ok(start_ts);
        }
        refuse_writes_at(start_ts)?;
        let primary = self
            .primary
            .clone()
            .unwrap_or_else(|| mutations[0].key.clone());
        committer::commit(
            &self.inner,
            TwoPhase {
                start_ts,
                primary,
                pessimistic_keys: self.locked_set,
                covered_keys: if self.pessimistic {
                    self.covered
                } else {
                    BTreeSet::new()
                },
                bytes: mutations.iter().map(|m| m.key.len() + m.value.len()).sum(),
                for_update_ts: if self.pessimistic {
                    self.for_update_ts
                } else {
                    0
                },
                mutations,
                one_pc: self.one_pc,
                waits_for_locks: !self.rerun_on_clash,
            },
        )
        .await
    }

    /// Keeps the primary lock's TTL ahead of the txn's age every [`HEARTBEAT_INTERVAL`] until
    /// the returned sender is dropped (the txn ends).
    fn start_heartbeat(&self, primary: Vec<u8>) -> tokio::sync::oneshot::Sender<()> {
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let (inner, start_ts) = (self.inner.clone(), self.start_ts());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut stopped => return,
                    () = tokio::time::sleep(HEARTBEAT_INTERVAL) => {}
                }
                let bo = Backoff::new("txn_heart_beat", crate::backoff::READ_BUDGET_MS);
                let req = proto::kv::TxnHeartBeatRequest {
                    context: None,
                    primary_lock: primary.clone(),
                    start_version: start_ts,
                    advise_lock_ttl: PESSIMISTIC_LOCK_TTL_MS + base::ts::age_ms(start_ts),
                };
                if let Err(e) =
                    crate::rpc::send_on_key(&inner.cache, &inner.conns, &bo, &primary, req).await
                {
                    tracing::warn!(start_ts, "txn heartbeat failed: {e}");
                }
            }
        });
        stop
    }

    /// Gives up the txn, releasing any pessimistic locks it took.
    pub async fn rollback(self) -> Result<()> {
        if self.locked.is_empty() {
            return Ok(());
        }
        committer::rollback(&self.inner, self.start_ts(), self.locked).await
    }
}

/// A lock answer asked for values must carry one per key (and a found flag for each).
fn check_values_answer(values: &[Vec<u8>], not_founds: &[bool], keys: usize) -> Result<()> {
    if values.len() == keys && not_founds.len() == keys {
        return Ok(());
    }
    Err(KvError::Invalid(format!(
        "a pessimistic lock answer carries {} values and {} found flags for {keys} keys",
        values.len(),
        not_founds.len()
    )))
}

/// A txn at [`LATEST`] has no start ts to write at.
fn refuse_writes_at(start_ts: u64) -> Result<()> {
    match start_ts {
        LATEST => Err(KvError::Invalid(
            "a transaction reading at LATEST cannot write: take a ts from PD first".into(),
        )),
        _ => Ok(()),
    }
}
