//! The verdict: from two readings of every node and host, the bottlenecks ranked, each with
//! its evidence in numbers and the action that relieves it (the knob, in TiDB's name).
//!
//! Pure: a [`Window`] in, [`Finding`]s out, so that each rule is tested on made-up figures.
//! Every rule measures how much of some limit the cluster used over the window (a CPU
//! quota, a thread pool's threads, a disk's time, statements' time spent waiting); that
//! share is the finding's score, and the verdict lists findings by score. The thresholds
//! are the constants below; a share under its threshold is no finding.

use std::collections::BTreeMap;

use node::host::HostFigures;
use serde::Serialize;

use super::prom::Metrics;

/// A node's CPU over its enforced limit, or a host's over its cores, from which it counts.
pub const CPU_BUSY: f64 = 0.8;
/// A pool's CPU over its threads, from which it counts...
pub const POOL_BUSY: f64 = 0.8;
/// ...when it also uses this much CPU (a quarter of a core), so an idle pool never counts.
pub const POOL_MIN_CORES: f64 = 0.25;
/// A disk's busy time over the window, from which it counts.
pub const DISK_BUSY: f64 = 0.8;
/// The raftstore's time in log appends over the window, from which fsync latency counts.
pub const APPEND_BUSY: f64 = 0.5;
/// Time RocksDB stalled writes over the window, from which it counts.
pub const STALL_SHARE: f64 = 0.01;
/// Statements' time waiting on locks (or on PD for timestamps) over their whole time.
pub const WAIT_SHARE: f64 = 0.2;
/// Resident memory over the enforced limit.
pub const MEMORY_USED: f64 = 0.85;
/// One store's share of the hot regions' flow, from which it counts: with two stores or
/// more, [`HOT_REGIONS_MIN`] hot regions or more (one hot region cannot be spread), and
/// that store's kv node using [`HOT_STORE_BUSY`] of its CPU or more.
pub const HOT_SHARE: f64 = 0.6;
pub const HOT_REGIONS_MIN: u64 = 3;
pub const HOT_STORE_BUSY: f64 = 0.5;
/// The client: at most this many statements in flight on average...
pub const CLIENT_MAX_IN_FLIGHT: f64 = 2.0;
/// ...while no node and no host used more than this share of its CPU.
pub const CLIENT_IDLE_CPU: f64 = 0.7;
/// Below this many statements per second, with no limit reached, the cluster is idle.
pub const IDLE_QPS: f64 = 1.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Cpu,
    ThreadPool,
    DiskFsync,
    DiskBandwidth,
    WriteStall,
    LockContention,
    Tso,
    HotRegion,
    Client,
    Memory,
    None,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub node: String,
    pub evidence: String,
    pub action: String,
    /// The share of its limit, by which findings rank.
    #[serde(skip)]
    pub score: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Pd,
    Kv,
    Sql,
}

/// One node's two readings.
#[derive(Debug, Clone)]
pub struct NodeWindow {
    pub role: Role,
    /// Seconds between the two readings.
    pub seconds: f64,
    /// `kv 127.0.0.1:20160`: the role and the address clients use.
    pub name: String,
    pub first: Metrics,
    pub last: Metrics,
    /// The node's effective config (`GET /config`), `Null` when it was not read.
    pub config: serde_json::Value,
    /// The `host_id` of the host it runs on, when its `/debug/host` answered.
    pub host: Option<String>,
}

/// One host's two readings (any node on it answers for it).
#[derive(Debug, Clone)]
pub struct HostWindow {
    /// Seconds between the two readings.
    pub seconds: f64,
    pub first: HostFigures,
    pub last: HostFigures,
}

/// A store's leaders and its share of the hot regions' flow, as PD reports them.
#[derive(Debug, Clone, Default)]
pub struct StoreLoad {
    pub address: String,
    pub leaders: u64,
    /// Bytes per second of the hot regions it leads, written and read, and how many.
    pub hot_write_bytes: f64,
    pub hot_read_bytes: f64,
    pub hot_write_regions: u64,
    pub hot_read_regions: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Window {
    pub seconds: f64,
    pub nodes: Vec<NodeWindow>,
    pub hosts: BTreeMap<String, HostWindow>,
    pub stores: Vec<StoreLoad>,
}

impl NodeWindow {
    /// How much `name` (summed over its labels) grew per second.
    fn rate(&self, name: &str) -> f64 {
        ((self.last.sum(name) - self.first.sum(name)) / self.seconds.max(0.001)).max(0.0)
    }

    fn cpu(&self) -> f64 {
        self.rate("atoll_process_cpu_seconds_total")
    }

    fn cpu_limit(&self) -> Option<f64> {
        self.last
            .get("atoll_process_cpu_limit_cores")
            .filter(|l| *l > 0.0)
    }

    /// Each thread pool's CPU per second and its threads, by pool name: over the threads
    /// in both readings (one that started or ended in between has no difference to take).
    fn pool_cpu(&self) -> BTreeMap<String, (f64, usize)> {
        const THREADS: &str = "atoll_thread_cpu_seconds_total";
        let before: BTreeMap<&str, f64> = (self.first.samples(THREADS))
            .filter_map(|s| Some((s.label("tid")?, s.value)))
            .collect();
        let mut out: BTreeMap<String, (f64, usize)> = BTreeMap::new();
        for s in self.last.samples(THREADS) {
            let (Some(tid), Some(name)) = (s.label("tid"), s.label("name")) else {
                continue;
            };
            let Some(was) = before.get(tid) else { continue };
            let pool = out.entry(name.to_string()).or_default();
            pool.0 += ((s.value - was) / self.seconds.max(0.001)).max(0.0);
            pool.1 += 1;
        }
        out
    }

