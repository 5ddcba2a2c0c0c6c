//! `kv-client`: the SQL side's only door to the kv nodes (DESIGN.md §2-3).
//!
//! - [`region_cache`]: which region holds a key and where its leader listens (from PD).
//! - [`rpc`]: sending a request to a region (over one [`batch`] stream per kv node), handling
//!   region errors; [`backoff`]: how long to wait between tries, with one budget per
//!   operation.
//! - [`lock_resolver`]: what to do with another txn's lock in the way.
//! - [`snapshot`]: reads at one timestamp (get, batch get, scan across regions).
//! - [`coprocessor`]: pushed-down DAGs fanned out one task per region, up to
//!   `tidb_distsql_scan_concurrency` at once.
//! - [`transaction`]: a buffered transaction, optimistic or pessimistic, and its two-phase
//!   commit ([`committer`]): prewrite every region batch in parallel (up to
//!   `tidb_committer_concurrency`), commit the primary, then the secondaries.
//!
//! The API is async (tokio). A [`Client`] is cheap to clone and shared by all sessions.

pub mod backoff;
pub mod batch;
pub mod committer;
pub mod coprocessor;
pub mod error;
pub mod lock_resolver;
pub mod region_cache;
pub mod rpc;
pub mod snapshot;
pub mod transaction;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pd_client::PdClient;

pub use coprocessor::RowChunk;
pub use error::{KvError, Result};
pub use snapshot::Snapshot;
pub use transaction::Transaction;

/// What a client is built with (the SQL node fills it from its config and sysvars).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub pd_endpoints: Vec<String>,
    /// `tikv-client.grpc-compression-type`: `none` or `gzip`.
    pub grpc_compression: String,
    /// `tidb_committer_concurrency`.
    pub committer_concurrency: usize,
    /// `tidb_tso_client_batch_max_wait_time`.
    pub tso_max_wait: std::time::Duration,
}

impl ClientConfig {
    /// TiDB's defaults.
    pub fn new(pd_endpoints: Vec<String>) -> ClientConfig {
        ClientConfig {
            pd_endpoints,
            grpc_compression: "none".into(),
            committer_concurrency: 128,
            tso_max_wait: std::time::Duration::ZERO,
        }
    }
}

pub(crate) struct Inner {
    pub pd: PdClient,
    pub cache: region_cache::RegionCache,
    pub conns: rpc::Connections,
    pub committer_concurrency: AtomicUsize,
    /// The cluster's GC safe point as this client last read it from PD.
    pub gc_safe_point: std::sync::atomic::AtomicU64,
}

impl Inner {
    /// Reads and commits at `ts` fail once the GC safe point has passed it (TiDB's 9006),
    /// rather than read versions GC may have removed.
    /// `ts`, or a fresh ts from PD when it is [`base::ts::LATEST`]: a read of more than one
    /// key must see one moment.
    pub(crate) async fn pinned(&self, ts: u64) -> Result<u64> {
        match ts {
            base::ts::LATEST => Ok(self.pd.get_ts().await?),
            ts => Ok(ts),
        }
    }

    pub(crate) fn check_visible(&self, ts: u64) -> Result<()> {
        let safe_point = self.gc_safe_point.load(Ordering::Relaxed);
        if ts < safe_point {
            return Err(KvError::GcTooEarly {
                start_ts: ts,
                safe_point,
            });
        }
        Ok(())
    }
}

