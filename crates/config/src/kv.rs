//! The kv node's knobs: KNOBS.md §1 with TiKV's names, units, ranges and online rule.
//!
//! Default formulas are TiKV's (v8.5.4+ code) except where Atoll documents a better one:
//! - `readpool.unified.max-thread-count`: TiKV's `max(4, floor(CPU*0.8))`, capped at the cores
//!   the process may use (at least 2), so a 1- or 2-core node does not run 4 read threads on
//!   2 cores. Not 1: a point read then waits behind a scan's time slice, and the pool's
//!   reserve for small reads has no second worker to keep out of big slices (sysbench
//!   oltp_read_write on a 2-core playground, whose kv node gets 0.67 CPU: qps +7 % and +30 %
//!   in two A/B rounds, the second on a quieter machine).
//! - `server.grpc-concurrency`: TiKV gives 5 threads below 16 cores; the hybrid-deployment guide
//!   advises 2 for 8 cores. Atoll uses one gRPC thread per 4 cores (1 to 4) below 16 cores and
//!   TiKV's `3*base+2` from 16 cores on.
//! - `storage.scheduler-worker-pool-size`: 4 below 16 cores, TiKV's documented default, not
//!   its current code's `clamp(CPU, 1, 4)`. TiKV's workers hand the write batch to raftstore;
//!   Atoll's (until raftstore lands) write and fsync it themselves, so a worker mostly waits
//!   on the disk, and concurrent workers share RocksDB's group commit. One worker made
//!   sysbench oltp_write_only 1481 qps on a 2-core playground, four 2360 (same run, online).
//! - `readpool.unified.small-request-share`, `level0-threshold`, `level1-threshold` and
//!   `time-slice` are Atoll's own (DESIGN.md §5; TiKV hard-codes 5 ms, 100 ms).
//!
//! - `raftstore.store-io-pool-size`: TiKV's 1 (since v8.0) from 4 cores on, 0 below. A
//!   store-io thread lets the raftstore thread go on while the log is fsynced, but on a small
//!   node handing every write to another thread and back costs more CPU than the overlap
//!   saves: replicated sysbench oltp_write_only at 32 threads on a 2-core playground did
//!   9.6 % fewer qps at 9.4 % more CPU per txn with 1 than with 0, every round slower
//!   (median of 3 alternating rounds, bench/ab). TPC-C at 8 threads, latency-bound, went the
//!   other way, +6.7 % tpmC, but within its rounds' spread (one of three rounds slower).
//! - `raftstore.pd-store-heartbeat-tick-interval` is at most 10 s (TiKV's default): PD takes
//!   a store silent for 20 s as disconnected.
//! - `rocksdb.rate-limiter-auto-tuned` is restart-only (online in TiKV, whose RocksDB fork
//!   can switch auto-tuning on a live limiter; upstream RocksDB cannot).
//!
//! - `raftstore.replication` is Atoll's own and transitional: true runs every write through
//!   raftstore (Raft-replicated regions; PD adds replicas up to `replication.max-replicas`),
//!   false keeps the single-replica write path until raftstore is as fast. The playground
//!   turns it on with more than one kv node.
//!
//! Atoll has only the unified read pool and always keeps Raft logs in raft-engine, so
//! `readpool.*.use-unified-pool = false` and `raft-engine.enable = false` are rejected
//! with a message that says so, instead of being silently ignored.

use base::{ByteSize, ReadableDuration};

use crate::config::Config;
use crate::error::ConfigError;
use crate::spec::*;
use crate::value::{Kind, Value};

/// raft-engine's recovery modes, by TiKV's names.
pub const RECOVERY_MODES: &[&str] = &[
    "absolute-consistency",
    "tolerate-tail-corruption",
    "tolerate-any-corruption",
];

