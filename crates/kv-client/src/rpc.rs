//! Sending a request to the region that holds its keys: one gRPC connection per kv node
//! (opened lazily, gzip when configured), the request's `Context` filled from the route, and
//! the region errors handled as TiDB does: `ServerIsBusy` waits and retries the same node,
//! `EpochNotMatch` takes the node's regions into the cache, every other region error or an
//! unreachable node drops the cached region; either way the caller routes its keys again.

use std::collections::HashMap;
use std::future::Future;
use std::sync::RwLock;

use proto::kv::kv_client::KvClient;
use proto::kv::*;
use tonic::codec::CompressionEncoding;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Response, Status};

use crate::backoff::{Backoff, BackoffKind};
use crate::error::{KvError, Result};
use crate::region_cache::{RegionCache, Route};

/// A kv request type: where its context is, how to send it, where its region error is.
pub trait KvCall: Clone + Send + 'static {
    type Resp: Send + 'static;
    fn context(&mut self) -> &mut Option<Context>;
    fn send(
        client: KvClient<Channel>,
        req: Self,
    ) -> impl Future<Output = std::result::Result<Response<Self::Resp>, Status>> + Send;
    fn region_error(resp: &Self::Resp) -> Option<&RegionError>;
}

macro_rules! kv_call {
    ($req:ty, $resp:ty, $method:ident) => {
        impl KvCall for $req {
            type Resp = $resp;
            fn context(&mut self) -> &mut Option<Context> {
                &mut self.context
            }
            async fn send(
                mut client: KvClient<Channel>,
                req: Self,
            ) -> std::result::Result<Response<$resp>, Status> {
                client.$method(req).await
            }
            fn region_error(resp: &$resp) -> Option<&RegionError> {
                resp.region_error.as_ref()
            }
        }
    };
}

kv_call!(GetRequest, GetResponse, kv_get);
kv_call!(BatchGetRequest, BatchGetResponse, kv_batch_get);
kv_call!(ScanRequest, ScanResponse, kv_scan);
kv_call!(PrewriteRequest, PrewriteResponse, kv_prewrite);
kv_call!(CommitRequest, CommitResponse, kv_commit);
kv_call!(
    PessimisticLockRequest,
    PessimisticLockResponse,
    kv_pessimistic_lock
);
kv_call!(
    BatchRollbackRequest,
    BatchRollbackResponse,
    kv_batch_rollback
);
kv_call!(
    CheckTxnStatusRequest,
    CheckTxnStatusResponse,
    kv_check_txn_status
);
kv_call!(ResolveLockRequest, ResolveLockResponse, kv_resolve_lock);
kv_call!(TxnHeartBeatRequest, TxnHeartBeatResponse, kv_txn_heart_beat);
kv_call!(ScanLockRequest, ScanLockResponse, kv_scan_lock);
kv_call!(CoprocessorRequest, CoprocessorResponse, coprocessor);

/// What became of one send.
pub enum Sent<T> {
    Done(T),
    /// The route was wrong or the node unreachable; the cache is updated: route again.
    Reroute,
}

pub struct Connections {
    clients: RwLock<HashMap<String, KvClient<Channel>>>,
    compression: Option<CompressionEncoding>,
}

impl Connections {
    /// `compression`: `tikv-client.grpc-compression-type` (`none` or `gzip`).
    pub fn new(compression: &str) -> Result<Connections> {
        let compression = match compression {
            "none" | "" => None,
            "gzip" => Some(CompressionEncoding::Gzip),
            other => {
                return Err(KvError::Invalid(format!(
                    "grpc compression type {other:?}: expected none or gzip"
                )));
            }
        };
        Ok(Connections {
            clients: RwLock::new(HashMap::new()),
            compression,
        })
    }

    fn client(&self, address: &str) -> Result<KvClient<Channel>> {
        if let Some(c) = self
            .clients
            .read()
            .expect("connections lock poisoned")
            .get(address)
        {
            return Ok(c.clone());
        }
        let endpoint = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|e| KvError::Invalid(format!("kv address {address}: {e}")))?
            .connect_timeout(std::time::Duration::from_secs(3))
            .timeout(std::time::Duration::from_secs(20))
            .tcp_nodelay(true);
        let mut client = KvClient::new(endpoint.connect_lazy())
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(64 << 20);
        if let Some(c) = self.compression {
            client = client.send_compressed(c);
        }
        self.clients
            .write()
            .expect("connections lock poisoned")
            .insert(address.to_string(), client.clone());
        Ok(client)
    }
}

/// Sends `req` along `route`, retrying on the same node while it is busy.
pub async fn send<R: KvCall>(
    cache: &RegionCache,
    conns: &Connections,
    bo: &Backoff,
    route: &Route,
    mut req: R,
) -> Result<Sent<R::Resp>> {
    {
        let ctx = req.context().get_or_insert_with(Context::default);
        ctx.region_id = route.region.id;
        ctx.region_epoch = route.region.region_epoch;
        ctx.peer = Some(route.leader);
    }
    loop {
        let client = conns.client(&route.address)?;
        let resp = match R::send(client, req.clone()).await {
            Ok(r) => r.into_inner(),
            Err(status) if is_transport(&status) => {
                cache.invalidate(route.region.id, Some(route.leader.store_id));
                bo.wait(
                    BackoffKind::KvRpc,
                    format!("kv node {} did not answer: {status}", route.address),
                )
                .await?;
                return Ok(Sent::Reroute);
            }
            Err(status) => {
                return Err(KvError::Server(format!(
                    "{}: {}: {}",
                    route.address,
                    status.code(),
                    status.message()
                )));
            }
        };
        let Some(e) = R::region_error(&resp) else {
            return Ok(Sent::Done(resp));
        };
        if e.server_is_busy.is_some() {
            bo.wait(BackoffKind::ServerBusy, &e.message).await?;
            continue;
        }
        match &e.epoch_not_match {
            Some(m) if !m.current_regions.is_empty() => {
                cache.invalidate(route.region.id, None);
                cache.update(&m.current_regions, &route.leader);
            }
            _ => cache.invalidate(route.region.id, None),
        }
        bo.wait(BackoffKind::RegionMiss, &e.message).await?;
        return Ok(Sent::Reroute);
    }
}

/// Errors where the request may not have reached the node (or its answer was lost).
fn is_transport(s: &Status) -> bool {
    matches!(
        s.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown
    )
}

/// Sends a request about `key` to whichever region holds it.
pub async fn send_on_key<R: KvCall>(
    cache: &RegionCache,
    conns: &Connections,
    bo: &Backoff,
    key: &[u8],
    req: R,
) -> Result<R::Resp> {
    loop {
        let route = cache.locate(key).await?;
        if let Sent::Done(r) = send(cache, conns, bo, &route, req.clone()).await? {
            return Ok(r);
        }
    }
}