/// How long a split may back off on region errors before it gives up, in ms.
const SPLIT_BUDGET_MS: u64 = 20_000;
/// How long a split waits for PD to learn of the regions it made (their leaders report them
/// within a fraction of a second), so what follows it (`SHOW TABLE ... REGIONS`, another
/// client's lookup) sees them.
const SPLIT_REPORT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits (at most [`SPLIT_REPORT_WAIT`]) until PD has a region starting at each of `starts`.
async fn wait_until_pd_knows(pd: &PdClient, starts: Vec<Vec<u8>>) {
    let deadline = std::time::Instant::now() + SPLIT_REPORT_WAIT;
    for start in starts {
        while std::time::Instant::now() < deadline {
            match pd.get_region(&start).await {
                Ok(info) if info.region.start_key == start => break,
                _ => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    }
}

#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    pub async fn connect(config: ClientConfig) -> Result<Client> {
        let pd = PdClient::connect(&config.pd_endpoints).await?;
        pd.set_tso_max_wait(config.tso_max_wait);
        Ok(Client {
            inner: Arc::new(Inner {
                cache: region_cache::RegionCache::new(pd.clone()),
                pd,
                conns: rpc::Connections::new(&config.grpc_compression)?,
                committer_concurrency: AtomicUsize::new(config.committer_concurrency.max(1)),
                gc_safe_point: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    pub fn pd(&self) -> &PdClient {
        &self.inner.pd
    }

    pub async fn current_ts(&self) -> Result<u64> {
        Ok(self.inner.pd.get_ts().await?)
    }

    /// Reads at `ts`; `group_id` ties the reads of one query together on the kv nodes.
    pub fn snapshot(&self, ts: u64, group_id: u64) -> Snapshot {
        Snapshot::new(self.inner.clone(), ts, group_id)
    }

    /// An optimistic transaction: conflicts are found at commit.
    pub async fn begin(&self) -> Result<Transaction> {
        let start_ts = self.current_ts().await?;
        Ok(Transaction::new(self.inner.clone(), start_ts, false))
    }

    /// A read-only transaction whose point gets read the newest committed versions, without
    /// a timestamp from PD (TiDB's autocommit point get at `math.MaxUint64`); see
    /// [`Transaction::take_ts_from_pd`] for anything else.
    pub fn begin_latest(&self) -> Transaction {
        Transaction::new(self.inner.clone(), base::ts::LATEST, false)
    }

    /// A pessimistic transaction: `lock_keys` takes locks as it goes.
    pub async fn begin_pessimistic(&self) -> Result<Transaction> {
        let start_ts = self.current_ts().await?;
        Ok(Transaction::new(self.inner.clone(), start_ts, true))
    }

    /// Runs a pushed-down `dag` over `ranges` at `ts` (one task per region, `concurrency` at
    /// once: `tidb_distsql_scan_concurrency`); returns the result rows in key order.
    pub async fn coprocessor(
        &self,
        dag: proto::dag::DagRequest,
        ranges: &[proto::dag::KeyRange],
        ts: u64,
        group_id: u64,
        concurrency: usize,
    ) -> Result<Vec<RowChunk>> {
        coprocessor::fan_out(&self.inner, dag, ranges, ts, group_id, concurrency).await
    }

    /// GC's Resolve Locks step: every lock at or below `safe_point`, cluster-wide, is
    /// committed or rolled back as its txn's primary says; the oldest lock of a txn still
    /// alive is reported, and GC must stay below it.
    pub async fn resolve_locks_below(
        &self,
        safe_point: u64,
    ) -> Result<lock_resolver::ResolvedBelow> {
        lock_resolver::resolve_below(&self.inner, safe_point).await
    }

    /// Reads PD's GC safe point, which reads and commits check their ts against; returns it.
    /// The SQL node calls this every GC tick (the safe point moves at most that often).
    pub async fn refresh_gc_safe_point(&self) -> Result<u64> {
        let safe_point = self.inner.pd.get_gc_safe_point().await?;
        self.inner
            .gc_safe_point
            .fetch_max(safe_point, Ordering::Relaxed);
        Ok(safe_point)
    }

    /// Splits the regions holding `keys` so that each key starts a region (TiDB's `SPLIT
    /// TABLE`); keys already on a boundary change nothing. Returns how many regions the
    /// splits added.
    pub async fn split_regions(&self, mut keys: Vec<Vec<u8>>) -> Result<usize> {
        keys.sort();
        keys.dedup();
        let inner = &self.inner;
        let bo = backoff::Backoff::new("split_region", SPLIT_BUDGET_MS);
        let mut added = 0;
        let mut left = keys;
        while !left.is_empty() {
            let groups = inner.cache.group_keys(&left).await?;
            left = Vec::new();
            for (route, group) in groups {
                let req = proto::kv::SplitRegionRequest {
                    split_keys: group.clone(),
                    ..Default::default()
                };
                match rpc::send(&inner.cache, &inner.conns, &bo, &route, req).await? {
                    rpc::Sent::Done(r) if !r.error.is_empty() => {
                        return Err(KvError::Server(r.error));
                    }
                    rpc::Sent::Done(r) => {
                        added += r.regions.len().saturating_sub(1);
                        inner.cache.invalidate(route.region.id, None);
                        inner.cache.update(&r.regions, &route.leader);
                        let starts = r.regions.iter().skip(1).map(|r| r.start_key.clone());
                        wait_until_pd_knows(&inner.pd, starts.collect()).await;
                    }
                    rpc::Sent::Reroute => left.extend(group),
                }
            }
        }
        Ok(added)
    }

    /// `tidb_committer_concurrency`, online.
    pub fn set_committer_concurrency(&self, n: usize) {
        self.inner
            .committer_concurrency
            .store(n.max(1), Ordering::Relaxed);
    }
}
