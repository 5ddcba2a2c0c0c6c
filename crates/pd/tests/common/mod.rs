//! Starts a PD service in-process on a free loopback port, over a data dir: one member, a
//! group of one, as `atoll pd` runs it without `initial-cluster`.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pd::disk::{Checkpoint, MemberDisk};
use pd::driver::{Driver, Transport};
use pd::member::{Member, MemberConfig};
use pd::members::Members;
use pd::oracle::Oracle;
use pd::service::PdService;
use pd::state::MemberRecord;
use proto::pd::pd_client::PdClient;
use proto::pd::pd_server::PdServer;
use tokio_stream::wrappers::TcpListenerStream;

pub struct TestPd {
    pub url: String,
    server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    stop_tick: Option<std::sync::mpsc::Sender<()>>,
    ticker: Option<std::thread::JoinHandle<()>>,
    driver: Option<Driver>,
}

/// A group of one sends nothing.
struct Nowhere;

impl Transport for Nowhere {
    fn send(&mut self, _: Vec<raft::eraftpb::Message>) {}
}

impl TestPd {
    pub async fn start(dir: &Path) -> TestPd {
        let (disk, saved) = MemberDisk::open(dir).unwrap();
        let cfg = MemberConfig::new(
            1,
            Duration::from_millis(50),
            Duration::from_millis(300),
            Duration::from_secs(3),
        );
        let mut first = Checkpoint {
            voters: vec![1],
            ..Checkpoint::default()
        };
        first.state.set_member(
            1,
            Some(MemberRecord {
                name: "pd".into(),
                peer_url: "127.0.0.1:2380".into(),
            }),
        );
        let mut member = Member::open(
            cfg,
            &disk,
            saved.unwrap_or(first),
            &slog::Logger::root(slog::Discard, slog::o!()),
        )
        .unwrap();
        member.campaign().unwrap();
        let driver = Driver::start(
            member,
            Box::new(disk),
            |_| Box::new(Nowhere),
            Duration::from_millis(50),
            Box::new(|e| panic!("the test pd's member failed: {e}")),
        );
        let handle = driver.handle();
        let deadline = Instant::now() + Duration::from_secs(5);
        while handle.shared().lease_term(Instant::now()).is_none() {
            assert!(Instant::now() < deadline, "the member never took its lease");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let oracle = Oracle::new(handle.shared().clone(), Duration::from_secs(3));
        let (stop_tick, stop) = std::sync::mpsc::channel();
        let saver = handle.clone();
        let ticker = oracle.spawn_ticker(
            Duration::from_millis(50),
            Box::new(move |c| saver.propose(c)),
            stop,
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let members = Arc::new(Members::new(handle.shared().clone()));
        members.learn_client_url(1, &url);
        let service = PdService::new(
            oracle,
            handle,
            members,
            Duration::from_millis(50),
            pd::metrics::PdMetrics::new(),
        );
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
            driver: Some(driver),
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
        drop(self.driver.take());
    }
}