    /// A knob's value as `/config` shows it, by its dotted name.
    fn knob(&self, name: &str) -> Option<String> {
        let value = name
            .split('.')
            .try_fold(&self.config, |v, part| v.get(part))?;
        Some(match value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }
}

/// A thread pool diag watches, the knob that sizes it and what to do when it is full.
struct PoolKnob {
    role: Role,
    pool: &'static str,
    what: &'static str,
    knob: &'static str,
    /// Where its size is read, when its threads may share their name with others (tokio's
    /// blocking threads take the runtime's thread name).
    size: Size,
    action: &'static str,
}

enum Size {
    /// The threads of that name.
    Threads,
    /// The knob's value.
    Knob,
    /// A gauge of the node's.
    Gauge(&'static str),
}

const POOLS: [PoolKnob; 8] = [
    PoolKnob {
        role: Role::Kv,
        pool: "grpc-server",
        what: "gRPC poll",
        knob: "server.grpc-concurrency",
        size: Size::Knob,
        action: "raise server.grpc-concurrency, if the node has CPU to spare",
    },
    PoolKnob {
        role: Role::Kv,
        pool: "unified-read",
        what: "unified read pool",
        knob: "readpool.unified.max-thread-count",
        size: Size::Gauge("atoll_unified_read_pool_threads"),
        action: "raise readpool.unified.max-thread-count, if the node has CPU to spare",
    },
    PoolKnob {
        role: Role::Kv,
        pool: "sched-worker",
        what: "scheduler worker",
        knob: "storage.scheduler-worker-pool-size",
        size: Size::Knob,
        action: "raise storage.scheduler-worker-pool-size, if the node has CPU to spare",
    },
    PoolKnob {
        role: Role::Kv,
        pool: "raftstore",
        what: "Raft store",
        knob: "raftstore.store-io-pool-size",
        size: Size::Threads,
        action: "set raftstore.store-io-pool-size to 1 or more so that log writes leave the raftstore thread; if it is set, spread the regions over more kv nodes",
    },
    PoolKnob {
        role: Role::Kv,
        pool: "store-io",
        what: "Raft store I/O",
        knob: "raftstore.store-io-pool-size",
        size: Size::Knob,
        action: "raise raftstore.store-io-pool-size",
    },
    PoolKnob {
        role: Role::Kv,
        pool: "rocksdb:low",
        what: "RocksDB compaction",
        knob: "rocksdb.max-background-jobs",
        size: Size::Threads,
        action: "raise rocksdb.max-background-jobs, or write less (compression, Titan for large values)",
    },
    PoolKnob {
        role: Role::Kv,
        pool: "gc-worker",
        what: "GC worker",
        knob: "gc.max-write-bytes-per-sec",
        size: Size::Threads,
        action: "GC competes with the workload: set gc.max-write-bytes-per-sec to limit it, or raise tidb_gc_life_time so it runs less",
    },
    PoolKnob {
        role: Role::Sql,
        pool: "sql-conn",
        what: "connection threads",
        knob: "performance.max-procs",
        size: Size::Threads,
        action: "raise performance.max-procs, if the node has CPU to spare, or add sql nodes",
    },
];

/// The findings, highest score first; one `none` finding when there is nothing to name.
pub fn diagnose(w: &Window) -> Vec<Finding> {
    let mut out = Vec::new();
    for node in &w.nodes {
        cpu_of_node(node, w, &mut out);
        pools_of_node(node, &mut out);
        memory_of_node(node, &mut out);
        match node.role {
            Role::Kv => {
                write_stall(node, &mut out);
                log_append(node, w, &mut out);
            }
            Role::Sql => tso_waits(node, &mut out),
            Role::Pd => {}
        }
    }
    for (id, host) in &w.hosts {
        cpu_of_host(id, host, w, &mut out);
        disks_of_host(host, &mut out);
        memory_of_host(host, &mut out);
    }
    lock_contention(w, &mut out);
    hot_stores(w, &mut out);
    // Other processes filling the host say nothing of the cluster: what it does is told too.
    if (out.iter()).all(|f| f.kind == Kind::Client && f.node.starts_with("host ")) {
        out.push(client_or_idle(w));
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// A node at the CPU its cgroup quota or affinity allows. Without either, the limit is the
/// host's cores, which the host's rule judges with every process on it.
fn cpu_of_node(node: &NodeWindow, w: &Window, out: &mut Vec<Finding>) {
    let Some(limit) = node.cpu_limit() else {
        return;
    };
    let host_cores = (node.host.as_ref())
        .and_then(|h| w.hosts.get(h))
        .map(|h| h.last.cpus as f64);
    if host_cores.is_some_and(|cores| limit >= cores) {
        return;
    }
    let used = node.cpu();
    let share = used / limit;
    if share < CPU_BUSY {
        return;
    }
    let mut pools: Vec<(String, f64)> = (node.pool_cpu().into_iter())
        .map(|(pool, (cpu, _))| (pool, cpu))
        .collect();
    pools.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top: Vec<String> = (pools.iter().take(3))
        .map(|(p, c)| format!("{p} {c:.2}"))
        .collect();
    out.push(Finding {
        kind: Kind::Cpu,
        node: node.name.clone(),
        evidence: format!(
            "used {used:.2} CPU of the {limit:.2} it may use ({}); busiest pools: {}",
            percent(share),
            top.join(", ")
        ),
        action: "give the node more CPU (a larger cgroup quota), or add nodes of its role".into(),
        score: share.min(1.0),
    });
}

fn pools_of_node(node: &NodeWindow, out: &mut Vec<Finding>) {
    let cpu = node.pool_cpu();
    for p in POOLS.iter().filter(|p| p.role == node.role) {
        let Some(&(used, threads)) = cpu.get(p.pool) else {
            continue;
        };
        let sized = match p.size {
            Size::Threads => None,
            Size::Knob => node.knob(p.knob).and_then(|v| v.parse::<f64>().ok()),
            Size::Gauge(name) => node.last.get(name),
        };
        let n = sized.filter(|n| *n >= 1.0).unwrap_or(threads as f64);
        let share = used / n.max(1.0);
        if share < POOL_BUSY || used < POOL_MIN_CORES {
            continue;
        }
        let knob = node
            .knob(p.knob)
            .map_or(String::new(), |v| format!(" ({} = {v})", p.knob));
        out.push(Finding {
            kind: Kind::ThreadPool,
            node: node.name.clone(),
            evidence: format!(
                "the {} threads ({n}) are busy {} of the time: {used:.2} CPU{knob}",
                p.what,
                percent(share)
            ),
            action: p.action.into(),
            score: share.min(1.0),
        });
    }
}

fn memory_of_node(node: &NodeWindow, out: &mut Vec<Finding>) {
    let (Some(rss), Some(limit)) = (
        node.last.get("process_resident_memory_bytes"),
        node.last.get("atoll_process_memory_limit_bytes"),
    ) else {
        return;
    };
    let share = rss / limit.max(1.0);
    if share < MEMORY_USED {
        return;
    }
    out.push(Finding {
        kind: Kind::Memory,
        node: node.name.clone(),
        evidence: format!(
            "resident memory {:.0} MiB of the {:.0} MiB it may use ({})",
            rss / 1048576.0,
            limit / 1048576.0,
            percent(share)
        ),
        action: "lower storage.block-cache.capacity (kv) or the memory quota of queries (sql), or give the node more memory".into(),
        score: share,
    });
}

fn write_stall(node: &NodeWindow, out: &mut Vec<Finding>) {
    let stalled = node.rate("atoll_rocksdb_write_stall_micros_total") / 1e6;
    let stopped = node.last.sum("atoll_rocksdb_write_stopped") > 0.0;
    if stalled < STALL_SHARE && !stopped {
        return;
    }
    let pending = node.last.sum("atoll_rocksdb_compaction_pending_bytes");
    out.push(Finding {
        kind: Kind::WriteStall,
        node: node.name.clone(),
        evidence: format!(
            "RocksDB stalled writes {} of the time{}; compaction pending {:.0} MiB",
            percent(stalled.min(1.0)),
            if stopped { ", and writes are stopped now" } else { "" },
            pending / 1048576.0
        ),
        action: "compaction does not keep up: raise rocksdb.max-background-jobs and rocksdb.rate-bytes-per-sec if it is set low, write less (compression), or give RocksDB a faster disk".into(),
        score: if stopped { 1.0 } else { stalled.min(1.0) },
    });
}

/// The threads that append the Raft log (the raftstore thread, or the store-io threads when
/// `raftstore.store-io-pool-size` has some) waiting on appends, each ending in an fsync,
/// most of the time.
fn log_append(node: &NodeWindow, w: &Window, out: &mut Vec<Finding>) {
    let appends = node.rate("atoll_raftstore_append_log_total");
    let appending = node.rate("atoll_raftstore_append_log_duration_microseconds_total") / 1e6;
    let threads = (node.knob("raftstore.store-io-pool-size"))
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or(0.0)
        .max(1.0);
    let busy = appending / threads;
    if busy < APPEND_BUSY || appends <= 0.0 {
        return;
    }
    let mean_ms = appending * 1000.0 / appends;
    // The log shares RocksDB's disk when its dir is not set (it is then under the data
    // dir) or when both dirs are on one device.
    let own_dir = node.knob("raft-engine.dir").is_some_and(|d| !d.is_empty());
    let same_device = (node.host.as_ref())
        .and_then(|h| w.hosts.get(h))
        .is_some_and(|h| {
            let (data, log) = (
                format!("{} storage.data-dir", node.name),
                format!("{} raft-engine.dir", node.name),
            );
            (h.last.disks.iter()).any(|d| d.dirs.contains(&data) && d.dirs.contains(&log))
        });
    let action = if !own_dir || same_device {
        "put raft-engine.dir on a disk of its own (fast fsync, not shared with RocksDB's compaction), or a faster disk"
    } else {
        "the Raft log's disk syncs slowly: a faster disk for raft-engine.dir"
    };
    out.push(Finding {
        kind: Kind::DiskFsync,
        node: node.name.clone(),
        evidence: format!(
            "the threads that write the Raft log ({threads:.0}) spent {} of the time appending it: {appends:.0} appends/s at {mean_ms:.1} ms each",
            percent(busy.min(1.0))
        ),
        action: action.into(),
        score: busy.min(1.0),
    });
}

/// Statements' time waiting on PD for timestamps.
fn tso_waits(node: &NodeWindow, out: &mut Vec<Finding>) {
    let busy = node.rate("atoll_sql_statement_seconds_total");
    let waits = node.rate("atoll_tso_waits_total");
    if busy <= 0.0 || waits <= 0.0 {
        return;
    }
    let tso = node.rate("atoll_tso_wait_seconds_total");
    let tso_share = tso / busy;
    if tso_share >= WAIT_SHARE {
        out.push(Finding {
            kind: Kind::Tso,
            node: node.name.clone(),
            evidence: format!(
                "statements spent {} of their time waiting for PD timestamps: {waits:.0}/s at {:.1} ms each",
                percent(tso_share.min(1.0)),
                tso * 1000.0 / waits
            ),
            action: "PD answers timestamps slowly: check the PD leader's CPU and the network to it; tidb_tso_client_batch_max_wait_time batches more requests into one".into(),
            score: tso_share.min(1.0),
        });
    }
}

/// Statements' time waiting for other transactions' locks: on the kv nodes (a lock request
/// held until the lock is released, a write queued for the scheduler's latches) and on the
/// sql nodes (backing off before a retry),
/// against the time statements took; with the key waited for most.
fn lock_contention(w: &Window, out: &mut Vec<Finding>) {
    let sum = |role: Role, name: &str| -> f64 {
        (w.nodes.iter())
            .filter(|n| n.role == role)
            .map(|n| n.rate(name))
            .sum()
    };
    let busy = sum(Role::Sql, "atoll_sql_statement_seconds_total");
    const BACKOFF: &str = "tidb_tikvclient_backoff_seconds_total";
    let backed_off: f64 = (w.nodes.iter().filter(|n| n.role == Role::Sql))
        .map(|n| {
            let (before, after) = (
                n.first.by_label(BACKOFF, "type"),
                n.last.by_label(BACKOFF, "type"),
            );
            let grew = |k: &str| after.get(k).unwrap_or(&0.0) - before.get(k).unwrap_or(&0.0);
            ((grew("txnLock") + grew("lockWait")) / n.seconds.max(0.001)).max(0.0)
        })
        .sum();
    // Writes to the same keys also queue for the scheduler's latches on the kv node.
    let latched = sum(Role::Kv, "atoll_scheduler_latch_wait_seconds_total");
    let waited = sum(Role::Kv, "atoll_lock_wait_seconds_total") + backed_off + latched;
    let share = waited / busy.max(f64::MIN_POSITIVE);
    if busy <= 0.0 || share < WAIT_SHARE {
        return;
    }
    // The key waited for most in the window, and the kv node that counted it: among the
    // keys followed in both readings (one that took another's place started from its count).
    let hottest = (w.nodes.iter().filter(|n| n.role == Role::Kv))
        .flat_map(|n| {
            let before = n.first.by_label("atoll_lock_wait_key_waits", "key");
            (n.last
                .by_label("atoll_lock_wait_key_waits", "key")
                .into_iter())
            .filter_map(move |(key, after)| Some((n, after - before.get(&key)?, key)))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let (node, key_note) = match hottest {
        Some((n, waits, key)) if waits > 0.0 => (
            n.name.clone(),
            format!(
                "; the key waited for most: {} (about {waits:.0} waits)",
                describe_key(&key)
            ),
        ),
        _ => ("cluster".to_string(), String::new()),
    };
    let deadlocks: f64 = (w.nodes.iter().filter(|n| n.role == Role::Kv))
        .map(|n| n.last.sum("atoll_deadlocks_total") - n.first.sum("atoll_deadlocks_total"))
        .sum();
    let key_note = if deadlocks > 0.0 {
        format!("{key_note}; {deadlocks:.0} deadlocks")
    } else {
        key_note
    };
    let key_note = if latched >= 0.01 {
        format!("{key_note}; {latched:.2} of them in the scheduler's latches")
    } else {
        key_note
    };
    out.push(Finding {
        kind: Kind::LockContention,
        node,
        evidence: format!(
            "statements spent {} of their time waiting for other transactions' locks ({waited:.2} of {busy:.2} statement-seconds per second){key_note}",
            percent(share.min(1.0))
        ),
        action: "transactions contend for the same rows: update a hot row less often or in fewer transactions (a counter row per client, summed when read), keep transactions short, and update rows in the same order".into(),
        score: share.min(1.0),
    });
}

/// A key as a person finds it: `row 1 of table 45` (the table's TIDB_TABLE_ID in
/// information_schema.tables), an index entry, or the hex as given.
pub fn describe_key(hex: &str) -> String {
    let Some(key) =
        base::hex::decode(hex).filter(|k| k.len() >= codec::table::PREFIX_LEN && k[0] == b't')
    else {
        return hex.to_string();
    };
    let Ok(table) = codec::number::decode_i64(&key[1..9]) else {
        return hex.to_string();
    };
    let rest = &key[codec::table::PREFIX_LEN..];
    match &key[9..11] {
        sep if sep == codec::table::ROW_SEP && rest.len() == 8 => {
            match codec::number::decode_i64(rest) {
                Ok(handle) => format!(
                    "row {handle} of table {table} (information_schema.tables.TIDB_TABLE_ID)"
                ),
                Err(_) => hex.to_string(),
            }
        }
        sep if sep == codec::table::INDEX_SEP && rest.len() >= 8 => {
            match codec::number::decode_i64(&rest[..8]) {
                Ok(index) => format!(
                    "an entry of index {index} of table {table} (information_schema.tables.TIDB_TABLE_ID), key {hex}"
                ),
                Err(_) => hex.to_string(),
            }
        }
        _ => hex.to_string(),
    }
}

/// A host's CPU per second over the window: busy in all, and the parts no process is
/// charged for: interrupts (a cluster on loopback has many) and the hypervisor's steal.
struct HostCpu {
    busy: f64,
    interrupts: f64,
    steal: f64,
}

fn host_cpu(host: &HostWindow) -> Option<HostCpu> {
    let (a, b) = (host.first.cpu?, host.last.cpu?);
    let per_second =
        |f: fn(&node::host::CpuTimes) -> f64| ((f(&b) - f(&a)) / host.seconds.max(0.001)).max(0.0);
    Some(HostCpu {
        busy: per_second(|c| c.user + c.nice + c.system + c.irq + c.softirq + c.steal),
        interrupts: per_second(|c| c.irq + c.softirq),
        steal: per_second(|c| c.steal),
    })
}

fn cpu_of_host(id: &str, host: &HostWindow, w: &Window, out: &mut Vec<Finding>) {
    let Some(HostCpu {
        busy,
        interrupts,
        steal,
    }) = host_cpu(host)
    else {
        return;
    };
    let cores = host.last.cpus.max(1) as f64;
    let share = busy / cores;
    if share < CPU_BUSY {
        return;
    }
    let mut nodes: Vec<(String, f64)> = (w.nodes.iter())
        .filter(|n| n.host.as_deref() == Some(id))
        .map(|n| (n.name.clone(), n.cpu()))
        .collect();
    nodes.sort_by(|a, b| b.1.total_cmp(&a.1));
    let ours: f64 = nodes.iter().map(|(_, c)| c).sum();
    let others = (busy - ours - interrupts - steal).max(0.0);
    let listed: Vec<String> = (nodes.iter())
        .map(|(n, c)| format!("{n} {c:.2}"))
        .chain((others >= 0.05).then(|| format!("other processes {others:.2}")))
        .chain((interrupts >= 0.05).then(|| format!("interrupts {interrupts:.2}")))
        .collect();
    let steal_note = if steal >= 0.1 * busy {
        format!("; the hypervisor took {steal:.2} (steal)")
    } else {
        String::new()
    };
    let evidence = format!(
        "host {} is busy {} of its {cores:.0} cores ({busy:.2} CPU{steal_note}): {}",
        host.last.hostname,
        percent(share),
        listed.join(", ")
    );
    // Most of the CPU going to processes that are not Atoll's is the client's doing, when
    // the load generator runs on the host; otherwise the nodes compete for the host.
    let (kind, action) = if others > ours {
        (
            Kind::Client,
            "processes other than Atoll's use most of the host's CPU: run the load generator (sysbench, the application) on another host, or give the host more cores",
        )
    } else {
        (
            Kind::Cpu,
            "the nodes on this host compete for its cores: give it more cores, or move nodes to other hosts; cap each node with a cgroup quota so its pools size themselves to its share",
        )
    };
    out.push(Finding {
        kind,
        node: format!("host {}", host.last.hostname),
        evidence,
        action: action.into(),
        score: share.min(1.0),
    });
}

fn disks_of_host(host: &HostWindow, out: &mut Vec<Finding>) {
    let seconds = host.seconds.max(0.001);
    for disk in &host.last.disks {
        let Some(before) = host.first.disks.iter().find(|d| d.device == disk.device) else {
            continue;
        };
        let busy = (disk.io_ms.saturating_sub(before.io_ms) as f64 / 1000.0 / seconds).min(1.0);
        if busy < DISK_BUSY {
            continue;
        }
        let writes = disk.writes.saturating_sub(before.writes) as f64;
        let written = disk.write_bytes.saturating_sub(before.write_bytes) as f64;
        let read = disk.read_bytes.saturating_sub(before.read_bytes) as f64;
        let write_ms = disk.write_ms.saturating_sub(before.write_ms) as f64;
        let flushes = disk.flushes.saturating_sub(before.flushes) as f64;
        let flush_ms = disk.flush_ms.saturating_sub(before.flush_ms) as f64;
        let mean_write_ms = write_ms / writes.max(1.0);
        let mean_flush_ms = flush_ms / flushes.max(1.0);
        let mib_s = |b: f64| b / 1048576.0 / seconds;
        let evidence = format!(
            "{} (holding {}) is busy {} of the time: {:.1} MiB/s written in {:.0} writes/s ({:.0} KiB each, {mean_write_ms:.1} ms), {:.1} MiB/s read, {:.0} flushes/s at {mean_flush_ms:.1} ms",
            disk.device,
            disk.dirs.join(", "),
            percent(busy),
            mib_s(written),
            writes / seconds,
            written / writes.max(1.0) / 1024.0,
            mib_s(read),
            flushes / seconds,
        );
        // Small writes that each wait long are fsync-bound; large ones fill the bandwidth.
        let small = written / writes.max(1.0) < 64.0 * 1024.0;
        let (kind, action) = if small && (mean_flush_ms >= 2.0 || mean_write_ms >= 2.0) {
            (
                Kind::DiskFsync,
                "small synced writes wait on the disk: put raft-engine.dir on a disk of its own with fast fsync, or a faster disk",
            )
        } else {
            (
                Kind::DiskBandwidth,
                "the disk's bandwidth is used up: cap compaction with rocksdb.rate-bytes-per-sec, write less (compression, Titan for large values), or a faster disk",
            )
        };
        out.push(Finding {
            kind,
            node: format!("host {}", host.last.hostname),
            evidence,
            action: action.into(),
            score: busy,
        });
    }
}

fn memory_of_host(host: &HostWindow, out: &mut Vec<Finding>) {
    let stalled = match (host.first.pressure_stall_us, host.last.pressure_stall_us) {
        (Some(a), Some(b)) => {
            let us = b.memory.saturating_sub(a.memory) as f64;
            (us / 1e6 / host.seconds.max(0.001)).min(1.0)
        }
        _ => 0.0,
    };
    let Some(memory) = host.last.memory else {
        return;
    };
    let used = 1.0 - memory.available_bytes as f64 / memory.total_bytes.max(1) as f64;
    if used < MEMORY_USED && stalled < STALL_SHARE * 5.0 {
        return;
    }
    out.push(Finding {
        kind: Kind::Memory,
        node: format!("host {}", host.last.hostname),
        evidence: format!(
            "{} of the host's memory is in use ({:.0} MiB available); tasks stalled on memory {} of the time",
            percent(used),
            memory.available_bytes as f64 / 1048576.0,
            percent(stalled)
        ),
        action: "lower storage.block-cache.capacity on the kv nodes of this host, or give it more memory".into(),
        score: used.max(stalled),
    });
}

fn hot_stores(w: &Window, out: &mut Vec<Finding>) {
    if w.stores.len() < 2 {
        return;
    }
    type Flow = fn(&StoreLoad) -> (f64, u64);
    let kinds: [(&str, Flow); 2] = [
        ("written", |s| (s.hot_write_bytes, s.hot_write_regions)),
        ("read", |s| (s.hot_read_bytes, s.hot_read_regions)),
    ];
    for (what, flow) in kinds {
        let total: f64 = w.stores.iter().map(|s| flow(s).0).sum();
        let regions: u64 = w.stores.iter().map(|s| flow(s).1).sum();
        let Some(top) = (w.stores.iter()).max_by(|a, b| flow(a).0.total_cmp(&flow(b).0)) else {
            continue;
        };
        let share = flow(top).0 / total.max(1.0);
        let kv = format!("kv {}", top.address);
        let busy = (w.nodes.iter())
            .find(|n| n.name == kv)
            .and_then(|n| Some(n.cpu() / n.cpu_limit()?))
            .unwrap_or(0.0);
        if total <= 0.0 || share < HOT_SHARE || regions < HOT_REGIONS_MIN || busy < HOT_STORE_BUSY {
            continue;
        }
        out.push(Finding {
            kind: Kind::HotRegion,
            node: kv,
            evidence: format!(
                "its leaders serve {} of the bytes {what} in the {regions} hot regions ({:.0} KiB/s of {:.0} KiB/s over {} stores), and it used {} of its CPU",
                percent(share),
                flow(top).0 / 1024.0,
                total / 1024.0,
                w.stores.len(),
                percent(busy)
            ),
            action: "let PD spread the hot regions: `atoll ctl scheduler add balance-hot-region-scheduler`; split a hot table (SPLIT TABLE) or shard its key (AUTO_RANDOM / SHARD_ROW_ID_BITS) so its writes land on several regions".into(),
            score: (share * busy).min(1.0),
        });
    }
    let leaders: Vec<u64> = w.stores.iter().map(|s| s.leaders).collect();
    let mean = leaders.iter().sum::<u64>() as f64 / leaders.len() as f64;
    let (max, min) = (
        *leaders.iter().max().unwrap_or(&0),
        *leaders.iter().min().unwrap_or(&0),
    );
    if mean >= 10.0 && (max as f64) > mean * 1.5 {
        out.push(Finding {
            kind: Kind::HotRegion,
            node: "pd".into(),
            evidence: format!(
                "leaders are unbalanced: {min} to {max} per store (mean {mean:.0})"
            ),
            action: "check that balance-leader-scheduler runs (`atoll ctl scheduler show`) and that no evict-leader scheduler holds leaders away".into(),
            score: 0.5,
        });
    }
}

/// With nothing to name: a client that keeps too few statements in flight, or an idle
/// cluster, or a cluster that serves its load without a limit in sight.
fn client_or_idle(w: &Window) -> Finding {
    let sql: Vec<&NodeWindow> = w.nodes.iter().filter(|n| n.role == Role::Sql).collect();
    if sql.is_empty() {
        return Finding {
            kind: Kind::None,
            node: "cluster".into(),
            evidence: "no bottleneck found among the nodes read, but no sql node was read, so the load is not known".into(),
            action: "check that PD lists the sql nodes (GET /pd/api/v1/sql-nodes) and that their status ports answer".into(),
            score: 0.0,
        };
    }
    let qps: f64 = (sql.iter())
        .map(|n| n.rate("tidb_server_query_total"))
        .sum();
    let in_flight: f64 = (sql.iter())
        .map(|n| n.rate("atoll_sql_statement_seconds_total"))
        .sum();
    let connections: f64 = (sql.iter())
        .map(|n| n.last.sum("tidb_server_connections"))
        .sum();
    // A host counts by what its nodes use of it: a busy host with idle nodes is the host
    // finding's to tell.
    let busiest = |of_hosts: bool| {
        (w.nodes.iter())
            .filter_map(|n| Some((n.name.as_str(), n.cpu() / n.cpu_limit()?)))
            .chain(w.hosts.iter().filter(|_| of_hosts).map(|(id, h)| {
                let ours: f64 = (w.nodes.iter())
                    .filter(|n| n.host.as_deref() == Some(id.as_str()))
                    .map(|n| n.cpu())
                    .sum();
                (h.last.hostname.as_str(), ours / h.last.cpus.max(1) as f64)
            }))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or(("no node", 0.0))
    };
    let latency_ms = in_flight * 1000.0 / qps.max(f64::MIN_POSITIVE);
    let (node, node_share) = busiest(false);
    if qps < IDLE_QPS {
        return Finding {
            kind: Kind::None,
            node: "cluster".into(),
            evidence: format!(
                "no bottleneck found: the cluster is mostly idle ({qps:.1} statements/s; the busiest node, {node}, used {} of its CPU)",
                percent(node_share)
            ),
            action: "nothing to do; run diag while the workload runs".into(),
            score: 0.0,
        };
    }
    // The hosts count here: a client on a busy host may be slow for want of CPU.
    let (busiest, busiest_share) = busiest(true);
    if in_flight <= CLIENT_MAX_IN_FLIGHT && busiest_share < CLIENT_IDLE_CPU {
        return Finding {
            kind: Kind::Client,
            node: "client".into(),
            evidence: format!(
                "the clients keep {in_flight:.1} statements in flight on average over {connections:.0} connections ({qps:.0} statements/s at {latency_ms:.1} ms), while the busiest, {busiest}, used {} of its CPU",
                percent(busiest_share)
            ),
            action: "the cluster waits for the client: run more client threads or connections (sysbench --threads), or batch statements".into(),
            score: 0.3,
        };
    }
    Finding {
        kind: Kind::None,
        node: "cluster".into(),
        evidence: format!(
            "no bottleneck found: {qps:.0} statements/s at {latency_ms:.1} ms with {in_flight:.1} in flight; the busiest, {busiest}, used {} of its CPU",
            percent(busiest_share)
        ),
        action: "nothing limits the load yet: it can grow".into(),
        score: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(role: Role, name: &str, first: &str, last: &str) -> NodeWindow {
        NodeWindow {
            role,
            seconds: 10.0,
            name: name.into(),
            first: Metrics::parse(first),
            last: Metrics::parse(last),
            config: serde_json::json!({
                "readpool": {"unified": {"max-thread-count": 1}},
                "server": {"grpc-concurrency": 4}
            }),
            host: None,
        }
    }

    fn window(nodes: Vec<NodeWindow>) -> Window {
        Window {
            seconds: 10.0,
            nodes,
            ..Window::default()
        }
    }

    #[test]
    fn an_idle_cluster_is_named_idle_and_one_without_sql_nodes_unknown() {
        let kv = node(
            Role::Kv,
            "kv a",
            "atoll_process_cpu_seconds_total 1\natoll_process_cpu_limit_cores 2",
            "atoll_process_cpu_seconds_total 1.1\natoll_process_cpu_limit_cores 2",
        );
        let sql = node(
            Role::Sql,
            "sql a",
            "tidb_server_query_total{result=\"OK\"} 5",
            "tidb_server_query_total{result=\"OK\"} 6",
        );
        let found = diagnose(&window(vec![kv.clone(), sql]));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, Kind::None);
        assert!(found[0].evidence.contains("mostly idle"), "{found:?}");
        let found = diagnose(&window(vec![kv]));
        assert!(
            found[0].evidence.contains("no sql node was read"),
            "{found:?}"
        );
    }

    #[test]
    fn a_full_read_pool_of_one_thread_names_its_knob() {
        let w = window(vec![node(
            Role::Kv,
            "kv a",
            "atoll_process_cpu_seconds_total 0\natoll_process_cpu_limit_cores 4\natoll_thread_cpu_seconds_total{name=\"unified-read\",tid=\"1\"} 0",
            "atoll_process_cpu_seconds_total 12\natoll_process_cpu_limit_cores 4\natoll_thread_cpu_seconds_total{name=\"unified-read\",tid=\"1\"} 9.5",
        )]);
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::ThreadPool, "{found:?}");
        assert!(
            found[0]
                .evidence
                .contains("(readpool.unified.max-thread-count = 1)"),
            "{found:?}"
        );
        assert!(found[0].evidence.contains("95%"), "{found:?}");
    }

    #[test]
    fn a_node_at_its_quota_outranks_a_half_busy_pool() {
        let w = window(vec![node(
            Role::Kv,
            "kv a",
            "atoll_process_cpu_seconds_total 0\natoll_process_cpu_limit_cores 0.5\natoll_thread_cpu_seconds_total{name=\"unified-read\",tid=\"1\"} 0",
            "atoll_process_cpu_seconds_total 4.9\natoll_process_cpu_limit_cores 0.5\natoll_thread_cpu_seconds_total{name=\"unified-read\",tid=\"1\"} 4",
        )]);
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::Cpu, "{found:?}");
        assert!(
            found[0].evidence.contains("0.49 CPU of the 0.50"),
            "{found:?}"
        );
        assert!(found[0].evidence.contains("unified-read 0.40"), "{found:?}");
    }

    #[test]
    fn lock_waits_that_fill_statement_time_are_contention_with_the_hot_row() {
        let hot = base::hex::encode(&codec::table::row_key(45, 1));
        let w = window(vec![
            node(
                Role::Sql,
                "sql a",
                "atoll_sql_statement_seconds_total 0\ntidb_tikvclient_backoff_seconds_total{type=\"lockWait\"} 0\ntidb_server_query_total{result=\"OK\"} 0",
                "atoll_sql_statement_seconds_total 40\ntidb_tikvclient_backoff_seconds_total{type=\"lockWait\"} 10\ntidb_server_query_total{result=\"OK\"} 400",
            ),
            node(
                Role::Kv,
                "kv b",
                &format!(
                    "atoll_lock_wait_seconds_total 0\natoll_deadlocks_total 1\natoll_lock_wait_key_waits{{key=\"{hot}\"}} 100\natoll_lock_wait_key_waits{{key=\"74\"}} 50"
                ),
                &format!(
                    "atoll_lock_wait_seconds_total 20\natoll_deadlocks_total 3\natoll_lock_wait_key_waits{{key=\"{hot}\"}} 400\natoll_lock_wait_key_waits{{key=\"74\"}} 60"
                ),
            ),
        ]);
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::LockContention, "{found:?}");
        assert_eq!(found[0].node, "kv b");
        assert!(found[0].evidence.contains("75%"), "{found:?}");
        assert!(
            found[0].evidence.contains("row 1 of table 45")
                && found[0].evidence.contains("(about 300 waits); 2 deadlocks"),
            "{found:?}"
        );
        assert_eq!(describe_key("7A7A"), "7A7A");
    }

    #[test]
    fn few_statements_in_flight_on_an_idle_cluster_is_the_client() {
        let w = window(vec![
            node(
                Role::Sql,
                "sql a",
                "atoll_sql_statement_seconds_total 0\ntidb_server_query_total{result=\"OK\"} 0\ntidb_server_connections 1\natoll_process_cpu_seconds_total 0\natoll_process_cpu_limit_cores 2",
                "atoll_sql_statement_seconds_total 9\ntidb_server_query_total{result=\"OK\"} 5000\ntidb_server_connections 1\natoll_process_cpu_seconds_total 3\natoll_process_cpu_limit_cores 2",
            ),
            node(
                Role::Kv,
                "kv a",
                "atoll_process_cpu_seconds_total 0\natoll_process_cpu_limit_cores 2",
                "atoll_process_cpu_seconds_total 4\natoll_process_cpu_limit_cores 2",
            ),
        ]);
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::Client, "{found:?}");
        assert!(
            found[0].evidence.contains("0.9 statements in flight"),
            "{found:?}"
        );
        assert!(
            found[0].evidence.contains("over 1 connections"),
            "{found:?}"
        );
    }

    #[test]
    fn a_host_busy_with_other_processes_points_at_the_client() {
        let cpu = |busy: f64| node::host::CpuTimes {
            user: busy,
            idle: 100.0,
            ..Default::default()
        };
        let figures = |busy: f64| HostFigures {
            host_id: "h".into(),
            hostname: "box".into(),
            cpus: 2,
            cpu: Some(cpu(busy)),
            ..Default::default()
        };
        let mut kv = node(
            Role::Kv,
            "kv a",
            "atoll_process_cpu_seconds_total 0\natoll_process_cpu_limit_cores 2",
            "atoll_process_cpu_seconds_total 5\natoll_process_cpu_limit_cores 2",
        );
        kv.host = Some("h".into());
        let mut w = window(vec![kv]);
        w.hosts.insert(
            "h".into(),
            HostWindow {
                seconds: 10.0,
                first: figures(0.0),
                last: figures(19.0),
            },
        );
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::Client, "{found:?}");
        assert!(
            found[0].evidence.contains("other processes 1.40"),
            "{found:?}"
        );
    }

