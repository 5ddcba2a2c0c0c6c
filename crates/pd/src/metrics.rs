//! PD's metrics, with the names PD's and etcd's Grafana panels use:
//! - `pd_server_handle_tso_duration_seconds`: TSO handle time on the leader (its `_count`
//!   per second is TSO requests per second);
//! - `service_member_role{service="PD"}`: 1 on the leader, 0 elsewhere;
//! - `etcd_server_leader_changes_seen_total`: leader changes this member saw;
//! - `etcd_disk_wal_fsync_duration_seconds`: a Raft log write with its fsync (append);
//! - `etcd_server_apply_duration_seconds`: applying a round's committed entries.

use prometheus::{Histogram, HistogramOpts, IntCounter, IntGauge, Opts, Registry};

#[derive(Clone)]
pub struct PdMetrics {
    pub tso_handle: Histogram,
    pub is_leader: IntGauge,
    pub leader_changes: IntCounter,
    pub log_append: Histogram,
    pub apply: Histogram,
}

fn histogram(name: &str, help: &str) -> Histogram {
    // 20 µs to 2.6 s.
    let buckets = prometheus::exponential_buckets(0.000_02, 2.0, 18).expect("valid buckets");
    Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets)).expect("valid metric")
}

impl PdMetrics {
    pub fn new() -> PdMetrics {
        PdMetrics {
            tso_handle: histogram(
                "pd_server_handle_tso_duration_seconds",
                "Time the leader took to answer a TSO request",
            ),
            is_leader: IntGauge::with_opts(
                Opts::new("service_member_role", "1 while this member leads, else 0")
                    .const_label("service", "PD"),
            )
            .expect("valid metric"),
            leader_changes: IntCounter::new(
                "etcd_server_leader_changes_seen_total",
                "Leader changes of the pd members' Raft group this member saw",
            )
            .expect("valid metric"),
            log_append: histogram(
                "etcd_disk_wal_fsync_duration_seconds",
                "A write to the members' Raft log, with its fsync when it needs one",
            ),
            apply: histogram(
                "etcd_server_apply_duration_seconds",
                "Applying the committed entries of one round",
            ),
        }
    }

    pub fn register(&self, registry: &Registry) {
        let all: [Box<dyn prometheus::core::Collector>; 5] = [
            Box::new(self.tso_handle.clone()),
            Box::new(self.is_leader.clone()),
            Box::new(self.leader_changes.clone()),
            Box::new(self.log_append.clone()),
            Box::new(self.apply.clone()),
        ];
        for c in all {
            registry.register(c).expect("pd metrics register once");
        }
    }
}

impl Default for PdMetrics {
    fn default() -> PdMetrics {
        PdMetrics::new()
    }
}
