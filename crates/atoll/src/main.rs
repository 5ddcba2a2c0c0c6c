//! `atoll`: the one binary. Parses arguments and dispatches; each subcommand lives in its
//! own module ([`role`] for pd/kv/sql, [`playground`], [`ctl`], [`diag`]). Every failure ends the
//! process with one line on stderr and a non-zero exit code.
//!
//! Rust allocations go to jemalloc, as in TiKV: glibc's malloc, free and consolidation were
//! a seventh of a SQL node's CPU under sysbench point selects.

mod bench;
mod certs;
mod cluster_tls;
mod ctl;
mod diag;
mod nemesis;
mod playground;
mod role;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "atoll", version = node::BUILD.version, about = "Atoll: a distributed, MySQL-compatible SQL database")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a placement driver (timestamp oracle, cluster and region metadata).
    Pd(role::PdArgs),
    /// Run a transactional KV node.
    Kv(role::KvArgs),
    /// Run a stateless SQL node (MySQL protocol).
    Sql(role::SqlArgs),
    /// Start a whole cluster on this machine as child processes.
    Playground(playground::PlaygroundArgs),
    /// Admin client: show and change configuration online.
    Ctl(ctl::CtlArgs),
    /// Built-in benchmarks: `atoll bench pool` (the unified read pool against the alternatives).
    Bench(bench::BenchArgs),
    /// Faults on purpose: three simulated hosts, a workload, a nemesis, and a checker.
    Nemesis(nemesis::NemesisArgs),
    /// Find the bottleneck: read every node for a while, name what limits the cluster with its evidence and the knob to turn.
    Diag(diag::DiagArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (name, result) = match cli.command {
        Command::Pd(args) => ("pd", role::run_pd(args)),
        Command::Kv(args) => ("kv", role::run_kv(args)),
        Command::Sql(args) => ("sql", role::run_sql(args)),
        Command::Playground(args) => ("playground", playground::run(args)),
        Command::Ctl(args) => ("ctl", ctl::run(args)),
        Command::Bench(args) => ("bench", bench::run(args)),
        Command::Nemesis(args) => ("nemesis", nemesis::run(args)),
        Command::Diag(args) => ("diag", diag::run(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("atoll {name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}