    #[test]
    fn statements_waiting_on_pd_for_timestamps_are_tso() {
        let w = window(vec![node(
            Role::Sql,
            "sql a",
            "atoll_sql_statement_seconds_total 0\natoll_tso_waits_total 0\natoll_tso_wait_seconds_total 0\ntidb_server_query_total 0",
            "atoll_sql_statement_seconds_total 20\natoll_tso_waits_total 1000\natoll_tso_wait_seconds_total 8\ntidb_server_query_total 1000",
        )]);
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::Tso, "{found:?}");
        assert!(found[0].evidence.contains("40% of their time"), "{found:?}");
        assert!(
            found[0].evidence.contains("100/s at 8.0 ms each"),
            "{found:?}"
        );
    }

    #[test]
    fn stalled_writes_and_a_full_memory_limit_are_named() {
        let w = window(vec![node(
            Role::Kv,
            "kv a",
            "atoll_rocksdb_write_stall_micros_total 0\nprocess_resident_memory_bytes 950\natoll_process_memory_limit_bytes 1000",
            "atoll_rocksdb_write_stall_micros_total 3000000\nprocess_resident_memory_bytes 950\natoll_process_memory_limit_bytes 1000",
        )]);
        let found = diagnose(&w);
        let kinds: Vec<Kind> = found.iter().map(|f| f.kind).collect();
        // Memory at 95% of its limit outranks writes stalled 30% of the time.
        assert_eq!(kinds, [Kind::Memory, Kind::WriteStall], "{found:?}");
        assert!(
            found[1].evidence.contains("stalled writes 30% of the time"),
            "{found:?}"
        );
    }