pub const COMPRESSIONS: &[&str] = &["no", "snappy", "zlib", "bzip2", "lz4", "lz4hc", "zstd"];
const BOTTOMMOST_COMPRESSIONS: &[&str] = &[
    "disable", "no", "snappy", "zlib", "bzip2", "lz4", "lz4hc", "zstd",
];
const CF_COMPRESSION_DEFAULT: &[&str] = &["no", "no", "lz4", "lz4", "lz4", "zstd", "zstd"];
const LOCKCF_COMPRESSION_DEFAULT: &[&str] = &["no"; 7];
const LEVELS: Kind = Kind::EnumList {
    allowed: COMPRESSIONS,
    len: 7,
};

/// Unified read pool size: TiKV's `max(4, floor(CPU*0.8))`, never more than the cores we may
/// use unless that is one.
pub fn unified_read_pool_threads(cpu: f64) -> i64 {
    let tikv = ((cpu * 0.8).floor() as i64).max(4);
    tikv.min((cpu.ceil() as i64).max(2))
}

/// gRPC threads: one per 4 cores below 16 cores (1..=4), TiKV's `3*base+2` from 16 cores on.
pub fn grpc_concurrency(cpu: f64) -> i64 {
    if cpu >= 16.0 {
        3 * grpc_base(cpu) + 2
    } else {
        ((cpu / 4.0).ceil() as i64).clamp(1, 4)
    }
}

/// TiKV's `clamp(floor(CPU/8), 1, 4)`: the base of gRPC sizing and `grpc-raft-conn-num`.
pub fn grpc_base(cpu: f64) -> i64 {
    ((cpu / 8.0).floor() as i64).clamp(1, 4)
}

/// The scheduler pool size: 8 from 16 cores on, else 4 (TiKV's documented value; its code's
/// `clamp(CPU, 1, 4)` assumes workers that hand writes to raftstore, while Atoll's wait for
/// their own fsync, see the module header).
pub fn scheduler_worker_pool_size(cpu: f64) -> i64 {
    if cpu >= 16.0 { 8 } else { 4 }
}

/// Store-io threads: TiKV's 1 from 4 cores on, else 0 (the raftstore thread writes the log
/// itself; see the module header).
pub fn store_io_pool_size(cpu: f64) -> i64 {
    if cpu >= 4.0 { 1 } else { 0 }
}

/// TiKV's `max(2, min(9, CPU-1))` flush + compaction threads.
pub fn max_background_jobs(cpu: f64) -> i64 {
    ((cpu.floor() as i64).max(1) - 1).clamp(2, 9)
}

