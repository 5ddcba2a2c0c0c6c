//! The kv node's transaction side: the scheduler and the GC worker on one local replica,
//! kept in step with `storage.scheduler-worker-pool-size` and `gc.*`, with their figures in
//! `/metrics` (scheduler workers and pending write bytes, GC keys, versions and bytes).

use std::sync::Arc;

use config::ConfigController;
use engine_rocks::RocksEngine;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounter, IntGauge, Registry};
use txn::gc::GcWorker;
use txn::{LocalKv, Scheduler, SchedulerConfig};

pub type Kv = LocalKv<RocksEngine>;

pub struct Storage {
    pub scheduler: Arc<Scheduler<Kv>>,
    pub gc: Arc<GcWorker<Kv>>,
}

impl Storage {
    pub fn start(
        engine: RocksEngine,
        controller: &ConfigController,
        registry: &Registry,
    ) -> Storage {
        let c = controller.current();
        let kv = LocalKv::new(engine);
        let scheduler = Arc::new(Scheduler::new(
            kv.clone(),
            SchedulerConfig {
                workers: c.int("storage.scheduler-worker-pool-size") as usize,
                latch_slots: c.int("storage.scheduler-concurrency") as usize,
                pending_write_threshold_bytes: c
                    .size("storage.scheduler-pending-write-threshold")
                    .bytes() as usize,
            },
        ));
        let gc = Arc::new(GcWorker::new(
            kv,
            c.int("gc.batch-keys") as usize,
            c.size("gc.max-write-bytes-per-sec").bytes(),
        ));
        let sched = Arc::downgrade(&scheduler);
        controller.subscribe(
            "storage.scheduler-worker-pool-size",
            Box::new(move |c, _| {
                if let Some(s) = sched.upgrade() {
                    s.resize(c.int("storage.scheduler-worker-pool-size") as usize);
                }
                Ok(())
            }),
        );
        let worker = Arc::downgrade(&gc);
        controller.subscribe(
            "gc.",
            Box::new(move |c, _| {
                if let Some(gc) = worker.upgrade() {
                    gc.limiter
                        .set_bytes_per_sec(c.size("gc.max-write-bytes-per-sec").bytes());
                    gc.set_batch_keys(c.int("gc.batch-keys") as usize);
                }
                Ok(())
            }),
        );
        registry
            .register(Box::new(
                StorageCollector {
                    scheduler: scheduler.clone(),
                    gc: gc.clone(),
                    descs: Vec::new(),
                }
                .with_descs(),
            ))
            .expect("storage metrics register once");
        Storage { scheduler, gc }
    }
}

struct StorageCollector {
    scheduler: Arc<Scheduler<Kv>>,
    gc: Arc<GcWorker<Kv>>,
    descs: Vec<Desc>,
}

impl StorageCollector {
    fn with_descs(mut self) -> StorageCollector {
        self.descs = self
            .families()
            .iter()
            .flat_map(|c| c.desc().into_iter().cloned().collect::<Vec<_>>())
            .collect();
        self
    }

    fn families(&self) -> Vec<Box<dyn Collector>> {
        let gauge = |name: &str, help: &str, v: i64| -> Box<dyn Collector> {
            let g = IntGauge::new(name, help).expect("valid metric");
            g.set(v);
            Box::new(g)
        };
        let counter = |name: &str, help: &str, v: u64| -> Box<dyn Collector> {
            let c = IntCounter::new(name, help).expect("valid metric");
            c.inc_by(v);
            Box::new(c)
        };
        let gc = self.gc.stats();
        vec![
            gauge(
                "atoll_scheduler_workers",
                "Transaction scheduler worker threads",
                self.scheduler.workers() as i64,
            ),
            gauge(
                "atoll_gc_max_write_bytes_per_sec",
                "GC write limit in force, 0 = none",
                self.gc.limiter.bytes_per_sec() as i64,
            ),
            counter(
                "atoll_gc_keys_scanned_total",
                "Keys the GC worker examined",
                gc.keys_scanned,
            ),
            counter(
                "atoll_gc_versions_deleted_total",
                "Versions the GC worker removed",
                gc.versions_deleted,
            ),
            counter(
                "atoll_gc_write_bytes_total",
                "Bytes the GC worker wrote (GC speed is its rate)",
                gc.bytes_written,
            ),
        ]
    }
}

impl Collector for StorageCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.families().iter().flat_map(|c| c.collect()).collect()
    }
}
