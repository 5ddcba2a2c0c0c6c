//! The `Tso` stream and the GC safe point over real gRPC on loopback: timestamps strictly
//! increase within a stream, across many batches, and across a restart of the oracle on the
//! same data dir; bad counts get an error answer; the safe point only moves forward.

mod common;

use std::path::Path;

use base::ts::compose;
use common::TestPd;
use proto::pd::{ErrorType, GetGcSafePointRequest, TsoRequest, UpdateGcSafePointRequest};
use tokio_stream::wrappers::ReceiverStream;

/// Fetches `batches` batches of `count` timestamps over one stream from a PD started on
/// `dir`, then stops it; returns the last timestamp of each batch.
async fn fetch(dir: &Path, batches: usize, count: u32) -> Vec<u64> {
    let pd = TestPd::start(dir).await;
    let mut client = pd.client().await;
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let mut responses = client
        .tso(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let mut out = Vec::with_capacity(batches);
    for _ in 0..batches {
        tx.send(TsoRequest { count }).await.unwrap();
        let r = responses
            .message()
            .await
            .unwrap()
            .expect("one response per request");
        assert!(r.error.is_none(), "{:?}", r.error);
        let t = r.timestamp.unwrap();
        out.push(compose(t.physical as u64, t.logical as u64));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamps_increase_within_a_stream_and_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let first = fetch(dir.path(), 2000, 100).await;
    assert!(
        first.windows(2).all(|w| w[1] >= w[0] + 100),
        "each batch of 100 must be above the previous one"
    );
    let second = fetch(dir.path(), 10, 1).await;
    assert!(
        second[0] > *first.last().unwrap(),
        "a restarted oracle went backwards"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_counts_get_an_error_answer_not_a_broken_stream() {
    let dir = tempfile::tempdir().unwrap();
    let pd = TestPd::start(dir.path()).await;
    let mut client = pd.client().await;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut responses = client
        .tso(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    tx.send(TsoRequest { count: 0 }).await.unwrap();
    let r = responses.message().await.unwrap().unwrap();
    assert_eq!(r.error.unwrap().r#type, ErrorType::InvalidArgument as i32);
    tx.send(TsoRequest { count: 1 }).await.unwrap();
    assert!(
        responses
            .message()
            .await
            .unwrap()
            .unwrap()
            .timestamp
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gc_safe_point_moves_only_forward_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let pd = TestPd::start(dir.path()).await;
    let mut client = pd.client().await;
    let update = |sp| UpdateGcSafePointRequest { safe_point: sp };
    assert_eq!(
        client
            .update_gc_safe_point(update(500))
            .await
            .unwrap()
            .into_inner()
            .new_safe_point,
        500
    );
    assert_eq!(
        client
            .update_gc_safe_point(update(400))
            .await
            .unwrap()
            .into_inner()
            .new_safe_point,
        500
    );
    assert_eq!(
        client
            .get_gc_safe_point(GetGcSafePointRequest {})
            .await
            .unwrap()
            .into_inner()
            .safe_point,
        500
    );
}