    #[test]
    fn a_busy_disk_of_large_writes_is_bandwidth_and_of_small_synced_ones_fsync() {
        let disk = |io_ms: u64, writes: u64, bytes: u64, write_ms: u64| node::host::Disk {
            dirs: vec!["kv a storage.data-dir".into()],
            device: "vda".into(),
            io_ms,
            writes,
            write_bytes: bytes,
            write_ms,
            ..Default::default()
        };
        let figures = |d: node::host::Disk| HostFigures {
            hostname: "box".into(),
            cpus: 2,
            disks: vec![d],
            ..Default::default()
        };
        let host = |a, b| HostWindow {
            seconds: 10.0,
            first: figures(a),
            last: figures(b),
        };
        let mut w = window(Vec::new());
        // 9 s busy of 10, 1000 writes of 1 MiB.
        w.hosts.insert(
            "h".into(),
            host(disk(0, 0, 0, 0), disk(9000, 1000, 1000 << 20, 5000)),
        );
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::DiskBandwidth, "{found:?}");
        assert!(
            found[0]
                .evidence
                .contains("vda (holding kv a storage.data-dir) is busy 90%"),
            "{found:?}"
        );
        // 9 s busy of 10, 2000 writes of 4 KiB at 4.5 ms each.
        w.hosts.insert(
            "h".into(),
            host(disk(0, 0, 0, 0), disk(9000, 2000, 2000 * 4096, 9000)),
        );
        assert_eq!(diagnose(&w)[0].kind, Kind::DiskFsync);
    }

