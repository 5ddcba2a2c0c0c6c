//! Raftstore's figures in `/metrics`, in the names of TiKV's panels: the peers and leaders
//! this store holds (`atoll_raftstore_region_count{type="region"|"leader"|"learner"}`, TiKV's
//! `tikv_raftstore_region_count`), read from the views raftstore publishes after each round;
//! its proposals (propose wait: queued before raftstore took them; commit log: from proposal
//! to commit), its Raft IO: raft-engine writes with their time (append log duration, fsync
//! included) and fsyncs, kv writes of applied entries with their time (apply duration) and
//! their wait from the round's commit (apply wait); snapshots built, sent (delivered or
//! failed), received and applied. Times are `_duration_microseconds_total` counters beside
//! a `_total` count, so a rate of one over the other is the mean.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounter, IntCounterVec};
use prometheus::{IntGaugeVec, Opts};
use raftstore::driver::RegionViews;
use raftstore::stats::StoreStats;

use crate::pd_worker::STORE_ID;
use crate::raft_transport::SnapLimits;

pub struct RaftCollector {
    views: Arc<RegionViews>,
    stats: Arc<StoreStats>,
    region_count: IntGaugeVec,
    counters: Vec<(IntCounter, ReadStat)>,
    snapshots: IntCounterVec,
    transfers: Arc<SnapLimits>,
}

/// Reads one of the store's counters.
type ReadStat = fn(&StoreStats) -> u64;

/// The store's counters in `/metrics`: name, help, and where the value comes from.
const COUNTERS: [(&str, &str, ReadStat); 10] = [
    (
        "atoll_raftstore_propose_total",
        "Proposals raftstore took from its queue",
        |s| StoreStats::get(&s.proposals),
    ),
    (
        "atoll_raftstore_propose_wait_duration_microseconds_total",
        "Time proposals waited in raftstore's queue (propose wait)",
        |s| StoreStats::get(&s.propose_wait_micros),
    ),
    (
        "atoll_raftstore_commit_log_total",
        "Proposals that committed and applied",
        |s| StoreStats::get(&s.commits),
    ),
    (
        "atoll_raftstore_commit_log_duration_microseconds_total",
        "Time from proposal to commit (commit log duration)",
        |s| StoreStats::get(&s.commit_log_micros),
    ),
    (
        "atoll_raftstore_append_log_total",
        "raft-engine writes of rounds",
        |s| StoreStats::get(&s.log_writes),
    ),
    (
        "atoll_raftstore_append_log_duration_microseconds_total",
        "Time in raft-engine writes, fsync included (append log duration)",
        |s| StoreStats::get(&s.log_write_micros),
    ),
    (
        "atoll_raftstore_log_fsyncs_total",
        "raft-engine writes that fsynced",
        |s| StoreStats::get(&s.log_fsyncs),
    ),
    (
        "atoll_raftstore_apply_total",
        "kv writes of applied entries",
        |s| StoreStats::get(&s.apply_writes),
    ),
    (
        "atoll_raftstore_apply_duration_microseconds_total",
        "Time in kv writes of applied entries (apply duration)",
        |s| StoreStats::get(&s.apply_micros),
    ),
    (
        "atoll_raftstore_apply_wait_duration_microseconds_total",
        "Time from a round's commit to its kv write (apply wait)",
        |s| StoreStats::get(&s.apply_wait_micros),
    ),
];

impl RaftCollector {
    pub fn new(
        views: Arc<RegionViews>,
        stats: Arc<StoreStats>,
        transfers: Arc<SnapLimits>,
    ) -> RaftCollector {
        let region_count = IntGaugeVec::new(
            Opts::new(
                "atoll_raftstore_region_count",
                "Region peers this store holds (type=region), those that lead (type=leader) and those that are learners (type=learner)",
            ),
            &["type"],
        )
        .expect("valid metric");
        let counters = COUNTERS
            .iter()
            .map(|&(name, help, read)| {
                let c = IntCounter::new(name, help).expect("valid metric");
                (c, read)
            })
            .collect();
        let snapshots = IntCounterVec::new(
            Opts::new(
                "atoll_raftstore_snapshots_total",
                "Snapshots built, sent (delivered or failed), received and applied",
            ),
            &["type"],
        )
        .expect("valid metric");
        RaftCollector {
            views,
            stats,
            region_count,
            counters,
            snapshots,
            transfers,
        }
    }
}

impl Collector for RaftCollector {
    fn desc(&self) -> Vec<&Desc> {
        let mut descs = self.region_count.desc();
        descs.extend(self.counters.iter().flat_map(|(c, _)| c.desc()));
        descs.extend(self.snapshots.desc());
        descs
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let views = self.views.all();
        let store_id = STORE_ID.load(Ordering::Relaxed);
        let leaders = views
            .iter()
            .filter(|v| v.leader.is_some_and(|l| l.store_id == store_id))
            .count();
        self.region_count
            .with_label_values(&["region"])
            .set(views.len() as i64);
        self.region_count
            .with_label_values(&["leader"])
            .set(leaders as i64);
        let learners = views
            .iter()
            .filter(|v| {
                v.region.peers.iter().any(|p| {
                    p.store_id == store_id
                        && raftstore::state::role_of(p) == proto::pd::PeerRole::Learner
                })
            })
            .count();
        self.region_count
            .with_label_values(&["learner"])
            .set(learners as i64);
        let mut families = self.region_count.collect();
        for (c, read) in &self.counters {
            c.reset();
            c.inc_by(read(&self.stats));
            families.extend(c.collect());
        }
        let transfers = &self.transfers;
        for (kind, n) in [
            ("built", StoreStats::get(&self.stats.snapshots_built)),
            ("sent", StoreStats::get(&transfers.sent)),
            ("send_failed", StoreStats::get(&transfers.send_failures)),
            ("received", StoreStats::get(&transfers.received)),
            ("applied", StoreStats::get(&self.stats.snapshots_applied)),
        ] {
            let c = self.snapshots.with_label_values(&[kind]);
            c.reset();
            c.inc_by(n);
        }
        families.extend(self.snapshots.collect());
        families
    }
}
