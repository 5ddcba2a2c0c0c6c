//! The kv node's transaction side: the scheduler and the GC worker on one local replica,
//! kept in step with `storage.scheduler-worker-pool-size`, `pessimistic-txn.*` and `gc.*`,
//! with their figures in `/metrics` (scheduler workers, pessimistic locks in memory, GC
//! keys, versions and bytes).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base::limits::FLOW_CONTROL_SAMPLE_MS;

use config::ConfigController;
use engine::Cf;
use engine_rocks::RocksEngine;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounter, IntGauge, Registry};
use txn::gc::GcWorker;
use txn::{ReplicatedKv, Scheduler, SchedulerConfig, WriteGate};

pub type Kv = crate::raft_kv::NodeKv;

/// The scheduler's settings from `storage.scheduler-*`.
pub fn scheduler_config(c: &config::Config) -> SchedulerConfig {
    SchedulerConfig {
        workers: c.int("storage.scheduler-worker-pool-size") as usize,
        latch_slots: c.int("storage.scheduler-concurrency") as usize,
        pending_write_threshold_bytes: c.size("storage.scheduler-pending-write-threshold").bytes()
            as usize,
    }
}

pub struct Storage {
    pub scheduler: Arc<Scheduler<Kv>>,
    pub gc: Arc<GcWorker<Kv>>,
}

