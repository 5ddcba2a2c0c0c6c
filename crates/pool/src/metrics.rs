//! Prometheus metrics of a read pool, read from its counters at scrape time:
//! per level the queued tasks, run time and slices and finished tasks; the serving threads,
//! the tasks in flight, and the busy ratio since the previous scrape. The CPU of the pool's
//! threads comes from `atoll_thread_cpu_seconds_total{name="unified-read"}` (their names);
//! the run time here also counts the slices callers ran themselves
//! ([`ReadPool::spawn_or_run_here`]), whose CPU shows under the caller's thread (gRPC).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{GaugeVec, IntGauge, Opts};

use crate::LEVELS;
use crate::pool::ReadPool;

pub struct PoolCollector {
    pool: Arc<ReadPool>,
    descs: Vec<Desc>,
    last: Mutex<(Instant, u64)>,
}

const PREFIX: &str = "atoll_unified_read_pool";

impl PoolCollector {
    pub fn new(pool: Arc<ReadPool>) -> PoolCollector {
        let descs = Self::families(&pool, 0.0)
            .iter()
            .flat_map(|c| c.desc().into_iter().cloned().collect::<Vec<_>>())
            .collect();
        let busy: u64 = pool.stats().run_ns.iter().sum();
        PoolCollector {
            pool,
            descs,
            last: Mutex::new((Instant::now(), busy)),
        }
    }

    fn families(pool: &ReadPool, busy_ratio: f64) -> Vec<Box<dyn Collector>> {
        let stats = pool.stats();
        let per_level = |name: &str, help: &str, values: [f64; LEVELS]| -> Box<dyn Collector> {
            let g = GaugeVec::new(Opts::new(format!("{PREFIX}_{name}"), help), &["level"])
                .expect("valid metric");
            for (level, v) in values.iter().enumerate() {
                g.with_label_values(&[&level.to_string()]).set(*v);
            }
            Box::new(g)
        };
        let gauge = |name: &str, help: &str, v: i64| -> Box<dyn Collector> {
            let g = IntGauge::new(format!("{PREFIX}_{name}"), help).expect("valid metric");
            g.set(v);
            Box::new(g)
        };
        let busy = prometheus::Gauge::new(
            format!("{PREFIX}_busy_ratio"),
            "Share of the serving threads' time spent running tasks since the last scrape",
        )
        .expect("valid metric");
        busy.set(busy_ratio);
        vec![
            per_level(
                "queued_tasks",
                "Tasks waiting in each level's queues",
                stats.queued.map(|q| q as f64),
            ),
            per_level(
                "run_seconds_total",
                "Time spent running tasks of each level",
                stats.run_ns.map(|n| n as f64 / 1e9),
            ),
            per_level(
                "slices_total",
                "Polls (slices) run at each level",
                stats.slices.map(|n| n as f64),
            ),
            per_level(
                "tasks_completed_total",
                "Tasks finished, by the level they finished at",
                stats.completed.map(|n| n as f64),
            ),
            gauge(
                "threads",
                "Threads serving the pool",
                stats.active_threads as i64,
            ),
            gauge(
                "tasks_in_flight",
                "Tasks spawned and not finished",
                stats.in_flight as i64,
            ),
            Box::new(busy),
        ]
    }
}

impl Collector for PoolCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let stats = self.pool.stats();
        let busy_ns: u64 = stats.run_ns.iter().sum();
        let ratio = {
            let mut last = self.last.lock().expect("metrics lock poisoned");
            let wall_ns = last.0.elapsed().as_nanos() as f64 * stats.active_threads.max(1) as f64;
            let ratio = if wall_ns > 0.0 {
                (busy_ns - last.1) as f64 / wall_ns
            } else {
                0.0
            };
            *last = (Instant::now(), busy_ns);
            ratio
        };
        Self::families(&self.pool, ratio)
            .iter()
            .flat_map(|c| c.collect())
            .collect()
    }
}
