//! Reads at one timestamp: get, batch get (grouped by region) and scan (region after region).
//! A lock in the way is resolved ([`crate::lock_resolver`]) and the read retried, within a
//! backoff budget of [`READ_BUDGET_MS`].
//!
//! A snapshot at [`LATEST`] (an autocommit point get) reads the newest committed version of
//! one key without a timestamp from PD. Resolving a lock needs a real reader ts, so a get
//! that meets a lock there retries at a ts from PD instead (TiDB does the same). Reads of
//! several keys take a ts from PD first: read one by one at LATEST, they could straddle a
//! commit.

use std::sync::Arc;

use base::ts::LATEST;

use proto::kv::{BatchGetRequest, Context, GetRequest, KeyError, LockInfo, ScanRequest};

use crate::Inner;
use crate::backoff::{Backoff, BackoffKind, READ_BUDGET_MS};
use crate::error::{KvError, Result};
use crate::lock_resolver;
use crate::region_cache::Route;
use crate::rpc::{Sent, send, send_on_key};

/// Most pairs one scan request asks a region for.
pub const SCAN_BATCH: u32 = 256;
/// Most keys one batch get sends (the kv node refuses more than 100,000).
pub const MAX_BATCH_GET_KEYS: usize = 10_000;

#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<Inner>,
    pub ts: u64,
    pub group_id: u64,
}

impl Snapshot {
    pub(crate) fn new(inner: Arc<Inner>, ts: u64, group_id: u64) -> Snapshot {
        Snapshot {
            inner,
            ts,
            group_id,
        }
    }

    fn context(&self, resolved: &[u64]) -> Option<Context> {
        Some(Context {
            group_id: self.group_id,
            resolved_locks: resolved.to_vec(),
            ..Context::default()
        })
    }

    /// After a read at `ts` met `error`: resolve its lock (and wait if its txn is alive), or
    /// fail. Returns the ts to retry at: `ts`, or one from PD when `ts` was [`LATEST`].
    async fn handle(
        &self,
        bo: &Backoff,
        resolved: &mut Vec<u64>,
        ts: u64,
        error: KeyError,
    ) -> Result<u64> {
        let Some(lock) = error.locked else {
            return Err(KvError::from_key_error(ts, &error));
        };
        if ts == LATEST {
            return Ok(self.inner.pd.get_ts().await?);
        }
        self.resolve(bo, resolved, ts, &[lock]).await?;
        Ok(ts)
    }

    async fn resolve(
        &self,
        bo: &Backoff,
        resolved: &mut Vec<u64>,
        ts: u64,
        locks: &[LockInfo],
    ) -> Result<()> {
        let r = lock_resolver::resolve(&self.inner, bo, ts, locks).await?;
        resolved.extend(r.pushed);
        if !r.all {
            bo.wait(
                BackoffKind::TxnLock,
                format!("{} locks of live txns", locks.len()),
            )
            .await?;
        }
        Ok(())
    }

    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.check_visible(self.ts)?;
        let bo = Backoff::new("get", READ_BUDGET_MS);
        let mut resolved = Vec::new();
        let mut ts = self.ts;
        loop {
            let req = GetRequest {
                context: self.context(&resolved),
                key: key.to_vec(),
                version: ts,
            };
            let r = send_on_key(&self.inner.cache, &self.inner.conns, &bo, key, req).await?;
            match r.error {
                None => return Ok((!r.not_found).then_some(r.value)),
                Some(e) => ts = self.handle(&bo, &mut resolved, ts, e).await?,
            }
        }
    }

    /// `keys` grouped by region, in batches of at most MAX_BATCH_GET_KEYS keys (the kv
    /// node's request bound).
    async fn region_batches(&self, keys: &[Vec<u8>]) -> Result<Vec<(Route, Vec<Vec<u8>>)>> {
        Ok(self
            .inner
            .cache
            .group_keys(keys)
            .await?
            .into_iter()
            .flat_map(|(route, keys)| {
                keys.chunks(MAX_BATCH_GET_KEYS)
                    .map(|c| (route.clone(), c.to_vec()))
                    .collect::<Vec<_>>()
            })
            .collect())
    }

    /// The pairs among `all_keys` that exist, in no particular order.
    pub async fn batch_get(&self, all_keys: &[Vec<u8>]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.check_visible(self.ts)?;
        let bo = Backoff::new("batch_get", READ_BUDGET_MS);
        let mut resolved = Vec::new();
        let mut ts = match all_keys.len() {
            0 | 1 => self.ts,
            _ => self.inner.pinned(self.ts).await?,
        };
        let mut out = Vec::new();
        let mut work = self.region_batches(all_keys).await?;
        while let Some((route, keys)) = work.pop() {
            let req = BatchGetRequest {
                context: self.context(&resolved),
                keys: keys.clone(),
                version: ts,
            };
            match send(&self.inner.cache, &self.inner.conns, &bo, &route, req).await? {
                Sent::Reroute => work.extend(self.inner.cache.group_keys(&keys).await?),
                Sent::Done(r) => match r.error {
                    None => out.extend(r.pairs.into_iter().map(|p| (p.key, p.value))),
                    Some(e) => {
                        let retry_ts = self.handle(&bo, &mut resolved, ts, e).await?;
                        if retry_ts != ts {
                            // Every key again at the new ts: batches read at LATEST may
                            // hold a newer version than the new ts sees.
                            ts = retry_ts;
                            out.clear();
                            work = self.region_batches(all_keys).await?;
                            continue;
                        }
                        work.push((route, keys));
                    }
                },
            }
        }
        Ok(out)
    }

    /// Up to `limit` pairs in `[start, end)` (`end` empty = to the last key), in key order.
    pub async fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.check_visible(self.ts)?;
        let bo = Backoff::new("scan", READ_BUDGET_MS);
        let mut resolved = Vec::new();
        let ts = self.inner.pinned(self.ts).await?;
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut from = start.to_vec();
        while out.len() < limit {
            let route = self.inner.cache.locate(&from).await?;
            let region_end = route.region.end_key.clone();
            let batch = SCAN_BATCH.min((limit - out.len()).min(u32::MAX as usize) as u32);
            let req = ScanRequest {
                context: self.context(&resolved),
                start_key: from.clone(),
                end_key: end.to_vec(),
                limit: batch,
                version: ts,
                key_only: false,
            };
            let r = match send(&self.inner.cache, &self.inner.conns, &bo, &route, req).await? {
                Sent::Reroute => continue,
                Sent::Done(r) => r,
            };
            if let Some(e) = r.error {
                self.handle(&bo, &mut resolved, ts, e).await?;
                continue;
            }
            let got = r.pairs.len();
            out.extend(r.pairs.into_iter().map(|p| (p.key, p.value)));
            if got == batch as usize {
                // More may follow in this region: continue after the last key.
                let mut next = out.last().expect("a full batch").0.clone();
                next.push(0);
                from = next;
                continue;
            }
            // This region is done; go on to the next one unless the range ends here.
            if region_end.is_empty() || (!end.is_empty() && region_end.as_slice() >= end) {
                break;
            }
            from = region_end;
        }
        Ok(out)
    }
}
