//! The TSO batcher: one task owns the `Tso` stream. Callers queue a one-shot reply; the task
//! takes every queued caller (up to [`MAX_BATCH`]), optionally waits `max_wait` for more
//! (ending the wait early once the batch is as big as the last one: every caller that was
//! active is back, so waiting longer only adds latency, as PD's client estimates too),
//! asks PD for that many timestamps in one request, and hands them out in queue order (PD
//! names the last of `count` consecutive timestamps). A broken stream is reopened, on the
//! leader found again, and the batch asked again until [`crate::RPC_TIMEOUT`] has passed (a
//! PD leader change costs callers latency, not errors); then the batch fails.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::sync::Arc;

use proto::pd::pd_client::PdClient as Rpc;
use proto::pd::{TsoRequest, TsoResponse};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;
use tonic::transport::Channel;

use crate::{Connection, PdError};

/// How long a failed batch waits before it asks again.
const RETRY_WAIT: Duration = Duration::from_millis(20);

/// Most timestamps one request asks for.
pub const MAX_BATCH: usize = 10_000;
/// The longest `tidb_tso_client_batch_max_wait_time` allows.
pub const MAX_WAIT_CEILING: Duration = Duration::from_millis(10);

type Waiter = oneshot::Sender<Result<u64, PdError>>;

/// Requests sent, timestamps handed out, and how long callers waited for them (TiDB's
/// "PD TSO Wait Duration"), for `/metrics` and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TsoStats {
    pub requests: u64,
    pub timestamps: u64,
    /// Calls of [`TsoBatcher::get_ts`] answered, and their wait summed.
    pub waits: u64,
    pub wait_us: u64,
}

pub struct TsoBatcher {
    queue: mpsc::UnboundedSender<Waiter>,
    max_wait_us: std::sync::Arc<AtomicU64>,
    stats: std::sync::Arc<Mutex<TsoStats>>,
}

struct Stream {
    requests: mpsc::Sender<TsoRequest>,
    responses: Streaming<TsoResponse>,
}

impl TsoBatcher {
    /// Starts the batching task on the current tokio runtime.
    pub fn start(conn: Arc<Connection>) -> TsoBatcher {
        let (queue, waiting) = mpsc::unbounded_channel();
        let max_wait_us = std::sync::Arc::new(AtomicU64::new(0));
        let stats = std::sync::Arc::new(Mutex::new(TsoStats::default()));
        tokio::spawn(run(conn, waiting, max_wait_us.clone(), stats.clone()));
        TsoBatcher {
            queue,
            max_wait_us,
            stats,
        }
    }

    pub async fn get_ts(&self) -> Result<u64, PdError> {
        let asked = Instant::now();
        let (tx, rx) = oneshot::channel();
        self.queue.send(tx).map_err(|_| PdError::Stopped)?;
        let ts = rx.await.map_err(|_| PdError::Stopped)?;
        let waited = u64::try_from(asked.elapsed().as_micros()).unwrap_or(u64::MAX);
        let mut stats = self.stats.lock().expect("tso stats lock poisoned");
        stats.waits += 1;
        stats.wait_us = stats.wait_us.saturating_add(waited);
        ts
    }

