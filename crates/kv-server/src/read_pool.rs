//! The unified read pool of a kv node, built from `readpool.unified.*` and kept in step with
//! online changes: `max-thread-count` resizes it, `small-request-share` and
//! `max-tasks-per-worker` re-tune it. `min-thread-count`, the level thresholds and the time
//! slice are restart-only, as in TiKV.

use std::sync::Arc;

use config::{Config, ConfigController};
use pool::{PoolConfig, ReadPool};

pub fn pool_config(c: &Config) -> PoolConfig {
    let count = |name| usize::try_from(c.int(name)).expect("config checks keep counts positive");
    let cpu = c.resources().cpu_cores;
    PoolConfig {
        name: "unified-read".into(),
        min_threads: count("readpool.unified.min-thread-count"),
        max_threads: count("readpool.unified.max-thread-count"),
        // The same ceiling the config check allows for max-thread-count: max(4, CPU*10).
        thread_ceiling: ((cpu * 10.0) as usize).max(4),
        max_tasks_per_worker: count("readpool.unified.max-tasks-per-worker"),
        level_thresholds: [
            c.duration("readpool.unified.level0-threshold").0,
            c.duration("readpool.unified.level1-threshold").0,
        ],
        small_request_share: c.float("readpool.unified.small-request-share"),
        slice: c.duration("readpool.unified.time-slice").0,
        ..PoolConfig::default()
    }
}

pub fn start(c: &Config) -> ReadPool {
    ReadPool::new(pool_config(c))
}

/// Applies accepted online changes of `readpool.unified.*` to the running pool.
pub fn follow_config(pool: &Arc<ReadPool>, controller: &ConfigController) {
    let pool = Arc::downgrade(pool);
    controller.subscribe(
        "readpool.unified.",
        Box::new(move |c, names| {
            let Some(pool) = pool.upgrade() else {
                return Ok(());
            };
            for name in names {
                match *name {
                    // With auto-adjust on, the tuner moves within the new bound from here.
                    "readpool.unified.max-thread-count" => {
                        let threads = pool.resize(c.int(name) as usize);
                        tracing::info!(threads, "unified read pool resized");
                    }
                    "readpool.unified.small-request-share" => {
                        pool.set_small_request_share(c.float(name))
                    }
                    "readpool.unified.max-tasks-per-worker" => {
                        pool.set_max_tasks_per_worker(c.int(name) as usize)
                    }
                    // auto-adjust-pool-size and cpu-threshold are read by the tuner each interval.
                    _ => {}
                }
            }
            Ok(())
        }),
    );
}
