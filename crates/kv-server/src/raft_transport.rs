//! Raft messages between kv nodes over gRPC (`RaftTransport` in `proto/raft.proto`).
//!
//! - [`RaftService`] receives: each batch of a stream goes to this node's raftstore router;
//!   a full router drops the message (Raft resends what matters).
//! - [`RaftClient`] sends: raftstore's [`Transport`] hands it messages on the raftstore
//!   thread without blocking; each destination store has a queue of at most
//!   [`RAFT_CLIENT_QUEUE_MAX`] messages (more are dropped) and a task on the client's own
//!   runtime that resolves the store's address through PD, keeps one stream open to it, and
//!   sends what queued up in batches of at most [`RAFT_MSG_BATCH_MAX`]. A broken stream is
//!   reopened after [`RECONNECT_WAIT`]; what was in flight is lost, as on any network.
//! - A store whose address refuses connections (nothing listens: its process is gone) is
//!   reported to raftstore as gone, so the followers of its leaders need not wait out the
//!   election timeout (`Peer::on_store_gone` says why that is safe). A timeout or a reset
//!   is not reported.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use proto::raft::raft_transport_client::RaftTransportClient;
use proto::raft::raft_transport_server::RaftTransport;
use proto::raft::{RaftDone, RaftMessage, RaftMessageBatch};
use raftstore::Transport;
use raftstore::driver::{RaftRouter, StoreMsg};
use tokio::sync::mpsc;
use tonic::{Request, Response, Status, Streaming};

/// Messages waiting for one destination store, at most (TiKV's `raft-client-queue-size`).
pub const RAFT_CLIENT_QUEUE_MAX: usize = 16_384;
/// Messages in one batch on the wire (TiKV's `raft-msg-max-batch-size`).
pub const RAFT_MSG_BATCH_MAX: usize = 256;
/// How long a sender waits before it reopens a stream that broke or never opened.
pub const RECONNECT_WAIT: Duration = Duration::from_millis(200);

pub struct RaftService {
    router: RaftRouter,
}

impl RaftService {
    pub fn new(router: RaftRouter) -> RaftService {
        RaftService { router }
    }
}

#[tonic::async_trait]
impl RaftTransport for RaftService {
    async fn raft(
        &self,
        request: Request<Streaming<RaftMessageBatch>>,
    ) -> Result<Response<RaftDone>, Status> {
        let mut stream = request.into_inner();
        while let Some(batch) = stream.message().await? {
            for msg in batch.msgs {
                // A full or stopped raftstore loses the message; Raft resends.
                let _ = self.router.send(StoreMsg::Raft(msg));
            }
        }
        Ok(Response::new(RaftDone {}))
    }
}

/// Sends Raft messages to other kv nodes.
#[derive(Clone)]
pub struct RaftClient {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: tokio::runtime::Handle,
    pd_endpoints: Vec<String>,
    queues: Mutex<HashMap<u64, mpsc::Sender<RaftMessage>>>,
    /// Where a store found gone is reported (set once raftstore runs).
    router: OnceLock<RaftRouter>,
}

impl RaftClient {
    /// A client whose connection tasks run on `runtime`.
    pub fn new(runtime: tokio::runtime::Handle, pd_endpoints: Vec<String>) -> RaftClient {
        RaftClient {
            inner: Arc::new(Inner {
                runtime,
                pd_endpoints,
                queues: Mutex::new(HashMap::new()),
                router: OnceLock::new(),
            }),
        }
    }

    /// Reports stores found gone to `router` from now on.
    pub fn set_router(&self, router: RaftRouter) {
        let _ = self.inner.router.set(router);
    }

    fn queue(&self, store_id: u64) -> mpsc::Sender<RaftMessage> {
        let mut queues = self
            .inner
            .queues
            .lock()
            .expect("raft client queues poisoned");
        queues
            .entry(store_id)
            .or_insert_with(|| {
                let (tx, rx) = mpsc::channel(RAFT_CLIENT_QUEUE_MAX);
                self.inner
                    .runtime
                    .spawn(send_loop(store_id, self.inner.clone(), rx));
                tx
            })
            .clone()
    }
}

impl Transport for RaftClient {
    fn send(&mut self, msg: RaftMessage) {
        let Some(to) = msg.to_peer.map(|p| p.store_id) else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = self.queue(to).try_send(msg) {
            tracing::debug!(store_id = to, "raft message queue full: dropped a message");
        }
    }
}

/// Why a store could not be reached.
enum Unreachable {
    /// Its address refused the connection: nothing listens there.
    Refused(String),
    Other(String),
}

/// Whether `e` (or what caused it) is a refused TCP connection.
fn is_refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// Resolves `store_id`'s address through PD and connects to it.
async fn connect(
    store_id: u64,
    endpoints: &[String],
) -> Result<RaftTransportClient<tonic::transport::Channel>, Unreachable> {
    let pd = pd_client::PdClient::connect(endpoints)
        .await
        .map_err(|e| Unreachable::Other(e.to_string()))?;
    let store = pd
        .get_store(store_id)
        .await
        .map_err(|e| Unreachable::Other(e.to_string()))?;
    RaftTransportClient::connect(format!("http://{}", store.address))
        .await
        .map_err(|e| {
            let why = format!("store {store_id} at {}: {e}", store.address);
            if is_refused(&e) {
                Unreachable::Refused(why)
            } else {
                Unreachable::Other(why)
            }
        })
}

/// Keeps a stream open to `store_id` and sends what its queue holds, in batches.
async fn send_loop(store_id: u64, inner: Arc<Inner>, mut rx: mpsc::Receiver<RaftMessage>) {
    loop {
        let mut client = match connect(store_id, &inner.pd_endpoints).await {
            Ok(c) => c,
            Err(e) => {
                let e = match e {
                    Unreachable::Refused(why) => {
                        if let Some(router) = inner.router.get() {
                            let _ = router.send(StoreMsg::StoreGone(store_id));
                        }
                        why
                    }
                    Unreachable::Other(why) => why,
                };
                tracing::debug!(store_id, "cannot reach the store for raft messages: {e}");
                // Messages queued meanwhile are stale by the time a stream opens.
                while rx.try_recv().is_ok() {}
                tokio::time::sleep(RECONNECT_WAIT).await;
                continue;
            }
        };
        let (batch_tx, batch_rx) = mpsc::channel::<RaftMessageBatch>(4);
        let mut call = tokio::spawn(async move {
            client
                .raft(tokio_stream::wrappers::ReceiverStream::new(batch_rx))
                .await
        });
        // Forward batches until the queue closes or the stream ends, which it does as soon as
        // the other process goes away, even with nothing to send (then the reconnect finds
        // out whether anything listens there still).
        let mut ended = None;
        let closed = loop {
            let first = tokio::select! {
                m = rx.recv() => m,
                r = &mut call => {
                    ended = Some(r);
                    break false;
                }
            };
            let Some(first) = first else {
                break true;
            };
            let mut msgs = vec![first];
            while msgs.len() < RAFT_MSG_BATCH_MAX {
                match rx.try_recv() {
                    Ok(m) => msgs.push(m),
                    Err(_) => break,
                }
            }
            if batch_tx.send(RaftMessageBatch { msgs }).await.is_err() {
                break false;
            }
        };
        drop(batch_tx);
        let ended = match ended {
            Some(r) => r,
            None => call.await,
        };
        if let Ok(Err(status)) = ended {
            tracing::debug!(store_id, "raft stream ended: {status}");
        }
        if closed {
            return;
        }
        tokio::time::sleep(RECONNECT_WAIT).await;
    }
}
