//! RocksDB figures in `/metrics`, read at scrape time (KNOBS.md §5, RocksDB-kv panels):
//! compaction pending bytes, write stops and the delayed write rate per CF, running flushes
//! and compactions, total write-stall time, the block cache's usage, how often bloom filters
//! spared a file read, and the rate limit in force.

use engine::Cf;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{GaugeVec, IntCounter, IntGauge, Opts};
use rocksdb::statistics::Ticker;

use crate::engine::RocksEngine;

const PREFIX: &str = "atoll_rocksdb";

pub struct RocksCollector {
    engine: RocksEngine,
    descs: Vec<Desc>,
}

impl RocksCollector {
    pub fn new(engine: RocksEngine) -> RocksCollector {
        let descs = Self::families(&engine)
            .iter()
            .flat_map(|c| c.desc().into_iter().cloned().collect::<Vec<_>>())
            .collect();
        RocksCollector { engine, descs }
    }

    fn families(engine: &RocksEngine) -> Vec<Box<dyn Collector>> {
        let per_cf = |name: &str, help: &str, property: &str| -> Box<dyn Collector> {
            let g = GaugeVec::new(Opts::new(format!("{PREFIX}_{name}"), help), &["cf"])
                .expect("valid metric");
            for cf in Cf::ALL {
                g.with_label_values(&[cf.name()])
                    .set(engine.property(cf, property).unwrap_or(0) as f64);
            }
            Box::new(g)
        };
        let db_gauge = |name: &str, help: &str, value: i64| -> Box<dyn Collector> {
            let g = IntGauge::new(format!("{PREFIX}_{name}"), help).expect("valid metric");
            g.set(value);
            Box::new(g)
        };
        // A counter of the sum of RocksDB tickers.
        let tickers = |name: &str, help: &str, tickers: &[Ticker]| -> Box<dyn Collector> {
            let c = IntCounter::new(format!("{PREFIX}_{name}"), help).expect("valid metric");
            for &t in tickers {
                c.inc_by(engine.inner.db_options.get_ticker_count(t));
            }
            Box::new(c)
        };
        vec![
            per_cf(
                "compaction_pending_bytes",
                "Estimated bytes compaction must rewrite to settle the LSM",
                "rocksdb.estimate-pending-compaction-bytes",
            ),
            per_cf(
                "write_stopped",
                "1 while writes to the CF are stopped",
                "rocksdb.is-write-stopped",
            ),
            per_cf(
                "delayed_write_rate_bytes",
                "Write rate while writes are delayed, 0 if not delayed",
                "rocksdb.actual-delayed-write-rate",
            ),
            db_gauge(
                "running_compactions",
                "Compactions running now",
                engine
                    .property(Cf::Default, "rocksdb.num-running-compactions")
                    .unwrap_or(0) as i64,
            ),
            db_gauge(
                "running_flushes",
                "Flushes running now",
                engine
                    .property(Cf::Default, "rocksdb.num-running-flushes")
                    .unwrap_or(0) as i64,
            ),
            db_gauge(
                "block_cache_usage_bytes",
                "Bytes the shared block cache holds (capacity: storage.block-cache.capacity)",
                engine.block_cache_usage() as i64,
            ),
            db_gauge(
                "rate_limit_bytes_per_sec",
                "Flush and compaction I/O limit in force",
                engine.rate_limit(),
            ),
            tickers(
                "write_stall_micros_total",
                "Time writes were stalled or stopped by RocksDB",
                &[Ticker::StallMicros],
            ),
            tickers(
                "bloom_get_useful_total",
                "SST files a point get skipped because their bloom filter ruled the key out",
                &[Ticker::BloomFilterUseful, Ticker::BloomFilterPrefixUseful],
            ),
            tickers(
                "iter_next_total",
                "Steps iterators took to the next key (a scan's rows, besides its seeks)",
                &[Ticker::NumberDbNext],
            ),
            tickers(
                "iter_skipped_total",
                "Entries iterators stepped over on the way: older versions, tombstones",
                &[Ticker::NumberIterSkip],
            ),
            tickers(
                "bloom_seek_useful_total",
                "SST files a read of one key's versions skipped because their prefix filter ruled the key out",
                &[
                    Ticker::NonLastLevelSeekFiltered,
                    Ticker::LastLevelSeekFiltered,
                ],
            ),
        ]
    }
}

impl Collector for RocksCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        Self::families(&self.engine)
            .iter()
            .flat_map(|c| c.collect())
            .collect()
    }
}
