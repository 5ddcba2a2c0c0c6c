//! `atoll bench`: built-in benchmarks. Each runs in this process, in a release build, and
//! reports ratios against baselines measured in the same run.

mod executors;
mod gc_bench;
mod kv_bench;
mod oltp_report;
mod pd_failover;
pub(crate) mod plot;
mod pool_bench;
mod storage_bench;
mod tso_bench;

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// The unified read pool against tokio, one FIFO pool and two fixed pools.
    Pool(pool_bench::PoolBenchArgs),
    /// Prewrite+commit and point-get throughput of the storage stack on RocksDB.
    Storage(storage_bench::StorageBenchArgs),
    /// Timestamp throughput of a running pd.
    Tso(tso_bench::TsoBenchArgs),
    /// What a PD leader change (SIGKILL, transfer) costs the timestamp oracle, on three members it starts.
    PdFailover(pd_failover::PdFailoverArgs),
    /// The GC worker's write rate against `gc.max-write-bytes-per-sec`.
    Gc(gc_bench::GcBenchArgs),
    /// Transactional read-modify-write through the KV client against a running cluster.
    Kv(kv_bench::KvBenchArgs),
    /// The CSV, Markdown table and charts of a `bench/oltp` run (Atoll beside MariaDB).
    OltpReport(oltp_report::OltpReportArgs),
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        BenchCommand::Pool(args) => pool_bench::run(args),
        BenchCommand::Gc(args) => gc_bench::run(args),
        BenchCommand::Tso(args) => tso_bench::run(args),
        BenchCommand::PdFailover(args) => pd_failover::run(args),
        BenchCommand::Storage(args) => storage_bench::run(args),
        BenchCommand::Kv(args) => kv_bench::run(args),
        BenchCommand::OltpReport(args) => oltp_report::run(args),
    }
}
