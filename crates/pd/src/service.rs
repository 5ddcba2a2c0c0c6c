//! The gRPC `Pd` service: today the `Tso` stream. Each request of `count` timestamps gets the
//! last of `count` consecutive ones. When a millisecond's logical space is used up the
//! request waits for the next tick and tries again, up to [`OVERFLOW_RETRIES`] times, as PD
//! does; then it answers `TSO_UNAVAILABLE` and the client backs off.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use proto::pd::pd_server::Pd;
use proto::pd::{
    Error, ErrorType, GetGcSafePointRequest, GetGcSafePointResponse, Timestamp, TsoRequest,
    TsoResponse, UpdateGcSafePointRequest, UpdateGcSafePointResponse,
};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use crate::gc_safe_point::GcSafePoint;
use crate::oracle::Oracle;
use crate::tso::TsoError;

pub const OVERFLOW_RETRIES: u32 = 10;

pub struct PdService {
    oracle: Arc<Oracle>,
    safe_point: Arc<GcSafePoint>,
    /// `tso-update-physical-interval`: how long an overflowed request waits to retry.
    update_interval: Duration,
}

impl PdService {
    pub fn new(
        oracle: Arc<Oracle>,
        safe_point: Arc<GcSafePoint>,
        update_interval: Duration,
    ) -> PdService {
        PdService {
            oracle,
            safe_point,
            update_interval,
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
}
