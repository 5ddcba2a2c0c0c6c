//! Sending a request to the region that holds its keys: one gRPC connection per kv node
//! (opened lazily, gzip when configured; through the node's unix socket when it runs on
//! this machine, see [`proto::local_socket`]) carrying one batch stream ([`crate::batch`]) that
//! every request to the node shares, the request's `Context` filled from the route, and
//! the region errors handled as TiDB does: `ServerIsBusy` waits and retries the same node,
//! `EpochNotMatch` takes the node's regions into the cache, every other region error or an
//! unreachable node drops the cached region; either way the caller routes its keys again.

use std::collections::HashMap;
use std::sync::RwLock;

use base::limits::KV_STREAM_WINDOW_BYTES;
use proto::kv::batch_commands_request::request::Cmd as RequestCmd;
use proto::kv::batch_commands_response::response::Cmd as ResponseCmd;
use proto::kv::kv_client::KvClient;
use proto::kv::*;
use tonic::codec::CompressionEncoding;
use tonic::transport::Endpoint;
use tonic::{Code, Status};

use crate::backoff::{Backoff, BackoffKind};
use crate::batch::BatchStream;
use crate::error::{KvError, Result};
use crate::region_cache::{RegionCache, Route};

/// A kv request type: where its context is, how it travels in a batch message, where its
/// region error is.
pub trait KvCall: Clone + Send + 'static {
    type Resp: Send + 'static;
    fn context(&mut self) -> &mut Option<Context>;
    fn into_cmd(self) -> RequestCmd;
    /// The answer, when `cmd` is this request's kind of answer.
    fn answer(cmd: ResponseCmd) -> Option<Self::Resp>;
    fn region_error(resp: &Self::Resp) -> Option<&RegionError>;
}

macro_rules! kv_call {
    ($req:ty, $resp:ty, $cmd:ident) => {
        impl KvCall for $req {
            type Resp = $resp;
            fn context(&mut self) -> &mut Option<Context> {
                &mut self.context
            }
            fn into_cmd(self) -> RequestCmd {
                RequestCmd::$cmd(self)
            }
            fn answer(cmd: ResponseCmd) -> Option<$resp> {
                match cmd {
                    ResponseCmd::$cmd(r) => Some(r),
                    _ => None,
                }
            }
            fn region_error(resp: &$resp) -> Option<&RegionError> {
                resp.region_error.as_ref()
            }
        }
    };
}

kv_call!(GetRequest, GetResponse, Get);
kv_call!(BatchGetRequest, BatchGetResponse, BatchGet);
kv_call!(ScanRequest, ScanResponse, Scan);
kv_call!(PrewriteRequest, PrewriteResponse, Prewrite);
kv_call!(CommitRequest, CommitResponse, Commit);
kv_call!(
    PessimisticLockRequest,
    PessimisticLockResponse,
    PessimisticLock
);
kv_call!(BatchRollbackRequest, BatchRollbackResponse, BatchRollback);
kv_call!(
    CheckTxnStatusRequest,
    CheckTxnStatusResponse,
    CheckTxnStatus
);
kv_call!(ResolveLockRequest, ResolveLockResponse, ResolveLock);
kv_call!(TxnHeartBeatRequest, TxnHeartBeatResponse, TxnHeartBeat);
kv_call!(ScanLockRequest, ScanLockResponse, ScanLock);
kv_call!(CoprocessorRequest, CoprocessorResponse, Coprocessor);
kv_call!(SplitRegionRequest, SplitRegionResponse, SplitRegion);

/// What became of one send.
pub enum Sent<T> {
    Done(T),
    /// The route was wrong or the node unreachable; the cache is updated: route again.
    Reroute,
}

pub struct Connections {
    streams: RwLock<HashMap<String, BatchStream>>,
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
            streams: RwLock::new(HashMap::new()),
            compression,
        })
    }

    /// The batch stream to the kv node at `address`, opened now if there is none or the last
    /// one broke.
    fn stream(&self, address: &str) -> Result<BatchStream> {
        if let Some(s) = self
            .streams
            .read()
            .expect("connections lock poisoned")
            .get(address)
            .filter(|s| s.is_open())
        {
            return Ok(s.clone());
        }
        let mut streams = self.streams.write().expect("connections lock poisoned");
        if let Some(s) = streams.get(address).filter(|s| s.is_open()) {
            return Ok(s.clone());
        }
        // Per-request timeouts are the batch stream's (a stream itself lives on); keepalive
        // pings find a silently dead node.
        let endpoint = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|e| KvError::Invalid(format!("kv address {address}: {e}")))?
            .connect_timeout(std::time::Duration::from_secs(3))
            .http2_keep_alive_interval(std::time::Duration::from_millis(
                base::limits::KEEPALIVE_INTERVAL_MS,
            ))
            .keep_alive_timeout(std::time::Duration::from_millis(
                base::limits::KEEPALIVE_TIMEOUT_MS,
            ))
            .initial_stream_window_size(KV_STREAM_WINDOW_BYTES)
            .initial_connection_window_size(KV_STREAM_WINDOW_BYTES)
            .tcp_nodelay(true);
        // A node on this machine is reached through its unix socket; should it go away, the
        // stream breaks and the next call decides again.
        let channel = match proto::local_socket::connect(address) {
            Ok(_probe) => {
                let address = address.to_string();
                endpoint.connect_with_connector_lazy(tower::service_fn(move |_| {
                    let connected = proto::local_socket::connect(&address)
                        .and_then(tokio::net::UnixStream::from_std)
                        .map(hyper_util::rt::TokioIo::new);
                    std::future::ready(connected)
                }))
            }
            Err(_) => security::connect_lazy(endpoint),
        };
        let mut client = KvClient::new(channel)
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(64 << 20);
        if let Some(c) = self.compression {
            client = client.send_compressed(c);
        }
        let stream = BatchStream::open(client);
        streams.insert(address.to_string(), stream.clone());
        Ok(stream)
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
        let stream = conns.stream(&route.address)?;
        let resp = match stream.call(req.clone().into_cmd()).await.map(R::answer) {
            Ok(Some(r)) => r,
            Ok(None) => {
                return Err(KvError::Server(format!(
                    "{}: answered a different kind of request",
                    route.address
                )));
            }
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
        let hinted_leader = e.not_leader.as_ref().and_then(|n| n.leader);
        match (&e.epoch_not_match, hinted_leader) {
            (Some(m), _) if !m.current_regions.is_empty() => {
                cache.invalidate(route.region.id, None);
                cache.update(&m.current_regions, &route.leader);
            }
            // The node named the leader it knows: try there next instead of asking PD,
            // whose view lags a leader change by a heartbeat.
            (_, Some(leader)) if leader.store_id != route.leader.store_id => {
                cache.invalidate(route.region.id, None);
                cache.update(std::slice::from_ref(&route.region), &leader);
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
