//! The gRPC `Pd` service: today the `Tso` stream. Each request of `count` timestamps gets the
//! last of `count` consecutive ones. When a millisecond's logical space is used up the
//! request waits for the next tick and tries again, up to [`OVERFLOW_RETRIES`] times, as PD
//! does; then it answers `TSO_UNAVAILABLE` and the client backs off.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use proto::pd::pd_server::Pd;
use proto::pd::{
    self as wire, Error, ErrorType, GetGcSafePointRequest, GetGcSafePointResponse, Timestamp,
    TsoRequest, TsoResponse, UpdateGcSafePointRequest, UpdateGcSafePointResponse,
};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use crate::cluster_rpc as rpc;
use crate::gc_safe_point::GcSafePoint;
use crate::metadata::Metadata;
use crate::oracle::Oracle;
use crate::tso::TsoError;

pub const OVERFLOW_RETRIES: u32 = 10;

pub struct PdService {
    oracle: Arc<Oracle>,
    safe_point: Arc<GcSafePoint>,
    meta: Arc<Metadata>,
    /// `tso-update-physical-interval`: how long an overflowed request waits to retry.
    update_interval: Duration,
    /// `replication.max-replicas`, followed online.
    pub max_replicas: Arc<std::sync::atomic::AtomicUsize>,
    /// `schedule.max-store-down-time` in milliseconds, followed online.
    pub store_down_ms: Arc<std::sync::atomic::AtomicU64>,
    operators: Arc<crate::cluster_rpc::Operators>,
}

impl PdService {
    pub fn new(
        oracle: Arc<Oracle>,
        safe_point: Arc<GcSafePoint>,
        meta: Arc<Metadata>,
        update_interval: Duration,
    ) -> PdService {
        PdService {
            oracle,
            safe_point,
            meta,
            update_interval,
            max_replicas: Arc::new(std::sync::atomic::AtomicUsize::new(3)),
            store_down_ms: Arc::new(std::sync::atomic::AtomicU64::new(30 * 60 * 1000)),
            operators: Arc::default(),
        }
    }

    async fn answer(oracle: &Oracle, update_interval: Duration, count: u32) -> TsoResponse {
        let mut tries = 0;
        let result = loop {
            match oracle.allocate(u64::from(count)) {
                Err(TsoError::LogicalOverflow { .. }) if tries < OVERFLOW_RETRIES => {
                    tries += 1;
                    tokio::time::sleep(update_interval).await;
                }
                other => break other,
            }
        };
        match result {
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
                        TsoError::LogicalOverflow { .. } => ErrorType::TsoUnavailable,
                    } as i32,
                    message: e.to_string(),
                }),
                count: 0,
                timestamp: None,
            },
        }
    }
}

type TsoStream = Pin<Box<dyn Stream<Item = Result<TsoResponse, Status>> + Send>>;

impl PdService {
    /// Runs a call that saves metadata (an fsync) off the async threads.
    /// The replica checker's knobs as they are now.
    fn limits(&self) -> crate::replica_checker::Limits {
        use std::sync::atomic::Ordering::Relaxed;
        crate::replica_checker::Limits {
            max_replicas: self.max_replicas.load(Relaxed),
            store_down_ms: self.store_down_ms.load(Relaxed),
        }
    }

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

#[tonic::async_trait]
impl Pd for PdService {
    type TsoStream = TsoStream;

    async fn tso(
        &self,
        request: Request<Streaming<TsoRequest>>,
    ) -> Result<Response<TsoStream>, Status> {
        let oracle = self.oracle.clone();
        let interval = self.update_interval;
        let requests = request.into_inner();
        let responses = requests.then(move |req| {
            let oracle = oracle.clone();
            async move {
                let req = req?;
                Ok(PdService::answer(&oracle, interval, req.count).await)
            }
        });
        Ok(Response::new(Box::pin(responses)))
    }

    async fn get_gc_safe_point(
        &self,
        _: Request<GetGcSafePointRequest>,
    ) -> Result<Response<GetGcSafePointResponse>, Status> {
        Ok(Response::new(GetGcSafePointResponse {
            error: None,
            safe_point: self.safe_point.get(),
        }))
    }

    async fn update_gc_safe_point(
        &self,
        request: Request<UpdateGcSafePointRequest>,
    ) -> Result<Response<UpdateGcSafePointResponse>, Status> {
        let wanted = request.into_inner().safe_point;
        let safe_point = self.safe_point.clone();
        let result = tokio::task::spawn_blocking(move || safe_point.update(wanted))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(match result {
            Ok(new_safe_point) => UpdateGcSafePointResponse {
                error: None,
                new_safe_point,
            },
            Err(e) => UpdateGcSafePointResponse {
                error: Some(Error {
                    r#type: ErrorType::Unknown as i32,
                    message: e.to_string(),
                }),
                new_safe_point: self.safe_point.get(),
            },
        }))
    }

    async fn is_bootstrapped(
        &self,
        _: Request<wire::IsBootstrappedRequest>,
    ) -> Result<Response<wire::IsBootstrappedResponse>, Status> {
        Ok(Response::new(rpc::is_bootstrapped(&self.meta)))
    }

    async fn bootstrap(
        &self,
        r: Request<wire::BootstrapRequest>,
    ) -> Result<Response<wire::BootstrapResponse>, Status> {
        self.durably(move |m| rpc::bootstrap(m, r.into_inner()))
            .await
    }

    async fn alloc_id(
        &self,
        _: Request<wire::AllocIdRequest>,
    ) -> Result<Response<wire::AllocIdResponse>, Status> {
        self.durably(rpc::alloc_id).await
    }

    async fn put_store(
        &self,
        r: Request<wire::PutStoreRequest>,
    ) -> Result<Response<wire::PutStoreResponse>, Status> {
        self.durably(move |m| rpc::put_store(m, r.into_inner()))
            .await
    }

    async fn get_store(
        &self,
        r: Request<wire::GetStoreRequest>,
    ) -> Result<Response<wire::GetStoreResponse>, Status> {
        Ok(Response::new(rpc::get_store(&self.meta, r.into_inner())))
    }

    async fn get_all_stores(
        &self,
        _: Request<wire::GetAllStoresRequest>,
    ) -> Result<Response<wire::GetAllStoresResponse>, Status> {
        Ok(Response::new(rpc::get_all_stores(&self.meta)))
    }

    async fn store_heartbeat(
        &self,
        r: Request<wire::StoreHeartbeatRequest>,
    ) -> Result<Response<wire::StoreHeartbeatResponse>, Status> {
        let limits = self.limits();
        Ok(Response::new(rpc::store_heartbeat(
            &self.meta,
            &self.operators,
            limits,
            r.into_inner(),
        )))
    }

    async fn region_heartbeat(
        &self,
        r: Request<wire::RegionHeartbeatRequest>,
    ) -> Result<Response<wire::RegionHeartbeatResponse>, Status> {
        let operators = self.operators.clone();
        let limits = self.limits();
        self.durably(move |m| rpc::region_heartbeat(m, &operators, limits, r.into_inner()))
            .await
    }

    async fn get_region(
        &self,
        r: Request<wire::GetRegionRequest>,
    ) -> Result<Response<wire::GetRegionResponse>, Status> {
        Ok(Response::new(rpc::get_region(&self.meta, r.into_inner())))
    }

    async fn scan_regions(
        &self,
        r: Request<wire::ScanRegionsRequest>,
    ) -> Result<Response<wire::ScanRegionsResponse>, Status> {
        Ok(Response::new(rpc::scan_regions(&self.meta, r.into_inner())))
    }
}
