//! Raft messages between kv nodes over gRPC (`RaftTransport` in `proto/raft.proto`).
//!
//! - [`RaftService`] receives: each batch of a stream goes to this node's raftstore router;
//!   a full router drops the message (Raft resends what matters).
//! - [`RaftClient`] sends: raftstore's [`Transport`] hands it messages on the raftstore
//!   thread without blocking; each destination store has a queue of at most
//!   [`RAFT_CLIENT_QUEUE_MAX`] messages (more are dropped) and a task on the client's own
//!   runtime that resolves the store's address through PD, keeps one stream open to it, and
//!   sends what queued up in batches of at most [`RAFT_MSG_BATCH_MAX`] messages and about
//!   [`RAFT_MSG_BATCH_BYTES_MAX`] bytes. A broken stream is
//!   reopened after [`RECONNECT_WAIT`]; what was in flight is lost, as on any network. A
//!   stream whose store stopped answering breaks by itself: keepalive pings go out every
//!   `base::limits::KEEPALIVE_INTERVAL_MS` ([`endpoint`]).
//! - A store whose address refuses connections (nothing listens: its process is gone) is
//!   reported to raftstore as gone, so the followers of its leaders need not wait out the
//!   election timeout (`Peer::on_store_gone` says why that is safe). A timeout or a reset
//!   is not reported.
//! - A snapshot (MsgSnapshot) goes on a `Snapshot` stream of its own: the message, then its
//!   file (`raftstore::snapshot`) in chunks of [`SNAPSHOT_CHUNK_BYTES`], paced to
//!   `server.snap-io-max-bytes-per-sec` across all of this node's transfers. At most
//!   `server.concurrent-send-snap-limit` go out and `concurrent-recv-snap-limit` come in at
//!   once; one over the limit is refused, and a snapshot already on its way to a store is
//!   not sent to it twice. The receiver writes the file under a name of its own transfer,
//!   renames it to the snapshot's once the stream ended whole, and only then hands the
//!   message to raftstore. Whether a send was delivered is reported to raftstore, whose
//!   leader sends the snapshot again after a failure. Files are read and written with
//!   tokio's file API, off the runtimes' worker threads.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use proto::raft::raft_transport_client::RaftTransportClient;
use proto::raft::raft_transport_server::RaftTransport;
use proto::raft::{RaftDone, RaftMessage, RaftMessageBatch, SnapshotChunk};
use raftstore::Transport;
use raftstore::driver::{RaftRouter, StoreMsg};
use raftstore::snapshot::{SNAPSHOT_BYTES_MAX, SnapKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tonic::{Request, Response, Status, Streaming};

/// Messages waiting for one destination store, at most (TiKV's `raft-client-queue-size`).
pub const RAFT_CLIENT_QUEUE_MAX: usize = 16_384;
/// Messages in one batch on the wire (TiKV's `raft-msg-max-batch-size`).
pub const RAFT_MSG_BATCH_MAX: usize = 256;
/// A batch takes no more messages once it holds this many bytes; with the last message
/// (at most `raft-max-size-per-msg` of entries, or one entry of up to `raft-entry-max-size`)
/// it stays far below what the receiver accepts (64 MiB, `grpc.rs`).
pub const RAFT_MSG_BATCH_BYTES_MAX: usize = 16 << 20;
/// How long a sender waits before it reopens a stream that broke or never opened.
pub const RECONNECT_WAIT: Duration = Duration::from_millis(200);
/// How long a sender waits for a store to accept a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Bytes of a snapshot file in one chunk (TiKV sends 1 MiB chunks too).
pub const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;

/// `server.snap-io-max-bytes-per-sec` (0: no limit) and the concurrent send and receive
/// limits (online), with the transfers under way.
pub struct SnapLimits {
    bytes_per_sec: AtomicU64,
    send_limit: AtomicUsize,
    recv_limit: AtomicUsize,
    sending: AtomicUsize,
    receiving: AtomicUsize,
    /// When the node's byte budget is next free: the rate spans every transfer.
    next_free: Mutex<Instant>,
    /// Numbers the receiving transfers' files.
    transfers: AtomicU64,
    /// Snapshots sent and delivered, sent and failed, received whole (for `/metrics`).
    pub sent: AtomicU64,
    pub send_failures: AtomicU64,
    pub received: AtomicU64,
}

/// A transfer's place among the concurrent ones; dropping it frees the place.
struct SnapSlot(Arc<SnapLimits>, bool);

impl Drop for SnapSlot {
    fn drop(&mut self) {
        let counter = if self.1 {
            &self.0.sending
        } else {
            &self.0.receiving
        };
        counter.fetch_sub(1, Ordering::AcqRel);
    }
}

impl SnapLimits {
    pub fn new(c: &config::Config) -> Arc<SnapLimits> {
        let limits = Arc::new(SnapLimits {
            bytes_per_sec: AtomicU64::new(0),
            send_limit: AtomicUsize::new(0),
            recv_limit: AtomicUsize::new(0),
            sending: AtomicUsize::new(0),
            receiving: AtomicUsize::new(0),
            next_free: Mutex::new(Instant::now()),
            transfers: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            send_failures: AtomicU64::new(0),
            received: AtomicU64::new(0),
        });
        limits.configure(c);
        limits
    }

    /// Follows online changes of `server.snap-io-max-bytes-per-sec` and the limits.
    pub fn follow_config(self: &Arc<Self>, controller: &config::ConfigController) {
        let limits = Arc::downgrade(self);
        for knob in [
            "server.snap-io-max-bytes-per-sec",
            "server.concurrent-send-snap-limit",
            "server.concurrent-recv-snap-limit",
        ] {
            let limits = limits.clone();
            controller.subscribe(
                knob,
                Box::new(move |c, _| {
                    if let Some(l) = limits.upgrade() {
                        l.configure(c);
                    }
                    Ok(())
                }),
            );
        }
    }

    fn configure(&self, c: &config::Config) {
        let rate = c.size("server.snap-io-max-bytes-per-sec").bytes();
        self.bytes_per_sec.store(rate, Ordering::Relaxed);
        // What the old rate booked ahead does not hold the new one back.
        *self.next_free.lock().expect("snapshot pacing poisoned") = Instant::now();
        let limit = |knob| c.int(knob) as usize;
        self.send_limit.store(
            limit("server.concurrent-send-snap-limit"),
            Ordering::Relaxed,
        );
        self.recv_limit.store(
            limit("server.concurrent-recv-snap-limit"),
            Ordering::Relaxed,
        );
    }

    /// A place for one more send (`sending`) or receive, if the limit leaves one.
    fn try_slot(self: &Arc<Self>, sending: bool) -> Option<SnapSlot> {
        let (counter, limit) = if sending {
            (&self.sending, &self.send_limit)
        } else {
            (&self.receiving, &self.recv_limit)
        };
        let taken = counter.fetch_add(1, Ordering::AcqRel);
        let slot = SnapSlot(self.clone(), sending);
        (taken < limit.load(Ordering::Relaxed)).then_some(slot)
    }

    /// Waits until `bytes` more may go at the configured rate.
    async fn pace(&self, bytes: usize) {
        let rate = self.bytes_per_sec.load(Ordering::Relaxed) as f64;
        if rate == 0.0 {
            return;
        }
        let start = {
            let mut next = self.next_free.lock().expect("snapshot pacing poisoned");
            let start = (*next).max(Instant::now());
            *next = start + Duration::from_secs_f64(bytes as f64 / rate);
            start
        };
        tokio::time::sleep_until(start.into()).await;
    }
}

pub struct RaftService {
    router: RaftRouter,
    snap_dir: PathBuf,
    limits: Arc<SnapLimits>,
    /// The node stops (the kv service's flag): message streams end, so the server's
    /// graceful shutdown does not wait for streams other stores keep open.
    stopping: Arc<tokio::sync::watch::Sender<bool>>,
}

impl RaftService {
    pub fn new(
        router: RaftRouter,
        snap_dir: PathBuf,
        limits: Arc<SnapLimits>,
        stopping: Arc<tokio::sync::watch::Sender<bool>>,
    ) -> RaftService {
        RaftService {
            router,
            snap_dir,
            limits,
            stopping,
        }
    }

    /// Writes the stream's file where raftstore looks for it; the snapshot's message.
    async fn receive_snapshot(
        &self,
        mut stream: Streaming<SnapshotChunk>,
    ) -> Result<RaftMessage, Status> {
        let first = stream
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("an empty snapshot stream"))?;
        let msg = first
            .message
            .ok_or_else(|| Status::invalid_argument("the first chunk carries no raft message"))?;
        let key = SnapKey::of_message(&msg)
            .ok_or_else(|| Status::invalid_argument("the message is not a snapshot"))?;
        let transfer = self.limits.transfers.fetch_add(1, Ordering::Relaxed);
        let receiving = key.receiving_path(&self.snap_dir, transfer);
        let written = match write_chunks(&receiving, first.data, &mut stream).await {
            Ok(()) => tokio::fs::rename(&receiving, key.received_path(&self.snap_dir))
                .await
                .map_err(|e| Status::internal(format!("{}: {e}", receiving.display()))),
            Err(e) => Err(e),
        };
        if written.is_err() {
            let _ = tokio::fs::remove_file(&receiving).await;
        }
        written.map(|()| msg)
    }
}

