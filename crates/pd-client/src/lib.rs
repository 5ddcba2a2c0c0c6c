//! `pd-client`: how the SQL side and tools talk to PD.
//!
//! - [`PdClient`]: region and store lookups, the GC safe point, and timestamps.
//! - [`tso`]: the timestamp batcher. Concurrent `get_ts` calls share one request on one
//!   `Tso` stream (PD hands out `count` consecutive timestamps and names the last); while a
//!   request is in flight the next batch gathers, and `tidb_tso_client_batch_max_wait_time`
//!   may add a wait to grow batches further.
//!
//! - [`Connection`]: the PD members. It asks every member at once for the member list and
//!   the leader (the first answer wins), talks to the leader, and when a call fails as a broken connection
//!   would, finds the leader again and retries once (a follower would forward, so a member
//!   that answers is enough while an election runs).
//!
//! Every failure is a [`PdError`]; nothing here retries for long: callers back off.

pub mod tso;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proto::pd::pd_client::PdClient as Rpc;
use proto::pd::{
    GetAllStoresRequest, GetGcSafePointRequest, GetMembersRequest, GetRegionRequest,
    GetStoreRequest, Peer, Region, RegionStats, ReportSqlNodeRequest, ScanRegionsRequest, Store,
    UpdateGcSafePointRequest,
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
    /// No region covers the key yet (a split's new regions reach PD in their next reports).
    #[error("no region holds key {0}")]
    NoRegion(String),
}

impl From<tonic::Status> for PdError {
    fn from(s: tonic::Status) -> PdError {
        PdError::Rpc(format!("{}: {}", s.code(), s.message()))
    }
}

