//! The kv node's split checker (thread `split-check`): every
//! `raftstore.split-region-check-tick-interval`, each region this node leads that took at
//! least `raftstore.region-split-check-diff` bytes of writes since its last check is checked
//! ([`raftstore::split_check`]) and split where the check says, through the same
//! [`Splitter`] as `SPLIT TABLE`. A check that found `coprocessor.batch-split-limit` keys
//! leaves the rest of the region to the next tick. The knobs are read at each tick, so
//! online changes apply at the next one. A failed split is logged; the region is checked
//! again once it grows again.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};

use config::{Config, ConfigController};
use engine::KvEngine;
use engine_rocks::RocksEngine;
use raftstore::split_check::{self, SplitLimits};

use crate::raft_kv::RaftKv;
use crate::split::Splitter;

fn limits(c: &Config) -> SplitLimits {
    SplitLimits {
        max_size: c.size("coprocessor.region-max-size").0,
        split_size: c.size("coprocessor.region-split-size").0,
        max_keys: c.int("coprocessor.region-max-keys") as u64,
        split_keys: c.int("coprocessor.region-split-keys") as u64,
        batch_split_limit: c.int("coprocessor.batch-split-limit") as usize,
    }
}

pub fn spawn(
    raft: Arc<RaftKv>,
    engine: RocksEngine,
    splitter: Arc<Splitter>,
    controller: Arc<ConfigController>,
    stop: Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("split-check".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime starts");
            loop {
                let tick = (controller.current())
                    .duration("raftstore.split-region-check-tick-interval")
                    .0;
                match stop.recv_timeout(tick) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                // The knobs as they are now, not as they were when the wait began.
                let config = controller.current();
                let diff = config.size("raftstore.region-split-check-diff").0;
                let limits = limits(&config);
                for region_id in raft.take_grown(diff) {
                    let Some(view) = raft.views().get(region_id) else {
                        continue;
                    };
                    let snap = engine.snapshot();
                    let checked = match split_check::check(&snap, &view.region, &limits) {
                        Ok(c) => c,
                        Err(e) => {
                            tracing::warn!(region_id, "split check failed: {e}");
                            continue;
                        }
                    };
                    if checked.split_keys.is_empty() {
                        continue;
                    }
                    let parts = checked.split_keys.len() + 1;
                    if checked.split_keys.len() >= limits.batch_split_limit {
                        // The rest (the region keeps the right part) is checked next tick.
                        raft.note_grown(region_id, diff);
                    }
                    match runtime.block_on(splitter.split(view.region, checked.split_keys)) {
                        Ok(_) => tracing::info!(
                            region_id,
                            size = checked.size,
                            keys = checked.keys,
                            parts,
                            "split a region grown past its limits"
                        ),
                        Err(e) => tracing::warn!(region_id, "split after a check failed: {e}"),
                    }
                }
            }
        })
        .expect("the OS starts the split checker")
}