/// Writes `first` and the stream's further chunks to `path`, at most
/// [`SNAPSHOT_BYTES_MAX`] bytes.
async fn write_chunks(
    path: &std::path::Path,
    first: Vec<u8>,
    stream: &mut Streaming<SnapshotChunk>,
) -> Result<(), Status> {
    let failed = |e: std::io::Error| Status::internal(format!("{}: {e}", path.display()));
    let mut file = tokio::fs::File::create(path).await.map_err(failed)?;
    let mut bytes = 0;
    let mut chunk = first;
    loop {
        bytes += chunk.len();
        if bytes > SNAPSHOT_BYTES_MAX {
            return Err(Status::invalid_argument(format!(
                "a snapshot file above {SNAPSHOT_BYTES_MAX} bytes"
            )));
        }
        file.write_all(&chunk).await.map_err(failed)?;
        match stream.message().await? {
            Some(next) if next.message.is_none() => chunk = next.data,
            Some(_) => return Err(Status::invalid_argument("a second raft message")),
            None => break,
        }
    }
    file.flush().await.map_err(failed)
}

#[tonic::async_trait]
impl RaftTransport for RaftService {
    async fn raft(
        &self,
        request: Request<Streaming<RaftMessageBatch>>,
    ) -> Result<Response<RaftDone>, Status> {
        let mut stream = request.into_inner();
        let mut stopping = self.stopping.subscribe();
        loop {
            let batch = tokio::select! {
                batch = stream.message() => batch?,
                _ = stopping.wait_for(|stopping| *stopping) => None,
            };
            let Some(batch) = batch else { break };
            for msg in batch.msgs {
                // A full or stopped raftstore loses the message; Raft resends.
                let _ = self.router.send(StoreMsg::Raft(msg));
            }
        }
        Ok(Response::new(RaftDone {}))
    }

