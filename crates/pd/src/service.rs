//! The gRPC `Pd` service: today the `Tso` stream. Each request of `count` timestamps gets the
//! last of `count` consecutive ones. When a millisecond's logical space is used up the
//! request waits for the next tick and tries again, up to [`OVERFLOW_RETRIES`] times, as PD
//! does; then it answers `TSO_UNAVAILABLE` and the client backs off.

use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proto::pd::pd_client::PdClient;
use proto::pd::pd_server::Pd;
use proto::pd::{
    self as wire, Error, ErrorType, GetGcSafePointRequest, GetGcSafePointResponse, Timestamp,
    TsoRequest, TsoResponse, UpdateGcSafePointRequest, UpdateGcSafePointResponse,
};
use tokio_stream::{Stream, StreamExt};
use tonic::transport::Channel;
use tonic::{Request, Response, Status, Streaming};

use crate::cluster_rpc as rpc;
use crate::driver::DriverHandle;
use crate::members::Members;
use crate::metadata::Metadata;
use crate::oracle::Oracle;
use crate::state::{Command, Outcome};
use crate::tso::TsoError;

pub const OVERFLOW_RETRIES: u32 = 10;

/// How long a follower waits for a leader to be known before it answers `Unavailable`.
pub const LEADER_WAIT: Duration = Duration::from_secs(3);

/// The header a follower puts on what it forwards: a forwarded call is never forwarded
/// again (two members that each take the other for the leader answer instead of looping).
const FORWARDED: &str = "atoll-pd-forwarded";

/// The `schedule.*` limits as the config follower last set them (online knobs).
pub struct ScheduleLimits {
    /// `leader-schedule-limit`.
    pub leader: AtomicUsize,
    /// `region-schedule-limit`.
    pub region: AtomicUsize,
    /// `hot-region-schedule-limit`.
    pub hot_region: AtomicUsize,
    /// `hot-region-cache-hits-threshold`.
    pub hot_hits: AtomicUsize,
    /// `merge-schedule-limit`.
    pub merge: AtomicUsize,
    /// `max-merge-region-size` (MiB).
    pub max_merge_size_mib: AtomicUsize,
    /// `max-merge-region-keys`.
    pub max_merge_keys: AtomicUsize,
    /// `split-merge-interval`, in milliseconds.
    pub split_merge_interval_ms: AtomicUsize,
}

impl Default for ScheduleLimits {
    fn default() -> ScheduleLimits {
        ScheduleLimits {
            leader: AtomicUsize::new(4),
            region: AtomicUsize::new(2048),
            hot_region: AtomicUsize::new(4),
            hot_hits: AtomicUsize::new(3),
            merge: AtomicUsize::new(8),
            max_merge_size_mib: AtomicUsize::new(54),
            max_merge_keys: AtomicUsize::new(540_000),
            split_merge_interval_ms: AtomicUsize::new(3_600_000),
        }
    }
}

pub struct PdService {
    oracle: Arc<Oracle>,
    meta: Metadata,
    driver: DriverHandle,
    members: Arc<Members>,
    /// A client of the leader's client URL, by leader id.
    leader_client: Mutex<Option<(u64, String, PdClient<Channel>)>>,
    /// `tso-update-physical-interval`: how long an overflowed request waits to retry.
    update_interval: Duration,
    /// `replication.max-replicas`, followed online.
    pub max_replicas: Arc<std::sync::atomic::AtomicUsize>,
    /// `schedule.max-store-down-time` in milliseconds, followed online.
    pub store_down_ms: Arc<std::sync::atomic::AtomicU64>,
    /// The `schedule.*` limits, followed online.
    pub schedule_limits: Arc<ScheduleLimits>,
    operators: Arc<crate::operators::Operators>,
    metrics: crate::metrics::PdMetrics,
    /// The sql nodes that reported to this member as leader.
    pub sql_nodes: Arc<crate::sql_nodes::SqlNodes>,
}

/// Where a call is answered.
enum Route {
    Here,
    Leader(PdClient<Channel>),
}