    pub fn set_max_wait(&self, wait: Duration) {
        let wait = wait.min(MAX_WAIT_CEILING);
        self.max_wait_us
            .store(wait.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn stats(&self) -> TsoStats {
        *self.stats.lock().expect("tso stats lock poisoned")
    }
}

async fn run(
    conn: Arc<Connection>,
    mut waiting: mpsc::UnboundedReceiver<Waiter>,
    max_wait_us: std::sync::Arc<AtomicU64>,
    stats: std::sync::Arc<Mutex<TsoStats>>,
) {
    let mut stream: Option<Stream> = None;
    let mut last_batch = 1;
    while let Some(first) = waiting.recv().await {
        let mut batch = vec![first];
        let wait = Duration::from_micros(max_wait_us.load(Ordering::Relaxed));
        let deadline = Instant::now() + wait;
        loop {
            while batch.len() < MAX_BATCH {
                match waiting.try_recv() {
                    Ok(w) => batch.push(w),
                    Err(_) => break,
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if batch.len() >= MAX_BATCH.min(last_batch) || left.is_zero() {
                break;
            }
            match tokio::time::timeout(left, waiting.recv()).await {
                Ok(Some(w)) => batch.push(w),
                Ok(None) | Err(_) => break,
            }
        }
        batch.retain(|w| !w.is_closed());
        if batch.is_empty() {
            continue;
        }
        last_batch = batch.len();
        let count = batch.len() as u32;
        match request_until_answered(&conn, &mut stream, count).await {
            Ok(last) => {
                {
                    let mut s = stats.lock().expect("tso stats lock poisoned");
                    s.requests += 1;
                    s.timestamps += u64::from(count);
                }
                let first = last - u64::from(count) + 1;
                for (i, w) in batch.into_iter().enumerate() {
                    let _ = w.send(Ok(first + i as u64));
                }
            }
            Err(e) => {
                stream = None;
                for w in batch {
                    let _ = w.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Asks for `count` timestamps, on a new stream to the leader found again whenever the open
/// one fails, until [`crate::RPC_TIMEOUT`] has passed. A failed stream always sends the
/// client looking for the leader, even past the deadline, and a leader found then gets one
/// last try: a leader that went silent (behind a partition, or paused) fails by timing out,
/// and without looking again every later request would wait on it too.
async fn request_until_answered(
    conn: &Connection,
    stream: &mut Option<Stream>,
    count: u32,
) -> Result<u64, PdError> {
    let deadline = Instant::now() + crate::RPC_TIMEOUT;
    let mut last_try = false;
    loop {
        let (generation, rpc) = conn.rpc();
        match request(&rpc, stream, count).await {
            Ok(ts) => return Ok(ts),
            Err(e @ (PdError::Refused(_) | PdError::Stopped)) => return Err(e),
            Err(e) => {
                *stream = None;
                tracing::debug!("tso stream failed, finding the pd leader again: {e}");
                let found = conn.reconnect(generation).await.is_ok();
                if Instant::now() >= deadline {
                    if last_try || !found {
                        return Err(e);
                    }
                    last_try = true;
                } else if !found {
                    tokio::time::sleep(RETRY_WAIT).await;
                }
            }
        }
    }
}

/// Asks for `count` timestamps on the open stream (opening one if needed); returns the last.
async fn request(
    rpc: &Rpc<Channel>,
    stream: &mut Option<Stream>,
    count: u32,
) -> Result<u64, PdError> {
    if stream.is_none() {
        let (requests, rx) = mpsc::channel(1);
        let responses = rpc.clone().tso(ReceiverStream::new(rx)).await?.into_inner();
        *stream = Some(Stream {
            requests,
            responses,
        });
    }
    let s = stream.as_mut().expect("opened above");
    s.requests
        .send(TsoRequest { count })
        .await
        .map_err(|_| PdError::Rpc("the tso stream closed".into()))?;
    // A half-open connection must not hang every caller: a reply late by RPC_TIMEOUT fails
    // the batch and the stream is reopened.
    let r = tokio::time::timeout(crate::RPC_TIMEOUT, s.responses.message())
        .await
        .map_err(|_| PdError::Rpc(format!("no tso reply in {:?}", crate::RPC_TIMEOUT)))??
        .ok_or_else(|| PdError::Rpc("pd closed the tso stream".into()))?;
    if let Some(e) = r.error {
        // An oracle not serving now (a new leader saving its first window) is worth asking
        // again; anything else is the request's own fault.
        if e.r#type == proto::pd::ErrorType::TsoUnavailable as i32 {
            return Err(PdError::Rpc(e.message));
        }
        return Err(PdError::Refused(e.message));
    }
    if r.count != count {
        return Err(PdError::Rpc(format!(
            "asked for {count} timestamps, pd gave {}",
            r.count
        )));
    }
    let t = r
        .timestamp
        .ok_or_else(|| PdError::Rpc("tso response without a timestamp".into()))?;
    Ok(base::ts::compose(t.physical as u64, t.logical as u64))
}
