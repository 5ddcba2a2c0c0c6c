//! The kv node's half of `BatchCommands` (TiKV's batch stream): a client keeps one stream
//! open and sends many requests per message; each request runs as its own task through the
//! same handler as its unary RPC (so routing, the read pool and the scheduler see no
//! difference), and answers go back as they finish, several per message, tagged with the
//! request's id. A failed handler's status travels as the `failed` answer instead of ending
//! the stream.
//!
//! Bounds: a message carries at most [`KV_BATCH_REQUESTS_MAX`] answers; at most
//! [`KV_BATCH_QUEUE_MAX`] answers wait for the stream before handlers wait to hand theirs
//! over. Requests in flight are bounded by the read pool's and the scheduler's own limits,
//! which answer `ServerIsBusy`.

use std::pin::Pin;
use std::task::{Context, Poll};

use base::limits::{KV_BATCH_QUEUE_MAX, KV_BATCH_REQUESTS_MAX};
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
}

/// Starts serving one client's stream: reads its messages until it ends and runs every
/// request it carries.
pub fn serve(service: KvService, mut requests: Streaming<BatchCommandsRequest>) -> Answers {
    let (ready_tx, ready) = mpsc::channel(KV_BATCH_QUEUE_MAX);
    tokio::spawn(async move {
        // A broken stream ends like a closed one: the client opens a new one.
        while let Ok(Some(message)) = requests.message().await {
            for (id, request) in message.request_ids.into_iter().zip(message.requests) {
                let (service, ready_tx) = (service.clone(), ready_tx.clone());
                tokio::spawn(async move {
                    let answer = answer(&service, request.cmd).await;
                    // The client is gone when this fails; nobody waits for the answer.
                    let _ = ready_tx.send((id, answer)).await;
                });
            }
        }
    });
    Answers { ready }
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
        None => Err(Status::invalid_argument(
            "a batched request names no command",
        )),
    };
    Answer {
        cmd: Some(result.unwrap_or_else(|status| {
            ResponseCmd::Failed(RpcStatus {
                code: status.code() as i32,
                message: status.message().to_string(),
            })
        })),
    }
}

impl Stream for Answers {
    type Item = Result<BatchCommandsResponse, Status>;

    /// Every answer ready now, up to the message bound, in one message.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some((id, answer)) = std::task::ready!(self.ready.poll_recv(cx)) else {
            return Poll::Ready(None);
        };
        let mut message = BatchCommandsResponse {
            responses: vec![answer],
            request_ids: vec![id],
        };
        while message.responses.len() < KV_BATCH_REQUESTS_MAX {
            let Ok((id, answer)) = self.ready.try_recv() else {
                break;
            };
            message.responses.push(answer);
            message.request_ids.push(id);
        }
        Poll::Ready(Some(Ok(message)))
    }
}
