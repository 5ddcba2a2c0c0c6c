//! Starts a PD service in-process on a free loopback port, over a data dir.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pd::gc_safe_point::GcSafePoint;
use pd::metadata::Metadata;
use pd::oracle::{Oracle, wall_clock_ms};
use pd::service::PdService;
use proto::pd::pd_client::PdClient;
use proto::pd::pd_server::PdServer;
use tokio_stream::wrappers::TcpListenerStream;

pub struct TestPd {
    pub url: String,
    server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    stop_tick: Option<std::sync::mpsc::Sender<()>>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl TestPd {
    pub async fn start(dir: &Path) -> TestPd {
        let oracle = Oracle::open(dir, Duration::from_secs(3), wall_clock_ms()).unwrap();
        let (stop_tick, stop) = std::sync::mpsc::channel();
        let ticker = oracle.spawn_ticker(Duration::from_millis(50), stop);
        let service = PdService::new(
            oracle,
            Arc::new(GcSafePoint::open(dir).unwrap()),
            Arc::new(Metadata::open(dir).unwrap()),
            Duration::from_millis(50),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(PdServer::new(service))
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        TestPd {
            url,
            server,
            stop_tick: Some(stop_tick),
            ticker: Some(ticker),
        }
    }

    pub async fn client(&self) -> PdClient<tonic::transport::Channel> {
        PdClient::connect(self.url.clone()).await.unwrap()
    }
}

impl Drop for TestPd {
    fn drop(&mut self) {
        self.server.abort();
        drop(self.stop_tick.take());
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}