fn forwarded<T>(message: T) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut()
        .insert(FORWARDED, tonic::metadata::MetadataValue::from_static("1"));
    r
}

impl PdService {
    pub fn new(
        oracle: Arc<Oracle>,
        driver: DriverHandle,
        members: Arc<Members>,
        update_interval: Duration,
        metrics: crate::metrics::PdMetrics,
    ) -> PdService {
        PdService {
            oracle,
            meta: Metadata::new(driver.clone()),
            driver,
            members,
            leader_client: Mutex::new(None),
            update_interval,
            max_replicas: Arc::new(std::sync::atomic::AtomicUsize::new(3)),
            store_down_ms: Arc::new(std::sync::atomic::AtomicU64::new(30 * 60 * 1000)),
            schedule_limits: Arc::default(),
            operators: Arc::default(),
            metrics,
            sql_nodes: Arc::default(),
        }
    }

    /// Here when this member leads; the leader when another does; `Unavailable` when no
    /// leader is known within [`LEADER_WAIT`] or a forwarded call reached a follower.
    async fn route<T>(&self, request: &Request<T>) -> Result<Route, Status> {
        let deadline = Instant::now() + LEADER_WAIT;
        loop {
            let status = self.driver.shared().status();
            if status.leader == status.id {
                return Ok(Route::Here);
            }
            if request.metadata().contains_key(FORWARDED) {
                return Err(Status::unavailable(
                    "this pd member is not the leader (the call was forwarded to it as leader)",
                ));
            }
            if status.leader != 0
                && let Some(client) = self.client_of(status.leader)
            {
                return Ok(Route::Leader(client));
            }
            if Instant::now() >= deadline {
                return Err(Status::unavailable("no pd leader is known yet"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn client_of(&self, leader: u64) -> Option<PdClient<Channel>> {
        let url = self.members.get(leader)?.client_url;
        if url.is_empty() {
            return None;
        }
        let mut cached = self.leader_client.lock().expect("leader client lock");
        if let Some((id, u, client)) = &*cached
            && *id == leader
            && *u == url
        {
            return Some(client.clone());
        }
        let endpoint = tonic::transport::Endpoint::from_shared(format!(
            "http://{}",
            config::value::strip_scheme(&url)
        ))
        .ok()?
        .connect_timeout(Duration::from_secs(1))
        .tcp_nodelay(true);
        let client = PdClient::new(security::connect_lazy(endpoint));
        *cached = Some((leader, url, client.clone()));
        Some(client)
    }

    /// Answers a TSO request on this member. When another member took the lead since the
    /// stream opened, the stream ends (`Unavailable`) so the client goes to the new leader.
    async fn answer(
        oracle: &Oracle,
        shared: &crate::member::Shared,
        update_interval: Duration,
        count: u32,
    ) -> Result<TsoResponse, Status> {
        let mut tries = 0;
        let result = loop {
            let status = shared.status();
            if status.leader != status.id && status.leader != 0 {
                return Err(Status::unavailable("this pd member no longer leads"));
            }
            match oracle.allocate(u64::from(count)) {
                Err(TsoError::LogicalOverflow { .. }) if tries < OVERFLOW_RETRIES => {
                    tries += 1;
                    tokio::time::sleep(update_interval).await;
                }
                // A new leader saving its first window: a few milliseconds.
                Err(TsoError::NotServing) if tries < OVERFLOW_RETRIES * 10 => {
                    tries += 1;
                    tokio::time::sleep(update_interval / 10).await;
                }
                other => break other,
            }
        };
        Ok(match result {
            Ok(ts) => TsoResponse {
                error: None,
                count,
                timestamp: Some(Timestamp {
                    physical: base::ts::physical_ms(ts) as i64,
                    logical: (ts & ((1 << base::ts::LOGICAL_BITS) - 1)) as i64,
                }),
            },
            Err(e) => TsoResponse {
                error: Some(Error {
                    r#type: match e {
                        TsoError::BadCount(_) => ErrorType::InvalidArgument,
                        TsoError::LogicalOverflow { .. } | TsoError::NotServing => {
                            ErrorType::TsoUnavailable
                        }
                    } as i32,
                    message: e.to_string(),
                }),
                count: 0,
                timestamp: None,
            },
        })
    }
}

type TsoStream = Pin<Box<dyn Stream<Item = Result<TsoResponse, Status>> + Send>>;

impl PdService {
    /// The operators and schedulers this member runs while it leads.
    pub fn operators(&self) -> Arc<crate::operators::Operators> {
        self.operators.clone()
    }

    /// The replica checker's knobs as they are now.
    fn limits(&self) -> crate::replica_checker::Limits {
        use std::sync::atomic::Ordering::Relaxed;
        crate::replica_checker::Limits {
            max_replicas: self.max_replicas.load(Relaxed),
            store_down_ms: self.store_down_ms.load(Relaxed),
            leader_schedule_limit: self.schedule_limits.leader.load(Relaxed),
            region_schedule_limit: self.schedule_limits.region.load(Relaxed),
            hot_region_schedule_limit: self.schedule_limits.hot_region.load(Relaxed),
            hot_region_cache_hits_threshold: self.schedule_limits.hot_hits.load(Relaxed) as u32,
            merge_schedule_limit: self.schedule_limits.merge.load(Relaxed),
            merge: crate::merge_checker::MergeLimits {
                max_size_mib: self.schedule_limits.max_merge_size_mib.load(Relaxed) as u64,
                max_keys: self.schedule_limits.max_merge_keys.load(Relaxed) as u64,
                split_merge_interval: std::time::Duration::from_millis(
                    self.schedule_limits.split_merge_interval_ms.load(Relaxed) as u64,
                ),
            },
        }
    }

    /// Runs a call that proposes through Raft (and waits for it) off the async threads.
    async fn durably<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Metadata) -> T + Send + 'static,
    ) -> Result<Response<T>, Status> {
        let meta = self.meta.clone();
        tokio::task::spawn_blocking(move || f(&meta))
            .await
            .map(Response::new)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// Answers the call on the leader: forwards it when this member does not lead.
macro_rules! on_leader {
    ($self:ident, $request:ident, $call:ident) => {
        if let Route::Leader(mut leader) = $self.route(&$request).await? {
            return leader.$call(forwarded($request.into_inner())).await;
        }
    };
}

#[tonic::async_trait]
impl Pd for PdService {
    type TsoStream = TsoStream;

    async fn tso(
        &self,
        request: Request<Streaming<TsoRequest>>,
    ) -> Result<Response<TsoStream>, Status> {
        if let Route::Leader(mut leader) = self.route(&request).await? {
            let requests = request.into_inner().map_while(Result::ok);
            let answers = leader.tso(forwarded(requests)).await?.into_inner();
            return Ok(Response::new(Box::pin(answers)));
        }
        let oracle = self.oracle.clone();
        let interval = self.update_interval;
        let handle_time = self.metrics.tso_handle.clone();
        let shared = self.driver.shared().clone();
        let requests = request.into_inner();
        let responses = requests.then(move |req| {
            let oracle = oracle.clone();
            let shared = shared.clone();
            let timer = handle_time.start_timer();
            async move {
                let req = req?;
                let answer = PdService::answer(&oracle, &shared, interval, req.count).await?;
                timer.observe_duration();
                Ok(answer)
            }
        });
        Ok(Response::new(Box::pin(responses)))
    }

    async fn get_gc_safe_point(
        &self,
        request: Request<GetGcSafePointRequest>,
    ) -> Result<Response<GetGcSafePointResponse>, Status> {
        on_leader!(self, request, get_gc_safe_point);
        Ok(Response::new(GetGcSafePointResponse {
            error: None,
            safe_point: self.driver.shared().read(|s| s.gc_safe_point),
        }))
    }

    async fn update_gc_safe_point(
        &self,
        request: Request<UpdateGcSafePointRequest>,
    ) -> Result<Response<UpdateGcSafePointResponse>, Status> {
        on_leader!(self, request, update_gc_safe_point);
        let wanted = request.into_inner().safe_point;
        let result = self
            .driver
            .propose_async(Command::UpdateGcSafePoint { safe_point: wanted })
            .await;
        Ok(Response::new(match result {
            Ok(Outcome::SafePoint(new_safe_point)) => UpdateGcSafePointResponse {
                error: None,
                new_safe_point,
            },
            other => UpdateGcSafePointResponse {
                error: Some(Error {
                    r#type: ErrorType::Unknown as i32,
                    message: format!("the safe point was not saved: {other:?}"),
                }),
                new_safe_point: self.driver.shared().read(|s| s.gc_safe_point),
            },
        }))
    }

    async fn is_bootstrapped(
        &self,
        r: Request<wire::IsBootstrappedRequest>,
    ) -> Result<Response<wire::IsBootstrappedResponse>, Status> {
        on_leader!(self, r, is_bootstrapped);
        Ok(Response::new(rpc::is_bootstrapped(&self.meta)))
    }

    async fn bootstrap(
        &self,
        r: Request<wire::BootstrapRequest>,
    ) -> Result<Response<wire::BootstrapResponse>, Status> {
        on_leader!(self, r, bootstrap);
        self.durably(move |m| rpc::bootstrap(m, r.into_inner()))
            .await
    }

    async fn alloc_id(
        &self,
        r: Request<wire::AllocIdRequest>,
    ) -> Result<Response<wire::AllocIdResponse>, Status> {
        on_leader!(self, r, alloc_id);
        self.durably(rpc::alloc_id).await
    }

    async fn put_store(
        &self,
        r: Request<wire::PutStoreRequest>,
    ) -> Result<Response<wire::PutStoreResponse>, Status> {
        on_leader!(self, r, put_store);
        self.durably(move |m| rpc::put_store(m, r.into_inner()))
            .await
    }

    async fn get_store(
        &self,
        r: Request<wire::GetStoreRequest>,
    ) -> Result<Response<wire::GetStoreResponse>, Status> {
        on_leader!(self, r, get_store);
        Ok(Response::new(rpc::get_store(&self.meta, r.into_inner())))
    }

    async fn get_all_stores(
        &self,
        r: Request<wire::GetAllStoresRequest>,
    ) -> Result<Response<wire::GetAllStoresResponse>, Status> {
        on_leader!(self, r, get_all_stores);
        Ok(Response::new(rpc::get_all_stores(&self.meta)))
    }

    async fn store_heartbeat(
        &self,
        r: Request<wire::StoreHeartbeatRequest>,
    ) -> Result<Response<wire::StoreHeartbeatResponse>, Status> {
        on_leader!(self, r, store_heartbeat);
        let operators = self.operators.clone();
        let limits = self.limits();
        self.durably(move |m| rpc::store_heartbeat(m, &operators, limits, r.into_inner()))
            .await
    }

    async fn region_heartbeat(
        &self,
        r: Request<wire::RegionHeartbeatRequest>,
    ) -> Result<Response<wire::RegionHeartbeatResponse>, Status> {
        on_leader!(self, r, region_heartbeat);
        let operators = self.operators.clone();
        let limits = self.limits();
        self.durably(move |m| rpc::region_heartbeat(m, &operators, limits, r.into_inner()))
            .await
    }

    async fn get_region(
        &self,
        r: Request<wire::GetRegionRequest>,
    ) -> Result<Response<wire::GetRegionResponse>, Status> {
        on_leader!(self, r, get_region);
        Ok(Response::new(rpc::get_region(&self.meta, r.into_inner())))
    }

    async fn scan_regions(
        &self,
        r: Request<wire::ScanRegionsRequest>,
    ) -> Result<Response<wire::ScanRegionsResponse>, Status> {
        on_leader!(self, r, scan_regions);
        Ok(Response::new(rpc::scan_regions(
            &self.meta,
            &self.operators.stats,
            r.into_inner(),
        )))
    }

    async fn add_member(
        &self,
        r: Request<wire::AddMemberRequest>,
    ) -> Result<Response<wire::AddMemberResponse>, Status> {
        on_leader!(self, r, add_member);
        let req = r.into_inner();
        let invalid = |message: String| {
            Ok(Response::new(wire::AddMemberResponse {
                error: Some(Error {
                    r#type: ErrorType::InvalidArgument as i32,
                    message,
                }),
                member_id: 0,
                members: Vec::new(),
            }))
        };
        if req.name.trim().is_empty() {
            return invalid("a member needs a name".into());
        }
        if let Err(why) = config::value::check_address(&req.peer_url) {
            return invalid(format!("peer URL {:?}: {why}", req.peer_url));
        }
        let record = crate::state::MemberRecord {
            name: req.name,
            peer_url: format!("http://{}", config::value::strip_scheme(&req.peer_url)),
        };
        let (error, member_id) = match self.driver.add_member(record).await {
            Ok(Outcome::MemberId(id)) => (None, id),
            Ok(other) => (Some((ErrorType::Unknown, format!("{other:?}"))), 0),
            Err(e @ crate::member::ProposeError::MembershipChange(_)) => {
                (Some((ErrorType::InvalidArgument, e.to_string())), 0)
            }
            Err(e) => (Some((ErrorType::Unknown, e.to_string())), 0),
        };
        Ok(Response::new(wire::AddMemberResponse {
            error: error.map(|(kind, message)| Error {
                r#type: kind as i32,
                message,
            }),
            member_id,
            members: self
                .members
                .list()
                .iter()
                .map(crate::peer::wire_member)
                .collect(),
        }))
    }

    async fn set_config(
        &self,
        r: Request<wire::SetConfigRequest>,
    ) -> Result<Response<wire::SetConfigResponse>, Status> {
        on_leader!(self, r, set_config);
        let mut items = std::collections::BTreeMap::new();
        for item in r.into_inner().items {
            let value = serde_json::from_str(&item.json_value).map_err(|e| {
                Status::invalid_argument(format!("{}: not a JSON value: {e}", item.name))
            })?;
            crate::config_sync::check(&item.name, &value).map_err(Status::invalid_argument)?;
            items.insert(item.name, value);
        }
        let result = self.driver.propose_async(Command::SetConfig(items)).await;
        Ok(Response::new(wire::SetConfigResponse {
            error: result.err().map(|e| Error {
                r#type: ErrorType::Unknown as i32,
                message: e.to_string(),
            }),
        }))
    }

    async fn report_sql_node(
        &self,
        r: Request<wire::ReportSqlNodeRequest>,
    ) -> Result<Response<wire::ReportSqlNodeResponse>, Status> {
        // A node listening on every interface (0.0.0.0) is reached at the address it called
        // from; the member it called fixes that before any forwarding.
        let from = r.remote_addr().map(|a| a.ip());
        let (metadata, extensions, mut report) = r.into_parts();
        if let Some(ip) = from {
            report.address = crate::sql_nodes::reachable_at(&report.address, ip);
            report.status_address = crate::sql_nodes::reachable_at(&report.status_address, ip);
        }
        let r = Request::from_parts(metadata, extensions, report);
        on_leader!(self, r, report_sql_node);
        self.sql_nodes.report(r.into_inner());
        Ok(Response::new(wire::ReportSqlNodeResponse { error: None }))
    }

    async fn get_members(
        &self,
        _: Request<wire::GetMembersRequest>,
    ) -> Result<Response<wire::GetMembersResponse>, Status> {
        let leader = self.driver.shared().status().leader;
        Ok(Response::new(wire::GetMembersResponse {
            error: None,
            members: self
                .members
                .list()
                .iter()
                .map(crate::peer::wire_member)
                .collect(),
            leader: self
                .members
                .get(leader)
                .as_ref()
                .map(crate::peer::wire_member),
            cluster_id: self.driver.shared().read(|s| s.cluster_id),
        }))
    }
}