/// Whether a failed call may succeed on another member (the connection broke, the member
/// stopped, or no leader was known yet).
fn retryable(s: &tonic::Status) -> bool {
    use tonic::Code::*;
    matches!(
        s.code(),
        Unavailable | Unknown | Cancelled | DeadlineExceeded
    )
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

/// The PD members as this client knows them, and a channel to the one it talks to.
pub struct Connection {
    /// The endpoints it was given, then every member's client URL it learned.
    endpoints: Mutex<Vec<String>>,
    /// The channel in use and how many times it was replaced.
    rpc: Mutex<(u64, Rpc<Channel>)>,
    finding: tokio::sync::Mutex<()>,
}

fn endpoint(url: &str) -> Result<Endpoint, String> {
    let host = url
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    Endpoint::from_shared(format!("http://{host}"))
        .map(|ep| {
            ep.connect_timeout(CONNECT_TIMEOUT)
                .timeout(RPC_TIMEOUT)
                .tcp_nodelay(true)
        })
        .map_err(|e| format!("{url}: {e}"))
}

impl Connection {
    /// Finds the leader through the first of `endpoints` that answers.
    pub async fn open(endpoints: &[String]) -> Result<Connection, PdError> {
        let (rpc, members) = find_leader(endpoints).await?;
        let mut known = endpoints.to_vec();
        known.extend(members.into_iter().filter(|m| !endpoints.contains(m)));
        Ok(Connection {
            endpoints: Mutex::new(known),
            rpc: Mutex::new((0, rpc)),
            finding: tokio::sync::Mutex::new(()),
        })
    }

    /// The channel in use and its generation.
    pub fn rpc(&self) -> (u64, Rpc<Channel>) {
        self.rpc.lock().expect("pd connection lock").clone()
    }

    /// The channel of generation `failed` broke: finds the leader again (once, however many
    /// callers saw it break).
    pub async fn reconnect(&self, failed: u64) -> Result<(), PdError> {
        let _finding = self.finding.lock().await;
        if self.rpc().0 != failed {
            return Ok(());
        }
        let endpoints = self.endpoints.lock().expect("pd connection lock").clone();
        let (rpc, members) = find_leader(&endpoints).await?;
        {
            let mut known = self.endpoints.lock().expect("pd connection lock");
            for m in members {
                if !known.contains(&m) {
                    known.push(m);
                }
            }
        }
        *self.rpc.lock().expect("pd connection lock") = (failed + 1, rpc);
        Ok(())
    }

    /// Runs `call` on the leader; on a broken connection, finds the leader and runs it again.
    pub async fn call<T, F, Fut>(&self, call: F) -> Result<T, PdError>
    where
        F: Fn(Rpc<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let (generation, rpc) = self.rpc();
        match call(rpc).await {
            Ok(r) => Ok(r.into_inner()),
            Err(s) if retryable(&s) => {
                self.reconnect(generation).await?;
                Ok(call(self.rpc().1).await?.into_inner())
            }
            Err(s) => Err(s.into()),
        }
    }
}

/// Asks the members at `endpoints`, all at once, who leads, and takes the first answer:
/// connects to the leader, or to the member that answered when the leader cannot be reached
/// (it forwards). Returns the channel and every member's client URL. A member that went
/// silent (behind a partition, or paused) answers no one, and asking in turn would wait for
/// its timeouts before asking the next.
async fn find_leader(endpoints: &[String]) -> Result<(Rpc<Channel>, Vec<String>), PdError> {
    let mut asks = tokio::task::JoinSet::new();
    for e in endpoints {
        let e = e.clone();
        asks.spawn(async move { ask_for_leader(&e).await });
    }
    let mut reason = String::from("no endpoints given");
    while let Some(answer) = asks.join_next().await {
        match answer {
            Ok(Ok(found)) => return Ok(found),
            Ok(Err(why)) => reason = why,
            Err(e) => reason = e.to_string(),
        }
    }
    Err(PdError::Unreachable {
        endpoints: endpoints.join(","),
        reason,
    })
}

/// Asks the member at `e` who leads (see [`find_leader`]).
async fn ask_for_leader(e: &str) -> Result<(Rpc<Channel>, Vec<String>), String> {
    let channel = security::connect(endpoint(e)?)
        .await
        .map_err(|err| format!("{e}: {err}"))?;
    let mut rpc = Rpc::new(channel);
    let members = rpc
        .get_members(GetMembersRequest {})
        .await
        .map_err(|err| format!("{e}: {err}"))?
        .into_inner();
    let urls: Vec<String> = members
        .members
        .iter()
        .filter_map(|m| m.client_urls.first().cloned())
        .collect();
    let leader_url = members.leader.and_then(|l| l.client_urls.first().cloned());
    if let Some(url) = leader_url.filter(|u| !same_host(u, e))
        && let Ok(ep) = endpoint(&url)
        && let Ok(channel) = security::connect(ep).await
    {
        return Ok((Rpc::new(channel), urls));
    }
    Ok((rpc, urls))
}

fn same_host(a: &str, b: &str) -> bool {
    let strip = |u: &str| {
        u.trim_start_matches("http://")
            .trim_start_matches("https://")
            .to_string()
    };
    strip(a) == strip(b)
}

#[derive(Clone)]
pub struct PdClient {
    conn: Arc<Connection>,
    tso: Arc<tso::TsoBatcher>,
}

impl PdClient {
    /// Connects to the PD leader through the first endpoint that answers (`host:port`,
    /// `http://` optional).
    pub async fn connect(endpoints: &[String]) -> Result<PdClient, PdError> {
        let conn = Arc::new(Connection::open(endpoints).await?);
        let tso = Arc::new(tso::TsoBatcher::start(conn.clone()));
        Ok(PdClient { conn, tso })
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
            .conn
            .call(|mut rpc| async move {
                rpc.get_region(GetRegionRequest {
                    region_key: key.to_vec(),
                })
                .await
            })
            .await?;
        check(r.error)?;
        let region = r
            .region
            .ok_or_else(|| PdError::NoRegion(format!("{key:02x?}")))?;
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
        let regions = self.scan_regions_with_stats(start, end, limit).await?;
        Ok(regions.into_iter().map(|(info, _)| info).collect())
    }

    /// `scan_regions`, with each region's size and flow as PD last heard them.
    pub async fn scan_regions_with_stats(
        &self,
        start: &[u8],
        end: &[u8],
        limit: i32,
    ) -> Result<Vec<(RegionInfo, RegionStats)>, PdError> {
        let r = self
            .conn
            .call(|mut rpc| async move {
                rpc.scan_regions(ScanRegionsRequest {
                    start_key: start.to_vec(),
                    end_key: end.to_vec(),
                    limit,
                })
                .await
            })
            .await?;
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
            .zip(
                r.stats
                    .into_iter()
                    .chain(std::iter::repeat_with(Default::default)),
            )
            .collect())
    }

    pub async fn get_store(&self, id: u64) -> Result<Store, PdError> {
        let r = self
            .conn
            .call(|mut rpc| async move { rpc.get_store(GetStoreRequest { store_id: id }).await })
            .await?;
        check(r.error)?;
        r.store
            .ok_or_else(|| PdError::Refused(format!("pd knows no store {id}")))
    }

    /// Every kv node registered with PD.
    pub async fn get_all_stores(&self) -> Result<Vec<Store>, PdError> {
        let r = self
            .conn
            .call(|mut rpc| async move { rpc.get_all_stores(GetAllStoresRequest {}).await })
            .await?;
        check(r.error)?;
        Ok(r.stores)
    }

    /// The leader's client address (host:port), where PD's HTTP API answers too.
    pub async fn leader_address(&self) -> Result<String, PdError> {
        let r = self
            .conn
            .call(|mut rpc| async move { rpc.get_members(GetMembersRequest {}).await })
            .await?;
        check(r.error)?;
        let url = (r.leader.and_then(|l| l.client_urls.into_iter().next()))
            .ok_or_else(|| PdError::Refused("PD has no leader yet".to_string()))?;
        Ok(url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .to_string())
    }

    /// A sql node says where it serves (`ReportSqlNode`; call every
    /// `base::limits::SQL_NODE_REPORT_INTERVAL_MS`).
    pub async fn report_sql_node(&self, report: ReportSqlNodeRequest) -> Result<(), PdError> {
        let r = self
            .conn
            .call(|mut rpc| {
                let report = report.clone();
                async move { rpc.report_sql_node(report).await }
            })
            .await?;
        check(r.error)
    }

    pub async fn get_gc_safe_point(&self) -> Result<u64, PdError> {
        let r = self
            .conn
            .call(|mut rpc| async move { rpc.get_gc_safe_point(GetGcSafePointRequest {}).await })
            .await?;
        check(r.error)?;
        Ok(r.safe_point)
    }

    /// Moves the safe point forward; returns the one in force (never lower than before).
    pub async fn update_gc_safe_point(&self, safe_point: u64) -> Result<u64, PdError> {
        let r = self
            .conn
            .call(|mut rpc| async move {
                rpc.update_gc_safe_point(UpdateGcSafePointRequest { safe_point })
                    .await
            })
            .await?;
        check(r.error)?;
        Ok(r.new_safe_point)
    }
}