impl Storage {
    /// Starts the scheduler and the GC worker on `kv`.
    pub fn start(
        kv: Kv,
        controller: &Arc<ConfigController>,
        registry: &Registry,
    ) -> Result<Storage, node::NodeError> {
        let c = controller.current();
        configure_pessimistic_locks(&kv, &c);
        let scheduler = Arc::new(Scheduler::new(kv.clone(), scheduler_config(&c)));
        scheduler.set_write_gate(Arc::new(FlowControl::new(
            kv.engine().clone(),
            controller.clone(),
        )));
        let gc = Arc::new(GcWorker::new(
            kv,
            scheduler.latches(),
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
        let locks_of = Arc::downgrade(&scheduler);
        controller.subscribe(
            "pessimistic-txn.",
            Box::new(move |c, _| {
                if let Some(s) = locks_of.upgrade() {
                    configure_pessimistic_locks(s.kv(), c);
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
        Ok(Storage { scheduler, gc })
    }
}

/// Pessimistic locks stay in memory as `pessimistic-txn.*` says (a replicated node's on its
/// regions' leader; see `raft_kv`).
fn configure_pessimistic_locks(kv: &Kv, c: &config::Config) {
    kv.pessimistic_locks().configure(
        c.bool("pessimistic-txn.in-memory"),
        c.size("pessimistic-txn.in-memory-instance-size-limit")
            .bytes() as usize,
    );
}

/// What flow control reads from the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineLoad {
    pub l0_files: u64,
    pub immutable_memtables: u64,
    pub pending_compaction_bytes: u64,
}

/// `storage.flow-control.*` as a yes/no gate: writes wait (as busy errors the client backs
/// off on) while any figure is at its threshold. TiKV throttles smoothly instead; this is
/// the simple first step, and RocksDB's own stall triggers still stand behind it.
pub fn stall_reason(c: &config::Config, load: EngineLoad) -> Option<String> {
    if !c.bool("storage.flow-control.enable") {
        return None;
    }
    let checks = [
        (
            load.l0_files,
            c.int("storage.flow-control.l0-files-threshold") as u64,
            "L0 files",
            "l0-files-threshold",
        ),
        (
            load.immutable_memtables,
            c.int("storage.flow-control.memtables-threshold") as u64,
            "immutable memtables",
            "memtables-threshold",
        ),
        (
            load.pending_compaction_bytes,
            c.size("storage.flow-control.soft-pending-compaction-bytes-limit")
                .bytes(),
            "pending compaction bytes",
            "soft-pending-compaction-bytes-limit",
        ),
    ];
    checks
        .iter()
        .find(|(value, limit, _, _)| value >= limit)
        .map(|(value, limit, what, knob)| {
            format!("write stall: {value} {what}, storage.flow-control.{knob} is {limit}")
        })
}

/// The scheduler's write gate: [`stall_reason`] on the engine's figures, read again at most
/// every [`FLOW_CONTROL_SAMPLE_MS`].
struct FlowControl {
    engine: RocksEngine,
    controller: Arc<ConfigController>,
    /// The last verdict and when it was reached; it stands for [`FLOW_CONTROL_SAMPLE_MS`].
    sampled: Mutex<Option<(Instant, Result<(), String>)>>,
}

impl FlowControl {
    fn new(engine: RocksEngine, controller: Arc<ConfigController>) -> FlowControl {
        FlowControl {
            engine,
            controller,
            sampled: Mutex::new(None),
        }
    }

    /// The verdict on the engine's load now.
    fn verdict(&self) -> Result<(), String> {
        let figure = |cf: Cf, name: &str| self.engine.property(cf, name).unwrap_or(0);
        let load = Cf::ALL
            .iter()
            .fold(EngineLoad::default(), |acc, &cf| EngineLoad {
                l0_files: acc.l0_files.max(figure(cf, "rocksdb.num-files-at-level0")),
                immutable_memtables: acc
                    .immutable_memtables
                    .max(figure(cf, "rocksdb.num-immutable-mem-table")),
                pending_compaction_bytes: acc
                    .pending_compaction_bytes
                    .max(figure(cf, "rocksdb.estimate-pending-compaction-bytes")),
            });
        match stall_reason(&self.controller.current(), load) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }
}

impl WriteGate for FlowControl {
    fn check(&self) -> Result<(), String> {
        let mut sampled = self.sampled.lock().expect("flow control lock poisoned");
        match &*sampled {
            Some((at, verdict)) if at.elapsed() < Duration::from_millis(FLOW_CONTROL_SAMPLE_MS) => {
                verdict.clone()
            }
            _ => {
                let verdict = self.verdict();
                *sampled = Some((Instant::now(), verdict.clone()));
                verdict
            }
        }
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
        let (pessimistic_locks, pessimistic_bytes) =
            self.scheduler.kv().pessimistic_locks().stats();
        vec![
            gauge(
                "atoll_pessimistic_locks_in_memory",
                "Pessimistic locks kept in memory (pessimistic-txn.in-memory)",
                pessimistic_locks as i64,
            ),
            gauge(
                "atoll_pessimistic_locks_in_memory_bytes",
                "Their size as pessimistic-txn.in-memory-instance-size-limit counts it",
                pessimistic_bytes as i64,
            ),
            counter(
                "atoll_one_pc_commits_total",
                "Transactions this node committed in one phase (tidb_enable_1pc)",
                self.scheduler.kv().lock_table().one_pc_commits(),
            ),
            gauge(
                "atoll_scheduler_workers",
                "Transaction scheduler worker threads",
                self.scheduler.workers() as i64,
            ),
            {
                let c = prometheus::Counter::new(
                    "atoll_scheduler_latch_wait_seconds_total",
                    "Time scheduler workers waited for commands' latches (writes to the same keys)",
                )
                .expect("valid metric");
                c.inc_by(self.scheduler.latch_wait_seconds());
                Box::new(c)
            },
            gauge(
                "atoll_gc_max_write_bytes_per_sec",
                "GC write limit in force, 0 = none",
                self.gc.limiter.bytes_per_sec() as i64,
            ),
            gauge(
                "atoll_kv_store_id",
                "This node's store id in PD, 0 until registered",
                crate::pd_worker::STORE_ID.load(std::sync::atomic::Ordering::Relaxed) as i64,
            ),
            gauge(
                "atoll_gc_safe_point",
                "The GC safe point this node last collected up to",
                crate::gc_driver::SAFE_POINT.load(std::sync::atomic::Ordering::Relaxed) as i64,
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

#[cfg(test)]
mod tests {
    use super::*;
    use config::{Config, Resources, Role};

    fn config(toml: &str) -> Config {
        let user = config::load::parse_toml(Role::Kv, toml, None).unwrap();
        Config::resolve(
            Role::Kv,
            Resources {
                cpu_cores: 2.0,
                memory_bytes: 8 << 30,
            },
            &user,
        )
        .unwrap()
    }

    #[test]
    fn writes_stall_at_any_threshold_and_never_when_flow_control_is_off() {
        let c = config("");
        assert_eq!(
            stall_reason(
                &c,
                EngineLoad {
                    l0_files: 19,
                    immutable_memtables: 4,
                    pending_compaction_bytes: 1 << 30
                }
            ),
            None
        );
        let r = stall_reason(
            &c,
            EngineLoad {
                l0_files: 20,
                ..EngineLoad::default()
            },
        )
        .unwrap();
        assert_eq!(
            r,
            "write stall: 20 L0 files, storage.flow-control.l0-files-threshold is 20"
        );
        assert!(
            stall_reason(
                &c,
                EngineLoad {
                    immutable_memtables: 5,
                    ..EngineLoad::default()
                }
            )
            .unwrap()
            .contains("memtables-threshold")
        );
        assert!(
            stall_reason(
                &c,
                EngineLoad {
                    pending_compaction_bytes: 192 << 30,
                    ..EngineLoad::default()
                }
            )
            .is_some()
        );
        let off = config("[storage.flow-control]\nenable = false\n");
        assert_eq!(
            stall_reason(
                &off,
                EngineLoad {
                    l0_files: 100,
                    ..EngineLoad::default()
                }
            ),
            None
        );
    }
}
