//! The kv node's half of `BatchCommands` (TiKV's batch stream): a client keeps one stream
//! open and sends many requests per message; each request runs as its own task through the
//! same handler as its unary RPC (so routing, the read pool and the scheduler see no
//! difference), and answers go back as they finish, several per message, tagged with the
//! request's id; a lone answer waits one turn of the thread for others to join its message
//! (sysbench oltp_point_select, 8 threads: qps +8 %, CPU per query -9 %; oltp_read_write
//! unchanged; bench/ab, 2 rounds each). A failed handler's status travels as the `failed`
//! answer instead of ending the stream. When the node stops ([`KvService::stopping`]) a
//! stream reads no more requests, answers those it took and ends; the client sends the rest
//! elsewhere or later.
//! A handler that panics still gets an answer (`INTERNAL`), so no caller waits for nothing.
//!
//! Bounds: a message carries at most [`KV_BATCH_REQUESTS_MAX`] answers and, unless one
//! answer alone is larger, [`KV_BATCH_BYTES_MAX`] bytes; at most
//! [`KV_BATCH_QUEUE_MAX`] answers wait for the stream before handlers wait to hand theirs
//! over. The stream takes every request it is sent: what bounds the requests in flight is
//! the client (its callers each wait for their answer, and at most [`KV_BATCH_QUEUE_MAX`]
//! more queue there), and a full read pool or scheduler answers `ServerIsBusy`.

use std::pin::Pin;
use std::task::{Context, Poll};

use base::limits::{KV_BATCH_BYTES_MAX, KV_BATCH_QUEUE_MAX, KV_BATCH_REQUESTS_MAX};
use prost::Message;
use proto::kv::batch_commands_request::request::Cmd as RequestCmd;
use proto::kv::batch_commands_response::Response as Answer;
use proto::kv::batch_commands_response::response::Cmd as ResponseCmd;
use proto::kv::kv_server::Kv as KvRpc;
use proto::kv::{BatchCommandsRequest, BatchCommandsResponse, RpcStatus};
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tonic::{Request, Status, Streaming};

use crate::service::KvService;

/// The answers of one stream, as the gRPC layer sends them.
pub struct Answers {
    ready: mpsc::Receiver<(u64, Answer)>,
    /// An answer held back while the stream yields once, so the answers of requests about
    /// to finish on this thread join its message.
    held: Option<(u64, Answer)>,
}

/// Starts serving one client's stream: reads its messages until it ends and runs every
/// request it carries.
pub fn serve(service: KvService, mut requests: Streaming<BatchCommandsRequest>) -> Answers {
    let (ready_tx, ready) = mpsc::channel(KV_BATCH_QUEUE_MAX);
    let mut stopping = service.stopping.subscribe();
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                message = requests.message() => message,
                _ = stopping.wait_for(|stopping| *stopping) => break,
            };
            // A broken stream ends like a closed one: the client opens a new one.
            let Ok(Some(message)) = message else { break };
            if message.request_ids.len() != message.requests.len() {
                tracing::warn!("a batch message without one id per request: stream ended");
                break;
            }
            for (id, request) in message.request_ids.into_iter().zip(message.requests) {
                let (service, ready_tx) = (service.clone(), ready_tx.clone());
                tokio::spawn(async move {
                    let unanswered = Unanswered {
                        id,
                        ready_tx: Some(ready_tx),
                    };
                    let answer = answer(&service, request.cmd).await;
                    unanswered.answer(answer).await;
                });
            }
        }
    });
    Answers { ready, held: None }
}

/// A request taken but not yet answered: answers `INTERNAL` if dropped unanswered (its
/// handler panicked).
struct Unanswered {
    id: u64,
    /// Taken by the one answer sent.
    ready_tx: Option<mpsc::Sender<(u64, Answer)>>,
}

impl Unanswered {
    async fn answer(mut self, answer: Answer) {
        if let Some(ready_tx) = self.ready_tx.take() {
            // The client is gone when this fails; nobody waits for the answer.
            let _ = ready_tx.send((self.id, answer)).await;
        }
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(ready_tx) = self.ready_tx.take() {
            let failed = failed(Status::internal("the request's handler failed"));
            let _ = ready_tx.try_send((self.id, failed));
        }
    }
}

fn failed(status: Status) -> Answer {
    Answer {
        cmd: Some(ResponseCmd::Failed(RpcStatus {
            code: status.code() as i32,
            message: status.message().to_string(),
        })),
    }
}

/// Runs one request through its unary handler.
async fn answer(service: &KvService, cmd: Option<RequestCmd>) -> Answer {
    macro_rules! unary {
        ($handler:ident, $req:expr, $answer:ident) => {
            service
                .$handler(Request::new($req))
                .await
                .map(|r| ResponseCmd::$answer(r.into_inner()))
        };
    }
    let result = match cmd {
        Some(RequestCmd::Get(r)) => unary!(kv_get, r, Get),
        Some(RequestCmd::BatchGet(r)) => unary!(kv_batch_get, r, BatchGet),
        Some(RequestCmd::Scan(r)) => unary!(kv_scan, r, Scan),
        Some(RequestCmd::Prewrite(r)) => unary!(kv_prewrite, r, Prewrite),
        Some(RequestCmd::Commit(r)) => unary!(kv_commit, r, Commit),
        Some(RequestCmd::PessimisticLock(r)) => unary!(kv_pessimistic_lock, r, PessimisticLock),
        Some(RequestCmd::BatchRollback(r)) => unary!(kv_batch_rollback, r, BatchRollback),
        Some(RequestCmd::CheckTxnStatus(r)) => unary!(kv_check_txn_status, r, CheckTxnStatus),
        Some(RequestCmd::ResolveLock(r)) => unary!(kv_resolve_lock, r, ResolveLock),
        Some(RequestCmd::TxnHeartBeat(r)) => unary!(kv_txn_heart_beat, r, TxnHeartBeat),
        Some(RequestCmd::ScanLock(r)) => unary!(kv_scan_lock, r, ScanLock),
        Some(RequestCmd::Coprocessor(r)) => unary!(coprocessor, r, Coprocessor),
        Some(RequestCmd::SplitRegion(r)) => unary!(split_region, r, SplitRegion),
        None => Err(Status::invalid_argument(
            "a batched request names no command",
        )),
    };
    match result {
        Ok(cmd) => Answer { cmd: Some(cmd) },
        Err(status) => failed(status),
    }
}

impl Stream for Answers {
    type Item = Result<BatchCommandsResponse, Status>;

    /// Every answer ready now, up to the message bound, in one message. A lone answer
    /// waits for one turn of the thread first (the task wakes itself and yields).
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let (id, answer) = match self.held.take() {
            Some(held) => held,
            None => {
                let Some(first) = std::task::ready!(self.ready.poll_recv(cx)) else {
                    return Poll::Ready(None);
                };
                if self.ready.is_empty() {
                    self.held = Some(first);
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                first
            }
        };
        let mut bytes = answer.encoded_len();
        let mut message = BatchCommandsResponse {
            responses: vec![answer],
            request_ids: vec![id],
        };
        while message.responses.len() < KV_BATCH_REQUESTS_MAX && bytes < KV_BATCH_BYTES_MAX {
            let Ok((id, answer)) = self.ready.try_recv() else {
                break;
            };
            bytes += answer.encoded_len();
            message.responses.push(answer);
            message.request_ids.push(id);
        }
        Poll::Ready(Some(Ok(message)))
    }
}