pub static KNOBS: &[KnobSpec] = knob_table![
    KnobSpec {
        name: "server.addr",
        kind: Kind::Address,
        default: |_| text("127.0.0.1:20160"),
        online: false,
    },
    KnobSpec {
        name: "server.status-addr",
        kind: Kind::Address,
        default: |_| text("127.0.0.1:20180"),
        online: false,
    },
    KnobSpec {
        name: "server.grpc-concurrency",
        kind: Kind::Int { min: 1, max: 1024 },
        default: |d| int(grpc_concurrency(d.cpu())),
        online: false,
    },
    KnobSpec {
        name: "server.grpc-raft-conn-num",
        kind: Kind::Int { min: 1, max: 64 },
        default: |d| int(grpc_base(d.cpu())),
        online: false,
    },
    KnobSpec {
        name: "server.grpc-compression-type",
        kind: Kind::Enum(&["none", "deflate", "gzip"]),
        default: |_| text("none"),
        online: false,
    },
    KnobSpec {
        name: "server.local-socket",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: false,
    },
    KnobSpec {
        name: "server.grpc-gzip-compression-level",
        kind: Kind::Int { min: 0, max: 9 },
        default: |_| int(2),
        online: false,
    },
    KnobSpec {
        name: "server.snap-io-max-bytes-per-sec",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize(100 << 20)),
        online: true,
    },
    KnobSpec {
        name: "server.concurrent-send-snap-limit",
        kind: Kind::Int { min: 1, max: 1024 },
        default: |_| int(32),
        online: true,
    },
    KnobSpec {
        name: "server.concurrent-recv-snap-limit",
        kind: Kind::Int { min: 1, max: 1024 },
        default: |_| int(32),
        online: true,
    },
    KnobSpec {
        name: "server.grpc-min-message-size-to-compress",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize(4096)),
        online: false,
    },
    KnobSpec {
        name: "pd.endpoints",
        kind: Kind::AddressList,
        default: |_| list(&["127.0.0.1:2379"]),
        online: false,
    },
    KnobSpec {
        name: "storage.data-dir",
        kind: Kind::Path,
        default: |_| text("./atoll-data/kv"),
        online: false,
    },
    KnobSpec {
        name: "storage.scheduler-worker-pool-size",
        kind: INT_POSITIVE,
        default: |d| int(scheduler_worker_pool_size(d.cpu())),
        online: true,
    },
    KnobSpec {
        name: "storage.scheduler-concurrency",
        kind: Kind::Int {
            min: 1,
            max: 1 << 26,
        },
        default: |_| int(524_288),
        online: false,
    },
    KnobSpec {
        name: "storage.scheduler-pending-write-threshold",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize::mib(100)),
        online: false,
    },
    KnobSpec {
        // TiKV's: pessimistic locks live in memory (see `mvcc::pessimistic_locks`).
        name: "pessimistic-txn.in-memory",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: true,
    },
    KnobSpec {
        name: "pessimistic-txn.in-memory-instance-size-limit",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize::mib(100)),
        online: true,
    },
    KnobSpec {
        // TiKV's: how long the kv node holds a pessimistic lock request that finds another
        // txn's lock, waking it when that lock is released (`kv_server::lock_waits`); 0
        // answers at once. At most 10 s, below the SQL node's 20 s request timeout.
        name: "pessimistic-txn.wait-for-lock-timeout",
        kind: Kind::Duration {
            min: ReadableDuration::millis(0),
            max: ReadableDuration::secs(10),
        },
        default: |_| dur(ReadableDuration::secs(1)),
        online: true,
    },
    KnobSpec {
        name: "storage.block-cache.capacity",
        kind: Kind::SIZE_ANY,
        // TiKV's 45 % of memory, rounded down to whole MiB so it prints readably.
        default: |d| size(ByteSize((d.memory() / 100 * 45) >> 20 << 20)),
        online: true,
    },
    KnobSpec {
        name: "storage.flow-control.enable",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: true,
    },
    KnobSpec {
        name: "storage.flow-control.memtables-threshold",
        kind: INT_POSITIVE,
        default: |_| int(5),
        online: true,
    },
    KnobSpec {
        name: "storage.flow-control.l0-files-threshold",
        kind: INT_POSITIVE,
        default: |_| int(20),
        online: true,
    },
    KnobSpec {
        name: "storage.flow-control.soft-pending-compaction-bytes-limit",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize::gib(192)),
        online: true,
    },
    KnobSpec {
        name: "storage.flow-control.hard-pending-compaction-bytes-limit",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize::gib(1024)),
        online: true,
    },
    KnobSpec {
        name: "readpool.unified.min-thread-count",
        kind: INT_POSITIVE,
        default: |_| int(1),
        online: false,
    },
    KnobSpec {
        name: "readpool.unified.max-thread-count",
        kind: INT_POSITIVE,
        default: |d| int(unified_read_pool_threads(d.cpu())),
        online: true,
    },
    KnobSpec {
        name: "readpool.unified.auto-adjust-pool-size",
        kind: Kind::Bool,
        default: |_| Value::Bool(false),
        online: true,
    },
    KnobSpec {
        name: "readpool.unified.cpu-threshold",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: |_| Value::Float(0.0),
        online: true,
    },
    KnobSpec {
        name: "readpool.unified.max-tasks-per-worker",
        kind: Kind::Int {
            min: 2,
            max: i64::MAX,
        },
        default: |_| int(2000),
        online: true,
    },
    KnobSpec {
        name: "readpool.unified.small-request-share",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: |_| Value::Float(0.8),
        online: true,
    },
    KnobSpec {
        name: "readpool.unified.level0-threshold",
        kind: Kind::Duration {
            min: ReadableDuration::millis(1),
            max: ReadableDuration::secs(10),
        },
        default: |_| dur(ReadableDuration::millis(5)),
        online: false,
    },
    KnobSpec {
        name: "readpool.unified.level1-threshold",
        kind: Kind::Duration {
            min: ReadableDuration::millis(1),
            max: ReadableDuration::secs(600),
        },
        default: |_| dur(ReadableDuration::millis(100)),
        online: false,
    },
    KnobSpec {
        name: "readpool.unified.time-slice",
        kind: Kind::Duration {
            min: ReadableDuration(std::time::Duration::from_micros(100)),
            max: ReadableDuration::secs(1),
        },
        default: |_| dur(ReadableDuration::millis(1)),
        online: false,
    },
    KnobSpec {
        name: "readpool.storage.use-unified-pool",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: false,
    },
    KnobSpec {
        name: "readpool.coprocessor.use-unified-pool",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: false,
    },
    KnobSpec {
        name: "gc.max-write-bytes-per-sec",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize(0)),
        online: true,
    },
    KnobSpec {
        name: "gc.batch-keys",
        kind: Kind::Int {
            min: 1,
            max: 1 << 20,
        },
        default: |_| int(512),
        online: true,
    },
    KnobSpec {
        name: "gc.ratio-threshold",
        kind: Kind::Float { min: 0.0, max: 1e9 },
        default: |_| Value::Float(1.1),
        online: true,
    },
    KnobSpec {
        name: "gc.enable-compaction-filter",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: true,
    },
    KnobSpec {
        name: "gc.num-threads",
        kind: Kind::Int { min: 1, max: 64 },
        default: |_| int(1),
        online: true,
    },
    KnobSpec {
        name: "rocksdb.max-background-jobs",
        kind: Kind::Int {
            min: 2,
            max: i64::MAX,
        },
        default: |d| int(max_background_jobs(d.cpu())),
        online: true,
    },
    KnobSpec {
        name: "rocksdb.max-background-flushes",
        kind: INT_POSITIVE,
        default: |d| int(((d.int("rocksdb.max-background-jobs") + 3) / 4).min(3)),
        online: true,
    },
    KnobSpec {
        name: "rocksdb.max-sub-compactions",
        kind: INT_POSITIVE,
        default: |d| {
            int((d.int("rocksdb.max-background-jobs")
                - d.int("rocksdb.max-background-flushes")
                - 1)
            .clamp(1, 3))
        },
        online: false,
    },
    KnobSpec {
        name: "rocksdb.rate-bytes-per-sec",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize::gib(10)),
        online: true,
    },
    KnobSpec {
        name: "rocksdb.rate-limiter-mode",
        kind: Kind::Enum(&["read-only", "write-only", "all-io"]),
        default: |_| text("write-only"),
        online: false,
    },
    KnobSpec {
        name: "rocksdb.rate-limiter-auto-tuned",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        // TiKV changes it online through its RocksDB fork; upstream RocksDB fixes auto-tuning
        // when the limiter is made, so Atoll applies it at restart.
        online: false,
    },
    KnobSpec {
        name: "rocksdb.titan.enabled",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: false,
    },
    KnobSpec {
        name: "rocksdb.defaultcf.titan.min-blob-size",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize::kib(32)),
        online: true,
    },
    KnobSpec {
        name: "rocksdb.defaultcf.titan.blob-file-compression",
        kind: Kind::Enum(COMPRESSIONS),
        default: |_| text("zstd"),
        online: true,
    },
    KnobSpec {
        name: "rocksdb.defaultcf.compression-per-level",
        kind: LEVELS,
        default: |_| list(CF_COMPRESSION_DEFAULT),
        online: false,
    },
    KnobSpec {
        name: "rocksdb.defaultcf.bottommost-level-compression",
        kind: Kind::Enum(BOTTOMMOST_COMPRESSIONS),
        default: |_| text("zstd"),
        online: false,
    },
    KnobSpec {
        name: "rocksdb.writecf.compression-per-level",
        kind: LEVELS,
        default: |_| list(CF_COMPRESSION_DEFAULT),
        online: false,
    },
    KnobSpec {
        name: "rocksdb.writecf.bottommost-level-compression",
        kind: Kind::Enum(BOTTOMMOST_COMPRESSIONS),
        default: |_| text("zstd"),
        online: false,
    },
    KnobSpec {
        name: "rocksdb.lockcf.compression-per-level",
        kind: LEVELS,
        default: |_| list(LOCKCF_COMPRESSION_DEFAULT),
        online: false,
    },
    KnobSpec {
        name: "rocksdb.lockcf.bottommost-level-compression",
        kind: Kind::Enum(BOTTOMMOST_COMPRESSIONS),
        default: |_| text("disable"),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.enable",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.dir",
        kind: Kind::Path,
        default: |_| text(""),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.format-version",
        kind: Kind::Int { min: 1, max: 2 },
        default: |_| int(2),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.enable-log-recycle",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.prefill-for-recycle",
        kind: Kind::Bool,
        default: |_| Value::Bool(false),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.purge-threshold",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize::gib(10)),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.memory-limit",
        kind: Kind::SIZE_ANY,
        // 15 % of memory, rounded down to whole MiB so it prints readably.
        default: |d| size(ByteSize((d.memory() / 100 * 15) >> 20 << 20)),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.target-file-size",
        kind: Kind::Size {
            min: ByteSize::mib(1),
            max: ByteSize::gib(4),
        },
        default: |_| size(ByteSize::mib(128)),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.batch-compression-threshold",
        kind: Kind::SIZE_ANY,
        default: |_| size(ByteSize::kib(8)),
        online: false,
    },
    KnobSpec {
        name: "raft-engine.recovery-mode",
        kind: Kind::Enum(RECOVERY_MODES),
        default: |_| text("tolerate-tail-corruption"),
        online: false,
    },
    KnobSpec {
        name: "coprocessor.region-split-size",
        kind: Kind::Size {
            min: ByteSize::mib(1),
            max: ByteSize::gib(10),
        },
        default: |_| size(ByteSize::mib(256)),
        online: true,
    },
    KnobSpec {
        name: "coprocessor.region-max-size",
        kind: Kind::SIZE_ANY,
        default: |d| size(ByteSize(d.size("coprocessor.region-split-size").0 / 2 * 3)),
        online: true,
    },
    KnobSpec {
        name: "coprocessor.region-split-keys",
        kind: INT_POSITIVE,
        default: |d| int((d.size("coprocessor.region-split-size").0 >> 20).max(1) as i64 * 10_000),
        online: true,
    },
    KnobSpec {
        name: "coprocessor.region-max-keys",
        kind: INT_POSITIVE,
        default: |d| int(d.int("coprocessor.region-split-keys") / 2 * 3),
        online: true,
    },
    KnobSpec {
        name: "coprocessor.batch-split-limit",
        kind: INT_POSITIVE,
        default: |_| int(10),
        online: true,
    },
    KnobSpec {
        name: "raftstore.replication",
        kind: Kind::Bool,
        default: |_| Value::Bool(false),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-base-tick-interval",
        kind: Kind::Duration {
            min: ReadableDuration::millis(10),
            max: ReadableDuration::secs(60),
        },
        default: |_| dur(ReadableDuration::secs(1)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-heartbeat-ticks",
        kind: Kind::Int { min: 1, max: 1000 },
        default: |_| int(2),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-election-timeout-ticks",
        kind: Kind::Int {
            min: 2,
            max: 10_000,
        },
        default: |_| int(10),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-store-max-leader-lease",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::secs(9)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.prevote",
        kind: Kind::Bool,
        default: |_| Value::Bool(true),
        online: false,
    },
    KnobSpec {
        name: "raftstore.store-io-pool-size",
        kind: Kind::Int { min: 0, max: 64 },
        default: |d| int(store_io_pool_size(d.cpu())),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-max-size-per-msg",
        kind: Kind::Size {
            min: ByteSize::kib(1),
            max: ByteSize::gib(3),
        },
        default: |_| size(ByteSize::mib(1)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-max-inflight-msgs",
        kind: Kind::Int {
            min: 1,
            max: 16_384,
        },
        default: |_| int(256),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-entry-max-size",
        kind: Kind::Size {
            min: ByteSize::kib(1),
            max: ByteSize::gib(3),
        },
        default: |_| size(ByteSize::mib(8)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-log-gc-tick-interval",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::secs(3)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-log-gc-threshold",
        kind: INT_POSITIVE,
        default: |_| int(50),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-log-gc-count-limit",
        kind: INT_POSITIVE,
        // TiKV: three quarters of a split-size region in 1 KiB entries.
        default: |d| int(((d.size("coprocessor.region-split-size").0 * 3 / 4) >> 10).max(1) as i64),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-log-gc-size-limit",
        kind: Kind::SIZE_ANY,
        // TiKV: three quarters of a split-size region.
        default: |d| size(ByteSize(d.size("coprocessor.region-split-size").0 * 3 / 4)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.merge-check-tick-interval",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::secs(2)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.merge-max-log-gap",
        kind: INT_POSITIVE,
        default: |_| int(10),
        online: false,
    },
    KnobSpec {
        name: "raftstore.raft-engine-purge-interval",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::secs(10)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.pd-heartbeat-tick-interval",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::secs(60)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.pd-store-heartbeat-tick-interval",
        // PD takes a store silent for 20 s as disconnected: beat well inside that.
        kind: Kind::Duration {
            min: ReadableDuration::millis(100),
            max: ReadableDuration::secs(10),
        },
        default: |_| dur(ReadableDuration::secs(10)),
        online: false,
    },
    KnobSpec {
        name: "raftstore.region-split-check-diff",
        kind: Kind::SIZE_ANY,
        default: |d| size(ByteSize(d.size("coprocessor.region-split-size").0 / 16)),
        online: true,
    },
    KnobSpec {
        name: "raftstore.split-region-check-tick-interval",
        kind: DURATION_ANY,
        default: |_| dur(ReadableDuration::secs(10)),
        online: true,
    },
];

/// Rules that involve more than one knob or the machine's size.
pub fn check(c: &Config) -> Result<(), ConfigError> {
    check_cluster_tls(c)?;
    let cpu = c.resources().cpu_cores;
    let min_threads = c.int("readpool.unified.min-thread-count");
    let max_threads = c.int("readpool.unified.max-thread-count");
    let thread_ceiling = ((cpu * 10.0) as i64).max(4);
    if max_threads < min_threads || max_threads > thread_ceiling {
        return Err(ConfigError::bad_value(
            "readpool.unified.max-thread-count",
            format!(
                "{max_threads} is out of range [{min_threads} (min-thread-count), {thread_ceiling} (max(4, CPU*10))]"
            ),
        ));
    }
    let (level0, level1) = (
        c.duration("readpool.unified.level0-threshold"),
        c.duration("readpool.unified.level1-threshold"),
    );
    if level1 <= level0 {
        return Err(ConfigError::bad_value(
            "readpool.unified.level1-threshold",
            format!("{level1} must be above readpool.unified.level0-threshold ({level0})"),
        ));
    }
    let sched = c.int("storage.scheduler-worker-pool-size");
    let sched_ceiling = (cpu as i64).max(4);
    if sched > sched_ceiling {
        return Err(ConfigError::bad_value(
            "storage.scheduler-worker-pool-size",
            format!("{sched} is out of range [1, {sched_ceiling} (max(4, CPU))]"),
        ));
    }
    let jobs = c.int("rocksdb.max-background-jobs");
    let jobs_ceiling = ((cpu * 10.0) as i64).max(2);
    if jobs > jobs_ceiling {
        return Err(ConfigError::bad_value(
            "rocksdb.max-background-jobs",
            format!("{jobs} is out of range [2, {jobs_ceiling} (CPU*10)]"),
        ));
    }
    let flushes = c.int("rocksdb.max-background-flushes");
    if flushes >= jobs {
        return Err(ConfigError::bad_value(
            "rocksdb.max-background-flushes",
            format!(
                "{flushes} leaves no compaction thread: it must be below max-background-jobs ({jobs})"
            ),
        ));
    }
    for (max, split) in [
        (
            "coprocessor.region-max-size",
            "coprocessor.region-split-size",
        ),
        (
            "coprocessor.region-max-keys",
            "coprocessor.region-split-keys",
        ),
    ] {
        if order(c.value(max), c.value(split)) {
            return Err(ConfigError::bad_value(
                max,
                format!("must be at least `{split}` ({})", c.value(split)),
            ));
        }
    }
    for key in [
        "readpool.storage.use-unified-pool",
        "readpool.coprocessor.use-unified-pool",
    ] {
        if !c.bool(key) {
            return Err(ConfigError::bad_value(
                key,
                "Atoll runs every read on the unified read pool; only true is supported",
            ));
        }
    }
    if !c.bool("raft-engine.enable") {
        return Err(ConfigError::bad_value(
            "raft-engine.enable",
            "Atoll always keeps Raft logs in raft-engine; only true is supported",
        ));
    }
    let tick = c.duration("raftstore.raft-base-tick-interval").0;
    let election_ticks = c.int("raftstore.raft-election-timeout-ticks");
    let heartbeat_ticks = c.int("raftstore.raft-heartbeat-ticks");
    if heartbeat_ticks >= election_ticks {
        return Err(ConfigError::bad_value(
            "raftstore.raft-heartbeat-ticks",
            format!(
                "{heartbeat_ticks} must be below raftstore.raft-election-timeout-ticks ({election_ticks})"
            ),
        ));
    }
    let lease = c.duration("raftstore.raft-store-max-leader-lease").0;
    let lease_ceiling = tick * (election_ticks as u32 - 1);
    if lease > lease_ceiling {
        return Err(ConfigError::bad_value(
            "raftstore.raft-store-max-leader-lease",
            format!(
                "{} must be at most the election timeout less one tick ({}): a lease must end before another leader can be elected",
                c.duration("raftstore.raft-store-max-leader-lease"),
                ReadableDuration(lease_ceiling)
            ),
        ));
    }
    if c.bool("raft-engine.enable-log-recycle") && c.int("raft-engine.format-version") < 2 {
        return Err(ConfigError::bad_value(
            "raft-engine.enable-log-recycle",
            "needs raft-engine.format-version = 2",
        ));
    }
    Ok(())
}

/// `a < b` for two values of the same numeric kind.
fn order(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Size(a), Value::Size(b)) => a < b,
        (Value::Int(a), Value::Int(b)) => a < b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_derived_defaults_never_exceed_the_cores_on_small_machines() {
        // (cpu, read pool, grpc, scheduler, background jobs). The exceptions: scheduler
        // workers mostly wait for their fsync, so small machines get 4 too, and the read
        // pool has 2 threads at least.
        let table = [
            (0.5, 2, 1, 4, 2, 0),
            (1.0, 2, 1, 4, 2, 0),
            (2.0, 2, 1, 4, 2, 0),
            (4.0, 4, 1, 4, 3, 1),
            (8.0, 6, 2, 4, 7, 1),
            (16.0, 12, 8, 8, 9, 1),
            (32.0, 25, 14, 8, 9, 1),
        ];
        for (cpu, read, grpc, sched, jobs, store_io) in table {
            assert_eq!(unified_read_pool_threads(cpu), read, "read pool at {cpu}");
            assert_eq!(grpc_concurrency(cpu), grpc, "grpc at {cpu}");
            assert_eq!(scheduler_worker_pool_size(cpu), sched, "scheduler at {cpu}");
            assert_eq!(max_background_jobs(cpu), jobs, "jobs at {cpu}");
            assert_eq!(store_io_pool_size(cpu), store_io, "store-io at {cpu}");
        }
    }
}
