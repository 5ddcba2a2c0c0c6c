//! Coprocessor fan-out: a DAG's key ranges are cut at region boundaries into one task per
//! region; up to `tidb_distsql_scan_concurrency` tasks run at once; results come back in key
//! order. A task whose region moved re-splits its ranges and goes on; a lock in its way is
//! resolved (reading around live txns whose min_commit_ts passed the read ts) and the task
//! retried.

use std::sync::Arc;

use proto::dag::{DagRequest, KeyRange};
use proto::kv::{Context, CoprocessorRequest};
use tokio::task::JoinSet;

use crate::Inner;
use crate::backoff::{Backoff, BackoffKind, READ_BUDGET_MS};
use crate::error::{KvError, Result};
use crate::lock_resolver;
use crate::region_cache::Route;
use crate::rpc::{Sent, send};

/// Cuts `ranges` (sorted, disjoint) at region boundaries: (route, its part of the ranges).
async fn split(inner: &Inner, ranges: &[KeyRange]) -> Result<Vec<(Route, Vec<KeyRange>)>> {
    let mut tasks: Vec<(Route, Vec<KeyRange>)> = Vec::new();
    for r in ranges {
        let mut start = r.start.clone();
        loop {
            let route = inner.cache.locate(&start).await?;
            let region_end = route.region.end_key.clone();
            let ends_here = region_end.is_empty() || (!r.end.is_empty() && r.end <= region_end);
            let end = if ends_here {
                r.end.clone()
            } else {
                region_end.clone()
            };
            let piece = KeyRange { start, end };
            match tasks.last_mut() {
                Some((last, pieces)) if last.region.id == route.region.id => pieces.push(piece),
                _ => tasks.push((route, vec![piece])),
            }
            if ends_here {
                break;
            }
            start = region_end;
        }
    }
    Ok(tasks)
}

/// Rows one coprocessor answer carried: `count` rows, one after another, each its datums in
/// value form.
#[derive(Debug, Clone)]
pub struct RowChunk {
    pub count: u64,
    pub data: Vec<u8>,
}

/// Runs one region's part; returns its rows (more than one chunk when the region moved).
async fn run_task(
    inner: Arc<Inner>,
    dag: Arc<DagRequest>,
    ts: u64,
    group_id: u64,
    route: Route,
    ranges: Vec<KeyRange>,
) -> Result<Vec<RowChunk>> {
    let bo = Backoff::new("coprocessor", READ_BUDGET_MS);
    let mut resolved = Vec::new();
    let mut work = vec![(route, ranges)];
    let mut chunks = Vec::new();
    // Last in, first out, so pieces are pushed back in reverse to keep key order.
    while let Some((route, ranges)) = work.pop() {
        let req = CoprocessorRequest {
            context: Some(Context {
                group_id,
                resolved_locks: resolved.clone(),
                ..Context::default()
            }),
            dag: Some((*dag).clone()),
            ranges: ranges.clone(),
            start_ts: ts,
        };
        let resp = match send(&inner.cache, &inner.conns, &bo, &route, req).await? {
            Sent::Done(r) => r,
            Sent::Reroute => {
                let mut again = split(&inner, &ranges).await?;
                again.reverse();
                work.extend(again);
                continue;
            }
        };
        if let Some(lock) = resp.locked {
            let r = lock_resolver::resolve(&inner, &bo, ts, &[lock]).await?;
            resolved.extend(r.pushed);
            if !r.all {
                bo.wait(BackoffKind::TxnLock, "coprocessor met a live txn's lock")
                    .await?;
            }
            work.push((route, ranges));
            continue;
        }
        if !resp.other_error.is_empty() {
            return Err(KvError::Coprocessor {
                code: resp.other_error_code as u16,
                message: resp.other_error,
            });
        }
        chunks.push(RowChunk {
            count: resp.row_count,
            data: resp.rows,
        });
    }
    Ok(chunks)
}

/// Runs `dag` over `ranges` at `ts`, region by region, `concurrency` at a time; returns the
/// rows in key order. A scan sees one ts, so `LATEST` becomes a ts from PD.
pub(crate) async fn fan_out(
    inner: &Arc<Inner>,
    dag: DagRequest,
    ranges: &[KeyRange],
    ts: u64,
    group_id: u64,
    concurrency: usize,
) -> Result<Vec<RowChunk>> {
    let ts = inner.pinned(ts).await?;
    inner.check_visible(ts)?;
    let dag = Arc::new(dag);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    let parts = split(inner, ranges).await?;
    let n = parts.len();
    for (i, (route, ranges)) in parts.into_iter().enumerate() {
        let (inner, dag, semaphore) = (inner.clone(), dag.clone(), semaphore.clone());
        tasks.spawn(async move {
            let _permit = semaphore.acquire_owned().await;
            (i, run_task(inner, dag, ts, group_id, route, ranges).await)
        });
    }
    let mut out = vec![Vec::new(); n];
    while let Some(joined) = tasks.join_next().await {
        let (i, rows) = joined.map_err(|e| KvError::Server(format!("coprocessor task: {e}")))?;
        out[i] = rows?;
    }
    Ok(out.into_iter().flatten().collect())
}
