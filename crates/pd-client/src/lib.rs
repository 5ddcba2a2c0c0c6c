//! `pd-client`: how the SQL side and tools talk to PD.
//!
//! - [`PdClient`]: region and store lookups, the GC safe point, and timestamps.
//! - [`tso`]: the timestamp batcher. Concurrent `get_ts` calls share one request on one
//!   `Tso` stream (PD hands out `count` consecutive timestamps and names the last); while a
//!   request is in flight the next batch gathers, and `tidb_tso_client_batch_max_wait_time`
//!   may add a wait to grow batches further.
//!
//! Every failure is a [`PdError`]; nothing here retries for long: callers back off.

pub mod tso;

use std::sync::Arc;
use std::time::Duration;

use proto::pd::pd_client::PdClient as Rpc;
use proto::pd::{
    GetAllStoresRequest, GetGcSafePointRequest, GetRegionRequest, GetStoreRequest, Peer, Region,
    ScanRegionsRequest, Store, UpdateGcSafePointRequest,
};
use tonic::transport::{Channel, Endpoint};

/// How long one PD call may take before it counts as failed.
pub const RPC_TIMEOUT: Duration = Duration::from_secs(5);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, thiserror::Error)]
pub enum PdError {
    #[error("cannot reach pd ({endpoints}): {reason}")]
    Unreachable { endpoints: String, reason: String },
    #[error("pd call failed: {0}")]
    Rpc(String),
    #[error("pd refused: {0}")]
    Refused(String),
    #[error("the tso client has stopped")]
    Stopped,
}

impl From<tonic::Status> for PdError {
    fn from(s: tonic::Status) -> PdError {
        PdError::Rpc(format!("{}: {}", s.code(), s.message()))
    }
}

fn check(error: Option<proto::pd::Error>) -> Result<(), PdError> {
    match error {
        Some(e) => Err(PdError::Refused(e.message)),
        None => Ok(()),
    }
}

/// A region and the peer that leads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionInfo {
    pub region: Region,
    pub leader: Option<Peer>,
}

#[derive(Clone)]
pub struct PdClient {
    rpc: Rpc<Channel>,
    tso: Arc<tso::TsoBatcher>,
}

impl PdClient {
    /// Connects to the first endpoint that answers (`host:port`, `http://` optional).
    pub async fn connect(endpoints: &[String]) -> Result<PdClient, PdError> {
        let mut reason = String::from("no endpoints given");
        for e in endpoints {
            let host = e
                .trim_start_matches("http://")
                .trim_start_matches("https://");
            let endpoint = match Endpoint::from_shared(format!("http://{host}")) {
                Ok(ep) => ep.connect_timeout(CONNECT_TIMEOUT).timeout(RPC_TIMEOUT),
                Err(err) => {
                    reason = format!("{e}: {err}");
                    continue;
                }
            };
            match endpoint.connect().await {
                Ok(channel) => {
                    let rpc = Rpc::new(channel);
                    let tso = Arc::new(tso::TsoBatcher::start(rpc.clone()));
                    return Ok(PdClient { rpc, tso });
                }
                Err(err) => reason = format!("{e}: {err}"),
            }
        }
        Err(PdError::Unreachable {
            endpoints: endpoints.join(","),
            reason,
        })
    }

    /// A timestamp, batched with concurrent callers.
    pub async fn get_ts(&self) -> Result<u64, PdError> {
        self.tso.get_ts().await
    }

    /// `tidb_tso_client_batch_max_wait_time`: extra wait to grow TSO batches (0 = none).
    pub fn set_tso_max_wait(&self, wait: Duration) {
        self.tso.set_max_wait(wait);
    }

    pub fn tso_stats(&self) -> tso::TsoStats {
        self.tso.stats()
    }

    /// The region holding `key`.
    pub async fn get_region(&self, key: &[u8]) -> Result<RegionInfo, PdError> {
        let r = self
            .rpc
            .clone()
            .get_region(GetRegionRequest {
                region_key: key.to_vec(),
            })
            .await?
            .into_inner();
        check(r.error)?;
        let region = r
            .region
            .ok_or_else(|| PdError::Refused(format!("no region holds key {key:02x?}")))?;
        Ok(RegionInfo {
            region,
            leader: r.leader,
        })
    }

    /// Up to `limit` regions from the one holding `start` on, stopping before `end` (empty =
    /// to the last).
    pub async fn scan_regions(
        &self,
        start: &[u8],
        end: &[u8],
        limit: i32,
    ) -> Result<Vec<RegionInfo>, PdError> {
        let r = self
            .rpc
            .clone()
            .scan_regions(ScanRegionsRequest {
                start_key: start.to_vec(),
                end_key: end.to_vec(),
                limit,
            })
            .await?
            .into_inner();
        check(r.error)?;
        Ok(r.regions
            .into_iter()
            .zip(
                r.leaders
                    .into_iter()
                    .map(Some)
                    .chain(std::iter::repeat(None)),
            )
            .map(|(region, leader)| RegionInfo { region, leader })
            .collect())
    }

    pub async fn get_store(&self, id: u64) -> Result<Store, PdError> {
        let r = self
            .rpc
            .clone()
            .get_store(GetStoreRequest { store_id: id })
            .await?
            .into_inner();
        check(r.error)?;
        r.store
            .ok_or_else(|| PdError::Refused(format!("pd knows no store {id}")))
    }

    /// Every kv node registered with PD.
    pub async fn get_all_stores(&self) -> Result<Vec<Store>, PdError> {
        let r = self
            .rpc
            .clone()
            .get_all_stores(GetAllStoresRequest {})
            .await?
            .into_inner();
        check(r.error)?;
        Ok(r.stores)
    }

    pub async fn get_gc_safe_point(&self) -> Result<u64, PdError> {
        let r = self
            .rpc
            .clone()
            .get_gc_safe_point(GetGcSafePointRequest {})
            .await?
            .into_inner();
        check(r.error)?;
        Ok(r.safe_point)
    }

    /// Moves the safe point forward; returns the one in force (never lower than before).
    pub async fn update_gc_safe_point(&self, safe_point: u64) -> Result<u64, PdError> {
        let r = self
            .rpc
            .clone()
            .update_gc_safe_point(UpdateGcSafePointRequest { safe_point })
            .await?
            .into_inner();
        check(r.error)?;
        Ok(r.new_safe_point)
    }
}
