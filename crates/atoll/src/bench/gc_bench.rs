//! `atoll bench gc`: does `gc.max-write-bytes-per-sec` hold the GC worker's write rate?
//!
//! For each limit, a fresh RocksDB (in a temp dir) gets `keys` keys with `versions` committed
//! versions each; then the GC worker collects with a safe point above them all, deleting all
//! but the newest version of every key. Reported: bytes the worker wrote, the time it took,
//! the achieved rate and its ratio to the limit; limit 0 (none) is the baseline.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use base::ByteSize;
use clap::Args;
use config::{Config, Role};
use engine_rocks::RocksEngine;
use mvcc::{MvccTxn, Write, WriteType};
use txn::gc::GcWorker;
use txn::latches::Latches;
use txn::{Durability, LocalKv, ReplicatedKv};

#[derive(Args)]
pub struct GcBenchArgs {
    /// Limits to measure, comma separated (0 = none).
    #[arg(long, default_value = "0,100K,300K,1M")]
    limits: String,
    #[arg(long, default_value_t = 4000)]
    keys: u64,
    #[arg(long, default_value_t = 10)]
    versions: u64,
    /// Directory for gc.csv.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

struct Row {
    limit: u64,
    bytes: u64,
    seconds: f64,
}

fn load(engine: &RocksEngine, keys: u64, versions: u64) -> anyhow::Result<()> {
    let kv = LocalKv::open(engine.clone())?;
    for k in 0..keys {
        let key = format!("gc-bench-key-{k:08}").into_bytes();
        let mut txn = MvccTxn::new();
        for v in 0..versions {
            let start_ts = 10 + v * 10;
            let write = Write {
                write_type: WriteType::Put,
                start_ts,
                short_value: Some(vec![b'x'; 100]),
                overlapped_rollback: false,
            };
            txn.commit_write(&key, start_ts + 1, write);
        }
        kv.write(txn, Durability::Synced)?;
    }
    engine.flush()?;
    Ok(())
}

pub fn run(args: GcBenchArgs) -> anyhow::Result<()> {
    let limits: Vec<u64> = args
        .limits
        .split(',')
        .map(|l| {
            l.trim()
                .parse::<ByteSize>()
                .map(ByteSize::bytes)
                .with_context(|| format!("bad limit {l:?}"))
        })
        .collect::<anyhow::Result<_>>()?;
    let config = Config::defaults(Role::Kv, crate::role::resources_from_env()?)?;
    let mut rows = Vec::new();
    for &limit in &limits {
        let dir = tempfile::tempdir()?;
        let engine = RocksEngine::open(dir.path(), &config)?;
        load(&engine, args.keys, args.versions)?;
        let gc = GcWorker::new(
            LocalKv::open(engine.clone())?,
            Arc::new(Latches::new(1)),
            config.int("gc.batch-keys") as usize,
            limit,
        );
        let start = Instant::now();
        gc.gc_range(u64::MAX, b"", b"")?;
        let seconds = start.elapsed().as_secs_f64();
        let stats = gc.stats();
        anyhow::ensure!(
            stats.versions_deleted == args.keys * (args.versions - 1),
            "GC deleted {} versions",
            stats.versions_deleted
        );
        eprintln!(
            "  limit {}: {} bytes in {seconds:.2} s",
            ByteSize(limit),
            stats.bytes_written
        );
        rows.push(Row {
            limit,
            bytes: stats.bytes_written,
            seconds,
        });
    }
    println!(
        "| limit | bytes written | seconds | achieved bytes/s | achieved / limit |\n|---|---|---|---|---|"
    );
    let mut csv = String::from(
        "limit_bytes_per_s,bytes_written,seconds,achieved_bytes_per_s,achieved_over_limit\n",
    );
    for r in &rows {
        let rate = r.bytes as f64 / r.seconds;
        let ratio = if r.limit == 0 {
            f64::NAN
        } else {
            rate / r.limit as f64
        };
        println!(
            "| {} | {} | {:.2} | {:.0} | {} |",
            if r.limit == 0 {
                "none".into()
            } else {
                ByteSize(r.limit).to_string()
            },
            r.bytes,
            r.seconds,
            rate,
            if r.limit == 0 {
                "-".into()
            } else {
                format!("{ratio:.3}")
            }
        );
        csv.push_str(&format!(
            "{},{},{:.3},{:.0},{:.3}\n",
            r.limit, r.bytes, r.seconds, rate, ratio
        ));
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("gc.csv"), csv)?;
        println!("wrote {}", dir.join("gc.csv").display());
    }
    Ok(())
}
