//! A running `atoll pd`: the Tso gRPC stream answers on the client port, next to the HTTP
//! status API, and a restarted pd never hands out a timestamp below the last one.

mod common;

use common::*;
use proto::pd::TsoRequest;
use proto::pd::pd_client::PdClient;
use tokio_stream::wrappers::ReceiverStream;

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
fn a_data_dir_from_before_pd_members_replicated_keeps_its_window_and_safe_point() {
    use proto::pd::GetGcSafePointRequest;
    let dir = tempfile::tempdir().unwrap();
    // What a single pd of the previous release left: its window an hour ahead of the clock.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let window = now_ms + 3_600_000;
    std::fs::create_dir_all(dir.path()).unwrap();
    std::fs::write(dir.path().join("tso-window"), format!("{window}\n")).unwrap();
    std::fs::write(dir.path().join("gc-safe-point"), "77\n").unwrap();
    let port = free_port();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Twice: the imported state must outlive the first start (SIGKILL between them).
    for _ in 0..2 {
        let pd = start_pd(dir.path(), port);
        let ts = runtime.block_on(timestamps(port, 3));
        assert!(
            base::ts::physical_ms(ts[0]) > window,
            "a timestamp below the old window"
        );
        let safe_point = runtime.block_on(async {
            let mut c = PdClient::connect(format!("http://127.0.0.1:{port}"))
                .await
                .unwrap();
            c.get_gc_safe_point(GetGcSafePointRequest {})
                .await
                .unwrap()
                .into_inner()
                .safe_point
        });
        assert_eq!(safe_point, 77);
        drop(pd);
    }
}

#[test]
fn a_kv_node_refuses_the_pd_of_another_cluster_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, status) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let kv_dir = dir.path().join("kv");
    let first_port = free_port();
    let first = start_pd(&dir.path().join("pd-a"), first_port);
    let kv = start_kv_with_pd(&kv_dir, first_port, &addr, &status);
    let id = store_id(&status);
    drop(kv);
    drop(first);
    // Another cluster's pd: the kv node does not register with it.
    let other_port = free_port();
    let _other = start_pd(&dir.path().join("pd-b"), other_port);
    let _kv = start_kv_with_pd(&kv_dir, other_port, &addr, &status);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let log = std::fs::read_to_string(kv_dir.join("kv.log")).unwrap_or_default();
        if log.contains("the pd serves cluster") && log.contains("belongs to cluster") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no refusal in the log"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The other cluster knows no store.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stores = runtime.block_on(async {
        let mut c = PdClient::connect(format!("http://127.0.0.1:{other_port}"))
            .await
            .unwrap();
        c.get_all_stores(proto::pd::GetAllStoresRequest {})
            .await
            .unwrap()
            .into_inner()
            .stores
    });
    assert!(
        stores.is_empty(),
        "store {id} registered with the other cluster"
    );
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
    let kv = start_kv_with_pd(
        &dir.path().join("kv"),
        port,
        &format!("127.0.0.1:{}", free_port()),
        &status,
    );
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

/// Waits until the kv node at `status` reports a store id, and returns it.
fn store_id(status: &str) -> u64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (_, metrics) = get(&format!("http://{status}/metrics"));
        let text = String::from_utf8(metrics).unwrap();
        let id: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("atoll_kv_store_id "))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if id != 0 {
            return id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the kv node never registered with pd"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_kv_node_started_before_pd_waits_then_bootstraps_and_keeps_its_store_id() {
    use proto::pd::{GetStoreRequest, IsBootstrappedRequest, ScanRegionsRequest};
    let dir = tempfile::tempdir().unwrap();
    let pd_port = free_port();
    let addr = format!("127.0.0.1:{}", free_port());
    let status = format!("127.0.0.1:{}", free_port());
    // PD is not there yet: the kv node must wait, not die.
    let mut kv = start_kv_with_pd(&dir.path().join("kv"), pd_port, &addr, &status);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        kv.0.try_wait().unwrap().is_none(),
        "the kv node exited while pd was down"
    );
    let pd = start_pd(&dir.path().join("pd"), pd_port);
    let id = store_id(&status);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut c = PdClient::connect(format!("http://127.0.0.1:{pd_port}"))
            .await
            .unwrap();
        assert!(
            c.is_bootstrapped(IsBootstrappedRequest {})
                .await
                .unwrap()
                .into_inner()
                .bootstrapped
        );
        let regions = c
            .scan_regions(ScanRegionsRequest {
                start_key: vec![],
                end_key: vec![],
                limit: 0,
            })
            .await
            .unwrap()
            .into_inner()
            .regions;
        assert_eq!(regions.len(), 1);
        assert!(regions[0].start_key.is_empty() && regions[0].end_key.is_empty());
        assert_eq!(regions[0].peers[0].store_id, id);
        let store = c
            .get_store(GetStoreRequest { store_id: id })
            .await
            .unwrap()
            .into_inner()
            .store
            .unwrap();
        assert_eq!(store.address, addr);
    });
    assert!(kv.terminate().success());
    let kv = start_kv_with_pd(&dir.path().join("kv"), pd_port, &addr, &status);
    assert_eq!(store_id(&status), id, "a restarted node is the same store");
    assert!(kv.terminate().success());
    assert!(pd.terminate().success());
}
