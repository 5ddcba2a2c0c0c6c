//! `atoll bench tso --pd HOST:PORT`: timestamp throughput of a running pd. `--clients`
//! concurrent Tso streams each send requests of `--batch` timestamps one after another for
//! `--seconds`; the result counts requests and timestamps per second. With `--via-client`,
//! `--clients` concurrent callers share one batching `pd-client` instead (as a SQL node's
//! sessions do), optionally waiting `--max-wait-ms` to grow batches.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use proto::pd::TsoRequest;
use proto::pd::pd_client::PdClient;
use tokio_stream::wrappers::ReceiverStream;

#[derive(Args)]
pub struct TsoBenchArgs {
    /// The pd's client address.
    #[arg(long, default_value = "127.0.0.1:2379")]
    pd: String,
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Timestamps per request (a TSO client's batch).
    #[arg(long, default_value_t = 1)]
    batch: u32,
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Callers share one batching pd-client (one stream) instead of a stream each.
    #[arg(long)]
    via_client: bool,
    /// With --via-client: tidb_tso_client_batch_max_wait_time, in ms.
    #[arg(long, default_value_t = 0.0)]
    max_wait_ms: f64,
}

/// `--via-client`: concurrent `get_ts` callers on one batching client.
async fn via_client(args: &TsoBenchArgs, end: Instant) -> anyhow::Result<pd_client::tso::TsoStats> {
    let client = pd_client::PdClient::connect(std::slice::from_ref(&args.pd))
        .await
        .with_context(|| format!("cannot reach pd at {}", args.pd))?;
    client.set_tso_max_wait(Duration::from_secs_f64(args.max_wait_ms / 1000.0));
    let tasks: Vec<_> = (0..args.clients)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move {
                while Instant::now() < end {
                    c.get_ts().await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(client.tso_stats())
}

/// `clients` streams of `batch`-timestamp requests to `pd` until `end`; the requests answered.
pub(super) async fn streams(
    pd: &str,
    clients: usize,
    batch: u32,
    end: Instant,
) -> anyhow::Result<u64> {
    let tasks: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(stream(pd.to_string(), batch, end)))
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await??;
    }
    Ok(total)
}

async fn stream(pd: String, batch: u32, end: Instant) -> anyhow::Result<u64> {
    let mut client = PdClient::connect(format!("http://{pd}"))
        .await
        .with_context(|| format!("cannot reach pd at {pd}"))?;
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let mut responses = client.tso(ReceiverStream::new(rx)).await?.into_inner();
    let mut requests = 0;
    let mut last = 0u64;
    while Instant::now() < end {
        tx.send(TsoRequest { count: batch }).await?;
        let r = responses.message().await?.context("pd closed the stream")?;
        anyhow::ensure!(r.error.is_none(), "pd answered {:?}", r.error);
        let t = r.timestamp.context("no timestamp")?;
        let ts = base::ts::compose(t.physical as u64, t.logical as u64);
        anyhow::ensure!(ts > last, "timestamp {ts} after {last}");
        last = ts;
        requests += 1;
    }
    Ok(requests)
}

pub fn run(args: TsoBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.clients > 0 && args.batch > 0 && args.seconds > 0.0,
        "clients, batch and seconds must be positive"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let end = Instant::now() + Duration::from_secs_f64(args.seconds);
    if args.via_client {
        let stats = runtime.block_on(via_client(&args, end))?;
        println!(
            "tso via_client callers={} max_wait_ms={} requests_per_s={:.0} timestamps_per_s={:.0}",
            args.clients,
            args.max_wait_ms,
            stats.requests as f64 / args.seconds,
            stats.timestamps as f64 / args.seconds
        );
        return Ok(());
    }
    let requests = runtime.block_on(streams(&args.pd, args.clients, args.batch, end))?;
    let per_s = requests as f64 / args.seconds;
    println!(
        "tso clients={} batch={} requests_per_s={:.0} timestamps_per_s={:.0}",
        args.clients,
        args.batch,
        per_s,
        per_s * f64::from(args.batch)
    );
    Ok(())
}
