//! Raft traffic between PD members over gRPC (`PdPeer`, on the peer URL's port).
//!
//! Sending ([`GrpcTransport`]): one task per other member (started with the first message
//! for it, so a member that joins later is reached too; it ends when the member left)
//! keeps a stream open and sends its queue in batches; a full queue drops (Raft resends). When a member's port refuses the
//! connection (nothing listens there: its process is gone) the member hears it
//! ([`DriverHandle::member_gone`]) and may campaign at once; the task retries every
//! [`RECONNECT_WAIT`]. On each connection the sender first asks the other member who it is
//! (`Info`) and so learns its client URL.
//!
//! Receiving ([`PeerService`]): messages go to the driver; `Info` answers this member's name
//! and URLs.

use std::sync::Arc;
use std::time::Duration;

use proto::pd::pd_peer_client::PdPeerClient;
use proto::pd::pd_peer_server::PdPeer;
use proto::pd::{Member as WireMember, PdPeerDone, PdPeerInfoRequest, PdRaftBatch};
use protobuf::Message as _;
use raft::eraftpb::Message;
use tokio::sync::mpsc;
use tonic::{Request, Response, Status, Streaming};

use crate::driver::{DriverHandle, Transport};
use crate::members::{MemberInfo, Members};

/// How long a sender waits before it reconnects to a member it could not reach.
pub const RECONNECT_WAIT: Duration = Duration::from_millis(50);
/// Messages queued for one member; more are dropped.
pub const QUEUE_MAX: usize = 4096;
const BATCH_MAX: usize = 256;
/// The largest batch a member accepts: a snapshot holds the whole state (every region).
pub const MESSAGE_BYTES_MAX: usize = 1 << 30;

pub fn wire_member(m: &MemberInfo) -> WireMember {
    WireMember {
        name: m.name.clone(),
        member_id: m.id,
        peer_urls: vec![m.peer_url.clone()],
        client_urls: (!m.client_url.is_empty())
            .then(|| m.client_url.clone())
            .into_iter()
            .collect(),
    }
}

pub struct GrpcTransport {
    runtime: tokio::runtime::Handle,
    me: u64,
    members: Arc<Members>,
    driver: DriverHandle,
    queues: std::collections::HashMap<u64, mpsc::Sender<Vec<u8>>>,
}

impl GrpcTransport {
    /// Sends on `runtime`: a task per other member, started with the first message for it.
    pub fn start(
        runtime: &tokio::runtime::Handle,
        me: u64,
        members: Arc<Members>,
        driver: DriverHandle,
    ) -> GrpcTransport {
        GrpcTransport {
            runtime: runtime.clone(),
            me,
            members,
            driver,
            queues: std::collections::HashMap::new(),
        }
    }

    fn queue(&mut self, to: u64) -> Option<&mpsc::Sender<Vec<u8>>> {
        if to == self.me {
            return None;
        }
        if self.queues.get(&to).is_none_or(|q| q.is_closed()) {
            if !self.members.contains(to) {
                return None;
            }
            let (tx, rx) = mpsc::channel(QUEUE_MAX);
            let task = send_loop(to, self.members.clone(), self.driver.clone(), rx);
            self.runtime.spawn(task);
            self.queues.insert(to, tx);
        }
        self.queues.get(&to)
    }
}

impl Transport for GrpcTransport {
    fn send(&mut self, msgs: Vec<Message>) {
        // A member that left: its task ends when its queue closes.
        let members = &self.members;
        self.queues.retain(|id, _| members.contains(*id));
        for m in msgs {
            let Some(queue) = self.queue(m.to) else {
                continue;
            };
            let bytes = m.write_to_bytes().expect("encoding a raft message");
            if queue.try_send(bytes).is_err() {
                tracing::debug!(to = m.to, "pd raft queue full: dropped a message");
            }
        }
    }
}

/// Keeps a stream open to member `to` while it is a member, and sends its queue.
async fn send_loop(
    to: u64,
    members: Arc<Members>,
    driver: DriverHandle,
    mut rx: mpsc::Receiver<Vec<u8>>,
) {
    loop {
        let Some(to) = members.get(to) else {
            return;
        };
        let url = format!("http://{}", config::value::strip_scheme(&to.peer_url));
        let Ok(endpoint) = tonic::transport::Endpoint::from_shared(url) else {
            tracing::error!(member = to.name, "not a peer URL: {}", to.peer_url);
            return;
        };
        // Pings break a stream to a member that stopped answering (a partition, a paused
        // process), so that the next connection finds it as soon as it is back.
        let endpoint = endpoint
            .connect_timeout(Duration::from_secs(1))
            .http2_keep_alive_interval(Duration::from_millis(base::limits::KEEPALIVE_INTERVAL_MS))
            .keep_alive_timeout(Duration::from_millis(base::limits::KEEPALIVE_TIMEOUT_MS))
            .tcp_nodelay(true);
        let mut client = match security::connect(endpoint).await {
            Ok(channel) => PdPeerClient::new(channel),
            Err(e) => {
                if base::net::is_connection_refused(&e) {
                    driver.member_gone(to.id);
                }
                tracing::debug!(member = to.name, "cannot reach pd member: {e}");
                while rx.try_recv().is_ok() {}
                tokio::time::sleep(RECONNECT_WAIT).await;
                continue;
            }
        };
        match client.info(PdPeerInfoRequest {}).await {
            Ok(info) => {
                if let Some(url) = info.into_inner().client_urls.first() {
                    members.learn_client_url(to.id, url);
                }
            }
            Err(e) => {
                tracing::debug!(member = to.name, "pd member did not say who it is: {e}");
                tokio::time::sleep(RECONNECT_WAIT).await;
                continue;
            }
        }
        let (batch_tx, batch_rx) = mpsc::channel::<PdRaftBatch>(4);
        let mut call = tokio::spawn(async move {
            client
                .raft(tokio_stream::wrappers::ReceiverStream::new(batch_rx))
                .await
        });
        // Until the queue closes or the stream ends (at once when the other process goes).
        let closed = loop {
            let first = tokio::select! {
                m = rx.recv() => m,
                _ = &mut call => break false,
            };
            let Some(first) = first else { break true };
            let mut msgs = vec![first];
            while msgs.len() < BATCH_MAX {
                match rx.try_recv() {
                    Ok(m) => msgs.push(m),
                    Err(_) => break,
                }
            }
            if batch_tx.send(PdRaftBatch { msgs }).await.is_err() {
                break false;
            }
        };
        if closed {
            return;
        }
    }
}

/// The receiving side: the `PdPeer` service.
pub struct PeerService {
    driver: DriverHandle,
    me: MemberInfo,
}

impl PeerService {
    pub fn new(driver: DriverHandle, me: MemberInfo) -> PeerService {
        PeerService { driver, me }
    }
}

#[tonic::async_trait]
impl PdPeer for PeerService {
    async fn raft(
        &self,
        request: Request<Streaming<PdRaftBatch>>,
    ) -> Result<Response<PdPeerDone>, Status> {
        let mut batches = request.into_inner();
        while let Some(batch) = batches.message().await? {
            for bytes in batch.msgs {
                match Message::parse_from_bytes(&bytes) {
                    Ok(m) => self.driver.step(m),
                    Err(e) => {
                        return Err(Status::invalid_argument(format!("not a raft message: {e}")));
                    }
                }
            }
        }
        Ok(Response::new(PdPeerDone {}))
    }

    async fn info(&self, _: Request<PdPeerInfoRequest>) -> Result<Response<WireMember>, Status> {
        Ok(Response::new(wire_member(&self.me)))
    }
}
