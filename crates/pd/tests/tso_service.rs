//! The `Tso` stream over real gRPC on loopback: timestamps strictly increase within a stream,
//! across many batches, and across a restart of the oracle on the same data dir.

use std::path::Path;
use std::time::Duration;

use base::ts::compose;
use pd::oracle::{Oracle, wall_clock_ms};
use pd::service::PdService;
use proto::pd::TsoRequest;
use proto::pd::pd_client::PdClient;
use proto::pd::pd_server::PdServer;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};

/// Starts a PD service on a free port, fetches `batches` batches of `count` timestamps over
/// one stream, stops it, and returns the last timestamp of each batch.
async fn fetch(dir: &Path, batches: usize, count: u32) -> Vec<u64> {
    let oracle = Oracle::open(dir, Duration::from_secs(3), wall_clock_ms()).unwrap();
    let (stop_tick, stop) = std::sync::mpsc::channel();
    let ticker = oracle.spawn_ticker(Duration::from_millis(50), stop);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = PdServer::new(PdService::new(
        oracle,
        std::sync::Arc::new(pd::gc_safe_point::GcSafePoint::open(dir).unwrap()),
        Duration::from_millis(50),
    ));
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    let mut client = PdClient::connect(format!("http://{addr}")).await.unwrap();
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
    drop(tx);
    server.abort();
    drop(stop_tick);
    ticker.join().unwrap();
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
    let oracle = Oracle::open(dir.path(), Duration::from_secs(3), wall_clock_ms()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = PdServer::new(PdService::new(
        oracle,
        std::sync::Arc::new(pd::gc_safe_point::GcSafePoint::open(dir.path()).unwrap()),
        Duration::from_millis(50),
    ));
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    let mut client = PdClient::connect(format!("http://{addr}")).await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut responses = client
        .tso(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    tx.send(TsoRequest { count: 0 }).await.unwrap();
    let r = responses.message().await.unwrap().unwrap();
    assert_eq!(
        r.error.unwrap().r#type,
        proto::pd::ErrorType::InvalidArgument as i32
    );
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
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gc_safe_point_moves_only_forward_over_grpc() {
    use proto::pd::{GetGcSafePointRequest, UpdateGcSafePointRequest};
    let dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::open(dir.path(), Duration::from_secs(3), wall_clock_ms()).unwrap();
    let safe_point = std::sync::Arc::new(pd::gc_safe_point::GcSafePoint::open(dir.path()).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = PdServer::new(PdService::new(
        oracle,
        safe_point,
        Duration::from_millis(50),
    ));
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    let mut client = PdClient::connect(format!("http://{addr}")).await.unwrap();
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
    server.abort();
}
