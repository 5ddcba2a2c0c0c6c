//! Raftstore's figures in `/metrics`, in the names of TiKV's panels: the peers and leaders
//! this store holds (`atoll_raftstore_region_count{type="region"|"leader"}`, TiKV's
//! `tikv_raftstore_region_count`), read from the views raftstore publishes after each round.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGaugeVec, Opts};
use raftstore::driver::RegionViews;

use crate::pd_worker::STORE_ID;

pub struct RaftCollector {
    views: Arc<RegionViews>,
    region_count: IntGaugeVec,
}

impl RaftCollector {
    pub fn new(views: Arc<RegionViews>) -> RaftCollector {
        let region_count = IntGaugeVec::new(
            Opts::new(
                "atoll_raftstore_region_count",
                "Region peers this store holds (type=region) and those that lead (type=leader)",
            ),
            &["type"],
        )
        .expect("valid metric");
        RaftCollector {
            views,
            region_count,
        }
    }
}

impl Collector for RaftCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.region_count.desc()
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
        self.region_count.collect()
    }
}
