//! The raftstore thread ([`RaftDriver`]) with real time: one store alone leads its region at
//! once; three stores, each on its own thread and routed to each other through their routers,
//! elect, replicate, and publish leaders and leases for readers on other threads.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use engine::memory::MemoryEngine;
use engine::{Cf, Peekable};
use proto::pd::{Peer, Region, RegionEpoch};
use proto::raft::write_op::Kind;
use proto::raft::{RaftCmd, RaftMessage, WriteOp};
use raft_log::{LogConfig, LogEngine};
use raftstore::driver::{RaftDriver, RaftRouter, StoreMsg};
use raftstore::{RaftstoreConfig, Store, Transport};

#[derive(Clone, Default)]
struct Routes(Arc<RwLock<BTreeMap<u64, RaftRouter>>>);

impl Transport for Routes {
    fn send(&mut self, msg: RaftMessage) {
        let to = msg.to_peer.map_or(0, |p| p.store_id);
        if let Some(r) = self.0.read().unwrap().get(&to) {
            let _ = r.send(StoreMsg::Raft(msg));
        }
    }
}

fn config() -> RaftstoreConfig {
    RaftstoreConfig {
        base_tick: Duration::from_millis(20),
        heartbeat_ticks: 2,
        election_ticks: 10,
        max_leader_lease: Duration::from_millis(150),
        ..RaftstoreConfig::default()
    }
}

fn region(stores: &[u64]) -> Region {
    Region {
        id: 1,
        region_epoch: Some(RegionEpoch {
            conf_ver: 1,
            version: 1,
        }),
        peers: stores
            .iter()
            .map(|&s| Peer {
                id: 100 + s,
                store_id: s,
                ..Peer::default()
            })
            .collect(),
        ..Region::default()
    }
}

fn put(key: &[u8]) -> RaftCmd {
    RaftCmd {
        writes: vec![WriteOp {
            kind: Kind::Put as i32,
            cf: "default".into(),
            key: key.to_vec(),
            value: key.to_vec(),
        }],
        ..RaftCmd::default()
    }
}

fn start(
    s: u64,
    dir: &std::path::Path,
    engine: MemoryEngine,
    routes: Routes,
    bootstrap: Option<Region>,
    store_io_threads: usize,
) -> RaftDriver {
    let (log_dir, snap_dir) = (dir.join("raft-engine"), dir.join("snap"));
    RaftDriver::start(move || {
        let log = LogEngine::open(&LogConfig::new(log_dir))?;
        let cfg = RaftstoreConfig {
            snap_dir,
            store_io_threads,
            ..config()
        };
        let mut store = Store::open(s, engine, log, routes, cfg)?;
        if let Some(region) = bootstrap {
            store.bootstrap_region(region)?;
        }
        Ok(store)
    })
    .expect("start the driver")
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_store_alone_leads_at_once_and_answers_a_proposal_once_applied() {
    let dir = tempfile::tempdir().unwrap();
    let engine = MemoryEngine::new();
    let driver = start(
        1,
        dir.path(),
        engine.clone(),
        Routes::default(),
        Some(region(&[1])),
        1,
    );
    let router = driver.router();
    wait_until("the lone peer leads", || {
        driver
            .views
            .get(1)
            .is_some_and(|v| v.lease_holds(Instant::now()))
    });
    router.propose_and_wait(1, put(b"a")).expect("applied");
    assert_eq!(
        engine.get(Cf::Default, b"a").unwrap().as_deref(),
        Some(&b"a"[..])
    );
    drop(router);
    driver.stop();
}

#[test]
fn three_store_threads_elect_replicate_and_publish_one_leader() {
    // The stores write their logs in the round, on one store-io thread, and on two.
    let routes = Routes::default();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let engines: Vec<MemoryEngine> = (0..3).map(|_| MemoryEngine::new()).collect();
    let drivers: Vec<RaftDriver> = (1..=3u64)
        .map(|s| {
            let i = (s - 1) as usize;
            let d = start(
                s,
                dirs[i].path(),
                engines[i].clone(),
                routes.clone(),
                Some(region(&[1, 2, 3])),
                i,
            );
            routes.0.write().unwrap().insert(s, d.router());
            d
        })
        .collect();
    let mut leader = 0;
    wait_until("one store leads under a lease", || {
        let now = Instant::now();
        let leading: Vec<usize> = (0..3)
            .filter(|&i| drivers[i].views.get(1).is_some_and(|v| v.lease_holds(now)))
            .collect();
        if let [i] = leading[..] {
            leader = i;
            true
        } else {
            false
        }
    });
    let router = drivers[leader].router();
    // Four writers at once: their proposals share rounds and log writes.
    std::thread::scope(|scope| {
        for w in 0..4u32 {
            let router = router.clone();
            scope.spawn(move || {
                for i in (w..50).step_by(4) {
                    router
                        .propose_and_wait(1, put(format!("k{i}").as_bytes()))
                        .expect("applied");
                }
            });
        }
    });
    wait_until("every store applied every write", || {
        engines.iter().all(|e| {
            (0..50).all(|i| {
                e.get(Cf::Default, format!("k{i}").as_bytes())
                    .unwrap()
                    .is_some()
            })
        })
    });
    for (i, d) in drivers.iter().enumerate() {
        let view = d.views.get(1).expect("a view of region 1");
        assert_eq!(
            view.leader.map(|p| p.store_id),
            Some(leader as u64 + 1),
            "store {} knows the leader",
            i + 1
        );
    }
    drop(router);
    for d in drivers {
        d.stop();
    }
}