    async fn snapshot(
        &self,
        request: Request<Streaming<SnapshotChunk>>,
    ) -> Result<Response<RaftDone>, Status> {
        let Some(_slot) = self.limits.try_slot(false) else {
            return Err(Status::resource_exhausted(
                "too many snapshots coming in (server.concurrent-recv-snap-limit)",
            ));
        };
        let msg = self.receive_snapshot(request.into_inner()).await?;
        self.limits.received.fetch_add(1, Ordering::Relaxed);
        // raftstore checks the file's size and CRC32 before raft-rs sees the message.
        let _ = self.router.send(StoreMsg::Raft(msg));
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
    snap_dir: PathBuf,
    limits: Arc<SnapLimits>,
    /// Snapshots on their way, with the store each goes to.
    sending: Mutex<HashSet<(SnapKey, u64)>>,
    queues: Mutex<HashMap<u64, mpsc::Sender<RaftMessage>>>,
    /// Where a store found gone is reported (set once raftstore runs).
    router: OnceLock<RaftRouter>,
}

impl RaftClient {
    /// A client whose connection tasks run on `runtime`; snapshot files come from
    /// `snap_dir`.
    pub fn new(
        runtime: tokio::runtime::Handle,
        pd_endpoints: Vec<String>,
        snap_dir: PathBuf,
        limits: Arc<SnapLimits>,
    ) -> RaftClient {
        RaftClient {
            inner: Arc::new(Inner {
                runtime,
                pd_endpoints,
                snap_dir,
                limits,
                sending: Mutex::new(HashSet::new()),
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
        if let Some(key) = SnapKey::of_message(&msg) {
            let sending = &self.inner.sending;
            if !sending
                .lock()
                .expect("snapshot sends poisoned")
                .insert((key, to))
            {
                return; // A resend while the first is still on its way.
            }
            let inner = self.inner.clone();
            self.inner.runtime.spawn(async move {
                let sent = send_snapshot(to, &inner, &msg, key).await;
                let sending = &inner.sending;
                sending
                    .lock()
                    .expect("snapshot sends poisoned")
                    .remove(&(key, to));
                match &sent {
                    Ok(()) => inner.limits.sent.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        tracing::warn!(
                            store_id = to,
                            region_id = key.region_id,
                            "sending a snapshot failed: {e}"
                        );
                        inner.limits.send_failures.fetch_add(1, Ordering::Relaxed)
                    }
                };
                if let (Some(router), Some(peer)) = (inner.router.get(), msg.to_peer) {
                    let _ = router.send(StoreMsg::SnapshotSent {
                        region_id: key.region_id,
                        to_peer_id: peer.id,
                        delivered: sent.is_ok(),
                    });
                }
            });
            return;
        }
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
    let endpoint = endpoint(&store.address).map_err(|e| Unreachable::Other(e.to_string()))?;
    security::connect(endpoint)
        .await
        .map(RaftTransportClient::new)
        .map_err(|e| {
            let why = format!("store {store_id} at {}: {e}", store.address);
            if base::net::is_connection_refused(&e) {
                Unreachable::Refused(why)
            } else {
                Unreachable::Other(why)
            }
        })
}

/// How a kv node reaches another: a connection attempt gives up after
/// [`CONNECT_TIMEOUT`], and pings find a store that stopped answering (module header).
fn endpoint(address: &str) -> Result<tonic::transport::Endpoint, tonic::transport::Error> {
    Ok(
        tonic::transport::Endpoint::from_shared(format!("http://{address}"))?
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(Duration::from_millis(base::limits::KEEPALIVE_INTERVAL_MS))
            .keep_alive_timeout(Duration::from_millis(base::limits::KEEPALIVE_TIMEOUT_MS))
            .tcp_nodelay(true),
    )
}

/// Sends `msg` (a MsgSnapshot) and the file of snapshot `key` to `store_id` (module header).
async fn send_snapshot(
    store_id: u64,
    inner: &Inner,
    msg: &RaftMessage,
    key: SnapKey,
) -> Result<(), String> {
    let _slot = inner
        .limits
        .try_slot(true)
        .ok_or("too many snapshots going out (server.concurrent-send-snap-limit)")?;
    let path = key.generated_path(&inner.snap_dir);
    let mut file = tokio::fs::File::open(&path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut client = match connect(store_id, &inner.pd_endpoints).await {
        Ok(c) => c,
        Err(Unreachable::Refused(why) | Unreachable::Other(why)) => return Err(why),
    };
    let (tx, rx) = mpsc::channel::<SnapshotChunk>(2);
    let call = tokio::spawn(async move {
        client
            .snapshot(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
    });
    let mut message = Some(msg.clone());
    let mut buf = vec![0; SNAPSHOT_CHUNK_BYTES];
    loop {
        let n = file
            .read(&mut buf)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 && message.is_none() {
            break;
        }
        inner.limits.pace(n).await;
        let chunk = SnapshotChunk {
            message: message.take(),
            data: buf[..n].to_vec(),
        };
        if tx.send(chunk).await.is_err() || n == 0 {
            break;
        }
    }
    drop(tx);
    match call.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(status)) => Err(status.to_string()),
        Err(e) => Err(e.to_string()),
    }
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
            let mut bytes = first.message.len();
            let mut msgs = vec![first];
            while msgs.len() < RAFT_MSG_BATCH_MAX && bytes < RAFT_MSG_BATCH_BYTES_MAX {
                match rx.try_recv() {
                    Ok(m) => {
                        bytes += m.message.len();
                        msgs.push(m);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A host behind a partition, as far as a stream already open to it can tell: nothing
    /// comes back. (Its kernel still takes the bytes here, so TCP never gives up; behind a
    /// real partition TCP gives up only after minutes.)
    async fn silent_store() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut sink = vec![0u8; 64 << 10];
                    while socket.read(&mut sink).await.is_ok_and(|n| n > 0) {}
                });
            }
        });
        address
    }

    /// `atoll nemesis` found regions (and a merge holding its source frozen) stalled ~6 s
    /// after a partition healed: the raft streams to the cut-off store looked open
    /// throughout, and resumed only at TCP's next retransmission.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_raft_stream_to_a_store_that_stopped_answering_breaks_by_itself() {
        let address = silent_store().await;
        let channel = security::connect(endpoint(&address).unwrap())
            .await
            .unwrap();
        let mut client = RaftTransportClient::new(channel);
        let (tx, rx) = mpsc::channel::<RaftMessageBatch>(1);
        tx.send(RaftMessageBatch { msgs: Vec::new() })
            .await
            .unwrap();
        let call = client.raft(tokio_stream::wrappers::ReceiverStream::new(rx));
        // Pings find the silence within interval + timeout; the bound leaves room for a
        // busy machine. Without pings the call waits forever.
        let bound = Duration::from_millis(
            4 * (base::limits::KEEPALIVE_INTERVAL_MS + base::limits::KEEPALIVE_TIMEOUT_MS),
        );
        let answer = tokio::time::timeout(bound, call).await;
        assert!(
            matches!(answer, Ok(Err(_))),
            "the stream did not break within {bound:?}: {answer:?}"
        );
        drop(tx);
    }
}
