//! What the tests on RocksDB share.

use std::path::Path;

use config::{Config, Resources, Role};
use engine_rocks::RocksEngine;
use txn::{LocalKv, Scheduler, SchedulerConfig};

/// A scheduler with two workers over a RocksDB in `dir`, configured as a kv node on 2 cores
/// and 4 GiB would be.
pub fn open(dir: &Path) -> Scheduler<LocalKv<RocksEngine>> {
    let res = Resources {
        cpu_cores: 2.0,
        memory_bytes: 4 << 30,
    };
    let config = Config::defaults(Role::Kv, res).unwrap();
    let engine = RocksEngine::open(dir, &config).unwrap();
    Scheduler::new(
        LocalKv::open(engine).expect("the lock CF loads"),
        SchedulerConfig {
            workers: 2,
            latch_slots: 1024,
            pending_write_threshold_bytes: 100 << 20,
        },
    )
}
