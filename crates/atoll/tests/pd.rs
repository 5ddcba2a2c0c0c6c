//! A running `atoll pd`: the Tso gRPC stream answers on the client port, next to the HTTP
//! status API, and a restarted pd never hands out a timestamp below the last one.

mod common;

use std::process::Stdio;

use common::*;
use proto::pd::TsoRequest;
use proto::pd::pd_client::PdClient;
use tokio_stream::wrappers::ReceiverStream;

fn start_pd(dir: &std::path::Path, port: u16) -> Running {
    let child = atoll()
        .args([
            "pd",
            "--client-urls",
            &format!("http://127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    wait_ready(&mut running, &format!("127.0.0.1:{port}"));
    running
}

async fn timestamps(port: u16, n: usize) -> Vec<u64> {
    let mut client = PdClient::connect(format!("http://127.0.0.1:{port}"))
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut responses = client
        .tso(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let mut out = Vec::new();
    for _ in 0..n {
        tx.send(TsoRequest { count: 10 }).await.unwrap();
        let t = responses
            .message()
            .await
            .unwrap()
            .unwrap()
            .timestamp
            .unwrap();
        out.push(base::ts::compose(t.physical as u64, t.logical as u64));
    }
    out
}

#[test]
fn pd_serves_timestamps_that_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let pd = start_pd(dir.path(), port);
    let first = runtime.block_on(timestamps(port, 500));
    assert!(first.windows(2).all(|w| w[1] > w[0]));
    let (code, _) = get(&format!("http://127.0.0.1:{port}/status"));
    assert_eq!(code, 200, "HTTP status API on the same port as gRPC");
    assert!(pd.terminate().success());
    let pd = start_pd(dir.path(), port);
    let second = runtime.block_on(timestamps(port, 5));
    assert!(
        second[0] > *first.last().unwrap(),
        "timestamps went backwards across a restart"
    );
    assert!(pd.terminate().success());
}
