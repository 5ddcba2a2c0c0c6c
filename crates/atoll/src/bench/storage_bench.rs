//! `atoll bench storage`: the storage stack's own speed, below any network: transactions of
//! one prewrite and one commit (two keys, fsynced writes) through the scheduler from
//! `--clients` threads, then snapshot point gets of the loaded keys from the same number of
//! threads. Each figure is the median of `--repeat` runs on a fresh RocksDB in a temp dir.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use config::{Config, Role};
use engine_rocks::RocksEngine;
use mvcc::MvccReader;
use mvcc::actions::prewrite::{Mutation, TxnProps};
use txn::{Command, LocalKv, ReplicatedKv, Scheduler};

#[derive(Args)]
pub struct StorageBenchArgs {
    /// Client threads.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Seconds per phase.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn once(config: &Config, clients: usize, length: Duration) -> anyhow::Result<(f64, f64)> {
    let dir = tempfile::tempdir()?;
    let engine = RocksEngine::open(dir.path(), config)?;
    let scheduler = Arc::new(Scheduler::new(
        LocalKv::open(engine)?,
        kv_server::storage::scheduler_config(config),
    ));
    let clock = Arc::new(AtomicU64::new(1));
    let txns = Arc::new(AtomicU64::new(0));
    let end = Instant::now() + length;
    let writers: Vec<_> = (0..clients)
        .map(|c| {
            let (s, clock, txns) = (scheduler.clone(), clock.clone(), txns.clone());
            std::thread::spawn(move || -> anyhow::Result<u64> {
                let mut n = 0u64;
                while Instant::now() < end {
                    let keys = [
                        format!("c{c}-k{n}-a").into_bytes(),
                        format!("c{c}-k{n}-b").into_bytes(),
                    ];
                    let start_ts = clock.fetch_add(1, Ordering::SeqCst);
                    let props = TxnProps {
                        primary: keys[0].clone(),
                        start_ts,
                        ttl_ms: 3000,
                        for_update_ts: 0,
                        txn_size: 2,
                        min_commit_ts: 0,
                    };
                    let mutations = keys
                        .iter()
                        .map(|k| Mutation::Put(k.clone(), vec![b'v'; 64]))
                        .collect();
                    s.run(Command::Prewrite {
                        mutations,
                        props,
                        pessimistic: vec![],
                        covered: vec![],
                        try_one_pc: false,
                    })?;
                    let commit_ts = clock.fetch_add(1, Ordering::SeqCst);
                    s.run(Command::Commit {
                        keys: keys.to_vec(),
                        start_ts,
                        commit_ts,
                    })?;
                    txns.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
                Ok(n)
            })
        })
        .collect();
    let mut written_by: Vec<u64> = Vec::new();
    for w in writers {
        written_by.push(w.join().expect("writer thread")?);
    }
    let written = txns.load(Ordering::Relaxed);
    let txn_per_s = written as f64 / length.as_secs_f64();

    let read_ts = clock.fetch_add(1, Ordering::SeqCst);
    let gets = Arc::new(AtomicU64::new(0));
    let end = Instant::now() + length;
    let readers: Vec<_> = (0..clients)
        .filter(|&c| written_by[c] > 0)
        .map(|c| {
            let (s, gets, mine) = (scheduler.clone(), gets.clone(), written_by[c]);
            std::thread::spawn(move || -> anyhow::Result<()> {
                let reader = MvccReader::new(s.kv().snapshot()?);
                let mut n = 0u64;
                while Instant::now() < end {
                    let key = format!("c{c}-k{}-a", n % mine).into_bytes();
                    anyhow::ensure!(
                        reader.get(&key, read_ts, &[])?.is_some(),
                        "committed key {key:?} is missing"
                    );
                    gets.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
                Ok(())
            })
        })
        .collect();
    for r in readers {
        r.join().expect("reader thread")?;
    }
    scheduler.shutdown();
    Ok((
        txn_per_s,
        gets.load(Ordering::Relaxed) as f64 / length.as_secs_f64(),
    ))
}

pub fn run(args: StorageBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.clients > 0 && args.repeat > 0 && args.seconds > 0.0,
        "clients, repeat and seconds must be positive"
    );
    let config = Config::defaults(Role::Kv, crate::role::resources_from_env()?)?;
    let (mut txn_rates, mut get_rates) = (Vec::new(), Vec::new());
    for i in 0..args.repeat {
        let (t, g) = once(&config, args.clients, Duration::from_secs_f64(args.seconds))?;
        eprintln!(
            "  run {}: {t:.0} txn/s (prewrite+commit, 2 keys, fsynced), {g:.0} point gets/s",
            i + 1
        );
        txn_rates.push(t);
        get_rates.push(g);
    }
    println!(
        "storage clients={} txn_per_s={:.0} point_get_per_s={:.0}",
        args.clients,
        median(txn_rates),
        median(get_rates)
    );
    Ok(())
}
