//! `atoll bench kv --pd HOST:PORT`: transactional read-modify-write through `kv-client`
//! against a running cluster. Each of `--clients` concurrent clients runs, for `--seconds`,
//! transactions that read one random key of `--keys`, add one to it and commit (optimistic,
//! two-phase commit). The last line is `kv clients=N txn_per_s=X errors=E`, where errors
//! counts transactions that failed for any reason (write conflicts included).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use kv_client::{Client, ClientConfig, KvError};

#[derive(Args)]
pub struct KvBenchArgs {
    /// The pd's client address.
    #[arg(long, default_value = "127.0.0.1:2379")]
    pd: String,
    #[arg(long, default_value_t = 8)]
    clients: usize,
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// How many distinct keys the transactions pick from.
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
}

#[derive(Default)]
struct Counts {
    committed: AtomicU64,
    conflicts: AtomicU64,
    other_errors: AtomicU64,
    latency_us: AtomicU64,
}

fn key(i: u64) -> Vec<u8> {
    format!("bench/kv/{i:010}").into_bytes()
}

async fn read_modify_write(client: &Client, k: Vec<u8>) -> Result<(), KvError> {
    let mut txn = client.begin().await?;
    let n = match txn.get(&k).await? {
        Some(v) => u64::from_be_bytes(v.as_slice().try_into().unwrap_or([0; 8])),
        None => 0,
    };
    txn.put(k, (n + 1).to_be_bytes().to_vec());
    txn.commit().await.map(|_| ())
}

async fn worker(client: Client, keys: u64, seed: u64, stop: Arc<AtomicBool>, counts: Arc<Counts>) {
    let mut x = seed | 1;
    while !stop.load(Ordering::Relaxed) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let started = Instant::now();
        match read_modify_write(&client, key(x % keys)).await {
            Ok(()) => {
                counts.committed.fetch_add(1, Ordering::Relaxed);
                counts
                    .latency_us
                    .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            }
            Err(KvError::WriteConflict { .. }) => {
                counts.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                if counts.other_errors.fetch_add(1, Ordering::Relaxed) < 5 {
                    eprintln!("txn failed: {e}");
                }
            }
        }
    }
}

pub fn run(args: KvBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.clients > 0 && args.seconds > 0.0 && args.keys > 0,
        "clients, seconds and keys must be positive"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let counts = Arc::new(Counts::default());
    let elapsed = runtime.block_on(async {
        let client = Client::connect(ClientConfig::new(vec![args.pd.clone()]))
            .await
            .with_context(|| format!("cannot reach pd at {}", args.pd))?;
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let tasks: Vec<_> = (0..args.clients as u64)
            .map(|i| {
                tokio::spawn(worker(
                    client.clone(),
                    args.keys,
                    0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i + 1),
                    stop.clone(),
                    counts.clone(),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await?;
        }
        anyhow::Ok(started.elapsed())
    })?;
    let committed = counts.committed.load(Ordering::Relaxed);
    let conflicts = counts.conflicts.load(Ordering::Relaxed);
    let errors = conflicts + counts.other_errors.load(Ordering::Relaxed);
    let mean_ms =
        counts.latency_us.load(Ordering::Relaxed) as f64 / committed.max(1) as f64 / 1000.0;
    println!("kv committed={committed} conflicts={conflicts} mean_latency_ms={mean_ms:.2}");
    println!(
        "kv clients={} txn_per_s={:.0} errors={errors}",
        args.clients,
        committed as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}
