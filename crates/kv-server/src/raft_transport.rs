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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
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
}

impl RaftClient {
    /// A client whose connection tasks run on `runtime`.
    pub fn new(runtime: tokio::runtime::Handle, pd_endpoints: Vec<String>) -> RaftClient {
        RaftClient {
            inner: Arc::new(Inner {
                runtime,
                pd_endpoints,
                queues: Mutex::new(HashMap::new()),
            }),
        }
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
                let endpoints = self.inner.pd_endpoints.clone();
                self.inner.runtime.spawn(send_loop(store_id, endpoints, rx));
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

/// Resolves `store_id`'s address through PD and connects to it.
async fn connect(
    store_id: u64,
    endpoints: &[String],
) -> Result<RaftTransportClient<tonic::transport::Channel>, String> {
    let pd = pd_client::PdClient::connect(endpoints)
        .await
        .map_err(|e| e.to_string())?;
    let store = pd.get_store(store_id).await.map_err(|e| e.to_string())?;
    RaftTransportClient::connect(format!("http://{}", store.address))
        .await
        .map_err(|e| format!("store {store_id} at {}: {e}", store.address))
}

/// Keeps a stream open to `store_id` and sends what its queue holds, in batches.
async fn send_loop(store_id: u64, endpoints: Vec<String>, mut rx: mpsc::Receiver<RaftMessage>) {
    loop {
        let mut client = match connect(store_id, &endpoints).await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(store_id, "cannot reach the store for raft messages: {e}");
                // Messages queued meanwhile are stale by the time a stream opens.
                while rx.try_recv().is_ok() {}
                tokio::time::sleep(RECONNECT_WAIT).await;
                continue;
            }
        };
        let (batch_tx, batch_rx) = mpsc::channel::<RaftMessageBatch>(4);
        let call = tokio::spawn(async move {
            client
                .raft(tokio_stream::wrappers::ReceiverStream::new(batch_rx))
                .await
        });
        // Forward batches until the stream breaks or the queue closes.
        let closed = loop {
            let Some(first) = rx.recv().await else {
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
        if let Ok(Err(status)) = call.await {
            tracing::debug!(store_id, "raft stream ended: {status}");
        }
        if closed {
            return;
        }
        tokio::time::sleep(RECONNECT_WAIT).await;
    }
}
