//! The kv node's split checker (thread `split-check`): every
//! `raftstore.split-region-check-tick-interval`, each region this node leads that took at
//! least `raftstore.region-split-check-diff` bytes of writes since its last check, and a few
//! whose size is not known yet ([`RegionFlows::to_check`]), is checked
//! ([`raftstore::split_check`]) and split where the check says, through the same
//! [`Splitter`] as `SPLIT TABLE`; the check's figures are the regions' sizes PD hears of. A
//! check that found `coprocessor.batch-split-limit` keys leaves the rest of the region to
//! the next tick. The knobs are read at each tick, so online changes apply at the next one.
//! A failed split is logged; the region is checked again once it grows again.
//!
//! PD's `split-region` operator reaches it as [`Wake::Split`] and is done at once: at the
//! keys PD gave, or in two halves of the region's data.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

use config::{Config, ConfigController};
use engine::KvEngine;
use engine_rocks::RocksEngine;
use raftstore::split_check::{self, Checked, SplitLimits};

use crate::raft_kv::RaftKv;
use crate::region_flow::RegionFlows;
use crate::split::Splitter;

/// What wakes the checker before its next tick.
pub enum Wake {
    /// The node stops.
    Stop,
    /// PD asks for a split of a region led here, at epoch version `version`: at `keys`, or
    /// in halves when empty.
    Split {
        region_id: u64,
        version: u64,
        keys: Vec<Vec<u8>>,
    },
}

fn limits(c: &Config) -> SplitLimits {
    SplitLimits {
        max_size: c.size("coprocessor.region-max-size").0,
        split_size: c.size("coprocessor.region-split-size").0,
        max_keys: c.int("coprocessor.region-max-keys") as u64,
        split_keys: c.int("coprocessor.region-split-keys") as u64,
        batch_split_limit: c.int("coprocessor.batch-split-limit") as usize,
    }
}

fn tick_interval(controller: &ConfigController) -> std::time::Duration {
    (controller.current())
        .duration("raftstore.split-region-check-tick-interval")
        .0
}

pub fn spawn(
    raft: Arc<RaftKv>,
    engine: RocksEngine,
    splitter: Arc<Splitter>,
    controller: Arc<ConfigController>,
    wakes: Receiver<Wake>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("split-check".into())
        .spawn(move || {
            let checker = Checker {
                runtime: tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime starts"),
                raft,
                engine,
                splitter,
            };
            let mut next_tick = Instant::now() + tick_interval(&controller);
            loop {
                let wait = next_tick.saturating_duration_since(Instant::now());
                match wakes.recv_timeout(wait) {
                    Ok(Wake::Split {
                        region_id,
                        version,
                        keys,
                    }) => checker.split_as_asked(region_id, version, keys),
                    Err(RecvTimeoutError::Timeout) => {
                        // The knobs as they are now, not as they were when the wait began.
                        checker.tick(&controller.current());
                        next_tick = Instant::now() + tick_interval(&controller);
                    }
                    Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        })
        .expect("the OS starts the split checker")
}

struct Checker {
    runtime: tokio::runtime::Runtime,
    raft: Arc<RaftKv>,
    engine: RocksEngine,
    splitter: Arc<Splitter>,
}

impl Checker {
    fn flows(&self) -> &RegionFlows {
        self.raft.flows()
    }

    fn tick(&self, config: &Config) {
        let diff = config.size("raftstore.region-split-check-diff").0;
        let limits = limits(config);
        let views = self.raft.views().all();
        // A region no longer on this node keeps no entry.
        self.flows()
            .retain(&views.iter().map(|v| v.region.id).collect());
        let led: Vec<u64> = (views.iter())
            .filter(|v| v.lease_until.is_some())
            .map(|v| v.region.id)
            .collect();
        for region_id in self.flows().to_check(&led, diff) {
            let Some(region) = self.led(region_id) else {
                continue;
            };
            let checked = self.check(&region, |snap| split_check::check(snap, &region, &limits));
            let Some(checked) = checked else {
                continue;
            };
            if checked.split_keys.len() >= limits.batch_split_limit {
                // The rest (the region keeps the right part) is checked next tick.
                self.flows().grow(region_id, diff);
            }
            self.split(region, checked, "split a region grown past its limits");
        }
    }

    /// The region, if this node leads it.
    fn led(&self, region_id: u64) -> Option<proto::pd::Region> {
        let view = self.raft.views().get(region_id)?;
        view.lease_until.is_some().then_some(view.region)
    }

    /// PD's `split-region` of the region at epoch version `version`: at `keys`, or in
    /// halves of the data when there are none. An order for an older version (PD repeats
    /// its order until it sees the split) or for a region not led here is dropped.
    fn split_as_asked(&self, region_id: u64, version: u64, keys: Vec<Vec<u8>>) {
        let Some(region) = self.led(region_id) else {
            return;
        };
        if region.region_epoch.map(|e| e.version) != Some(version) {
            return;
        }
        let checked = self.check(&region, |snap| match keys.is_empty() {
            true => split_check::halves(snap, &region),
            false => Ok(Checked {
                split_keys: keys,
                ..Checked::default()
            }),
        });
        if let Some(checked) = checked {
            self.split(region, checked, "split a region as pd asked");
        }
    }

    /// Runs `check` on a snapshot; a failed check is logged.
    fn check(
        &self,
        region: &proto::pd::Region,
        check: impl FnOnce(&engine_rocks::RocksSnapshot) -> raftstore::Result<Checked>,
    ) -> Option<Checked> {
        check(&self.engine.snapshot())
            .inspect_err(|e| tracing::warn!(region_id = region.id, "split check failed: {e}"))
            .ok()
    }

    /// Splits `region`, as it was checked, at the check's keys (a region that changed
    /// since is refused by its epoch) and notes the parts' sizes (the whole region's when
    /// it does not split); a part the check did not measure (a split at PD's keys) is
    /// measured by a later tick.
    fn split(&self, region: proto::pd::Region, checked: Checked, why: &str) {
        let flows = self.flows();
        let region_id = region.id;
        if checked.split_keys.is_empty() {
            flows.measured(region_id, checked.size, checked.keys);
            return;
        }
        let parts = checked.split_keys.len() + 1;
        let split = self.splitter.split(region, checked.split_keys);
        match self.runtime.block_on(split) {
            Ok(regions) => {
                for r in &regions {
                    flows.unmeasured(r.id);
                }
                // Each part as the check measured it, in key order.
                for (r, &(size, keys)) in regions.iter().zip(&checked.parts) {
                    flows.measured(r.id, size, keys);
                }
                tracing::info!(
                    region_id,
                    size = checked.size,
                    keys = checked.keys,
                    parts,
                    "{why}"
                )
            }
            Err(e) => {
                if !checked.parts.is_empty() {
                    flows.measured(region_id, checked.size, checked.keys);
                }
                tracing::warn!(region_id, "split failed: {e}")
            }
        }
    }
}