    #[test]
    fn a_raftstore_waiting_on_appends_is_fsync_bound_and_the_log_wants_its_own_disk() {
        let w = window(vec![node(
            Role::Kv,
            "kv a",
            "atoll_raftstore_append_log_total 0\natoll_raftstore_append_log_duration_microseconds_total 0",
            "atoll_raftstore_append_log_total 200\natoll_raftstore_append_log_duration_microseconds_total 8000000",
        )]);
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::DiskFsync, "{found:?}");
        assert!(found[0].evidence.contains("80% of the time"), "{found:?}");
        assert!(
            found[0].evidence.contains("20 appends/s at 40.0 ms"),
            "{found:?}"
        );
        // raft-engine.dir is not set: the log is under the data dir, on RocksDB's disk.
        assert!(
            found[0]
                .action
                .starts_with("put raft-engine.dir on a disk of its own")
        );
    }

    #[test]
    fn one_busy_store_serving_most_hot_writes_is_a_hot_region() {
        let store = |address: &str, hot: f64, regions: u64| StoreLoad {
            address: address.into(),
            leaders: 3,
            hot_write_bytes: hot,
            hot_write_regions: regions,
            ..StoreLoad::default()
        };
        let kv = |name: &str, cpu: &str| {
            node(
                Role::Kv,
                name,
                "atoll_process_cpu_seconds_total 0\natoll_process_cpu_limit_cores 1",
                &format!("atoll_process_cpu_seconds_total {cpu}\natoll_process_cpu_limit_cores 1"),
            )
        };
        let mut w = window(vec![kv("kv a", "7"), kv("kv b", "1"), kv("kv c", "1")]);
        w.stores = vec![
            store("a", 900_000.0, 3),
            store("b", 50_000.0, 1),
            store("c", 50_000.0, 0),
        ];
        let found = diagnose(&w);
        assert_eq!(found[0].kind, Kind::HotRegion, "{found:?}");
        assert_eq!(found[0].node, "kv a");
        assert!(found[0].evidence.contains("the 4 hot regions"), "{found:?}");
        // One hot region cannot be spread: no finding.
        w.stores = vec![store("a", 900_000.0, 1), store("b", 0.0, 0)];
        assert_ne!(diagnose(&w)[0].kind, Kind::HotRegion);
    }
}
