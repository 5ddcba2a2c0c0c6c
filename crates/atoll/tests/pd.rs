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

#[test]
fn a_kv_node_reads_the_gc_safe_point_from_pd_and_collects_up_to_it() {
    use proto::pd::UpdateGcSafePointRequest;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let pd = start_pd(&dir.path().join("pd"), port);
    let sp = runtime.block_on(async {
        let mut client = PdClient::connect(format!("http://127.0.0.1:{port}"))
            .await
            .unwrap();
        client
            .update_gc_safe_point(UpdateGcSafePointRequest { safe_point: 4242 })
            .await
            .unwrap()
            .into_inner()
            .new_safe_point
    });
    assert_eq!(sp, 4242);
    let status = format!("127.0.0.1:{}", free_port());
    let mut kv = Running(
        atoll()
            .args([
                "kv",
                "--pd",
                &format!("127.0.0.1:{port}"),
                "--status-addr",
                &status,
                "--addr",
                &format!("127.0.0.1:{}", free_port()),
                "--data-dir",
            ])
            .arg(dir.path().join("kv"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_ready(&mut kv, &status);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, metrics) = get(&format!("http://{status}/metrics"));
        if String::from_utf8(metrics)
            .unwrap()
            .contains("atoll_gc_safe_point 4242")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the kv node never picked up PD's safe point"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(kv.terminate().success());
    assert!(pd.terminate().success());
}
